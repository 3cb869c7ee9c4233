package mirror

import (
	"errors"
	"fmt"
	"time"

	"github.com/kmirror/kmirror/checkpoint"
)

// ErrClosed is returned by [Mirror.Run] and [Mirror.ResizeSlots] after
// [Mirror.Close] or [Mirror.Shutdown].
var ErrClosed = errors.New("mirror: closed")

// State is the state of a flow or a partition, named after Kafka Connect's
// connector and task states (`/connectors/<name>/status`).
type State string

// States reported by [Mirror.Status].
const (
	// StateUnassigned: not started yet (before Run).
	StateUnassigned State = "UNASSIGNED"
	// StateStarting: connecting, creating internal topics, loading resume points.
	StateStarting State = "STARTING"
	// StateRunning: replicating.
	StateRunning State = "RUNNING"
	// StateRetrying: a retriable error (cluster unreachable, timeout); kmirror retries with backoff.
	StateRetrying State = "RETRYING"
	// StateFailed: a non-retriable error stopped the flow or partition; see Error.
	StateFailed State = "FAILED"
	// StateStopped: shut down.
	StateStopped State = "STOPPED"
	// StateDisabled: the pair only emits heartbeats (FlowConfig.Disabled).
	StateDisabled State = "DISABLED"
	// StatePaused: the flow's target state is PAUSED (Mirror.SetTargetState,
	// Connect's PUT /connectors/<name>/pause) and this member applied it:
	// no records are replicated; checkpoints, heartbeats and group offset
	// sync go on. A flow whose target state is STOPPED shows StateStopped.
	StatePaused State = "PAUSED"
)

// Status is a snapshot of a [Mirror], from [Mirror.Status].
type Status struct {
	Flows []FlowStatus `json:"flows"`
}

