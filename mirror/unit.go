package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/kclient"
)

// unitEnv is what a unit receives from its flow at construction: settings
// that never change while the flow runs, and the narrow callbacks through
// which a unit reports. A unit holds no pointer to its flow.
type unitEnv struct {
	cfg         FlowConfig // with defaults
	name        string     // the flow's name, "source->target"
	src, dst    ClusterConfig
	log         *slog.Logger
	metrics     *metrics
	labels      flowLabels
	tasks       int32  // N, the flow's number of slots
	resumeTopic string // mm2-offsets.<source>.internal on the target
	resumeParts int32  // its partition count
	// clientOpts builds the options of a client of cluster c (client id,
	// logger, the cluster's options, the role's, then extra).
	clientOpts func(c ClusterConfig, role []kgo.Opt, extra ...kgo.Opt) []kgo.Opt
	// sync produces one offset sync (nil when offset syncs are off);
	// syncFlush waits for the offset syncs produced so far.
	sync      func(topic string, partition int32, up, down int64)
	run       func(topic string, partition int32, r checkpoint.OffsetRun)
	syncFlush func(ctx context.Context)
	// gap records a gap in the flow's status; health records the outcome
	// of the unit's last resume-point load or commit (nil: healthy).
	gap    func(*GapError)
	health func(slot int32, err error)
	// txnID is the transactional id of a slot's producer (exactly once);
	// owns checks with the group coordinator that this member's generation
	// is current, i.e. that it still owns its slots (nil error).
	txnID func(slot int32) string
	owns  func(ctx context.Context, slot int32) error
	// prov checks and stamps the provenance header of every record (nil:
	// off); skipped counts the records it did not replicate.
	prov    *provenance
	skipped func(n int)
	// partRetryFirst is the first automatic restart delay of a failed
	// partition (0: partRetryFirst, 5 s).
	partRetryFirst time.Duration
}

// offered is a source partition discovery found ready to replicate: its
// remote topic exists with this partition.
type offered struct {
	remote   string
	id       kadm.TopicID // the source topic's ID when discovered
	remoteID kadm.TopicID // the remote topic's ID on the target when discovered (zero: unknown)
}

// unit is one unit of work: the replication of the source partitions that
// map to one slot of a flow, fetch → produce → acks → resume points →
// offset syncs, with its own consumer and producer. The flow's member
// creates it when the group assigns the slot and stops it as a whole when
// the slot is revoked (graceful: in-flight records acknowledged, resume
// points and final offset syncs stored) or lost (at once).
//
// Goroutines, both ended before run returns: the control goroutine (run:
// partitions offered by discovery, the flush timer, due offset syncs) and
// the poll loop (the only reader of the consumer; it owns partState.next).
type unit struct {
	slot int32
	env  *unitEnv
	log  *slog.Logger

	offerMu sync.Mutex
	offer   map[tp]offered // latest ready partitions of this slot, from discovery
	offerCh chan struct{}

	// Created by each session (open) and closed before it ends, once each:
	// kgo's Close must not run twice at once (closeCons, closeProd).
	cons, prod           *kgo.Client
	closeCons, closeProd func()
	codec                *followCodec  // the producer's compressor: the source data's codec
	sh                   *shallowInbox // with shallow copy: partitions for shallowLoop (nil: kgo's consumer)

	parts     atomic.Pointer[map[tp]*partState] // copy on write by the control goroutine
	resume    map[tp]int64                      // control goroutine: resume points loaded at start
	resumeIDs map[tp]kadm.TopicID               // control goroutine: the remote topic IDs they record
	topicIDs  map[string]kadm.TopicID           // control goroutine: source topic IDs of its partitions
	carry     map[tp]*partState                 // control goroutine: partitions of earlier sessions
	remoteIDs map[string]kadm.TopicID           // control goroutine: remote topic IDs on the target, by source topic

	// retryKick wakes the control goroutine to restart failed partitions
	// (a partition failed, or Mirror.RestartFailed asked).
	retryKick chan struct{}

	lastLSOCheck time.Time // control goroutine

	// Exactly once, owned by the poll loop: the open transaction.
	inTxn       bool
	txnStart    time.Time
	txnRecords  int
	lastPromote time.Time

	wake chan struct{} // an offset sync is due
	// sessRestart receives a transient produce failure of the current
	// session's partitions (each session has its own, so that a late
	// failure of an earlier session cannot end a new one). Written by the
	// control goroutine at a session's start, captured by newPartState.
	sessRestart chan error

	cancel context.CancelFunc // graceful stop
	abort  context.CancelFunc // stop without flushing
	done   chan struct{}
}

func newUnit(slot int32, env *unitEnv) *unit {
	u := &unit{slot: slot, env: env, log: env.log.With("unit", slot), offerCh: make(chan struct{}, 1),
		wake: make(chan struct{}, 1), done: make(chan struct{}), topicIDs: map[string]kadm.TopicID{}, codec: &followCodec{},
		remoteIDs: map[string]kadm.TopicID{}, retryKick: make(chan struct{}, 1)}
	empty := map[tp]*partState{}
	u.parts.Store(&empty)
	return u
}

// start runs the unit in its own goroutine; hard is canceled to abandon
// in-flight work without flushing.
func (u *unit) start(hard context.Context) {
	hardCtx, abort := context.WithCancel(hard)
	ctx, cancel := context.WithCancel(hardCtx)
	u.cancel, u.abort = cancel, abort
	go u.run(ctx, hardCtx)
}

// stop stops the unit and waits for it: gracefully (in-flight records
// acknowledged, resume points and final offset syncs stored, bounded by
// shutdownTimeout) or, with graceful false, at once.
func (u *unit) stop(graceful bool) {
	if !graceful {
		u.abort()
	}
	u.cancel()
	<-u.done
}

// setOffer hands the unit the ready partitions of its slot (all of them,
// not a difference); the control goroutine starts the new ones.
func (u *unit) setOffer(o map[tp]offered) {
	u.offerMu.Lock()
	u.offer = o
	u.offerMu.Unlock()
	select {
	case u.offerCh <- struct{}{}:
	default:
	}
}

func (u *unit) wakeSyncer() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// budget divides a flow-wide byte budget between its N units, with a floor.
func budget[T int | int32](total T, n int32, floor T) T {
	return max(total/T(n), floor)
}

