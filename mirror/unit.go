package mirror

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
)

// unitEnv is what a unit receives from its flow at construction: settings
// that never change while the flow runs, and the narrow callbacks through
// which a unit reports. A unit holds no pointer to its flow.
type unitEnv struct {
	cfg       FlowConfig     // with defaults
	statusSeq *atomic.Uint64 // the flow's, bumped at each unit's store of its status (nil in tests)
	// syncEpoch is the flow's, bumped when the offset-syncs or offset-runs
	// topic was created again (synctopics.go): each unit then writes its
	// partitions' newest syncs and current runs again (nil in tests).
	syncEpoch   *atomic.Uint64
	name        string // the flow's name, "source->target"
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
	// producerOpts is clientOpts for the unit's producer (its own default
	// metadata age: replicationProducerMetadataMaxAge).
	producerOpts func(c ClusterConfig, role []kgo.Opt, extra ...kgo.Opt) []kgo.Opt
	// sync produces one offset sync (nil when offset syncs are off);
	// syncFlush waits for the offset syncs produced so far.
	sync      func(topic string, partition int32, remoteID [16]byte, up, down int64)
	run       func(topic string, partition int32, remoteID [16]byte, r checkpoint.OffsetRun)
	syncFlush func(ctx context.Context)
	// gap records a gap in the flow's status; health records the outcome
	// of the unit's last resume-point load or commit (nil: healthy).
	gap    func(*GapError)
	health func(slot int32, err error)
	// rediscover wakes the flow's topic discovery (a fetch found a source
	// topic deleted or re-created: discovery settles it, which otherwise
	// waits for refresh.topics.interval.seconds); the flow bounds how
	// often it runs. Nil in tests.
	rediscover func()
	// txnID is the transactional id of a slot's producer (exactly once);
	// owns checks with the group coordinator that this member's generation
	// is current, i.e. that it still owns its slots (nil error).
	txnID func(slot int32) string
	owns  func(ctx context.Context, slot int32) error
	// prov checks and stamps the provenance header of every record (nil:
	// off); skipped counts the records it did not replicate.
	prov    *provenance
	skipped func(n int)
	// limitSynced: config sync copies the source topic's
	// max.message.bytes to the remote topic (a value raised on the remote
	// topic alone is set back to the source's).
	limitSynced bool
	// stampOffset: the provenance header ends with each record's source
	// offset (FlowConfig.DisableTailResume off); tail: a unit starting
	// partitions resumes from the target's tail where it proves later
	// than the resume point (tail.go; at least once, not shallow);
	// tailNoted counts each start's outcome for the flow.
	stampOffset bool
	tail        bool
	tailNoted   func(o tailOutcome, n int)
	// merged reports whether a source topic's remote topic is an allowed
	// collision (FlowConfig.AllowTopicCollisions): it holds copies of
	// other source topics too, which the provenance header (cluster and
	// offset, no topic) cannot tell from this topic's, so its partitions
	// never resume from the target's tail (nil: none is).
	merged func(topic string) bool
	// partRetryFirst is the first automatic restart delay of a failed
	// partition (0: partRetryFirst, 5 s).
	partRetryFirst time.Duration
	// topicLimit returns the max.message.bytes of a remote topic on the
	// target as the flow last found it (0: unknown); setTopicLimit
	// records a value a unit read itself (limits.go).
	topicLimit    func(remote string) int32
	setTopicLimit func(remote string, v int32)
	// cleanupPolicy returns the cleanup.policy of a remote topic as the
	// flow last read or set it ("": unknown, or nil), for recordAdvice.
	cleanupPolicy func(remote string) string
	// hooks are test hooks (nil in production).
	hooks *unitHooks

	// prodLog is the logger the target producer's options configure,
	// found by the first unit that opened a producer (a probe client:
	// kgo does not tell it otherwise); every unit's producer wraps it in
	// a failLogger. Guarded by prodLogMu.
	prodLogMu    sync.Mutex
	prodLog      kgo.Logger
	prodLogKnown bool
}

