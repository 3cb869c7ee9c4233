package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/cpwatch"
	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/policy"
)

// Defaults of [EmitterConfig] fields left zero.
const (
	// DefaultEmitInterval is emit.checkpoints.interval.seconds (MM2: 60 s).
	DefaultEmitInterval = 60 * time.Second
	// DefaultSyncInterval is sync.group.offsets.interval.seconds (MM2: 60 s).
	DefaultSyncInterval = 60 * time.Second
	// DefaultRefreshGroupsInterval is refresh.groups.interval.seconds
	// (MM2: 600 s). See [EmitterConfig.RefreshGroupsInterval] for how
	// kmirror uses it.
	DefaultRefreshGroupsInterval = 600 * time.Second
	// DefaultAdminTimeout is admin.timeout.ms (MM2: 60000 ms): the bound of
	// one round of admin requests (list groups, fetch offsets, commit).
	DefaultAdminTimeout = 60 * time.Second
	// DefaultRecentHistory is the number of most recent offset syncs kept
	// per source partition in addition to MM2's 64 exponentially spaced
	// ones ([WithRecentHistory]): 1024 syncs, at most 16 KiB per partition,
	// allocated only as syncs arrive. A group lagging by less than 1024 ×
	// offset.lag.max records is translated to within offset.lag.max of
	// its position, where MM2 3.5+ re-reads a distance that grows with the
	// group's lag (KAFKA-14666: 64 syncs per partition, spaced roughly by
	// powers of two).
	DefaultRecentHistory = 1024
	// DefaultFetchBatch is the number of groups per OffsetFetch request
	// (KAFKA-17233 batches all groups in one request; a bounded batch keeps
	// requests and responses small with thousands of groups).
	DefaultFetchBatch = 500
	// DefaultCommitParallelism bounds the concurrent OffsetCommit requests
	// of group-offset sync.
	DefaultCommitParallelism = 8
)

// GroupState is the checkpoint and offset-sync state of a consumer group,
// in [GroupStatus.State]: [StateSynced], [StateCheckpointed] or
// [StateSkipped]. Its values are lower-case words, stable across versions.
type GroupState string

// Group states reported in [GroupStatus.State].
const (
	// StateSynced: offset sync is on and the target group's committed offset
	// of every replicated partition the group committed on the source equals
	// the translation of its current source offset.
	StateSynced GroupState = "synced"
	// StateCheckpointed: at least one partition of the group is translated
	// and checkpointed; with offset sync on, some partition is not synced
	// yet (see Reason).
	StateCheckpointed GroupState = "checkpointed"
	// StateSkipped: nothing could be checkpointed or synced for the group;
	// Reason says why.
	StateSkipped GroupState = "skipped"
)

// Reasons reported in [GroupStatus.Reason] and [PartitionStatus.Reason].
const (
	// ReasonTopicNotReplicated: the group has commits only on topics the
	// flow does not replicate (MM2 ignores such groups).
	ReasonTopicNotReplicated = "topic not replicated"
	// ReasonSyncsLoading: the offset-syncs topic is still being read.
	ReasonSyncsLoading = "offset syncs not loaded yet"
	// ReasonNoOffsetSync: no offset sync exists for the source partition
	// yet: nothing was replicated from it. Such a group offset is not
	// translated at all, never copied as it is (KAFKA-12635: a source
	// offset on an empty target partition shows a negative lag).
	ReasonNoOffsetSync = "no offset sync yet"
	// ReasonOlderThanSyncs: the group's offset is older than every retained
	// offset sync of the partition (MM2 translates it to -1).
	ReasonOlderThanSyncs = "offset older than every retained offset sync"
	// ReasonActiveOnTarget: the group has members on the target; kmirror
	// never commits into a group with members there (KIP-545: the broker
	// would refuse, and the commit would move running consumers).
	ReasonActiveOnTarget = "active on target"
	// ReasonRemoteTopicMissing: the remote topic does not exist on the
	// target (yet).
	ReasonRemoteTopicMissing = "remote topic missing on target"
	// ReasonPartitionMismatch: the remote topic has fewer partitions than
	// the source topic.
	ReasonPartitionMismatch = "partition mismatch"
	// ReasonPastTargetEnd: the translation is past the target partition's
	// log end (the target was truncated or re-created); not committed: a
	// committed offset is never past the target log end.
	ReasonPastTargetEnd = "translated offset past target log end"
	// ReasonTargetAhead: the target group's offset is ahead of the
	// translation; group offset sync never moves a target offset back.
	ReasonTargetAhead = "target offset ahead of translation"
	// ReasonNotSyncedYet: offset sync has not run since the translation
	// changed.
	ReasonNotSyncedYet = "not synced yet"
)

