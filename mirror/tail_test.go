package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDecideTailStart: every way a tail can be wrong falls back to the
// stored resume point, and only a verified tail ahead of it moves the
// start (issue 23, "never skip on a wrong tail").
func TestDecideTailStart(t *testing.T) {
	t.Parallel()
	pv := mustProv(t, "SRC", "DST")
	ts := time.UnixMilli(1_700_000_000_000)
	srcRec := func(off int64, v string) *kgo.Record {
		return &kgo.Record{Offset: off, Key: []byte("k"), Value: []byte(v), Timestamp: ts,
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}}}
	}
	copyOf := func(s *kgo.Record) *kgo.Record {
		d := *s
		d.Headers = append([]kgo.RecordHeader(nil), s.Headers...)
		_, idx := pv.check(d.Headers)
		_, _, d.Headers = pv.stampAt(nil, nil, d.Headers, idx, s.Offset)
		d.Offset = 900
		return &d
	}
	tail := copyOf(srcRec(50, "v50"))
	otherTs := *srcRec(50, "v50")
	otherTs.Timestamp = ts.Add(time.Millisecond)
	for _, c := range []struct {
		name string
		f    tailFacts
		want int64
		out  tailOutcome
		need bool
	}{
		{"no tail", tailFacts{stored: 10, tailOff: -1, srcEnd: 100}, 10, tailNone, false},
		{"read error", tailFacts{stored: 10, tailErr: true, srcEnd: 100}, 10, tailUnreadable, false},
		{"tail behind", tailFacts{stored: 60, tail: tail, tailOff: 50, srcEnd: 100}, 60, tailBehind, false},
		{"tail at the resume point", tailFacts{stored: 50, tail: tail, tailOff: 50, srcEnd: 100}, 50, tailBehind, false},
		{"ahead, verified", tailFacts{stored: 10, tail: tail, tailOff: 50, srcEnd: 100, src: srcRec(50, "v50")}, 50, tailAhead, true},
		{"ahead, no resume point", tailFacts{stored: -1, tail: tail, tailOff: 50, srcEnd: 100, src: srcRec(50, "v50")}, 50, tailAhead, true},
		{"ahead, LogAppendTime on the target", tailFacts{stored: 10, tail: tail, tailOff: 50, srcEnd: 100, src: &otherTs, logAppend: true}, 50, tailAhead, true},
		{"ahead, another timestamp", tailFacts{stored: 10, tail: tail, tailOff: 50, srcEnd: 100, src: &otherTs}, 10, tailMismatch, true},
		{"ahead, another value (re-created source)", tailFacts{stored: 10, tail: tail, tailOff: 50, srcEnd: 100, src: srcRec(50, "new")}, 10, tailMismatch, true},
		{"ahead, compacted away (next record returned)", tailFacts{stored: 10, tail: tail, tailOff: 50, srcEnd: 100, src: srcRec(51, "v50")}, 10, tailMismatch, true},
		{"ahead, nothing read", tailFacts{stored: 10, tail: tail, tailOff: 50, srcEnd: 100}, 10, tailMismatch, true},
		{"ahead, source unreadable", tailFacts{stored: 10, tail: tail, tailOff: 50, srcEnd: 100, srcErr: true}, 10, tailUnreadable, true},
		{"past the source's end", tailFacts{stored: 10, tail: tail, tailOff: 50, srcEnd: 50}, 10, tailPastEnd, false},
		{"truncated source", tailFacts{stored: 10, tail: tail, tailOff: 50, srcStart: 51, srcEnd: 100}, 10, tailTruncated, false},
	} {
		if got := tailNeedsSource(c.f); got != c.need {
			t.Errorf("%s: tailNeedsSource = %v, want %v", c.name, got, c.need)
		}
		got, out := decideTailStart(c.f)
		if got != c.want || out != c.out {
			t.Errorf("%s: decideTailStart = %d, %v; want %d, %v", c.name, got, out, c.want, c.out)
		}
		if out.fallback() != (out >= tailPastEnd) {
			t.Errorf("%s: fallback() = %v", c.name, out.fallback())
		}
	}
}