// FlowStatus is the state of one replication flow.
type FlowStatus struct {
	// Name is "source->target"; Source and Target are the two cluster
	// aliases.
	Name   string `json:"name"`
	Source string `json:"source"`
	Target string `json:"target"`
	// State is the flow's state on this member: PAUSED or STOPPED once it
	// applied such a target state (unless it is RETRYING, FAILED or
	// starting: those say more), else the engine's state. Before
	// [Mirror.Run] it is UNASSIGNED ([StateUnassigned]), with LagUnknown
	// set and no topics.
	State State `json:"state"`
	// TargetState is the state the flow was asked to be in (its status
	// topic's target-state record; RUNNING when none), and AppliedState
	// the one this member applied (they differ for the few seconds a
	// member takes to apply a change). See [Mirror.SetTargetState].
	TargetState  TargetState `json:"target_state"`
	AppliedState TargetState `json:"applied_state"`
	// appliedOffset is the offset of the target-state record AppliedState
	// comes from (-1: none): the member record's applied_state_offset.
	appliedOffset int64
	// Error is the last error of the flow (empty when none): the reason of
	// FAILED, the retriable error behind RETRYING (a cluster does not
	// answer, listing its topics fails, storing resume points fails), or,
	// while RUNNING, a summary of TopicErrors: "1 topic error: orders:
	// creating src.orders on dst: POLICY_VIOLATION: ..." (the first three
	// topics, then "and N more"). A topic error never makes the flow
	// RETRYING while the other topics replicate.
	Error string `json:"error,omitempty"`
	// Since is when State was entered.
	Since time.Time `json:"since"`
	// Started is true once the flow has finished its start-up in this
	// process (both clusters answered, its internal topics exist, its
	// resume points were read), and stays true: a RETRYING flow that
	// started is in an outage (a broker restart), one that did not is
	// still starting (a wrong address, refused credentials).
	Started bool `json:"started,omitempty"`
	// Topics is the number of source topics the flow selects (all members
	// see the same number).
	Topics int `json:"topics"`
	// Member is this process's place among the processes that run the
	// flow: the slots it owns and whether it holds the singleton duties.
	Member MemberStatus `json:"member"`
	// Records and Bytes replicated by this member (acknowledged by the
	// target) since the process started, also by the units of slots it no
	// longer owns: they never go down; Bytes is the source records'
	// payload: keys, values, header keys and header values (not the
	// provenance header kmirror adds).
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// Lag is the sum of the lag of this member's partitions, in records,
	// plus, on the member holding the singleton duties only (so the flow's
	// total over its members counts them once), the records of the source
	// partitions a topic error keeps from being replicated (the
	// TopicErrors' Lag) and the lag of UnassignedPartitions. While the flow
	// retries its start-up it is the lag of every selected partition from
	// the source's end offsets and the stored resume points (LagUnknown
	// when a cluster does not answer).
	Lag int64 `json:"lag"`
	// LagUnknown is true when some lag could not be computed (a cluster
	// does not answer, no resume point could be read): Lag then counts
	// only what could be (0 when nothing could), so read it as "at least
	// Lag". The runner's JSON shows such a lag as null.
	LagUnknown bool `json:"lag_unknown,omitempty"`
	// FailedPartitions counts this member's partitions in state FAILED
	// (Connect: tasks FAILED under a RUNNING connector). The flow stays
	// RUNNING for the others; when it has no error of its own, Error then
	// names the count and the first failed partition's error. Failed
	// partitions come back automatically when their cause can go away
	// (PartitionStatus.NextRetry) or with [Mirror.RestartFailed].
	FailedPartitions int `json:"failed_partitions,omitempty"`
	// Partitions are the source partitions this member replicates (those of
	// the slots it owns), sorted by topic and partition.
	Partitions []PartitionStatus `json:"partitions"`
	// Warnings says what the flow's live members disagree on, as this
	// member reads the flow's status topic (see
	// [ClusterFlowStatus.Warnings]): configuration keys with different
	// values, a member holding slot 0 whose configuration disables the
	// flow, ... Each change is also logged once at WARN.
	Warnings []string `json:"warnings,omitempty"`
	// UnassignedPartitions are the source partitions of the slots no live
	// member owns (a member died and its session has not expired, or the
	// group is rebalancing), with their lag computed from the source's end
	// offsets and the stored resume points (State UNASSIGNED). Only the
	// member holding the singleton duties reports them, refreshed every
	// status interval; Lag includes their lag, so the flow's total over its
	// members counts every partition once.
	UnassignedPartitions []PartitionStatus `json:"unassigned_partitions,omitempty"`
	// Gaps lists the source gaps this member detected since start (newest
	// last, at most 100).
	Gaps []GapError `json:"gaps,omitempty"`
	// Groups is the state of consumer-group checkpointing and offset sync,
	// reported only by the member holding the singleton duties
	// (Member.Singleton); the other members report none.
	Groups []GroupStatus `json:"groups,omitempty"`
	// LastHeartbeat is when the flow last wrote a heartbeat (zero if never).
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
	// HeartbeatError is the last failure of the flow's heartbeat emitter
	// (MM2's MirrorHeartbeatConnector) since its last heartbeat written:
	// creating the heartbeats topic or writing to it on the target, with
	// Kafka's error ("heartbeat: writing to heartbeats on dst:
	// TOPIC_AUTHORIZATION_FAILED: ..."); empty while heartbeats are
	// written. It is retried every emit.heartbeats.interval.seconds. When
	// the flow has no error of its own (RUNNING, or DISABLED for a
	// heartbeats-only flow), Error says "heartbeats failing since <time>:
	// <this>" too.
	HeartbeatError string `json:"heartbeat_error,omitempty"`
	// HeartbeatErrorSince is when the heartbeats started failing: the
	// first failure since the last heartbeat written (or since the emitter
	// started, when none was); zero while HeartbeatError is empty. With no
	// heartbeat written, kmirror_heartbeat_age_seconds counts from it.
	HeartbeatErrorSince time.Time `json:"heartbeat_error_since,omitzero"`
	// ACLSyncError is the topic ACL sync's last failure to describe the
	// source cluster's ACLs (MM2's MirrorSourceConnector with
	// sync.topic.acls.enabled=true, its default), since the last describe
	// that succeeded, on the member holding the singleton duties: for
	// example "describing ACLs on src: CLUSTER_AUTHORIZATION_FAILED: ...;
	// grant kmirror DESCRIBE on the cluster src ... or set
	// sync.topic.acls.enabled=false". Replication goes on; the sync is
	// retried with backoff (at most every 30 s). When the flow is RUNNING
	// with no other error and no topic errors, Error says "topic ACL sync
	// failing since <time>: <this>". Refusals of the ACLs' creation on the
	// target are topic errors of Op "acl" instead.
	ACLSyncError string `json:"acl_sync_error,omitempty"`
	// OffsetSyncError is this member's last failure to write an offset
	// sync or offset run (mm2-offset-syncs.<cluster>.internal and the
	// offset runs beside it), since the last one written: for example
	// "writing offset syncs to mm2-offset-syncs.dst.internal on src:
	// CLUSTER_AUTHORIZATION_FAILED: ...; grant kmirror WRITE on ...".
	// Replication goes on, but without offset syncs the checkpoint task
	// translates no group offset written since. When the flow is RUNNING
	// with no other error, Error says "offset syncs failing since <time>:
	// <this>" too. OffsetSyncErrorSince is the first such failure since
	// the last write that succeeded.
	OffsetSyncError      string    `json:"offset_sync_error,omitempty"`
	OffsetSyncErrorSince time.Time `json:"offset_sync_error_since,omitzero"`
	// Skipped lists the topics the flow's filter selects but that it does
	// not replicate, or whose checkpoints it does not emit, and the topics
	// named in its topics list that the source cluster does not have (a
	// misspelt name; cleared once the topic exists), each with the reason
	// (sorted by topic). Each is also logged once at WARN (INFO for
	// the remote topics of this Mirror's own reverse flows).
	Skipped []SkippedTopic `json:"skipped,omitempty"`
	// TopicErrors lists the topics that the flow selects and that a topic
	// job fails for: creating the remote topic (MM2's
	// MirrorSourceConnector.createNewTopics), increasing its partitions,
	// describing it on the target, or syncing its configs (MM2's
	// syncTopicConfigs); sorted by topic, then Op. One topic's error never
	// stops the others: they replicate, and the flow stays RUNNING (Error
	// summarises these). An entry is removed when the operation succeeds,
	// or when the topic is no longer selected or no longer on the source.
	// Each is logged once at WARN when it first appears and at INFO when
	// it clears. Only the member holding the singleton duties
	// (Member.Singleton) reports them, since only it creates topics and
	// syncs configs.
	TopicErrors []TopicError `json:"topic_errors,omitempty"`
	// ProvenanceSkipped counts the source records this member did not
	// replicate because their provenance header shows they were already on
	// the target's cluster or came back from it (active-active), since
	// start.
	ProvenanceSkipped int64 `json:"provenance_skipped,omitempty"`
	// TailResume counts, since start, this member's partition starts by
	// how resume from the target's tail chose their position
	// (FlowConfig.DisableTailResume): "ahead" (resumed after the last
	// record the flow wrote to the remote partition, later than the stored
	// resume point), "behind" and "none" (the resume point), and the
	// fallbacks to the resume point: "past_end" (the tail names an offset
	// at or past the source's end), "truncated" (before the source's log
	// start), "mismatch" (the source record there differs: a re-created
	// source topic) and "unreadable" (a read failed, e.g. no READ ACL on
	// the remote topics). Empty when tail resume is off or unused.
	TailResume map[string]int64 `json:"tail_resume,omitempty"`
}

