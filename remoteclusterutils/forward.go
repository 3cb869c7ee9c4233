package remoteclusterutils

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kread"
	"github.com/kmirror/kmirror/internal/provhdr"
)

// Reasons a [RecordTranslation] has no offset (its Err wraps one).
var (
	// ErrNotCaughtUp: the newest stamped copy on the remote partition is
	// of a source offset below X-1: the source records between may not be
	// replicated yet, and a consumer resuming at the log end could skip
	// them.
	ErrNotCaughtUp = errors.New("the remote partition has not caught up with the source offset")
	// ErrNoStampedCopy: no record near the offsets looked at carries a
	// source offset of the source cluster in its provenance header (MM2
	// copies, a kmirror with tail resume off, other producers, an empty
	// log): nothing to translate from.
	ErrNoStampedCopy = errors.New("no copy carrying its source offset found")
	// ErrNotMonotonic: the stamped copies read do not carry strictly
	// increasing source offsets in log order (a re-created source topic
	// copied into the same remote topic, or a replay): the log does not
	// order the source offsets, so no single position translates X.
	ErrNotMonotonic = errors.New("the copies' source offsets are not increasing in log order")
	// ErrMixedSources: the source cluster ID was not given and the stamped
	// copies read name different last hops.
	ErrMixedSources = errors.New("the copies name different source clusters")
)

// RecordTranslation is a source offset translated forward to the remote
// topic from the copies themselves (see [TranslateFromRecords]).
type RecordTranslation struct {
	// Topic is the REMOTE topic ("A.orders"); Partition the partition, the
	// same on both clusters.
	Topic     string
	Partition int32
	// SourceOffset is the offset X on the source partition, as given: the
	// next record the group reads there.
	SourceOffset int64
	// Offset is where the group resumes on the remote topic; -1 when Err
	// is set. Every copy of a source record at or after SourceOffset still
	// in the remote log is at or after Offset.
	Offset int64
	// Record is [KindRecord] when Offset is set.
	Record string
	// Exact is true when no record at or after Offset is a copy of a
	// source record before SourceOffset: a consumer resuming there
	// re-reads nothing (duplicates a restarted replication wrote aside).
	Exact bool
	// Reread is 0 when Exact; otherwise the number of records at or after
	// Offset that carry no source offset of the source cluster and stand
	// before the first copy of SourceOffset or later (MM2 copies, copies
	// of a kmirror with tail resume off, other producers' records): an
	// upper bound of the records the consumer reads again.
	Reread int64
	// LastCopied is the source offset of the newest stamped copy found on
	// the remote partition (-1 when none): with ErrNotCaughtUp, where the
	// replication is.
	LastCopied int64
	// Err, when not nil, says why there is no translation; it wraps
	// [ErrNotCaughtUp], [ErrNoStampedCopy], [ErrNotMonotonic],
	// [ErrMixedSources] or an error listing the partition's offsets.
	Err error
}

