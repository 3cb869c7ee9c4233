package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pollLoop fetches from the source and hands each record to the target
// producer, same partition number, key, value, headers and timestamp kept.
// Exactly once, it also begins and commits the unit's transactions; it
// returns the error of a transaction that had to be aborted (the session
// ends), and commits the open transaction when ctx ends, unless hard has
// ended too.
func (u *unit) pollLoop(ctx, hard context.Context) error {
	if u.sh != nil {
		return u.shallowLoop(ctx, hard)
	}
	eos := u.env.cfg.ExactlyOnce
	pv := u.env.prov
	stampOffset := u.env.stampOffset
	u.inTxn = false
	var buf []inflight
	var out []*kgo.Record
	for {
		// An interval-bounded transaction holding records commits when its
		// interval ends even if the source goes quiet: the poll waits no
		// longer than that (kgo returns no empty fetches).
		// It also ends when partitions were added that it may have to
		// get fetched at once (pollKicks).
		pollCtx, cancelPoll := context.WithCancel(ctx)
		var deadline time.Time
		if eos && u.inTxn && u.txnRecords > 0 && u.env.cfg.TransactionBoundary == TransactionBoundaryInterval {
			deadline = u.txnStart.Add(u.txnSpan)
		}
		if due := u.kicks.waiting(cancelPoll); !due.IsZero() && (deadline.IsZero() || due.Before(deadline)) {
			deadline = due
		}
		waitCtx, cancelWait := pollCtx, cancelPoll
		if !deadline.IsZero() {
			waitCtx, cancelWait = context.WithDeadline(pollCtx, deadline)
		}
		fs := u.cons.PollRecords(waitCtx, u.pollMax(eos))
		u.kicks.waiting(nil)
		cancelWait()
		cancelPoll()
		if ctx.Err() != nil || fs.IsClientClosed() {
			if eos && u.inTxn && hard.Err() == nil && !fs.IsClientClosed() {
				cctx, cancel := context.WithTimeout(hard, shutdownTimeout)
				defer cancel()
				return u.commitTxn(cctx)
			}
			return nil
		}
		if eos && !u.inTxn {
			if err := u.prod.BeginTransaction(); err != nil {
				return err
			}
			u.inTxn, u.txnStart, u.txnRecords = true, time.Now(), 0
		}
		feeds := *u.feeds.Load()
		fs.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return // the loop's own context (stop, or a transaction's interval)
			}
			u.env.metrics.flowErr(u.env.labels, "fetch")
			f := feeds[tp{topic, partition}]
			if f == nil {
				u.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
				return
			}
			// Shown as RETRYING in the partition status; logged at most
			// every 10 s per partition (kgo may return one per fetch).
			if u.noteFetchErr(f, err) {
				u.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
			}
		})
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			f := feeds[tp{fp.Topic, fp.Partition}]
			if f == nil || len(fp.Records) == 0 {
				return
			}
			if !f.cursor.Load() {
				f.cursor.Store(true) // restartInPlace
			}
			if !f.live() {
				// Stopped (failed, or held for a restart): its successor
				// fetches these records again.
				if h := u.env.hooks; h != nil && h.polled != nil {
					h.polled(f.k.topic, f.partition, fp.Records[len(fp.Records)-1].Offset, false)
				}
				return
			}
			// Check the batch, then hand it to the control goroutine and
			// produce it.
			batch, recs := buf[:0], out[:0]
			skipped := 0
			var tooLarge error // the record at the end of batch the target would refuse
			lim := u.recordLimit(f.remote)
			var arena []kgo.RecordHeader // the batch's stamped headers: one allocation per batch
			var vals []byte              // with the offset element: the batch's header values, one allocation
			if pv != nil {
				n := 0
				for _, r := range fp.Records {
					n += len(r.Headers) + 1
				}
				arena = make([]kgo.RecordHeader, 0, n)
				if stampOffset {
					vals = make([]byte, 0, len(fp.Records)*pv.provValueRoom())
				}
			}
			for _, r := range fp.Records {
				if !u.checkGap(f, r, fp.LogStartOffset) {
					break
				}
				f.next = r.Offset + 1
				if r.Attrs.IsControl() {
					continue // a transaction marker: not replicated, but the position moves past it
				}
				u.codec.observe(r.Attrs.CompressionType())
				size := recordSize(r) // the source record's payload, without the header kmirror adds
				if pv != nil {
					v, idx := pv.check(r.Headers)
					if v.skipped() {
						// Already on the target's cluster (or came back
						// from it): a hole in the copy, like compaction.
						skipped++
						continue
					}
					if stampOffset {
						vals, arena, r.Headers = pv.stampAt(vals, arena, r.Headers, idx, r.Offset)
					} else {
						arena, r.Headers = pv.stampArena(arena, r.Headers, idx)
					}
				}
				u.env.metrics.polled(f.pm, r)
				batch = append(batch, inflight{up: r.Offset, size: size, rec: r, ts: r.Timestamp.UnixMilli(), nokey: r.Key == nil})
				if sz := recordBatchSize(r); sz > lim {
					// Refused before it is produced, and nothing after it
					// is: the partition fails at this record once the
					// records before it are acknowledged.
					tooLarge = u.tooLarge(f.remote, r, sz, lim)
					break
				}
				recs = append(recs, r)
			}
			if skipped > 0 {
				u.env.skipped(skipped)
			}
			live := u.box.postFetched(f, batch, f.next, fp.HighWatermark)
			if h := u.env.hooks; h != nil && h.polled != nil && len(recs) > 0 {
				h.polled(f.k.topic, f.partition, batch[len(recs)-1].up, live)
			}
			if live {
				for _, r := range recs {
					retarget(r, f.remote, f.gate) // the fetched record is reused as the produced record
					u.prod.Produce(context.Background(), r, f.ack)
				}
				// Records skipped count too: a transaction holding
				// nothing else commits the resume point past them
				// (partState.resumeAt).
				u.txnRecords += len(batch) + skipped // with a refused record: the transaction commits (aborts, exactly once: txnFailed) at its boundary
				if tooLarge != nil {
					// Nothing of the partition is produced after it.
					f.stopped.Store(true)
					u.box.postResult(f, batch[len(batch)-1].rec, tooLarge)
				}
			}
			// Failed or restarted meanwhile (not live): its successor
			// fetches these records again. The slices are reused for the
			// next partition, cleared so that they keep no record (nor
			// the fetch buffer behind it) alive once acked.
			clear(batch)
			clear(recs)
			buf, out = batch[:0], recs[:0]
		})
		u.codec.settle()
		if ks := u.kicks.take(time.Now(), fs.NumRecords() > 0); ks != nil {
			// After this poll's records were handed on: a partition
			// named here polled nothing yet (pollKicks).
			u.kick(ctx, ks)
		}
		if eos && u.txnDue() {
			// On hard, not ctx: a graceful stop (Close, a revocation)
			// that comes while the commit runs lets it finish, as the
			// stop's own commit below would; canceled, it aborted the
			// transaction, and the next owner replayed its records.
			if err := u.commitTxn(hard); err != nil {
				return err
			}
		}
	}
}