// SkippedTopic is a source topic that a flow's topics filter selects but
// that the flow does not replicate: a cycle by name (MM2's isCycle: the name
// says it came from the target), a cycle by provenance (its records came
// from the target), an internal topic (MM2's own, or Kafka's "__"/"."
// names), a topic listed in topics but excluded by topics.exclude, or a
// collision with another flow writing the same remote topic. An allowed
// collision ([FlowConfig.AllowTopicCollisions]) is replicated but listed,
// with Replicated set, because its checkpoints and group offset sync are
// off.
type SkippedTopic struct {
	// Topic is the SOURCE topic name.
	Topic string `json:"topic"`
	// Reason is free text for people (what kmirror saw, what to change);
	// its wording may change between versions, so do not match on it.
	Reason string `json:"reason"`
	// Since is when the topic was first skipped for this reason.
	Since time.Time `json:"since"`
	// Replicated is true when the records are replicated and only
	// checkpoints and group offset sync skip the topic (an allowed
	// collision).
	Replicated bool `json:"replicated,omitempty"`
}

// TopicOp names the per-topic operation a [TopicError] is about.
type TopicOp string

// The operations of [TopicError].Op.
const (
	// TopicOpCreate: creating the remote topic on the target (or describing
	// the source topic's configs to create it). None of the topic's
	// records are replicated until it succeeds.
	TopicOpCreate TopicOp = "create"
	// TopicOpPartitions: increasing the remote topic's partitions to the
	// source's count (MM2's createNewPartitions). The source partitions
	// beyond the remote count are not replicated until it succeeds.
	TopicOpPartitions TopicOp = "partitions"
	// TopicOpDescribe: the target answers an error for the remote topic
	// in its metadata (other than "unknown topic"): the topic is not
	// replicated while it lasts.
	TopicOpDescribe TopicOp = "describe"
	// TopicOpConfig: syncing the topic's configs to the remote topic
	// (describing them on either cluster, or altering them on the target).
	// The records are still replicated.
	TopicOpConfig TopicOp = "config"
	// TopicOpACL: creating on the target the ACLs the ACL sync copies from
	// the source topic's LITERAL ACLs (sync.topic.acls.enabled), for the
	// remote topic. The records are still replicated.
	TopicOpACL TopicOp = "acl"
)

