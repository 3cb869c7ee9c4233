package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestLegacyFallbackStopsRunningUnits: a member with tasks.max 4 runs
// slots 0..3 of a coordination topic that kept 8 partitions (an earlier
// epoch of 8). A member of an older release (cooperative-sticky only,
// tasks.max 8 = the partition count, so it starts) joins: the group falls
// back to cooperative-sticky, which gives the old member slots 4..7 of the
// 8-slot layout. The new member says it waits ("replicates nothing") but
// the units it already ran keep replicating with the 4-slot layout: every
// partition, including those of the old member's slots 4..7. They now
// stop (slots kept) and start again once the group left the fallback.
func TestLegacyFallbackStopsRunningUnits(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if p.Real {
		t.Skip("kfake only")
	}
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	const parts = 8
	testcluster.CreateTopic(t, &p.Source, orders, parts, nil)
	fc := fastFlow(p)
	fc.Tasks = 4
	fc.SessionTimeout, fc.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
	group, units := defaultGroupID(fc.Source, fc.Target), unitsTopicName(fc.Source)
	testcluster.CreateTopic(t, &p.Target, units, 8, map[string]*string{"cleanup.policy": strp("compact")})
	produceEach(t, &p.Source, orders, parts, 0, 10)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("new"))...)
	testcluster.Eventually(t, 30*time.Second, "80 replicated by the new member on 4 slots", func() (bool, string) {
		fs := m.Status().Flows[0]
		return targetEnd(t, &p.Target, remote) == 80 && len(fs.Member.Slots) == 4, fmt.Sprint(fs.Member)
	})
	old := testcluster.Client(t, &p.Target, kgo.ConsumerGroup(group), kgo.ConsumeTopics(units),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(), kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond))
	go func() {
		for {
			if fs := old.PollFetches(context.Background()); fs.IsClientClosed() {
				return
			}
		}
	}()
	testcluster.Eventually(t, 30*time.Second, "the new member says it waits", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.Member.Waiting != "", fmt.Sprintf("%+v", fs.Member)
	})
	time.Sleep(time.Second)
	var double []string
	for pt := range int32(parts) {
		if s8 := slotOf(orders, pt, 8); s8 >= 4 {
			double = append(double, fmt.Sprintf("%d(slot %d of 8, slot %d of 4)", pt, s8, slotOf(orders, pt, 4)))
		}
	}
	produceEach(t, &p.Source, orders, parts, 10, 10)
	time.Sleep(3 * time.Second)
	fs := m.Status().Flows[0]
	if n := targetEnd(t, &p.Target, remote); n != 80 {
		t.Errorf("the waiting member (%q) still replicated %d records after the fallback (target %d, want 80); "+
			"partitions %v belong to the older member's slots too: copied by two members", fs.Member.Waiting, n-80, n, double)
	}
	if fs.Member.Singleton {
		t.Error("the waiting member still runs the singleton duties")
	}

	// The older member leaves: the group drops the fallback, and the
	// member starts its slots again and replicates what waited.
	old.Close()
	testcluster.Eventually(t, 30*time.Second, "the new member replicates again once the older one left", func() (bool, string) {
		fs := m.Status().Flows[0]
		return targetEnd(t, &p.Target, remote) == 160 && fs.Member.Waiting == "" && len(fs.Member.Slots) == 4 && fs.Member.Singleton,
			fmt.Sprintf("target %d, member %+v", targetEnd(t, &p.Target, remote), fs.Member)
	})
}