// EmitterConfig configures an [Emitter]: MM2's MirrorCheckpointConnector and
// MirrorCheckpointTask for one flow SourceAlias->TargetAlias, with the
// settings of MirrorCheckpointConfig named on each field. Zero values mean
// the documented defaults.
type EmitterConfig struct {
	// SourceAlias and TargetAlias are the flow's cluster aliases. Required.
	SourceAlias, TargetAlias string
	// Policy names remote and internal topics; nil means policy.Default
	// with separator ".". It must be the policy the replicator uses
	// (replication.policy.class and its separator settings, the same for
	// MM2's three connectors): checkpoints name remote topics with it, and
	// under another policy they name topics the target does not have.
	Policy policy.ReplicationPolicy

	// SourceOpts reach the source cluster; the emitter builds one admin
	// client from them (ListGroups, OffsetFetch) and closes it.
	SourceOpts []kgo.Opt
	// TargetOpts reach the target cluster; the emitter builds one client
	// from them to create and write the checkpoints topic and, with
	// SyncGroupOffsets, to list, fetch and commit target group offsets,
	// plus short-lived readers of the checkpoints topic at start.
	TargetOpts []kgo.Opt
	// OffsetSyncsOpts reach the cluster holding OffsetSyncsTopic (the
	// source unless offset-syncs.topic.location=target); the emitter tails
	// partition 0 of that topic with one consumer.
	OffsetSyncsOpts []kgo.Opt
	// OffsetSyncsTopic is the offset-syncs topic name
	// (mm2-offset-syncs.<target>.internal for location=source). Required.
	OffsetSyncsTopic string
	// OffsetRunsTopic is kmirror's offset-runs topic on the same cluster
	// ([OffsetRunsTopic] of OffsetSyncsTopic), read beside the offset
	// syncs for exact translation. Empty, or a topic that does not exist
	// (replication by Apache MM2 or an older kmirror), means MM2's rule on
	// the offset syncs: safe, never exact, and SafeToSwitch stays false.
	OffsetRunsTopic string

	// GroupFilter keeps the consumer groups to checkpoint (groups,
	// groups.exclude); nil keeps every group.
	GroupFilter func(group string) bool
	// TopicFilter keeps the source topics whose offsets are checkpointed
	// (MM2 shouldCheckpointTopic: the flow's topic filter); nil keeps
	// every topic. Topics without offset syncs never get checkpoints.
	TopicFilter func(topic string) bool

	// Interval is emit.checkpoints.interval.seconds: how often group
	// offsets are fetched, translated and checkpointed. 0 means
	// [DefaultEmitInterval]. Unlike MM2, the first emission happens as
	// soon as the offset syncs are loaded, not one interval after start.
	Interval time.Duration
	// RefreshGroupsInterval is refresh.groups.interval.seconds. MM2 looks
	// for new groups only this often (10 minutes by default).
	// kmirror lists the source groups at every emission instead, because
	// ListGroups is one small request per broker next to the OffsetFetch
	// of every group the emission does anyway: a new group is checkpointed
	// within one Interval. RefreshGroupsInterval only matters when it is
	// shorter than Interval: then groups are listed (and emitted) that
	// often. Negative disables refreshing (refresh.groups.enabled=false):
	// the groups found by the first listing are kept.
	RefreshGroupsInterval time.Duration

	// SyncGroupOffsets is sync.group.offsets.enabled: commit translated
	// offsets into the same group on the target when it has no active
	// members there (KIP-545).
	SyncGroupOffsets bool
	// SyncInterval is sync.group.offsets.interval.seconds; 0 means
	// [DefaultSyncInterval]. A sync also runs right after the first
	// emission.
	SyncInterval time.Duration

	// ReplicationFactor is checkpoints.topic.replication.factor; 0 means
	// -1, the target broker default (MM2: 3).
	ReplicationFactor int16
	// AdminTimeout bounds each round of admin requests; 0 means
	// [DefaultAdminTimeout].
	AdminTimeout time.Duration
	// RecentHistory is the number of recent offset syncs kept per source
	// partition on top of MM2's 64 slots ([WithRecentHistory]); 0 means
	// [DefaultRecentHistory], negative keeps MM2's 64 slots only.
	RecentHistory int
	// FetchBatch is the number of groups per OffsetFetch request; 0 means
	// [DefaultFetchBatch].
	FetchBatch int

	// Logger receives the emitter's logs; nil discards them.
	Logger *slog.Logger
	// OnLatency, if set, is called for every checkpoint record the target
	// acknowledged with now minus the record timestamp (taken before the
	// source offsets were fetched): MM2's checkpoint-latency-ms. It runs
	// on a client goroutine and must not block.
	OnLatency func(time.Duration)
	// OnCheckpoints, if set, is called after each emission with the number
	// of checkpoint records written (acknowledged) in it.
	OnCheckpoints func(n int)
	// OnCommits, if set, is called after each group-offset sync with the
	// number of partition offsets committed on the target.
	OnCommits func(n int)
	// OnError, if set, is called for each failed round, with op one of
	// "list_groups", "fetch_offsets", "list_target", "write_checkpoints",
	// "sync_group_offsets", "offset_syncs".
	OnError func(op string, err error)
}