// TopicError is a per-topic operation of a flow that failed on its last
// attempt. kmirror retries it, half a second after the first failure, then
// backing off to 30 s (and at least once per refresh.topics.interval.seconds,
// or sync.topic.configs.interval.seconds for Op "config",
// sync.topic.acls.interval.seconds for Op "acl"), while the flow's
// other topics replicate.
type TopicError struct {
	// Topic is the SOURCE topic name.
	Topic string `json:"topic"`
	// RemoteTopic is its name on the target.
	RemoteTopic string `json:"remote_topic"`
	// Op is the operation that failed.
	Op TopicOp `json:"op"`
	// Error is the last attempt's error: the operation, the topic, the
	// cluster and Kafka's error (e.g. "creating src.orders on dst:
	// POLICY_VIOLATION: ..."). Its wording may change between versions,
	// so do not match on it.
	Error string `json:"error"`
	// Since is when the operation first failed (consecutive failures
	// keep it; a success resets it).
	Since time.Time `json:"since"`
	// LastAttempt is when the operation last failed.
	LastAttempt time.Time `json:"last_attempt"`
	// Lag is the number of records in the source partitions this error
	// keeps from being replicated (high watermark minus log start offset,
	// summed), as listed at the last attempt: the topic's partitions for
	// Op "create" and "describe", the partitions beyond the remote count
	// for "partitions", 0 for "config" and "acl" (the records are replicated). -1
	// when the source's offsets could not be listed. FlowStatus.Lag
	// includes it.
	Lag int64 `json:"lag"`
}

// MemberStatus describes this process as a member of a flow's group: the
// processes running the same flow share its Tasks slots (MM2's tasks.max)
// through a Kafka consumer group whose id is GroupID. Each source partition
// belongs to one slot; a member replicates the partitions of the slots it
// owns, and the member owning slot 0 also does the singleton duties (topic
// creation, config and ACL sync, checkpoints, group offset sync,
// heartbeats).
type MemberStatus struct {
	// GroupID is the group of the flow's members ("kmirror.<source>-><target>"
	// unless FlowConfig.GroupID overrides it).
	GroupID string `json:"group_id"`
	// MemberID and Generation are this member's id and the group generation
	// of its last assignment ("" and 0 before the first one).
	MemberID   string `json:"member_id"`
	Generation int32  `json:"generation"`
	// Tasks is the number of slots of the flow.
	Tasks int `json:"tasks"`
	// Slots are the slots this member owns, sorted.
	Slots []int32 `json:"slots"`
	// Singleton is true while this member holds the singleton duties.
	Singleton bool `json:"singleton"`
	// Waiting says why this member replicates nothing although it runs
	// (empty when it does not wait).
	Waiting string `json:"waiting,omitempty"`
	// Rebalances counts the rebalances this member went through since it
	// started, and RebalanceSeconds the time spent in them (from the
	// revocation or loss of slots to the next assignment).
	Rebalances       int64   `json:"rebalances"`
	RebalanceSeconds float64 `json:"rebalance_seconds"`
}

