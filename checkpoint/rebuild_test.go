package checkpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// syncsFor writes offset syncs like syncs, with the target cluster ID
// recorded in their headers as kmirror's replicator does.
func (f *fixture) syncsFor(cluster string, part int32, pairs ...[2]int64) {
	f.t.Helper()
	var recs []*kgo.Record
	for _, pr := range pairs {
		s := OffsetSync{Topic: f.topic, Partition: part, UpstreamOffset: pr[0], DownstreamOffset: pr[1]}
		k, _ := s.Key()
		v, _ := s.Value()
		recs = append(recs, &kgo.Record{Topic: f.syncsTopic, Partition: 0, Key: k, Value: v,
			Headers: []kgo.RecordHeader{{Key: TargetClusterHeader, Value: []byte(cluster)}}})
	}
	testcluster.Produce(f.t, &f.p.Source, recs...)
}

// produceTarget appends n records to partition 0 of the remote topic.
func (f *fixture) produceTarget(n int) {
	f.t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: f.remote, Partition: 0, Value: fmt.Appendf(nil, "%d", i)}
	}
	testcluster.Produce(f.t, &f.p.Target, recs...)
}

// targetEnd returns the log end offset of partition 0 of the remote topic.
func (f *fixture) targetEnd() int64 {
	f.t.Helper()
	ends, err := testcluster.Admin(f.t, &f.p.Target).ListEndOffsets(context.Background(), f.remote)
	if err != nil {
		f.t.Fatal(err)
	}
	o, ok := ends.Lookup(f.remote, 0)
	if !ok || o.Err != nil {
		f.t.Fatalf("end offset of %s-0: %+v", f.remote, o)
	}
	return o.Offset
}

// cpRecords reads the checkpoint records on the target in log order with
// their headers.
func (f *fixture) cpRecords() []*kgo.Record {
	f.t.Helper()
	recs, err := testcluster.ReadTopic(context.Background(), f.p.Target.Opts(), f.pol.CheckpointsTopic(f.p.Source.Alias), false)
	if err != nil {
		return nil
	}
	return recs[0]
}

// TestRebuiltTargetCheckpointsGoDown is issue 15 case 4: the remote topic
// is deleted and re-created on the target with fewer records (a DR target
// re-provisioned) while the offset syncs on the source still describe the
// old log. After a restart the emitter must not write a checkpoint past
// the new log end (MM2 writes 1000 there and keeps it, since it only
// writes a checkpoint whose target offset goes up); once the replicator
// syncs the new log, the checkpoint goes DOWN to the new log's offsets and
// follows them.
func TestRebuiltTargetCheckpointsGoDown(t *testing.T) {
	f := newFixture(t, 1, 1000)
	f.syncs(0, [2]int64{0, 0}, [2]int64{999, 999})
	g := f.p.Group("g")
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 1000})
	_, stop := f.start()
	key := g + "/" + f.remote + "/0"
	testcluster.Eventually(t, 20*time.Second, "checkpoint of the old log", func() (bool, string) {
		cp := latest(f.checkpoints())[key]
		return cp.DownstreamOffset == 1000, fmt.Sprintf("%+v", cp)
	})
	stop()
	before := f.cpRecords()
	oldID := targetIDOf(before[len(before)-1].Headers)
	md, err := testcluster.Admin(t, &f.p.Target).BrokerMetadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dstID := md.Cluster // kfake: the alias; real Kafka: its KRaft cluster ID
	// The syncs record the target cluster, not the remote topic's ID (an
	// older release's): the checkpoint translated from them records the
	// cluster only (translatedFrom).
	if oldID.cluster != dstID || oldID.topic != ([16]byte{}) {
		t.Fatalf("checkpoint headers %q: want the target cluster %q and no remote topic ID", before[len(before)-1].Headers, dstID)
	}

	// The rebuild: the remote topic is re-created and holds 400 records;
	// the syncs still say 999 -> 999.
	ctx := context.Background()
	if _, err := testcluster.Admin(t, &f.p.Target).DeleteTopics(ctx, f.remote); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "remote topic deleted", func() (bool, string) {
		td, err := testcluster.Admin(t, &f.p.Target).ListTopics(ctx, f.remote)
		return err == nil && td[f.remote].Err != nil, fmt.Sprintf("%v %v", td, err)
	})
	testcluster.CreateTopic(t, &f.p.Target, f.remote, 1, nil)
	f.produceTarget(400)

	e, _ := f.start()
	testcluster.Eventually(t, 20*time.Second, "stale syncs detected", func() (bool, string) {
		gs, ok := groupStatus(e, g)
		return ok && len(gs.Partitions) == 1 && gs.Partitions[0].Reason == ReasonStaleTarget &&
			gs.Partitions[0].Translated == -1 && gs.Partitions[0].Checkpointed == -1, fmt.Sprintf("%+v", gs)
	})
	if n := len(f.cpRecords()); n != len(before) {
		t.Fatalf("checkpoint records after the restart = %d, want %d (none from the stale syncs)", n, len(before))
	}

	// The replicator copies source 600-999 to the new log at 0-399 and
	// syncs it: the checkpoint goes down from 1000 to 400 (the end).
	f.syncs(0, [2]int64{600, 0}, [2]int64{999, 399})
	testcluster.Eventually(t, 20*time.Second, "checkpoint down to the new log", func() (bool, string) {
		cp := latest(f.checkpoints())[key]
		return cp.DownstreamOffset == 400, fmt.Sprintf("%+v", cp)
	})
	// The target reaches 500 and the group commits 1100.
	f.produceTarget(100)
	f.syncs(0, [2]int64{1099, 499})
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 1100})
	testcluster.Eventually(t, 20*time.Second, "checkpoint follows the new log", func() (bool, string) {
		cp := latest(f.checkpoints())[key]
		return cp.DownstreamOffset == 500, fmt.Sprintf("%+v", cp)
	})
	if end := f.targetEnd(); end != 500 {
		t.Fatalf("target end = %d, want 500", end)
	}
	var after []Checkpoint
	for _, r := range f.cpRecords()[len(before):] {
		cp, err := DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			t.Fatal(err)
		}
		after = append(after, cp)
		if id := targetIDOf(r.Headers); id != (targetID{cluster: dstID}) {
			t.Errorf("checkpoint %+v recorded for %+v, want the target cluster %q and no remote topic ID", cp, id, dstID)
		}
	}
	want := []Checkpoint{
		{Group: g, Topic: f.remote, Partition: 0, UpstreamOffset: 1000, DownstreamOffset: 400},
		{Group: g, Topic: f.remote, Partition: 0, UpstreamOffset: 1100, DownstreamOffset: 500},
	}
	if d := cmp.Diff(want, after); d != "" {
		t.Errorf("checkpoints written after the rebuild (-want +got):\n%s", d)
	}
}

