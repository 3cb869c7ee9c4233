package mirror

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/cpwatch"
	"github.com/kmirror/kmirror/internal/mm2filter"
	"github.com/kmirror/kmirror/internal/mm2keys"
	"github.com/kmirror/kmirror/policy"
)

// Defaults of the flow settings. Where a default differs from Apache MM2's,
// the comment says so and why. The values are the MM2 key registry's
// (internal/mm2keys), which the properties loader, the checkpoint and
// heartbeat emitters and the effective-configuration dump read too.
const (
	// DefaultRefreshTopicsInterval is refresh.topics.interval.seconds: 600 s, as in MM2.
	DefaultRefreshTopicsInterval = mm2keys.RefreshTopicsInterval
	// DefaultSyncTopicConfigsInterval is sync.topic.configs.interval.seconds: 600 s, as in MM2.
	DefaultSyncTopicConfigsInterval = mm2keys.SyncTopicConfigsInterval
	// DefaultSyncTopicACLsInterval is sync.topic.acls.interval.seconds: 600 s, as in MM2.
	DefaultSyncTopicACLsInterval = mm2keys.SyncTopicACLsInterval
	// DefaultOffsetFlushInterval is offset.flush.interval.ms. kmirror
	// defaults to 5 s where Connect defaults to 60 s: it bounds the records
	// replicated twice after a crash (at most the records acknowledged
	// within one interval) and how stale the time-based offset sync can be.
	DefaultOffsetFlushInterval = mm2keys.OffsetFlushInterval
	// DefaultEmitCheckpointsInterval is emit.checkpoints.interval.seconds: 60 s, as in MM2.
	DefaultEmitCheckpointsInterval = mm2keys.EmitCheckpointsInterval
	// DefaultSyncGroupOffsetsInterval is sync.group.offsets.interval.seconds: 60 s, as in MM2.
	DefaultSyncGroupOffsetsInterval = mm2keys.SyncGroupOffsetsInterval
	// DefaultRefreshGroupsInterval is refresh.groups.interval.seconds: 600 s, as in MM2.
	DefaultRefreshGroupsInterval = mm2keys.RefreshGroupsInterval
	// DefaultEmitHeartbeatsInterval is emit.heartbeats.interval.seconds: 1 s, as in MM2.
	DefaultEmitHeartbeatsInterval = mm2keys.EmitHeartbeatsInterval
	// DefaultAdminTimeout is admin.timeout.ms: 60000 ms, as in MM2.
	DefaultAdminTimeout = mm2keys.AdminTimeout
	// DefaultOffsetLagMax is offset.lag.max: 100 records, as in MM2.
	DefaultOffsetLagMax = mm2keys.OffsetLagMax
	// OffsetLagMaxEveryRecord, as FlowConfig.OffsetLagMax, emits an offset
	// sync for every replicated record: MM2's offset.lag.max=0 (0 in
	// FlowConfig means "the default").
	OffsetLagMaxEveryRecord = -1
	// DefaultMaxBufferedBytes bounds the bytes of records a flow holds in
	// its target producer's buffer (kgo.MaxBufferedBytes): 32 MiB, the same
	// as MM2's producer (buffer.memory 33554432).
	DefaultMaxBufferedBytes = mm2keys.MaxBufferedBytes
	// DefaultFetchMaxBytes is a flow's fetch budget (kgo.FetchMaxBytes):
	// 16 MiB, shared by its slots (each slot's consumer fetches at most
	// max(16 MiB / Tasks, 1 MiB) per response, counted decompressed, and holds
	// up to two responses per source broker). MM2's consumer uses Kafka's
	// default, 50 MiB (52428800), per task, counted as stored.
	DefaultFetchMaxBytes = mm2keys.FetchMaxBytes
	// DefaultTasks is tasks.max for kmirror: the number of units of work
	// (slots) a flow's source partitions are spread over, which is also the
	// most members that can share a flow's replication. MM2 defaults to 1
	// task; kmirror to 8 so that a second process can take a share without
	// an offline change (the number of slots is fixed while members run).
	DefaultTasks = mm2keys.Tasks
	// DefaultSessionTimeout is session.timeout.ms of a flow's group of
	// members: 10 s (Connect's default; Kafka clients default to 45 s): a
	// member that stops heartbeating loses its slots after this long.
	DefaultSessionTimeout = mm2keys.SessionTimeout
	// DefaultHeartbeatInterval is heartbeat.interval.ms of a flow's group
	// of members: 3 s (Connect's default).
	DefaultHeartbeatInterval = mm2keys.HeartbeatInterval
	// DefaultRebalanceTimeout is rebalance.timeout.ms of a flow's group of
	// members: 60 s (Connect's default): how long a member may take to hand
	// its slots over (flush, store resume points) in a rebalance.
	DefaultRebalanceTimeout = mm2keys.RebalanceTimeout
	// DefaultTransactionMaxRecords caps the records of one exactly-once
	// transaction.
	DefaultTransactionMaxRecords = 100_000
	// DefaultOpenTransactionAfter is how long a source partition may be
	// held at its last stable offset before it is reported as blocked by
	// an open source transaction.
	DefaultOpenTransactionAfter = time.Minute
	// DefaultFetchMaxPartitionBytes bounds the bytes fetched per partition
	// per request (kgo.FetchMaxPartitionBytes, max.partition.fetch.bytes):
	// 1 MiB, Kafka's default, as in MM2.
	DefaultFetchMaxPartitionBytes = mm2keys.FetchMaxPartitionBytes
)

