package mirror

import (
	"bytes"
	"math"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
)

// Resume from the target's tail (issue 23): at least once, a unit that
// starts a partition finds the last record this flow wrote to the remote
// partition; its provenance header ends with the record's source offset
// (ProvenanceOffset). When that offset is past the stored resume point and
// the source still holds the very same record there, the partition resumes
// after it: the records between the resume point and the tail are already
// on the target (the idempotent producer writes a partition in order, and
// nothing after a failed record reaches the target), so copying them again
// would only duplicate them. Anything else falls back to the stored resume
// point. The decisions below are pure; the reads are in the unit.

// tailOutcome says how a partition's start position was chosen.
type tailOutcome uint8

const (
	tailNone       tailOutcome = iota // no record of this flow with an offset on the remote partition: the resume point
	tailBehind                        // the tail is at or before the resume point: the resume point
	tailAhead                         // resumed after the tail, verified against the source
	tailPastEnd                       // fallback: the tail names an offset at or past the source's end (truncated or re-created source)
	tailTruncated                     // fallback: the source no longer holds the tail's offset (before its log start)
	tailMismatch                      // fallback: the source record at the tail's offset differs (another incarnation of the source topic)
	tailUnreadable                    // fallback: the tail or the source record could not be read (an error, no READ ACL)
)

// tailOutcomes is the number of outcomes.
const tailOutcomes = int(tailUnreadable) + 1

// tailNoted counts n partition starts with outcome o (unitEnv.tailNoted).
func (f *flow) tailNoted(o tailOutcome, n int) { f.tailCounts[o].Add(int64(n)) }

// tailStatus returns the counts of FlowStatus.TailResume (nil: none).
func (f *flow) tailStatus() map[string]int64 {
	var out map[string]int64
	for o := range f.tailCounts {
		if n := f.tailCounts[o].Load(); n > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[tailOutcome(o).String()] = n
		}
	}
	return out
}

// String names the outcome for logs, status and metric labels.
func (o tailOutcome) String() string {
	switch o {
	case tailNone:
		return "none"
	case tailBehind:
		return "behind"
	case tailAhead:
		return "ahead"
	case tailPastEnd:
		return "past_end"
	case tailTruncated:
		return "truncated"
	case tailMismatch:
		return "mismatch"
	case tailUnreadable:
		return "unreadable"
	}
	return "unknown"
}

// fallback reports whether the outcome is a tail that could not be used
// although it was ahead of the resume point (counted and shown).
func (o tailOutcome) fallback() bool { return o >= tailPastEnd }

// tailFacts is what the start decision of one partition reads.
type tailFacts struct {
	stored   int64       // the stored resume point: the last replicated source offset, -1 none
	tail     *kgo.Record // the last record of this flow on the remote partition (nil: none)
	tailOff  int64       // its source offset (the provenance offset element)
	tailErr  bool        // the remote partition could not be read
	srcStart int64       // the source partition's log start offset
	srcEnd   int64       // the source partition's end offset (as the unit's consumer reads it)
	srcErr   bool        // the source record at tailOff could not be read
	src      *kgo.Record // the source record at tailOff (nil: none there, compacted away or not read)
	// logAppend: the remote topic stamps records with LogAppendTime, so a
	// target record's timestamp is not the source's.
	logAppend bool
}

// tailNeedsSource reports whether the decision needs the source record at
// the tail's offset: the tail is ahead of the resume point and inside the
// source's log.
func tailNeedsSource(f tailFacts) bool {
	return !f.tailErr && f.tail != nil && f.tailOff > f.stored && f.tailOff >= f.srcStart && f.tailOff < f.srcEnd
}

// decideTailStart returns the source offset the partition resumes after
// (the stored resume point, or the tail's offset) and why.
func decideTailStart(f tailFacts) (resumeAfter int64, out tailOutcome) {
	switch {
	case f.tailErr:
		return f.stored, tailUnreadable
	case f.tail == nil:
		return f.stored, tailNone
	case f.tailOff <= f.stored:
		return f.stored, tailBehind
	case f.tailOff >= f.srcEnd:
		return f.stored, tailPastEnd
	case f.tailOff < f.srcStart:
		return f.stored, tailTruncated
	case f.srcErr:
		return f.stored, tailUnreadable
	case f.src == nil || f.src.Offset != f.tailOff || !sameRecord(f.src, f.tail, f.logAppend):
		return f.stored, tailMismatch
	}
	return f.tailOff, tailAhead
}