// withDefaults fills zero fields and validates the rest.
func (c EmitterConfig) withDefaults() (EmitterConfig, error) {
	if c.SourceAlias == "" || c.TargetAlias == "" {
		return c, fmt.Errorf("checkpoint: emitter needs both cluster aliases (source %q, target %q)", c.SourceAlias, c.TargetAlias)
	}
	if c.SourceAlias == c.TargetAlias {
		return c, fmt.Errorf("checkpoint: emitter source and target are the same alias %q", c.SourceAlias)
	}
	if c.OffsetSyncsTopic == "" {
		return c, errors.New("checkpoint: emitter needs OffsetSyncsTopic")
	}
	if len(c.SourceOpts) == 0 || len(c.TargetOpts) == 0 || len(c.OffsetSyncsOpts) == 0 {
		return c, errors.New("checkpoint: emitter needs SourceOpts, TargetOpts and OffsetSyncsOpts (at least kgo.SeedBrokers)")
	}
	if c.Policy == nil {
		p, err := policy.NewDefault()
		if err != nil {
			return c, fmt.Errorf("checkpoint: default policy: %w", err)
		}
		c.Policy = p
	}
	if c.GroupFilter == nil {
		c.GroupFilter = func(string) bool { return true }
	}
	if c.TopicFilter == nil {
		c.TopicFilter = func(string) bool { return true }
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Interval, DefaultEmitInterval)
	def(&c.SyncInterval, DefaultSyncInterval)
	def(&c.AdminTimeout, DefaultAdminTimeout)
	if c.RefreshGroupsInterval == 0 {
		c.RefreshGroupsInterval = DefaultRefreshGroupsInterval
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	switch {
	case c.RecentHistory == 0:
		c.RecentHistory = DefaultRecentHistory
	case c.RecentHistory < 0:
		c.RecentHistory = 0
	case c.RecentHistory > MaxRecentHistory:
		return c, fmt.Errorf("checkpoint: RecentHistory %d syncs exceeds the maximum %d", c.RecentHistory, MaxRecentHistory)
	}
	if c.FetchBatch <= 0 {
		c.FetchBatch = DefaultFetchBatch
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// GroupStatus is the checkpoint and offset-sync state of one consumer group
// of the source cluster, as of the last emission and sync.
type GroupStatus struct {
	// Group is the consumer group id (the same on both clusters).
	Group string
	// State is [StateSynced], [StateCheckpointed] or [StateSkipped].
	State GroupState
	// Reason says why the group is skipped or not fully synced (one of
	// the Reason* constants, or an error message); empty otherwise.
	Reason string
	// SafeToSwitch is true when, as of Updated, every replicated partition
	// the group committed on the source has its source offset within what
	// was replicated and a target offset (the committed offset of the
	// target group with SyncGroupOffsets, else the last checkpoint
	// written) equal to the exact translation of that source offset (see
	// the package documentation): a consumer of the group stopped on the
	// source before Updated and started on the target re-reads 0 records
	// and skips 0. It needs kmirror's offset runs
	// ([EmitterConfig.OffsetRunsTopic]); with offset syncs alone it is
	// false.
	SafeToSwitch bool
	// Partitions are the group's replicated partitions, sorted by remote
	// topic and partition.
	Partitions []PartitionStatus
	// Updated is when the group's source offsets were last fetched.
	Updated time.Time
}

// PartitionStatus is the state of one partition of a [GroupStatus]. Offsets
// are -1 when unknown.
type PartitionStatus struct {
	// Topic is the source topic; RemoteTopic its name on the target.
	Topic, RemoteTopic string
	Partition          int32
	// SourceOffset is the group's committed offset on the source.
	SourceOffset int64
	// Translated is the best known target offset for SourceOffset: the
	// translation of the current offset, or the last checkpoint written for
	// an offset not after it when that one is higher (-1 when none).
	Translated int64
	// Exact reports that Translated is the exact translation of
	// SourceOffset (see the package documentation).
	Exact bool
	// Checkpointed is the downstream offset of the last checkpoint written
	// for the partition (loaded from the topic at start or acknowledged).
	Checkpointed int64
	// TargetOffset is the group's committed offset on the target as last
	// seen or committed by offset sync (-1 when unknown or sync is off).
	TargetOffset int64
	// Reason says why the partition has no translation or is not synced.
	Reason string
}

// Emitter writes MM2 checkpoints for one flow and, optionally, syncs
// translated offsets into the target's idle consumer groups. Create it
// with [NewEmitter], run it with [Emitter.Run]; [Emitter.Status] is safe
// for concurrent use at any time.
//
// Run's work (MirrorCheckpointTask's, with the differences noted):
//   - create <source>.checkpoints.internal on the target (1 partition,
//     cleanup.policy=compact) if absent;
//   - read that topic to its end (MM2 3.8 CheckpointStore) and the whole
//     offset-syncs topic (OffsetSyncStore), then keep tailing the latter,
//     so that checkpoints never go backwards after a restart (unless the
//     target log they describe is gone, below);
//   - every Interval: list the source groups, keep those passing
//     GroupFilter with commits on topics passing TopicFilter, fetch their
//     offsets in batches, translate them, list the target's cluster ID,
//     remote topic IDs and log ends, and write to partition 0 the
//     checkpoints that are more recent than the last one written for the
//     group and partition (MM2's checkpointIsMoreRecent: none written yet,
//     a greater downstream offset, or an upstream offset that went back);
//     unlike MM2, offset syncs of a previous target log (a target rebuilt
//     under the same alias, a remote topic re-created or truncated) are
//     discarded, and a checkpoint of such a log is replaced even by a
//     lower one, so that no checkpoint is past the target's log end;
//     checkpoints record the target cluster and remote topic ID in
//     headers ([TargetClusterHeader], [TargetTopicIDHeader]);
//   - with SyncGroupOffsets, every SyncInterval: commit the translations
//     into the groups that have no active members on the target, never
//     moving a group's offset backwards nor past the target log end; a
//     target group committed past the log end is reported
//     ([ReasonTargetPastLogEnd]) and left as it is.
type Emitter struct {
	cfg       EmitterConfig
	log       *slog.Logger
	cpTopic   string
	startOnce sync.Once

	// storeMu guards store, runs and their tags; the syncs tailer adds,
	// the cycles translate.
	storeMu sync.Mutex
	store   *OffsetSyncStore
	runs    *RunStore
	// syncTags and runTags are the target cluster ID recorded
	// ([TargetClusterHeader]) on the newest sync and run of each source
	// partition; "" when not recorded (MM2, older kmirror).
	syncTags, runTags map[tpKey]string
	// discarded holds the source partitions whose syncs and runs were
	// discarded as stale and that have had none since.
	discarded map[tpKey]bool

	// The fields below are owned by the Run goroutine.
	cps         *checkpointState
	groups      map[string]*groupEntry
	knownGroups []string // source groups passing the filter, from the last listing
	listedOnce  bool
	dstCluster  string              // target cluster ID at the last emission
	remoteIDs   map[string][16]byte // remote topic IDs at the last emission

	mu     sync.Mutex // guards status
	status []GroupStatus
}

// groupEntry is the Run goroutine's state of one source group.
type groupEntry struct {
	name    string
	parts   map[cpKeyTP]*partEntry // by remote topic and partition
	skipped []string               // committed topics that are not replicated
	fetched time.Time
	err     string // last fetch error
	active  bool   // active on the target at the last sync
	syncErr string // last group-level sync failure
}

type cpKeyTP struct {
	remote    string
	partition int32
}

// partEntry is one replicated partition the group committed on the source.
type partEntry struct {
	topic, remote string
	partition     int32
	srcOffset     int64
	metadata      string
	topicID       [16]byte // the source topic's ID at the fetch, zero unknown
	translated    int64    // translation of srcOffset, -1 none
	exact         bool     // translated is exact
	reason        string   // why there is no translation
	exactReason   string   // why the translation is not exact
	targetOffset  int64    // target group offset last seen/committed, -1 unknown
	syncReason    string
}

// NewEmitter validates cfg and returns an Emitter. It does no I/O and starts
// no goroutine. Errors name the missing or invalid field.
func NewEmitter(cfg EmitterConfig) (*Emitter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Emitter{
		cfg:       cfg,
		log:       cfg.Logger.With("task", "checkpoint"),
		cpTopic:   cfg.Policy.CheckpointsTopic(cfg.SourceAlias),
		cps:       newCheckpointState(),
		groups:    map[string]*groupEntry{},
		syncTags:  map[tpKey]string{},
		runTags:   map[tpKey]string{},
		discarded: map[tpKey]bool{},
		remoteIDs: map[string][16]byte{},
	}, nil
}

// CheckpointsTopic returns the name of the topic the emitter writes:
// Policy.CheckpointsTopic(SourceAlias), e.g. "us-west.checkpoints.internal".
func (e *Emitter) CheckpointsTopic() string { return e.cpTopic }

// Status returns the state of every group passing the group filter that
// has committed offsets on the source, sorted by group id, as of the last
// emission or sync. It does no I/O.
func (e *Emitter) Status() []GroupStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]GroupStatus(nil), e.status...)
}