// Default filter lists of MM2 (DefaultTopicFilter, DefaultGroupFilter,
// DefaultConfigPropertyFilter). Each entry is a regular expression that
// must match a whole name.
var (
	// DefaultTopicsExclude is topics.exclude's default in Apache Kafka 4.0
	// and later (DefaultTopicFilter, KAFKA-17200), mm2.*\.internal,
	// .*\.replica and __.*: MM2's own topics
	// (mm2-offset-syncs.B.internal, mm2-offsets.A.internal, ...), replica
	// topics and names starting with "__". User topics that merely look
	// internal (billing.internal, audit-internal) are replicated when topics
	// selects them. Kafka 3.x excluded `.*[\-\.]internal` instead, so such
	// topics were never replicated; a properties file that sets that list
	// keeps the 3.x behaviour.
	DefaultTopicsExclude = mm2keys.TopicsExclude
	// DefaultGroupsExclude is groups.exclude's default, as in MM2:
	// console-consumer-.*, connect-.* and __.* (so a group named
	// connect-orders is never checkpointed unless GroupsExclude is set).
	DefaultGroupsExclude = mm2keys.GroupsExclude
	// DefaultConfigPropertiesExclude is config.properties.exclude's default:
	// topic configs never copied to remote topics, neither at creation nor
	// by config sync. It is Apache Kafka 4.3's list plus the topic-level
	// timestamp guards message.timestamp.before.max.ms and
	// message.timestamp.after.max.ms, a deliberate difference from MM2.
	// MM2 4.3 lists only the broker keys log.message.timestamp.before.max.ms
	// and log.message.timestamp.after.max.ms (KAFKA-20163), which never
	// match a topic's config, so it copies a source topic's guard to the
	// remote topic; the target then refuses every copied record older (or
	// newer) than the guard allows with INVALID_TIMESTAMP, and the history
	// of the topic is never copied. The deprecated
	// message.timestamp.difference.max.ms is excluded for the same reason
	// (MM2 does too). Config sync also deletes such a guard from a remote
	// topic when it holds the value the source topic has, as an earlier
	// kmirror copied it there.
	//
	// message.timestamp.type stays excluded, as in MM2: LogAppendTime on
	// the remote topic would make the target broker overwrite every copied
	// record's timestamp with the time it was written there.
	DefaultConfigPropertiesExclude = mm2keys.ConfigPropertiesExclude
)

// GapPolicy says what a flow does when the source no longer has records it
// has not replicated yet (retention deleted them, or the topic was deleted
// and re-created). Compaction holes and transaction markers are not gaps.
type GapPolicy int

const (
	// GapContinue reports the gap (status, metric, log with the offsets)
	// and continues from the earliest available record. The default.
	GapContinue GapPolicy = iota
	// GapStop reports the gap and stops the partition with a
	// [*GapError] in its status; the rest of the flow continues.
	GapStop
)

// String returns "continue" or "stop".
func (g GapPolicy) String() string {
	switch g {
	case GapContinue:
		return "continue"
	case GapStop:
		return "stop"
	}
	return fmt.Sprintf("GapPolicy(%d)", int(g))
}

// StartOffset says where a flow starts reading a source partition that has no
// resume point yet. It follows the source consumer's auto.offset.reset
// (MM2 honours "latest" since KAFKA-13988; it forced "earliest" before, so
// a first start copied the whole history whatever the setting).
type StartOffset int

const (
	// StartEarliest replicates a new partition from its log start (MM2 default).
	StartEarliest StartOffset = iota
	// StartLatest replicates only records produced after the partition was
	// first seen (auto.offset.reset=latest).
	StartLatest
)