// pollMax is how many records the poll loop takes at most in one poll:
// 10 000, and exactly once no more than the open transaction has room for
// under TransactionMaxRecords (a poll's records all go into the open
// transaction, which commits only after them: a cap checked after the poll
// let one transaction hold up to a whole poll more).
func (u *unit) pollMax(eos bool) int {
	n := 10000
	if eos && u.env.cfg.TransactionMaxRecords > 0 {
		room := u.env.cfg.TransactionMaxRecords
		if u.inTxn {
			room -= u.txnRecords
		}
		n = min(n, max(room, 1))
	}
	return n
}

// checkGap compares a fetched record's offset with the next offset expected
// and reports records lost before replication. A hole above the log start
// is compaction, a transaction marker or an aborted record skipped by
// read_committed: not a gap. It returns false when the partition must stop
// (GapStop).
func (u *unit) checkGap(f *feed, r *kgo.Record, logStart int64) bool {
	return u.checkGapAt(f, r.Offset, logStart)
}

// checkGapAt is checkGap for the record (or batch) at source offset off.
func (u *unit) checkGapAt(f *feed, off int64, logStart int64) bool {
	if f.next < 0 || off == f.next {
		return true
	}
	var gap *GapError
	switch {
	case off < f.next:
		gap = &GapError{Flow: u.env.name, Topic: f.k.topic, Partition: f.partition, From: off, To: off,
			Reason: fmt.Sprintf("source offsets went back from %d to %d: the topic was re-created or its log truncated; replicating the new records", f.next, off)}
	case logStart > f.next:
		// Records [next, logStart) were deleted before they were
		// replicated.
		to := min(logStart, off)
		gap = &GapError{Flow: u.env.name, Topic: f.k.topic, Partition: f.partition, From: f.next, To: to,
			Reason: fmt.Sprintf("the source log starts at %d (retention or DeleteRecords removed records kmirror had not replicated)", logStart)}
	default:
		return true
	}
	gap.At = time.Now()
	u.reportGap(gap)
	if u.env.cfg.OnGap == GapStop && gap.To > gap.From {
		// The loss is the operator's to accept (Mirror.RestartFailed):
		// nothing of the partition is produced from here.
		f.stopped.Store(true)
		u.box.post(event{kind: evFailed, f: f, err: gap})
		return false
	}
	return true
}

