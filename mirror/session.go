package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
)

// fetchMaxWait is how long a replication consumer's fetch waits for
// records (fetch.max.wait.ms) unless the source consumer's properties set
// it: 5 s, where Kafka's clients and MM2 default to 500 ms. A fetch
// returns as soon as a record arrives, so this adds no latency to a
// flowing partition; it only sets how often an idle unit asks again.
// franz-go builds every fetch request over every partition of the unit,
// which at thousands of idle partitions was the largest cost of an idle
// member after the collector (issue 22): about a third of an idle
// member's allocation at 6 000 partitions with a 1 s wait, and the
// allocation is what a soft memory limit turns into collector CPU.
// franz-go does not cut a fetch in flight short to add a partition: a
// restart moves the partition's cursor instead (restartInPlace), and other
// partitions added to a running session are kicked by the poll loop
// (pollKicks), so neither waits for an idle unit's fetch.
const fetchMaxWait = 5 * time.Second

// replicationConsumerRole is the source consumer's role options of a
// unit: kmirror's defaults a user may override (fetchMaxWait, and dec as
// the decompressor when not nil), then the user's
// (`<source>.consumer.*`), which come later and win.
func replicationConsumerRole(user []kgo.Opt, dec kgo.Decompressor) []kgo.Opt {
	opts := []kgo.Opt{kgo.FetchMaxWait(fetchMaxWait)}
	if dec != nil {
		opts = append(opts, kgo.WithDecompressor(dec))
	}
	return append(opts, user...)
}

// fetchMax is a slot consumer's fetch budget: its share of the flow's
// FetchMaxBytes (budget), at most what franz-go reads in one response
// (1 GiB, less brokerMaxRead's MiB of framing).
func (e *unitEnv) fetchMax() int32 {
	return min(budget(e.cfg.FetchMaxBytes, e.tasks, max(1<<20, e.cfg.FetchMaxPartitionBytes)), 1<<30-1<<20)
}

// brokerMaxRead is the kgo.BrokerMaxReadBytes of a consumer asking for
// fetch responses of up to fetchMax bytes: franz-go's default (100 MiB),
// or fetchMax and a MiB for the response's framing, at most franz-go's
// 1 GiB. A budget above the default made every slot consumer refuse
// itself ("max broker read bytes 104857600 is erroneously less than max
// fetch bytes 209715200") and the flow replicated nothing
// (TestBrkPLargeFetchBudgetReplicates).
func brokerMaxRead(fetchMax int32) int32 {
	return int32(min(max(100<<20, int64(fetchMax)+1<<20), 1<<30))
}

// heldRecordCost is what one record counts against a slot's producer
// buffer at least: kgo's MaxBufferedBytes counts only a record's key,
// value and headers, but each record held costs a few hundred bytes more
// (the fetched kgo.Record, its provenance header, its in-flight entry, the
// response it points into and its encoding). On 100 B records a 16 MiB
// buffer full of them held about 160 000 records and 3-4 times its
// budget in memory (issue 22: 2.2x the bare franz-go pipe's peak RSS,
// with no more records/s); counting each as 2 KiB bounds the records
// without slowing the copy (0.94-1.11x the pipe's RSS and the same records/s on
// the side-by-side benchmark). Records of 2 KiB and more are bounded by
// their bytes alone, as before.
const heldRecordCost = 2 << 10

// bufferedRecords is the most records a producer with a buffer of buf bytes
// holds (kgo.MaxBufferedRecords): buf / heldRecordCost, at least 512.
func bufferedRecords(buf int64) int {
	return int(max(buf/heldRecordCost, 512))
}