// ClusterConfig describes how to reach one cluster, named by its alias.
// The kgo options are the franz-go form of MM2's cluster settings
// (`<alias>.bootstrap.servers`, `<alias>.security.protocol`, ...).
type ClusterConfig struct {
	// Alias is the cluster alias (MM2 `clusters` entry), e.g. "us-east-1".
	Alias string
	// Client options apply to every client kmirror creates for this
	// cluster: at least kgo.SeedBrokers; TLS, SASL and client id go here too.
	// Pass connection settings, not a service's consumer options: [New]
	// refuses, in any of these lists, a consumer-group option (a
	// kgo.GroupOpt such as kgo.ConsumerGroup), which kmirror's clients
	// would apply (joining that group), and an option choosing what a
	// consumer reads (kgo.ConsumeTopics, ConsumeRegex,
	// ConsumeExcludeTopics, ConsumePartitions, ConsumeResetOffset,
	// ConsumeStartOffset), which kmirror's consumers decide themselves: set
	// FlowConfig.Topics, TopicsExclude and StartOffset instead.
	Client []kgo.Opt
	// Consumer options apply to consumers reading this cluster
	// (`<alias>.consumer.*`), after Client. The replication consumer then
	// sets what the flow decides, which wins over an option here: its
	// isolation level (FlowConfig.Isolation, MM2's
	// consumer.isolation.level), its fetch sizes (FlowConfig.FetchMaxBytes
	// and FetchMaxPartitionBytes), its partitions and start offsets, and
	// that it keeps transaction markers; set those through FlowConfig.
	Consumer []kgo.Opt
	// Producer options apply to producers writing to this cluster
	// (`<alias>.producer.*`), after Client. [New] refuses a
	// kgo.TransactionalID here or in Client (kmirror sets the
	// transactional ids of its exactly-once producers itself, see
	// FlowConfig.ExactlyOnce), and, for a flow with ExactlyOnce into this
	// cluster, options that disable idempotent writes
	// (kgo.DisableIdempotentWrite, acks other than all).
	Producer []kgo.Opt
	// Admin options apply to admin clients of this cluster
	// (`<alias>.admin.*`), after Client.
	Admin []kgo.Opt
}

