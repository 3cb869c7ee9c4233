package checkpoint

import (
	"context"
	"fmt"
	"testing"
)

// TestOneEmissionNeverGivesTheRemoteTopicToBoth (found by a review): a
// remote topic named for t0 and t1 (many to one, both accepted by the
// filter). ga holds src.t0 with t0's group partition; gb (t1) is skipped.
// In one emission ga's commit on t0 turns into a null offset entry (ga is
// absorbed first: the verdict "t0 replicated" is cached, then its last
// group partition dropped), gb takes the remote topic, and gc, a new group
// on t0 absorbed after it, is accepted too on the cached verdict: both
// source topics have group partitions of src.t0. The next emission gives
// it back to t0 and gb flips to skipped.
func TestOneEmissionNeverGivesTheRemoteTopicToBoth(t *testing.T) {
	m, s := mergedWorld(t)
	k0, k1 := tpKey{"t0", 0}, tpKey{"t1", 0}
	m.produce(k0, 10, 0)
	m.replicate(k0, 10)
	m.commits["ga"] = map[tpKey]int64{k0: 5}
	m.commits["gb"] = map[tpKey]int64{k1: 3}
	emitOnce(t, s, []Checkpoint{{Group: "ga", Topic: "src.t0", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 5, Metadata: "m"}})

	m.commits["ga"][k0] = -1 // a null offset entry: ga has no group partition left
	m.commits["gc"] = map[tpKey]int64{k0: 7}
	s.e.emit(context.Background(), s)
	parts := func() string {
		var out string
		for _, g := range []string{"gb", "gc"} {
			gs, _ := groupStatus(s.e, g)
			out += fmt.Sprintf("%s: %d partitions (%s %s); ", g, len(gs.Partitions), gs.State, gs.Reason)
		}
		return out
	}
	first := parts()
	gb, _ := groupStatus(s.e, "gb")
	gc, _ := groupStatus(s.e, "gc")
	if len(gb.Partitions) > 0 && len(gc.Partitions) > 0 {
		t.Errorf("one emission tracks group partitions of src.t0 for both t1 and t0: %s (sourceOf[src.t0]=%s)", first, s.e.sourceOf["src.t0"])
	}
	s.e.emit(context.Background(), s)
	if second := parts(); second != first {
		t.Errorf("nothing changed on the source, yet the next emission flips:\n  %s\n  %s", first, second)
	}
}

// TestOneEmissionNeverGivesTheRemoteTopicToTwoOfThree (found by a
// review): the same with three topics named alike and only ordinary
// commits: g0's group on t2 (absorbed first) asks t0's verdict and caches
// "replicated"; ga then moves off t0 (its commit on t0 deleted, it commits
// x), gb on t1 would take src.t0, and gc, new on t0, was accepted on the
// cached verdict.
func TestOneEmissionNeverGivesTheRemoteTopicToTwoOfThree(t *testing.T) {
	m, s := mergedWorld(t)
	k0, k1, k2, kx := tpKey{"t0", 0}, tpKey{"t1", 0}, tpKey{"t2", 0}, tpKey{"x", 0}
	m.produce(k0, 10, 0)
	m.replicate(k0, 10)
	m.commits["ga"] = map[tpKey]int64{k0: 5}
	emitOnce(t, s, []Checkpoint{{Group: "ga", Topic: "src.t0", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 5, Metadata: "m"}})
	m.commits["g0"] = map[tpKey]int64{k2: 1}
	m.commits["gb"] = map[tpKey]int64{k1: 3}
	emitOnce(t, s, nil) // both refused: t0 holds src.t0

	m.commits["ga"] = map[tpKey]int64{kx: 1} // ga moved off t0
	m.commits["gc"] = map[tpKey]int64{k0: 7}
	s.e.emit(context.Background(), s)
	gb, _ := groupStatus(s.e, "gb")
	gc, _ := groupStatus(s.e, "gc")
	if len(gb.Partitions) > 0 && len(gc.Partitions) > 0 {
		t.Errorf("src.t0 has group partitions of t1 (gb: %s %s) and t0 (gc: %s %s)", gb.State, gb.Reason, gc.State, gc.Reason)
	}
}