// open creates the session's source consumer and target producer (and,
// with shallow copy, its inbox), with the unit's share of the flow's
// budgets and the producer's record limits (limits.go).
func (u *unit) open() error {
	e := u.env
	iso := kgo.ReadCommitted()
	if e.cfg.Isolation == ReadUncommitted {
		iso = kgo.ReadUncommitted()
	}
	fetchMax := e.fetchMax()
	var err error
	u.kicks.reset()
	u.kickAdds = false
	sizer := new(fetchHook)
	dec := newLz4Decompressor()
	if u.cons, err = kclient.New(e.clientOpts(e.src, replicationConsumerRole(e.src.Consumer, dec),
		kgo.WithHooks(sizer),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxBytes(fetchMax),
		kgo.BrokerMaxReadBytes(brokerMaxRead(fetchMax)),
		kgo.FetchMaxPartitionBytes(e.cfg.FetchMaxPartitionBytes),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords(), // transaction markers move the position (lag reaches 0)
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}),
	)...); err != nil {
		return fmt.Errorf("source %s consumer: %w", e.src.Alias, err)
	}
	sizer.attach(u.cons)
	if n, ok := u.cons.OptValue(kgo.MaxDecompressBatchBytes).(int); ok {
		dec.setMax(n) // kgo.MaxDecompressBatchBytes (1 GiB unless a user option set it) bounds every codec
	}
	if off, _ := u.cons.OptValue(kgo.DisableFetchCRCValidation).(bool); off {
		dec.uncheckedCRC() // check.crcs=false: the lz4 frames' own checksums are verified
	}
	u.fetchSize.Store(&sizer.size)
	lim, buf := u.sessionLimits()
	u.lim.Store(&lim)
	if u.userLimit > 0 {
		buf = max(buf, int64(u.userLimit)) // a record up to it fits the buffer
	}
	u.bufBytes = buf
	popts := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedBytes(int(buf)),
		kgo.MaxBufferedRecords(bufferedRecords(buf)),
		kgo.ProducerLinger(5 * time.Millisecond),
	}
	role := e.dst.Producer
	if e.cfg.ExactlyOnce {
		popts = append(popts, kgo.TransactionalID(e.txnID(u.slot)))
		// Before the target's producer options, so that an explicit
		// transaction.timeout.ms wins.
		role = append([]kgo.Opt{kgo.TransactionTimeout(transactionTimeout(&e.cfg))}, role...)
	}
	// The source data's codec unless the user configured one (the user's
	// options come after these and win).
	// The batch limit per remote topic (limits.go) also comes first: the
	// user's producer.max.request.size wins.
	popts = append([]kgo.Opt{kgo.WithCompressor(u.codec), kgo.ProducerBatchCompression(sentinelCodec),
		kgo.ProducerBatchMaxBytesFn(u.batchLimit)},
		e.producerOpts(e.dst, role, popts...)...)
	// kgo measures a record's delivery timeout (delivery.timeout.ms) from
	// the record's timestamp, which replication keeps: every record older
	// than the timeout would fail at once, and a backlog could never be
	// copied. The replication producer retries until the target takes the
	// record (or a retry limit fails it, which restarts the session).
	popts = append(popts, kgo.RecordDeliveryTimeout(0))
	if u.userLimit > 0 {
		// The user's producer.max.request.size is known (found by the
		// probe below when the unit first opened its producer): the
		// batch-limit function comes last, so that a remote topic whose
		// max.message.bytes is smaller caps it (batchLimit). kgo's batch
		// limit is also the size it fills batches to, unlike Java's
		// max.request.size (Java batches to batch.size): a limit above the
		// topic's would build batches of small records the target refuses.
		popts = append(popts, kgo.ProducerBatchMaxBytesFn(u.batchLimit))
		if w := kgoBatchLimit(u.userLimit); w > u.userWrite {
			// franz-go refuses a client whose batch limit is above its
			// request limit (BrokerMaxWriteBytes): a user's limit equal
			// to it (max.request.size=104857600, franz-go's default
			// request limit) is 4 bytes above it in franz-go's measure
			// (kgoBatchLimit). TestUserLimitAtBrokerWriteLimitOpens.
			popts = append(popts, kgo.BrokerMaxWriteBytes(w))
		}
	}
	if !u.logKnown {
		e.prodLogMu.Lock()
		u.innerLog, u.logKnown = e.prodLog, e.prodLogKnown
		e.prodLogMu.Unlock()
	}
	if u.logKnown {
		// Last: it wraps the logger the options configure (found by the
		// flow's first producer: a probe).
		popts = append(popts, kgo.WithLogger(&failLogger{inner: u.innerLog, trip: u.kgoFailed}))
	}
	if u.prod, err = kclient.New(popts...); err != nil {
		u.cons.Close()
		return fmt.Errorf("target %s producer: %w", e.dst.Alias, err)
	}
	cons := u.cons
	u.closeCons = sync.OnceFunc(func() { kclient.CloseConsumer(cons, u.consumed()) })
	u.closeProd = sync.OnceFunc(u.prod.Close)
	if e.cfg.ExactlyOnce && e.cfg.TransactionBoundary == TransactionBoundaryInterval {
		tt, _ := u.prod.OptValue(kgo.TransactionTimeout).(time.Duration)
		if u.txnSpan = txnSpan(&e.cfg, tt); u.txnSpan < e.cfg.TransactionInterval && !u.spanWarned {
			u.spanWarned = true
			u.log.Warn("transaction.timeout.ms leaves less than admin.timeout.ms after transaction.boundary.interval.ms: "+
				"transactions commit earlier than the interval, or the coordinator would abort them; "+
				"set transaction.timeout.ms above the interval plus admin.timeout.ms to commit at the interval",
				"transaction_timeout", tt, "interval", e.cfg.TransactionInterval, "admin_timeout", e.cfg.AdminTimeout, "commit_every", u.txnSpan)
		}
	}
	found := int32(0)
	probeLog := !u.logKnown
	kclient.Locked(func() {
		u.codec.configured(u.prod.OptValue(kgo.ProducerBatchCompression))
		if probeLog {
			u.innerLog, _ = u.prod.OptValue(kgo.WithLogger).(kgo.Logger)
			u.logKnown = true
			e.prodLogMu.Lock()
			e.prodLog, e.prodLogKnown = u.innerLog, true
			e.prodLogMu.Unlock()
		}
		u.reqLimit, u.reqWrite = requestBatchLimit(u.prod)
		if u.userLimit > 0 {
			return // the client options do not change: found once
		}
		if fn, ok := u.prod.OptValue(kgo.ProducerBatchMaxBytesFn).(func(string) int32); ok {
			if v := fn(limitProbe); v != limitSentinel {
				found = v
			}
		}
		u.userWrite, _ = u.prod.OptValue(kgo.BrokerMaxWriteBytes).(int32)
	})
	if probeLog {
		// Reopened with the logger that stops a partition's produces at
		// franz-go's failure (producegate.go) in front of the configured
		// one, found by this first open.
		u.closeCons()
		u.closeProd()
		if found > 0 {
			u.userLimit = found
		}
		return u.open()
	}
	if found > 0 {
		// Reopened with the batch-limit function last (see above), and a
		// buffer that holds a record up to the user's max.request.size
		// (kgo fails a larger one at once).
		u.closeCons()
		u.closeProd()
		u.userLimit = found
		return u.open()
	}
	u.tailOK, u.tailWarned = e.tail && tailProducer(u.prod), false
	if e.tail && !u.tailOK && u.slot == 0 {
		u.log.Info("resume from the target's tail is off: the target producer is not idempotent with acks=all and unlimited retries (target.producer.enable.idempotence, acks, retries); partitions resume from stored resume points")
	}
	u.sh = nil
	if e.cfg.ShallowCopy {
		if acks, _ := u.prod.OptValue(kgo.RequiredAcks).(kgo.Acks); acks == kgo.NoAck() {
			u.log.Warn("shallow copy needs acknowledged produce requests (acks=0 is configured): the unit uses the normal path")
		} else {
			u.sh = newShallowInbox()
		}
	}
	return nil
}

