package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestIdleCheckpointsRestoredAfterTopicDeleted: the checkpoints topic is
// deleted (and re-created empty by someone, when recreate) while every
// group is idle: no write fails, so only the periodic listing of the topic
// (every targetSweepInterval, shortened here) finds it. The emitter
// creates it again and writes every checkpoint it knows as it was (the
// translation header included). Before, the topic stayed missing (or
// empty) for good: an unchanged checkpoint is never written again.
func TestIdleCheckpointsRestoredAfterTopicDeleted(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		t.Run(fmt.Sprint("recreate=", recreate), func(t *testing.T) {
			f := newFixture(t, 1, 100)
			f.syncs(0, [2]int64{0, 0}, [2]int64{99, 99})
			f.runs(0, [5]int64{-1, -1, 0, 0, 100})
			g1 := f.p.Group("g1")
			f.commit(&f.p.Source, g1, f.topic, map[int32]int64{0: 60})
			e, err := NewEmitter(EmitterConfig{SourceAlias: f.p.Source.Alias, TargetAlias: f.p.Target.Alias, Policy: f.pol,
				SourceOpts: f.p.Source.Opts(), TargetOpts: f.p.Target.Opts(), OffsetSyncsOpts: f.p.Source.Opts(),
				OffsetSyncsTopic: f.syncsTopic, OffsetRunsTopic: f.runsTopic, Interval: 100 * time.Millisecond,
				AdminTimeout: 5 * time.Second, GroupFilter: f.mine, TopicFilter: f.mine})
			if err != nil {
				t.Fatal(err)
			}
			e.sweepEvery = time.Second
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()
			defer func() { cancel(); <-done }()
			key := g1 + "/" + f.remote + "/0"
			testcluster.Eventually(t, 20*time.Second, "first checkpoint", func() (bool, string) {
				cp := latest(f.checkpoints())[key]
				return cp.DownstreamOffset == 60, fmt.Sprintf("%+v", cp)
			})
			cpTopic := f.pol.CheckpointsTopic(f.p.Source.Alias)
			if _, err := testcluster.Admin(t, &f.p.Target).DeleteTopics(context.Background(), cpTopic); err != nil {
				t.Fatal(err)
			}
			if recreate {
				compact := "compact"
				testcluster.CreateTopic(t, &f.p.Target, cpTopic, 1, map[string]*string{"cleanup.policy": &compact})
			}
			t0 := time.Now()
			testcluster.Eventually(t, 20*time.Second, "checkpoint written again", func() (bool, string) {
				cp := latest(f.checkpoints())[key]
				return cp.UpstreamOffset == 60 && cp.DownstreamOffset == 60, fmt.Sprintf("%+v", cp)
			})
			t.Logf("restored %v after the deletion", time.Since(t0))
			recs, err := testcluster.ReadTopic(context.Background(), f.p.Target.Opts(), cpTopic, false)
			if err != nil || len(recs[0]) != 1 {
				t.Fatalf("checkpoints topic: %d records, %v; want 1", len(recs[0]), err)
			}
			if !headerSaysExact(recs[0][0].Headers) {
				t.Errorf("the checkpoint written again says %v, want exact", recs[0][0].Headers)
			}
			if gs, _ := groupStatus(e, g1); gs.Partitions[0].Checkpointed != 60 || gs.Reason != "" {
				t.Errorf("status %+v", gs)
			}
		})
	}
}

// TestCheckpointsTopicBackClearsEveryGroupsReason (a reviewer's finding):
// the checkpoints topic missing and not created marks every group's
// status; once it is back, only the groups with a checkpoint written again
// were cleared, so a group with none kept "writing checkpoints to ...".
func TestCheckpointsTopicBackClearsEveryGroupsReason(t *testing.T) {
	e := offlineEmitter(t)
	e.groups = map[string]*groupEntry{"with-checkpoint": {name: "with-checkpoint"}, "without": {name: "without"}}
	e.markCheckpointsLost(errors.New("CreateTopics: POLICY_VIOLATION"))
	for n, g := range e.groups {
		if g.cpErr != "CreateTopics: POLICY_VIOLATION" {
			t.Fatalf("%s: cpErr %q after the loss", n, g.cpErr)
		}
	}
	e.checkpointsTopicBack()
	for n, g := range e.groups {
		if g.cpErr != "" {
			t.Errorf("%s: cpErr %q after the topic came back, want none", n, g.cpErr)
		}
	}
	if e.cpTopicErr != nil {
		t.Errorf("cpTopicErr %v", e.cpTopicErr)
	}
}

// TestRemoteTopicGoneForgottenWithItsGroupPartitions: a remote topic
// missing on the target is remembered (its group partitions' statuses say
// so) only while a group partition of it is known; once its last group
// is gone it is forgotten, so topics deleted for good do not accumulate.
func TestRemoteTopicGoneForgottenWithItsGroupPartitions(t *testing.T) {
	e := offlineEmitter(t)
	g1, g2 := &groupEntry{name: "g1"}, &groupEntry{name: "g2"}
	e.groups = map[string]*groupEntry{"g1": g1, "g2": g2}
	g1.parts = partList{e.addPart(g1, "orders", 0), e.addPart(g1, "orders", 1)}
	g2.parts = partList{e.addPart(g2, "orders", 0)}
	remote := g1.parts[0].remote
	if remote != "a.orders" {
		t.Fatalf("remote topic %q, want a.orders", remote)
	}
	e.viewChanges(&targetView{cluster: "b", ids: map[string][16]byte{}, missing: map[string]bool{remote: true}}, func(*partEntry) {})
	if !e.remoteGone[remote] {
		t.Fatalf("remoteGone %v after a listing without %s", e.remoteGone, remote)
	}
	e.removeGroup(g1)
	if !e.remoteGone[remote] || e.remoteRefs[remote] != 1 {
		t.Fatalf("after removing g1 (g2 still on %s): remoteGone %v, refs %v", remote, e.remoteGone, e.remoteRefs)
	}
	e.removeGroup(g2)
	if len(e.remoteGone) != 0 || len(e.remoteRefs) != 0 {
		t.Errorf("after removing every group of %s: remoteGone %v, refs %v, want both empty", remote, e.remoteGone, e.remoteRefs)
	}
}

// offlineEmitter returns an emitter of flow a->b whose clusters are never
// reached (its Run is not started): for tests of its state alone.
func offlineEmitter(t *testing.T) *Emitter {
	t.Helper()
	e, err := NewEmitter(EmitterConfig{SourceAlias: "a", TargetAlias: "b", Interval: time.Second, AdminTimeout: time.Second, OffsetSyncsTopic: "mm2-offset-syncs.b.internal",
		SourceOpts: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, TargetOpts: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, OffsetSyncsOpts: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")},
		GroupFilter: func(string) bool { return true }, TopicFilter: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
