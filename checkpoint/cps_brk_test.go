package checkpoint

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestBrkCpsLargeGroupNotQuadratic: a group with 100 000 partitions whose
// keys come out of sorted (topic index, partition) order (checkpoints read
// in log order, topics interned in another order than their names), then
// forgotten in order (target topics recreated, group gone). A sorted slice
// shifted on every insert and delete took about 12 s for this (quadratic),
// under the emitter's store lock; the map it replaced well under a second.
// The group keeps a sorted part and an unsorted tail of at most about the
// square root of its entries, and dead entries are at most half of them:
// checked after every step here, the speed by
// BenchmarkCheckpointStateLargeGroup.
func TestBrkCpsLargeGroupNotQuadratic(t *testing.T) {
	const n = 100000
	c := newCheckpointState()
	perm := rand.New(rand.NewSource(1)).Perm(n)
	topic := func(p int) string { return fmt.Sprint("t", p%100) }
	bounded := func(when string) {
		t.Helper()
		g, ok := c.groups[c.index["g"]]
		if !ok {
			return
		}
		tail := len(g.es) - int(g.sorted)
		if tail > 8 && tail*tail > len(g.es)+2*tail {
			t.Fatalf("%s: unsorted tail of %d of %d entries", when, tail, len(g.es))
		}
		if int(g.dead)*2 > len(g.es) {
			t.Fatalf("%s: %d dead of %d entries", when, g.dead, len(g.es))
		}
	}
	for i, p := range perm {
		if !c.Next(Checkpoint{Group: "g", Topic: topic(p), Partition: int32(p / 100), UpstreamOffset: 1, DownstreamOffset: 1}) {
			t.Fatalf("Next refused new key %d", p)
		}
		bounded(fmt.Sprint("insert ", i))
	}
	for _, p := range perm {
		if c.Next(Checkpoint{Group: "g", Topic: topic(p), Partition: int32(p / 100), UpstreamOffset: 1, DownstreamOffset: 1}) {
			t.Fatalf("Next accepted the same checkpoint twice for %d", p)
		}
	}
	if c.Len() != n || len(c.Group("g")) != n {
		t.Fatalf("Len = %d, Group = %d entries, want %d", c.Len(), len(c.Group("g")), n)
	}
	for i := range n {
		c.Forget("g", topic(i), int32(i/100))
		bounded(fmt.Sprint("forget ", i))
		if i == n/2 {
			if c.Len() != n-i-1 || len(c.Group("g")) != n-i-1 {
				t.Fatalf("after %d forgets: Len = %d, Group = %d", i+1, c.Len(), len(c.Group("g")))
			}
		}
	}
	if c.Len() != 0 || c.Group("g") != nil || len(c.groups) != 0 {
		t.Fatalf("after forgetting all: Len = %d, Group = %v, groups = %d", c.Len(), c.Group("g"), len(c.groups))
	}
}

// BenchmarkCheckpointStateLargeGroup is TestBrkCpsLargeGroupNotQuadratic's
// work: 100 000 keys of one group inserted out of order, each offered again,
// then all forgotten.
func BenchmarkCheckpointStateLargeGroup(b *testing.B) {
	const n = 100000
	perm := rand.New(rand.NewSource(1)).Perm(n)
	cps := make([]Checkpoint, n)
	for i, p := range perm {
		cps[i] = Checkpoint{Group: "g", Topic: fmt.Sprint("t", p%100), Partition: int32(p / 100), UpstreamOffset: 1, DownstreamOffset: 1}
	}
	for b.Loop() {
		c := newCheckpointState()
		for _, cp := range cps {
			c.Next(cp)
		}
		for _, cp := range cps {
			c.Next(cp)
		}
		for _, cp := range cps {
			c.Forget(cp.Group, cp.Topic, cp.Partition)
		}
	}
}
