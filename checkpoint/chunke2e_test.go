package checkpoint

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestRunChunksWithFailedProducesAndCommits (an attack that held) runs a
// real emitter on kfake with checkpoints written 5 group partitions at a
// time and group offset sync planning and committing 2 groups at a time:
// 6 groups on 4 partitions (24 group partitions, 5 chunks), the first 2
// produce requests to the checkpoints topic refused (INVALID_RECORD, the
// two first chunks) and the first OffsetCommit of one group refused. Every
// group partition ends with its exact checkpoint, written exactly once
// (the refused records never reached the log, and nothing unchanged is
// written again), and every target group at its exact offset.
func TestRunChunksWithFailedProducesAndCommits(t *testing.T) {
	smallChunks(t, 5)
	f := newFixture(t, 4, 100)
	if f.p.Target.Fake == nil {
		t.Skip("injects produce and commit errors with kfake's Fault API; runs on the embedded clusters")
	}
	for p := range int32(4) {
		f.syncs(p, [2]int64{0, 0}, [2]int64{99, 99})
		f.runs(p, [5]int64{-1, -1, 0, 0, 100})
	}
	groups := make([]string, 6)
	want := map[string]Checkpoint{}
	for i := range groups {
		groups[i] = f.p.Group(fmt.Sprintf("g%d", i))
		offs := map[int32]int64{}
		for p := range int32(4) {
			offs[p] = int64(10*i) + int64(p)
			want[fmt.Sprintf("%s/%s/%d", groups[i], f.remote, p)] = Checkpoint{Group: groups[i], Topic: f.remote, Partition: p,
				UpstreamOffset: offs[p], DownstreamOffset: offs[p]}
		}
		f.commit(&f.p.Source, groups[i], f.topic, offs)
	}
	cpTopic := f.pol.CheckpointsTopic(f.p.Source.Alias)
	dst := f.p.Target.Fake
	dst.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: cpTopic, Err: kerr.InvalidRecord, Count: 2})
	dst.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: groups[3], Err: kerr.TopicAuthorizationFailed, Count: 1})

	var mu sync.Mutex
	ops := map[string]int{}
	cfg := EmitterConfig{
		SourceAlias: f.p.Source.Alias, TargetAlias: f.p.Target.Alias, Policy: f.pol,
		SourceOpts: f.p.Source.Opts(), TargetOpts: f.p.Target.Opts(), OffsetSyncsOpts: f.p.Source.Opts(),
		OffsetSyncsTopic: f.syncsTopic, OffsetRunsTopic: f.runsTopic,
		Interval: 100 * time.Millisecond, SyncInterval: 100 * time.Millisecond, AdminTimeout: 5 * time.Second,
		SyncGroupOffsets: true, GroupFilter: f.mine, TopicFilter: f.mine,
		OnError: func(op string, _ error) { mu.Lock(); ops[op]++; mu.Unlock() },
	}
	e, err := NewEmitter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.syncBatch = 2
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	testcluster.Eventually(t, 20*time.Second, "checkpoints", func() (bool, string) {
		d := cmp.Diff(want, latest(f.checkpoints()))
		return d == "", d
	})
	testcluster.Eventually(t, 20*time.Second, "target group offsets", func() (bool, string) {
		for i, g := range groups {
			got := groupOffsets(t, &f.p.Target, g, f.remote)
			exp := map[int32]int64{0: int64(10 * i), 1: int64(10*i) + 1, 2: int64(10*i) + 2, 3: int64(10*i) + 3}
			if d := cmp.Diff(exp, got); d != "" {
				return false, g + ": " + d
			}
		}
		return true, ""
	})
	time.Sleep(300 * time.Millisecond) // a few idle emissions
	if n := len(f.checkpoints()); n != len(want) {
		t.Errorf("%d checkpoint records, want %d: each written once", n, len(want))
	}
	mu.Lock()
	defer mu.Unlock()
	// An emission reports its write's first error once: the two refused
	// produce requests are one report when they carried chunks of one
	// emission (its first had more than 5 checkpoints), two when the first
	// emission had 5 or fewer (a CI run: 1).
	if w := ops["write_checkpoints"]; w < 1 || w > 2 || ops["sync_group_offsets"] != 1 {
		t.Errorf("errors reported %v, want 1 or 2 write_checkpoints and 1 sync_group_offsets", ops)
	}
}