// Run works until ctx is done and then returns nil after closing its
// clients and joining its goroutines. Cluster errors are retried with
// backoff and logged; Run returns an error only when called twice.
func (e *Emitter) Run(ctx context.Context) error {
	first := false
	e.startOnce.Do(func() { first = true })
	if !first {
		return errors.New("checkpoint: Emitter.Run called twice")
	}
	c := e.cfg
	srcCl, err := kclient.New(c.SourceOpts...)
	if err != nil {
		return fmt.Errorf("checkpoint: source %s client: %w", c.SourceAlias, err)
	}
	defer srcCl.Close()
	dstCl, err := kclient.New(append(append([]kgo.Opt{}, c.TargetOpts...),
		kgo.DefaultProduceTopic(e.cpTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordDeliveryTimeout(c.AdminTimeout),
	)...)
	if err != nil {
		return fmt.Errorf("checkpoint: target %s client: %w", c.TargetAlias, err)
	}
	defer dstCl.Close()
	r := &run{e: e, src: kadm.NewClient(srcCl), dst: kadm.NewClient(dstCl), dstCl: dstCl}
	r.src.SetTimeoutMillis(int32(c.AdminTimeout / time.Millisecond))
	r.dst.SetTimeoutMillis(int32(c.AdminTimeout / time.Millisecond))

	loaded := r.startup(ctx)
	if ctx.Err() != nil {
		return nil
	}
	e.storeMu.Lock()
	e.store = NewOffsetSyncStore(WithMustReadToEnd(!loaded), WithRecentHistory(c.RecentHistory))
	e.runs = NewRunStore()
	e.storeMu.Unlock()

	var wg sync.WaitGroup
	defer wg.Wait()
	ready := make(chan struct{})
	wg.Go(func() { e.tailSyncs(ctx, ready) })
	select {
	case <-ctx.Done():
		return nil
	case <-ready:
	}
	e.log.Info("offset syncs loaded", "topic", c.OffsetSyncsTopic, "partitions", e.storePartitions())

	emitT := time.NewTimer(0)
	defer emitT.Stop()
	var syncC <-chan time.Time
	if c.SyncGroupOffsets {
		t := time.NewTicker(c.SyncInterval)
		defer t.Stop()
		syncC = t.C
	}
	period := c.Interval
	if c.RefreshGroupsInterval > 0 && c.RefreshGroupsInterval < period {
		period = c.RefreshGroupsInterval
	}
	firstSync := c.SyncGroupOffsets
	var retry time.Duration // after a failed emission, retry sooner than period
	waiting := 0            // partitions of known groups still without an offset sync
	eagerUntil := time.Now().Add(eagerWindow)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-emitT.C:
			if r.emit(ctx) {
				retry = 0
				emitT.Reset(period)
			} else {
				retry = backoff(retry)
				emitT.Reset(min(retry, period))
			}
			// Improvement over MM2 (which waits a whole interval, 60 s by
			// default): while committed partitions wait for their first
			// offset sync (replication just started), emit again every
			// eagerInterval, and sync group offsets as soon as some became
			// translatable, so a fresh mirror is safe to switch in seconds.
			// The first translations of a fresh mirror come from the
			// first-record syncs (coarse: d+1); the newest-position syncs
			// of the next offset flushes make them exact, so emission
			// (and group sync) stays eager for eagerWindow after groups
			// became translatable.
			nowWaiting := e.waitingForSyncs()
			if nowWaiting < waiting {
				eagerUntil = time.Now().Add(eagerWindow)
			}
			eager := nowWaiting > 0 || time.Now().Before(eagerUntil)
			if eager {
				emitT.Reset(min(period, eagerInterval))
			}
			if c.SyncGroupOffsets && !firstSync && (nowWaiting < waiting || eager) && ctx.Err() == nil {
				r.sync(ctx)
			}
			waiting = nowWaiting
			if firstSync && ctx.Err() == nil {
				firstSync = false
				r.sync(ctx)
			}
		case <-syncC:
			r.sync(ctx)
		}
		e.publish()
	}
}

