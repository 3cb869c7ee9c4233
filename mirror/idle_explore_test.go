package mirror

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// waitCheckpointed waits until every group in want has n partitions with a
// checkpoint.
func waitCheckpointed(t *testing.T, m *Mirror, want map[string]int) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "checkpointed", func() (bool, string) {
		for g, n := range want {
			gs, _ := groupStatusOf(m, 0, g)
			c := 0
			for _, ps := range gs.Partitions {
				if ps.Checkpointed >= 0 {
					c++
				}
			}
			if c < n {
				return false, fmt.Sprintf("%s: %d of %d: %+v", g, c, n, gs)
			}
		}
		return true, ""
	})
}

func waitPartState(t *testing.T, m *Mirror, n int, st State) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "partitions in state", func() (bool, string) {
		c := 0
		for _, ps := range m.Status().Flows[0].Partitions {
			if ps.State == st {
				c++
			}
		}
		return c >= n, fmt.Sprintf("%d of %d %s: %+v", c, n, st, m.Status().Flows[0].Partitions)
	})
}

// TestIdleExplore logs the requests an idle flow sends in one shape after
// another (14 shapes, about 26 s each, in parallel): the exploration behind
// TestIdleNonUniformRequestsBounded, kept to measure new shapes. It runs
// only with KMIRROR_IDLE_EXPLORE=1 (go test ./mirror -run TestIdleExplore -v).
func TestIdleExplore(t *testing.T) {
	skipUnlessExplore(t)
	t.Parallel()
	// base: topic a, 3 partitions of 10 records, group g1 committed on all.
	base := func(t testing.TB, p *testcluster.Pair) {
		a := p.Topic("a")
		testcluster.CreateTopic(t, &p.Source, a, 3, nil)
		idleProduce(t, &p.Source, a, 10, 0, 1, 2)
		idleCommit(t, &p.Source, p.Group("g1"), a, map[int32]int64{0: 10, 1: 5, 2: 10})
	}
	steadyBase := func(t *testing.T, p *testcluster.Pair, m *Mirror) {
		waitReplicated(t, m, 30)
		waitCheckpointed(t, m, map[string]int{p.Group("g1"): 3})
	}
	targetState := func(st TargetState, want State) func(t *testing.T, p *testcluster.Pair, m *Mirror) {
		return func(t *testing.T, p *testcluster.Pair, m *Mirror) {
			steadyBase(t, p, m)
			if err := m.SetTargetState(t.Context(), m.Status().Flows[0].Name, st, "test", ""); err != nil {
				t.Fatal(err)
			}
			testcluster.Eventually(t, 30*time.Second, "applied", func() (bool, string) {
				fs := m.Status().Flows[0]
				return fs.State == want, string(fs.State)
			})
		}
	}
	failed := func(n int) idleShape {
		return idleShape{
			setup: func(t testing.TB, p *testcluster.Pair) {
				a := p.Topic("a")
				testcluster.CreateTopic(t, &p.Source, a, 8, nil)
				idleProduce(t, &p.Source, a, 10, 0, 1, 2, 3, 4, 5, 6, 7)
				parts := make([]int32, n)
				for i := range parts {
					parts[i] = int32(i)
				}
				p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "src." + a, Partitions: parts, Err: kerr.InvalidRecord, Count: -1})
			},
			steady: func(t *testing.T, p *testcluster.Pair, m *Mirror) {
				waitPartState(t, m, n, StateFailed)
			},
		}
	}
	shapes := map[string]idleShape{
		"baseline": {setup: base, steady: steadyBase},
		"empty": {setup: func(t testing.TB, p *testcluster.Pair) {
			a := p.Topic("a")
			testcluster.CreateTopic(t, &p.Source, a, 4, nil)
			idleProduce(t, &p.Source, a, 10, 0, 1)
			idleCommit(t, &p.Source, p.Group("g1"), a, map[int32]int64{0: 10, 1: 5, 2: 0, 3: 0})
			idleCommit(t, &p.Source, p.Group("g2"), a, map[int32]int64{0: 10, 1: 5})
		}, steady: func(t *testing.T, p *testcluster.Pair, m *Mirror) {
			waitReplicated(t, m, 20)
			waitCheckpointed(t, m, map[string]int{p.Group("g1"): 2, p.Group("g2"): 2})
		}},
		"paused":  {setup: base, steady: targetState(TargetPaused, StatePaused)},
		"stopped": {setup: base, steady: targetState(TargetStopped, StateStopped)},
		"failed1": failed(1),
		"failed4": failed(4),
		"notReplicated": {setup: func(t testing.TB, p *testcluster.Pair) {
			base(t, p)
			b := p.Topic("b")
			testcluster.CreateTopic(t, &p.Source, b, 3, nil)
			idleProduce(t, &p.Source, b, 10, 0, 1, 2)
			idleCommit(t, &p.Source, p.Group("g1"), b, map[int32]int64{0: 10, 1: 5, 2: 10})
			idleCommit(t, &p.Source, p.Group("g2"), b, map[int32]int64{0: 10, 1: 5, 2: 10})
		}, flow: func(fc *FlowConfig) {
			fc.TopicsExclude = []string{".*b.*"}
		}, steady: steadyBase},
		"activeOnTarget": {setup: base, steady: func(t *testing.T, p *testcluster.Pair, m *Mirror) {
			steadyBase(t, p, m)
			cl, err := kgo.NewClient(kgo.SeedBrokers(p.Target.Brokers...), kgo.ConsumerGroup(p.Group("g1")),
				kgo.ConsumeTopics("src."+p.Topic("a")), kgo.DisableAutoCommit(), kgo.FetchMaxWait(5*time.Second), kgo.MetadataMaxAge(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)
			go func() {
				for ctx := t.Context(); ctx.Err() == nil; {
					cl.PollFetches(ctx)
				}
			}()
			testcluster.Eventually(t, 30*time.Second, "active on target", func() (bool, string) {
				gs, _ := groupStatusOf(m, 0, p.Group("g1"))
				return gs.Reason == "active on target" || gs.State == "skipped", fmt.Sprintf("%+v", gs)
			})
		}},
		"groupDeleted": {setup: func(t testing.TB, p *testcluster.Pair) {
			base(t, p)
			idleCommit(t, &p.Source, p.Group("g2"), p.Topic("a"), map[int32]int64{0: 3, 1: 3, 2: 3})
		}, steady: func(t *testing.T, p *testcluster.Pair, m *Mirror) {
			steadyBase(t, p, m)
			waitCheckpointed(t, m, map[string]int{p.Group("g2"): 3})
			scoped(t, func(tb testing.TB) {
				if _, err := testcluster.Admin(tb, &p.Source).DeleteGroup(context.Background(), p.Group("g2")); err != nil {
					t.Fatal(err)
				}
			})
		}},
		"pastData": {setup: func(t testing.TB, p *testcluster.Pair) {
			base(t, p)
			idleCommit(t, &p.Source, p.Group("g2"), p.Topic("a"), map[int32]int64{0: 100, 1: 3, 2: 50})
		}, steady: steadyBase},
		"topicDeleted": {setup: func(t testing.TB, p *testcluster.Pair) {
			base(t, p)
			b := p.Topic("b")
			testcluster.CreateTopic(t, &p.Source, b, 3, nil)
			idleProduce(t, &p.Source, b, 10, 0, 1, 2)
			idleCommit(t, &p.Source, p.Group("g2"), b, map[int32]int64{0: 10, 1: 5, 2: 10})
		}, steady: func(t *testing.T, p *testcluster.Pair, m *Mirror) {
			waitReplicated(t, m, 60)
			waitCheckpointed(t, m, map[string]int{p.Group("g1"): 3, p.Group("g2"): 3})
			scoped(t, func(tb testing.TB) {
				if _, err := testcluster.Admin(tb, &p.Source).DeleteTopics(context.Background(), p.Topic("b")); err != nil {
					t.Fatal(err)
				}
			})
			testcluster.Eventually(t, 30*time.Second, "deleted topic's partitions gone", func() (bool, string) {
				return len(m.Status().Flows[0].Partitions) == 3, fmt.Sprint(len(m.Status().Flows[0].Partitions))
			})
		}},
		"retriable": {setup: func(t testing.TB, p *testcluster.Pair) {
			a := p.Topic("a")
			testcluster.CreateTopic(t, &p.Source, a, 4, nil)
			idleProduce(t, &p.Source, a, 10, 0, 1, 2, 3)
			p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "src." + a, Partitions: []int32{0, 1}, Err: kerr.TopicAuthorizationFailed, Count: -1})
		}, steady: func(t *testing.T, p *testcluster.Pair, m *Mirror) {
			waitPartState(t, m, 2, StateFailed)
		}},
		"refusedTopic": {setup: func(t testing.TB, p *testcluster.Pair) {
			base(t, p)
			b := p.Topic("b")
			testcluster.CreateTopic(t, &p.Source, b, 2, nil)
			idleProduce(t, &p.Source, b, 10, 0, 1)
			p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: "src." + b, Err: kerr.PolicyViolation, Count: -1})
		}, steady: func(t *testing.T, p *testcluster.Pair, m *Mirror) {
			waitCheckpointed(t, m, map[string]int{p.Group("g1"): 3})
		}},
		"many": {setup: func(t testing.TB, p *testcluster.Pair) {
			base(t, p)
			e, x := p.Topic("e"), p.Topic("x")
			testcluster.CreateTopic(t, &p.Source, e, 8, nil)
			testcluster.CreateTopic(t, &p.Source, x, 4, nil)
			idleProduce(t, &p.Source, x, 10, 0, 1, 2, 3)
			for i := range 20 {
				g := p.Group(fmt.Sprintf("m%02d", i))
				idleCommit(t, &p.Source, g, e, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0})
				idleCommit(t, &p.Source, g, x, map[int32]int64{0: 10, 1: 10, 2: 10, 3: 10})
				idleCommit(t, &p.Source, g, p.Topic("a"), map[int32]int64{0: 100, 1: 10, 2: 7})
			}
		}, flow: func(fc *FlowConfig) { fc.TopicsExclude = []string{".*x.*"} },
			steady: func(t *testing.T, p *testcluster.Pair, m *Mirror) {
				steadyBase(t, p, m)
				waitCheckpointed(t, m, map[string]int{p.Group("m19"): 2})
			}},
		"noHeartbeats": {setup: base, steady: steadyBase, flow: func(fc *FlowConfig) { fc.DisableHeartbeats = true }},
		"eos":          {setup: base, steady: steadyBase, flow: func(fc *FlowConfig) { fc.ExactlyOnce = true }},
		"shallow": {setup: base, steady: steadyBase, flow: func(fc *FlowConfig) {
			fc.ShallowCopy, fc.DisableProvenanceHeader = true, true
		}},
	}
	for name, sh := range shapes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runIdleShape(t, sh, 10*time.Second)
		})
	}
}