// sameRecord reports whether target record dst is a copy of source record
// src: the same key and value (a null one null on both), the same headers
// in order apart from the provenance header, a provenance that is the
// source's extended by one hop, and the same timestamp unless the remote
// topic stamps its own (logAppend).
func sameRecord(src, dst *kgo.Record, logAppend bool) bool {
	if !sameBytes(src.Key, dst.Key) || !sameBytes(src.Value, dst.Value) {
		return false
	}
	if !logAppend && !src.Timestamp.Equal(dst.Timestamp) {
		return false
	}
	var srcProv, dstProv []byte
	i, j := 0, 0
	for {
		for i < len(src.Headers) && src.Headers[i].Key == ProvenanceHeader {
			srcProv = src.Headers[i].Value
			i++
		}
		for j < len(dst.Headers) && dst.Headers[j].Key == ProvenanceHeader {
			dstProv = dst.Headers[j].Value
			j++
		}
		if i == len(src.Headers) || j == len(dst.Headers) {
			break
		}
		if src.Headers[i].Key != dst.Headers[j].Key || !sameBytes(src.Headers[i].Value, dst.Headers[j].Value) {
			return false
		}
		i, j = i+1, j+1
	}
	if i != len(src.Headers) || j != len(dst.Headers) {
		return false
	}
	// dst's provenance is src's (without its offset element) plus one ID.
	// A source value with no ID (none, empty, or an offset element
	// alone) is stamped as a first hop: no empty ID before the source's
	// (stampAt; regression: TestTailResumeOddContentsNoDuplicates).
	was, is := ParseProvenance(srcProv), ParseProvenance(dstProv)
	if len(withoutOffset(srcProv)) == 0 {
		was = nil
	}
	if len(is) != len(was)+1 {
		return false
	}
	for k := range was {
		if was[k] != is[k] {
			return false
		}
	}
	return true
}

// sameBytes is bytes.Equal that also tells null from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// ownOffset returns the source offset a record of a remote partition
// records in its provenance header when src (the flow's source cluster ID)
// is its last hop: the record is a copy this flow made.
func ownOffset(r *kgo.Record, src []byte) (int64, bool) {
	var v []byte
	found := false
	for _, h := range r.Headers {
		if h.Key == ProvenanceHeader {
			v, found = h.Value, true
		}
	}
	if !found {
		return -1, false
	}
	o, ok := ProvenanceOffset(v)
	if !ok {
		return -1, false
	}
	ids := withoutOffset(v)
	k := bytes.LastIndexByte(ids, ',')
	for k > 0 && escapedAt(ids, k) {
		k = bytes.LastIndexByte(ids[:k], ',')
	}
	if !bytes.Equal(ids[k+1:], src) {
		return -1, false
	}
	return o, true
}

// detachRecord returns a copy of r that shares no memory with the fetched
// batch r came from (its key, value and headers copied), so that keeping
// it does not keep the batch.
func detachRecord(r *kgo.Record) *kgo.Record {
	c := *r
	c.Key, c.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
	c.Headers = make([]kgo.RecordHeader, len(r.Headers))
	for i, h := range r.Headers {
		c.Headers[i] = kgo.RecordHeader{Key: strings.Clone(h.Key), Value: bytes.Clone(h.Value)}
	}
	c.Context = nil
	return &c
}

// tailProducer reports whether producer cl writes each partition in order
// with nothing lost behind a record it acknowledged: idempotent, acks=all,
// and retries not limited (producer retries; the delivery timeout is
// always off for replication). franz-go fails the buffered records of a
// partition whose retries ran out while building a request, without the
// log line that closes the partition's produce gate (producegate.go):
// records the poll loop produces before the failure's results arrive can
// then be written after the hole, and a tail after a hole must never be
// trusted (regression: TestTailResumeOffWithLimitedRetries).
func tailProducer(cl *kgo.Client) (ok bool) {
	kclient.Locked(func() {
		off, _ := cl.OptValue(kgo.DisableIdempotentWrite).(bool)
		acks, _ := cl.OptValue(kgo.RequiredAcks).(kgo.Acks)
		retries, _ := cl.OptValue(kgo.RecordRetries).(int64)
		ok = !off && acks == kgo.AllISRAcks() && retries == math.MaxInt64
	})
	return ok
}