// eagerInterval is how often checkpoints are emitted while some committed
// partition has no offset sync yet, and during eagerWindow after start or
// after some became translatable.
const (
	eagerInterval = time.Second
	eagerWindow   = 15 * time.Second
)

// waitingForSyncs counts the committed partitions of known groups that have
// no offset sync yet, or none since their stale ones were discarded. Run
// goroutine only (it owns groups).
func (e *Emitter) waitingForSyncs() int {
	n := 0
	for _, g := range e.groups {
		for _, pe := range g.parts {
			if pe.reason == ReasonNoOffsetSync || pe.reason == ReasonNewIncarnation || pe.reason == ReasonStaleTarget {
				n++
			}
		}
	}
	return n
}

func (e *Emitter) storePartitions() int {
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	return e.store.Partitions()
}

func (e *Emitter) fail(op string, err error) {
	if e.cfg.OnError != nil {
		e.cfg.OnError(op, err)
	}
}

// run holds one Run call's clients.
type run struct {
	e        *Emitter
	src, dst *kadm.Client
	dstCl    *kgo.Client
}

// backoff returns the next retry delay: 100 ms doubling to 10 s.
func backoff(d time.Duration) time.Duration {
	if d <= 0 {
		return 100 * time.Millisecond
	}
	return min(2*d, 10*time.Second)
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// startup creates the checkpoints topic and loads it into e.cps, retrying
// with backoff. It reports whether the load succeeded; when reading is
// denied it gives up and returns false, and the store then starts in MM2's
// must-read-to-end mode (docs/mm2-compat.md §6.2), which also keeps restarts from
// translating below earlier checkpoints.
func (r *run) startup(ctx context.Context) bool {
	e := r.e
	var delay time.Duration
	for attempt := 1; ; attempt++ {
		err := r.createTopic(ctx)
		if err == nil {
			var n int
			n, err = e.loadCheckpoints(ctx)
			if err == nil {
				e.log.Info("checkpoints loaded", "topic", e.cpTopic, "checkpoints", n)
				return true
			}
			if isAuthErr(err) {
				e.log.Warn("cannot read checkpoints topic; translating from the newest offset sync of each partition until groups pass it",
					"topic", e.cpTopic, "err", err)
				return false
			}
		}
		if ctx.Err() != nil {
			return false
		}
		e.log.Warn("checkpoint emitter start-up", "attempt", attempt, "err", err)
		delay = backoff(delay)
		if !sleep(ctx, delay) {
			return false
		}
	}
}

func isAuthErr(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
		errors.Is(err, kerr.GroupAuthorizationFailed)
}

// createTopic creates the checkpoints topic like MM2's
// createSinglePartitionCompactedTopic: already exists and authorization
// failures are not errors (KAFKA-15465); the later read tells.
func (r *run) createTopic(ctx context.Context) error {
	e := r.e
	cctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	compact := "compact"
	resp, err := r.dst.CreateTopic(cctx, 1, e.cfg.ReplicationFactor, map[string]*string{"cleanup.policy": &compact}, e.cpTopic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		e.log.Info("created checkpoints topic", "topic", e.cpTopic, "cluster", e.cfg.TargetAlias)
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists), isAuthErr(err):
		return nil
	}
	return fmt.Errorf("creating %s on %s: %w", e.cpTopic, e.cfg.TargetAlias, err)
}

// remoteTopic names a source topic on the target (docs/mm2-compat.md §6.4 step 3).
func (e *Emitter) remoteTopic(topic string) string {
	p := e.cfg.Policy
	if src, ok := p.TopicSource(topic); ok && src == e.cfg.TargetAlias {
		return p.OriginalTopic(topic)
	}
	return p.FormatRemoteTopic(e.cfg.SourceAlias, topic)
}

