package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/heartbeat"
)

// runTasks runs the flow's heartbeat emitter (MM2's MirrorHeartbeatConnector)
// and checkpoint emitter with group-offset sync (MirrorCheckpointConnector)
// until ctx is done, and returns after both have stopped: the singleton
// duties of the member holding slot 0. Each task builds and closes its own
// clients.
//
//   - Heartbeats run unless DisableHeartbeats, also for a Disabled flow
//     (docs/mm2-compat.md §7: MM2 emits heartbeats for every pair unless
//     emit.heartbeats.enabled=false). They go to the target of the flow:
//     for a one-way deployment A->B, the properties loader's disabled B->A
//     flow writes the heartbeats into A that make A.heartbeats appear on B.
//     A read-only source must set DisableHeartbeats on that reverse flow
//     (docs/field-failures.md case B27).
//   - Checkpoints run for enabled flows unless DisableCheckpoints or
//     DisableOffsetSyncs (nothing to translate with); group-offset sync
//     runs inside the checkpoint emitter when SyncGroupOffsets is set.
//
// Errors of the tasks are logged, counted in kmirror_errors_total and shown
// in Status; only invalid task configuration is returned.
func (f *flow) runTasks(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	tm := f.metrics.taskMetrics(f)
	if !f.cfg.DisableHeartbeats {
		hb, err := heartbeat.NewEmitter(heartbeat.EmitterConfig{
			SourceAlias:       f.cfg.Source,
			TargetAlias:       f.cfg.Target,
			TargetOpts:        f.clientOpts(f.dst, f.dst.Producer, append(append([]kgo.Opt{}, f.dst.Admin...), taskProducerOpts...)...),
			Topic:             f.pol.HeartbeatsTopic(),
			Interval:          f.cfg.EmitHeartbeatsInterval,
			ReplicationFactor: f.cfg.HeartbeatsTopicReplicationFactor,
			AdminTimeout:      f.cfg.AdminTimeout,
			Logger:            f.log,
			OnEmit: func(at time.Time) {
				f.mu.Lock()
				f.lastHB = at
				f.mu.Unlock()
			},
			OnError: func(error) { f.metrics.flowErr(f.labels, "heartbeat") },
		})
		if err != nil {
			return fmt.Errorf("heartbeat task: %w", err)
		}
		wg.Go(func() {
			if err := hb.Run(ctx); err != nil {
				f.log.Error("heartbeat task stopped", "err", err)
			}
		})
	}
	if f.cfg.Disabled || f.cfg.DisableCheckpoints || f.cfg.DisableOffsetSyncs {
		return nil
	}
	syncCluster := f.src
	if f.cfg.OffsetSyncsTopicLocationTarget {
		syncCluster = f.dst
	}
	refresh := f.cfg.RefreshGroupsInterval
	if f.cfg.DisableRefreshGroups {
		refresh = -1
	}
	em, err := checkpoint.NewEmitter(checkpoint.EmitterConfig{
		SourceAlias:           f.cfg.Source,
		TargetAlias:           f.cfg.Target,
		Policy:                f.pol,
		SourceOpts:            f.clientOpts(f.src, f.src.Admin),
		TargetOpts:            f.clientOpts(f.dst, f.dst.Producer, append(append(append([]kgo.Opt{}, f.dst.Consumer...), f.dst.Admin...), taskProducerOpts...)...),
		OffsetSyncsOpts:       f.clientOpts(syncCluster, syncCluster.Consumer),
		OffsetSyncsTopic:      f.offsetSyncsTopic,
		OffsetRunsTopic:       checkpoint.OffsetRunsTopic(f.offsetSyncsTopic),
		GroupFilter:           f.groups.Match,
		TopicFilter:           f.checkpointTopic,
		Interval:              f.cfg.EmitCheckpointsInterval,
		RefreshGroupsInterval: refresh,
		SyncGroupOffsets:      f.cfg.SyncGroupOffsets,
		SyncInterval:          f.cfg.SyncGroupOffsetsInterval,
		ReplicationFactor:     f.cfg.CheckpointsTopicReplicationFactor,
		AdminTimeout:          f.cfg.AdminTimeout,
		Logger:                f.log,
		OnLatency:             tm.latency,
		OnCheckpoints:         tm.checkpoints,
		OnCommits:             tm.commits,
		OnError:               func(op string, _ error) { f.metrics.flowErr(f.labels, "checkpoint_"+op) },
	})
	if err != nil {
		return fmt.Errorf("checkpoint task: %w", err)
	}
	f.mu.Lock()
	f.groupStat = func() []GroupStatus { return groupStatuses(em.Status()) }
	f.mu.Unlock()
	wg.Go(func() {
		if err := em.Run(ctx); err != nil {
			f.log.Error("checkpoint task stopped", "err", err)
		}
	})
	return nil
}