// TestRebuiltTargetClusterIgnoresTaggedSyncs: the target cluster is
// replaced by an empty one under the same alias (new cluster ID), and its
// remote topic has since grown past the offsets the old syncs name (1500 >
// 1000): "past the log end" cannot tell, the syncs' recorded cluster ID
// can. A checkpoint recorded for the old cluster is rewritten lower.
func TestRebuiltTargetClusterIgnoresTaggedSyncs(t *testing.T) {
	f := newFixture(t, 1, 0)
	old := f.p.Target.Alias
	f.syncsFor(old, 0, [2]int64{0, 0}, [2]int64{999, 999})
	f.p.Target = testcluster.NewFake(t, f.p.Target.Alias, kfake.ClusterID("rebuilt"))
	testcluster.CreateTopic(t, &f.p.Target, f.remote, 1, nil)
	f.produceTarget(1500)
	// A checkpoint restored from a backup of the old cluster: 1000.
	compact := "compact"
	testcluster.CreateTopic(t, &f.p.Target, f.pol.CheckpointsTopic(f.p.Source.Alias), 1, map[string]*string{"cleanup.policy": &compact})
	g := f.p.Group("g")
	stale := Checkpoint{Group: g, Topic: f.remote, Partition: 0, UpstreamOffset: 1000, DownstreamOffset: 1000}
	k, _ := stale.Key()
	v, _ := stale.Value()
	testcluster.Produce(t, &f.p.Target, &kgo.Record{Topic: f.pol.CheckpointsTopic(f.p.Source.Alias), Partition: 0, Key: k, Value: v,
		Headers: targetID{cluster: old}.headers()})
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 1000})

	e, _ := f.start()
	testcluster.Eventually(t, 20*time.Second, "syncs of the old cluster discarded", func() (bool, string) {
		gs, ok := groupStatus(e, g)
		return ok && len(gs.Partitions) == 1 && gs.Partitions[0].Reason == ReasonStaleTarget &&
			gs.Partitions[0].Checkpointed == -1, fmt.Sprintf("%+v", gs)
	})
	// The replicator syncs the new cluster: source 0-899 at 0-899 (it
	// copied on, the next sync is not read yet): down from 1000 to 900.
	f.syncsFor("rebuilt", 0, [2]int64{0, 0}, [2]int64{899, 899})
	key := g + "/" + f.remote + "/0"
	testcluster.Eventually(t, 20*time.Second, "checkpoint from the new cluster's syncs", func() (bool, string) {
		cp := latest(f.checkpoints())[key]
		return cp.DownstreamOffset == 900, fmt.Sprintf("%+v", cp)
	})
	var got []int64
	for _, cp := range f.checkpoints() {
		got = append(got, cp.DownstreamOffset)
	}
	if d := cmp.Diff([]int64{1000, 900}, got); d != "" {
		t.Errorf("checkpoint records (-want +got):\n%s", d)
	}
}

// TestGroupSyncReportsTargetPastLogEnd: an idle target group committed
// 1000 on a remote topic rebuilt with 400 records (the group offset sync
// of the old target, or the group's own consumers, committed it). Group
// offset sync reports it and leaves it: it never moves a target offset
// back.
func TestGroupSyncReportsTargetPastLogEnd(t *testing.T) {
	f := newFixture(t, 1, 400)
	f.syncs(0, [2]int64{600, 0}, [2]int64{999, 399})
	g := f.p.Group("g")
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 1000})
	f.commit(&f.p.Target, g, f.remote, map[int32]int64{0: 1000})
	e, _ := f.start(withSync)
	testcluster.Eventually(t, 20*time.Second, "reported", func() (bool, string) {
		gs, _ := groupStatus(e, g)
		return gs.State == StateCheckpointed && gs.Reason == ReasonTargetPastLogEnd && !gs.SafeToSwitch, fmt.Sprintf("%+v", gs)
	})
	gs, _ := groupStatus(e, g)
	want := []PartitionStatus{{Topic: f.topic, RemoteTopic: f.remote, Partition: 0, SourceOffset: 1000, Translated: 400,
		Checkpointed: 400, TargetOffset: 1000, Reason: ReasonTargetPastLogEnd}}
	if d := cmp.Diff(want, gs.Partitions); d != "" {
		t.Errorf("partitions (-want +got):\n%s", d)
	}
	time.Sleep(300 * time.Millisecond) // three more sync intervals
	if got := groupOffsets(t, &f.p.Target, g, f.remote)[0]; got != 1000 {
		t.Errorf("target group offset = %d, want 1000 (reported, not moved)", got)
	}
}
