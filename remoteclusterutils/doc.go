// Package remoteclusterutils is the failover client for consumer code: the Go
// counterpart of MM2's MirrorClient and RemoteClusterUtils
// (org.apache.kafka.connect.mirror). It answers, from
// the TARGET cluster alone, "where should consumer group G resume on this
// cluster after failing over from cluster A?" and "which clusters replicate
// into this one, and how many hops away are they?".
//
// # Start here
//
// One-off use (RemoteClusterUtils style; the call builds and closes a kgo
// client):
//
//	offs, err := remoteclusterutils.TranslateOffsets(ctx, "us-west", "billing",
//		remoteclusterutils.WithClientOpts(kgo.SeedBrokers("target:9092")))
//	if err != nil {
//		return err
//	}
//	// offs is kadm.Offsets keyed by target topic names ("us-west.orders").
//	adm, err := kadm.NewOptClient(kgo.SeedBrokers("target:9092"))
//	if err != nil {
//		return err
//	}
//	defer adm.Close()
//	// (*kadm.Client).CommitAllOffsets also fails when a single partition was refused.
//	err = adm.CommitAllOffsets(ctx, "billing", offs)
//
// Commit only while the group has no active members on the target (stop or
// do not yet start its consumers there): the broker refuses, partition by
// partition, a commit without a member id into a group with members
// (typically UNKNOWN_MEMBER_ID). kadm's CommitOffsets reports such refusals
// only in its per-partition results (check resp.Error()); CommitAllOffsets
// returns them as its error. The package example ExampleTranslateOffsets is
// a complete program.
//
// Long-lived use (MirrorClient style) wraps a client the caller owns and
// closes:
//
//	target, err := kgo.NewClient(kgo.SeedBrokers("target:9092"))
//	if err != nil {
//		return err
//	}
//	defer target.Close()
//	rc := remoteclusterutils.NewClient(target)
//	offs, err := rc.TranslateOffsets(ctx, "us-west", "billing")
//	...
//	all, err := rc.Checkpoints(ctx, "us-west") // every group, one read
//
// # What is read
//
// Translated offsets come from the checkpoints topic that MM2 (or kmirror)
// writes on the target cluster, CheckpointsTopic(sourceAlias) of the
// replication policy ("us-west.checkpoints.internal" by default;
// "us-west__checkpoints__internal" with separator "__", unless the
// policy disables the internal-topic separator). Records are MM2's
// Checkpoint format (org.apache.kafka.connect.mirror.Checkpoint), decoded by
// package checkpoint, so the topics written by Apache MM2 2.4+ and by
// kmirror read the same. The policy ([WithPolicy]) must be the writer's: its
// separator settings name the checkpoints topic; the identity policy does
// not change that name, only how topic names are parsed.
//
// The rules follow MirrorClient.remoteConsumerOffsets, with deliberate
// improvements where Java fails or returns partial results:
//
//   - Only partition 0 is read, from the log start offset to the end offset
//     observed at the call; records appended later are not waited for.
//   - Per (group, topic, partition) the LAST valid record in log order wins,
//     even if its offset is lower than an earlier one's (an upstream rewind
//     makes MM2 emit a lower checkpoint).
//   - Undecodable records are skipped (as Java does). Records with a negative
//     downstream offset are skipped where Java throws; records with a
//     negative partition or an empty topic, which Java returns as they are,
//     are skipped too (no consumer can resume there). A tombstone (nil value) removes the earlier
//     checkpoint of its key, which is what log compaction converges to, so
//     results do not change when the cleaner runs; Java throws. Versions
//     other than 0 are parsed with the v0 layout, trailing bytes ignored.
//     [ReadStats] (from [Client.Checkpoints]) and [WithLogger] report all of
//     these.
//   - The topic is read with isolation level read_committed: checkpoints in
//     aborted transactions (MM2 with exactly-once source support) are
//     ignored, and the end offset is the last stable offset. Java's
//     MirrorClient reads uncommitted; for non-transactional writers (the
//     default) the results are identical.
//   - Every call is bounded by its context; without a deadline the default
//     [DefaultTimeout] (30 s, see [WithTimeout]) applies. When it expires the
//     call fails with an error wrapping context.DeadlineExceeded and returns
//     no partial offsets (Java silently returns what it read so far, and may
//     overrun its timeout).
//   - A missing checkpoints topic is a *[NoCheckpointsTopicError] naming the
//     topic, the alias and the aliases whose checkpoints topics do exist (Java
//     blocks until the consumer's API timeout); right after a mirror starts
//     it is transient, so a caller retries it too. A topic that holds no
//     checkpoint at all yet (the emitter's first emission has not happened)
//     is a *[NoCheckpointYetError] wrapping [ErrNoCheckpointYet]: retry
//     later (Java returns an empty map). A group with no checkpoints in a
//     topic that holds other groups' is unknown to the emitter: empty
//     offsets and no error, as in MM2.
//   - The caller's *kgo.Client is used with raw ListOffsets and Fetch
//     requests: its consumer group, assignments and positions are untouched
//     and it is never closed. MM2's MirrorClientConfig keeps only the
//     connection settings (bootstrap.servers, security.protocol, ssl.*,
//     sasl.*) and drops the rest; here the caller's client is used as
//     configured.
//
// Translated offsets are at-least-once for MM2 3.5+ and kmirror writers: a
// consumer that resumes there may re-read records it processed on the
// source, never skip any (MM2 translates a group offset to the newest offset
// sync at or before it, plus one; MM2 3.4.0 and older extrapolated and could
// be ahead: KAFKA-12468, KAFKA-13659). kmirror's checkpoints are
// the exact translation wherever its offset runs prove it (see package
// checkpoint): the consumer then re-reads nothing it had processed before
// the commit the checkpoint was taken from; MM2's re-read up to the distance
// to the nearest offset sync. Checkpoints name the target topics the
// writer's replication policy created ("us-west.orders", or "orders" under
// IdentityReplicationPolicy); committing offsets for a topic or partition
// the target does not have fails on the broker ([Client.TranslateDetailed]
// marks such checkpoints MissingOnTarget, and [TranslatedOffsets] leaves
// them out).
//
// # Every partition accounted for, and failing back
//
// [Client.TranslateDetailed] (one group) and [Client.TranslateGroups]
// (every group a filter accepts, one read) return what TranslateOffsets
// returns plus, per partition, the source offset, whether the translation
// is exact, safe with a bound on records re-read, or unknown (kmirror's
// checkpoints say so in a header, checkpoint.TranslationHeader; Apache
// MM2's do not), the checkpoint's time, and the partitions the group never
// committed on a topic it committed another partition of: TranslateOffsets
// leaves those out, and a consumer started with auto.offset.reset=none
// never reads them; and the checkpoints of partitions the target no longer
// has (a remote topic deleted, or re-created with fewer partitions:
// checkpoints are never deleted), marked MissingOnTarget; those a kmirror
// emitter translated for an earlier log of the remote topic (deleted and
// re-created since), marked OtherLog, which [TranslatedOffsets] gives at
// the current log's start; and those below
// their partition's log start on the target, marked BelowLogStart with the
// log start, which [TranslatedOffsets] gives instead (a consumer at the
// checkpoint would reset by auto.offset.reset, to the log end by default). The headers are on the target, so the answer needs no
// access to the source or its offset syncs: what an unplanned failover
// needs.
//
// [TranslateBack] maps a group's positions on remote topics back to the
// source topics for failing back, from the forward flow's offset runs and
// offset syncs (MM2's checkpoints cannot: the reverse flow never
// replicates a remote topic back), and exactly from the copies themselves
// with [BackIndex.WithRecords]. [BackIndex.ForRemoteTopicIDs] drops the
// runs and syncs recorded for another topic ID than a remote topic's
// current one, when it may have been re-created (those recording none,
// MM2's, are kept).
//
// # Translation from the data
//
// kmirror stamps each copy's source offset into its provenance header, so
// the target's own log maps source offsets to target offsets.
// [TranslateFromRecords] translates source offsets forward from it (a
// bounded binary search over each remote partition; it declines rather
// than guess: not caught up, non-monotonic source offsets, no stamped
// copy), and [RefineFromRecords] upgrades the checkpoint translations
// that are not exact (MM2's, or safe ones) when the copies answer exactly.
//
// # Topology
//
// [Client.ReplicationHops], [Client.UpstreamClusters],
// [Client.HeartbeatTopics], [Client.CheckpointTopics], [Client.RemoteTopics]
// and [Client.RemoteTopicsFor] list the cluster's topic names and parse them
// with the policy, as MirrorClient does; record contents are not read. Each
// call asks the brokers, as MirrorClient's Admin does, never franz-go's
// metadata cache: a topic created or deleted a moment ago is seen, on a
// long-lived Client too, and the checkpoints topic of a translation is
// looked up the same way. The
// first four are also package-level functions ([ReplicationHops],
// [UpstreamClusters], [HeartbeatTopics], [CheckpointTopics]), as in MM2's
// RemoteClusterUtils, which has no remoteTopics: for the remote topics, use a
// Client. Heartbeats topics carry
// the topology: "us-west.heartbeats" on this cluster means us-west replicates
// into it (1 hop), "us-central.us-west.heartbeats" that us-west is 2 hops
// away through us-central. They exist only where heartbeats are emitted into
// the upstream cluster and replicated (MM2 does so by default). An MM2
// properties file gives kmirror the same heartbeat-only reverse pair
// (mirror.Properties); a service that embeds a flow A->B with mirror.WithFlow
// alone emits none into A, so on B ReplicationHops("A") is -1 and
// UpstreamClusters is empty until it also adds
// mirror.WithFlow(mirror.FlowConfig{Source: "B", Target: "A", Disabled: true}).
//
// All types are safe for concurrent use.
package remoteclusterutils
