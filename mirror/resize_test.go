package mirror

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestResizeSlots: ResizeSlots refuses
// while a member runs, then fences every old transactional id and
// re-creates the coordination topic; the flow then runs exactly once on the
// new slots from where it stopped.
func TestResizeSlots(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 4, nil)
	ctx := context.Background()
	produce := func(from, to int) {
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % 4), Value: []byte(fmt.Sprint(i))})
		}
		testcluster.Produce(t, &p.Source, rs...)
	}
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce = true
	fc.Tasks = 2
	produce(0, 40)
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicatedCommitted(t, m, 40)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// (Issue 20: a member with another tasks.max no longer refuses to
	// start: the change is online, TestTasksMaxRollingRestart; the
	// refusal is left for groups of an older release,
	// TestTasksMaxRefusedWithOlderRelease. The offline resize stays.)
	fc.Tasks = 3

	// Refused while a member of the flow runs (the old layout's member).
	fc2 := fc
	fc2.Tasks = 2
	running, stopRunning := runMirror(t, append(clusterOpts(p), WithFlow(fc2), WithWorkerID("10.1.2.3:8083"))...)
	testcluster.Eventually(t, 30*time.Second, "member joined", func() (bool, string) {
		ms := running.Status().Flows[0].Member
		return len(ms.Slots) == 2, fmt.Sprint(ms)
	})
	resizer, err := newMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	if err != nil {
		t.Fatal(err)
	}
	// The refusal names the member by the worker id it advertises on the
	// status topic, as the operator knows it, besides its host and group
	// member id (before, only "127.0.0.1 kgo-…" named it). Its member
	// record may follow its join by a second.
	testcluster.Eventually(t, 30*time.Second, "refusal naming the worker", func() (bool, string) {
		_, err := resizer.ResizeSlots(ctx)
		return err != nil && strings.Contains(err.Error(), "still has 1 member(s) (worker 10.1.2.3:8083 (host 127.0.0.1"), fmt.Sprint(err)
	})
	if err := stopRunning(); err != nil {
		t.Fatal(err)
	}
	got, err := resizer.ResizeSlots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	group := defaultGroupID(fc.Source, fc.Target)
	want := []SlotsResize{{Flow: fc.Name(), From: 2, To: 3, Fenced: []string{group + "-0", group + "-1"}, TargetState: TargetRunning}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ResizeSlots (-want +got):\n%s", diff)
	}
	// A flow left STOPPED (say by `kmirror failover`) is reported as such:
	// members started after the resize stay stopped.
	if err := resizer.SetTargetState(ctx, fc.Name(), TargetStopped, "resize-test", "drill"); err != nil {
		t.Fatal(err)
	}
	again, err := resizer.ResizeSlots(ctx)
	if err != nil || len(again) != 1 || again[0].From != 3 || len(again[0].Fenced) != 0 {
		t.Fatalf("second ResizeSlots: %+v, %v; want a no-op", again, err)
	}
	if a := again[0]; a.TargetState != TargetStopped || a.TargetStateBy != "resize-test" || a.TargetStateAt.IsZero() || a.TargetStateErr != "" {
		t.Fatalf("second ResizeSlots target state: %q by %q at %v (err %q); want STOPPED by resize-test", a.TargetState, a.TargetStateBy, a.TargetStateAt, a.TargetStateErr)
	}
	if err := resizer.SetTargetState(ctx, fc.Name(), TargetRunning, "resize-test", "drill over"); err != nil {
		t.Fatal(err)
	}

	produce(40, 80)
	m3, stop3 := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "three slots", func() (bool, string) {
		ms := m3.Status().Flows[0].Member
		return len(ms.Slots) == 3, fmt.Sprint(ms)
	})
	waitReplicatedCommitted(t, m3, 40)
	if err := stop3(); err != nil {
		t.Fatal(err)
	}
	src := testcluster.ReadAll(t, &p.Source, topic)
	dst, err := testcluster.ReadTopic(ctx, p.Target.Opts(), p.Source.Alias+"."+topic, true)
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 4; part++ {
		if dups := exactCopy(t, part, src[part], dst[part]); dups != 0 {
			t.Errorf("partition %d: %d duplicates across the resize", part, dups)
		}
	}
}

// TestResizeFencingUsesTheUnitsTransactionTimeout: the offline resize
// fenced the old slots' transactional ids with kgo's default transaction
// timeout (40 s) where the units and the leader's fencing use the flow's
// (60 s, or the target's transaction.timeout.ms), so the coordinator saw
// two timeouts for one id, and a target whose transaction.max.timeout.ms
// sits between them refused the resize's fencing alone.
func TestResizeFencingUsesTheUnitsTransactionTimeout(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("counts InitProducerId requests with kfake's control hook (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("resizetxn")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 2
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	group := defaultGroupID(fc.Source, fc.Target)
	var mu sync.Mutex
	asked := map[int32]int{} // transaction timeout (ms) -> InitProducerId requests of the flow's ids
	c := p.Target.Fake
	c.ControlKey(int16(kmsg.InitProducerID), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if req := kreq.(*kmsg.InitProducerIDRequest); req.TransactionalID != nil && strings.HasPrefix(*req.TransactionalID, group+"-") {
			mu.Lock()
			asked[req.TransactionTimeoutMillis]++
			mu.Unlock()
		}
		return nil, nil, false
	})
	var in []*kgo.Record
	for i := range 10 {
		in = append(in, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))})
	}
	testcluster.Produce(t, &p.Source, in...)
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicatedCommitted(t, m, 10)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	fc.Tasks = 3
	resizer, err := newMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := resizer.ResizeSlots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].From != 2 || got[0].To != 3 || fmt.Sprint(got[0].Fenced) != fmt.Sprint([]string{group + "-0", group + "-1"}) {
		t.Fatalf("ResizeSlots: %+v; want 2 -> 3 with %s-0 and %s-1 fenced", got, group, group)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[60000] < 4 {
		t.Errorf("InitProducerId transaction timeouts (ms -> requests) %v, want only 60000 (the run's fencing and units, then the resize's two)", asked)
	}
}