// listGroups returns the sorted consumer groups on the source passing the
// group filter. Connect and share groups are not consumer groups.
func (r *run) listGroups(ctx context.Context) ([]string, error) {
	e := r.e
	lctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	listed, err := r.src.ListGroups(lctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(listed))
	for name, g := range listed {
		if g.GroupType == "share" || g.GroupType == "streams" || (g.ProtocolType != "consumer" && g.ProtocolType != "") {
			continue
		}
		if e.cfg.GroupFilter(name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// fetchOffsets fetches the committed offsets of groups on adm in batches of
// FetchBatch groups, at most 4 batches in flight. Groups whose fetch failed
// have Err set.
func (r *run) fetchOffsets(ctx context.Context, adm *kadm.Client, groups []string) kadm.FetchOffsetsResponses {
	e := r.e
	out := make(kadm.FetchOffsetsResponses, len(groups))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := 0; i < len(groups); i += e.cfg.FetchBatch {
		batch := groups[i:min(i+e.cfg.FetchBatch, len(groups))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
			defer cancel()
			res := adm.FetchManyOffsets(fctx, batch...)
			mu.Lock()
			defer mu.Unlock()
			for _, g := range batch {
				resp, ok := res[g]
				if !ok {
					resp = kadm.FetchOffsetsResponse{Group: g, Err: errors.New("no response for group")}
					if err := fctx.Err(); err != nil {
						resp.Err = err
					}
				}
				out[g] = resp
			}
		})
	}
	wg.Wait()
	return out
}

// emit runs one checkpoint emission (docs/mm2-compat.md §6.4). It reports false when
// listing the groups or fetching some group's offsets failed.
func (r *run) emit(ctx context.Context) bool {
	e := r.e
	c := e.cfg
	ts := time.Now()
	ok := true
	if !e.listedOnce || c.RefreshGroupsInterval > 0 {
		groups, err := r.listGroups(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			e.log.Warn("listing source groups", "cluster", c.SourceAlias, "err", err)
			e.fail("list_groups", err)
			if !e.listedOnce {
				return false
			}
			ok = false
		} else {
			e.knownGroups, e.listedOnce = groups, true
		}
	}
	fetched := r.fetchOffsets(ctx, r.src, e.knownGroups)
	if ctx.Err() != nil {
		return false
	}
	ids := r.topicIDs(ctx, fetched)

	current := make(map[string]bool, len(e.knownGroups))
	var fetchErrs int
	e.storeMu.Lock()
	for _, name := range e.knownGroups {
		current[name] = true
		resp := fetched[name]
		g := e.groups[name]
		if resp.Err != nil {
			fetchErrs++
			if g != nil {
				g.err = resp.Err.Error()
			}
			continue
		}
		g = e.updateGroup(name, g, resp.Fetched, ids, ts)
		if g == nil {
			delete(e.groups, name)
			continue
		}
		e.groups[name] = g
	}
	e.storeMu.Unlock()
	for name := range e.groups {
		if !current[name] {
			delete(e.groups, name) // deleted on the source, or filtered out
		}
	}
	if fetchErrs > 0 {
		err := fmt.Errorf("fetching offsets of %d of %d groups failed", fetchErrs, len(e.knownGroups))
		e.log.Warn("fetching source group offsets", "cluster", c.SourceAlias, "err", err)
		e.fail("fetch_offsets", err)
		ok = false
	}
	// The target's identity and log ends, listed after the translations:
	// checkpoints are never past the target log end, and syncs of a
	// previous target log are discarded (checkTarget).
	remotes := e.remoteTopics()
	if len(remotes) == 0 {
		return ok
	}
	view, err := r.listTarget(ctx, remotes)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("listing the target's remote topics; no checkpoints this round", "cluster", c.TargetAlias, "err", err)
			e.fail("list_target", err)
		}
		return false
	}
	if e.dstCluster != "" && view.cluster != "" && view.cluster != e.dstCluster {
		e.log.Warn("target cluster ID changed (target rebuilt under the same alias): checkpoints topic created again, stale offset syncs discarded",
			"cluster", c.TargetAlias, "was", e.dstCluster, "now", view.cluster)
		if err := r.createTopic(ctx); err != nil {
			e.log.Warn("creating checkpoints topic", "err", err)
		}
	}
	var out []Checkpoint
	e.storeMu.Lock()
	st := e.checkTarget(view)
	e.discardStale(st)
	e.queue(view, st, &out)
	e.storeMu.Unlock()
	r.write(ctx, ts, out)
	return ok
}

// remoteTopics returns the sorted remote topics of the known groups'
// replicated partitions.
func (e *Emitter) remoteTopics() []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range e.groups {
		for _, pe := range g.parts {
			if !seen[pe.remote] {
				seen[pe.remote] = true
				out = append(out, pe.remote)
			}
		}
	}
	sort.Strings(out)
	return out
}