func (u *unit) open() error {
	e := u.env
	iso := kgo.ReadCommitted()
	if e.cfg.Isolation == ReadUncommitted {
		iso = kgo.ReadUncommitted()
	}
	var err error
	if u.cons, err = kclient.New(e.clientOpts(e.src, e.src.Consumer,
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxBytes(budget(e.cfg.FetchMaxBytes, e.tasks, max(1<<20, e.cfg.FetchMaxPartitionBytes))),
		kgo.FetchMaxPartitionBytes(e.cfg.FetchMaxPartitionBytes),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords(), // transaction markers move the position (lag reaches 0)
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}),
	)...); err != nil {
		return fmt.Errorf("source %s consumer: %w", e.src.Alias, err)
	}
	popts := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedBytes(budget(e.cfg.MaxBufferedBytes, e.tasks, 1<<20)),
		kgo.MaxBufferedRecords(1 << 20),
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
	popts = append([]kgo.Opt{kgo.WithCompressor(u.codec), kgo.ProducerBatchCompression(sentinelCodec)},
		e.clientOpts(e.dst, role, popts...)...)
	// kgo measures a record's delivery timeout (delivery.timeout.ms) from
	// the record's timestamp, which replication keeps: every record older
	// than the timeout would fail at once, and a backlog could never be
	// copied. The replication producer retries until the target takes the
	// record (or a retry limit fails it, which restarts the session).
	popts = append(popts, kgo.RecordDeliveryTimeout(0))
	if u.prod, err = kclient.New(popts...); err != nil {
		u.cons.Close()
		return fmt.Errorf("target %s producer: %w", e.dst.Alias, err)
	}
	u.closeCons, u.closeProd = sync.OnceFunc(u.cons.Close), sync.OnceFunc(u.prod.Close)
	if e.cfg.ExactlyOnce && e.cfg.TransactionBoundary == TransactionBoundaryInterval {
		if tt, _ := u.prod.OptValue(kgo.TransactionTimeout).(time.Duration); tt <= e.cfg.TransactionInterval {
			u.log.Warn("transaction.timeout.ms is not longer than transaction.boundary.interval.ms: the coordinator aborts transactions before they commit",
				"transaction_timeout", tt, "interval", e.cfg.TransactionInterval)
		}
	}
	kclient.Locked(func() { u.codec.configured(u.prod.OptValue(kgo.ProducerBatchCompression)) })
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

// transactionTimeout is the transaction timeout an exactly-once unit asks
// the coordinator for unless the target's producer options set one: the
// Java producer's default (60 s, what MM2 runs with), and with
// transaction.boundary=interval long enough for a transaction open for the
// whole interval to commit (the interval plus admin.timeout.ms).
func transactionTimeout(c *FlowConfig) time.Duration {
	d := 60 * time.Second
	if c.TransactionBoundary == TransactionBoundaryInterval {
		d = max(d, c.TransactionInterval+c.AdminTimeout)
	}
	return d
}

