package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrk1207MemberClockBehindStaysLive (a breaker's finding): a member
// whose clock is a minute behind the others' publishes its record every
// interval, but the others judged it by the time it wrote in the record
// (its clock): older than 3 intervals, it was taken as gone at every
// read, missing from ClusterStatus's members (and its slots UNASSIGNED).
// A record that arrives while a member tails the topic proves its writer
// alive, whatever its clock.
func TestBrk1207MemberClockBehindStaysLive(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	fc := fastFlow(p)
	fc.Tasks = 2
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w1"), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 60*time.Second, "one live member", func() (bool, string) {
		cf := m.ClusterStatus().Flows[0]
		return len(cf.Members) == 1 && cf.State == StateRunning, string(cf.State)
	})
	cl := testcluster.Client(t, &p.Target)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			// Written every 100 ms, at a clock one minute behind.
			at := time.Now().Add(-time.Minute).UTC()
			r, _ := statustopic.MemberRecordOf(p.Source.Alias, statustopic.MemberRecord{Flow: fc.Name(), MemberID: "behind", WorkerID: "w2", GroupMemberID: "g2", Generation: 1,
				Tasks: 2, Started: at, Slots: []int32{}, Applied: statustopic.Running, State: string(StateRunning), IntervalMS: 200, At: at})
			_ = cl.ProduceSync(ctx, r).FirstErr()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(time.Second)
	testcluster.Eventually(t, 15*time.Second, "the member with the clock behind listed", func() (bool, string) {
		cf := m.ClusterStatus().Flows[0]
		return len(cf.Members) == 2, fmt.Sprintf("%d members", len(cf.Members))
	})
	// Its records stop: it is gone 3 intervals after the last arrived.
	cancel()
	<-done
	testcluster.Eventually(t, 15*time.Second, "the member gone once its records stop", func() (bool, string) {
		return len(m.ClusterStatus().Flows[0].Members) == 1, ""
	})
}
