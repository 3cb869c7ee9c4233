package mirror

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestStopReportedOnceRevokedUnitsStopped (found by a review): a slot a
// rebalance is revoking (its unit flushing a held produce, moved from
// f.units to f.stopping) was not in the stop list of
// applyTarget(STOPPED), so the member reported STOPPED while that unit
// still landed records after it. It reports STOPPED once that unit
// stopped too.
func TestStopReportedOnceRevokedUnitsStopped(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if p.Target.Fake == nil {
		t.Skip("kfake only")
	}
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	produceN(t, &p.Source, orders, 0, 10)
	produceN(t, &p.Source, orders, 1, 10)
	fc := fastFlow(p)
	fc.Tasks = 2
	m1, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w1:8083"), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 60*time.Second, "20 records replicated", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 20, memberStates(m1)
	})

	td, err := testcluster.Admin(t, &p.Target).ListTopics(context.Background(), remote)
	if err != nil {
		t.Fatal(err)
	}
	remoteID := [16]byte(td[remote].ID)
	// Produces of the remote topic are held per slot until released.
	var mu sync.Mutex
	gates := map[int32]chan struct{}{0: make(chan struct{}), 1: make(chan struct{})}
	heldSlots := map[int32]bool{}
	c := p.Target.Fake
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		for _, tp := range pr.Topics {
			if tp.Topic != remote && (tp.TopicID == ([16]byte{}) || tp.TopicID != remoteID) {
				continue
			}
			for _, pp := range tp.Partitions {
				slot := slotOf(orders, pp.Partition, 2)
				mu.Lock()
				g := gates[slot]
				heldSlots[slot] = true
				mu.Unlock()
				select {
				case <-g:
				default:
					c.SleepControl(func() { <-g })
				}
				return nil, nil, false
			}
		}
		return nil, nil, false
	})
	produceN(t, &p.Source, orders, 0, 5)
	produceN(t, &p.Source, orders, 1, 5)
	testcluster.Eventually(t, 10*time.Second, "both slots' produces held", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(heldSlots) == 2, fmt.Sprint(heldSlots, memberStates(m1))
	})

	// A second member joins: the cooperative rebalance revokes a slot of
	// m1, whose unit flushes its held produce.
	m2, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w2:8083"), WithStatusInterval(200*time.Millisecond))...)
	var kept int32 = -1
	testcluster.Eventually(t, 30*time.Second, "m1 revoking a slot", func() (bool, string) {
		s := m1.Status().Flows[0].Member.Slots
		if len(s) == 1 {
			kept = s[0]
		}
		return len(s) == 1, memberStates(m1, m2)
	})
	revoked := 1 - kept

	ctx := context.Background()
	if err := m1.SetTargetState(ctx, fc.Name(), TargetStopped, "test", "failover"); err != nil {
		t.Fatal(err)
	}
	close(gates[kept]) // the unit STOPPED stops flushes at once
	applied := func() []statustopic.MemberState {
		ms, err := statustopic.ReadMembers(ctx, p.Target.Opts(), p.Source.Alias, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	// While the revoked slot's produce is held, m1 does not report STOPPED.
	time.Sleep(2 * time.Second)
	for _, ms := range applied() {
		if ms.WorkerID == "w1:8083" && ms.Applied == statustopic.Stopped {
			t.Fatalf("w1 reports STOPPED while its revoked slot %d still holds a produce in flight: %s", revoked, memberStates(m1, m2))
		}
	}
	close(gates[revoked])
	var ackEnd int64
	testcluster.Eventually(t, 15*time.Second, "every live member reports STOPPED", func() (bool, string) {
		ms := applied()
		for _, m := range ms {
			if m.Applied != statustopic.Stopped {
				return false, fmt.Sprintf("%+v", ms)
			}
		}
		ackEnd = targetEnd(t, &p.Target, remote)
		return len(ms) == 2, fmt.Sprintf("%+v", ms)
	})
	// kmirror failover would now read the final checkpoints and commit.
	time.Sleep(time.Second)
	if end := targetEnd(t, &p.Target, remote); end != ackEnd || end != 30 {
		t.Fatalf("members reported STOPPED with %d records on %s (want all 30); %d a second later", ackEnd, remote, end)
	}
}