// TestSameRecord: a copy differs from its source only by the provenance
// hop; any other difference (header, key null vs empty, provenance path)
// is a mismatch.
func TestSameRecord(t *testing.T) {
	t.Parallel()
	ts := time.UnixMilli(1_700_000_000_000)
	base := func() *kgo.Record {
		return &kgo.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: ts,
			Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: ProvenanceHeader, Value: []byte("A,#3")}, {Key: "b"}}}
	}
	good := base()
	good.Headers = []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: ProvenanceHeader, Value: []byte("A,SRC,#50")}, {Key: "b"}}
	if !sameRecord(base(), good, false) {
		t.Error("a copy one hop further is not the same record")
	}
	for name, mod := range map[string]func(*kgo.Record){
		"empty key for null": func(r *kgo.Record) { r.Key = nil },
		"value":              func(r *kgo.Record) { r.Value = []byte("w") },
		"header value":       func(r *kgo.Record) { r.Headers[0].Value = []byte("2") },
		"header missing":     func(r *kgo.Record) { r.Headers = r.Headers[1:] },
		"provenance path":    func(r *kgo.Record) { r.Headers[1].Value = []byte("B,SRC,#50") },
		"two hops added":     func(r *kgo.Record) { r.Headers[1].Value = []byte("A,X,SRC,#50") },
		"timestamp":          func(r *kgo.Record) { r.Timestamp = ts.Add(time.Second) },
	} {
		d := base()
		d.Headers = append([]kgo.RecordHeader(nil), good.Headers...)
		mod(d)
		if sameRecord(base(), d, false) {
			t.Errorf("%s: a different record is the same", name)
		}
	}
	// A first hop: the source has no provenance header.
	src := &kgo.Record{Value: []byte("v"), Timestamp: ts}
	dst := &kgo.Record{Value: []byte("v"), Timestamp: ts, Headers: []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte("SRC,#7")}}}
	if !sameRecord(src, dst, false) {
		t.Error("a first-hop copy is not the same record")
	}
}

// TestLastOwnRecord: the tail search takes the last record whose last hop
// is this flow's source and carries its offset; records of MM2, of an
// older kmirror, of local producers or of another source are passed over.
func TestLastOwnRecord(t *testing.T) {
	t.Parallel()
	rec := func(off int64, prov string) *kgo.Record {
		r := &kgo.Record{Offset: off}
		if prov != "-" {
			r.Headers = []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte(prov)}}
		}
		return r
	}
	src := appendEscapedID(nil, "S,1")
	for _, c := range []struct {
		name string
		recs []*kgo.Record
		at   int64 // offset of the record found, -1 none
		off  int64
	}{
		{"last is ours", []*kgo.Record{rec(1, `S\,1,#10`), rec(2, `S\,1,#11`)}, 2, 11},
		{"local writes after ours", []*kgo.Record{rec(1, `A,S\,1,#10`), rec(2, "-"), rec(3, "B,#4")}, 1, 10},
		{"an older kmirror (no offset)", []*kgo.Record{rec(1, `S\,1`)}, -1, -1},
		{"another source", []*kgo.Record{rec(1, `T,#5`)}, -1, -1},
		{"our ID with an escaped comma is not a prefix match", []*kgo.Record{rec(1, `X,1,#5`)}, -1, -1},
		{"empty", nil, -1, -1},
	} {
		r, off := lastOwnRecord(c.recs, src)
		at := int64(-1)
		if r != nil {
			at = r.Offset
		}
		if at != c.at || off != c.off {
			t.Errorf("%s: lastOwnRecord = record %d, offset %d; want %d, %d", c.name, at, off, c.at, c.off)
		}
	}
}

// TestDetachRecordSharesNothing: the tail read keeps the last copy of the
// flow's own per partition, detached from its fetched batch, so that a
// window of hundreds of records per partition (the first start after
// MM2's copies, which carry no offsets) is not held whole: a write into
// the batch's memory after the read must not reach the kept copy.
func TestDetachRecordSharesNothing(t *testing.T) {
	batch := []byte("keyvalueS,#7")
	r := &kgo.Record{Topic: "us.orders", Partition: 3, Offset: 42, Key: batch[0:3], Value: batch[3:8],
		Headers: []kgo.RecordHeader{{Key: ProvenanceHeader, Value: batch[8:]}}, Timestamp: time.UnixMilli(1700000000000)}
	c := detachRecord(r)
	for i := range batch {
		batch[i] = 'x'
	}
	got := fmt.Sprintf("%s/%d@%d %s=%s %s=%s %d", c.Topic, c.Partition, c.Offset, c.Key, c.Value, c.Headers[0].Key, c.Headers[0].Value, c.Timestamp.UnixMilli())
	if want := "us.orders/3@42 key=value " + ProvenanceHeader + "=S,#7 1700000000000"; got != want {
		t.Errorf("detached record %s, want %s", got, want)
	}
	if off, ok := ownOffset(c, []byte("S")); !ok || off != 7 {
		t.Errorf("ownOffset of the detached copy = %d, %t; want 7, true", off, ok)
	}
}

// lastOwnRecord returns the last record of recs (a remote partition's
// tail, in offset order) that this flow wrote: its last provenance header
// names the flow's source cluster (escaped ID src) as the last hop and
// carries that hop's offset. It returns nil when none does (written by MM2,
// an older kmirror, or another producer). A test helper over ownOffset:
// readTailStarts keeps the last such record per partition as it reads.
func lastOwnRecord(recs []*kgo.Record, src []byte) (rec *kgo.Record, off int64) {
	for i := len(recs) - 1; i >= 0; i-- {
		if o, ok := ownOffset(recs[i], src); ok {
			return recs[i], o
		}
	}
	return nil, -1
}
