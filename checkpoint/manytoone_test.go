package checkpoint

import (
	"context"
	"testing"

	"github.com/kmirror/kmirror/policy"
)

// mergingPolicy names source topics t1 and t2 like t0 on the target
// (src.t0): a many-to-one custom policy.
type mergingPolicy struct{ *policy.Default }

func (p mergingPolicy) FormatRemoteTopic(alias, topic string) string {
	if topic == "t1" || topic == "t2" {
		topic = "t0"
	}
	return p.Default.FormatRemoteTopic(alias, topic)
}

// mergedWorld returns a model and an emitter whose policy is
// mergingPolicy.
func mergedWorld(t *testing.T) (*model, *side) {
	t.Helper()
	m := newModel(1)
	s := newSide(t, m, false)
	def, err := policy.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	s.e.cfg.Policy = mergingPolicy{def}
	return m, s
}

// TestTwoSourceTopicsOfOneRemoteTopic (found by a review): with a policy
// naming two source topics alike, a group committed on the second one got
// group partitions of the first one's remote topic; group offset sync
// looked them up by the remote topic's source topic, found none and
// crashed the emitter. The first source topic keeps the remote topic; the
// second one's group is skipped as not replicated, and the first one's
// group is checkpointed and synced as before.
func TestTwoSourceTopicsOfOneRemoteTopic(t *testing.T) {
	m, s := mergedWorld(t)
	k := tpKey{"t0", 0}
	m.produce(k, 10, 0)
	m.replicate(k, 10)
	m.commits["ga"] = map[tpKey]int64{k: 5}
	m.commits["gb"] = map[tpKey]int64{{"t1", 0}: 3}
	emitOnce(t, s, []Checkpoint{{Group: "ga", Topic: "src.t0", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 5, Metadata: "m"}})
	syncRound(t, s, []string{"ga src.t0-0=5"})
	m.commits["ga"][k] = 8
	emitOnce(t, s, []Checkpoint{{Group: "ga", Topic: "src.t0", Partition: 0, UpstreamOffset: 8, DownstreamOffset: 8, Metadata: "m"}})
	syncRound(t, s, []string{"ga src.t0-0=8"})
	gs, ok := groupStatus(s.e, "gb")
	if !ok || gs.State != StateSkipped || gs.Reason != ReasonTopicNotReplicated || len(gs.Partitions) != 0 {
		t.Errorf("gb: %+v (found %v), want skipped: topic not replicated", gs, ok)
	}
	s.e.emit(context.Background(), s) // nothing new: no crash, nothing written
}

// TestRemoteTopicPassesToTheOtherSourceTopic: once no group partition of
// the first source topic is left, the second one may take the remote
// topic (the first one deleted, the policy merging the second into its
// name on purpose): its group partitions are tracked.
func TestRemoteTopicPassesToTheOtherSourceTopic(t *testing.T) {
	m, s := mergedWorld(t)
	k0, k1 := tpKey{"t0", 0}, tpKey{"t1", 0}
	m.produce(k0, 10, 0)
	m.replicate(k0, 10)
	m.commits["ga"] = map[tpKey]int64{k0: 5}
	m.commits["gb"] = map[tpKey]int64{k1: 3}
	emitOnce(t, s, []Checkpoint{{Group: "ga", Topic: "src.t0", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 5, Metadata: "m"}})
	if gs, _ := groupStatus(s.e, "gb"); gs.Reason != ReasonTopicNotReplicated || len(gs.Partitions) != 0 {
		t.Fatalf("gb while ga has t0's group partition: %+v, want skipped: topic not replicated", gs)
	}
	delete(m.commits, "ga") // ga deleted: no group partition of t0 is left
	emitOnce(t, s, nil)
	emitOnce(t, s, nil) // (t1's records are not in the model's syncs: no translation)
	gs, _ := groupStatus(s.e, "gb")
	if len(gs.Partitions) != 1 || gs.Partitions[0].Topic != "t1" || gs.Partitions[0].RemoteTopic != "src.t0" || gs.Reason == ReasonTopicNotReplicated {
		t.Errorf("gb once t0 has no group partition: %+v, want its partition t1[0] of src.t0 tracked", gs)
	}
}

// TestSecondTopicCheckpointedAfterTheFirstIsGone (found by a review):
// once the first source topic of a shared remote topic has no group
// partition left (its groups deleted, the topic gone from the source), the
// second one is the one replicated to the remote topic and its groups are
// checkpointed. The first one held the remote topic for the emitter's
// lifetime.
func TestSecondTopicCheckpointedAfterTheFirstIsGone(t *testing.T) {
	m, s := mergedWorld(t)
	k0, k1 := tpKey{"t0", 0}, tpKey{"t1", 0}
	m.produce(k0, 10, 0)
	m.replicate(k0, 10)
	m.commits["ga"] = map[tpKey]int64{k0: 5}
	emitOnce(t, s, []Checkpoint{{Group: "ga", Topic: "src.t0", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 5, Metadata: "m"}})

	// t0 is deleted on the source with its group; the engine now
	// replicates t1 into src.t0 (the filter accepts t1, refuses t0).
	delete(m.commits, "ga")
	m.skipped["t0"] = true
	emitOnce(t, s, nil)
	if _, ok := groupStatus(s.e, "ga"); ok {
		t.Fatalf("ga still known")
	}
	m.produce(k1, 10, 0)
	m.replicate(k1, 10)
	m.commits["gb"] = map[tpKey]int64{k1: 3}
	s.read(m.feed)
	m.feed = nil
	s.emitted = nil
	s.e.forceSweep = true
	s.e.emit(context.Background(), s)
	gs, ok := groupStatus(s.e, "gb")
	if !ok || gs.State == StateSkipped || len(s.emitted) != 1 {
		t.Errorf("gb: %+v (found %v), emitted %+v; want gb checkpointed on src.t0 (t0 and its groups are gone)", gs, ok, s.emitted)
	}
}

// TestRefusedTopicSeenFirstGivesTheRemoteTopicBack (found by a review):
// the engine replicates t0; t1, named alike, is created and a group
// commits on it before discovery's next round notes its collision skip, so
// the filter still accepts t1 at one emission and t1 takes the remote
// topic. Once discovery refuses t1, a group on t0, the topic replicated,
// is checkpointed at once (it was "topic not replicated" forever).
func TestRefusedTopicSeenFirstGivesTheRemoteTopicBack(t *testing.T) {
	m, s := mergedWorld(t)
	k0, k1 := tpKey{"t0", 0}, tpKey{"t1", 0}
	m.produce(k0, 10, 0)
	m.replicate(k0, 10)
	m.produce(k1, 10, 0)
	m.commits["gb"] = map[tpKey]int64{k1: 3}
	s.read(m.feed)
	m.feed = nil
	s.e.forceSweep = true
	s.e.emit(context.Background(), s) // t1 not refused yet by discovery

	m.skipped["t1"] = true // discovery's round: t1 is a refused collision
	m.commits["ga"] = map[tpKey]int64{k0: 5}
	s.emitted = nil
	s.e.forceSweep = true
	s.e.emit(context.Background(), s)
	gs, ok := groupStatus(s.e, "ga")
	if !ok || gs.State == StateSkipped || len(s.emitted) != 1 {
		t.Errorf("ga: %+v (found %v), emitted %+v; want ga checkpointed on src.t0 (t0 is the replicated topic)", gs, ok, s.emitted)
	}
}