// unitHooks are a unit's test hooks.
type unitHooks struct {
	// ack runs on the target producer's promise goroutine with every
	// produce result, before the unit sees it (a test holds it there).
	ack func(r *kgo.Record, err error)
	// polled runs on the poll loop after it handled the fetched records
	// of a partition up to source offset last: produced them, or refused
	// them (the partition stopped).
	polled func(topic string, partition int32, last int64, produced bool)
	// snapshot runs on the control goroutine each time the unit takes a
	// status snapshot of its partitions (unit.publish).
	snapshot func()
	// flushed runs on the control goroutine after each store of resume
	// points (unit.flush), whether or not it stored any.
	flushed func()
	// sessionEnded runs on the control goroutine when a session returned
	// err, with the unit's poll loops still running then.
	sessionEnded func(err error, pollLoops int32)
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
// the only writer of partition state, through the lifecycle; partitions
// offered by discovery, the flush timer, offset syncs, restarts) and the
// poll loop (the only reader of the consumer; it owns each feed's next).
// The poll loop, the producer's promises and RestartFailed callers post
// events to the control goroutine's inbox.
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

	// Control goroutine only: the partitions' lifecycle, and the resume
	// points (and the remote topic IDs they record) loaded at a session's
	// start.
	life      *lifecycle
	syncEpoch uint64 // the env's syncEpoch as of the last sendSyncs
	resume    map[tp]int64
	resumeIDs map[tp]resumeIDs
	// forget (control goroutine): source topics deleted, whose state the
	// lifecycle drops at the next session's start (applyOffer sets it
	// with the rebuild that ends the session).
	forget map[string]bool
	// forgetParts (control goroutine): partitions of source topics
	// re-created with fewer partitions that the new topic lacks, dropped
	// by the lifecycle at the next session's start (vanishedParts).
	forgetParts map[tp]bool
	// pollLoops counts the unit's running poll loops (tests: a session
	// never starts while the last one's runs).
	pollLoops atomic.Int32
	// disputes counts, per source topic, the source's answers in a row
	// that named another topic ID than the offer (confirmSourceIDs).
	disputes map[string]idDispute
	// confirmAfter: confirmSourceIDs asks nothing before it (after a
	// request without an answer, confirmDelay later).
	confirmAfter time.Time
	confirmDelay time.Duration
	// box is the unit's inbox: the other goroutines' events for the
	// control goroutine.
	box *inbox
	// feeds are the poll loop's handles of the partitions, copy on write
	// by the control goroutine.
	feeds atomic.Pointer[map[tp]*feed]
	// status is the partitions' status as the control goroutine last
	// published it (publish); dirty, published and pubTimer schedule the
	// next one.
	status    atomic.Pointer[[]PartitionStatus]
	dirty     bool
	published time.Time
	pubTimer  <-chan time.Time
	// endSession: a transient produce failure ends the session (without
	// storing resume points past it).
	endSession error
	// retryAt is when the lifecycle decides again (a failed partition's
	// automatic restart is due; zero: on an event).
	retryAt time.Time

	lastLSOCheck time.Time // control goroutine

	// progressed: the session stored resume points (a transaction with
	// records committed, exactly once, or a flush that stored some), so
	// the restart after it waits the first backoff again (run). Set by the
	// poll loop or the control goroutine, read by run between sessions.
	progressed atomic.Bool

	// kicks: partitions added to the session's running consumer, for the
	// poll loop to get fetched at once; kickAdds (control goroutine): the
	// session added its first partitions, later ones are kicked.
	kicks    pollKicks
	kickAdds bool

	// Exactly once, owned by the poll loop: the open transaction.
	inTxn       bool
	txnStart    time.Time
	txnRecords  int
	lastPromote time.Time
	// txnSpan: with transaction.boundary=interval, how long a transaction
	// stays open at most (txnSpan, set when the session's producer opens).
	txnSpan    time.Duration
	spanWarned bool // the shorter txnSpan was logged (once per unit, not per session)

	// Record limits of the session's producer (limits.go): lim, the batch
	// limit per remote topic (minus Kafka's default when it could not be
	// read; copy on write by the control goroutine, read by kgo and the
	// poll loop); userLimit, the user's
	// producer.max.request.size (0: not set); bufBytes, the producer's
	// buffer. rebuild (control goroutine) ends the session gracefully to
	// reopen the producer with changed limits. tight: the remote topics
	// whose batches franz-go builds to at most the limit plus 1, not plus
	// 4 (kgoBatchLimit), after the target refused one at an unchanged
	// limit; kept for the unit's life (copy on write by the control
	// goroutine, read by kgo).
	lim       atomic.Pointer[map[string]int32]
	tight     atomic.Pointer[map[string]bool]
	userLimit int32
	userWrite int32 // the user's BrokerMaxWriteBytes, found with userLimit
	// reqLimit is the largest batch, in the broker's measure, that the
	// producer puts in one produce request to a topic whose name is at
	// most 16 bytes (requestBatchLimit), and reqWrite its
	// BrokerMaxWriteBytes; 0 before the first open.
	reqLimit, reqWrite int32
	bufBytes           int64
	rebuild            bool
	// fetchSize points to the session consumer's FetchMaxBytes in force,
	// sized by its fetchHook (fetchsize.go); nil before the first session.
	// Set by the unit goroutine, read by tests.
	fetchSize atomic.Pointer[atomic.Int32]

	// tailOK: the session's producer is idempotent with acks=all, so a
	// record on the target means the flow's records before it are there
	// (tail resume); tailWarned limits the warning of a failed tail read
	// to one per session. Control goroutine.
	tailOK, tailWarned bool

	// innerLog is the producer's configured logger (unitEnv.prodLog,
	// logKnown); the producer wraps it in a failLogger.
	innerLog kgo.Logger
	logKnown bool

	cancel context.CancelFunc // graceful stop
	abort  context.CancelFunc // stop without flushing
	done   chan struct{}
}