// taskProducerOpts make the heartbeat and checkpoint producers give up on
// a record after 15 s (and at once when their context ends): an idempotent
// kgo producer never fails a batch already sent to a dead broker, which
// would hold a graceful stop forever. One request in flight keeps
// checkpoints in order (last record wins per key).
var taskProducerOpts = []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(15 * time.Second),
	kgo.MaxProduceRequestsInflightPerBroker(1)}

// groupStatuses maps the checkpoint emitter's group states to Status.
func groupStatuses(in []checkpoint.GroupStatus) []GroupStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]GroupStatus, 0, len(in))
	for _, g := range in {
		gs := GroupStatus{Group: g.Group, State: g.State, Reason: g.Reason, SafeToSwitch: g.SafeToSwitch,
			Partitions: g.Partitions, Updated: g.Updated}
		for _, p := range g.Partitions {
			if p.Translated < 0 {
				continue
			}
			if gs.Offsets == nil {
				gs.Offsets = map[string]map[int32]int64{}
			}
			if gs.Offsets[p.RemoteTopic] == nil {
				gs.Offsets[p.RemoteTopic] = map[int32]int64{}
			}
			gs.Offsets[p.RemoteTopic][p.Partition] = p.Translated
		}
		out = append(out, gs)
	}
	return out
}

// taskMetricVecs are the checkpoint task's Prometheus series, one per flow
// (source, target): never per group, so 10 000 groups do not create 10 000
// series. Registered by newMetrics.
type taskMetricVecs struct {
	latency     *prometheus.HistogramVec
	checkpoints *prometheus.CounterVec
	commits     *prometheus.CounterVec
}

func newTaskMetricVecs(r prometheus.Registerer) *taskMetricVecs {
	v := &taskMetricVecs{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kmirror_checkpoint_latency_seconds",
			Help:    "Time from taking a checkpoint (before fetching the source group offsets) to its acknowledgement by the target, per flow (MM2 checkpoint-latency-ms).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}, []string{"source", "target"}),
		checkpoints: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_checkpoints_total",
			Help: "Checkpoint records written to <source>.checkpoints.internal and acknowledged, per flow."}, []string{"source", "target"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_group_offsets_synced_total",
			Help: "Partition offsets committed into target consumer groups by group-offset sync, per flow."}, []string{"source", "target"}),
	}
	r.MustRegister(v.latency, v.checkpoints, v.commits)
	return v
}

// flowTaskMetrics are one flow's resolved task series; its methods are
// no-ops on a nil receiver (no Registerer).
type flowTaskMetrics struct {
	lat        prometheus.Observer
	cps, comms prometheus.Counter
}

func (m *metrics) taskMetrics(f *flow) *flowTaskMetrics {
	if m == nil || m.tasks == nil {
		return nil
	}
	return &flowTaskMetrics{
		lat:   m.tasks.latency.WithLabelValues(f.cfg.Source, f.cfg.Target),
		cps:   m.tasks.checkpoints.WithLabelValues(f.cfg.Source, f.cfg.Target),
		comms: m.tasks.commits.WithLabelValues(f.cfg.Source, f.cfg.Target),
	}
}

func (t *flowTaskMetrics) latency(d time.Duration) {
	if t != nil {
		t.lat.Observe(d.Seconds())
	}
}

func (t *flowTaskMetrics) checkpoints(n int) {
	if t != nil {
		t.cps.Add(float64(n))
	}
}

func (t *flowTaskMetrics) commits(n int) {
	if t != nil {
		t.comms.Add(float64(n))
	}
}