// FlowConfig configures one replication flow Source->Target (MM2's
// `<source>-><target>.*` keys). The zero value of every field means MM2's
// default (or kmirror's, where the field says it differs), so a literal
// FlowConfig{Source: "a", Target: "b"} is a complete flow.
type FlowConfig struct {
	// Source and Target are cluster aliases configured with [WithCluster].
	Source, Target string

	// Disabled turns off replication and checkpoints for the pair while
	// heartbeats are still emitted unless DisableHeartbeats is set: MM2's
	// `A->B.enabled=false` herder that exists for heartbeats only (in
	// dedicated mode every ordered pair of clusters runs a heartbeat
	// connector unless its heartbeats are disabled; KAFKA-10710).
	Disabled bool

	// Topics is `topics`: regexes (Go RE2 syntax, full match) of source
	// topics to replicate. nil means [".*"]; an empty non-nil slice
	// replicates no topic. As in MM2, the entries of this list and of the
	// other filter lists are joined with "|" into one regex, so an entry
	// may be a piece of a regex that MM2's list parsing cut at a comma
	// ("(orders", "payments)" is (orders|payments)); a list whose joined
	// form Java refuses ("orders-[0-9]{1", "3}") is a *ConfigError, where
	// MM2's connector fails at start.
	Topics []string
	// TopicsExclude is `topics.exclude`; nil means [DefaultTopicsExclude].
	TopicsExclude []string
	// Groups is `groups` (consumer groups to checkpoint); nil means [".*"].
	Groups []string
	// GroupsExclude is `groups.exclude`; nil means [DefaultGroupsExclude].
	GroupsExclude []string
	// ConfigPropertiesExclude is `config.properties.exclude`; nil means
	// [DefaultConfigPropertiesExclude]. A list of its own is used as
	// written: one that lets the timestamp guards through
	// (message.timestamp.before.max.ms, message.timestamp.after.max.ms,
	// message.timestamp.difference.max.ms) copies them to remote topics,
	// where they refuse old records (LoadProperties warns about it).
	ConfigPropertiesExclude []string
	// UseDefaultsFromSource is `use.defaults.from=source`: copy the source
	// topic's default-valued configs too. MM2 default: target.
	UseDefaultsFromSource bool

	// Policy names remote topics and internal topics
	// (`replication.policy.class`, `.separator`,
	// `.internal.topic.separator.enabled`). nil means policy.Default with
	// separator ".". An identity policy is made with the flow's source
	// alias (MM2's source.cluster.alias), or with "", and its error
	// checked: `pol, err := policy.NewIdentity("us-east-1")`; New refuses
	// an identity policy of any other alias.
	Policy policy.ReplicationPolicy

	// ReplicationFactor is `replication.factor` for remote topics. 0 means
	// -1, the target broker's default.replication.factor; MM2 defaults to 2,
	// which cannot create topics on a one-broker cluster. New refuses a
	// value below -1 in this and the other replication factors.
	ReplicationFactor int16
	// OffsetSyncsTopicReplicationFactor is
	// `offset-syncs.topic.replication.factor`; 0 means the broker default
	// (MM2: 3).
	OffsetSyncsTopicReplicationFactor int16
	// CheckpointsTopicReplicationFactor is
	// `checkpoints.topic.replication.factor`; 0 means the broker default (MM2: 3).
	CheckpointsTopicReplicationFactor int16
	// HeartbeatsTopicReplicationFactor is
	// `heartbeats.topic.replication.factor`; 0 means the broker default (MM2: 3).
	HeartbeatsTopicReplicationFactor int16
	// OffsetStorageReplicationFactor is `offset.storage.replication.factor`
	// for mm2-offsets.<source>.internal; 0 means the broker default (MM2: 3).
	OffsetStorageReplicationFactor int16

	// OffsetSyncsTopicLocationTarget is `offset-syncs.topic.location=target`:
	// offset syncs go to mm2-offset-syncs.<source>.internal on the target
	// instead of mm2-offset-syncs.<target>.internal on the source.
	OffsetSyncsTopicLocationTarget bool
	// OffsetLagMax is `offset.lag.max` in records; 0 means 100;
	// [OffsetLagMaxEveryRecord] (or any other negative value) syncs every
	// record (MM2's 0, and MM2 reads a negative value the same way).
	OffsetLagMax int64

	// DisableRefreshTopics is `refresh.topics.enabled=false`: remote topics
	// and partitions are created at the start only (and a remote topic
	// deleted on the target while its topic replicates is created again);
	// source topics and partitions added after the start are not
	// replicated, as in MM2.
	DisableRefreshTopics bool
	// RefreshTopicsInterval is `refresh.topics.interval.seconds`; 0 means
	// [DefaultRefreshTopicsInterval]. It must not be negative: to turn the
	// refresh off set DisableRefreshTopics (what the properties loader does
	// for a negative value, which MM2 treats as "never").
	RefreshTopicsInterval time.Duration
	// DisableTopicConfigSync is `sync.topic.configs.enabled=false`.
	//
	// Config sync deliberately differs from MM2's: a key only the remote
	// topic sets is never reverted (MM2 deletes every override of a key
	// the source leaves at its default, at every sync; kmirror deletes
	// only an override it copied that the source dropped while the flow
	// ran), and with the
	// identity policy in both directions in one Mirror a flow copies a key
	// only when its source's value changed, so neither flow reverts a
	// change made on the other cluster (README, "Remote topic configs").
	DisableTopicConfigSync bool
	// SyncTopicConfigsInterval is `sync.topic.configs.interval.seconds`; 0
	// means [DefaultSyncTopicConfigsInterval]. It must not be negative: to
	// turn the sync off set DisableTopicConfigSync (what the properties
	// loader does for a negative value, which MM2 treats as "never").
	SyncTopicConfigsInterval time.Duration
	// DisableTopicACLSync is `sync.topic.acls.enabled=false`.
	DisableTopicACLSync bool
	// SyncTopicACLsInterval is `sync.topic.acls.interval.seconds`; 0 means
	// [DefaultSyncTopicACLsInterval]. It must not be negative: to turn the
	// sync off set DisableTopicACLSync (what the properties loader does for
	// a negative value, which MM2 treats as "never").
	SyncTopicACLsInterval time.Duration
	// DisableOffsetSyncs is `emit.offset-syncs.enabled=false` (also
	// disables checkpoints: nothing to translate with).
	DisableOffsetSyncs bool
	// DisableHeartbeatsReplication is `heartbeats.replication.enabled=false`.
	DisableHeartbeatsReplication bool
	// OffsetFlushInterval is `offset.flush.interval.ms`: how often resume
	// points are stored and the latest offset syncs are flushed. 0 means
	// [DefaultOffsetFlushInterval] (5 s; MM2: 60 s). It must not be
	// negative.
	OffsetFlushInterval time.Duration

	// DisableCheckpoints is `emit.checkpoints.enabled=false`.
	DisableCheckpoints bool
	// EmitCheckpointsInterval is `emit.checkpoints.interval.seconds`: how
	// often source group offsets are fetched, translated and written as
	// checkpoints. 0 means [DefaultEmitCheckpointsInterval]; a negative
	// value is refused by [New]: to turn checkpoints off set
	// DisableCheckpoints (what the properties loader does for MM2's
	// negative value).
	EmitCheckpointsInterval time.Duration
	// SyncGroupOffsets is `sync.group.offsets.enabled=true`: commit
	// translated offsets into idle groups on the target.
	SyncGroupOffsets bool
	// SyncGroupOffsetsInterval is `sync.group.offsets.interval.seconds`; 0
	// means [DefaultSyncGroupOffsetsInterval]; a negative value is refused
	// by [New]. It is used only with SyncGroupOffsets; the properties
	// loader leaves SyncGroupOffsets off for MM2's negative value.
	SyncGroupOffsetsInterval time.Duration
	// DisableRefreshGroups is `refresh.groups.enabled=false`.
	DisableRefreshGroups bool
	// RefreshGroupsInterval is `refresh.groups.interval.seconds`; 0 means
	// [DefaultRefreshGroupsInterval]. Unlike MM2, which looks for new groups
	// only this often (10 minutes by default), kmirror lists the source
	// groups at every checkpoint emission, so a new group is found within
	// EmitCheckpointsInterval; this interval only matters when it is shorter
	// than EmitCheckpointsInterval (groups are then listed and checkpointed
	// that often). A negative value, like DisableRefreshGroups (what the
	// properties loader sets for a negative value), lists the groups once at
	// start and keeps that list.
	RefreshGroupsInterval time.Duration

	// DisableHeartbeats is `emit.heartbeats.enabled=false`: no heartbeats are
	// written for this pair. A read-only source cluster needs it on the
	// reverse pair target->source, whose heartbeats would be written into
	// the source.
	DisableHeartbeats bool
	// EmitHeartbeatsInterval is `emit.heartbeats.interval.seconds`; 0 means
	// [DefaultEmitHeartbeatsInterval]; a negative value is refused by
	// [New]. To stop heartbeats set DisableHeartbeats (what the properties
	// loader does for MM2's negative value).
	EmitHeartbeatsInterval time.Duration

	// AdminTimeout is `admin.timeout.ms`: bound of one admin request
	// round (list, create, describe). 0 means [DefaultAdminTimeout].
	AdminTimeout time.Duration

	// StartOffset is where partitions without a resume point start
	// (`<source>.consumer.auto.offset.reset`).
	StartOffset StartOffset
	// Isolation is the source consumer's isolation.level
	// (`<source>.consumer.isolation.level`,
	// `<source>-><target>.consumer.isolation.level`). The zero value,
	// [ReadCommitted], never replicates records of aborted source
	// transactions; MM2 reads read_uncommitted unless configured and so
	// copies them to the target as ordinary records (KAFKA-14021).
	Isolation Isolation
	// OnGap says what to do about unreplicated records the source lost.
	OnGap GapPolicy

	// AllowTopicCollisions is `allow.topic.collisions=true` (a kmirror key):
	// accept that this flow and another flow of the same Mirror write the
	// same remote topic on one target, merging their records into one topic
	// (for example IdentityReplicationPolicy on a->t and b->t when both a and
	// b have a topic orders). Without it, [New] refuses a configuration whose
	// topic lists make two flows write one topic, naming the topic, the
	// target and both sources, and a collision found among the topics that
	// exist on the sources is refused at start and later reported in
	// [FlowStatus.Skipped]. A collision is allowed only when every flow
	// involved sets this; checkpoints and group offset sync are then off for
	// the colliding topics (offsets of a merged topic translate for neither
	// source, and the flows' group syncs would overwrite each other), which
	// [FlowStatus.Skipped] reports. The merged topic's configs are synced
	// from the first writer (by flow, then source topic) only. Their partitions also resume from
	// stored resume points only, never from the target's tail (see
	// DisableTailResume): a copy of another topic cannot be told apart.
	AllowTopicCollisions bool

	// DisableProvenanceHeader is `provenance.header.enabled=false` (a
	// kmirror key): records are copied byte for byte, without the
	// [ProvenanceHeader] header that lists the IDs of the clusters a record
	// was copied from. Lost then: a record that comes back to a cluster it
	// was already on (IdentityReplicationPolicy in both directions, a ring
	// of identity flows, two deployments naming the same clusters
	// differently) is copied again, forever, as in MM2; and topics whose
	// name carries a cluster alias this Mirror does not know are created on
	// the target without looking at their records, so inconsistent aliases
	// grow chains like remote.remote.t1 (MM2 behaviour). Headers that other
	// hops wrote, including [ProvenanceHeader], are still copied unchanged.
	DisableProvenanceHeader bool

	// DisableTailResume is `resume.from.target.enabled=false` (a kmirror
	// key). By default, at least once with the provenance header on, each
	// copied record's [ProvenanceHeader] ends with its source offset
	// ([ProvenanceOffset]), and a unit that starts a partition (first
	// start, after a crash or a hand-over) resumes after the last record
	// the flow wrote to the remote partition when that is later than the
	// stored resume point and the source holds the very same record at
	// that offset: a member killed between two stores of resume points
	// causes no duplicates. Any doubt (a re-created or truncated source,
	// a remote topic written by MM2 or an older kmirror, no READ ACL on
	// the remote topics) falls back to the resume point. It needs the
	// target producer's idempotence, acks=all and unlimited retries
	// (kgo's defaults) and is
	// not used exactly once (transactions are that mode's guarantee) or
	// with ShallowCopy (a copied batch carries no per-record offset); the
	// offset is still stamped exactly once. Turning it off writes the
	// header without the offset (about 9 bytes less per record,
	// uncompressed) and resumes from stored resume points only.
	DisableTailResume bool

	// ShallowCopy is `shallow.copy.enabled=true` (a kmirror key): each
	// fetched source record batch whose records need no change is written
	// to the target as it is, without decompressing it: its codec,
	// timestamps and record bytes (keys, values, headers) are kept, and only
	// what a produce requires changes (base offset, producer id, epoch and
	// sequence, the transactional bit, the CRC-32C). Batches that cannot be
	// copied as they are (control batches, aborted transactions, compacted
	// batches with holes, LogAppendTime batches, batches the target rejects,
	// such as ones above its max.message.bytes) take the normal path: their
	// records are decoded and produced one by one. Offset syncs, offset
	// runs, resume points and gap detection work as without it.
	//
	// Shallow copy writes without idempotence (the copied batches keep no
	// producer id), so a produce retried after a lost response may write a
	// batch twice on the target (at-least-once, like a replay). It needs
	// DisableProvenanceHeader (a header added to each record changes the
	// batch) and is refused with ExactlyOnce (a transactional producer
	// cannot send raw batches). With it, the bytes counted in the status
	// and metrics for copied batches are the batches' stored (compressed)
	// record bytes, not the records' payload.
	ShallowCopy bool

	// MaxBufferedBytes bounds the target producers' buffers in bytes
	// (`<target>.producer.buffer.memory` or
	// `<source>-><target>.producer.override.buffer.memory`), shared by the
	// flow's slots: each gets max(MaxBufferedBytes/Tasks, 1 MiB); 0 means
	// [DefaultMaxBufferedBytes].
	MaxBufferedBytes int
	// FetchMaxBytes bounds the fetch responses in bytes
	// (`<source>.consumer.fetch.max.bytes`), shared by the flow's slots:
	// each slot's consumer gets max(FetchMaxBytes/Tasks, 1 MiB,
	// FetchMaxPartitionBytes) per response, at most 1023 MiB (franz-go
	// reads at most 1 GiB in one response); 0 means [DefaultFetchMaxBytes].
	// Unlike Kafka's fetch.max.bytes, which counts bytes as stored on the
	// source, the budget counts what a response holds decompressed: each
	// consumer asks for budget × wire bytes / decompressed bytes, as
	// measured on the batches it read (at least 64 KiB, which is also what
	// it asks for before its first batches are read), so that compressed
	// batches do not multiply its memory.
	FetchMaxBytes int32
	// FetchMaxPartitionBytes bounds bytes per partition per fetch
	// (`max.partition.fetch.bytes`); 0 means [DefaultFetchMaxPartitionBytes].
	FetchMaxPartitionBytes int32

	// Tasks is MM2's tasks.max: the number of slots (units of work) the
	// flow's source partitions are spread over, by (murmur2(topic) +
	// partition) mod Tasks. Processes running the same flow share the slots
	// through a Kafka consumer group, so at most Tasks members replicate at
	// once. It changes by a rolling restart, as MM2's does: the member
	// started last sets the flow's number of slots, the members configured
	// with another value hold no slot and say they wait
	// (MemberStatus.Waiting) until restarted; the hand-over stores every
	// resume point first and, with ExactlyOnce, fences every old slot's
	// transactional id. The flow's coordination topic
	// mm2-kmirror-units.<source>.internal on the target keeps the largest
	// count a member needed. A member whose value differs from the
	// others' refuses to start only while members of an older kmirror
	// release share the flow. 0 means [DefaultTasks].
	Tasks int
	// GroupID is the consumer group through which the processes running
	// this flow share its slots; "" means "kmirror.<source>-><target>". Two
	// deployments of the same flow that must not share work need
	// different group ids (and different targets). Two flows of a Mirror
	// with the same target must have different group ids ([New] refuses
	// one shared: the group's leader assigns its own flow's slots only).
	GroupID string
	// SessionTimeout, HeartbeatInterval and RebalanceTimeout are the
	// group settings of the flow's members (session.timeout.ms,
	// heartbeat.interval.ms, rebalance.timeout.ms of the target cluster's
	// worker settings in an MM2 file). 0 means [DefaultSessionTimeout],
	// [DefaultHeartbeatInterval], [DefaultRebalanceTimeout]. The session
	// timeout must lie within the target brokers'
	// group.min.session.timeout.ms and group.max.session.timeout.ms (6 s to
	// 30 min by default).
	SessionTimeout, HeartbeatInterval, RebalanceTimeout time.Duration

	// ExactlyOnce replicates the flow exactly once (KIP-618, MM2's
	// exactly.once.support=required with the target's
	// exactly.once.source.support=enabled): each unit of work writes its
	// records and its resume points in one Kafka transaction on the target,
	// with the transactional id "<group id>-<slot>" (e.g.
	// "kmirror.us-east-1->eu-west-1-3"), so that after a crash or a
	// hand-over a read_committed consumer of the remote topics sees every
	// source record once. Acquiring a slot fences its previous owner's
	// producer (InitProducerId). Offset syncs, checkpoints, heartbeats and
	// group offset sync stay outside the transactions. Records become
	// visible to read_committed consumers when their transaction commits
	// (see TransactionBoundary).
	ExactlyOnce bool
	// TransactionBoundary says when an exactly-once unit commits its
	// transaction (MM2's transaction.boundary): after every poll of its
	// consumer (the zero value, MM2's default "poll"), or every
	// TransactionInterval ("interval"). Either way a transaction also
	// commits once it holds TransactionMaxRecords records.
	TransactionBoundary TransactionBoundary
	// TransactionInterval is transaction.boundary.interval.ms, used with
	// [TransactionBoundaryInterval]; 0 means OffsetFlushInterval (as in
	// Connect). A transaction timeout of the target's producer
	// (transaction.timeout.ms) that leaves less than AdminTimeout after
	// the interval makes transactions commit earlier (timeout minus
	// AdminTimeout, or half the timeout when that is not positive), since
	// the coordinator aborts a transaction open longer than its timeout.
	TransactionInterval time.Duration
	// TransactionMaxRecords caps the records of one transaction; 0 means
	// [DefaultTransactionMaxRecords].
	TransactionMaxRecords int
	// OpenTransactionAfter is how long a source partition may sit at its
	// last stable offset, below its high watermark, before it is reported
	// as held back by an open source transaction (PartitionStatus.
	// OpenTransactionSince, kmirror_source_open_transaction_seconds);
	// read_committed replication cannot pass such a transaction. 0 means
	// [DefaultOpenTransactionAfter].
	OpenTransactionAfter time.Duration
}