// PartitionStatus is the replication state of one source partition.
type PartitionStatus struct {
	// Topic is the source topic; RemoteTopic its remote topic on the
	// target (named by the replication policy); Partition the partition
	// number, the same on both clusters.
	Topic       string `json:"topic"`
	RemoteTopic string `json:"remote_topic"`
	Partition   int32  `json:"partition"`
	// State is the partition's replication state (RUNNING, RETRYING,
	// FAILED, PAUSED, UNASSIGNED, ...); Error the error behind RETRYING or
	// FAILED (empty otherwise).
	State State  `json:"state"`
	Error string `json:"error,omitempty"`
	// SourceEnd is the source high watermark last seen (-1 if unknown).
	SourceEnd int64 `json:"source_end"`
	// Replicated is the next source offset to replicate: one past the last
	// record acknowledged by the target (-1 if none yet).
	Replicated int64 `json:"replicated"`
	// Committed is the resume point stored on the target: the last source
	// offset replicated, as MM2 stores it, or past it the last offset
	// polled and not copied (records the provenance check skipped,
	// transaction markers) once nothing is in flight (-1 if none).
	Committed int64 `json:"committed"`
	// Lag is SourceEnd - Replicated in records (0 when unknown). SourceEnd
	// is as of the partition's last answered fetch (or the open-transaction
	// check, every 5 s reading read_committed): right after records were
	// produced, Lag may still be 0 until the fetch of them is answered. To
	// know that given records are replicated, compare Replicated with
	// their offsets.
	Lag int64 `json:"lag"`
	// LagUnknown is true when the lag could not be computed (Lag is then
	// 0; the runner's JSON shows null).
	LagUnknown bool `json:"lag_unknown,omitempty"`
	// Records and Bytes acknowledged by the target since start (Bytes: the
	// source records' keys, values, header keys and header values).
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// OpenTransactionSince is set when a source transaction left open holds
	// the partition back: reading read_committed, replication reached the
	// partition's last stable offset, which has stayed below the high
	// watermark since this time for at least
	// FlowConfig.OpenTransactionAfter. The records after it are replicated
	// once the transaction commits or aborts (the producer's
	// transaction.timeout.ms bounds that).
	OpenTransactionSince time.Time `json:"open_transaction_since,omitzero"`
	// Since is when the partition entered State: for FAILED, when the
	// error stopped it; otherwise when this member started (or last
	// restarted) replicating it (RETRYING does not move it).
	Since time.Time `json:"since,omitzero"`
	// NextRetry is set while a FAILED partition waits for its automatic
	// restart: every produce error that is not transient is retried with
	// backoff (an authorization error while ACLs roll out, an unknown
	// topic, partition or topic ID, a policy violation, ...), except an
	// error about the record itself (MESSAGE_TOO_LARGE,
	// RECORD_LIST_TOO_LARGE, INVALID_RECORD, CORRUPT_MESSAGE,
	// INVALID_TIMESTAMP, UNSUPPORTED_FOR_MESSAGE_FORMAT) and a partition
	// stopped at a source gap (FlowConfig.OnGap GapStop). NextRetry is zero
	// for those: they wait for [Mirror.RestartFailed] (Kafka Connect: POST
	// /connectors/<name>/restart?onlyFailed=true, KIP-745).
	NextRetry time.Time `json:"next_retry,omitzero"`
	// Retries counts the automatic restarts of the partition since it
	// last replicated a record (the backoff doubles with each, from 5 s to
	// 5 min); 0 for a partition that waits for Mirror.RestartFailed, and
	// reset to 0 once a record is replicated again.
	Retries int `json:"retries,omitempty"`
}