// TranslateFromRecords translates source offsets forward to remote topics
// from the copies on them: kmirror stamps each copy's source offset into
// its provenance header ("kmirror-provenance" ending with "#<offset>",
// mirror.ProvenanceOffset), so the target's own log maps source offsets to
// target offsets whatever offset syncs, runs and checkpoints are left. It
// is the fallback of a translation no checkpoint, offset run or sync
// covers (or covers only safely).
//
// cl reaches the cluster holding the remote topics; sourceClusterID is the
// cluster ID of the source (the last hop the copies name); empty, it is
// taken from the copies (all stamped copies read must then name the same
// last hop, else [ErrMixedSources]). offsets maps each remote topic to,
// per partition, a source offset X (the next record a group reads on the
// source: its committed offset). The answer is the offset of the first
// copy whose source offset is >= X (exact: a consumer resuming there skips
// no copy of X or later and re-reads no copy of a record before X) or,
// when records that carry no source offset stand before that copy, the
// offset before them (safe: nothing skipped, those re-read).
//
// It reads only small ranges (read_committed: aborted records and
// transaction markers are not records; offsets removed by compaction
// neither), by a binary search between the first and the last stamped
// copy of the partition, up to its last stable offset at the call.
// Records that carry no source offset of the source cluster (MM2 copies,
// a kmirror with tail resume off, other producers) are passed over; when
// some stand between the last copy of a source offset below X and the
// first copy of X or later, the answer is the offset right after the
// former, not exact, with Reread counting them. The cases:
//
//   - X at or before the first stamped copy: the answer is that copy,
//     exact, when no record stands before it in the log (or X is 0);
//     otherwise the log start, with Reread counting the records before it.
//     Copies of source offsets in [X, first) deleted by the remote topic's
//     retention are gone: the guarantee is about the records still in
//     the log.
//   - X past the last stamped copy: the log end (the last stable offset)
//     when the last copy's source offset is X-1 and no record follows it,
//     else right after that copy (not exact, Reread counting the records
//     after it); when the last copy's source offset is below X-1, the
//     source records between may not be replicated yet: no answer,
//     [ErrNotCaughtUp] (a transactional source's commit marker at X-1 is
//     never copied: a group at the end of such a partition is answered by
//     the checkpoints, not here).
//   - Stamped copies read whose source offsets do not increase in log
//     order (the probes, the neighbourhood of the answer, the first and the
//     last copy): no answer, [ErrNotMonotonic]. Only what is read is
//     checked: a replay of source offsets entirely between two probes is
//     not seen (the answer is then in one of the runs of copies; a copy
//     of X or later it passes over has its duplicate after it). A remote
//     topic merging several source topics (mirror's AllowTopicCollisions)
//     interleaves their offsets: usually seen as non-monotonic, but not
//     always; do not translate such topics from the copies (the stamp
//     names the cluster, not the topic).
//   - Stretches of unstamped records: a probe scans at least 4096 offsets
//     (at most 5440) for a stamped copy. A longer stretch at the log's start
//     or end (MM2 replicated before kmirror, tail resume turned off since)
//     is crossed by a binary search for its boundary, and the Reread bound
//     of an answer across it counts offsets, not records. One in the middle
//     is crossed when the copy before it tells on which side the answer
//     lies, else no answer ([ErrNoStampedCopy]). Where several such
//     stretches cut the log, the first copy may be passed over: the answers
//     stay safe (never past the first copy of X or later), less often
//     exact.
//
// The result is keyed like offsets, every partition present (with Err
// when not translated; a partition whose offsets could not be listed, no
// such partition or no leader, has that error). The error is for failed
// reads (a fetch failure, ctx). cl is not closed (its options are used to
// build short-lived readers). Without a deadline in ctx, [DefaultTimeout]
// bounds the call.
func TranslateFromRecords(ctx context.Context, cl *kgo.Client, sourceClusterID string, offsets map[string]map[int32]int64) (map[string]map[int32]RecordTranslation, error) {
	many := make(map[string]map[int32][]int64, len(offsets))
	for t, ps := range offsets {
		many[t] = make(map[int32][]int64, len(ps))
		for p, x := range ps {
			many[t][p] = []int64{x}
		}
	}
	got, err := translateFromRecords(ctx, cl, sourceClusterID, many)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int32]RecordTranslation, len(got))
	for t, ps := range got {
		out[t] = make(map[int32]RecordTranslation, len(ps))
		for p, rs := range ps {
			out[t][p] = rs[0]
		}
	}
	return out, nil
}

