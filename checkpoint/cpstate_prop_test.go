package checkpoint

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cpModel is the reference for TestCheckpointStateMatchesModel: one map
// entry per key, the contracts of checkpointState's methods written out
// plainly (MM2's checkpointIsMoreRecent for Next).
type cpModel struct {
	last   map[cpModelKey]Checkpoint
	exact  map[cpModelKey]bool
	target map[cpModelKey]targetID
}

type cpModelKey struct {
	group, topic string
	partition    int32
}

func keyOfCp(cp Checkpoint) cpModelKey { return cpModelKey{cp.Group, cp.Topic, cp.Partition} }

func (m *cpModel) next(cp Checkpoint) bool {
	if cp.UpstreamOffset < 0 || cp.DownstreamOffset < 0 {
		return false
	}
	if v, ok := m.last[keyOfCp(cp)]; ok && cp.UpstreamOffset >= v.UpstreamOffset && cp.DownstreamOffset <= v.DownstreamOffset {
		return false
	}
	m.last[keyOfCp(cp)] = cp
	return true
}

func (m *cpModel) upgrade(cp Checkpoint) bool {
	k := keyOfCp(cp)
	v, ok := m.last[k]
	if !ok || v.UpstreamOffset != cp.UpstreamOffset || v.DownstreamOffset != cp.DownstreamOffset || m.exact[k] {
		return false
	}
	m.exact[k] = true
	return true
}

// TestCheckpointStateMatchesModel drives checkpointState (its entries kept
// per group, sorted, since issue 22) and the plain model with the same
// random operations, keys coming in any order, and compares every answer
// and, after each step, every key's state, each group's checkpoints and
// the groups.
func TestCheckpointStateMatchesModel(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewSource(seed))
			c := newCheckpointState()
			m := &cpModel{last: map[cpModelKey]Checkpoint{}, exact: map[cpModelKey]bool{}, target: map[cpModelKey]targetID{}}
			groups := []string{"g0", "g1", "g2", "orders-readers"}
			topics := []string{"src.b", "src.a", "src.c"}
			mds := []string{"", "", "m1", "m2"}
			ids := []targetID{{}, {cluster: "c1"}, {cluster: "c1", topic: [16]byte{1}}, {cluster: "c2", topic: [16]byte{2}}}
			randCp := func() Checkpoint {
				return Checkpoint{Group: groups[rnd.Intn(len(groups))], Topic: topics[rnd.Intn(len(topics))],
					Partition: int32(rnd.Intn(40)), UpstreamOffset: int64(rnd.Intn(12) - 1), DownstreamOffset: int64(rnd.Intn(12) - 1),
					Metadata: mds[rnd.Intn(len(mds))]}
			}
			for step := range 3000 {
				cp := randCp()
				k := keyOfCp(cp)
				op := rnd.Intn(8)
				switch op {
				case 0, 1:
					if got, want := c.Next(cp), m.next(cp); got != want {
						t.Fatalf("step %d: Next(%+v) = %v, want %v", step, cp, got, want)
					}
				case 2:
					exact := rnd.Intn(2) == 0
					want := m.next(cp)
					if want {
						m.exact[k] = exact
					} else if exact {
						want = m.upgrade(cp)
					}
					if got := c.NextExact(cp, exact); got != want {
						t.Fatalf("step %d: NextExact(%+v, %v) = %v, want %v", step, cp, exact, got, want)
					}
				case 3:
					if got, want := c.Load(cp), cp.UpstreamOffset >= 0 && cp.DownstreamOffset >= 0; got != want {
						t.Fatalf("step %d: Load(%+v) = %v, want %v", step, cp, got, want)
					} else if want {
						m.last[k] = cp
					}
				case 4:
					// Forget drops the key's whole state: its target log and
					// exactness too.
					c.Forget(cp.Group, cp.Topic, cp.Partition)
					delete(m.last, k)
					delete(m.exact, k)
					delete(m.target, k)
				case 5:
					id := ids[rnd.Intn(len(ids))]
					c.SetTarget(cp.Group, cp.Topic, cp.Partition, id)
					m.target[k] = id
				case 6:
					exact := rnd.Intn(2) == 0
					c.SetExact(cp.Group, cp.Topic, cp.Partition, exact)
					m.exact[k] = exact
				case 7:
					if got, want := c.Upgrade(cp), m.upgrade(cp); got != want {
						t.Fatalf("step %d: Upgrade(%+v) = %v, want %v", step, cp, got, want)
					}
				}
				if step%50 != 49 {
					continue
				}
				for _, g := range groups {
					var want []Checkpoint
					for _, tp := range topics {
						for p := range int32(40) {
							k := cpModelKey{g, tp, p}
							last, ok := c.Last(g, tp, p)
							wantLast, wantOK := m.last[k]
							if ok != wantOK || last != wantLast {
								t.Fatalf("step %d: Last(%v) = %+v %v, want %+v %v", step, k, last, ok, wantLast, wantOK)
							}
							if got := c.Exact(g, tp, p); got != m.exact[k] {
								t.Fatalf("step %d: Exact(%v) = %v, want %v", step, k, got, m.exact[k])
							}
							if got := c.Target(g, tp, p); got != m.target[k] {
								t.Fatalf("step %d: Target(%v) = %+v, want %+v", step, k, got, m.target[k])
							}
							if wantOK {
								want = append(want, wantLast)
							}
						}
					}
					sort.Slice(want, func(i, j int) bool {
						if want[i].Topic != want[j].Topic {
							return want[i].Topic < want[j].Topic
						}
						return want[i].Partition < want[j].Partition
					})
					if diff := cmp.Diff(want, c.Group(g)); diff != "" {
						t.Fatalf("step %d: Group(%s) (-want +got):\n%s", step, g, diff)
					}
				}
				var wantGroups []string
				seen := map[string]bool{}
				for k := range m.last {
					if !seen[k.group] {
						seen[k.group] = true
						wantGroups = append(wantGroups, k.group)
					}
				}
				sort.Strings(wantGroups)
				if diff := cmp.Diff(wantGroups, c.Groups()); diff != "" {
					t.Fatalf("step %d: Groups (-want +got):\n%s", step, diff)
				}
				if c.Len() != len(m.last) {
					t.Fatalf("step %d: Len = %d, want %d", step, c.Len(), len(m.last))
				}
				n := 0
				for range c.all {
					n++
				}
				var stored int
				for _, g := range c.groups {
					dead := 0
					seen := make(map[[2]int64]bool)
					for _, e := range g.es {
						if e.v.empty() {
							dead++
						} else {
							stored++
						}
						if k := [2]int64{int64(e.topic), int64(e.partition)}; seen[k] {
							t.Fatalf("step %d: key %+v stored twice", step, k)
						} else {
							seen[k] = true
						}
					}
					if int(g.dead) != dead || dead == len(g.es) {
						t.Fatalf("step %d: dead = %d, counted %d of %d entries", step, g.dead, dead, len(g.es))
					}
					es := g.es[:g.sorted]
					for i := 1; i < len(es); i++ {
						if a, b := es[i-1], es[i]; a.topic > b.topic || a.topic == b.topic && a.partition >= b.partition {
							t.Fatalf("step %d: entries out of order: %+v then %+v", step, a, b)
						}
					}
				}
				if n != stored {
					t.Fatalf("step %d: all yielded %d entries, stored %d", step, n, stored)
				}
			}
		})
	}
}