// TransactionBoundary says when an exactly-once unit of work commits its
// transaction (MM2's transaction.boundary).
type TransactionBoundary int

const (
	// TransactionBoundaryPoll commits after every poll of the unit's
	// consumer that returned records (MM2's "poll", the default): the
	// lowest latency.
	TransactionBoundaryPoll TransactionBoundary = iota
	// TransactionBoundaryInterval commits every TransactionInterval
	// (MM2's "interval"): fewer, larger transactions.
	TransactionBoundaryInterval
)

// String returns "poll" or "interval".
func (b TransactionBoundary) String() string {
	switch b {
	case TransactionBoundaryPoll:
		return "poll"
	case TransactionBoundaryInterval:
		return "interval"
	}
	return fmt.Sprintf("TransactionBoundary(%d)", int(b))
}

// Isolation is the isolation level of a flow's source consumer.
type Isolation int

const (
	// ReadCommitted replicates only committed records: records of aborted
	// source transactions never reach the target. A source transaction left
	// open holds the partition back at its last stable offset. The default.
	ReadCommitted Isolation = iota
	// ReadUncommitted replicates every record, including those of aborted
	// and still open source transactions (MM2's default).
	ReadUncommitted
)

// String returns "read_committed" or "read_uncommitted".
func (i Isolation) String() string {
	switch i {
	case ReadCommitted:
		return "read_committed"
	case ReadUncommitted:
		return "read_uncommitted"
	}
	return fmt.Sprintf("Isolation(%d)", int(i))
}

