package verify

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rec builds the fields of test record id: every field distinct per id.
func rec(id int) fields {
	return fields{key: uint64(id), val: uint64(1000 + id), hdr: uint64(2000 + id), ts: int64(3000 + id)}
}

var testHasher = newHasher(maphash.MakeSeed(), nil)

func fp(f fields, withTS bool) uint64 { return testHasher.fingerprint(f, withTS) }

// src is one source record: offset and content.
type src struct {
	off  int64
	f    fields
	zone uint8
}

// tgt is one target record: offset and content.
type tgt struct {
	off int64
	f   fields
}

// seqSrc returns source records at offsets 0..n-1 with contents rec(0..n-1).
func seqSrc(n int) []src {
	out := make([]src, n)
	for i := range out {
		out[i] = src{off: int64(i), f: rec(i)}
	}
	return out
}

// tgtOf returns target records at offsets 0.. copying the given source
// record ids.
func tgtOf(ids ...int) []tgt {
	out := make([]tgt, len(ids))
	for i, id := range ids {
		out[i] = tgt{off: int64(i), f: rec(id)}
	}
	return out
}

func ids(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func cat(parts ...[]int) []int { return slices.Concat(parts...) }

// runMatch drives a matcher the way comparePartition does: source records
// are read only when the matcher wants them, then the rest is drained.
func runMatch(o matchOpts, source []src, target []tgt) PartitionReport {
	r, _ := runMatchBuf(o, source, target)
	return r
}

// runMatchBuf is runMatch that also returns the largest buffer held.
func runMatchBuf(o matchOpts, source []src, target []tgt) (PartitionReport, int) {
	r := PartitionReport{TargetFirstMatch: -1}
	peak := 0
	m := newMatcher(o, &r)
	i := 0
	feed := func() bool {
		if i >= len(source) {
			return false
		}
		s := source[i]
		i++
		m.addSource(srcEntry{off: s.off, f: s.f, fp: fp(s.f, o.compareTS), zone: s.zone})
		peak = max(peak, m.buf.len())
		return true
	}
	for _, t := range target {
		tg := tgtRec{off: t.off, f: t.f, fp: fp(t.f, o.compareTS)}
		for m.wants(tg) && feed() {
		}
		m.target(tg)
	}
	m.drain()
	for feed() {
		m.drain()
	}
	return r, peak
}

var defaultOpts = matchOpts{maxReplay: 1000, maxSkip: 1000, compareTS: true}

func TestMatcher(t *testing.T) {
	holey := []src{{off: 0, f: rec(0)}, {off: 1, f: rec(1)}, {off: 2, f: rec(2)}, {off: 5, f: rec(5)}, {off: 6, f: rec(6)}}
	altered := func(id int, mod func(*fields)) fields {
		f := rec(id)
		mod(&f)
		return f
	}
	withAt := func(ts []tgt, i int, f fields) []tgt {
		ts[i].f = f
		return ts
	}
	ctxSrc := seqSrc(10)
	for i := range 5 {
		ctxSrc[i].zone = zoneContext
	}
	tests := []struct {
		name   string
		o      matchOpts
		source []src
		target []tgt
		want   PartitionReport
	}{{
		name: "identical", o: defaultOpts, source: seqSrc(10), target: tgtOf(ids(0, 9)...),
		want: PartitionReport{Compared: 10, Matched: 10, TargetRecords: 10, TargetFirstMatch: 0},
	}, {
		name: "loss in the middle", o: defaultOpts, source: seqSrc(10), target: tgtOf(cat(ids(0, 2), ids(5, 6), ids(8, 9))...),
		want: PartitionReport{Compared: 10, Matched: 7, Missing: 3, TargetRecords: 7, TargetFirstMatch: 0,
			MissingRanges: []Range{{From: 3, To: 4, Records: 2}, {From: 7, To: 7, Records: 1}}},
	}, {
		name: "loss at the head", o: defaultOpts, source: seqSrc(10), target: tgtOf(ids(2, 9)...),
		want: PartitionReport{Compared: 10, Matched: 8, Missing: 2, TargetRecords: 8, TargetFirstMatch: 0,
			MissingRanges: []Range{{From: 0, To: 1, Records: 2}}},
	}, {
		name: "loss at the tail", o: defaultOpts, source: seqSrc(10), target: tgtOf(ids(0, 6)...),
		want: PartitionReport{Compared: 10, Matched: 7, Missing: 3, MissingAfterLastCopied: 3, TargetRecords: 7, TargetFirstMatch: 0,
			MissingRanges: []Range{{From: 7, To: 9, Records: 3}}},
	}, {
		name: "replay after a crash", o: defaultOpts, source: seqSrc(10), target: tgtOf(cat(ids(0, 5), ids(3, 9))...),
		want: PartitionReport{Compared: 10, Matched: 10, Duplicated: 3, TargetRecords: 13, TargetFirstMatch: 0,
			Replays: []Replay{{TargetOffset: 6, SourceOffset: 3, Records: 3}}},
	}, {
		name: "two replays, one of a single record", o: defaultOpts, source: seqSrc(10), target: tgtOf(cat(ids(0, 4), ids(0, 6), ids(6, 9))...),
		want: PartitionReport{Compared: 10, Matched: 10, Duplicated: 6, TargetRecords: 16, TargetFirstMatch: 0,
			Replays: []Replay{{TargetOffset: 5, SourceOffset: 0, Records: 5}, {TargetOffset: 12, SourceOffset: 6, Records: 1}}},
	}, {
		name: "swap", o: defaultOpts, source: seqSrc(6), target: tgtOf(0, 1, 3, 2, 4, 5),
		want: PartitionReport{Compared: 6, Matched: 6, OutOfOrder: 1, TargetRecords: 6, TargetFirstMatch: 0,
			OutOfOrderRecords: []Displaced{{SourceOffset: 2, TargetOffset: 3}}},
	}, {
		name: "record moved far back", o: defaultOpts, source: seqSrc(8), target: tgtOf(0, 2, 3, 4, 5, 6, 1, 7),
		want: PartitionReport{Compared: 8, Matched: 8, OutOfOrder: 1, TargetRecords: 8, TargetFirstMatch: 0,
			OutOfOrderRecords: []Displaced{{SourceOffset: 1, TargetOffset: 6}}},
	}, {
		name: "altered value", o: defaultOpts, source: seqSrc(6),
		target: withAt(tgtOf(ids(0, 5)...), 3, altered(3, func(f *fields) { f.val = 99 })),
		want: PartitionReport{Compared: 6, Matched: 6, Altered: 1, TargetRecords: 6, TargetFirstMatch: 0,
			Alterations: []Alteration{{SourceOffset: 3, TargetOffset: 3, Fields: []string{FieldValue}}}},
	}, {
		name: "altered key, headers and timestamp", o: defaultOpts, source: seqSrc(6),
		target: withAt(tgtOf(ids(0, 5)...), 0, altered(0, func(f *fields) { f.key, f.hdr, f.ts = 7, 7, 7 })),
		want: PartitionReport{Compared: 6, Matched: 6, Altered: 1, TargetRecords: 6, TargetFirstMatch: 0,
			Alterations: []Alteration{{SourceOffset: 0, TargetOffset: 0, Fields: []string{FieldKey, FieldHeaders, FieldTimestamp}}}},
	}, {
		name: "timestamps not compared", o: matchOpts{maxReplay: 1000, maxSkip: 1000}, source: seqSrc(4),
		target: withAt(tgtOf(ids(0, 3)...), 2, altered(2, func(f *fields) { f.ts = 1 })),
		want:   PartitionReport{Compared: 4, Matched: 4, TargetRecords: 4, TargetFirstMatch: 0},
	}, {
		name: "unexpected record", o: defaultOpts, source: seqSrc(4),
		target: []tgt{{0, rec(0)}, {1, rec(1)}, {2, rec(77)}, {3, rec(2)}, {4, rec(3)}},
		want: PartitionReport{Compared: 4, Matched: 4, Unexpected: 1, TargetRecords: 5, TargetFirstMatch: 0,
			UnexpectedOffsets: []int64{2}},
	}, {
		name: "holes in source offsets", o: defaultOpts, source: holey, target: tgtOf(0, 1, 6),
		want: PartitionReport{Compared: 5, Matched: 3, Missing: 2, TargetRecords: 3, TargetFirstMatch: 0,
			MissingRanges: []Range{{From: 2, To: 5, Records: 2}}},
	}, {
		name: "lead-in: target copies of records the source deleted", o: matchOpts{maxReplay: 1000, maxSkip: 1000, compareTS: true, leadIn: true},
		source: seqSrc(5)[2:], target: tgtOf(ids(0, 4)...),
		want: PartitionReport{Compared: 3, Matched: 3, TargetRecords: 5, TargetLeadIn: 2, TargetFirstMatch: 2},
	}, {
		name: "target deleted its oldest records", o: matchOpts{maxReplay: 1000, maxSkip: 1000, compareTS: true, truncated: true},
		source: seqSrc(8), target: []tgt{{5, rec(3)}, {6, rec(4)}, {7, rec(5)}, {8, rec(6)}, {9, rec(7)}},
		want: PartitionReport{Compared: 8, Matched: 5, DeletedOnTarget: 3, TargetRecords: 5, TargetFirstMatch: 5,
			DeletedOnTargetRanges: []Range{{From: 0, To: 2, Records: 3}}},
	}, {
		name: "context before the window", o: matchOpts{maxReplay: 1000, maxSkip: 1000, compareTS: true, leadIn: true},
		source: ctxSrc, target: tgtOf(cat([]int{50}, ids(3, 9), ids(4, 6))...),
		want: PartitionReport{Compared: 5, Matched: 5, Duplicated: 2, TargetRecords: 11, TargetLeadIn: 1, TargetOutsideWindow: 3, TargetFirstMatch: 1,
			Replays: []Replay{{TargetOffset: 9, SourceOffset: 5, Records: 2}}},
	}, {
		// Found by the fault soak: a mirror killed just before the window
		// replays from a resume point older than the context read before
		// the window. Those copies precede the first copy of a window
		// record, so they are lead-in (outside the window), not
		// unexpected. The source is read from 5 (context 5..9, window
		// 10..19); the target: 3..8, the replay 1..9, then 10..19.
		name: "replay before the window reaching back past the context", o: matchOpts{maxReplay: 1000, maxSkip: 1000, compareTS: true, leadIn: true},
		source: func() []src {
			s := seqSrc(20)[5:]
			for i := range 5 {
				s[i].zone = zoneContext
			}
			return s
		}(),
		target: tgtOf(cat(ids(3, 8), ids(1, 9), ids(10, 19))...),
		want:   PartitionReport{Compared: 10, Matched: 10, TargetRecords: 25, TargetLeadIn: 6, TargetOutsideWindow: 9, TargetFirstMatch: 2},
	}, {
		name: "replay beyond MaxReplay is unexpected", o: matchOpts{maxReplay: 3, maxSkip: 1000, compareTS: true}, source: seqSrc(10),
		target: tgtOf(cat(ids(0, 9), []int{1})...),
		want:   PartitionReport{Compared: 10, Matched: 10, Unexpected: 1, TargetRecords: 11, TargetFirstMatch: 0, UnexpectedOffsets: []int64{10}},
	}, {
		name: "gap beyond MaxSkip", o: matchOpts{maxReplay: 1000, maxSkip: 3, compareTS: true}, source: seqSrc(10),
		target: tgtOf(0, 8, 9),
		want: PartitionReport{Compared: 10, Matched: 1, Missing: 9, MissingAfterLastCopied: 9, Unexpected: 2, TargetRecords: 3, TargetFirstMatch: 0,
			UnexpectedOffsets: []int64{1, 2}, MissingRanges: []Range{{From: 1, To: 9, Records: 9}}},
	}, {
		name: "copies of records produced after the window's end", o: defaultOpts,
		source: append(seqSrc(5), src{off: 5, f: rec(5), zone: zoneTrailing}, src{off: 6, f: rec(6), zone: zoneTrailing}),
		target: tgtOf(ids(0, 6)...),
		want:   PartitionReport{Compared: 5, Matched: 5, TargetRecords: 7, TargetOutsideWindow: 2, TargetFirstMatch: 0},
	}, {
		name: "nothing on the target", o: defaultOpts, source: seqSrc(3),
		want: PartitionReport{Compared: 3, Missing: 3, MissingAfterLastCopied: 3, TargetFirstMatch: -1,
			MissingRanges: []Range{{From: 0, To: 2, Records: 3}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runMatch(tt.o, tt.source, tt.target)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("report (-want +got):\n%s", d)
			}
		})
	}
}

// TestMatcherDetailsCap: lists stop at maxDetails entries, counts stay
// exact.
func TestMatcherDetailsCap(t *testing.T) {
	var target []int
	for i := 0; i < 20; i += 2 {
		target = append(target, i)
	}
	got := runMatch(matchOpts{maxReplay: 100, maxSkip: 100, compareTS: true, maxDetails: 3}, seqSrc(20), tgtOf(target...))
	if got.Missing != 10 || len(got.MissingRanges) != 3 || !got.DetailsTruncated {
		t.Fatalf("missing %d, ranges %v, truncated %v; want 10 missing, 3 ranges, truncated", got.Missing, got.MissingRanges, got.DetailsTruncated)
	}
}

// TestMatcherRunsProperty: a target built as runs of the source (each
// starting at or before the end of what was copied), with some source
// records never copied, is reported with exactly those records missing,
// exactly the extra copies as duplicates, and nothing else; the buffer
// never holds more than maxReplay+maxSkip entries plus one fetch.
func TestMatcherRunsProperty(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(300)
		source := seqSrc(n)
		drop := map[int]bool{}
		for range rng.IntN(5) {
			drop[rng.IntN(n)] = true
		}
		var target []int
		next := 0 // one past the newest copied
		maxBack := 0
		for next < n {
			start := next
			if next > 0 && rng.IntN(3) == 0 {
				start = max(0, next-1-rng.IntN(20)) // a replay
			}
			maxBack = max(maxBack, next-start)
			end := min(n, start+1+rng.IntN(40))
			for i := start; i < end; i++ {
				if !drop[i] {
					target = append(target, i)
				}
			}
			next = max(next, end)
		}
		wantDup := int64(len(target) - (n - len(drop)))
		var wantRanges []Range
		for i := range n {
			if !drop[i] {
				continue
			}
			if k := len(wantRanges); k > 0 && wantRanges[k-1].To == int64(i-1) {
				wantRanges[k-1].To++
				wantRanges[k-1].Records++
			} else {
				wantRanges = append(wantRanges, Range{From: int64(i), To: int64(i), Records: 1})
			}
		}
		o := matchOpts{maxReplay: int64(maxBack + 1), maxSkip: 50, compareTS: true, maxDetails: 1000}
		got, peak := runMatchBuf(o, source, tgtOf(target...))
		if limit := int(o.maxReplay+o.maxSkip) + 2; peak > limit {
			t.Fatalf("seed %d: buffer peaked at %d entries, bound %d", seed, peak, limit)
		}
		label := fmt.Sprintf("seed %d (n=%d, dropped %v)", seed, n, drop)
		if got.Missing != int64(len(drop)) || got.Duplicated != wantDup || got.OutOfOrder != 0 || got.Altered != 0 || got.Unexpected != 0 {
			t.Fatalf("%s: missing %d dup %d ooo %d altered %d unexpected %d; want missing %d dup %d and nothing else",
				label, got.Missing, got.Duplicated, got.OutOfOrder, got.Altered, got.Unexpected, len(drop), wantDup)
		}
		if got.Matched+got.Missing != got.Compared || got.Compared != int64(n) {
			t.Fatalf("%s: matched %d + missing %d != compared %d (n %d)", label, got.Matched, got.Missing, got.Compared, n)
		}
		if d := cmp.Diff(wantRanges, got.MissingRanges); d != "" {
			t.Fatalf("%s: missing ranges (-want +got):\n%s", label, d)
		}
	}
}