// run is the unit's control goroutine. It runs sessions until the unit is
// stopped: a session opens the clients, (exactly once) fences the slot's
// previous producer, loads the resume points and replicates; an aborted
// transaction ends the session and the next one resumes from the last
// committed resume points.
func (u *unit) run(ctx, hard context.Context) {
	defer close(u.done)
	var delay time.Duration
	for ctx.Err() == nil {
		err := u.session(ctx, hard)
		if err == nil || ctx.Err() != nil {
			return
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
		u.log.Warn("unit restarts from its last committed resume points", "err", err)
		delay = backoff(delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
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
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
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
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// isFenced reports errors by which the transaction coordinator says another
// producer with the unit's transactional id took over.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
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
		err := u.retry(ctx, "fencing the previous producer of "+e.txnID(u.slot), func() error {
			_, _, err := u.prod.ProducerID(ctx)
			return err
		}, isFenced)
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
	u.sessRestart = make(chan error, 1)
	u.resetParts()
	u.log.Debug("unit started", "resume_points", len(u.resume), "exactly_once", e.cfg.ExactlyOnce)

	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	pollErr := make(chan error, 1)
	go func() { pollErr <- u.pollLoop(pollCtx, hard) }()

	flushT := time.NewTicker(e.cfg.OffsetFlushInterval)
	defer flushT.Stop()
	// The session's first resume points are stored within a second, not a
	// whole interval after start: a process that crashes again soon after
	// taking slots over (a crash loop) would otherwise replay more at each
	// restart (found by the fault soak).
	firstFlush := time.After(min(firstFlushAfter, e.cfg.OffsetFlushInterval))
	var retry <-chan time.Time // partitions whose remote partition the producer does not know yet
	pending := true            // the offer may hold partitions not started yet
	var failed error
	pollDone := false
	var partRetry <-chan time.Time // the next restart of failed partitions is due
loop:
	for {
		if pending {
			pending = false
			if !u.applyOffer(ctx) {
				retry = time.After(500 * time.Millisecond)
			}
			partRetry = u.restartDue(ctx)
		}
		select {
		case <-u.retryKick:
			partRetry = u.restartDue(ctx)
		case <-partRetry:
			partRetry = u.restartDue(ctx)
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
		case <-u.wake:
			u.sendSyncs(false)
		case err := <-u.sessRestart:
			// Nothing past the last stored resume points is trusted: the
			// next session replays from there (at least once).
			e.metrics.flowErr(e.labels, "produce")
			return fmt.Errorf("produce to %s failed: %w", e.dst.Alias, err)
		case <-flushT.C:
			u.flush(ctx)
		case <-firstFlush:
			firstFlush = nil
			u.flush(ctx)
		}
	}
	stopPoll()
	// The poll loop may be blocked in Produce on a full buffer (records go
	// with context.Background: a cancelable context costs kgo per record):
	// closing the producer unblocks it on abort or after shutdownTimeout.
	if !pollDone {
		select {
		case failed = <-pollErr:
		case <-hard.Done():
			u.closeProd()
			failed = <-pollErr
		case <-time.After(shutdownTimeout):
			u.log.Warn("poll loop did not stop in time: closing the target producer")
			u.closeProd()
			failed = <-pollErr
		}
	}
	if hard.Err() == nil && failed == nil {
		u.shutdown(hard)
	}
	return nil
}

// fenced turns a fencing error into errNotOwner when the member's group
// generation is no longer current (this member is a zombie: another member
// owns the slot and fenced it); any other error is returned as is and the
// unit restarts (re-fencing, which is safe while the member owns the slot).
func (u *unit) fenced(ctx context.Context, err error) error {
	if err == nil || !isFenced(err) || u.env.owns == nil {
		return err
	}
	if oerr := u.env.owns(ctx, u.slot); oerr != nil {
		return fmt.Errorf("%w: %v (group: %v)", errNotOwner, err, oerr)
	}
	return err
}

// resetParts starts a session with no partitions; what a previous session
// replicated (counters) and partitions stopped by a non-retriable error
// carry over.
func (u *unit) resetParts() {
	old := *u.parts.Load()
	if len(old) > 0 {
		if u.carry == nil {
			u.carry = map[tp]*partState{}
		}
		for k, p := range old {
			u.carry[k] = p
		}
	}
	empty := map[tp]*partState{}
	u.parts.Store(&empty)
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
		u.sendSyncs(false)
	}
	if u.env.syncFlush != nil {
		u.env.syncFlush(ctx)
	}
}

// loadResume reads the resume points of this slot's partitions from the
// resume-point topic (read_committed, so that an aborted exactly-once
// write is never taken as progress).
func (u *unit) loadResume(ctx context.Context) error {
	e := u.env
	all, ids, err := readResumePoints(ctx, e.clientOpts(e.dst, e.dst.Consumer), e.resumeTopic, e.cfg.Source, u.log)
	if err != nil {
		return err
	}
	u.resume, u.resumeIDs = map[tp]int64{}, map[tp]kadm.TopicID{}
	for k, off := range all {
		if slotOf(k.topic, k.partition, e.tasks) == u.slot {
			u.resume[k] = off
			if id, ok := ids[k]; ok {
				u.resumeIDs[k] = id
			}
		}
	}
	return nil
}

func (u *unit) resumePoint(k tp) int64 {
	if off, ok := u.resume[k]; ok {
		return off
	}
	return -1
}

// applyOffer starts the offered partitions the unit does not replicate yet
// and restarts those of re-created topics. It returns false when some
// offered partition could not start yet (the producer does not know its
// remote partition): the caller retries soon.
func (u *unit) applyOffer(ctx context.Context) bool {
	u.offerMu.Lock()
	offer := u.offer
	u.offerMu.Unlock()
	parts := *u.parts.Load()
	recreated := map[string]kadm.TopicID{}
	for k, o := range offer {
		old, seen := u.topicIDs[k.topic]
		switch {
		case o.id == (kadm.TopicID{}):
		case !seen:
			u.topicIDs[k.topic] = o.id
		case old != o.id:
			recreated[k.topic] = o.id
		}
	}
	for topic, id := range recreated {
		u.recreated(topic, u.topicIDs[topic], id, parts)
		u.topicIDs[topic] = id
	}
	refill := map[string]kadm.TopicID{}
	remotes := map[string]string{} // source topic -> remote topic
	for k, o := range offer {
		old := u.remoteIDs[k.topic]
		switch {
		case o.remoteID == (kadm.TopicID{}):
		case old == (kadm.TopicID{}):
			u.remoteIDs[k.topic] = o.remoteID
		case old != o.remoteID:
			refill[k.topic] = o.remoteID
			remotes[k.topic] = o.remote
		}
	}
	if len(refill) > 0 {
		u.confirmRefills(ctx, refill, remotes)
	}
	for topic, id := range refill {
		u.refillTopic(topic, u.remoteIDs[topic], id, parts)
		u.remoteIDs[topic] = id
	}
	var add []*partState
	for k, o := range offer {
		if _, ok := parts[k]; !ok {
			from := u.resumePoint(k)
			_, fill := refill[k.topic]
			if rid, ok := u.resumeIDs[k]; ok && from >= 0 && !fill && o.remoteID != (kadm.TopicID{}) && rid != o.remoteID {
				// The resume point was stored for another remote topic:
				// it was deleted and re-created on the target while no
				// unit replicated this partition (kmirror down, or the
				// slot between owners). The new one lacks every record
				// up to the resume point.
				u.log.Warn("the remote topic was re-created on the target since the resume point was stored: refilling the partition from the source's log start",
					"topic", k.topic, "partition", k.partition, "remote_topic", o.remote, "resume_point", from,
					"remote_topic_id", o.remoteID, "was", rid)
				fill = true
			}
			if fill {
				from = -1 // the remote topic is a new, empty one: refill it
			}
			p := newPartState(u, k.topic, o.remote, k.partition, from, o.id)
			p.remoteID = o.remoteID
			if fill {
				p.fromStart = true
			}
			if old := u.carry[k]; old != nil {
				old.mu.Lock()
				p.records, p.bytes = old.records, old.bytes
				// A failed partition stays failed across sessions, with its
				// restart schedule (restartDue restarts it).
				p.err, p.failedAt, p.autoRetry, p.nextRetry = old.err, old.failedAt, old.autoRetry, old.nextRetry
				p.retries, p.retryDelay, p.restartAsked, p.refill = old.retries, old.retryDelay, old.restartAsked, old.refill
				p.hold = p.err != nil || p.refill
				old.mu.Unlock()
			}
			add = append(add, p)
		}
	}
	slices.SortFunc(add, func(a, b *partState) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.partition - b.partition)
	})
	ready := u.waitProducerMetadata(ctx, add, parts)
	u.addPartitions(ready)
	return len(ready) == len(add)
}

// waitProducerMetadata waits (up to 5 s) until the producer's metadata
// knows the new partitions of remote topics it already writes to: kgo fails
// a record for a partition its cached metadata lacks instead of waiting,
// which a partition increase would otherwise hit. Partitions still unknown
// are left for a retry.
func (u *unit) waitProducerMetadata(ctx context.Context, add []*partState, parts map[tp]*partState) []*partState {
	known := map[string]bool{}
	for _, p := range parts {
		known[p.remote] = true
	}
	deadline := time.Now().Add(min(u.env.cfg.AdminTimeout, 5*time.Second))
	ready := add[:0]
	for _, p := range add {
		for known[p.remote] {
			if leader, _, _ := u.prod.PartitionLeader(p.remote, p.partition); leader >= 0 {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return ready
			}
			u.prod.ForceMetadataRefresh()
			select {
			case <-ctx.Done():
				return ready
			case <-time.After(100 * time.Millisecond):
			}
		}
		ready = append(ready, p)
	}
	return ready
}