// run is the unit's control goroutine. It runs sessions until the unit is
// stopped: a session opens the clients, (exactly once) fences the slot's
// previous producer, loads the resume points and replicates; an aborted
// transaction ends the session and the next one resumes from the last
// committed resume points.
func (u *unit) run(ctx, hard context.Context) {
	defer close(u.done)
	defer u.box.close()
	var delay time.Duration
	for ctx.Err() == nil {
		err := u.session(ctx, hard)
		if h := u.env.hooks; h != nil && h.sessionEnded != nil {
			h.sessionEnded(err, u.pollLoops.Load())
		}
		u.drainIdle() // what the session's goroutines posted last
		progressed := u.progressed.Swap(false)
		if err == nil || ctx.Err() != nil {
			return
		}
		if errors.Is(err, errRebuild) {
			delay = 0
			continue
		}
		if errors.Is(err, errNotOwner) {
			// Another member may own the slot (this member's group session
			// expired without it noticing yet): replicate nothing until the
			// group coordinator confirms this member's generation again.
			// If another member owns it, the group revokes or reassigns
			// the slot (ctx ends); if the answer was transient (a
			// rebalance that left the slot here, a coordinator moving),
			// the unit resumes: the member keeps the slot, so nobody else
			// would replicate its partitions.
			u.env.health(u.slot, fmt.Errorf("unit %d: %w", u.slot, err))
			u.log.Warn("unit paused: another member may own its slot", "err", err)
			if !u.awaitOwnership(ctx) {
				return
			}
			u.log.Info("unit resumes: the group coordinator confirms this member owns its slot")
			delay = 0
			continue
		}
		u.env.health(u.slot, fmt.Errorf("unit %d: %w", u.slot, err))
		delay = restartDelay(delay, progressed)
		u.log.Warn("unit restarts from its last committed resume points", "err", err, "in", delay)
		if !u.sleep(ctx, delay) {
			return
		}
	}
}

