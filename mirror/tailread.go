package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/kread"
)

// tailPart is one partition whose start the target's tail may move.
type tailPart struct {
	k      tp     // source topic and partition
	remote string // remote topic (same partition)
	stored int64  // the stored resume point (last replicated source offset, -1 none)
}

// tailStart is the start decision of one partition.
type tailStart struct {
	after int64       // resume after this source offset (-1: from the start offset policy)
	out   tailOutcome // why
	// down is the target offset of the tail record (with tailAhead): the
	// partition's acknowledged position starts there.
	down int64
}

// Tail windows: the last tailWindow records of a remote partition are
// read first; when none of them is this flow's (local writes after ours,
// markers of an earlier exactly-once run), the last tailWindowWide.
const (
	tailWindow     = 8
	tailWindowWide = 512
)

// readTailStarts decides the start of each of parts (issue 23): it reads
// the tails of their remote partitions on the target (read committed: an
// aborted exactly-once record never counts), finds the last record the
// flow wrote (its source cluster's escaped ID src is the last hop of its
// provenance), and for a tail ahead of the stored resume point reads the
// source record at the tail's offset (readCommitted: as the unit's
// consumer) to verify it. One client per cluster; kgo fetches the
// partitions of a broker in one request. A failed read of a cluster makes
// every partition that needed it fall back (tailUnreadable) and returns
// the error for the caller to report.
func readTailStarts(ctx context.Context, dstOpts, srcOpts []kgo.Opt, src []byte, readCommitted bool, parts []tailPart) (map[tp]tailStart, error) {
	out := make(map[tp]tailStart, len(parts))
	facts := make(map[tp]*tailFacts, len(parts))
	for _, p := range parts {
		facts[p.k] = &tailFacts{stored: p.stored, tailOff: -1}
	}
	decide := func() {
		for _, p := range parts {
			f := facts[p.k]
			after, o := decideTailStart(*f)
			s := tailStart{after: after, out: o, down: -1}
			if o == tailAhead {
				s.down = f.tail.Offset
			}
			out[p.k] = s
		}
	}
	fail := func(err error, srcSide bool) (map[tp]tailStart, error) {
		for _, f := range facts {
			if !srcSide {
				f.tailErr = true
			} else if tailNeedsSource(*f) {
				f.srcErr = true
			}
		}
		decide()
		return out, err
	}

	// The remote partitions' log start and committed end (LSO).
	remotes := map[string]bool{}
	for _, p := range parts {
		remotes[p.remote] = true
	}
	dstStart, dstEnd, err := listBounds(ctx, dstOpts, setKeys(remotes), true)
	if err != nil {
		return fail(fmt.Errorf("listing the remote partitions' offsets: %w", err), false)
	}
	byRemote := map[string]map[int32]tailPart{}
	for _, p := range parts {
		if byRemote[p.remote] == nil {
			byRemote[p.remote] = map[int32]tailPart{}
		}
		byRemote[p.remote][p.k.partition] = p
	}
	for _, window := range []int64{tailWindow, tailWindowWide} {
		ranges := map[string]map[int32]kread.Range{}
		for remote, ps := range byRemote {
			for part, p := range ps {
				start, end := dstStart[remote][part], dstEnd[remote][part]
				from := max(start, end-window)
				if end <= start || facts[p.k].tail != nil || (window == tailWindowWide && end-tailWindow <= start) {
					continue // empty, found, or the first window already reached the log start
				}
				if ranges[remote] == nil {
					ranges[remote] = map[int32]kread.Range{}
				}
				ranges[remote][part] = kread.Range{From: from, To: end}
			}
		}
		if len(ranges) == 0 {
			break
		}
		// Only the last copy of the flow's own per partition is kept, and
		// detached from its batch: a window of 512 records of every
		// partition held whole (the first start after MM2, whose copies
		// carry no offsets, reads the wide window everywhere) was 512 x
		// partitions x record size, GBs at thousands of partitions.
		type own struct {
			r   *kgo.Record
			off int64
		}
		last := map[tp]own{}
		err := kread.ReadRangesEach(ctx, dstOpts, ranges, true, func(r *kgo.Record) {
			if off, ok := ownOffset(r, src); ok {
				last[byRemote[r.Topic][r.Partition].k] = own{detachRecord(r), off}
			}
		})
		if err != nil {
			return fail(fmt.Errorf("reading the remote partitions' tails: %w", err), false)
		}
		for k, o := range last {
			f := facts[k]
			f.tail, f.tailOff, f.logAppend = o.r, o.off, o.r.Attrs.TimestampType() == 1
		}
	}

	// The source partitions of tails ahead of the resume point: their log
	// bounds, then the records at the tails' offsets.
	topics := map[string]bool{}
	for _, p := range parts {
		if f := facts[p.k]; f.tail != nil && f.tailOff > f.stored {
			topics[p.k.topic] = true
		}
	}
	if len(topics) == 0 {
		decide()
		return out, nil
	}
	srcStart, srcEnd, err := listBounds(ctx, srcOpts, setKeys(topics), readCommitted)
	if err != nil {
		for _, f := range facts {
			if f.tail != nil && f.tailOff > f.stored {
				f.srcErr = true
				f.srcEnd = f.tailOff + 1 // unknown: let the read error decide
			}
		}
		decide()
		return out, fmt.Errorf("listing the source partitions' offsets: %w", err)
	}
	ranges := map[string]map[int32]kread.Range{}
	for _, p := range parts {
		f := facts[p.k]
		f.srcStart, f.srcEnd = srcStart[p.k.topic][p.k.partition], srcEnd[p.k.topic][p.k.partition]
		if !tailNeedsSource(*f) {
			continue
		}
		if ranges[p.k.topic] == nil {
			ranges[p.k.topic] = map[int32]kread.Range{}
		}
		ranges[p.k.topic][p.k.partition] = kread.Range{From: f.tailOff, To: f.tailOff + 1}
	}
	if len(ranges) > 0 {
		got, err := kread.ReadRanges(ctx, srcOpts, ranges, readCommitted)
		if err != nil {
			return fail(fmt.Errorf("reading the source records at the tails' offsets: %w", err), true)
		}
		for _, p := range parts {
			if rs := got[p.k.topic][p.k.partition]; len(rs) > 0 {
				facts[p.k].src = rs[0]
			}
		}
	}
	decide()
	return out, nil
}