// addPartitions registers new partition states and starts consuming them.
func (u *unit) addPartitions(ps []*partState) {
	if len(ps) == 0 {
		return
	}
	old := *u.parts.Load()
	m := make(map[tp]*partState, len(old)+len(ps))
	for k, v := range old {
		m[k] = v
	}
	add := map[string]map[int32]kgo.Offset{}
	for _, p := range ps {
		p.pm = u.env.metrics.forPartition(u.env.labels, p.remote, p.partition)
		m[tp{p.topic, p.partition}] = p
		if add[p.topic] == nil {
			add[p.topic] = map[int32]kgo.Offset{}
		}
		switch {
		case p.err != nil || p.hold:
			// Stopped by a non-retriable error in an earlier session of
			// this unit: it stays stopped at its resume point until
			// restartDue restarts it.
			delete(add[p.topic], p.partition)
		case p.fromStart:
			add[p.topic][p.partition] = kgo.NewOffset().AtStart()
		case p.committed >= 0:
			add[p.topic][p.partition] = kgo.NewOffset().At(p.committed + 1)
		case u.env.cfg.StartOffset == StartLatest:
			add[p.topic][p.partition] = kgo.NewOffset().AtEnd()
		default:
			add[p.topic][p.partition] = kgo.NewOffset().AtStart()
		}
	}
	u.parts.Store(&m)
	u.consume(add)
	u.log.Debug("partitions started", "count", len(ps))
}

// recreated handles a source topic deleted and re-created under the same
// name (new topic ID): the records of the old topic not yet replicated are
// lost, which is reported as a gap per partition; replication restarts at
// the new topic's log start.
func (u *unit) recreated(topic string, old, id kadm.TopicID, parts map[tp]*partState) {
	var reset []*partState
	for k, p := range parts {
		if k.topic != topic {
			continue
		}
		p.mu.Lock()
		hw, acked := p.hw, p.acked
		p.newID = id
		p.mu.Unlock()
		gap := &GapError{Flow: u.env.name, Topic: topic, Partition: k.partition, From: acked + 1, To: max(hw, acked+1),
			Reason: fmt.Sprintf("the source topic was deleted and re-created (topic ID %s, was %s); replication restarts at the new topic's log start", id, old)}
		if u.reportGap(p, gap) {
			reset = append(reset, p)
		}
	}
	u.restartTopic(topic, reset)
}