// restartDelay is how long a unit waits before its next session after a
// session that ended with an error, the previous wait having been prev
// (0: none yet): the backoff, which starts over when the session stored
// resume points (progressed: it was healthy). It only grew before: after
// a few isolated refusals over a process's life, each one stopped the
// slot's every partition for up to 30 s (a helper trying to break
// exactly-once mode, stop 38).
func restartDelay(prev time.Duration, progressed bool) time.Duration {
	if progressed {
		prev = 0
	}
	return backoff(prev)
}

// sleep waits for d, or until ctx ends (false), applying the events
// posted meanwhile (between sessions: drainIdle).
func (u *unit) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-u.box.wake:
			u.drainIdle()
		}
	}
}

// awaitOwnership asks the group coordinator, with backoff, whether this
// member still owns the unit's slot, until it does (true) or ctx ends
// (false: the slot was revoked or lost, or the unit stops).
func (u *unit) awaitOwnership(ctx context.Context) bool {
	var delay time.Duration
	for {
		delay = backoff(delay)
		if !u.sleep(ctx, delay) {
			return false
		}
		if u.env.owns(ctx, u.slot) == nil {
			return ctx.Err() == nil
		}
	}
}

// errNotOwner: the unit's producer was fenced and the group coordinator
// did not confirm that the member's generation is current.
var errNotOwner = errors.New("fenced by the slot's new owner")

// retry calls fn with backoff until it succeeds, ctx ends or fn's error is
// final; it returns fn's last error (or ctx's).
func (u *unit) retry(ctx context.Context, what string, fn func() error, final func(error) bool) error {
	var delay time.Duration
	for {
		err := fn()
		if err == nil || (final != nil && final(err)) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		u.env.health(u.slot, fmt.Errorf("%s: %w", what, err))
		delay = backoff(delay)
		if !u.sleep(ctx, delay) {
			return ctx.Err()
		}
	}
}

// producerIDKept is keptInitErr of the unit's producer (nil without one):
// restarting failed partitions on a producer whose id failed to load for
// good would fail them again at once, forever.
func (u *unit) producerIDKept(ctx context.Context) error {
	if u.prod == nil {
		return nil
	}
	return keptInitErr(ctx, u.prod, u.env.cfg.AdminTimeout)
}