// reportGap records a gap in the flow's status, counts it and logs it.
func (u *unit) reportGap(gap *GapError) {
	u.env.gap(gap)
	u.env.metrics.gap(u.env.labels, gap.Topic, gap.Partition, gap.To-gap.From)
	u.log.Error("source gap", "topic", gap.Topic, "partition", gap.Partition, "from", gap.From, "to", gap.To, "lost", gap.To-gap.From, "reason", gap.Reason, "on_gap", u.env.cfg.OnGap)
}

// noteFetchErr posts a fetch error of f (shown as RETRYING while it
// repeats) and reports whether to log it: at most every 10 s per
// partition, since kgo may return one per fetch. A source topic the fetch
// found gone (deleted, maybe re-created) wakes the flow's discovery, which
// settles it: else the partition waited up to
// refresh.topics.interval.seconds (TestRecreatedSourceSeenBeforeTheNextRefresh).
// Poll (or shallow) loop.
func (u *unit) noteFetchErr(f *feed, err error) bool {
	u.box.post(event{kind: evFetchErr, f: f, err: aclAdvice(err, "READ", f.k.topic, u.env.src.Alias)})
	if unknownTopic(err) && u.env.rediscover != nil {
		u.env.rediscover()
	}
	if time.Since(f.fetchErrLogged) <= 10*time.Second {
		return false
	}
	f.fetchErrLogged = time.Now()
	return true
}

// retarget turns a fetched record into the record to produce to remote
// topic remote: same partition number, key, value, headers and timestamp;
// the source's attributes, producer fields and offset cleared, and the
// partition's produce gate as its context (producegate.go).
func retarget(r *kgo.Record, remote string, gate *produceGate) {
	r.Topic = remote
	r.Attrs = kgo.RecordAttrs{}
	r.ProducerID, r.ProducerEpoch, r.LeaderEpoch, r.Offset = 0, 0, 0, 0
	r.Context = gate
}

// kick moves the consumer's cursors of the kicks due (pollKicks), after
// listing the log starts of those added at it (one ListOffsets per leader,
// bounded by startsExactTimeout; one not listed is tried again later).
// The kicks are checked against the feeds again after the listing: a
// source topic re-created while it was out has new feeds at its new log's
// start, which a move to the old log's offsets (listed, or exact) would
// skip (TestListedKickOfReplacedFeedNotApplied). Poll loop only.
func (u *unit) kick(ctx context.Context, ks []kick) {
	var starts map[tp]int64
	if _, _, unlisted := kickOffsets(ks, *u.feeds.Load()); len(unlisted) > 0 {
		keys := make([]tp, len(unlisted))
		for i, k := range unlisted {
			keys[i] = k.f.k
		}
		starts = u.listStarts(ctx, keys) // none listed: each is tried again
	}
	set, moved, unlisted := kickOffsets(ks, *u.feeds.Load())
	set, tried := listedMoves(set, unlisted, starts)
	moved = append(moved, tried...)
	if set != nil {
		u.cons.SetOffsets(set)
	}
	u.kicks.again(time.Now(), moved)
}