// confirmRefills keeps in refill only the remote topics whose ID on the
// target is, asked now, the one discovery offered: an offer listed before
// a re-creation that restartDue already handled carries the old ID, and
// must not refill the topic a second time. A topic that cannot be asked
// about waits for the next offer. Control goroutine only.
func (u *unit) confirmRefills(ctx context.Context, refill map[string]kadm.TopicID, remotes map[string]string) {
	names := make([]string, 0, len(remotes))
	for _, r := range remotes {
		names = append(names, r)
	}
	ctx, cancel := context.WithTimeout(ctx, min(u.env.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	listed, err := kadm.NewClient(u.prod).ListTopics(ctx, names...)
	for topic, id := range refill {
		td, ok := listed[remotes[topic]]
		if err != nil || !ok || td.Err != nil || td.ID != id {
			delete(refill, topic)
		}
	}
}

// refillTopic handles a remote topic deleted on the target and re-created
// (by discovery, with a new topic ID) while the flow runs (KAFKA-10332):
// the target lost what it held, so every partition of source topic topic
// is replicated again from the source's log start, like a re-created
// source topic, with a fresh resume point and offset-sync writer (no sync
// names the old remote topic's offsets). MM2 leaves such a partition
// broken; refilling is the only way the target holds the data again, and
// it adds no duplicates: the new remote topic is empty. restartDue does the
// refill once each partition's in-flight records came back.
func (u *unit) refillTopic(topic string, old, id kadm.TopicID, parts map[tp]*partState) {
	var pause []int32
	for k, p := range parts {
		if k.topic != topic {
			continue
		}
		p.mu.Lock()
		p.refill, p.restartAsked, p.hold = true, true, true
		p.mu.Unlock()
		pause = append(pause, k.partition)
	}
	u.log.Warn("the remote topic was deleted and re-created on the target: refilling it from the source's log start",
		"topic", topic, "remote_topic_id", id, "was", old, "partitions", len(pause))
	if len(pause) > 0 {
		u.cons.PauseFetchPartitions(map[string][]int32{topic: pause})
	}
}

// requestRestart asks for the restart of the unit's FAILED partitions of
// topic ("" every topic) and partition (-1 every partition) and returns
// how many it asked for; the control goroutine restarts them (restartDue)
// once their in-flight records came back.
func (u *unit) requestRestart(topic string, partition int32) int {
	n := 0
	for k, p := range *u.parts.Load() {
		if (topic != "" && k.topic != topic) || (partition >= 0 && k.partition != partition) {
			continue
		}
		p.mu.Lock()
		if p.err != nil {
			p.restartAsked = true
			n++
		}
		p.mu.Unlock()
	}
	if n > 0 {
		u.kickRetry()
	}
	return n
}

// restartTopic restarts consumption of a re-created topic's partitions at
// the new topic's log start. kgo keeps the old topic ID (and fails fetches
// with UNKNOWN_TOPIC_ID) until the topic is purged from the consumer, so the
// whole topic is purged and its partitions are added back.
func (u *unit) restartTopic(topic string, ps []*partState) {
	if len(ps) == 0 {
		return
	}
	u.purgeTopic(topic)
	add := map[int32]kgo.Offset{}
	for _, p := range *u.parts.Load() {
		if p.topic != topic {
			continue
		}
		p.restart.Store(true)
		p.mu.Lock()
		failed := p.err != nil
		committed := p.committed
		p.mu.Unlock()
		switch {
		case failed: // GapStop or a non-retriable error: stays stopped
		case slices.Contains(ps, p):
			add[p.partition] = kgo.NewOffset().AtStart()
		case committed >= 0:
			add[p.partition] = kgo.NewOffset().At(committed + 1)
		default:
			add[p.partition] = kgo.NewOffset().AtStart()
		}
	}
	u.consume(map[string]map[int32]kgo.Offset{topic: add})
}

// partitionFailed pauses a partition whose produce failed for good (p.err
// is set) and wakes the control goroutine, which restarts it when due.
// Called from the producer's promise goroutine (or the shallow loop).
func (u *unit) partitionFailed(p *partState, err error) {
	p.mu.Lock()
	next := p.nextRetry
	p.mu.Unlock()
	if next.IsZero() {
		u.log.Error("partition stopped: the record's own error; fix the cause, then restart it (Mirror.RestartFailed, or POST /connectors/<flow>/restart?onlyFailed=true)",
			"topic", p.topic, "partition", p.partition, "err", err)
	} else {
		u.log.Error("partition stopped; restarting it automatically", "topic", p.topic, "partition", p.partition, "err", err,
			"retry_in", time.Until(next).Round(time.Millisecond))
	}
	u.cons.PauseFetchPartitions(map[string][]int32{p.topic: {p.partition}})
	u.env.metrics.flowErr(u.env.labels, "partition_failed")
	u.kickRetry()
}

// kickRetry wakes the control goroutine to look for failed partitions to
// restart.
func (u *unit) kickRetry() {
	select {
	case u.retryKick <- struct{}{}:
	default:
	}
}

// drainPoll is how often restartDue looks again at a partition due for a
// restart whose records are still in flight.
const drainPoll = 50 * time.Millisecond

// restartDue restarts the unit's failed partitions that are due (their
// automatic retry time passed, or Mirror.RestartFailed asked) and whose
// in-flight records all came back (every promise returned), and partitions
// to refill. It returns a channel that fires when the next one is due (nil:
// none). Control goroutine only.
//
// Exactly once, a partition whose record failed in the open transaction
// waits until commitTxn has aborted it (txnFailed cleared): the
// transaction's other records of the partition are then not visible, and
// the restart resumes after the committed resume point.
func (u *unit) restartDue(ctx context.Context) <-chan time.Time {
	now := time.Now()
	wait := time.Duration(-1)
	soon := func(d time.Duration) {
		if wait < 0 || d < wait {
			wait = max(d, 0)
		}
	}
	var due []*partState
	check := map[string]string{} // source topic -> remote topic whose ID to check
	for _, p := range *u.parts.Load() {
		p.mu.Lock()
		switch {
		case p.err == nil && !p.refill:
		case !p.restartAsked && !(p.autoRetry && !now.Before(p.nextRetry)):
			if p.autoRetry {
				soon(p.nextRetry.Sub(now))
			}
		case p.head != len(p.queue) || (p.eos && p.txnFailed) || now.Sub(p.failedAt) < drainPoll:
			// In flight, or (exactly once) in the open transaction until
			// it aborts, or failed just now: partitionFailed pauses the
			// consumer after p.mu is released, which must not hit the
			// successor.
			p.hold = true // a refill of a running partition: no more records
			soon(drainPoll)
		default:
			p.hold = true
			due = append(due, p)
			if !p.refill && unknownTopic(p.err) {
				check[p.topic] = p.remote
			}
		}
		p.mu.Unlock()
	}
	if len(check) > 0 {
		due = u.checkRemoteIDs(ctx, check, due)
		for _, p := range *u.parts.Load() {
			p.mu.Lock()
			if p.autoRetry && p.err != nil && !p.restartAsked && !p.refill && now.Before(p.nextRetry) {
				soon(p.nextRetry.Sub(now))
			}
			if p.refill && p.err == nil {
				soon(0) // refills found by the check: restarted once drained
			}
			p.mu.Unlock()
		}
	}
	if len(due) > 0 {
		u.restartParts(due)
	}
	if wait < 0 {
		return nil
	}
	return time.After(wait)
}

// restartParts replaces each drained partition state of ps by a fresh one
// that resumes after the last acknowledged offset (exactly once: the last
// committed one), or at the source's log start for a refill, and points the
// consumer there (the failed partition was paused). Control goroutine only.
func (u *unit) restartParts(ps []*partState) {
	old := *u.parts.Load()
	m := make(map[tp]*partState, len(old))
	for k, v := range old {
		m[k] = v
	}
	remove := map[string][]int32{}
	add := map[string]map[int32]kgo.Offset{}
	purge := map[string]bool{}
	for _, o := range ps {
		o.mu.Lock()
		if o.refill || unknownTopic(o.err) {
			purge[o.remote] = true
		}
		o.mu.Unlock()
		n, at := u.successor(o)
		m[tp{o.topic, o.partition}] = n
		remove[o.topic] = append(remove[o.topic], o.partition)
		if add[o.topic] == nil {
			add[o.topic] = map[int32]kgo.Offset{}
		}
		add[o.topic][o.partition] = at
	}
	u.parts.Store(&m)
	for remote := range purge {
		// kgo's producer never adopts a re-created topic's new ID (it
		// fails it with UNKNOWN_TOPIC_ID) until the topic is purged from
		// it; it learns the new one at the next produce.
		u.prod.PurgeTopicsFromProducing(remote)
	}
	if u.sh == nil {
		// Drops what was fetched and not polled yet; the paused state is
		// per name and outlives the removal.
		u.cons.RemoveConsumePartitions(remove)
	}
	u.consume(add)
	u.cons.ResumeFetchPartitions(remove)
}

// checkRemoteIDs asks the target for the topic IDs of the remote topics
// of check (source topic -> remote topic), whose partitions failed on an
// unknown topic, partition or topic ID, and returns the partitions of due
// to restart now. A remote topic with a new ID was deleted and re-created:
// its partitions are refilled (refillTopic). A missing one (deleted, not
// re-created yet) keeps them failed until their next retry, with backoff.
// Control goroutine only.
func (u *unit) checkRemoteIDs(ctx context.Context, check map[string]string, due []*partState) []*partState {
	remotes := make([]string, 0, len(check))
	for _, r := range check {
		remotes = append(remotes, r)
	}
	ctx, cancel := context.WithTimeout(ctx, min(u.env.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	listed, err := kadm.NewClient(u.prod).ListTopics(ctx, remotes...)
	parts := *u.parts.Load()
	keep := due[:0]
	for _, p := range due {
		remote, checked := check[p.topic]
		if !checked {
			keep = append(keep, p)
			continue
		}
		td, ok := listed[remote]
		switch {
		case err != nil || !ok || td.Err != nil || td.ID == (kadm.TopicID{}):
			// Not there (yet): discovery re-creates it; try again later.
			p.mu.Lock()
			since := p.failedAt
			p.err, p.restartAsked = nil, false
			p.failLocked(&PartitionError{Flow: u.env.name, Topic: p.topic, Partition: p.partition,
				Err: fmt.Errorf("remote topic %s not found on %s (deleted? discovery re-creates it): %w", remote, u.env.dst.Alias, errors.Join(err, td.Err))}, true)
			p.failedAt = since
			p.retries++
			p.mu.Unlock()
		case u.remoteIDs[p.topic] != (kadm.TopicID{}) && td.ID != u.remoteIDs[p.topic]:
			u.refillTopic(p.topic, u.remoteIDs[p.topic], td.ID, parts)
			u.remoteIDs[p.topic] = td.ID
			keep = append(keep, p)
		default:
			keep = append(keep, p)
		}
	}
	return keep
}

// successor returns the fresh state that replaces the drained state o and
// the consumer offset it starts at.
func (u *unit) successor(o *partState) (*partState, kgo.Offset) {
	o.mu.Lock()
	defer o.mu.Unlock()
	from, committed := o.acked, o.committed
	if o.eos {
		from = o.committed
	}
	var gap *GapError
	accept := errors.As(o.err, &gap)
	if o.refill {
		from, committed = -1, -1
	}
	n := newPartState(u, o.topic, o.remote, o.partition, from, u.topicIDs[o.topic])
	n.committed = committed
	n.remoteID = o.remoteID
	if id := u.remoteIDs[o.topic]; id != (kadm.TopicID{}) {
		n.remoteID = id // a refill writes to the re-created topic
	}
	n.records, n.bytes, n.pm, n.hw = o.records, o.bytes, o.pm, o.hw
	n.retries, n.retryDelay = o.retries, o.retryDelay
	if !o.restartAsked {
		n.retries++ // an automatic restart
	} else {
		n.retries, n.retryDelay = 0, 0
	}
	if !o.refill {
		// The same target topic: the offset-sync writer goes on where it
		// was (the refill's target topic is a new one: a new writer).
		n.sw = o.sw
		o.sw = syncWriter{}
	}
	if o.restart.Load() {
		n.newID = o.newID
		n.restart.Store(true)
	}
	at := kgo.NewOffset().At(from + 1)
	switch {
	case from >= 0:
	case o.refill:
		at = kgo.NewOffset().AtStart()
	case u.env.cfg.StartOffset == StartLatest:
		at = kgo.NewOffset().AtEnd()
	default:
		at = kgo.NewOffset().AtStart()
	}
	if accept {
		n.next = -1 // the operator accepted the gap: resume at the log start
	}
	if o.restart.Load() {
		// The source topic was re-created while the partition was stopped
		// (restartTopic left it alone): its offsets name the old topic,
		// so the new one is replicated from its log start.
		at = kgo.NewOffset().AtStart()
	}
	cause := "restart requested"
	if !o.restartAsked {
		cause = "automatic retry"
	}
	if o.refill {
		u.log.Warn("partition refilled from the source's log start: the remote topic was deleted and re-created on the target",
			"topic", o.topic, "remote", o.remote, "partition", o.partition)
	} else {
		u.log.Warn("failed partition restarted", "topic", o.topic, "partition", o.partition, "cause", cause,
			"resume_after", from, "retries", n.retries, "err", o.err)
	}
	return n, at
}

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
	u.inTxn = false
	var buf []inflight
	var out []*kgo.Record
	for {
		// An interval-bounded transaction holding records commits when its
		// interval ends even if the source goes quiet: the poll waits no
		// longer than that (kgo returns no empty fetches).
		pollCtx, cancelPoll := ctx, context.CancelFunc(nil)
		if eos && u.inTxn && u.txnRecords > 0 && u.env.cfg.TransactionBoundary == TransactionBoundaryInterval {
			pollCtx, cancelPoll = context.WithDeadline(ctx, u.txnStart.Add(u.env.cfg.TransactionInterval))
		}
		fs := u.cons.PollRecords(pollCtx, 10000)
		if cancelPoll != nil {
			cancelPoll()
		}
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
		parts := *u.parts.Load()
		fs.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return // the loop's own context (stop, or a transaction's interval)
			}
			u.env.metrics.flowErr(u.env.labels, "fetch")
			p := parts[tp{topic, partition}]
			if p == nil {
				u.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
				return
			}
			// Shown as RETRYING in the partition status; logged at most
			// every 10 s per partition (kgo may return one per fetch).
			p.mu.Lock()
			p.fetchErr, p.fetchErrAt = err.Error(), time.Now()
			logIt := time.Since(p.fetchErrLogged) > 10*time.Second
			if logIt {
				p.fetchErrLogged = time.Now()
			}
			p.mu.Unlock()
			if logIt {
				u.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
			}
		})
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			p := parts[tp{fp.Topic, fp.Partition}]
			if p == nil || len(fp.Records) == 0 {
				return
			}
			if p.restart.Swap(false) {
				p.next = -1 // the topic was re-created: no gap check against the old offsets
				p.mu.Lock()
				// The new topic's first offset-run session starts after the
				// old topic's records not fed to the sync writer yet: in
				// flight, and (exactly once) acknowledged in the open
				// transaction.
				p.sw.reincarnate(p.newID, len(p.queue)-p.head+len(p.pending))
				p.mu.Unlock()
			}
			p.mu.Lock()
			failed := p.err != nil
			if fp.HighWatermark > p.hw {
				p.hw = fp.HighWatermark
			}
			p.fetchErr = ""
			p.mu.Unlock()
			if failed {
				return
			}
			// Queue the whole batch under one lock, then produce it.
			batch, recs := buf[:0], out[:0]
			skipped := 0
			var arena []kgo.RecordHeader // the batch's stamped headers: one allocation per batch
			if pv != nil {
				n := 0
				for _, r := range fp.Records {
					n += len(r.Headers) + 1
				}
				arena = make([]kgo.RecordHeader, 0, n)
			}
			for _, r := range fp.Records {
				if !u.checkGap(p, r, fp.LogStartOffset) {
					break
				}
				p.next = r.Offset + 1
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
					arena, r.Headers = pv.stampArena(arena, r.Headers, idx)
				}
				u.env.metrics.polled(p.pm, r)
				batch = append(batch, inflight{up: r.Offset, size: size})
				recs = append(recs, r)
			}
			if skipped > 0 {
				u.env.skipped(skipped)
			}
			if !p.pushIfLive(batch, p.next) {
				// Failed or restarted meanwhile: its successor fetches
				// these records again.
				return
			}
			buf, out = batch[:0], recs[:0]
			for _, r := range recs {
				// The fetched record is reused as the produced record.
				r.Topic = p.remote
				r.Attrs = kgo.RecordAttrs{}
				r.ProducerID, r.ProducerEpoch, r.LeaderEpoch, r.Offset = 0, 0, 0, 0
				r.Context = nil
				u.prod.Produce(context.Background(), r, p.ack)
			}
			u.txnRecords += len(batch)
		})
		u.codec.settle()
		if eos && u.txnDue() {
			if err := u.commitTxn(ctx); err != nil {
				return err
			}
		}
	}
}