// GroupStatus is the checkpoint and offset-sync state of one consumer group.
type GroupStatus struct {
	// Group is the consumer group id (the same on both clusters).
	Group string `json:"group"`
	// State is [checkpoint.StateSynced] ("synced"),
	// [checkpoint.StateCheckpointed] ("checkpointed") or
	// [checkpoint.StateSkipped] ("skipped").
	State checkpoint.GroupState `json:"state"`
	// Reason says why a group was skipped or is not fully synced: one of the
	// checkpoint.Reason* constants (e.g. [checkpoint.ReasonActiveOnTarget],
	// "active on target") or an error message; empty otherwise.
	Reason string `json:"reason,omitempty"`
	// SafeToSwitch is true when, as of Updated, every partition the group
	// committed on the source has its source offset within what was
	// replicated, and its target offset (the group's committed offset on
	// the target with FlowConfig.SyncGroupOffsets, else the latest
	// checkpoint) equals the exact translation of that source offset (see
	// package checkpoint): a consumer of the group stopped on the source
	// before Updated and started on the target re-reads 0 records and skips
	// 0. The target group's offset is the one offset sync last fetched or
	// committed: an idle group's target offsets are fetched again when its
	// translations or its state on the target change, and at a sweep
	// every minute (every sync interval when longer), so a commit into the
	// target group by another client (an operator's reset) shows by the
	// next sweep; check the target group itself, or commit it, right
	// before a switch that must not wait. It is never true for data
	// whose offset runs are missing (copied by Apache MM2 or an older
	// kmirror). Only the process that runs the
	// flow's checkpoint emitter reports groups: with several members
	// sharing a flow, the one holding the singleton duties (slot 0); the
	// others report no groups.
	SafeToSwitch bool `json:"safe_to_switch"`
	// Offsets are the latest translated offsets per target topic-partition.
	// Read only: snapshots taken while a group's offsets do not change
	// share its maps, as they share Partitions.
	Offsets map[string]map[int32]int64 `json:"offsets,omitempty"`
	// Partitions detail every replicated partition the group committed:
	// source offset, translation, last checkpoint, target group offset and
	// the reason it is not synced, if any. Read only: shared by the
	// snapshots taken while the group does not change.
	Partitions []checkpoint.PartitionStatus `json:"partitions,omitempty"`
	// Updated is when the group's source offsets were last fetched: a
	// SafeToSwitch older than the group's last source commit is stale.
	Updated time.Time `json:"updated,omitzero"`
	// SourceUnreachable is true when the last fetch of the group's source
	// offsets failed (the source cluster does not answer; Reason has the
	// error): SafeToSwitch is then false, since nothing proves the group
	// stopped moving. In an unplanned failover look at LastCheckpoint and
	// CheckpointExact instead.
	SourceUnreachable bool `json:"source_unreachable,omitempty"`
	// LastCheckpoint is when the group's last checkpoint was written on the
	// target (MM2's emit.checkpoints.interval.seconds sets how old it can
	// get): a consumer failing over re-reads what the group processed on
	// the source after it.
	LastCheckpoint time.Time `json:"last_checkpoint,omitzero"`
	// CheckpointExact is true when the latest checkpoint of every
	// partition the group committed is the exact translation of the source
	// offset last fetched (the checkpoint's kmirror-translation header says
	// "exact"): resuming there re-reads nothing the group had committed
	// before LastCheckpoint.
	CheckpointExact bool `json:"checkpoint_exact"`
}

// GapError reports records that were on the source but are gone before
// kmirror replicated them (retention, DeleteRecords, topic re-created).
// Records in [From, To) of the partition were never replicated.
type GapError struct {
	// Flow is the flow's name, "source->target".
	Flow string `json:"flow"`
	// Topic is the SOURCE topic name (not the remote topic's).
	Topic string `json:"topic"`
	// Partition is the partition, the same on both clusters.
	Partition int32 `json:"partition"`
	// From and To are source offsets: [From, To) was lost. From == To when
	// the source offsets went back (topic re-created or log truncated).
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Reason is free text for people (what was seen, what kmirror did); its
	// wording may change between versions, so do not match on it.
	Reason string `json:"reason"`
	// At is when the gap was detected.
	At time.Time `json:"at"`
}

// Error names the flow, the source partition, the number of records lost,
// their offsets and the reason.
func (g *GapError) Error() string {
	return fmt.Sprintf("mirror: flow %s: %s[%d]: %d records lost before replication (offsets %d to %d): %s",
		g.Flow, g.Topic, g.Partition, g.To-g.From, g.From, g.To-1, g.Reason)
}

// PartitionError is a non-retriable error that stopped one partition
// (FAILED); the partition comes back automatically when the cause can go
// away, else with [Mirror.RestartFailed].
type PartitionError struct {
	// Flow is the flow's name, "source->target".
	Flow string
	// Topic is the SOURCE topic name (not the remote topic's).
	Topic string
	// Partition is the partition, the same on both clusters.
	Partition int32
	// Err is the underlying error (see Unwrap).
	Err error
}

// Error names the flow and the source partition, then the underlying
// error.
func (e *PartitionError) Error() string {
	return fmt.Sprintf("mirror: flow %s: %s[%d]: %v", e.Flow, e.Topic, e.Partition, e.Err)
}

// Unwrap returns Err.
func (e *PartitionError) Unwrap() error { return e.Err }
