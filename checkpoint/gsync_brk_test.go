package checkpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestRemoteTopicDeletedNotSafeToSwitch: a group synced on the target
// (SafeToSwitch) whose remote topic is then deleted on the target (its
// committed offsets go with it) must not stay SafeToSwitch with the old
// target offset.
func TestRemoteTopicDeletedNotSafeToSwitch(t *testing.T) {
	f := newFixture(t, 1, 100)
	f.syncs(0, [2]int64{0, 0}, [2]int64{99, 99})
	f.runs(0, [5]int64{-1, -1, 0, 0, 100})
	g := f.p.Group("g")
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 60})
	e := f.startSweeping(time.Second, withSync)
	testcluster.Eventually(t, 20*time.Second, "synced", func() (bool, string) {
		gs, _ := groupStatus(e, g)
		return gs.SafeToSwitch && groupOffsets(t, &f.p.Target, g, f.remote)[0] == 60, fmt.Sprintf("%+v", gs)
	})
	if _, err := testcluster.Admin(t, &f.p.Target).DeleteTopics(context.Background(), f.remote); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 20*time.Second, "remote topic missing", func() (bool, string) {
		gs, _ := groupStatus(e, g)
		return len(gs.Partitions) == 1 && gs.Partitions[0].Reason == ReasonRemoteTopicMissing, fmt.Sprintf("%+v", gs)
	})
	time.Sleep(500 * time.Millisecond)
	gs, _ := groupStatus(e, g)
	t.Logf("status: %+v", gs)
	if gs.SafeToSwitch || gs.State == StateSynced {
		t.Errorf("remote topic deleted: status %s SafeToSwitch %v, want not synced, not safe: %+v", gs.State, gs.SafeToSwitch, gs)
	}
	if got := groupOffsets(t, &f.p.Target, g, f.remote); len(got) != 0 {
		t.Errorf("target offsets after the deletion: %v", got)
	}
	if tp := gs.Partitions[0].TargetOffset; tp != -1 {
		t.Errorf("TargetOffset %d after the remote topic was deleted, want -1", tp)
	}
}

// startSweeping is f.start with the emitter's target sweeps every sweep.
func (f *fixture) startSweeping(sweep time.Duration, opts ...emitterOpt) *Emitter {
	f.t.Helper()
	cfg := EmitterConfig{
		SourceAlias: f.p.Source.Alias, TargetAlias: f.p.Target.Alias, Policy: f.pol,
		SourceOpts: f.p.Source.Opts(), TargetOpts: f.p.Target.Opts(), OffsetSyncsOpts: f.p.Source.Opts(),
		OffsetSyncsTopic: f.syncsTopic, OffsetRunsTopic: f.runsTopic,
		Interval: 100 * time.Millisecond, SyncInterval: 100 * time.Millisecond, AdminTimeout: 5 * time.Second,
		GroupFilter: f.mine, TopicFilter: f.mine,
	}
	for _, o := range opts {
		o(&cfg)
	}
	e, err := NewEmitter(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	e.sweepEvery = sweep
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("Run: %v", err)
		}
	})
	return e
}
