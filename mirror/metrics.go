package mirror

import (
	"reflect"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Metrics receives the measurements of a [Mirror], for the metrics system
// of the caller's choice; pass it with [WithMetrics]. Package
// github.com/kmirror/kmirror/mirror/mirrorprom implements it with
// Prometheus (the metrics the kmirror runner serves); a program that does
// not import that package does not link Prometheus.
//
// Events (records, bytes, latencies, errors, offset syncs, resume-point
// stores, rebalances, checkpoints) are reported through Metrics and the
// recorders it returns. Gauges are not: read them from [Mirror.Status]
// when they are collected (lag, source end and replicated offsets, flow
// and partition states, slots owned, heartbeat age, group states).
//
// The engine calls these methods from many goroutines at once:
// implementations must be safe for concurrent use, must not block, and
// must not call back into the Mirror except [Mirror.Status] outside of
// these calls. [PartitionMetrics] methods run once per replicated record.
//
// New calls Flow once per configured flow, then Init once when the
// configuration is valid; when New fails, Init is not called and nothing
// the recorders did needs undoing. An implementation that also has a
// method Release() is told by [Mirror.Close] and [Mirror.Shutdown], once,
// after every goroutine of the Mirror stopped, that nothing will be
// recorded any more: mirrorprom unregisters its collectors then, so that a
// service that builds a new Mirror in the same process can register it on
// the same Registerer.
type Metrics interface {
	// Init is called once by New, after every Flow call, with the Mirror
	// being built: an implementation that reports gauges keeps m and reads
	// m.Status when its gauges are collected (never before New returned).
	// An error (for example metrics already registered under the same
	// names) makes New fail with an error wrapping it.
	Init(m *Mirror) error
	// Flow returns the recorder of the flow source->target (cluster
	// aliases); nil records nothing for that flow.
	Flow(source, target string) FlowMetrics
}

// FlowMetrics records the events of one flow, source->target. See
// [Metrics] for the rules every method follows.
type FlowMetrics interface {
	// Partition returns the recorder of one remote topic-partition (the
	// topic's name on the target; the partition number is the same on both
	// clusters). It is called when this process starts replicating the
	// partition, again after a re-assignment, and may return nil to record
	// nothing for it.
	Partition(remoteTopic string, partition int32) PartitionMetrics
	// Checkpoints returns the recorder of the flow's checkpoint emitter
	// (MM2's MirrorCheckpointTask). It is called each time this process
	// starts the emitter (it runs in the process holding the flow's
	// singleton duties) and may return nil to record nothing.
	Checkpoints() CheckpointMetrics
	// SourceGap counts lost records of a source topic-partition (source
	// topic name): records deleted on the source (retention,
	// DeleteRecords, a re-created topic) before they were replicated.
	SourceGap(topic string, partition int32, lost int64)
	// Error counts one error of the flow. kind is one of "fetch" (reading
	// the source), "produce" (a produce to the target failed for a
	// transient reason: the unit of work restarts from its stored resume
	// points, or a shallow-copy batch is sent again), "resume_commit" (storing resume points), "offset_sync"
	// (writing an offset sync or offset run), "partition_failed" (a
	// partition stopped by a non-retriable error), "heartbeat" (emitting a
	// heartbeat), "checkpoint_" followed by the failed step of the
	// checkpoint emitter: "list_groups", "fetch_offsets", "list_target"
	// (listing the remote topics' IDs and log ends before writing
	// checkpoints), "write_checkpoints", "sync_group_offsets" or
	// "offset_syncs", or "topic_" followed by the [TopicOp] of a failed
	// attempt of a per-topic operation (one count per attempt, see
	// FlowStatus.TopicErrors): "topic_create", "topic_partitions",
	// "topic_describe" or "topic_config".
	Error(kind string)
	// OffsetSyncWritten counts one offset sync acknowledged by the cluster
	// holding the offset-syncs topic.
	OffsetSyncWritten()
	// ResumePointsStored reports how long one store of resume points (MM2's
	// source offsets, in mm2-offsets.<source>.internal on the target)
	// took.
	ResumePointsStored(d time.Duration)
	// Rebalanced reports one rebalance of the group of processes running
	// the flow, which kept this process waiting for d (from the
	// revocation or join to the next assignment).
	Rebalanced(d time.Duration)
	// ProvenanceSkipped counts source records not replicated because their
	// provenance header (see [ProvenanceHeader]) shows they were already on
	// the target's cluster.
	ProvenanceSkipped(records int)
}

// PartitionMetrics records the replication of one remote topic-partition.
// Its methods run on the replication path, once per record: they must be
// cheap (no allocation, no lock held for long) and must not block.
type PartitionMetrics interface {
	// Fetched reports a record read from the source; timestamp is the
	// record's (CreateTime or LogAppendTime), never zero. Its age is
	// MM2's record-age-ms.
	Fetched(timestamp time.Time)
	// Acked reports a record acknowledged by the target: its size in bytes
	// (key, value, header keys and header values of the source record) and
	// its source timestamp (zero if unknown). Now minus timestamp is MM2's
	// replication-latency-ms.
	Acked(bytes int64, timestamp time.Time)
}

// CheckpointMetrics records the work of one flow's checkpoint emitter.
type CheckpointMetrics interface {
	// CheckpointLatency reports, for one checkpoint record acknowledged by
	// the target, the time since the checkpoint was taken (before the
	// source group offsets were fetched): MM2's checkpoint-latency-ms.
	CheckpointLatency(d time.Duration)
	// CheckpointsWritten counts checkpoint records acknowledged by the
	// target in one emission.
	CheckpointsWritten(n int)
	// GroupOffsetsSynced counts partition offsets committed into target
	// consumer groups by one round of group offset sync
	// (sync.group.offsets.enabled).
	GroupOffsetsSynced(n int)
}

// metrics adapts the caller's Metrics to the engine's call sites. A nil
// *metrics records nothing, so without WithMetrics the hot path costs one
// nil check.
type metrics struct {
	hook    Metrics
	release sync.Once
}

// released calls the hook's Release, if it has one, the first time it is
// called (Mirror.Close, Mirror.Shutdown). Nil-safe.
func (mt *metrics) released() {
	if mt == nil {
		return
	}
	mt.release.Do(func() {
		if r, ok := mt.hook.(interface{ Release() }); ok {
			r.Release()
		}
	})
}

func newMetrics(h Metrics) *metrics {
	if h == nil {
		return nil
	}
	if v := reflect.ValueOf(h); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil // a typed nil (a *T variable never set) reports nothing too, as nil does
	}
	return &metrics{hook: h}
}

