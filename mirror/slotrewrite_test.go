package mirror

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestSlotRecordRewrittenAfterFailedWrite: an owned slot's record whose
// write failed (the status topic unreachable for a publication) is written
// at the next publication, not taken as written: the unchanged-record skip
// (slotRewriteEvery) would else leave the status topic with the slot's
// previous content for 12 intervals while the member record, written the
// next interval, vouched for it (a cluster view showing a FAILED
// partition RUNNING for a minute).
func TestSlotRecordRewrittenAfterFailedWrite(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("slotrewrite")
	fc := recoveryFlow(p, topic)
	f, err := newFlow(fc, ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()},
		ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}, slog.New(slog.DiscardHandler), newMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	stTopic := statustopic.Topic(p.Source.Alias)
	testcluster.CreateTopic(t, &p.Target, stTopic, 1, nil)
	good := testcluster.Client(t, &p.Target, kgo.DefaultProduceTopic(stTopic))
	closed, err := kgo.NewClient(p.Target.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	f.selfID = "member-1"
	f.owned[0] = true

	status := func(records int64, state State) FlowStatus {
		return FlowStatus{State: StateRunning, Member: MemberStatus{Slots: []int32{0}},
			Partitions: []PartitionStatus{{Topic: topic, RemoteTopic: "src." + topic, Partition: 0, State: state, Records: records}}}
	}
	ctx := t.Context()
	f.statusCl = good
	if err := f.publish(ctx, status(1, StateRunning), nil); err != nil {
		t.Fatalf("first publication: %v", err)
	}
	f.statusCl = closed // the status topic unreachable for one publication
	if err := f.publish(ctx, status(2, StateFailed), nil); err == nil {
		t.Fatal("a publication through a closed client succeeded")
	}
	f.statusCl = good
	if err := f.publish(ctx, status(2, StateFailed), nil); err != nil {
		t.Fatalf("third publication: %v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := statustopic.ReadView(rctx, p.Target.Opts(), p.Source.Alias)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, ok := v.Slot(0)
	if !ok || len(rec.Partitions) != 1 || rec.Partitions[0].Records != 2 || rec.Partitions[0].State != string(StateFailed) {
		t.Fatalf("slot 0 on the status topic after the failed write was retried: found %v, %+v; want its partition FAILED with 2 records", ok, rec.Partitions)
	}
}