// translateFromRecords is [TranslateFromRecords] for several source
// offsets per partition (the answers in the order of the offsets): one
// listing of the partitions, and one search per partition whose reads
// serve every offset (each offset range is read once), so that many
// groups on one partition cost one search, not one each. Each
// answer is the one [TranslateFromRecords] gives for its offset alone:
// its checks judge only the copies its own search looked at, whatever the
// searches for the other offsets read.
func translateFromRecords(ctx context.Context, cl *kgo.Client, sourceClusterID string, offsets map[string]map[int32][]int64) (map[string]map[int32][]RecordTranslation, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if cl == nil {
		return nil, ErrNilClient
	}
	var topics []string
	for t := range offsets {
		topics = append(topics, t)
	}
	out := make(map[string]map[int32][]RecordTranslation, len(offsets))
	if len(topics) == 0 {
		return out, nil
	}
	// The offsets of the partitions asked about only: another partition of
	// a remote topic without a leader (its broker down) must not fail or
	// stall the others.
	asked := make(map[string][]int32, len(offsets))
	for t, ps := range offsets {
		for p := range ps {
			asked[t] = append(asked[t], p)
		}
	}
	starts := kread.ListOffsets(ctx, cl, asked, -2, false)
	ends := kread.ListOffsets(ctx, cl, asked, -1, true)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("remoteclusterutils: listing the offsets of %d remote topics: %w", len(topics), err)
	}
	type job struct {
		topic     string
		partition int32
		xs        []int64
	}
	var jobs []job
	for t, ps := range offsets {
		out[t] = make(map[int32][]RecordTranslation, len(ps))
		for p, xs := range ps {
			jobs = append(jobs, job{t, p, xs})
		}
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, 8)
	)
	for _, j := range jobs {
		rts := make([]RecordTranslation, len(j.xs))
		var listErr error
		s, sok := starts.Lookup(j.topic, j.partition)
		e, eok := ends.Lookup(j.topic, j.partition)
		switch {
		case !sok || !eok:
			listErr = fmt.Errorf("%s[%d]: offsets not listed (no such topic or partition)", j.topic, j.partition)
		case s.Err != nil || e.Err != nil:
			listErr = fmt.Errorf("%s[%d]: listing offsets: %w", j.topic, j.partition, errors.Join(s.Err, e.Err))
		}
		scan := false
		for i, x := range j.xs {
			rts[i] = RecordTranslation{Topic: j.topic, Partition: j.partition, SourceOffset: x, Offset: -1, LastCopied: -1, Err: listErr}
			if listErr == nil && x < 0 {
				rts[i].Err = fmt.Errorf("%s[%d]: source offset %d is negative", j.topic, j.partition, x)
			}
			scan = scan || rts[i].Err == nil
		}
		if !scan {
			mu.Lock()
			out[j.topic][j.partition] = rts
			mu.Unlock()
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(j job, rts []RecordTranslation, start, end int64) {
			defer func() { <-sem; wg.Done() }()
			sc := &recScan{ctx: ctx, opts: cl.Opts(), topic: j.topic, partition: j.partition, src: sourceClusterID,
				start: start, end: end, stamps: map[int64]int64{}, data: map[int64]bool{}, hops: map[int64]string{}}
			for i, x := range j.xs {
				if rts[i].Err != nil {
					continue
				}
				r, err := sc.translate(x)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("remoteclusterutils: reading %s[%d]: %w", j.topic, j.partition, err)
					}
					mu.Unlock()
					return
				}
				r.Topic, r.Partition, r.SourceOffset = j.topic, j.partition, x
				rts[i] = r
			}
			mu.Lock()
			out[j.topic][j.partition] = rts
			mu.Unlock()
		}(j, rts, s.Offset, e.Offset)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// scanBound bounds the records one probe of [TranslateFromRecords] reads
// looking for a stamped copy (it stops at the first read that reaches it:
// 64, 256, 1024 then 4096 offsets, 5440 in all); probeWindow is its first
// read's size (quadrupled at each further read).
const (
	scanBound   = 4096
	probeWindow = 64
)

// recScan searches one remote partition.
type recScan struct {
	ctx        context.Context
	opts       []kgo.Opt
	topic      string
	partition  int32
	src        string
	start, end int64
	// stamps maps the offset of each stamped copy read to its source
	// offset; data holds the offsets of every data record read; covered
	// the offset ranges read, sorted and disjoint (probes read each
	// offset once); hops maps each stamped copy's offset to its last hop
	// (src empty).
	stamps  map[int64]int64
	data    map[int64]bool
	covered []kread.Range
	hops    map[int64]string
	// looked holds the offset ranges the current translate looked at,
	// sorted and disjoint: check judges the copies in them only, so that
	// an answer does not depend on what the searches for the partition's
	// other offsets read before it (in the order of a map).
	looked []kread.Range
}

// stamp is a stamped copy: at offset d, of source offset u.
type stamp struct{ d, u int64 }