// queue appends to out the checkpoints to write after the target checks:
// per translated partition whose syncs are not stale, when more recent
// than the last checkpoint (MM2's checkpointIsMoreRecent; a stale last
// checkpoint was forgotten, so a lower one is written). Stale partitions
// lose their translation. Callers hold storeMu.
func (e *Emitter) queue(v *targetView, st staleness, out *[]Checkpoint) {
	names := make([]string, 0, len(e.groups))
	for n := range e.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		g := e.groups[name]
		keys := make([]cpKeyTP, 0, len(g.parts))
		for k := range g.parts {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].remote != keys[j].remote {
				return keys[i].remote < keys[j].remote
			}
			return keys[i].partition < keys[j].partition
		})
		for _, k := range keys {
			pe := g.parts[k]
			if _, stale := st.parts[tpKey{topic: pe.topic, partition: pe.partition}]; stale {
				pe.translated, pe.exact, pe.exactReason, pe.reason = -1, false, "", ReasonStaleTarget
				continue
			}
			if pe.translated < 0 {
				continue
			}
			if end, _, ok := v.end(pe.remote, pe.partition); !ok || pe.translated > end {
				continue // the remote partition's end is unknown this round
			}
			cp := Checkpoint{Group: name, Topic: pe.remote, Partition: pe.partition,
				UpstreamOffset: pe.srcOffset, DownstreamOffset: pe.translated, Metadata: pe.metadata}
			if e.cps.Next(cp) {
				e.cps.SetTarget(name, pe.remote, pe.partition, v.id(pe.remote))
				*out = append(*out, cp)
			}
		}
	}
}

// topicIDs returns the current topic IDs of the source topics the fetched
// groups committed on (passing the topic filter), listed after the offsets
// were fetched: a re-created topic's new offsets are never translated with
// the old topic's offset runs. A failed listing leaves IDs unknown (zero),
// which translates with the newest runs of each partition.
func (r *run) topicIDs(ctx context.Context, fetched kadm.FetchOffsetsResponses) map[string][16]byte {
	e := r.e
	seen := map[string]bool{}
	var topics []string
	for _, resp := range fetched {
		for t := range resp.Fetched {
			if !seen[t] && e.cfg.TopicFilter(t) {
				seen[t] = true
				topics = append(topics, t)
			}
		}
	}
	out := make(map[string][16]byte, len(topics))
	if len(topics) == 0 || e.cfg.OffsetRunsTopic == "" {
		return out
	}
	lctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	td, err := r.src.ListTopics(lctx, topics...)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("listing source topic IDs", "cluster", e.cfg.SourceAlias, "err", err)
		}
		return out
	}
	for t, d := range td {
		if d.Err == nil {
			out[t] = d.ID
		}
	}
	return out
}

// updateGroup refreshes a group's partitions from its fetched source
// offsets and translates them. It returns nil for a group without any
// commit. Callers hold storeMu.
func (e *Emitter) updateGroup(name string, old *groupEntry, fetched kadm.OffsetResponses, ids map[string][16]byte, ts time.Time) *groupEntry {
	g := &groupEntry{name: name, parts: map[cpKeyTP]*partEntry{}, fetched: ts}
	if old != nil {
		g.active, g.syncErr = old.active, old.syncErr
	}
	skipped := map[string]bool{}
	commits := 0
	for topic, ps := range fetched {
		for p, o := range ps {
			if o.Err != nil || o.At < 0 {
				continue // no commit, or a null offset entry (MM2 skips both)
			}
			commits++
			if !e.cfg.TopicFilter(topic) {
				skipped[topic] = true
				continue
			}
			remote := e.remoteTopic(topic)
			k := cpKeyTP{remote, p}
			pe := &partEntry{topic: topic, remote: remote, partition: p, srcOffset: o.At, metadata: o.Metadata,
				topicID: ids[topic], translated: -1, targetOffset: -1}
			if old != nil {
				if prev := old.parts[k]; prev != nil {
					pe.targetOffset = prev.targetOffset
				}
			}
			g.parts[k] = pe
			e.translate(pe)
		}
	}
	if commits == 0 {
		return nil
	}
	for t := range skipped {
		g.skipped = append(g.skipped, t)
	}
	sort.Strings(g.skipped)
	return g
}

// translate computes pe's translation (docs/mm2-compat.md §6.4 steps 2-3);
// queue decides on its checkpoint after the target checks. Callers hold
// storeMu.
func (e *Emitter) translate(pe *partEntry) {
	tr := Translator{Syncs: e.store, Runs: e.runs}.Translate(pe.topic, pe.partition, pe.topicID, pe.srcOffset)
	if !tr.OK {
		pe.reason = tr.Reason
		if e.discarded[tpKey{topic: pe.topic, partition: pe.partition}] {
			pe.reason = ReasonStaleTarget
		}
		return
	}
	pe.exactReason = tr.Reason
	pe.translated, pe.exact = tr.Offset, tr.Exact
}

// best returns the best known no-skip target offset for pe's current
// source offset: its translation, or the last checkpoint of the partition
// when that one is for an offset not after the current one and higher
// (translations of older offsets never pass the current position).
func (e *Emitter) best(group string, pe *partEntry) (int64, bool) {
	b := pe.translated
	if last, ok := e.cps.Last(group, pe.remote, pe.partition); ok && last.UpstreamOffset <= pe.srcOffset && last.DownstreamOffset > b {
		b = last.DownstreamOffset
	}
	return b, b >= 0
}

