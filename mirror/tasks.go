package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/heartbeat"
	"github.com/kmirror/kmirror/internal/cpwatch"
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
				f.hbErr, f.hbErrSince = "", time.Time{}
				f.mu.Unlock()
			},
			OnError: func(err error) {
				f.metrics.flowErr(f.labels, "heartbeat")
				f.mu.Lock()
				if f.hbErr == "" {
					f.hbErrSince = time.Now()
				}
				f.hbErr = err.Error()
				f.mu.Unlock()
			},
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
		SourceAdmin:           f.srcAdmCl, // one copy of each cluster's topic metadata (issue 22)
		TargetAdmin:           f.dstAdmCl,
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
	var gc groupOffsetsCache
	f.groupStat = func() []GroupStatus { return gc.statuses(em.Status()) }
	f.mu.Unlock()
	wg.Go(func() {
		if err := em.Run(cpwatch.With(ctx, f.cpWatch)); err != nil {
			f.log.Error("checkpoint task stopped", "err", err)
		}
	})
	return nil
}

// taskProducerOpts make the heartbeat and checkpoint producers give up on
// a record after 15 s (the heartbeat emitter after admin.timeout.ms; both
// stop waiting for their writes at once when their context ends, a record
// already sent completing or failing in the background): an idempotent
// kgo producer never fails a batch already sent to a dead broker, which
// would hold a graceful stop forever. One request in flight keeps
// checkpoints in order (last record wins per key).
var taskProducerOpts = []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(15 * time.Second),
	kgo.MaxProduceRequestsInflightPerBroker(1)}

// groupOffsetsCache builds Status's groups from the checkpoint emitter's,
// keeping each group's Offsets map while the translations it holds are the
// same: an idle member's status (a /metrics scrape, the summary log) would
// otherwise build a map per group partition per call. A map handed out is
// never changed (callers may hold it): a group whose translations moved
// gets a new one. The cache compares contents rather than holding the
// emitter's Partitions slice: holding it kept each changed group's previous
// slice alive until the next call (megabytes at thousands of groups,
// issue 22). Safe for concurrent use.
type groupOffsetsCache struct {
	mu    sync.Mutex
	by    map[string]*groupOffsets
	stamp uint64 // of the latest call
}

// groupOffsets is one group's cached Offsets.
type groupOffsets struct {
	offsets map[string]map[int32]int64
	stamp   uint64 // of the latest call that reported the group
}

// sameOffsets reports whether m holds exactly the translated offsets of
// parts (translatedOffsets(parts) would equal m).
func sameOffsets(m map[string]map[int32]int64, parts []checkpoint.PartitionStatus) bool {
	n := 0
	for _, p := range parts {
		if p.Translated < 0 {
			continue
		}
		n++
		if o, ok := m[p.RemoteTopic][p.Partition]; !ok || o != p.Translated {
			return false
		}
	}
	for _, ps := range m {
		n -= len(ps)
	}
	return n == 0
}

func (c *groupOffsetsCache) statuses(in []checkpoint.GroupStatus) []GroupStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(in) == 0 {
		c.by = nil
		return nil
	}
	if c.by == nil {
		c.by = make(map[string]*groupOffsets, len(in))
	}
	c.stamp++
	out := make([]GroupStatus, 0, len(in))
	for _, g := range in {
		gs := GroupStatus{Group: g.Group, State: g.State, Reason: g.Reason, SafeToSwitch: g.SafeToSwitch,
			Partitions: g.Partitions, Updated: g.Updated, SourceUnreachable: g.SourceUnreachable,
			LastCheckpoint: g.LastCheckpoint, CheckpointExact: g.CheckpointExact}
		if len(g.Partitions) > 0 {
			o := c.by[g.Group]
			if o == nil {
				o = &groupOffsets{}
				c.by[g.Group] = o
			}
			if o.offsets == nil || !sameOffsets(o.offsets, g.Partitions) {
				o.offsets = translatedOffsets(g.Partitions)
			}
			o.stamp = c.stamp
			gs.Offsets = o.offsets
		}
		out = append(out, gs)
	}
	for name, o := range c.by {
		if o.stamp != c.stamp {
			delete(c.by, name)
		}
	}
	return out
}

// translatedOffsets maps a group's partitions with a translation to their
// translated offsets by remote topic and partition; nil when none has one.
func translatedOffsets(parts []checkpoint.PartitionStatus) map[string]map[int32]int64 {
	var out map[string]map[int32]int64
	for _, p := range parts {
		if p.Translated < 0 {
			continue
		}
		if out == nil {
			out = map[string]map[int32]int64{}
		}
		if out[p.RemoteTopic] == nil {
			out[p.RemoteTopic] = map[int32]int64{}
		}
		out[p.RemoteTopic][p.Partition] = p.Translated
	}
	return out
}