// ensure reads the parts of [from, to) not read yet; the current
// translate looks at all of it.
func (s *recScan) ensure(from, to int64) error {
	if from < to {
		s.looked = merge(s.looked, kread.Range{From: from, To: to})
	}
	at := from
	var gaps []kread.Range
	for _, c := range s.covered {
		if c.To <= at || c.From >= to {
			continue
		}
		if c.From > at {
			gaps = append(gaps, kread.Range{From: at, To: c.From})
		}
		at = max(at, c.To)
	}
	if at < to {
		gaps = append(gaps, kread.Range{From: at, To: to})
	}
	for _, g := range gaps {
		// A fetch returns up to its byte limit from g.From (1 MiB by
		// default): ask about 512 bytes per offset of the range (at least
		// 32 KiB), so a probe of 64 offsets does not transfer a megabyte.
		limit := int32(min(max((g.To-g.From)*512, 32<<10), 1<<20))
		opts := append(slices.Clip(s.opts), kgo.FetchMaxPartitionBytes(limit), kgo.FetchMaxBytes(limit))
		got, err := kread.ReadRanges(s.ctx, opts, map[string]map[int32]kread.Range{s.topic: {s.partition: g}}, true)
		if err != nil {
			return err
		}
		for _, r := range got[s.topic][s.partition] {
			if r.Offset < g.From || r.Offset >= g.To {
				continue
			}
			s.data[r.Offset] = true
			if u, ok := s.stampOf(r); ok {
				s.stamps[r.Offset] = u
			}
		}
		s.cover(g)
	}
	return nil
}

// cover adds g to the covered ranges, merging neighbours.
func (s *recScan) cover(g kread.Range) { s.covered = merge(s.covered, g) }

// merge returns rs (sorted and disjoint) with g added, neighbours merged.
func merge(rs []kread.Range, g kread.Range) []kread.Range {
	out := make([]kread.Range, 0, len(rs)+1)
	for _, c := range rs {
		switch {
		case c.To < g.From || c.From > g.To:
			out = append(out, c)
		default:
			g = kread.Range{From: min(g.From, c.From), To: max(g.To, c.To)}
		}
	}
	out = append(out, g)
	slices.SortFunc(out, func(a, b kread.Range) int { return cmp.Compare(a.From, b.From) })
	return out
}

// stampOf returns r's source offset when it is a stamped copy of the
// source cluster (any single one when src is empty).
func (s *recScan) stampOf(r *kgo.Record) (int64, bool) {
	if s.src != "" {
		return copiedFrom(r, s.src)
	}
	id, off, ok := lastHop(r)
	if ok {
		s.hops[r.Offset] = id
	}
	return off, ok
}

// firstFrom returns the first stamped copy at or after d, and the number of
// data records in [d, its offset); ok is false when none stands before the
// end; errScanBound when the scan bound stopped the search.
func (s *recScan) firstFrom(d int64) (st stamp, before int64, ok bool, err error) {
	d = max(d, s.start)
	w := int64(probeWindow)
	for at := d; at < s.end; {
		if at-d >= scanBound {
			return stamp{}, 0, false, errScanBound
		}
		to := min(at+w, s.end)
		if err := s.ensure(at, to); err != nil {
			return stamp{}, 0, false, err
		}
		for o := at; o < to; o++ {
			if u, isStamp := s.stamps[o]; isStamp {
				return stamp{o, u}, before, true, nil
			}
			if s.data[o] {
				before++
			}
		}
		at, w = to, w*4
	}
	return stamp{}, before, false, nil
}

// lastBefore returns the last stamped copy before d and the number of data
// records in (its offset, d); errScanBound when the scan bound stopped the
// search.
func (s *recScan) lastBefore(d int64) (st stamp, after int64, ok bool, err error) {
	d = min(d, s.end)
	w := int64(probeWindow)
	for at := d; at > s.start; {
		if d-at >= scanBound {
			return stamp{}, 0, false, errScanBound
		}
		from := max(at-w, s.start)
		if err := s.ensure(from, at); err != nil {
			return stamp{}, 0, false, err
		}
		for o := at - 1; o >= from; o-- {
			if u, isStamp := s.stamps[o]; isStamp {
				return stamp{o, u}, after, true, nil
			}
			if s.data[o] {
				after++
			}
		}
		at, w = from, w*4
	}
	return stamp{}, after, false, nil
}