// write produces the checkpoints of one emission to partition 0 and waits
// for their acknowledgement. Checkpoints that failed are forgotten so the
// next emission writes them again.
func (r *run) write(ctx context.Context, ts time.Time, cps []Checkpoint) {
	e := r.e
	if len(cps) == 0 {
		return
	}
	var mu sync.Mutex
	var failed []Checkpoint
	var firstErr error
	for _, cp := range cps {
		k, err := cp.Key()
		var v []byte
		if err == nil {
			v, err = cp.Value()
		}
		if err != nil { // an over-long group id or metadata: cannot be written
			e.log.Warn("checkpoint not encodable", "group", cp.Group, "topic", cp.Topic, "partition", cp.Partition, "err", err)
			failed = append(failed, cp)
			continue
		}
		rec := &kgo.Record{Topic: e.cpTopic, Partition: 0, Key: k, Value: v, Timestamp: ts,
			Headers: e.cps.Target(cp.Group, cp.Topic, cp.Partition).headers()}
		r.dstCl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = append(failed, cp)
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			if e.cfg.OnLatency != nil {
				e.cfg.OnLatency(time.Since(ts))
			}
		})
	}
	if err := r.dstCl.Flush(ctx); err != nil && ctx.Err() == nil {
		e.log.Warn("flushing checkpoints", "err", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, cp := range failed {
		if last, ok := e.cps.Last(cp.Group, cp.Topic, cp.Partition); ok && last == cp {
			e.cps.Forget(cp.Group, cp.Topic, cp.Partition)
		}
	}
	if firstErr != nil && ctx.Err() == nil {
		e.log.Warn("writing checkpoints", "topic", e.cpTopic, "failed", len(failed), "of", len(cps), "err", firstErr)
		e.fail("write_checkpoints", firstErr)
	}
	if e.cfg.OnCheckpoints != nil {
		e.cfg.OnCheckpoints(len(cps) - len(failed))
	}
	if cpwatch.Active() {
		bad := map[Checkpoint]bool{}
		for _, cp := range failed {
			bad[cp] = true
		}
		var ws []cpwatch.Written
		for _, cp := range cps {
			if !bad[cp] {
				ws = append(ws, cpwatch.Written{Group: cp.Group, Topic: cp.Topic, Partition: cp.Partition, Offset: cp.DownstreamOffset})
			}
		}
		cpwatch.Call(ctx, r.dst, ws)
	}
}

// publish recomputes the status snapshot from the Run goroutine's state.
func (e *Emitter) publish() {
	names := make([]string, 0, len(e.groups))
	for n := range e.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]GroupStatus, 0, len(names))
	for _, n := range names {
		out = append(out, e.groupStatus(e.groups[n]))
	}
	e.mu.Lock()
	e.status = out
	e.mu.Unlock()
}

func (e *Emitter) groupStatus(g *groupEntry) GroupStatus {
	gs := GroupStatus{Group: g.name, Updated: g.fetched}
	keys := make([]cpKeyTP, 0, len(g.parts))
	for k := range g.parts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].remote != keys[j].remote {
			return keys[i].remote < keys[j].remote
		}
		return keys[i].partition < keys[j].partition
	})
	translated, done, exact := 0, 0, 0
	firstReason, exactReason := "", ""
	for _, k := range keys {
		pe := g.parts[k]
		ps := PartitionStatus{Topic: pe.topic, RemoteTopic: pe.remote, Partition: pe.partition,
			SourceOffset: pe.srcOffset, Translated: -1, Checkpointed: -1, TargetOffset: pe.targetOffset, Reason: pe.reason}
		if last, ok := e.cps.Last(g.name, pe.remote, pe.partition); ok {
			ps.Checkpointed = last.DownstreamOffset
		}
		if b, ok := e.best(g.name, pe); ok {
			ps.Translated = b
			translated++
			have := ps.Checkpointed
			if e.cfg.SyncGroupOffsets {
				have = pe.targetOffset
				switch {
				case g.active:
					ps.Reason = ReasonActiveOnTarget
				case pe.syncReason != "":
					ps.Reason = pe.syncReason
				case have != b:
					ps.Reason = ReasonNotSyncedYet
				}
			}
			ps.Exact = pe.exact && b == pe.translated
			if !ps.Exact && ps.Reason == "" {
				ps.Reason = pe.exactReason
				if ps.Reason == "" {
					ps.Reason = ReasonNotExact // an earlier checkpoint beats the translation
				}
				if exactReason == "" {
					exactReason = ps.Reason
				}
			}
			if have == b {
				done++
				if ps.Exact {
					exact++
				}
			}
		}
		if ps.Reason != "" && firstReason == "" && ps.Reason != ReasonNotExact && ps.Reason != ReasonBeyondReplicated {
			firstReason = ps.Reason
		}
		gs.Partitions = append(gs.Partitions, ps)
	}
	switch {
	case len(keys) == 0:
		gs.State, gs.Reason = StateSkipped, ReasonTopicNotReplicated
	case e.cfg.SyncGroupOffsets && g.active:
		gs.State, gs.Reason = StateSkipped, ReasonActiveOnTarget
	case translated == 0:
		gs.State, gs.Reason = StateSkipped, firstReason
	case e.cfg.SyncGroupOffsets && done == len(keys):
		gs.State = StateSynced
	default:
		gs.State, gs.Reason = StateCheckpointed, firstReason
	}
	if gs.Reason == "" && g.syncErr != "" {
		gs.Reason = g.syncErr
	}
	if gs.Reason == "" && g.err != "" {
		gs.Reason = "fetching source offsets: " + g.err
	}
	gs.SafeToSwitch = len(keys) > 0 && exact == len(keys) && g.err == "" && !(e.cfg.SyncGroupOffsets && g.active)
	if gs.Reason == "" && !gs.SafeToSwitch {
		gs.Reason = exactReason
	}
	return gs
}
