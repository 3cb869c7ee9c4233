package mirror

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/heartbeat"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestHeartbeatChainTopology: a chain A->B->C, with the reverse pairs
// B->A and C->B emitting heartbeats only (MM2's clusterPairs), under the
// default and the identity policy. C learns from heartbeats topic names
// that B is 1 hop and A 2 hops upstream, B that A is 1 hop; no heartbeats
// topic is named after a cluster twice, and nothing flows back.
func TestHeartbeatChainTopology(t *testing.T) {
	t.Parallel()
	// Three embedded kfake clusters, whatever the backend of the run (the
	// real backend has two clusters).
	for _, ident := range []bool{false, true} {
		t.Run(fmt.Sprintf("identity=%t", ident), func(t *testing.T) {
			t.Parallel()
			cs := []testcluster.Cluster{testcluster.NewFake(t, "a"), testcluster.NewFake(t, "b"), testcluster.NewFake(t, "c")}
			var opts []Opt
			for i := range cs {
				opts = append(opts, WithCluster(ClusterConfig{Alias: cs[i].Alias, Client: cs[i].Opts()}))
			}
			pair := &testcluster.Pair{Source: cs[0], Target: cs[1]}
			mk := func(src, dst string, disabled bool) FlowConfig {
				fc := fastFlow(pair)
				fc.Source, fc.Target, fc.Disabled = src, dst, disabled
				fc.Topics = []string{"nothing-matches-this"}
				if ident {
					fc.Policy = identity(t, src)
				}
				return fc
			}
			opts = append(opts, WithFlow(mk("a", "b", false)), WithFlow(mk("b", "c", false)),
				WithFlow(mk("b", "a", true)), WithFlow(mk("c", "b", true)))
			_, stop := runMirror(t, opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var pol policy.ReplicationPolicy
			if ident {
				pol = identity(t, "")
			} else {
				pol = policy.Default{}
			}
			rc := func(c *testcluster.Cluster) *remoteclusterutils.Client {
				return remoteclusterutils.NewClient(testcluster.Client(t, c), remoteclusterutils.WithPolicy(pol))
			}
			cC, cB := rc(&cs[2]), rc(&cs[1])
			testcluster.Eventually(t, 30*time.Second, "C sees A at 2 hops", func() (bool, string) {
				h, err := cC.ReplicationHops(ctx, "a")
				return h == 2, fmt.Sprint(h, err)
			})
			time.Sleep(2 * time.Second) // several refreshes: nothing more appears
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			for _, x := range []struct {
				c     *remoteclusterutils.Client
				alias string
				want  int
			}{{cC, "a", 2}, {cC, "b", 1}, {cC, "c", -1}, {cB, "a", 1}, {cB, "b", -1}, {cB, "c", -1}} {
				if h, err := x.c.ReplicationHops(ctx, x.alias); err != nil || h != x.want {
					t.Errorf("ReplicationHops(%s) = %d, %v; want %d", x.alias, h, err, x.want)
				}
			}
			up, err := cC.UpstreamClusters(ctx)
			if err != nil || strings.Join(up, ",") != "a,b" {
				t.Errorf("UpstreamClusters(C) = %v, %v; want [a b]", up, err)
			}
			want := map[int]string{0: "heartbeats", 1: "a.heartbeats heartbeats", 2: "b.a.heartbeats b.heartbeats heartbeats"}
			for i := range cs {
				got := strings.Join(topicNames(t, &cs[i], ".*heartbeats"), " ")
				if got != want[i] {
					t.Errorf("%s: heartbeats topics %q, want %q", cs[i].Alias, got, want[i])
				}
			}
		})
	}
}

// TestHeartbeatActiveActiveNoChain: A<->B, both directions enabled, under
// the default and the identity policy (MM2 cannot detect cycles of
// ordinary topics under identity; heartbeats keep their prefix). Each side
// gets exactly the other's heartbeats topic, never "a.b.heartbeats" or
// "b.a.heartbeats", and sees the other at one hop.
func TestHeartbeatActiveActiveNoChain(t *testing.T) {
	t.Parallel()
	for _, ident := range []bool{false, true} {
		t.Run(fmt.Sprintf("identity=%t", ident), func(t *testing.T) {
			t.Parallel()
			// Clusters of its own, also when the suite runs on real
			// brokers: their heartbeats topics are shared by every test.
			p := &testcluster.Pair{Source: testcluster.NewFake(t, "a"), Target: testcluster.NewFake(t, "b")}
			ab, ba := fastFlow(p), fastFlow(p)
			ba.Source, ba.Target = p.Target.Alias, p.Source.Alias
			if ident {
				ab.Policy, ba.Policy = identity(t, ab.Source), identity(t, ba.Source)
			}
			_, stop := runMirror(t, append(clusterOpts(p), WithFlow(ab), WithFlow(ba))...)
			want := map[*testcluster.Cluster]string{&p.Source: "b.heartbeats heartbeats", &p.Target: "a.heartbeats heartbeats"}
			testcluster.Eventually(t, 30*time.Second, "both remote heartbeats topics", func() (bool, string) {
				a, b := strings.Join(topicNames(t, &p.Source, ".*heartbeats"), " "), strings.Join(topicNames(t, &p.Target, ".*heartbeats"), " ")
				return a == want[&p.Source] && b == want[&p.Target], a + " | " + b
			})
			time.Sleep(10 * ab.RefreshTopicsInterval) // many refreshes: nothing chains
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			for c, w := range want {
				if got := strings.Join(topicNames(t, c, ".*heartbeats"), " "); got != w {
					t.Errorf("%s: heartbeats topics %q, want %q", c.Alias, got, w)
				}
				other := "a"
				if c.Alias == "a" {
					other = "b"
				}
				h, err := remoteclusterutils.NewClient(testcluster.Client(t, c)).ReplicationHops(context.Background(), other)
				if err != nil || h != 1 {
					t.Errorf("%s: ReplicationHops(%s) = %d, %v; want 1", c.Alias, other, h, err)
				}
				// Compacted like the heartbeats topic it copies (MM2 syncs
				// the topic configs).
				rcs, err := testcluster.Admin(t, c).DescribeTopicConfigs(context.Background(), other+".heartbeats")
				if err != nil {
					t.Fatal(err)
				}
				rcfg, err := rcs.On(other+".heartbeats", nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, kv := range rcfg.Configs {
					if kv.Key == "cleanup.policy" && kv.MaybeValue() != "compact" {
						t.Errorf("%s: %s.heartbeats has cleanup.policy=%s, want compact", c.Alias, other, kv.MaybeValue())
					}
				}
				// Every record of the remote heartbeats topic is a heartbeat
				// of the flow into the other cluster, copied byte for byte.
				for _, rs := range testcluster.ReadAll(t, c, other+".heartbeats") {
					for _, r := range rs {
						h, err := heartbeat.Decode(r.Key, r.Value)
						if err != nil || h.TargetClusterAlias != other || h.SourceClusterAlias != c.Alias {
							t.Fatalf("%s: %s.heartbeats holds %+v, %v; want heartbeats %s->%s", c.Alias, other, h, err, c.Alias, other)
						}
					}
				}
			}
		})
	}
}

// TestHeartbeatFullMeshThreeClusters: a, b and c replicate to each other
// (six enabled flows, default policy, as MM2's most common multi-region
// set-up). Every cluster ends with its own heartbeats, the other two
// clusters' (1 hop) and each of those through the third (2 hops), and no
// name that passes through a cluster twice or comes back to its own.
func TestHeartbeatFullMeshThreeClusters(t *testing.T) {
	t.Parallel()
	if _, _, real := testcluster.RealBrokers(); real {
		t.Skip("needs three clusters: runs on the embedded kfake backend (KMIRROR_*_BROKERS name real brokers)")
	}
	cs := []testcluster.Cluster{testcluster.NewFake(t, "a"), testcluster.NewFake(t, "b"), testcluster.NewFake(t, "c")}
	var opts []Opt
	for i := range cs {
		opts = append(opts, WithCluster(ClusterConfig{Alias: cs[i].Alias, Client: cs[i].Opts()}))
	}
	pair := &testcluster.Pair{Source: cs[0], Target: cs[1]}
	for i := range cs {
		for j := range cs {
			if i != j {
				fc := fastFlow(pair)
				fc.Source, fc.Target = cs[i].Alias, cs[j].Alias
				fc.Topics = []string{"nothing-matches-this"}
				opts = append(opts, WithFlow(fc))
			}
		}
	}
	want := func(y, z string) string {
		names := []string{"heartbeats", y + ".heartbeats", y + "." + z + ".heartbeats", z + ".heartbeats", z + "." + y + ".heartbeats"}
		sort.Strings(names)
		return strings.Join(names, " ")
	}
	wants := []string{want("b", "c"), want("a", "c"), want("a", "b")}
	_, stop := runMirror(t, opts...)
	testcluster.Eventually(t, 30*time.Second, "every cluster's heartbeats topics", func() (bool, string) {
		g := heartbeatsTopics(t, cs)
		return strings.Join(g, "|") == strings.Join(wants, "|"), strings.Join(g, " | ")
	})
	time.Sleep(2 * time.Second) // several refreshes: nothing chains further
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if g := heartbeatsTopics(t, cs); strings.Join(g, "|") != strings.Join(wants, "|") {
		t.Errorf("heartbeats topics %q, want %q", g, wants)
	}
	rc := remoteclusterutils.NewClient(testcluster.Client(t, &cs[0]))
	for alias, want := range map[string]int{"b": 1, "c": 1, "a": -1} {
		if h, err := rc.ReplicationHops(context.Background(), alias); err != nil || h != want {
			t.Errorf("on a: ReplicationHops(%s) = %d, %v; want %d", alias, h, err, want)
		}
	}
}