// session runs the unit once (see run). It returns nil when ctx ends.
func (u *unit) session(ctx, hard context.Context) error {
	if err := u.open(); err != nil {
		return err // options were validated by New: not expected
	}
	defer func() {
		u.closeCons()
		u.closeProd()
	}()
	// A dead target can hold a blocking call forever (kgo never fails a
	// batch it already sent, whatever the context): a stop abandons the
	// session's clients when hard ends, or shutdownTimeout after a
	// graceful stop began, which unblocks every call on them.
	sessionDone := make(chan struct{})
	defer close(sessionDone)
	go func() {
		select {
		case <-sessionDone:
			return
		case <-hard.Done():
		case <-ctx.Done():
			select {
			case <-sessionDone:
				return
			case <-hard.Done():
			case <-time.After(shutdownTimeout + 5*time.Second):
				u.log.Warn("unit did not stop in time: closing its clients")
			}
		}
		u.closeProd()
	}()
	e := u.env
	if e.cfg.ExactlyOnce {
		// InitProducerId on the slot's transactional id: the coordinator
		// fences the previous owner's producer and ends its open
		// transaction, before the resume points are read.
		// A non-retriable InitProducerId answer (UNKNOWN_SERVER_ERROR,
		// CLUSTER_AUTHORIZATION_FAILED, ...) is kept by kgo: every later
		// ProducerID call on this producer returns it without a request,
		// so retrying in place waited forever after the target recovered.
		// The session ends instead; the next one opens a new producer.
		err := u.retry(ctx, "fencing the previous producer of "+e.txnID(u.slot), func() error {
			_, _, err := u.prod.ProducerID(ctx)
			return initAdvice(err, u.prod, e.dst.Alias)
		}, func(err error) bool { return isFenced(err) || initErrKept(err) })
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return u.fenced(ctx, err)
		}
	}
	// Resume points, retried with backoff while the target is unreachable.
	if err := u.retry(ctx, "loading resume points from "+e.resumeTopic+" on "+e.dst.Alias, func() error { return u.loadResume(ctx) }, nil); err != nil {
		return nil // ctx ended
	}
	e.health(u.slot, nil)
	u.drainIdle() // the last session's events first: they concern its partitions
	u.endSession = nil
	u.life.apply(event{kind: evSession, a: time.Now().UnixNano()}, nil)
	for topic := range u.forget {
		u.life.forget(topic)
	}
	u.forget = nil
	for k := range u.forgetParts {
		u.life.forgetPartition(k)
	}
	u.forgetParts = nil
	empty := map[tp]*feed{}
	u.feeds.Store(&empty)
	u.log.Debug("unit started", "resume_points", len(u.resume), "exactly_once", e.cfg.ExactlyOnce)

	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	pollErr := make(chan error, 1)
	u.pollLoops.Add(1)
	go func() {
		defer u.pollLoops.Add(-1)
		pollErr <- u.pollLoop(pollCtx, hard)
	}()

	flushT := time.NewTicker(e.cfg.OffsetFlushInterval)
	defer flushT.Stop()
	// The status parts that age (a fetch error shown for 30 s, an open
	// transaction) are published again every second.
	ageT := time.NewTicker(time.Second)
	defer ageT.Stop()
	// The session's first resume points are stored within a second, not a
	// whole interval after start: a process that crashes again soon after
	// taking slots over (a crash loop) would otherwise replay more at each
	// restart (found by the fault soak).
	firstFlush := time.After(min(firstFlushAfter, e.cfg.OffsetFlushInterval))
	early := true              // the regular interval has not come yet
	var retry <-chan time.Time // partitions whose remote partition the producer does not know yet
	pending := true            // the offer may hold partitions not started yet
	firstOffer := true         // the session's status is published once its first offer was applied
	var failed error
	pollDone := false
	var partRetry <-chan time.Time // the next restart of failed partitions is due
	var armed time.Time            // the retryAt partRetry fires at
	u.retryAt = time.Time{}