// Name returns the flow's name in MM2's notation, "source->target".
func (f FlowConfig) Name() string { return f.Source + "->" + f.Target }

// Opt configures a [Mirror]; see [WithCluster], [WithFlow], [WithLogger],
// [WithMetrics]. New ignores a nil Opt.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

// WithCluster adds a cluster. Aliases must be unique.
func WithCluster(c ClusterConfig) Opt {
	return optFunc(func(cfg *cfg) { cfg.clusters = append(cfg.clusters, c) })
}

// WithFlow adds a replication flow between two clusters added with
// [WithCluster]. A pair may appear once.
//
// Unlike an MM2 properties file, whose every ordered pair of clusters emits
// heartbeats ([Properties] adds those pairs), WithFlow adds only the pair it
// is given: a flow A->B writes heartbeats into B, but nothing writes any
// into A, so no "A.heartbeats" is replicated to B, the topic the topology
// calls of package remoteclusterutils (ReplicationHops, UpstreamClusters)
// read. Add WithFlow(FlowConfig{Source: "B", Target: "A", Disabled: true}),
// a heartbeat-only pair, for them to find A.
func WithFlow(f FlowConfig) Opt {
	return optFunc(func(cfg *cfg) { cfg.flows = append(cfg.flows, f) })
}

// WithLogger sets the logger of the engine and of the franz-go clients it
// creates (through plugin/kslog). Default: no logging. Records at INFO and
// above that repeat (same level, message and attributes other than the
// error) within 30 s are logged once, then summarized with their count
// ("repeated=52 in_last=30s"), so that a cluster that stays down does not
// flood the log; debug records are never limited.
func WithLogger(l *slog.Logger) Opt {
	return optFunc(func(cfg *cfg) { cfg.logger = l })
}