// txnDue reports whether the open transaction must commit now.
func (u *unit) txnDue() bool {
	c := &u.env.cfg
	switch {
	case !u.inTxn || u.txnRecords == 0:
		return false
	case u.txnRecords >= c.TransactionMaxRecords:
		return true
	case c.TransactionBoundary == TransactionBoundaryPoll:
		return true
	}
	return time.Since(u.txnStart) >= c.TransactionInterval
}

// commitTxn commits the open transaction: the records produced in it, and
// the resume points of its partitions written in it. Only then are the
// offset syncs of its records fed to the sync writers (a sync never names a
// record a read_committed consumer cannot see). Any failure (a record
// rejected, the target stalled longer than admin.timeout.ms, a fencing)
// aborts the transaction and is returned: the session ends and the next one
// resumes from the last committed resume points.
func (u *unit) commitTxn(ctx context.Context) (err error) {
	e := u.env
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if aerr := u.prod.AbortBufferedRecords(actx); aerr == nil {
				_ = u.prod.EndTransaction(actx, kgo.TryAbort)
			}
			u.inTxn = false
			err = fmt.Errorf("transaction aborted: %w", err)
		}
	}()
	if err := u.prod.Flush(tctx); err != nil {
		return err
	}
	parts := *u.parts.Load()
	var recs []*kgo.Record
	type upd struct {
		p   *partState
		off int64
	}
	var ups []upd
	for _, p := range parts {
		p.mu.Lock()
		acked, committed, perr, fresh, terr := p.acked, p.committed, p.err, p.txnFailed, p.txnErr
		p.txnFailed, p.txnErr = false, nil
		p.mu.Unlock()
		if terr != nil {
			return terr // fenced, or the coordinator ended the transaction
		}
		p.mu.Lock()
		transient := p.transientErr
		p.mu.Unlock()
		if transient != nil {
			return transient // the target did not take a record in time
		}
		if perr != nil && fresh {
			// A record of this transaction was rejected: the whole
			// transaction aborts; the partition stays stopped.
			return perr
		}
		if perr != nil || acked == committed || acked < 0 {
			continue
		}
		key := connectoffsets.SourceKey(e.cfg.Source, p.topic, p.partition)
		recs = append(recs, &kgo.Record{Topic: e.resumeTopic, Key: key, Value: connectoffsets.SourceValue(acked),
			Partition: connectoffsets.Partition(key, e.resumeParts), Headers: remoteIDHeaders(p.remoteID)})
		ups = append(ups, upd{p, acked})
	}
	if len(recs) > 0 {
		if err := u.prod.ProduceSync(tctx, recs...).FirstErr(); err != nil {
			return err
		}
	}
	if err := u.prod.EndTransaction(tctx, kgo.TryCommit); err != nil {
		return err
	}
	u.inTxn = false
	promote := time.Since(u.lastPromote) >= e.cfg.OffsetFlushInterval
	if promote {
		u.lastPromote = time.Now()
	}
	for _, up := range ups {
		up.p.mu.Lock()
		up.p.committed = up.off
		up.p.commitPending(e.cfg.OffsetLagMax, !e.cfg.DisableOffsetSyncs)
		if promote {
			up.p.sw.promote(up.p.idleUp(), up.p.committed)
		}
		up.p.mu.Unlock()
	}
	if len(ups) > 0 {
		e.metrics.committed(e.labels, time.Since(start))
		u.wakeSyncer() // the control goroutine sends syncs: one sender keeps them in order
	}
	e.health(u.slot, nil)
	return nil
}

