package checkpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

func withSync(c *EmitterConfig) { c.SyncGroupOffsets = true }

func TestGroupSyncRules(t *testing.T) {
	f := newFixture(t, 1, 100)
	f.syncs(0, [2]int64{0, 0}, [2]int64{50, 50}, [2]int64{99, 99})
	f.runs(0, [5]int64{-1, -1, 0, 0, 100})
	absent, behind, ahead := f.p.Group("absent"), f.p.Group("behind"), f.p.Group("ahead")
	for _, g := range []string{absent, behind, ahead} {
		f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 99})
	}
	f.commit(&f.p.Target, behind, f.remote, map[int32]int64{0: 10})
	f.commit(&f.p.Target, ahead, f.remote, map[int32]int64{0: 100})
	e, _ := f.start(withSync)

	want := map[string]int64{absent: 99, behind: 99, ahead: 100}
	testcluster.Eventually(t, 20*time.Second, "target offsets", func() (bool, string) {
		got := map[string]int64{}
		for g := range want {
			got[g] = groupOffsets(t, &f.p.Target, g, f.remote)[0]
		}
		d := cmp.Diff(want, got)
		return d == "", d
	})
	testcluster.Eventually(t, 10*time.Second, "statuses", func() (bool, string) {
		got := map[string][3]any{}
		for _, g := range e.Status() {
			got[g.Group] = [3]any{g.State, g.Reason, g.SafeToSwitch}
		}
		wantSt := map[string][3]any{
			absent: {StateSynced, "", true},
			behind: {StateSynced, "", true},
			ahead:  {StateCheckpointed, ReasonTargetAhead, false},
		}
		d := cmp.Diff(wantSt, got)
		return d == "", d
	})

	// The source group moves on: the target follows; a source rewind never
	// moves the idle target group back (invariant I2 of
	// docs/field-failures.md).
	// A run claiming records past the target's log end (100): the target
	// partition lost records (truncated); the syncs and runs are discarded
	// as stale, and nothing is committed past the log end.
	f.syncs(0, [2]int64{150, 150})
	f.runs(0, [5]int64{-1, -1, 0, 0, 151})
	f.commit(&f.p.Source, behind, f.topic, map[int32]int64{0: 150})
	// The syncs and runs record no remote topic ID (MM2's replication), so
	// neither does the last checkpoint (99): the status shows no
	// translation rather than falling back on it (checkedLast).
	testcluster.Eventually(t, 10*time.Second, "behind: stale syncs past the log end", func() (bool, string) {
		gs, _ := groupStatus(e, behind)
		return len(gs.Partitions) == 1 && gs.Partitions[0].Reason == ReasonStaleTarget && gs.Partitions[0].Translated == -1 &&
			gs.Partitions[0].Checkpointed == 99, fmt.Sprintf("%+v", gs)
	})
	if got := groupOffsets(t, &f.p.Target, behind, f.remote)[0]; got != 99 {
		t.Errorf("target offset after a translation past the log end = %d, want 99 (unchanged)", got)
	}
	// The source group rewinds; then the replicator syncs the target log
	// again. (In the other order an emission between the two may
	// translate the old source offset 150 with the new syncs to 100, the
	// target's log end, and commit it: correct, but not this test.)
	f.commit(&f.p.Source, behind, f.topic, map[int32]int64{0: 20})
	f.syncs(0, [2]int64{0, 0}, [2]int64{99, 99})
	testcluster.Eventually(t, 10*time.Second, "rewound source", func() (bool, string) {
		gs, _ := groupStatus(e, behind)
		return len(gs.Partitions) == 1 && gs.Partitions[0].SourceOffset == 20 && gs.Partitions[0].Reason == ReasonTargetAhead, fmt.Sprintf("%+v", gs)
	})
	if got := groupOffsets(t, &f.p.Target, behind, f.remote)[0]; got != 99 {
		t.Errorf("target offset after a source rewind = %d, want 99 (never backwards)", got)
	}
}

func TestGroupSyncSkipsActiveTargetGroup(t *testing.T) {
	f := newFixture(t, 1, 1000)
	f.syncs(0, [2]int64{0, 0}, [2]int64{800, 800}, [2]int64{999, 999})
	f.runs(0, [5]int64{-1, -1, 0, 0, 1000})
	g := f.p.Group("g1")
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 800})

	// A consumer of g1 on the target reads 300 records, commits 300 and stays.
	cl := testcluster.Client(t, &f.p.Target, kgo.ConsumerGroup(g), kgo.ConsumeTopics(f.remote),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var read []*kgo.Record
	for len(read) < 300 {
		fs := cl.PollRecords(ctx, 300-len(read))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		read = append(read, fs.Records()...)
	}
	if err := cl.CommitRecords(ctx, read[299]); err != nil {
		t.Fatal(err)
	}
	e, _ := f.start(withSync)
	testcluster.Eventually(t, 20*time.Second, "active on target", func() (bool, string) {
		gs, _ := groupStatus(e, g)
		return gs.State == StateSkipped && gs.Reason == ReasonActiveOnTarget && !gs.SafeToSwitch, fmt.Sprintf("%+v", gs)
	})
	time.Sleep(300 * time.Millisecond) // three more sync intervals
	if got := groupOffsets(t, &f.p.Target, g, f.remote)[0]; got != 300 {
		t.Fatalf("active target group offset = %d, want 300 (untouched)", got)
	}
	cl.Close() // leaves the group: Empty
	testcluster.Eventually(t, 20*time.Second, "synced after the consumer left", func() (bool, string) {
		got := groupOffsets(t, &f.p.Target, g, f.remote)[0]
		gs, _ := groupStatus(e, g)
		return got == 800 && gs.State == StateSynced && gs.SafeToSwitch, fmt.Sprintf("offset %d, %+v", got, gs)
	})
}

func TestGroupSyncPartitionMismatch(t *testing.T) {
	f := newFixture(t, 1, 10)
	// The source topic gets a second partition the target does not have.
	wide := f.p.Topic("wide")
	testcluster.CreateTopic(t, &f.p.Source, wide, 2, nil)
	wideRemote := f.pol.FormatRemoteTopic(f.p.Source.Alias, wide)
	testcluster.CreateTopic(t, &f.p.Target, wideRemote, 1, nil)
	f.topic = wide
	f.syncs(0, [2]int64{0, 0})
	f.syncs(1, [2]int64{0, 0})
	g := f.p.Group("g")
	f.commit(&f.p.Source, g, wide, map[int32]int64{0: 0, 1: 0})
	e, _ := f.start(withSync)
	testcluster.Eventually(t, 20*time.Second, "partition 1 mismatch", func() (bool, string) {
		gs, _ := groupStatus(e, g)
		if len(gs.Partitions) != 2 {
			return false, fmt.Sprintf("%+v", gs)
		}
		return gs.Partitions[0].TargetOffset == 0 && gs.Partitions[1].Reason == ReasonPartitionMismatch &&
			gs.State == StateCheckpointed && gs.Reason == ReasonPartitionMismatch && !gs.SafeToSwitch, fmt.Sprintf("%+v", gs)
	})
	if d := cmp.Diff(map[int32]int64{0: 0}, groupOffsets(t, &f.p.Target, g, wideRemote)); d != "" {
		t.Errorf("target offsets (-want +got):\n%s", d)
	}
}