// TestIdleExploreExcludedAfterStart: TestIdleExplore's shape of a topic
// excluded by a restart with topics.exclude (a group committed on it).
func TestIdleExploreExcludedAfterStart(t *testing.T) {
	skipUnlessExplore(t)
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("kfake")
	}
	a, b := p.Topic("a"), p.Topic("b")
	scoped(t, func(tb testing.TB) {
		testcluster.CreateTopic(tb, &p.Source, a, 3, nil)
		testcluster.CreateTopic(tb, &p.Source, b, 3, nil)
		idleProduce(tb, &p.Source, a, 10, 0, 1, 2)
		idleProduce(tb, &p.Source, b, 10, 0, 1, 2)
		idleCommit(tb, &p.Source, p.Group("g1"), a, map[int32]int64{0: 10, 1: 5, 2: 10})
		idleCommit(tb, &p.Source, p.Group("g1"), b, map[int32]int64{0: 10, 1: 5, 2: 10})
		idleCommit(tb, &p.Source, p.Group("g2"), b, map[int32]int64{0: 10, 1: 5, 2: 10})
	})
	fc := idleFlow(p)
	m1, stop1 := runMirror(t, append(idleClusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m1, 60)
	waitCheckpointed(t, m1, map[string]int{p.Group("g1"): 6, p.Group("g2"): 3})
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	fc.TopicsExclude = []string{".*b.*"}
	src, dst := tallyRequests(p.Source.Fake), tallyRequests(p.Target.Fake)
	start := time.Now()
	m2, _ := runMirror(t, append(idleClusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m2, 0)
	waitCheckpointed(t, m2, map[string]int{p.Group("g1"): 3})
	time.Sleep(16*time.Second - time.Since(start))
	idleWindow(t, src, dst, 10*time.Second)
	gs, _ := groupStatusOf(m2, 0, p.Group("g2"))
	t.Logf("g2: %+v", gs)
}

func skipUnlessExplore(t *testing.T) {
	if os.Getenv("KMIRROR_IDLE_EXPLORE") == "" {
		t.Skip("an exploration that logs counts: KMIRROR_IDLE_EXPLORE=1 runs it")
	}
}