func newUnit(slot int32, env *unitEnv) *unit {
	u := &unit{slot: slot, env: env, log: env.log.With("unit", slot), offerCh: make(chan struct{}, 1),
		done: make(chan struct{}), codec: &followCodec{}, box: newInbox()}
	c := &env.cfg
	u.life = newLifecycle(lifeConfig{flow: env.name, eos: c.ExactlyOnce, syncs: !c.DisableOffsetSyncs,
		lagMax: c.OffsetLagMax, retryFirst: env.partRetryFirst, startLatest: c.StartOffset == StartLatest,
		gapStop: c.OnGap == GapStop, openTxnAfter: c.OpenTransactionAfter, advise: u.adviseProduceErr})
	if env.metrics != nil {
		u.life.cfg.acked = func(p *partState, size int64, ts time.Time) { env.metrics.acked(p.pm, size, ts) }
	}
	empty := map[tp]*feed{}
	u.feeds.Store(&empty)
	noLim := map[string]int32{}
	u.lim.Store(&noLim)
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

// budget divides a flow-wide byte budget between its N units, with a floor.
func budget[T int | int32](total T, n int32, floor T) T {
	return max(total/T(n), floor)
}

// snapshot appends the status of the unit's partitions to out, as the
// control goroutine last published it (at most publishGap after the
// last change; no I/O, no lock of the hot path).
func (u *unit) snapshot(out []PartitionStatus) []PartitionStatus {
	if st := u.status.Load(); st != nil {
		out = append(out, *st...)
	}
	return out
}

// openTxnCheckEvery is how often a unit checks whether its source
// partitions are held back by open transactions (read_committed) and
// refreshes the source ends of those that fetch nothing: half of
// OpenTransactionAfter, between 1 and 30 seconds. The check lists the end
// and last stable offsets of every partition of the unit (it also
// refreshes the lag of idle ones), which at thousands of idle partitions
// was a fifth of an idle member's CPU every 5 s (issue 22's profile).
func openTxnCheckEvery(c *FlowConfig) time.Duration {
	return min(max(c.OpenTransactionAfter/2, time.Second), 30*time.Second)
}

// checkOpenTransactions finds the unit's source partitions that are held at
// their last stable offset, below the high watermark: a source transaction
// is open there, and read_committed replication cannot pass it until it
// ends. A partition held at the same last stable offset for
// OpenTransactionAfter is reported (PartitionStatus.OpenTransactionSince).
// Reading read_uncommitted, it lists the end offsets alone: they are what
// refreshes the source end, and the lag, of a partition that fetches
// nothing (FAILED, waiting for an operator), which otherwise kept the lag
// it had when it stopped (a breaker's finding).
func (u *unit) checkOpenTransactions(ctx context.Context) {
	parts := u.life.parts
	if len(parts) == 0 {
		return
	}
	byTopic := make(map[string][]int32)
	for k := range parts {
		byTopic[k.topic] = append(byTopic[k.topic], k.partition)
	}
	ctx, cancel := context.WithTimeout(ctx, min(u.env.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	hw, err := listLatest(ctx, u.cons, byTopic, 0)
	if err != nil {
		return
	}
	lso := hw // read_uncommitted: no transaction holds replication back
	if u.env.cfg.Isolation != ReadUncommitted {
		if lso, err = listLatest(ctx, u.cons, byTopic, 1); err != nil {
			return
		}
	}
	adm := kadm.NewClient(u.cons)
	u.life.apply(event{kind: evTick, a: time.Now().UnixNano()}, nil)
	changed := false
	var empty []string // topics of partitions with records that polled nothing
	emptySeen := map[string]bool{}
	for k := range parts {
		h, ok1 := hw[k]
		l, ok2 := lso[k]
		if !ok1 || !ok2 {
			continue
		}
		if u.life.openTxn(k, h, l) {
			changed = true
		}
		if h > 0 && u.life.unpolled(k) && !emptySeen[k.topic] {
			emptySeen[k.topic] = true
			empty = append(empty, k.topic)
		}
	}
	if len(empty) > 0 {
		// Their records may all have been deleted before the first copy:
		// without the log start their lag would read the whole log.
		if starts, err := adm.ListStartOffsets(ctx, empty...); err == nil {
			starts.Each(func(o kadm.ListedOffset) {
				if o.Err == nil && u.life.sawLogStart(tp{o.Topic, o.Partition}, o.Offset) {
					changed = true
				}
			})
		}
	}
	if changed {
		u.dirty = true
	}
}

// listLatest lists the latest offsets of parts (topic -> partitions) with
// isolation level isolation (0: the high watermarks, 1: the last stable
// offsets), in one ListOffsets request per partition leader, sharded by
// cl from the metadata it caches. Unlike kadm's ListEndOffsets it asks no
// Metadata for the topics first: a unit checks its partitions every few
// seconds, and at thousands of partitions that Metadata was most of the
// check's cost (issue 22). Partitions answered with an error are left out;
// err is set when no answer came at all.
func listLatest(ctx context.Context, cl *kgo.Client, parts map[string][]int32, isolation int8) (map[tp]int64, error) {
	return listOffsets(ctx, cl, parts, isolation, -1)
}

// listOffsets is listLatest for ListOffsets timestamp ts (-1 latest, -2
// earliest, or Unix milliseconds).
func listOffsets(ctx context.Context, cl *kgo.Client, parts map[string][]int32, isolation int8, ts int64) (map[tp]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	n := 0
	for topic, ps := range parts {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = p
			rp.Timestamp = ts
			rp.CurrentLeaderEpoch = -1
			rt.Partitions = append(rt.Partitions, rp)
			n++
		}
		req.Topics = append(req.Topics, rt)
	}
	out := make(map[tp]int64, n)
	var firstErr error
	answered := 0
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			if firstErr == nil {
				firstErr = sh.Err
			}
			continue
		}
		answered++
		resp := sh.Resp.(*kmsg.ListOffsetsResponse)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 {
					out[tp{t.Topic, p.Partition}] = p.Offset
				}
			}
		}
	}
	if answered == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}