// listBounds returns the log start and end offsets of every partition of
// topics (the end is the last stable offset when committed), with one
// admin client.
func listBounds(ctx context.Context, opts []kgo.Opt, topics []string, committed bool) (start, end map[string]map[int32]int64, err error) {
	cl, err := kclient.New(opts...)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, err
	}
	var ends kadm.ListedOffsets
	if committed {
		ends, err = adm.ListCommittedOffsets(ctx, topics...)
	} else {
		ends, err = adm.ListEndOffsets(ctx, topics...)
	}
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, nil, err
	}
	return listedMap(starts), listedMap(ends), nil
}

func listedMap(l kadm.ListedOffsets) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) {
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out
}

func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// tailStartTimeout bounds the tail reads of one batch of starting
// partitions: past it they start from their resume points.
const tailStartTimeout = 10 * time.Second

// tailFallbackLines is how many partitions falling back from the tail
// are logged one by one per session start; the rest get one line.
const tailFallbackLines = 10

// tailStarts moves the start of the partitions of starts (about to start
// from stored resume points, or from nothing) to the target's tail where
// it is verified later (readTailStarts), and counts each start's outcome.
// A read that fails falls back for every partition it concerns, with one
// WARN per session. Control goroutine.
func (u *unit) tailStarts(ctx context.Context, starts []pendingStart) {
	e := u.env
	var parts []tailPart
	for _, st := range starts {
		if !st.start.fromStart && (e.merged == nil || !e.merged(st.k.topic)) {
			parts = append(parts, tailPart{k: st.k, remote: st.start.remote, stored: st.start.committed})
		}
	}
	if len(parts) == 0 {
		return
	}
	// The read's own bound is a failed read like any other (WARN); only
	// the unit's context ending (it stops) is not worth one.
	rctx, cancel := context.WithTimeout(ctx, min(e.cfg.AdminTimeout, tailStartTimeout))
	defer cancel()
	began := time.Now()
	got, err := readTailStarts(rctx, e.clientOpts(e.dst, nil), e.clientOpts(e.src, nil), e.prov.src,
		e.cfg.Isolation != ReadUncommitted, parts)
	if err != nil && ctx.Err() == nil && !u.tailWarned {
		u.tailWarned = true
		u.log.Warn("resume from the target's tail: a read failed, the partitions start from their stored resume points (at least once: what was copied since they were stored is copied again); with least-privilege ACLs, grant READ on the remote topics (ACLS.md)",
			"partitions", len(parts), "err", err)
	}
	var counts [tailOutcomes]int
	ahead := 0
	fellBack := 0                   // partitions falling back: the first tailFallbackLines logged one by one
	var restByReason map[string]int // the others, by reason
	for i := range starts {
		st := &starts[i]
		ts, ok := got[st.k]
		if !ok {
			continue
		}
		counts[ts.out]++
		if ts.out == tailAhead {
			st.start.byTail, st.start.tail, st.start.tailDown = true, ts.after, ts.down
			ahead++
			u.log.Debug("partition resumes from the target's tail", "topic", st.k.topic, "partition", st.k.partition,
				"resume_point", st.start.committed, "tail", ts.after, "not_copied_again", ts.after-max(st.start.committed, -1))
		} else if ts.out.fallback() {
			if fellBack < tailFallbackLines {
				u.log.Info("resume from the target's tail: falling back to the stored resume point", "topic", st.k.topic,
					"partition", st.k.partition, "resume_point", st.start.committed, "reason", ts.out.String())
			} else {
				if restByReason == nil {
					restByReason = map[string]int{}
				}
				restByReason[ts.out.String()]++
			}
			fellBack++
		}
	}
	if fellBack > tailFallbackLines {
		// One line for the rest (by_reason counts them, not the lines
		// above): a failed read of thousands of partitions logged a line
		// for each.
		u.log.Info("resume from the target's tail: more partitions fall back to their stored resume points",
			"partitions", fellBack-tailFallbackLines, "of", fellBack, "by_reason", restByReason)
	}
	for o, n := range counts {
		if n > 0 && e.tailNoted != nil {
			e.tailNoted(tailOutcome(o), n)
		}
	}
	if ahead > 0 {
		u.log.Info("partitions resume from the target's tail (records already copied there are not copied again)",
			"partitions", ahead, "of", len(parts), "took", time.Since(began).Round(time.Millisecond))
	} else {
		u.log.Debug("target's tail read: every partition starts from its stored resume point",
			"partitions", len(parts), "took", time.Since(began).Round(time.Millisecond))
	}
}