// checkGap compares a fetched record's offset with the next offset expected
// and reports records lost before replication. A hole above the log start
// is compaction, a transaction marker or an aborted record skipped by
// read_committed: not a gap. It returns false when the partition must stop
// (GapStop).
func (u *unit) checkGap(p *partState, r *kgo.Record, logStart int64) bool {
	return u.checkGapAt(p, r.Offset, logStart)
}

// checkGapAt is checkGap for the record (or batch) at source offset off.
func (u *unit) checkGapAt(p *partState, off int64, logStart int64) bool {
	if p.next < 0 || off == p.next {
		return true
	}
	var gap *GapError
	switch {
	case off < p.next:
		gap = &GapError{Flow: u.env.name, Topic: p.topic, Partition: p.partition, From: off, To: off,
			Reason: fmt.Sprintf("source offsets went back from %d to %d: the topic was re-created or its log truncated; replicating the new records", p.next, off)}
	case logStart > p.next:
		// Records [next, logStart) were deleted before they were
		// replicated.
		to := min(logStart, off)
		gap = &GapError{Flow: u.env.name, Topic: p.topic, Partition: p.partition, From: p.next, To: to,
			Reason: fmt.Sprintf("the source log starts at %d (retention or DeleteRecords removed records kmirror had not replicated)", logStart)}
	default:
		return true
	}
	return u.reportGap(p, gap)
}

