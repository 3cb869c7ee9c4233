// Package checkpoint holds the pure, I/O-free core of kmirror's consumer
// group offset translation: the MirrorMaker 2 (MM2) record formats of the
// offset-syncs and checkpoints topics, the offset-sync history that maps
// source offsets to target offsets, and the decision which checkpoints to
// write. The engines in package mirror do the Kafka I/O and call into it.
//
// # Model
//
// While replicating, the source engine writes an [OffsetSync] (upstream
// topic, partition, upstream offset, downstream offset) for some of the
// records it has written to the target: the first one of a partition, every
// record after an upstream gap or a downstream rewind, every offset.lag.max
// records, and the newest one at every offset flush (docs/mm2-compat.md
// §5.5). The syncs go to partition 0 of the offset-syncs topic.
//
// The checkpoint engine reads that topic in log order into an
// [OffsetSyncStore] ([OffsetSyncStore.Add]), calls
// [OffsetSyncStore.MarkReadToEnd] when the initial read is done, and then,
// for every committed offset G of a source consumer group, asks
// [OffsetSyncStore.Translate] for the target offset. The answer comes from
// the newest retained sync (u, d) with u <= G: d when G == u, d+1 otherwise
// (MM2 3.5+). The translated [Checkpoint] is offered to a [CheckpointState]
// ([CheckpointState.Next]), which says whether it must be written to
// <source>.checkpoints.internal; at start-up the state is primed from that
// topic with [CheckpointState.Load].
//
// # Guarantees
//
//   - At-least-once, never ahead: a translated offset is never past the
//     target position of the first record the group has not consumed, nor
//     past the target log end (invariant I1 of docs/field-failures.md). A
//     failed-over group may re-read records; it never skips one. The price is
//     precision: a group between two syncs is translated to one past the
//     older sync.
//   - No answer rather than a wrong one: Translate reports ok=false before
//     the initial read finished, for partitions without syncs (nothing
//     replicated yet; the source group offset is never copied literally),
//     and for group offsets older than every retained sync. No checkpoint is
//     written then.
//   - Checkpoints never go backwards per (group, target topic, partition)
//     except when the group itself was rewound on the source, are never
//     negative, and an unchanged position is not written again.
//   - Retention: per partition MM2's 64 exponentially spaced slots (the
//     older a group's offset, the coarser its translation), optionally plus
//     the last n syncs ([WithRecentHistory]) so that lagging groups are
//     translated to within one sync interval.
//
// What is not translated: partitions of topics that are not replicated (no
// syncs), offsets older than the retained history, and offsets of groups
// on topics whose syncs were compacted away before the store started.
//
// # Compatibility and differences from MM2
//
// By default the store follows MM2's OffsetSyncStore (Kafka 3.5.2+,
// KAFKA-14666, KAFKA-15202) slot by slot, including the start-up variant
// that keeps only the last sync per partition read during start-up
// ([WithMustReadToEnd], KAFKA-15905). Two deliberate differences, both
// optional: a downstream rewind (target partition recreated) discards the
// older syncs ([WithResetOnDownstreamRewind], on by default), and the recent
// history ([WithRecentHistory]). The recent history is off in a store built
// by [NewOffsetSyncStore] without options, which then keeps exactly MM2's 64
// slots; the checkpoint [Emitter], which the engine in package mirror runs,
// turns it on with [DefaultRecentHistory] (1024) syncs per partition unless
// [EmitterConfig.RecentHistory] says otherwise.
//
// # Concurrency
//
// [OffsetSyncStore] and [CheckpointState] are NOT safe for concurrent use:
// one goroutine (the checkpoint engine's loop) owns them, or the caller
// serialises all calls. They never block and never start goroutines;
// [OffsetSyncStore.Add] allocates only for a new partition and while a
// recent history fills, [OffsetSyncStore.Translate] never allocates.
package checkpoint