// WithMetrics reports the engine's measurements to m (see [Metrics]); nil,
// or a nil pointer of a type implementing Metrics, reports nothing. Default: no metrics (Status still works). For
// Prometheus, use WithRegisterer of package
// github.com/kmirror/kmirror/mirror/mirrorprom.
func WithMetrics(m Metrics) Opt {
	return optFunc(func(cfg *cfg) { cfg.metrics = m })
}

type cfg struct {
	clusters []ClusterConfig
	flows    []FlowConfig
	logger   *slog.Logger
	metrics  Metrics
	// partRetryFirst is the first automatic restart delay of a failed
	// partition (0: 5 s); tests shorten it (withPartRetryFirst).
	partRetryFirst time.Duration
	// cpWatch observes every batch of checkpoints the Mirror's emitters
	// write (tests: withCheckpointWatch); nil in production.
	cpWatch cpwatch.Hook
	// workerID and statusInterval: WithWorkerID, WithStatusInterval
	// (clusterstatus.go).
	workerID       string
	statusInterval time.Duration
	settings       map[string]map[string]string // flow -> WithFlowSettings
	// hooks are the units' test hooks (withUnitHooks); nil in production.
	hooks *unitHooks
}

// withUnitHooks installs test hooks in every unit of the Mirror (tests:
// holding the producer's promise goroutine, seeing what the poll loop
// produced).
func withUnitHooks(h *unitHooks) Opt {
	return optFunc(func(cfg *cfg) { cfg.hooks = h })
}