// TestMatcherIdenticalRecords: a topic of identical records (same key,
// value, headers; timestamps not compared) is matched in linear time and
// replays are still duplicates.
func TestMatcherIdenticalRecords(t *testing.T) {
	const n = 20_000
	source := make([]src, n)
	for i := range source {
		source[i] = src{off: int64(i), f: fields{key: 1, val: 2, hdr: 3, ts: int64(i)}}
	}
	var target []tgt
	for i := range n {
		target = append(target, tgt{off: int64(i), f: source[i].f})
	}
	for i := range 500 { // a replay of the last 500
		target = append(target, tgt{off: int64(n + i), f: source[n-500+i].f})
	}
	got := runMatch(matchOpts{maxReplay: n, maxSkip: n}, source, target)
	if got.Matched != n || got.Missing != 0 || got.Duplicated != 500 || got.OutOfOrder != 0 || got.Unexpected != 0 {
		t.Fatalf("matched %d missing %d dup %d ooo %d unexpected %d; want %d matched, 500 duplicates", got.Matched, got.Missing, got.Duplicated, got.OutOfOrder, got.Unexpected, n)
	}
}

// TestMatcherStamps: the matcher's offset mapping from stamped target
// records: runs break at an unstamped record and where source offsets stop
// increasing; a stamp that names another source record than the content
// match is a disagreement; the map is set only when a record was stamped.
func TestMatcherStamps(t *testing.T) {
	type st struct {
		id    int   // content: source record id
		stamp int64 // -1: unstamped
	}
	run := func(target []st) PartitionReport {
		r := PartitionReport{TargetFirstMatch: -1}
		m := newMatcher(defaultOpts, &r)
		src := seqSrc(10)
		i := 0
		for off, tr := range target {
			tg := tgtRec{off: int64(off), f: rec(tr.id), fp: fp(rec(tr.id), defaultOpts.compareTS), stamp: tr.stamp, stamped: tr.stamp >= 0}
			for m.wants(tg) && i < len(src) {
				m.addSource(srcEntry{off: src[i].off, f: src[i].f, fp: fp(src[i].f, defaultOpts.compareTS)})
				i++
			}
			m.target(tg)
		}
		m.drain()
		for ; i < len(src); i++ {
			m.addSource(srcEntry{off: src[i].off, f: src[i].f, fp: fp(src[i].f, defaultOpts.compareTS)})
			m.drain()
		}
		m.finishStamps()
		return r
	}
	got := run([]st{{0, 0}, {1, 1}, {2, -1}, {3, 3}, {4, 7}, {5, 5}, {6, 6}, {4, 4}, {5, 5}, {7, 7}, {8, 8}, {9, 9}})
	want := &StampMap{Stamped: 11, Unstamped: 1, Runs: []StampRun{
		{SourceFrom: 0, SourceTo: 1, TargetFrom: 0, TargetTo: 1, Records: 2},
		{SourceFrom: 3, SourceTo: 7, TargetFrom: 3, TargetTo: 4, Records: 2},
		{SourceFrom: 5, SourceTo: 6, TargetFrom: 5, TargetTo: 6, Records: 2},
		{SourceFrom: 4, SourceTo: 9, TargetFrom: 7, TargetTo: 11, Records: 5},
	}, Disagreements: 1, DisagreementRecords: []StampDisagreement{{TargetOffset: 4, Stamped: 7, Matched: 4}}}
	if d := cmp.Diff(want, got.Stamps); d != "" {
		t.Errorf("stamps (-want +got):\n%s", d)
	}
	if got.Duplicated != 2 || got.Matched != 10 {
		t.Errorf("content: %d duplicated, %d matched; want 2 and 10", got.Duplicated, got.Matched)
	}
	if r := run([]st{{0, -1}, {1, -1}}); r.Stamps != nil {
		t.Errorf("no stamp read: %+v", r.Stamps)
	}
}