// flowLabels identify a flow to the metrics: its source and target
// aliases and its recorder (nil without metrics).
type flowLabels struct {
	src, dst string
	rec      FlowMetrics
}

// labelsOf returns the flowLabels of the flow source->target, asking the
// caller's Metrics for its recorder.
func (m *metrics) labelsOf(source, target string) flowLabels {
	l := flowLabels{src: source, dst: target}
	if m != nil {
		l.rec = m.hook.Flow(source, target)
	}
	return l
}

// partMetrics is one partition's recorder, resolved when the partition
// starts.
type partMetrics struct {
	rec PartitionMetrics
}

func (m *metrics) forPartition(l flowLabels, remote string, partition int32) *partMetrics {
	if m == nil || l.rec == nil {
		return nil
	}
	rec := l.rec.Partition(remote, partition)
	if rec == nil {
		return nil
	}
	return &partMetrics{rec: rec}
}

// acked counts one replicated record of size bytes (key, value, header
// keys and values) acknowledged by the target.
func (m *metrics) acked(pm *partMetrics, size int64, ts time.Time) {
	if m == nil || pm == nil {
		return
	}
	pm.rec.Acked(size, ts)
}

func (m *metrics) polled(pm *partMetrics, r *kgo.Record) {
	if m == nil || pm == nil || r.Timestamp.IsZero() {
		return
	}
	pm.rec.Fetched(r.Timestamp)
}

func (m *metrics) gap(l flowLabels, topic string, partition int32, lost int64) {
	if m == nil || l.rec == nil {
		return
	}
	l.rec.SourceGap(topic, partition, lost)
}

// flowErr counts an error of a flow by kind (see FlowMetrics.Error).
func (m *metrics) flowErr(l flowLabels, kind string) {
	if m == nil || l.rec == nil {
		return
	}
	l.rec.Error(kind)
}

func (m *metrics) offsetSync(l flowLabels) {
	if m == nil || l.rec == nil {
		return
	}
	l.rec.OffsetSyncWritten()
}

func (m *metrics) committed(l flowLabels, d time.Duration) {
	if m == nil || l.rec == nil {
		return
	}
	l.rec.ResumePointsStored(d)
}

// provenanceSkipped counts records the provenance check did not replicate.
func (m *metrics) provenanceSkipped(l flowLabels, n int) {
	if m == nil || l.rec == nil {
		return
	}
	l.rec.ProvenanceSkipped(n)
}

// rebalanced counts one rebalance of a flow's group that took d (from the
// revocation or join to the assignment).
func (m *metrics) rebalanced(l flowLabels, d time.Duration) {
	if m == nil || l.rec == nil {
		return
	}
	l.rec.Rebalanced(d)
}

// taskMetrics returns the flow's checkpoint recorder for one run of its
// emitter; its methods are no-ops on a nil receiver (no metrics).
func (m *metrics) taskMetrics(f *flow) *flowTaskMetrics {
	if m == nil || f.labels.rec == nil {
		return nil
	}
	rec := f.labels.rec.Checkpoints()
	if rec == nil {
		return nil
	}
	return &flowTaskMetrics{rec: rec}
}

// flowTaskMetrics feeds the checkpoint emitter's callbacks to a
// CheckpointMetrics.
type flowTaskMetrics struct {
	rec CheckpointMetrics
}

func (t *flowTaskMetrics) latency(d time.Duration) {
	if t != nil {
		t.rec.CheckpointLatency(d)
	}
}

func (t *flowTaskMetrics) checkpoints(n int) {
	if t != nil {
		t.rec.CheckpointsWritten(n)
	}
}

func (t *flowTaskMetrics) commits(n int) {
	if t != nil {
		t.rec.GroupOffsetsSynced(n)
	}
}