// withPartRetryFirst sets the first automatic restart delay of failed
// partitions (tests).
func withPartRetryFirst(d time.Duration) Opt {
	return optFunc(func(cfg *cfg) { cfg.partRetryFirst = d })
}

// withCheckpointWatch makes every checkpoint emitter of the Mirror call h
// after each batch of checkpoints it wrote (tests: the "never past the
// target log end" check).
func withCheckpointWatch(h cpwatch.Hook) Opt {
	return optFunc(func(cfg *cfg) { cfg.cpWatch = h })
}

// withDefaults returns f with every zero field replaced by its default.
func (f FlowConfig) withDefaults() FlowConfig {
	if f.Topics == nil {
		f.Topics = append([]string(nil), mm2keys.Topics...)
	}
	if f.TopicsExclude == nil {
		f.TopicsExclude = DefaultTopicsExclude
	}
	if f.Groups == nil {
		f.Groups = append([]string(nil), mm2keys.Groups...)
	}
	if f.GroupsExclude == nil {
		f.GroupsExclude = DefaultGroupsExclude
	}
	if f.ConfigPropertiesExclude == nil {
		f.ConfigPropertiesExclude = DefaultConfigPropertiesExclude
	}
	if f.Policy == nil {
		p, _ := policy.NewDefault()
		f.Policy = p
	}
	for _, rf := range []*int16{&f.ReplicationFactor, &f.OffsetSyncsTopicReplicationFactor,
		&f.CheckpointsTopicReplicationFactor, &f.HeartbeatsTopicReplicationFactor, &f.OffsetStorageReplicationFactor} {
		if *rf == 0 {
			*rf = -1
		}
	}
	if f.OffsetLagMax == 0 {
		f.OffsetLagMax = DefaultOffsetLagMax
	} else if f.OffsetLagMax < 0 {
		f.OffsetLagMax = 0
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&f.RefreshTopicsInterval, DefaultRefreshTopicsInterval)
	def(&f.SyncTopicConfigsInterval, DefaultSyncTopicConfigsInterval)
	def(&f.SyncTopicACLsInterval, DefaultSyncTopicACLsInterval)
	def(&f.OffsetFlushInterval, DefaultOffsetFlushInterval)
	def(&f.EmitCheckpointsInterval, DefaultEmitCheckpointsInterval)
	def(&f.SyncGroupOffsetsInterval, DefaultSyncGroupOffsetsInterval)
	def(&f.RefreshGroupsInterval, DefaultRefreshGroupsInterval)
	def(&f.EmitHeartbeatsInterval, DefaultEmitHeartbeatsInterval)
	def(&f.AdminTimeout, DefaultAdminTimeout)
	if f.MaxBufferedBytes == 0 {
		f.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if f.FetchMaxBytes == 0 {
		f.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if f.FetchMaxPartitionBytes == 0 {
		f.FetchMaxPartitionBytes = DefaultFetchMaxPartitionBytes
	}
	if f.Tasks == 0 {
		f.Tasks = DefaultTasks
	}
	def(&f.TransactionInterval, f.OffsetFlushInterval)
	if f.TransactionMaxRecords == 0 {
		f.TransactionMaxRecords = DefaultTransactionMaxRecords
	}
	def(&f.OpenTransactionAfter, DefaultOpenTransactionAfter)
	def(&f.SessionTimeout, DefaultSessionTimeout)
	def(&f.HeartbeatInterval, DefaultHeartbeatInterval)
	def(&f.RebalanceTimeout, DefaultRebalanceTimeout)
	return f
}

// newFilter compiles a flow's include and exclude regex lists (MM2's
// DefaultTopicFilter, DefaultGroupFilter, DefaultConfigPropertyFilter;
// see mm2filter.New); each bad regex is a *ConfigError naming the key and
// the regex (every one: a list with two bad regexes reported the first).
func newFilter(includeKey string, include []string, excludeKey string, exclude []string) (mm2filter.Filter, []*ConfigError) {
	f, err := mm2filter.New(includeKey, include, excludeKey, exclude)
	if err == nil {
		return f, nil
	}
	var res mm2filter.RegexErrors
	var re *mm2filter.RegexError
	switch {
	case errors.As(err, &res):
	case errors.As(err, &re):
		res = mm2filter.RegexErrors{re}
	default:
		return f, []*ConfigError{{Key: includeKey, Reason: err.Error()}}
	}
	ces := make([]*ConfigError, len(res))
	for i, re := range res {
		ces[i] = &ConfigError{Key: re.Key, Value: re.Regex, Reason: re.Reason}
	}
	return f, ces
}

// ConfigError is returned by [New] and the properties loader for a bad
// setting. It names the key and the bad value; secret values are never
// included (Value is empty for them).
type ConfigError struct {
	Key    string // configuration key, e.g. "topics" or "us-east-1->eu-west-1.topics"
	Value  string // the offending value, empty when secret
	Reason string // what is wrong and what to write instead
}

// Error returns "mirror: key="value": reason", or "mirror: key: reason"
// without a value.
func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("mirror: %s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("mirror: %s=%q: %s", e.Key, e.Value, e.Reason)
}