// boundaryFirst finds the first stamped copy when more than scanBound
// unstamped records start the log: a binary search for the first offset
// from which a probe finds one, assuming the stamped copies after the
// unstamped prefix stand less than scanBound apart (a stamped copy inside
// the prefix may be passed over: the answers built on it stay safe).
func (s *recScan) boundaryFirst() (stamp, bool, error) {
	lo, hi := min(s.start+scanBound, s.end), s.end
	for lo < hi {
		mid := lo + (hi-lo)/2
		_, _, _, err := s.firstFrom(mid)
		switch {
		case errors.Is(err, errScanBound):
			lo = min(mid+scanBound, hi)
		case err != nil:
			return stamp{}, false, err
		default:
			hi = mid // found one at or after mid, or none to the end
		}
	}
	c, _, ok, err := s.firstFrom(lo)
	if errors.Is(err, errScanBound) {
		err = nil
	}
	return c, ok && err == nil, err
}

// boundaryLast finds the last stamped copy when more than scanBound
// unstamped records end the log, first being a stamped copy: a binary
// search for the last offset below which a probe finds one within
// scanBound (with the same assumption as boundaryFirst).
func (s *recScan) boundaryLast(first stamp) (stamp, bool, error) {
	lo, hi := first.d+1, s.end // a probe below lo finds first; below hi none
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		_, _, ok, err := s.lastBefore(mid)
		switch {
		case errors.Is(err, errScanBound):
			hi = mid
		case err != nil:
			return stamp{}, false, err
		case ok:
			lo = mid
		default:
			hi = mid
		}
	}
	c, _, ok, err := s.lastBefore(lo)
	if errors.Is(err, errScanBound) {
		err = nil
	}
	return c, ok && err == nil, err
}

// errScanBound ends a probe that found no stamped copy within scanBound.
var errScanBound = fmt.Errorf("%w within %d records of a probe", ErrNoStampedCopy, scanBound)

