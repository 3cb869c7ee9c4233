package mirror

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestEmptyPartitionKeepsNoEagerEmissions: a group committed 0 on a source
// partition that holds no record (Java consumers commit their position on
// every partition assigned to them) waits for an offset sync that never
// comes. The emitter emitted every second while any partition waited, so
// it fetched every group's offsets once a second, forever (a breaker's
// finding: 10 OffsetFetch requests in 10 s with a 10 s interval). Past the
// start's eager window it now emits at its interval unless syncs arrive
// for a waiting partition: records then written to partition 1 get it
// translated and checkpointed within seconds, not at the next interval
// (the emitter's syncsIn early emission, which no test exercised).
func TestEmptyPartitionKeepsNoEagerEmissions(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("counts OffsetFetch requests with kfake's control hook (KMIRROR_*_BROKERS name real brokers)")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	produceN(t, &p.Source, orders, 0, 10)
	g := p.Group("app")
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 10, 1: 0})
	var fetches atomic.Int64
	c := p.Source.Fake
	c.ControlKey(int16(kmsg.OffsetFetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.OffsetFetchRequest)
		if req.Group == g {
			fetches.Add(1)
		}
		for _, rg := range req.Groups {
			if rg.Group == g {
				fetches.Add(1)
			}
		}
		return nil, nil, false
	})
	fc := trFlow(p)
	// The interval far longer than the bound of the early emission below;
	// the sync rounds every 5 s, each an OffsetFetch of the group.
	fc.EmitCheckpointsInterval, fc.SyncGroupOffsetsInterval = time.Minute, 5*time.Second
	m, _ := trStart(t, p, fc)
	parts := func() (p0, p1 checkpoint.PartitionStatus) {
		gs, _ := groupStatusOf(m, 0, g)
		for _, ps := range gs.Partitions {
			if ps.Partition == 0 {
				p0 = ps
			} else {
				p1 = ps
			}
		}
		return p0, p1
	}
	testcluster.Eventually(t, 30*time.Second, "partition 0 checkpointed", func() (bool, string) {
		p0, _ := parts()
		return p0.Checkpointed == 10, fmt.Sprintf("%+v", p0)
	})
	// Past the eager window (15 s after the last partition became
	// translatable), with partition 1 still waiting.
	time.Sleep(16 * time.Second)
	if _, p1 := parts(); p1.Translated != -1 || p1.Reason != checkpoint.ReasonNoOffsetSync {
		t.Fatalf("partition 1 (no record, no offset sync): %+v, want waiting for its first offset sync", p1)
	}
	before := fetches.Load()
	time.Sleep(6 * time.Second)
	if n := fetches.Load() - before; n > 2 {
		t.Errorf("%d OffsetFetch requests of %s in 6 s with a 5 s sync interval, want at most 2 (an emission every second while a partition waits)", n, g)
	}

	// Records reach partition 1: its first offset sync makes the next
	// emission early (at most eagerInterval after the last), about 40 s
	// before the interval's.
	produceN(t, &p.Source, orders, 1, 3)
	testcluster.Eventually(t, 20*time.Second, "partition 1 translated and checkpointed early, at its first offset sync", func() (bool, string) {
		_, p1 := parts()
		return p1.Translated == 0 && p1.Checkpointed == 0, fmt.Sprintf("%+v", p1)
	})
}