// reportGap records a gap and, with GapStop, stops the partition; it
// returns false when the partition stops.
func (u *unit) reportGap(p *partState, gap *GapError) bool {
	gap.At = time.Now()
	u.env.gap(gap)
	u.env.metrics.gap(u.env.labels, p.topic, p.partition, gap.To-gap.From)
	u.log.Error("source gap", "topic", gap.Topic, "partition", gap.Partition, "from", gap.From, "to", gap.To, "lost", gap.To-gap.From, "reason", gap.Reason, "on_gap", u.env.cfg.OnGap)
	if u.env.cfg.OnGap == GapStop && gap.To > gap.From {
		p.mu.Lock()
		p.failLocked(gap, false) // the loss is the operator's to accept: Mirror.RestartFailed
		p.mu.Unlock()
		u.kickRetry()
		u.cons.PauseFetchPartitions(map[string][]int32{p.topic: {p.partition}})
		return false
	}
	return true
}

// flush stores resume points and queues the newest offset sync of every
// partition. Exactly once, resume points are stored by the transactions
// (commitTxn): flush only sends the syncs due.
// firstFlushAfter is when a unit session stores its first resume points
// (then every offset flush interval).
const firstFlushAfter = time.Second

func (u *unit) flush(ctx context.Context) {
	if u.env.cfg.Isolation == ReadCommitted && time.Since(u.lastLSOCheck) >= openTxnCheckEvery {
		u.lastLSOCheck = time.Now()
		u.checkOpenTransactions(ctx)
	}
	if u.env.cfg.ExactlyOnce {
		u.sendSyncs(false)
		return
	}
	err := u.commit(ctx)
	if ctx.Err() != nil && err != nil {
		return
	}
	if err != nil {
		u.env.metrics.flowErr(u.env.labels, "resume_commit")
		err = fmt.Errorf("storing resume points on %s: %w", u.env.dst.Alias, err)
	}
	u.env.health(u.slot, err)
	u.sendSyncs(true)
}

// sendSyncs produces the due offset syncs (and with promote, the newest
// position of every partition: MM2's commit()).
func (u *unit) sendSyncs(promote bool) {
	if u.env.sync == nil {
		return
	}
	for _, p := range *u.parts.Load() {
		p.mu.Lock()
		if promote {
			p.sw.promote(p.idleUp(), p.committed)
		}
		// Offset runs: all that changed at a flush, a new session's first
		// one at once.
		runs := p.sw.takeRuns(promote)
		due := p.sw.take()
		p.mu.Unlock()
		for _, s := range due {
			u.env.sync(p.topic, p.partition, s[0], s[1])
		}
		for _, r := range runs {
			u.env.run(p.topic, p.partition, r)
		}
	}
}

// commit stores the resume point of every partition that advanced, after
// the records it covers were acknowledged, and waits for the writes. Its
// records go where MM2's dedicated mode keeps its source offsets:
// mm2-offsets.<source>.internal on the target, key
// ["MirrorSourceConnector",{"cluster":S,"partition":p,"topic":t}], value
// {"offset":<last replicated offset>}, in the partition Connect's producer
// picks (murmur2 of the key modulo the partition count).
func (u *unit) commit(ctx context.Context) error {
	e := u.env
	type upd struct {
		p   *partState
		off int64
	}
	var ups []upd
	var recs []*kgo.Record
	for _, p := range *u.parts.Load() {
		p.mu.Lock()
		acked, committed, transient := p.acked, p.committed, p.transientErr
		p.mu.Unlock()
		if transient != nil {
			continue // the session restarts from the stored resume point
		}
		// Store whatever the last replicated record is, also when it went
		// back (the source topic was re-created): as Connect does, with no
		// monotonic check, so a restart resumes on the new topic.
		if acked == committed || acked < 0 {
			continue
		}
		key := connectoffsets.SourceKey(e.cfg.Source, p.topic, p.partition)
		recs = append(recs, &kgo.Record{Topic: e.resumeTopic, Key: key, Value: connectoffsets.SourceValue(acked),
			Partition: connectoffsets.Partition(key, e.resumeParts), Headers: remoteIDHeaders(p.remoteID)})
		ups = append(ups, upd{p, acked})
	}
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	start := time.Now()
	if err := u.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	for _, up := range ups {
		up.p.mu.Lock()
		up.p.committed = up.off
		up.p.mu.Unlock()
	}
	e.metrics.committed(e.labels, time.Since(start))
	return nil
}

// snapshot appends the status of the unit's partitions to out.
func (u *unit) snapshot(out []PartitionStatus) []PartitionStatus {
	for _, p := range *u.parts.Load() {
		out = append(out, p.snapshot())
	}
	return out
}

// openTxnCheckEvery is how often a unit reading read_committed checks
// whether its source partitions are held back by open transactions.
const openTxnCheckEvery = 5 * time.Second

// checkOpenTransactions finds the unit's source partitions that are held at
// their last stable offset, below the high watermark: a source transaction
// is open there, and read_committed replication cannot pass it until it
// ends. A partition held at the same last stable offset for
// OpenTransactionAfter is reported (PartitionStatus.OpenTransactionSince).
func (u *unit) checkOpenTransactions(ctx context.Context) {
	parts := *u.parts.Load()
	if len(parts) == 0 {
		return
	}
	var topics []string
	seen := map[string]bool{}
	for k := range parts {
		if !seen[k.topic] {
			seen[k.topic] = true
			topics = append(topics, k.topic)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, min(u.env.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	adm := kadm.NewClient(u.cons)
	hw, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return
	}
	lso, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return
	}
	now := time.Now()
	for k, p := range parts {
		h, ok1 := hw.Lookup(k.topic, k.partition)
		l, ok2 := lso.Lookup(k.topic, k.partition)
		if !ok1 || !ok2 || h.Err != nil || l.Err != nil {
			continue
		}
		p.mu.Lock()
		if h.Offset > p.hw {
			p.hw = h.Offset
		}
		pos := max(p.polledTo, p.acked+1)
		switch {
		case l.Offset >= h.Offset || pos < l.Offset:
			// Nothing open, or replication has not reached it yet.
			p.lsoHeld, p.lsoSince = -1, time.Time{}
		case l.Offset != p.lsoHeld:
			p.lsoHeld, p.lsoSince = l.Offset, now
		}
		p.mu.Unlock()
	}
}
