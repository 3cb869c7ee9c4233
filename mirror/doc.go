// Package mirror is kmirror's replication engine: what MM2's
// MirrorSourceConnector, MirrorCheckpointConnector and
// MirrorHeartbeatConnector do, as one Go value.
//
// # Model
//
// A [Mirror] runs replication flows "source->target" between clusters named
// by aliases ([WithCluster], [WithFlow]). A flow copies every source topic
// its filters select (MM2's topics / topics.exclude, full-match regexes) to
// a remote topic on the target named by the replication policy
// (us-east-1.orders under the default policy), with the same partition
// count, the source's topic configs minus config.properties.exclude, and
// every record copied to the same partition with its key, value (nulls
// stay null), headers and timestamp, in order. New topics and partition
// increases are picked up every refresh.topics.interval.seconds. Internal
// topics (Kafka 4.0's rule: MM2's own mm2*.internal and checkpoints topics,
// and Kafka's "__"/"." names; user topics such as billing.internal
// replicate) and topics that came from the target (cycles) are never
// replicated; heartbeats topics are.
//
// # Topologies
//
// Records carry a [ProvenanceHeader] listing the IDs of the clusters they
// were copied from; a flow never writes a record into a cluster it has been
// on, so IdentityReplicationPolicy in both directions, rings, and two
// deployments that name the same clusters differently do not loop
// ([FlowConfig.DisableProvenanceHeader] turns it off for byte-exact
// copies). Two flows that would write one remote topic are refused unless
// every one sets [FlowConfig.AllowTopicCollisions]. Every topic a flow's
// filter selects but does not replicate is listed with its reason in
// [FlowStatus.Skipped] and logged once.
//
// # Members
//
// Several processes may run the same flow (replicas of a service, or an
// operator's workers): they share it through a Kafka consumer group on the
// target ("kmirror.<source>-><target>", [FlowConfig.GroupID]). The flow's
// source partitions are spread over [FlowConfig.Tasks] slots (MM2's
// tasks.max, default 8), the partitions of the coordination topic
// mm2-kmirror-units.<source>.internal on the target; the group assigns the
// slots to the members (cooperative-sticky), each member replicates the
// partitions of its slots, and the member holding slot 0 also creates
// topics, syncs configs and ACLs and emits checkpoints and heartbeats. A
// member that stops gracefully stores its resume points before its slots
// move (no duplicate); the slots of a member that dies move after the
// session timeout ([FlowConfig.SessionTimeout]). [FlowStatus.Member] shows a
// member's slots; [Mirror.ResizeSlots] changes the number of slots offline.
//
// # Compression and shallow copy
//
// The target producer compresses with the codec of the source data (lz4
// data is written lz4, so the target stores about what the source stores),
// unless the target's producer options configure one
// (<target>.producer.compression.type, kgo.ProducerBatchCompression), which
// wins; MM2's producer writes compression.type=none by default.
// [FlowConfig.ShallowCopy] (shallow.copy.enabled, at least once, with the
// provenance header off) goes further: record batches that need no change
// are written to the target as they were fetched, without being
// decompressed, and the others are replicated record by record.
//
// # Guarantees
//
//   - Exactly once with [FlowConfig.ExactlyOnce] (KIP-618, MM2's
//     exactly.once.source.support=enabled): each slot writes its records
//     and resume points in one transaction on the target, and the member
//     taking a slot over fences the previous owner's producer first, so a
//     read_committed consumer of the remote topics sees every source record
//     once after crashes and hand-overs.
//   - Sources are read read_committed by default ([FlowConfig.Isolation]):
//     records of aborted source transactions are never replicated (MM2
//     copies them unless configured otherwise, KAFKA-14021).
//   - Otherwise at least once, zero loss: a record's resume point (MM2's Connect
//     source offset, stored in mm2-offsets.<source>.internal on the target)
//     is stored only after the target acknowledged it. After a crash a flow
//     replays at most the records acknowledged since the last stored resume
//     point: at most one offset.flush.interval.ms (kmirror default 5 s,
//     MM2 60 s) of replication. A graceful stop (context canceled, Close)
//     flushes and stores the final resume points: no duplicate.
//   - Resume points use MM2's exact key and value bytes and partitioning,
//     so kmirror resumes where an MM2 deployment stopped, and MM2 where
//     kmirror stopped.
//   - Offset syncs follow MM2's emission rules (offset.lag.max, gaps,
//     rewinds) plus a sync of every partition's newest position once per
//     flush interval, so quiet topics translate to their end.
//   - Records the source lost before they were replicated (retention,
//     DeleteRecords, a re-created topic) are reported as a [GapError] in
//     [Mirror.Status], a metric and a log line; [GapStop] stops the
//     partition instead of continuing from the earliest record.
//   - Non-retriable errors (record too large for the target, authorization
//     denied, target topic deleted) stop the partition with a
//     [PartitionError] in its status, never the others; retriable ones are
//     retried forever with backoff and shown as RETRYING. A stopped
//     partition whose cause can go away (authorization, unknown topic or
//     topic ID, policy) restarts by itself with backoff (5 s doubling to 5
//     min, [PartitionStatus.NextRetry]); one stopped by the record's own
//     error (too large, invalid, corrupt, bad timestamp) waits for
//     [Mirror.RestartFailed] (this member's partitions) or
//     [Mirror.RestartFailedInCluster] (every member's). A remote topic
//     deleted and re-created on the target is refilled from the source's
//     log start.
//   - One topic never stops the others: when the target refuses to create
//     a remote topic, add its partitions or alter its configs (a policy,
//     an ACL, a quota), the other topics replicate, the flow stays
//     RUNNING, and the topic is listed in [FlowStatus].TopicErrors (its
//     records count in the flow's lag) and retried until it succeeds.
//
// # Memory
//
// Each slot's producer gets max(MaxBufferedBytes/Tasks, 1 MiB) of buffer
// (MaxBufferedBytes default 32 MiB) and its consumer fetches at most
// max(FetchMaxBytes/Tasks, 1 MiB, FetchMaxPartitionBytes) per response
// (FetchMaxBytes default 16 MiB), holding up to two responses per source
// broker (one being copied, one buffered by the client). A process owning
// all N slots of a flow therefore holds at most about
// N × (buffer + 2 × brokers × fetch) bytes of record payload, 64 MiB with
// the defaults and one source broker, and a member owning k of N slots
// k/N of it. Each record held also costs a few hundred bytes of
// bookkeeping, which dominates for records of a hundred bytes or less, so
// the producer's buffer counts every record as at least 2 KiB: a slot's
// buffer of b bytes holds at most b/2048 records (at least 512), which
// bounds the memory of small records near the budget. A link with a long
// round trip that copies small records faster with more of them in flight
// needs a larger MaxBufferedBytes. Fetch
// responses are counted as they are held once decompressed, not as the
// source stores them: each consumer reads franz-go's measure of every
// batch (its bytes on the wire and decompressed) and asks for its budget ×
// wire / decompressed, at least 256 KiB and 1 MiB until its first batches
// are read, so a topic compressed r times does not hold r times the
// budget (up to r = budget / 256 KiB, where the floor takes over). With ShallowCopy batches stay
// compressed and are counted as stored.
//
// These bound what is live. Go's collector lets the heap grow to about
// twice the live heap (GOGC=100), so a process's peak RSS is about twice
// its largest live heap. The engine sets no memory limit of its own (a
// library should not change a process's collector settings): Go's soft
// memory limit (GOMEMLIMIT, runtime/debug.SetMemoryLimit), the
// counterpart of MM2's -Xmx, caps the heap near a size set above the live
// heap, for more collector CPU. At 6 000 partitions and 80 000 group
// partitions it held a member's peak RSS to 194 MiB (about 300 without)
// for 1.3x its idle CPU.
//
// # Lifecycle
//
// [New] validates the configuration and does no I/O. [Mirror.Run] blocks
// until its context is canceled (graceful stop, returns nil) or a fatal
// error. [Mirror.Close] is idempotent and waits for every goroutine.
// [Mirror.Status] is a cheap snapshot for health checks.
package mirror
