package mirror

import (
	"context"
	"time"
)

// syncFlushTimeout bounds the wait for the offset syncs and runs at a
// unit's stop. They go to the cluster holding the offset syncs (the source
// by default, offset-syncs.topic.location), which may be the cluster that
// just died: kgo never fails a record to a broker that does not answer, so
// an unbounded flush held a stop until the 30 s shutdown bound (issue 21:
// "flushing offset syncs err=context deadline exceeded" after the source
// died). Resume points are on the target, so nothing but translation
// precision is lost by not waiting longer: a checkpoint of a position
// whose last offset run is missing is safe, not exact. A live cluster
// acknowledges in milliseconds.
const syncFlushTimeout = 2 * time.Second

// leaveTimeout bounds a member's LeaveGroup at its stop. The group is on
// the flow's target, which may be dead (a heartbeats-only flow into the
// failed cluster, MM2's default for every pair of clusters); a member that
// cannot leave is expired after the group's session timeout, as a crashed
// one is. A live coordinator answers in milliseconds.
const leaveTimeout = 2 * time.Second

// flushSyncs waits, at most syncFlushTimeout, for the offset syncs and runs
// produced so far, and counts and logs those left unwritten. Every unit
// calls it at its stop (unitEnv.syncFlush); they share the producer.
func (f *flow) flushSyncs(ctx context.Context) {
	fctx, cancel := context.WithTimeout(ctx, syncFlushTimeout)
	defer cancel()
	cl := f.syncCl.Load()
	err := cl.Flush(fctx)
	if err == nil {
		return
	}
	n := cl.BufferedProduceRecords()
	f.log.Warn("offset syncs and runs not written at stop: the cluster holding them does not answer; resume points are on the target, nothing else is lost (translations of these positions will be safe, not exact)",
		"topic", f.offsetSyncsTopic, "records", n, "waited", syncFlushTimeout, "err", err)
}
