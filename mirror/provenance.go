package mirror

import (
	"errors"
	"strconv"

	"github.com/kmirror/kmirror/internal/provhdr"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProvenanceHeader is the name of the record header in which kmirror lists
// the clusters a record was copied from, so that no flow ever writes a
// record into a cluster it has already been on (active-active with
// IdentityReplicationPolicy, rings, deployments that name the same clusters
// differently).
//
// The value is the cluster IDs (as the brokers report them in Metadata
// responses, e.g. "MkU3OEVBNTcwNTJENDM2Qk"; never the aliases) of the
// clusters the record was read from, oldest first, separated by ",", where
// "\" and "," inside an ID are written "\\" and "\,". The cluster the record
// is stored in is not listed. A record produced on cluster A and copied A->B
// then B->C carries "A" on B and "A,B" on C; the flow C->A skips it
// because A is listed.
//
// The value may end with one more element, "#" and a decimal offset: the
// record's offset in the cluster the last listed ID names (the source
// offset of its last copy), which lets a successor resume from what the
// target holds (see FlowConfig.DisableTailResume). It is valid only as the
// last element; [ParseProvenance] leaves it out and [ProvenanceOffset]
// returns it. Cluster IDs never start with "#" (an ID that does is written
// "\#"), so a reader that takes it for an ID never matches a cluster with
// it. A record copied A->B with offset 41 on A carries "A,#41" on B.
//
// Kafka has no hidden headers: consumers of remote topics see this header
// (ignore it, or strip it in a byte-exact comparison; [ParseProvenance]
// reads it). FlowConfig.DisableProvenanceHeader turns it off. kmirror also
// honours the Redpanda migrator's header "redpanda-migrator-provenance"
// (value: the ID of the record's origin cluster) and leaves MSK
// Replicator's "__mskmr" header, whose format is not published, unchanged.
const ProvenanceHeader = "kmirror-provenance"

// Headers of other replicators that the provenance check reads.
const (
	// redpandaProvenanceHeader is the Redpanda migrator's
	// (redpanda_migrator output): the ID of the cluster the migrator first
	// read the record from; it skips a record whose value is its
	// destination's ID.
	redpandaProvenanceHeader = provhdr.RedpandaHeader
)

// ParseProvenance returns the cluster IDs listed in a [ProvenanceHeader]
// value, oldest first, without the offset element ([ProvenanceOffset]):
// an element starting with an unescaped "#" is left out wherever it
// stands. Every other byte string parses: an empty value is one empty ID,
// and a "\" at the very end is kept as a literal backslash.
func ParseProvenance(value []byte) []string { return provhdr.Parse(value) }

// ProvenanceOffset returns the offset element of a [ProvenanceHeader]
// value: the record's offset in the cluster the value's last ID names (the
// source offset of the record's last copy). ok is false when the value
// does not end with one (written by a kmirror without tail resume, or by a
// hop that appended its ID after it).
func ProvenanceOffset(value []byte) (offset int64, ok bool) { return provhdr.Offset(value) }

// escapedAt and withoutOffset: see package provhdr.
func escapedAt(value []byte, i int) bool { return provhdr.EscapedAt(value, i) }
func withoutOffset(value []byte) []byte  { return provhdr.WithoutOffset(value) }

// FormatProvenance returns the [ProvenanceHeader] value listing ids in
// order (see the header's format). It returns nil for no IDs.
func FormatProvenance(ids ...string) []byte {
	var out []byte
	for i, id := range ids {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendEscapedID(out, id)
	}
	return out
}

func appendEscapedID(dst []byte, id string) []byte { return provhdr.AppendEscaped(dst, id) }

// provVerdict is the outcome of the provenance check of one record.
type provVerdict uint8

const (
	provPass     = provVerdict(provhdr.Pass)     // replicate, with the source appended
	provTarget   = provVerdict(provhdr.Target)   // the target is in the record's provenance: it came from there
	provLooped   = provVerdict(provhdr.Looped)   // the source is in the record's provenance: it came back around a loop (a hop that ignores the header)
	provRedpanda = provVerdict(provhdr.Redpanda) // the Redpanda migrator's header names the target (or the source) as the record's origin
)

// skipped reports whether a record with this verdict is not replicated.
func (v provVerdict) skipped() bool { return v != provPass }

// String returns the reason a record is skipped, for logs and status.
func (v provVerdict) String() string {
	switch v {
	case provPass:
		return "pass"
	case provTarget:
		return "the target cluster is in its " + ProvenanceHeader + " header"
	case provLooped:
		return "the source cluster is in its " + ProvenanceHeader + " header (it came back around a loop)"
	case provRedpanda:
		return "its " + redpandaProvenanceHeader + " header names the target or source cluster"
	}
	return "unknown"
}

// provenance is the precomputed provenance check and stamp of one flow,
// built once from the two cluster IDs and used for every record on the hot
// path: the check scans the headers without allocating; the stamp makes one
// allocation (the new header slice, or the new header value).
//
// A nil *provenance is the disabled state (FlowConfig.DisableProvenanceHeader):
// every record passes and is not stamped.
type provenance struct {
	src, dst []byte // escaped source and target cluster IDs (also the value of a first-hop header)
	rawSrc   []byte // unescaped IDs, compared with the Redpanda migrator's header
	rawDst   []byte
}

// newProvenance returns the provenance check of a flow whose source and
// target clusters have the given cluster IDs. Both must be non-empty and
// different: a cluster without an ID cannot be recognised, and a flow
// whose source and target are the same cluster would skip every record it
// wrote itself (the caller logs the error and runs the flow without
// provenance, or refuses to start).
func newProvenance(sourceID, targetID string) (*provenance, error) {
	switch {
	case sourceID == "" || targetID == "":
		return nil, errors.New("a cluster reported no cluster ID: provenance headers need both (set provenance.header.enabled=false, FlowConfig.DisableProvenanceHeader, to copy without them)")
	case sourceID == targetID:
		return nil, errors.New("source and target report the same cluster ID " + sourceID + ": the flow copies within one cluster, " +
			"and every record it copies would be in its own provenance: if source and target are one cluster, set provenance.header.enabled=false (FlowConfig.DisableProvenanceHeader) for this flow; " +
			"if they are two, each must report its own cluster ID")
	}
	return &provenance{src: appendEscapedID(nil, sourceID), dst: appendEscapedID(nil, targetID),
		rawSrc: []byte(sourceID), rawDst: []byte(targetID)}, nil
}

// check returns whether the record with headers h may be written to the
// target, and the index of its [ProvenanceHeader] header (-1 if none) for
// stamp: provhdr.Check with the flow's cluster IDs (verify skips the source
// records a flow does not copy by the same check). It never allocates.
func (p *provenance) check(h []kgo.RecordHeader) (v provVerdict, idx int) {
	if p == nil {
		return provPass, -1
	}
	pv, idx := provhdr.Check(h, p.src, p.dst, p.rawSrc, p.rawDst)
	return provVerdict(pv), idx
}

// stamp returns h with the source cluster appended to the record's
// provenance: a new [ProvenanceHeader] header (value: the source ID) when
// idx is -1, else the header at idx with ",<source>" appended. It never
// writes into h or into a header value: fetched records share their header
// values with the fetch buffer (kgo slices them out of it), so the value is
// copied and the header slice is new. One allocation per record.
func (p *provenance) stamp(h []kgo.RecordHeader, idx int) []kgo.RecordHeader {
	if p == nil {
		return h
	}
	if idx < 0 {
		out := make([]kgo.RecordHeader, len(h)+1)
		copy(out, h)
		out[len(h)] = kgo.RecordHeader{Key: ProvenanceHeader, Value: p.src} // shared, never written
		return out
	}
	old := h[idx].Value
	if len(old) == 0 {
		h[idx].Value = p.src
		return h
	}
	v := make([]byte, 0, len(old)+2+len(p.src))
	v = append(closeEscape(append(v, old...), old), ',')
	h[idx].Value = append(v, p.src...)
	return h
}

// closeEscape appends to dst (which ends with old) the "\" that keeps a
// lone "\" at the end of an old provenance value (malformed: the reader
// keeps it as a literal backslash of the last ID) from escaping the ","
// a stamp appends after it: the source ID would be read as part of the
// earlier one, so the copy would name no source as its last hop (tail
// resume would not recognize it, nor would the next hop's loop check).
// Regression: TestTailResumeProvenanceTrailingBackslash.
func closeEscape(dst, old []byte) []byte {
	if escapedAt(old, len(old)) {
		dst = append(dst, '\\')
	}
	return dst
}

// stampArena is stamp for a batch of records: a first hop's new header
// slice is carved out of arena (allocated once per fetched batch by the
// caller with room for every record's headers plus one) instead of
// allocated per record. It returns the rest of the arena and the record's
// headers (capped, so that nothing appended to them reaches the next
// record's). A later hop's value is still one allocation.
func (p *provenance) stampArena(arena, h []kgo.RecordHeader, idx int) (rest, out []kgo.RecordHeader) {
	if p == nil {
		return arena, h
	}
	if idx >= 0 || cap(arena)-len(arena) < len(h)+1 {
		return arena, p.stamp(h, idx)
	}
	start := len(arena)
	arena = append(arena, h...)
	arena = append(arena, kgo.RecordHeader{Key: ProvenanceHeader, Value: p.src}) // shared, never written
	return arena, arena[start:len(arena):len(arena)]
}

// apply is check then stamp: it returns the headers to produce the record
// with, or skip and the reason when the record must not be written to the
// target. The lead's poll loop calls it for every record when provenance
// is on: r.Headers, v := pv.apply(r.Headers); if v.skipped() { count; continue }.
func (p *provenance) apply(h []kgo.RecordHeader) ([]kgo.RecordHeader, provVerdict) {
	v, idx := p.check(h)
	if v.skipped() {
		return h, v
	}
	return p.stamp(h, idx), provPass
}

// stampAt is stampArena with the offset element: the record's provenance
// ends with ",#<off>", off being its offset on the source (the value of a
// first hop is "<source>,#<off>"; an earlier hop's offset element is
// replaced). Each record's value is its own, so the values are carved out
// of vals, a byte arena the caller allocates once per fetched batch
// (provValueRoom bytes per record plus the lengths of the records' existing
// provenance values); when vals is full the value is allocated. It returns
// the rest of both arenas and the record's headers.
func (p *provenance) stampAt(vals []byte, arena, h []kgo.RecordHeader, idx int, off int64) (valsRest []byte, arenaRest, out []kgo.RecordHeader) {
	if p == nil {
		return vals, arena, h
	}
	var old []byte
	if idx >= 0 {
		old = withoutOffset(h[idx].Value)
	}
	need := len(old) + 2 + len(p.src) + provOffsetRoom
	var v []byte
	if cap(vals)-len(vals) >= need {
		start := len(vals)
		vals = p.appendValue(vals, old, off)
		v = vals[start:len(vals):len(vals)]
	} else {
		v = p.appendValue(make([]byte, 0, need), old, off)
	}
	if idx >= 0 {
		h[idx].Value = v // h is the record's own slice (kgo decoded it): the value is new, the shared one untouched
		return vals, arena, h
	}
	if cap(arena)-len(arena) < len(h)+1 {
		out = make([]kgo.RecordHeader, len(h)+1)
		copy(out, h)
		out[len(h)] = kgo.RecordHeader{Key: ProvenanceHeader, Value: v}
		return vals, arena, out
	}
	start := len(arena)
	arena = append(arena, h...)
	arena = append(arena, kgo.RecordHeader{Key: ProvenanceHeader, Value: v})
	return vals, arena, arena[start:len(arena):len(arena)]
}

// provOffsetRoom is the most bytes an offset element takes after the
// source ID: ",#" and up to 19 digits.
const provOffsetRoom = 2 + 19

// provValueRoom is the arena room stampAt needs per record beyond the
// record's existing provenance value: a "\" closing a trailing escape
// (closeEscape), a comma, the source ID and the offset element.
func (p *provenance) provValueRoom() int { return 2 + len(p.src) + provOffsetRoom }

// appendValue appends to dst the provenance value old (without offset
// element) extended with the source ID and offset element off.
func (p *provenance) appendValue(dst, old []byte, off int64) []byte {
	dst = append(dst, old...)
	if len(old) > 0 {
		dst = append(closeEscape(dst, old), ',')
	}
	dst = append(dst, p.src...)
	dst = append(dst, ',', '#')
	return strconv.AppendInt(dst, off, 10)
}