loop:
	for {
		if pending {
			pending = false
			if !u.applyOffer(ctx) {
				retry = time.After(500 * time.Millisecond)
			}
			if firstOffer {
				// The status published lists the last session's
				// partitions until this one publishes its own: a
				// partition not offered any more (its source topic
				// deleted) must leave it even when nothing starts. Not
				// before the offer's partitions started (dirty at
				// evSession): the first drain of applyOffer published
				// the session's empty lifecycle, and for at least
				// publishEvery the unit listed none of its partitions
				// (TestSessionRestartKeepsOtherTopicsInStatus).
				firstOffer = false
				u.dirty = true
				u.publishSoon()
			}
		}
		if u.endSession != nil {
			// Nothing past the last stored resume points is trusted: the
			// next session replays from there (at least once). The poll
			// loop ends first, the producer closed under it: it uses the
			// unit's clients, which the next session replaces, and what it
			// posts last (an aborted transaction's end) concerns this
			// session's partitions, not the next one's (a helper reading
			// the code, stop 40).
			e.metrics.flowErr(e.labels, "produce")
			stopPoll()
			u.closeProd()
			u.awaitPoll(ctx, pollErr)
			return fmt.Errorf("produce to %s failed: %w", e.dst.Alias, u.endSession)
		}
		if u.rebuild {
			break loop // graceful: the next session opens a producer with the new limits
		}
		if u.life.added {
			// A partition given to the session after its early stores
			// stopped (a new topic, a restart, a re-created topic) has its
			// first resume point stored within a second too, not a whole
			// interval later (TestFirstResumePointOfAPartitionAddedLate).
			u.life.added = false
			if early && firstFlush == nil && !e.cfg.ExactlyOnce {
				firstFlush = time.After(firstFlushAfter)
			}
		}
		if !u.retryAt.Equal(armed) {
			armed, partRetry = u.retryAt, nil
			if !armed.IsZero() {
				partRetry = time.After(time.Until(armed))
			}
		}
		select {
		case <-u.box.wake:
			u.drain(ctx)
		case <-partRetry:
			armed, partRetry = time.Time{}, nil
			u.retryAt = time.Time{}
			if err := u.producerIDKept(ctx); err != nil {
				// Restarting the failed partitions on this producer
				// would fail them again at once, forever: a new session
				// opens a new producer, and restarts them.
				e.metrics.flowErr(e.labels, "produce")
				stopPoll()
				u.closeProd()
				u.awaitPoll(ctx, pollErr)
				return fmt.Errorf("the producer to %s cannot produce (its producer id failed to load): %w", e.dst.Alias, err)
			}
			u.life.redecide = true
			u.drain(ctx)
		case <-u.pubTimer:
			u.pubTimer = nil
			u.publish()
		case <-ageT.C:
			if u.life.aging(time.Now()) {
				u.publish()
			}
		case <-ctx.Done():
			break loop
		case failed = <-pollErr:
			if failed != nil && ctx.Err() == nil {
				// An exactly-once transaction failed: the session ends.
				return u.fenced(ctx, failed)
			}
			// The unit is stopping and the poll loop already returned
			// (this goroutine was busy when ctx ended): stop as below,
			// which stores the final resume points.
			pollDone = true
			break loop
		case <-u.offerCh:
			pending = true
		case <-retry:
			pending = true
		case <-flushT.C:
			u.flush(ctx)
			firstFlush, early = nil, false // the regular interval has come: no more early flushes
		case <-firstFlush:
			firstFlush = nil
			u.flush(ctx)
			if !e.cfg.ExactlyOnce && u.life.unflushed() {
				// (Exactly once, each transaction stores its resume
				// points: nothing marks a partition flushed, and the
				// early stores would repeat to the regular interval.)
				// A partition acknowledged nothing in time for the first
				// store (a loaded machine, a slow target): look again a
				// second later, until each has stored one or the regular
				// interval comes (TestFirstResumePointsStoredWithinASecond
				// failed under load with a 10 minute interval).
				firstFlush = time.After(firstFlushAfter)
			}
		}
	}
	stopPoll()
	// The poll loop may be blocked in Produce on a full buffer (records go
	// with context.Background: a cancelable context costs kgo per record):
	// closing the producer unblocks it on abort or after shutdownTimeout.
	// Meanwhile its events are applied (an exactly-once poll loop commits
	// its open transaction, which asks this goroutine for the resume
	// points).
	if !pollDone {
		timeout := time.After(shutdownTimeout)
	wait:
		for {
			select {
			case failed = <-pollErr:
				break wait
			case <-u.box.wake:
				u.drain(ctx)
			case <-hard.Done():
				u.closeProd()
				failed = <-pollErr
				break wait
			case <-timeout:
				u.log.Warn("poll loop did not stop in time: closing the target producer")
				u.closeProd()
				failed = <-pollErr
				break wait
			}
		}
	}
	if hard.Err() == nil && failed == nil {
		u.shutdown(hard)
	}
	u.drain(ctx)
	u.publish()
	if u.rebuild && ctx.Err() == nil {
		u.rebuild = false
		return errRebuild
	}
	return nil
}

// awaitPoll waits for the session's poll loop, stopped, to return,
// applying what it posts meanwhile (an exactly-once loop asks this
// goroutine for the resume points of the transaction it ends).
func (u *unit) awaitPoll(ctx context.Context, pollErr <-chan error) {
	for {
		select {
		case <-pollErr:
			return
		case <-u.box.wake:
			u.drain(ctx)
		}
	}
}

// shutdown flushes in-flight records and stores the final resume points and
// offset syncs, bounded by shutdownTimeout.
func (u *unit) shutdown(hard context.Context) {
	ctx, cancel := context.WithTimeout(hard, shutdownTimeout)
	defer cancel()
	if !u.env.cfg.ExactlyOnce { // exactly once, the poll loop committed the last transaction
		if err := u.prod.Flush(ctx); err != nil {
			u.log.Warn("flush on stop", "err", err)
		}
		u.flush(ctx)
	} else {
		u.drain(ctx)
		u.sendSyncs(false)
	}
	if u.env.syncFlush != nil {
		u.env.syncFlush(ctx)
	}
}

// consumed returns the partitions the unit's consumer was last given (the
// poll loop's feeds), for kclient.CloseConsumer.
func (u *unit) consumed() map[string][]int32 {
	out := map[string][]int32{}
	for k := range *u.feeds.Load() {
		out[k.topic] = append(out[k.topic], k.partition)
	}
	return out
}
