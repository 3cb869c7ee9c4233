// Package checkpoint implements MirrorMaker 2's (MM2) consumer-group offset
// translation: the record formats of the offset-syncs and checkpoints topics
// ([OffsetSync], [Checkpoint]) and of kmirror's offset runs ([OffsetRun]);
// the stores that map source offsets to target offsets ([OffsetSyncStore],
// [RunStore], [Translator]), which are pure (no I/O, no clock, no
// goroutines); and the [Emitter], MM2's MirrorCheckpointTask, which reads
// those topics, translates the source groups' offsets, writes checkpoints
// and optionally commits them into the target's idle groups. The engine of
// package mirror runs one Emitter per flow; use the records and stores
// directly to read or translate MM2's topics yourself.
//
// # Model
//
// While replicating, the source engine writes an [OffsetSync] (upstream
// topic, partition, upstream offset, downstream offset) for some of the
// records it has written to the target: the first one of a partition, every
// record after an upstream gap or a downstream rewind, every offset.lag.max
// records, and the newest one at every offset flush (MM2's
// OffsetSyncWriter). The syncs go to partition 0 of the offset-syncs topic,
// in MM2's format, so that MM2's checkpoint connector can read them.
//
// kmirror's engine also writes offset runs ([OffsetRun]) to its own
// offset-runs topic beside it ([OffsetRunsTopic]): the proof, from the target's
// acknowledgements, that a run of source records landed contiguously on the
// target, and which replication session (one replicator's uninterrupted
// copying of a partition, from its resume point on) wrote it. MM2 never
// reads that topic.
//
// The checkpoint [Emitter] reads both topics in log order into an
// [OffsetSyncStore] and a [RunStore], and for every committed offset G of a
// source consumer group asks a [Translator] for the target offset. It
// writes the translated [Checkpoint] to <source>.checkpoints.internal only
// when it is more recent than the last one written for the group and
// partition (MM2's rule: none yet, a greater target offset, or a source
// offset that went back); at start-up it reads that topic back to know the
// last ones.
//
// # The exact translation
//
// For a group at source offset u of a partition (u is the next record it
// reads), consider the source records at offsets >= u that were
// replicated. The last copy of a record is the latest one written to the
// target partition (a replay after an unclean stop writes records again;
// the earlier copies are duplicates), and a copy no longer counts once a
// later replication session passed the record's offset without copying it
// (the source had compacted it away meanwhile: a consumer of the source
// would not see it either). The exact translation of u is the smallest
// target offset of such a last copy, or, when there is none, the target
// offset the next copy will take (the end of what was replicated). It is
// the largest target offset d such that every replicated record at or
// after u lies at or after d: a consumer that starts there reads every
// record the group had not consumed and, as far as the data allows, none
// it had. Transaction markers, aborted records and compaction holes on
// either side take no part: they are not records a consumer reads.
//
// The [Translator] answers with the exact translation wherever the offset
// runs prove it ([Translation.Exact]): for every group offset within what
// the runs describe, on busy and quiet topics and for lagging groups alike,
// across transaction markers and compaction holes, after replays. Where
// they do not (a group offset beyond what was replicated as of the last
// offset flush, runs deleted by the topic's retention or missing, a crash
// that left unrecorded copies between two sessions), it answers with a
// lower, safe offset, never with a higher one. Without any offset run for
// a partition (replication by Apache MM2 or a kmirror before offset runs)
// it applies MM2's rule to the offset syncs: with (u', d') the newest
// retained sync having u' <= G, d' when G == u' and d'+1 otherwise (MM2
// 3.5+), never exact.
//
// # Guarantees
//
//   - Never past replicated data: a translated offset is never past the
//     exact translation, nor past the target log end. A failed-over
//     group may re-read records; it
//     never skips one. With offset runs this holds at every moment, also
//     while a replay after an unclean stop is under way; MM2's rule on
//     offset syncs alone can translate past the older copies until such a
//     replay caught up (MM2 has the same limitation).
//   - Exact where claimed: [Translation.Exact] is true only when the offset
//     is the exact translation as of the runs read (runs are written at
//     every offset flush, and a new session announces itself with its first
//     record). Exactness claims assume every replication session wrote at
//     least its first run, and that a session resuming from a resume point
//     reads from after the last resume point its predecessor reported.
//   - Incarnations: runs carry the source topic's ID; a group's offsets are
//     translated only with the runs of the topic's current ID, and a
//     re-created topic's groups wait ([ReasonNewIncarnation]) until its
//     first run. Offset syncs carry no ID: MM2's rule cannot tell.
//   - No answer rather than a wrong one: no translation before the initial
//     read finished, for partitions without syncs or runs (nothing
//     replicated yet; the source group offset is never copied literally),
//     and for group offsets older than every retained sync. No checkpoint
//     is written then.
//   - Checkpoints never go backwards per (group, target topic, partition)
//     except when the group itself was rewound on the source or the target
//     log they described is gone (next item), are never negative, and an
//     unchanged position is not written again.
//   - Checkpoints are never past the target's log end. After each
//     emission's translations the emitter lists the target's cluster ID,
//     the remote topics' IDs and their log ends. Offset syncs and runs
//     that describe a previous target log are discarded
//     ([ReasonStaleTarget]) and the partition waits for the offset syncs
//     that the replication (kmirror, or MM2's MirrorSourceConnector)
//     writes for the current log: syncs and runs recorded
//     ([TargetClusterHeader]) for another target cluster (a target rebuilt
//     empty under the same alias), those recorded ([TargetTopicIDHeader])
//     for an older ID of their remote topic, those of a remote topic
//     re-created since a checkpoint recorded its topic ID or since the
//     previous emission unless they record the current ID (kmirror's
//     replicator records it, so the syncs of a re-created topic's refill
//     are kept however soon they arrive: an idle partition gets no
//     others), and any whose translation is past the log end (the only
//     check for MM2-written syncs, which record no identity: a re-created
//     remote topic that grew past the old offsets before a restart goes
//     unnoticed until its first new sync resets the history). Syncs that
//     arrive while an emission lists the target are judged by the next
//     emission, which translates from them. A checkpoint recorded for another target log, or past the
//     log end, is forgotten, so the corrected one is written even though
//     it is lower. MM2 never writes a lower checkpoint unless the group
//     rewound upstream, and keeps pointing consumers that fail over past
//     the new log end (they skip records once it grows); going down there
//     is safe: the old value named records of a log that no longer
//     exists, every reader takes the last record per key, and a lower
//     offset can only make a failed-over consumer re-read, never skip.
//     Group offset sync commits a partition only while the remote topic's
//     ID is the one the last successful target listing of an emission
//     showed: a topic re-created since (an emission whose listing failed
//     checks nothing) waits for the next emission
//     ([ReasonTargetUnchecked]). Under an unchanged ID the round commits
//     the translation, or the last checkpoint when that is higher and
//     records the remote topic's ID, checked against the log end (a
//     checkpoint records the ID only when the offset syncs and runs it
//     was translated from record it: MM2's replicator's never do). A
//     loaded checkpoint that records no topic ID (MM2's, an older
//     release's: it may be of a previous remote log) is forgotten and
//     written again lower when it is above what the translation of a
//     later source offset allows, and group offset sync never falls back
//     on it.
//   - Retention: per partition MM2's 64 exponentially spaced sync slots, the
//     last n syncs ([WithRecentHistory]), and up to
//     [DefaultRunsPerPartition] runs per partition; runs are deleted from the
//     offset-runs topic after [OffsetRunsRetention].
//
// # Compatibility and differences from MM2
//
// The offset syncs keep MM2's format and MM2's emission rules, so MM2's
// checkpoint connector reading a kmirror-written offset-syncs topic keeps
// working; Java's RemoteClusterUtils, which reads the checkpoints, gets
// kmirror's exact translations. By default the store follows MM2's
// OffsetSyncStore (Kafka 3.5.2+, KAFKA-14666, KAFKA-15202) slot by slot,
// including the start-up variant that keeps only the last sync per
// partition read during start-up ([WithMustReadToEnd], KAFKA-15905). Two
// deliberate differences, both optional: a downstream rewind (target
// partition recreated) discards the older syncs
// ([WithResetOnDownstreamRewind], on by default), and the recent history
// ([WithRecentHistory]). The recent history is off in a store built by
// [NewOffsetSyncStore] without options, which then keeps exactly MM2's 64
// slots; the checkpoint [Emitter], which the engine in package mirror runs,
// turns it on with [DefaultRecentHistory] (1024) syncs per partition unless
// [EmitterConfig.RecentHistory] says otherwise.
//
// # Concurrency
//
// [OffsetSyncStore], [RunStore] and [Translator] are NOT safe for
// concurrent use: one goroutine owns them (the Emitter's loop does), or the
// caller serialises all calls. They never block and never start goroutines;
// [OffsetSyncStore.Add] allocates only for a new partition and while a
// recent history fills, [OffsetSyncStore.Translate] never allocates.
package checkpoint
