package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/mm2keys"
	"github.com/kmirror/kmirror/policy"
)

// Defaults of [EmitterConfig] fields left zero. The MM2 keys' defaults
// are the key registry's (internal/mm2keys), shared with package mirror.
const (
	// DefaultEmitInterval is emit.checkpoints.interval.seconds: 60 s, as in MM2.
	DefaultEmitInterval = mm2keys.EmitCheckpointsInterval
	// DefaultSyncInterval is sync.group.offsets.interval.seconds: 60 s, as in MM2.
	DefaultSyncInterval = mm2keys.SyncGroupOffsetsInterval
	// DefaultRefreshGroupsInterval is refresh.groups.interval.seconds
	// (MM2: 600 s). See [EmitterConfig.RefreshGroupsInterval] for how
	// kmirror uses it.
	DefaultRefreshGroupsInterval = mm2keys.RefreshGroupsInterval
	// DefaultAdminTimeout is admin.timeout.ms (MM2: 60000 ms): the bound of
	// one round of admin requests (list groups, fetch offsets, commit).
	DefaultAdminTimeout = mm2keys.AdminTimeout
	// DefaultRecentHistory is the number of most recent offset syncs kept
	// per source partition in addition to MM2's 64 exponentially spaced
	// ones ([WithRecentHistory]): 1024 syncs, at most 16 KiB per partition,
	// allocated only as syncs arrive. A group lagging by less than 1024 ×
	// offset.lag.max records is translated to within offset.lag.max of
	// its position, where MM2 3.5+ re-reads a distance that grows with the
	// group's lag (KAFKA-14666: 64 syncs per partition, spaced roughly by
	// powers of two).
	DefaultRecentHistory = 1024
	// DefaultFetchBatch is the default bound on the groups per OffsetFetch
	// request: 0, none. Every emission fetches all groups in one batched
	// OffsetFetch (v8+, KIP-709; MM2 does the same since KAFKA-17233),
	// which the client splits into one request per group coordinator.
	DefaultFetchBatch = 0
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
	// ReasonBelowTargetLogStart: the translation is below the target
	// partition's log start (the target's retention or DeleteRecords
	// removed the copies of records the group has not consumed yet): group
	// offset sync commits the log start instead (a consumer there skips
	// nothing the target still holds; at the translation it would reset by
	// auto.offset.reset, to the log end by default), and the group is not
	// safe to switch: the removed copies are lost to it on the target.
	ReasonBelowTargetLogStart = "translated offset below target log start (copies removed on the target)"
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
	// from them to write the checkpoints topic and, with SyncGroupOffsets,
	// to fetch and commit target group offsets, plus short-lived readers
	// of the checkpoints topic at start; without TargetAdmin the same
	// client also creates the checkpoints topic and makes the listings.
	TargetOpts []kgo.Opt
	// SourceAdmin, when not nil, is a client of the source cluster the
	// emitter lists groups and topics with, instead of the client it
	// builds from SourceOpts (which still fetches the groups' offsets:
	// large requests at thousands of groups, kept off the caller's
	// client). The caller owns it and closes it after Run returned.
	// Sharing the client that discovers topics keeps one copy of the
	// source's topic metadata in memory instead of two (franz-go caches
	// the metadata of every topic a client asked about: about 0.5 KiB a
	// partition).
	SourceAdmin *kgo.Client
	// TargetAdmin, when not nil, is a client of the target cluster the
	// emitter uses for its metadata and listing requests (the remote
	// topics' IDs and log ends, the target's groups, the checkpoints
	// topic's config), as SourceAdmin for the source. The client built
	// from TargetOpts still writes checkpoints and fetches and commits
	// target group offsets. The caller owns it.
	TargetAdmin *kgo.Client
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
	// offsets are fetched and the changed ones translated and
	// checkpointed. 0 means [DefaultEmitInterval]. Unlike MM2, the first
	// emission happens as soon as the offset syncs are loaded, not one
	// interval after start. An emission costs one batched OffsetFetch per
	// group coordinator plus work in proportion to what changed (group
	// offsets that moved, partitions with new offset syncs); once a minute
	// it also lists every remote topic's log ends on the target.
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
	// -1, the target broker default (MM2: 3). Below -1 is refused.
	ReplicationFactor int16
	// AdminTimeout bounds each round of admin requests; 0 means
	// [DefaultAdminTimeout].
	AdminTimeout time.Duration
	// RecentHistory is the number of recent offset syncs kept per source
	// partition on top of MM2's 64 slots ([WithRecentHistory]); 0 means
	// [DefaultRecentHistory], negative keeps MM2's 64 slots only.
	RecentHistory int
	// FetchBatch bounds the number of groups per OffsetFetch request, 4
	// requests in flight; 0 (or negative) means no bound
	// ([DefaultFetchBatch]): one request per group coordinator.
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
	if c.ReplicationFactor < -1 {
		return c, fmt.Errorf("checkpoint: ReplicationFactor (checkpoints.topic.replication.factor) is %d: it must be positive, or -1 (or 0) for the broker default", c.ReplicationFactor)
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
	c.FetchBatch = max(c.FetchBatch, 0)
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
	// and skips 0. The target group's offset is the one offset sync last
	// fetched or committed: an idle group's are fetched again when its
	// translations or its state on the target change, and at a sweep
	// every minute (every SyncInterval when longer), so another client's
	// commit into it shows by the next sweep. It needs kmirror's offset
	// runs ([EmitterConfig.OffsetRunsTopic]); with offset syncs alone it
	// is false.
	SafeToSwitch bool
	// Partitions are the group's replicated partitions, sorted by remote
	// topic and partition. Read only: the snapshots of [Emitter.Status]
	// share one slice while the group does not change, and the emitter
	// never modifies a slice it published (a change makes a new one).
	Partitions []PartitionStatus
	// Updated is when the group's source offsets were last fetched.
	Updated time.Time
	// SourceUnreachable is true when the last fetch of the group's source
	// offsets failed (the source cluster does not answer; Reason has the
	// error). SafeToSwitch is then false: nothing proves the group did not
	// move on the source since Updated. In an unplanned failover look at
	// LastCheckpoint (the recovery point) and CheckpointExact instead.
	SourceUnreachable bool
	// LastCheckpoint is when the last checkpoint of the group was written
	// (the record's timestamp, for checkpoints loaded from the topic at
	// start); zero when none is known. A consumer failing over re-reads at
	// least what the group processed on the source after it.
	LastCheckpoint time.Time
	// CheckpointExact is true when the last checkpoint of every partition
	// the group committed is the exact translation of the source offset
	// last fetched (see [PartitionStatus.CheckpointExact]): with the
	// source gone, a consumer resuming at the checkpoints re-reads only
	// what the group processed after LastCheckpoint.
	CheckpointExact bool
}

// PartitionStatus is the state of one partition of a [GroupStatus]. Offsets
// are -1 when unknown.
type PartitionStatus struct {
	// Topic is the source topic; RemoteTopic its name on the target.
	Topic       string `json:"topic"`
	RemoteTopic string `json:"remote_topic"`
	Partition   int32  `json:"partition"`
	// Exact reports that Translated is the exact translation of
	// SourceOffset (see the package documentation).
	Exact bool `json:"exact"`
	// CheckpointExact reports that Checkpointed is the exact translation of
	// SourceOffset (the checkpoint's [TranslationHeader] is "exact").
	CheckpointExact bool `json:"checkpoint_exact"`
	// SourceOffset is the group's committed offset on the source.
	SourceOffset int64 `json:"source_offset"`
	// Translated is the best known target offset for SourceOffset: the
	// translation of the current offset, or the last checkpoint written for
	// an offset not after it when that one is higher (-1 when none).
	Translated int64 `json:"translated"`
	// Checkpointed is the downstream offset of the last checkpoint written
	// for the partition (loaded from the topic at start or acknowledged).
	Checkpointed int64 `json:"checkpointed"`
	// TargetOffset is the group's committed offset on the target as last
	// seen or committed by offset sync (-1 when unknown or sync is off).
	TargetOffset int64 `json:"target_offset"`
	// Reason says why the partition has no translation or is not synced.
	Reason string `json:"reason,omitempty"`
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
//     offsets in one batched OffsetFetch per group coordinator, translate
//     those that moved (and those of partitions with new offset syncs or
//     runs), list the target's cluster ID, remote topic IDs and log ends
//     of their remote topics (of every remote topic once a minute), and
//     write to partition 0 the checkpoints that are more recent than the
//     last one written for the group and partition (MM2's
//     checkpointIsMoreRecent: none written yet, a greater downstream
//     offset, or an upstream offset that went back); an unchanged
//     checkpoint is never written again, which is why the checkpoints
//     topic must be compacted ([RetentionError]); unlike MM2, offset syncs
//     of a previous target log (a target rebuilt under the same alias, a
//     remote topic re-created or truncated) are discarded, and a
//     checkpoint of such a log is replaced even by a lower one, so that no
//     checkpoint is past the target's log end; checkpoints record the
//     target cluster in a header ([TargetClusterHeader]), and the remote
//     topic ID when the syncs and runs they were translated from record
//     it ([TargetTopicIDHeader], [TranslatedFromHeader]);
//   - with SyncGroupOffsets, every SyncInterval: commit the translations
//     into the groups that have no active members on the target, never
//     moving a group's offset backwards nor past the target log end; a
//     target group committed past the log end is reported
//     ([ReasonTargetPastLogEnd]) and left as it is. A round lists the
//     target's groups and fetches the idle ones' offsets (one batched
//     OffsetFetch per coordinator), and plans only the groups whose
//     translations moved or whose target state or offsets changed.
type Emitter struct {
	cfg       EmitterConfig
	log       *slog.Logger
	cpTopic   string
	startOnce sync.Once

	// storeMu guards store, runs, their tags, discarded and changed; the
	// syncs tailer adds, the emissions translate.
	storeMu sync.Mutex
	store   *OffsetSyncStore
	runs    *RunStore
	// syncTags and runTags are the target log recorded
	// ([TargetClusterHeader], [TargetTopicIDHeader]) on the newest sync
	// and run of each source partition; empty fields when not recorded
	// (MM2, older kmirror).
	syncTags, runTags map[tpKey]targetID
	// discarded holds the source partitions whose syncs and runs were
	// discarded as stale and that have had none since.
	discarded map[tpKey]bool
	// changed holds the source partitions whose syncs, runs or tags
	// changed since the last emission took the set: only their group
	// partitions are translated again. retagged holds those whose sync or
	// run history restarted since (a record tagged for another target
	// log, or the first recording a remote topic ID after records
	// recording none: tagged), which the emission's translations may
	// predate: they are held for one emission (their status says
	// ReasonStaleTarget meanwhile, also after a harmless switch from MM2's
	// replicator to kmirror's).
	changed, retagged map[tpKey]struct{}

	// The fields below are owned by the Run goroutine (emit.go).
	cps         *checkpointState
	groups      map[string]*groupEntry
	names       []string // sorted names of groups, nil when to be rebuilt
	knownGroups []string // source groups passing the filter, from the last listing
	listedOnce  bool
	dstCluster  string              // target cluster ID at the last listing
	remoteIDs   map[string][16]byte // remote topic IDs at their last listing
	remoteEnds  map[cpKeyTP]int64   // remote partitions' log ends at their last listing
	remoteGone  map[string]bool     // remote topics missing at their last listing (statuses)
	srcIDs      map[string][16]byte // source topic IDs at their last listing
	// retired holds per remote topic the IDs a listing showed replaced by
	// another: Kafka never gives a topic ID twice, so a listing showing
	// one again is behind (a broker's stale metadata).
	retired map[string]map[[16]byte]bool
	// candidate holds per remote topic a retired ID the last listing
	// showed: it is current again if the next listing shows it too.
	candidate map[string][16]byte
	// byPart indexes the group partitions by source partition (in no
	// order); remoteRefs counts them by remote topic.
	byPart     map[tpKey][]*partEntry
	remoteRefs map[string]int
	// remotes caches the remote name of each source topic, sourceOf the
	// reverse, replicated the topic filter's verdicts of one emission.
	remotes    map[string]string
	topicRefs  map[string]*topicRef // by source topic: the names its group partitions share
	sourceOf   map[string]string
	replicated map[string]bool
	// pending are the group partitions checked again at the next emission
	// (a log end unknown, a failed write or listing).
	pending map[*partEntry]struct{}
	waiting int // group partitions waiting for their first sync (waitingForSyncs)
	// syncsIn is signalled (never blocking) by the syncs tailer after it
	// added offset syncs or runs: Run emits early if some of them are for a
	// waiting partition.
	syncsIn chan struct{}
	stamp   uint32
	// full makes every emission and sync a full recomputation (tests).
	full bool
	// sweepEvery is how often an emission lists every remote and source
	// topic (targetSweepInterval); nextSweep is when the next one is due,
	// zero at the first emission; forceSweep asks for one at the next
	// emission (a sync round that found a remote topic under a new ID;
	// tests).
	sweepEvery time.Duration
	nextSweep  time.Time
	forceSweep bool
	// nextSyncSweep is when group offset sync next fetches every idle
	// target group's offsets (zero: at the next round); forceSyncSweep
	// asks for it at the next round (tests).
	nextSyncSweep  time.Time
	forceSyncSweep bool
	// syncBatch is how many groups a sync round plans at a time
	// (defaultSyncBatch; smaller in tests).
	syncBatch   int
	statusDirty bool                 // the published snapshot must be rebuilt
	cpAt        map[string]time.Time // by group: when its last checkpoint was written

	// writeErr is the first error of the last write of checkpoints (nil:
	// none failed); Run goroutine.
	writeErr error
	// cpTopicErr is why the checkpoints topic, found missing, could not
	// be created again (nil: it exists); Run goroutine (cptopic.go).
	cpTopicErr error

	work workCounters

	mu     sync.Mutex // guards status
	status []GroupStatus
}

// NewEmitter validates cfg and returns an Emitter. It does no I/O and starts
// no goroutine. Errors name the missing or invalid field.
func NewEmitter(cfg EmitterConfig) (*Emitter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Emitter{
		cfg:        cfg,
		log:        cfg.Logger.With("task", "checkpoint"),
		cpTopic:    cfg.Policy.CheckpointsTopic(cfg.SourceAlias),
		cps:        newCheckpointState(),
		groups:     map[string]*groupEntry{},
		syncTags:   map[tpKey]targetID{},
		runTags:    map[tpKey]targetID{},
		discarded:  map[tpKey]bool{},
		changed:    map[tpKey]struct{}{},
		retagged:   map[tpKey]struct{}{},
		remoteIDs:  map[string][16]byte{},
		retired:    map[string]map[[16]byte]bool{},
		candidate:  map[string][16]byte{},
		remoteEnds: map[cpKeyTP]int64{},
		remoteGone: map[string]bool{},
		srcIDs:     map[string][16]byte{},
		byPart:     map[tpKey][]*partEntry{},
		remoteRefs: map[string]int{},
		remotes:    map[string]string{},
		topicRefs:  map[string]*topicRef{},
		sourceOf:   map[string]string{},
		replicated: map[string]bool{},
		pending:    map[*partEntry]struct{}{},
		sweepEvery: targetSweepInterval,
		syncBatch:  defaultSyncBatch,
		cpAt:       map[string]time.Time{},
		syncsIn:    make(chan struct{}, 1),
	}, nil
}

// CheckpointsTopic returns the name of the topic the emitter writes:
// Policy.CheckpointsTopic(SourceAlias), e.g. "us-west.checkpoints.internal".
func (e *Emitter) CheckpointsTopic() string { return e.cpTopic }

// Status returns the state of every group passing the group filter that
// has committed offsets on the source, sorted by group id, as of the last
// emission or sync. It does no I/O; it may wait for an emission or sync
// publishing its statuses (tens of milliseconds when thousands of groups
// changed). The slice returned is the caller's; its Partitions are shared
// and never modified.
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
	srcAdm := c.SourceAdmin
	if srcAdm == nil {
		srcAdm = srcCl
	}
	r := &run{e: e, src: kadm.NewClient(srcAdm), srcCl: srcCl}
	r.src.SetTimeoutMillis(int32(c.AdminTimeout / time.Millisecond))
	if err := r.newTargetClient(); err != nil {
		return err
	}
	defer func() { r.dstCl.Close() }() // replaced when the checkpoints topic is (cptopic.go)

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
	var lastEmit time.Time
	nextEmit := time.Now() // when emitT fires
	schedule := func(d time.Duration) {
		emitT.Reset(d)
		nextEmit = time.Now().Add(d)
	}
	bySyncs := false // the pending emission was brought forward by syncs of waiting partitions
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-e.syncsIn:
			// Syncs or runs arrived. Outside the eager window, emit early
			// (at most every eagerInterval) only if some are for a
			// partition waiting for its first translation: a partition
			// that never gets one (an empty source partition a group
			// committed 0 on, as Java consumers do) must not make every
			// emission eager for good (found by a breaker: one OffsetFetch
			// of every group every second, forever).
			now := time.Now()
			if waiting == 0 || now.Before(eagerUntil) || !e.syncsForWaiting() {
				continue
			}
			at := lastEmit.Add(eagerInterval)
			if at.Before(now) {
				at = now
			}
			if at.Before(nextEmit) {
				schedule(at.Sub(now))
				bySyncs = true
			}
			continue
		case <-emitT.C:
			lastEmit = time.Now()
			if r.emit(ctx) {
				retry = 0
				schedule(period)
			} else {
				retry = backoff(retry)
				schedule(min(retry, period))
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
			// became translatable. Past that window, partitions still
			// waiting make the next emission early only when syncs for
			// them arrive (the syncsIn case above).
			nowWaiting := e.waitingForSyncs()
			if nowWaiting < waiting {
				eagerUntil = time.Now().Add(eagerWindow)
			}
			inWindow := time.Now().Before(eagerUntil)
			eager := inWindow || bySyncs
			bySyncs = false
			if inWindow {
				schedule(min(period, eagerInterval))
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

// syncsForWaiting reports whether a source partition whose syncs or runs
// changed since the last emission has a group partition waiting for its
// first translation (Run goroutine only: it owns byPart).
func (e *Emitter) syncsForWaiting() bool {
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	for k := range e.changed {
		for _, pe := range e.byPart[k] {
			if pe.waiting {
				return true
			}
		}
	}
	return false
}

// waitingForSyncs counts the committed partitions of known groups that have
// no offset sync yet, or none since their stale ones were discarded. Run
// goroutine only; kept up to date as partitions change (setWaiting).
func (e *Emitter) waitingForSyncs() int { return e.waiting }

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
	e            *Emitter
	src, dst     *kadm.Client
	srcCl, dstCl *kgo.Client
	// The checkpoints topic's state (cptopic.go): its ID as last listed
	// (zero: unknown), whether a write found it missing or replaced, and
	// when it is next listed.
	cpID        [16]byte
	cpLost      bool
	nextCPCheck time.Time
}

// newTargetClient builds the client that writes the checkpoints topic and
// fetches and commits target group offsets (r.dstCl), and r.dst when the
// configuration gives no TargetAdmin. Run goroutine: Run builds it, and
// builds it again for a re-created checkpoints topic (kgo keeps the topic
// ID it knows for a name and fails every record with UNKNOWN_TOPIC_ID).
func (r *run) newTargetClient() error {
	c := r.e.cfg
	cl, err := kclient.New(append(append([]kgo.Opt{}, c.TargetOpts...),
		kgo.DefaultProduceTopic(r.e.cpTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordDeliveryTimeout(c.AdminTimeout),
	)...)
	if err != nil {
		return fmt.Errorf("checkpoint: target %s client: %w", c.TargetAlias, err)
	}
	old := r.dstCl
	r.dstCl = cl
	if c.TargetAdmin == nil || r.dst == nil {
		adm := c.TargetAdmin
		if adm == nil {
			adm = cl
		}
		r.dst = kadm.NewClient(adm)
		r.dst.SetTimeoutMillis(int32(c.AdminTimeout / time.Millisecond))
	}
	if old != nil {
		old.Close()
	}
	return nil
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
// createSinglePartitionCompactedTopic. Already exists is not an error, nor
// is an authorization failure when the topic was created in advance
// (KAFKA-15465): it must then be compacted. A refused creation of a
// missing topic is an error naming the ACL and how to create the topic
// (ensuretopic).
//
// The emitter writes a checkpoint only when it changes, so an existing
// topic must keep the last record of every key for ever: cleanup.policy
// compact, or compact,delete with retention.ms=-1. A topic whose records
// expire (cleanup.policy=delete, or compact,delete with a retention) is
// refused with a *RetentionError, at start, before anything is written:
// the checkpoints of idle groups would be deleted.
func (r *run) createTopic(ctx context.Context) error {
	e := r.e
	cctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	compact := "compact"
	res, err := ensuretopic.Ensure(cctx, r.dst, ensuretopic.Spec{Topic: e.cpTopic, Cluster: e.cfg.TargetAlias, Partitions: 1,
		ReplicationFactor: e.cfg.ReplicationFactor, Configs: map[string]*string{"cleanup.policy": &compact},
		RequireCompact: true, Log: e.log})
	if err != nil {
		return err
	}
	if res.Created {
		e.log.Info("created checkpoints topic", "topic", e.cpTopic, "cluster", e.cfg.TargetAlias)
		return nil
	}
	return r.checkRetention(cctx)
}

// RetentionError is returned, and logged at every start-up attempt (at run
// time: logged and every group's status), when the checkpoints topic exists
// (or is re-created, or altered) with a cleanup.policy that deletes records
// (delete, or compact,delete with retention.ms other than -1): the emitter
// writes a checkpoint only when it changes (MM2's rule), so the
// checkpoint of an idle group would expire. Alter the topic to
// cleanup.policy=compact (kafka-configs.sh --alter --add-config
// cleanup.policy=compact), or set retention.ms=-1.
type RetentionError struct {
	// Topic is the checkpoints topic; Cluster its cluster's alias.
	Topic, Cluster string
	// Policy is its cleanup.policy, Retention its retention.ms.
	Policy, Retention string
}

// Error names the topic, its settings and the fix.
func (e *RetentionError) Error() string {
	return fmt.Sprintf("checkpoints topic %s on %s has cleanup.policy=%s and retention.ms=%s: its records expire, and kmirror writes a checkpoint only when it changes, so the checkpoints of idle groups would be deleted; set cleanup.policy=compact (or retention.ms=-1)",
		e.Topic, e.Cluster, e.Policy, e.Retention)
}

// checkRetention refuses an existing checkpoints topic whose records
// expire (RetentionError). Without DESCRIBE_CONFIGS the topic is taken as
// it is, as ensuretopic does.
func (r *run) checkRetention(ctx context.Context) error {
	e := r.e
	rcs, err := r.dst.DescribeTopicConfigs(ctx, e.cpTopic)
	var rc kadm.ResourceConfig
	if err == nil {
		rc, err = rcs.On(e.cpTopic, nil)
	}
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		if isAuthErr(err) {
			return nil // ensuretopic logged that it cannot check
		}
		return fmt.Errorf("describing the configs of %s on %s: %w", e.cpTopic, e.cfg.TargetAlias, err)
	}
	policy, retention := "", ""
	for _, c := range rc.Configs {
		if c.Value == nil {
			continue
		}
		switch c.Key {
		case "cleanup.policy":
			policy = *c.Value
		case "retention.ms":
			retention = *c.Value
		}
	}
	deletes := false
	for _, p := range strings.Split(policy, ",") {
		if strings.TrimSpace(p) == "delete" {
			deletes = true
		}
	}
	if deletes && retention != "-1" {
		return &RetentionError{Topic: e.cpTopic, Cluster: e.cfg.TargetAlias, Policy: policy, Retention: retention}
	}
	return nil
}

// remoteTopic names a source topic on the target (docs/mm2-compat.md §6.4 step 3).
func (e *Emitter) remoteTopic(topic string) string {
	p := e.cfg.Policy
	if src, ok := p.TopicSource(topic); ok && src == e.cfg.TargetAlias {
		return p.OriginalTopic(topic)
	}
	return p.FormatRemoteTopic(e.cfg.SourceAlias, topic)
}
