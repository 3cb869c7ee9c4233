package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestRemoteRecreatedCheckpointFollowsRefill: the remote topic is deleted
// on the target while the flow runs, after the source's log start moved
// to 50 (retention): the engine re-creates it and refills it from the
// source's log start, source 50-99 at target 0-49. The group's checkpoint
// goes down from 100 to 50 with no new source record: the refill's offset
// syncs record the new remote topic's ID, so the checkpoint emitter keeps
// them when it finds the topic re-created (it used to discard them with
// the old log's, and an idle partition got no other sync: the checkpoint
// stayed forgotten until the next record).
func TestRemoteRecreatedCheckpointFollowsRefill(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders, g := p.Topic("orders"), p.Group("g")
	remote := p.Source.Alias + "." + orders
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 100)
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 100})
	fc := trFlow(p)
	fc.SyncGroupOffsets = false
	m, stop := trStart(t, p, fc)
	defer stop()
	key := fmt.Sprintf("%s/%s/0", g, remote)
	testcluster.Eventually(t, 30*time.Second, "checkpoint at 100", func() (bool, string) {
		gs, _ := groupStatusOf(m, 0, g)
		return len(gs.Partitions) == 1 && gs.Partitions[0].Checkpointed == 100, fmt.Sprintf("%+v", gs)
	})
	if cp := readCheckpoints(t, p)[key]; cp.UpstreamOffset != 100 || cp.DownstreamOffset != 100 {
		t.Fatalf("checkpoint %+v: want 100 -> 100", cp)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: orders, Partition: 0, At: 50})
	if resp, err := testcluster.Admin(t, &p.Source).DeleteRecords(ctx, del); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, resp.Error())
	}
	adm := testcluster.Admin(t, &p.Target)
	if _, err := adm.DeleteTopic(ctx, remote); err != nil {
		t.Fatalf("deleting %s on the target: %v", remote, err)
	}
	testcluster.Eventually(t, 60*time.Second, "refilled from the source's log start", func() (bool, string) {
		ends, err := adm.ListEndOffsets(ctx, remote)
		o, _ := ends.Lookup(remote, 0)
		return err == nil && o.Err == nil && o.Offset == 50, fmt.Sprintf("%+v %v", o, err)
	})
	testcluster.Eventually(t, 30*time.Second, "checkpoint down to the refilled log", func() (bool, string) {
		cp := readCheckpoints(t, p)[key]
		return cp.UpstreamOffset == 100 && cp.DownstreamOffset == 50, fmt.Sprintf("%+v", cp)
	})
	gs, _ := groupStatusOf(m, 0, g)
	if len(gs.Partitions) != 1 || gs.Partitions[0].Checkpointed != 50 || !gs.Partitions[0].CheckpointExact {
		t.Errorf("group status %+v: want checkpointed 50, exact", gs)
	}
}