// translate answers X on the partition; the error is a failed read, a
// declined translation is the result's Err.
func (s *recScan) translate(x int64) (RecordTranslation, error) {
	s.looked = nil
	rt := RecordTranslation{Offset: -1, LastCopied: -1}
	decline := func(err error) (RecordTranslation, error) {
		if errors.Is(err, errScanBound) || errors.Is(err, ErrNoStampedCopy) ||
			errors.Is(err, ErrNotMonotonic) || errors.Is(err, ErrMixedSources) || errors.Is(err, ErrNotCaughtUp) {
			rt.Offset, rt.Err = -1, err
			return rt, nil
		}
		return RecordTranslation{}, err
	}
	answer := func(d int64, exact bool, reread int64) (RecordTranslation, error) {
		if err := s.check(); err != nil {
			return decline(err)
		}
		rt.Offset, rt.Record, rt.Exact, rt.Reread = d, KindRecord, exact, reread
		if exact {
			rt.Reread = 0
		}
		return rt, nil
	}
	first, before, ok, err := s.firstFrom(s.start)
	if errors.Is(err, errScanBound) {
		// A long unstamped prefix (MM2 replicated before kmirror): the
		// first stamped copy by a boundary search; before becomes a bound.
		first, ok, err = s.boundaryFirst()
		before = first.d - s.start
	}
	if err != nil {
		return decline(err)
	}
	if !ok {
		return decline(fmt.Errorf("%w in [%d, %d)", ErrNoStampedCopy, s.start, s.end))
	}
	last, after, ok, err := s.lastBefore(s.end)
	if errors.Is(err, errScanBound) {
		// A long unstamped tail (tail resume turned off, MM2 again).
		last, ok, err = s.boundaryLast(first)
		after = s.end - last.d - 1
	}
	if err != nil || !ok {
		return decline(fmt.Errorf("the last stamped copy: %w", cmpErr(err, ErrNoStampedCopy)))
	}
	rt.LastCopied = last.u
	switch {
	case x <= first.u:
		if before == 0 || x == 0 {
			d := first.d
			if before > 0 {
				d = s.start // X is 0: every record is read, none was consumed
			}
			return answer(d, true, 0)
		}
		return answer(s.start, false, before)
	case x > last.u:
		if last.u < x-1 {
			if err := s.check(); err != nil {
				return decline(err)
			}
			return decline(fmt.Errorf("%w: the newest copy at %d is of source offset %d, below %d", ErrNotCaughtUp, last.d, last.u, x-1))
		}
		if after == 0 {
			return answer(s.end, true, 0)
		}
		return answer(last.d+1, false, after)
	}
	// first.u < x <= last.u: a binary search for next, the first stamped
	// copy of a source offset >= x. Invariants: every stamped copy before
	// lo is of a source offset < x, below the last of them; next is the
	// first stamped copy at or after hi, of a source offset >= x.
	below, next := first, last
	lo, hi := first.d+1, last.d
	for lo < hi {
		mid := lo + (hi-lo)/2
		c, _, ok, err := s.firstFrom(mid)
		if errors.Is(err, errScanBound) {
			// No stamped copy in [mid, mid+scanBound): the last one
			// before mid decides on which side next is.
			c, _, ok, err = s.lastBefore(mid)
			switch {
			case errors.Is(err, errScanBound) || (err == nil && !ok):
				return decline(fmt.Errorf("%w around offset %d (in both directions)", errScanBound, mid))
			case err != nil:
				return decline(err)
			case c.u >= x:
				hi, next = c.d, c
			default:
				below, lo = c, min(mid+scanBound, hi)
			}
			continue
		}
		if err != nil {
			return decline(err)
		}
		if !ok {
			return decline(fmt.Errorf("%w: none at or after %d (the log changed?)", ErrNoStampedCopy, mid))
		}
		if c.u >= x {
			hi, next = mid, c
		} else {
			below, lo = c, c.d+1
		}
	}
	if next.u < x || next.d <= below.d {
		return decline(fmt.Errorf("%w: around offset %d", ErrNotMonotonic, below.d))
	}
	if next.d == below.d+1 {
		return answer(next.d, true, 0)
	}
	// The records between below and next: none (only markers, aborted
	// records, compacted offsets) makes next exact.
	c, gap, ok, err := s.firstFrom(below.d + 1)
	switch {
	case errors.Is(err, errScanBound):
		return answer(below.d+1, false, next.d-below.d-1) // a bound: offsets, not records
	case err != nil:
		return decline(err)
	case !ok || c != next:
		return decline(fmt.Errorf("%w: around offset %d", ErrNotMonotonic, below.d))
	case gap == 0:
		return answer(next.d, true, 0)
	}
	return answer(below.d+1, false, gap)
}

// check verifies that the stamped copies the current translate looked at
// carry strictly increasing source offsets in log order, and (src empty)
// name one last hop.
func (s *recScan) check() error {
	ds := make([]int64, 0, len(s.stamps))
	for d := range s.stamps {
		i, _ := slices.BinarySearchFunc(s.looked, d, func(r kread.Range, d int64) int { return cmp.Compare(r.To-1, d) })
		if i < len(s.looked) && s.looked[i].From <= d {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	seen := map[string]bool{}
	for _, d := range ds {
		if id, ok := s.hops[d]; ok {
			seen[id] = true
		}
	}
	if len(seen) > 1 {
		return fmt.Errorf("%w: %q", ErrMixedSources, slices.Sorted(maps.Keys(seen)))
	}
	for i := 1; i < len(ds); i++ {
		if s.stamps[ds[i]] <= s.stamps[ds[i-1]] {
			return fmt.Errorf("%w: the copy at %d is of source offset %d, the copy at %d of %d",
				ErrNotMonotonic, ds[i-1], s.stamps[ds[i-1]], ds[i], s.stamps[ds[i]])
		}
	}
	return nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// lastHop returns the last cluster ID r's provenance header names and the
// source offset it carries, when it carries one.
func lastHop(r *kgo.Record) (id string, offset int64, ok bool) {
	var v []byte
	found := false
	for _, h := range r.Headers {
		if h.Key == provenanceHeader {
			v, found = h.Value, true
		}
	}
	if !found {
		return "", 0, false
	}
	off, ok := provhdr.Offset(v)
	if !ok {
		return "", 0, false
	}
	last, ok := provhdr.LastID(v)
	if !ok {
		return "", 0, false
	}
	return last, off, true
}
