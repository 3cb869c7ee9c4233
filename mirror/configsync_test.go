package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestConfigAlters pins config sync's decisions (configAlters) one way and
// both ways (identity active-active), in steady state and without memory
// of the topic (after a start, a slot-0 move, or a remote topic created by
// an operator). A DELETE sent in its own request after the others (decided
// without memory of the topic, or refused before) reads "=DELETE(alone)".
func TestConfigAlters(t *testing.T) {
	ms := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	seen := func(src, dst map[string]string) *syncedConfigs { return &syncedConfigs{src: src, dst: dst} }
	const r = "retention.ms"
	for _, tc := range []struct {
		name     string
		source   string // the flow's source alias (the target is "b", or "a" when the source is "b")
		want     map[string]string
		defaults []string
		cur      map[string]string
		prev     *syncedConfigs
		back     bool
		yielded  bool // the flow back saw the target's value and this flow's source's, and left them
		alters   string
	}{
		{name: "one way: source value set", source: "a", want: ms(r, "1"), cur: ms(), prev: seen(ms(), ms()), alters: "retention.ms=SET:1"},
		{name: "one way: target drift of a copied key reverted (as MM2)", source: "a", want: ms(r, "1"), cur: ms(r, "2"), prev: seen(ms(r, "1"), ms(r, "1")), alters: "retention.ms=SET:1"},
		{name: "one way: a change made while stopped is copied", source: "a", want: ms(r, "1"), cur: ms(r, "2"), alters: "retention.ms=SET:1"},
		{name: "one way: a topic first seen while running gets the source's values", source: "a", want: ms(r, "1"), cur: ms(r, "2"), alters: "retention.ms=SET:1"},
		{name: "one way: dropped override kmirror copied deleted", source: "a", defaults: []string{r}, cur: ms(r, "1"), prev: seen(ms(r, "1"), ms(r, "1")), alters: "retention.ms=DELETE"},
		{name: "one way: target-only setting kept while running (B21)", source: "a", defaults: []string{r}, cur: ms(r, "5"), prev: seen(ms(), ms(r, "5")), alters: ""},
		{name: "one way: target changed a dropped key: kept", source: "a", defaults: []string{r}, cur: ms(r, "5"), prev: seen(ms(r, "1"), ms(r, "1")), alters: ""},
		{name: "one way: no memory: an override of a source default is kept (MM2 deletes it)", source: "a", defaults: []string{r}, cur: ms(r, "7"), alters: ""},
		{name: "one way: no memory: sets only", source: "a", want: ms("segment.ms", "1"), defaults: []string{r}, cur: ms(r, "7"), alters: "segment.ms=SET:1"},
		{name: "one way: no memory: excluded keys kept", source: "a", cur: ms("min.insync.replicas", "2"), alters: ""},
		{name: "one way: no memory: keys the source does not default kept", source: "a", cur: ms(r, "7"), alters: ""},
		{name: "one way: topic first seen while running keeps the target's own override", source: "a", defaults: []string{r}, cur: ms(r, "7"), alters: ""},
		{name: "refused DELETE sent again, alone", source: "a", want: ms("segment.ms", "1"), defaults: []string{r}, cur: ms(r, "7", "segment.ms", "1"), prev: &syncedConfigs{src: ms("segment.ms", "1"), dst: ms(r, "7", "segment.ms", "1"), undeleted: map[string]bool{r: true}}, alters: "retention.ms=DELETE(alone)"},
		{name: "refused DELETE dropped once the source sets the key", source: "a", want: ms(r, "7"), cur: ms(r, "7"), prev: &syncedConfigs{src: ms(), dst: ms(r, "7"), undeleted: map[string]bool{r: true}}, alters: ""},
		{name: "both ways: source change pushed", source: "b", want: ms(r, "2"), cur: ms(r, "1"), prev: seen(ms(r, "1"), ms(r, "1")), back: true, alters: "retention.ms=SET:2"},
		{name: "both ways: target change not undone", source: "a", want: ms(r, "1"), cur: ms(r, "2"), prev: seen(ms(r, "1"), ms(r, "1")), back: true, alters: ""},
		{name: "both ways: dropped override deleted", source: "b", defaults: []string{r}, cur: ms(r, "1"), prev: seen(ms(r, "1"), ms(r, "1")), back: true, alters: "retention.ms=DELETE"},
		{name: "both ways: override added on the target not deleted", source: "a", defaults: []string{r}, cur: ms(r, "1"), prev: seen(ms(), ms()), back: true, alters: ""},
		{name: "both ways: both changed, first alias wins", source: "a", want: ms(r, "3"), cur: ms(r, "4"), prev: seen(ms(r, "1"), ms(r, "1")), back: true, alters: "retention.ms=SET:3"},
		{name: "both ways: both changed, second alias yields", source: "b", want: ms(r, "4"), cur: ms(r, "3"), prev: seen(ms(r, "1"), ms(r, "1")), back: true, alters: ""},
		{name: "both ways: first sync, first alias wins", source: "a", want: ms(r, "3"), cur: ms(r, "4"), back: true, alters: "retention.ms=SET:3"},
		{name: "both ways: first sync, second alias yields", source: "b", want: ms(r, "4"), cur: ms(r, "3"), back: true, alters: ""},
		{name: "both ways: first sync, first alias deletes the other's override, alone", source: "a", defaults: []string{r}, cur: ms(r, "3"), back: true, alters: "retention.ms=DELETE(alone)"},
		{name: "both ways: first sync, equal values", source: "b", want: ms(r, "3"), cur: ms(r, "3"), back: true, alters: ""},
		// The target changed after this flow's push and before the flow
		// back's round, which saw both sides changed and yielded: the
		// first alias pushes its value, unchanged since its last round
		// (they kept different values for good before).
		{name: "both ways: the flow back yielded, first alias pushes its unchanged value", source: "a", want: ms(r, "1"), cur: ms(r, "2"), prev: seen(ms(r, "1"), ms(r, "1")), back: true, yielded: true, alters: "retention.ms=SET:1"},
		{name: "both ways: the flow back has not yielded, the target's change left to it", source: "a", want: ms(r, "1"), cur: ms(r, "2"), prev: seen(ms(r, "1"), ms(r, "1")), back: true, alters: ""},
		{name: "both ways: a yield never makes the second alias push", source: "b", want: ms(r, "1"), cur: ms(r, "2"), prev: seen(ms(r, "1"), ms(r, "1")), back: true, yielded: true, alters: ""},
		{name: "both ways: the flow back yielded on a dropped override, first alias deletes", source: "a", defaults: []string{r}, cur: ms(r, "2"), prev: seen(ms(), ms()), back: true, yielded: true, alters: "retention.ms=DELETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := "b"
			if tc.source == "b" {
				target = "a"
			}
			f := &flow{cfg: FlowConfig{Source: tc.source, Target: target}}
			var ces []*ConfigError
			if f.configs, ces = newFilter("config.properties.exclude", []string{".*"}, "config.properties.exclude", DefaultConfigPropertiesExclude); len(ces) > 0 {
				t.Fatal(ces[0])
			}
			want := tc.want
			if want == nil {
				want = map[string]string{}
			}
			defaults := map[string]bool{}
			for _, k := range tc.defaults {
				defaults[k] = true
			}
			var got []string
			var back func(string) bool
			if tc.back {
				back = func(string) bool { return true }
			}
			yielded := func(string, string, bool, string, bool) bool { return tc.yielded }
			alters, deletes := f.configAlters(want, defaults, tc.cur, tc.prev, back, yielded)
			for _, a := range alters {
				if a.Op == kadm.DeleteConfig {
					got = append(got, a.Name+"=DELETE")
				} else {
					got = append(got, a.Name+"=SET:"+*a.Value)
				}
			}
			for _, a := range deletes {
				got = append(got, a.Name+"=DELETE(alone)")
			}
			if s := strings.Join(got, ","); s != tc.alters {
				t.Errorf("alters %q, want %q", s, tc.alters)
			}
		})
	}
}

// aaConfigPair returns an identity active-active pair of clusters a and b
// with topic orders on both (retention.ms=3600000 on both) and the two
// flows, whose config sync intervals are ab and ba.
func aaConfigPair(t *testing.T, ab, ba time.Duration, retA, retB string) (*testcluster.Pair, string, FlowConfig, FlowConfig) {
	t.Helper()
	p := testcluster.New(t, "a", "b")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, map[string]*string{"retention.ms": &retA})
	testcluster.CreateTopic(t, &p.Target, orders, 1, map[string]*string{"retention.ms": &retB})
	fab, fba := fastFlow(p), fastFlow(p)
	fba.Source, fba.Target = p.Target.Alias, p.Source.Alias
	fab.Policy, fba.Policy = identity(t, fab.Source), identity(t, fba.Source)
	fab.Topics, fba.Topics = []string{regexp.QuoteMeta(orders)}, []string{regexp.QuoteMeta(orders)}
	fab.SyncTopicConfigsInterval, fba.SyncTopicConfigsInterval = ab, ba
	return p, orders, fab, fba
}

// flowsReplicate reports whether every flow of st replicates source topic
// topic (each flow's own copy of it under the identity policy). A flow may
// replicate its source's heartbeats topic too, as MM2 does, once that
// topic exists when the flow discovers topics: on a loaded machine it
// does, so the flows' partitions are not counted.
func flowsReplicate(st Status, topic string) bool {
	for _, f := range st.Flows {
		if !slices.ContainsFunc(f.Partitions, func(p PartitionStatus) bool { return p.Topic == topic }) {
			return false
		}
	}
	return true
}

// retentions samples retention.ms of topic on a and b every 100 ms for d.
func retentions(t *testing.T, aAdm, bAdm *kadm.Client, topic string, d time.Duration) []string {
	var seen []string
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		seen = append(seen, describe(t, aAdm, topic)["retention.ms"]+"/"+describe(t, bAdm, topic)["retention.ms"])
	}
	return seen
}

// TestActiveActiveIdentityConfigChangeKept: identity policy both ways
// (records stopped by the provenance header). Config sync used to loop:
// the flow b->a copied b's old retention.ms over the value an operator
// had just set on a (or the two clusters swapped values every interval).
// Now a change made on either cluster reaches the other and stays.
func TestActiveActiveIdentityConfigChangeKept(t *testing.T) {
	t.Parallel()
	// Different intervals make the order of the two syncs deterministic;
	// with the loop, the slower a->b lost the change every time.
	p, orders, ab, ba := aaConfigPair(t, 2*time.Second, 200*time.Millisecond, "3600000", "3600000")
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(ab), WithFlow(ba))...)
	testcluster.Eventually(t, 20*time.Second, "both flows running", func() (bool, string) {
		st := m.Status()
		return flowsReplicate(st, orders), fmt.Sprint(st.Flows)
	})
	time.Sleep(time.Second)
	ctx := context.Background()
	aAdm, bAdm := testcluster.Admin(t, &p.Source), testcluster.Admin(t, &p.Target)
	for _, step := range []struct {
		on   *kadm.Client
		name string
		want string
	}{{aAdm, "a", "86400000"}, {bAdm, "b", "172800000"}} {
		want := step.want
		if _, err := step.on.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &want}}, orders); err != nil {
			t.Fatal(err)
		}
		// The change reaches the other side (an a->b round is 2 s; a
		// loaded machine delays it), then stays for more than another
		// a->b round and 15 b->a rounds. With the loop, the old value
		// came back over it or the two sides swapped values.
		both := want + "/" + want
		testcluster.Eventually(t, 20*time.Second, "the operator's "+want+" on "+step.name+" on both sides", func() (bool, string) {
			v := describe(t, aAdm, orders)["retention.ms"] + "/" + describe(t, bAdm, orders)["retention.ms"]
			return v == both, "a/b " + v
		})
		seen := retentions(t, aAdm, bAdm, orders, 3*time.Second)
		for _, v := range seen {
			if v != both {
				t.Errorf("retention.ms a/b after the operator set %s on %s and both sides had it: %s, want %s; every 100ms: %v", want, step.name, v, both, seen)
				break
			}
		}
	}
}

// TestActiveActiveIdentityConfigDisagreementAtStart: the two sides differ
// when the flows start (a change made on one cluster while kmirror was
// stopped): neither flow can tell which side changed, so the flow from the
// cluster whose alias sorts first wins, and both settle on its value (not
// swap values every interval).
func TestActiveActiveIdentityConfigDisagreementAtStart(t *testing.T) {
	t.Parallel()
	p, orders, ab, ba := aaConfigPair(t, 200*time.Millisecond, 200*time.Millisecond, "3600000", "7200000")
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(ab), WithFlow(ba))...)
	testcluster.Eventually(t, 20*time.Second, "both flows running", func() (bool, string) {
		st := m.Status()
		return flowsReplicate(st, orders), fmt.Sprint(st.Flows)
	})
	aAdm, bAdm := testcluster.Admin(t, &p.Source), testcluster.Admin(t, &p.Target)
	testcluster.Eventually(t, 10*time.Second, "a's value on both", func() (bool, string) {
		a, b := describe(t, aAdm, orders)["retention.ms"], describe(t, bAdm, orders)["retention.ms"]
		return a == "3600000" && b == "3600000", a + "/" + b
	})
	for i, v := range retentions(t, aAdm, bAdm, orders, 2*time.Second) {
		if v != "3600000/3600000" {
			t.Fatalf("sample %d: retention.ms a/b %s after both settled on 3600000", i, v)
		}
	}
}

// TestTargetOnlySettingsKeptAcrossRestart: config sync's memory of what
// it copied lives in memory, so after a restart it cannot tell a value it
// copied from the target's own. It keeps the remote topic's settings of
// keys the source leaves at its default (a setting made on the target only
// is never reverted; MM2 deletes them at every sync), excluded keys are
// never touched, and the source's later changes are still copied. A source
// override dropped while kmirror was stopped therefore stays on the remote
// topic (README, Remote topic configs).
func TestTargetOnlySettingsKeptAcrossRestart(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	ret, two, own, newRet := "7200000", "2", "86400000", "3600000"
	testcluster.CreateTopic(t, &p.Source, orders, 1, map[string]*string{"retention.ms": &ret})
	remote := p.Source.Alias + "." + orders
	dstAdm, srcAdm := testcluster.Admin(t, &p.Target), testcluster.Admin(t, &p.Source)
	ctx := context.Background()
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	testcluster.Eventually(t, 20*time.Second, "remote topic", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 1 && describeOverrides(t, dstAdm, remote)["retention.ms"] == ret, fmt.Sprint(m.Status().Flows[0])
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// While kmirror is stopped the target gets settings of its own: a
	// copyable key (segment.ms) and an excluded one (min.insync.replicas).
	for k, v := range map[string]*string{"segment.ms": &own, "min.insync.replicas": &two} {
		if _, err := dstAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: k, Value: v}}, remote); err != nil {
			t.Fatal(err)
		}
	}
	m2, _ := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	testcluster.Eventually(t, 20*time.Second, "the restarted flow replicating", func() (bool, string) {
		return len(m2.Status().Flows[0].Partitions) == 1, fmt.Sprint(m2.Status().Flows[0])
	})
	if _, err := srcAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &newRet}}, orders); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(map[string]string{"min.insync.replicas": two, "retention.ms": newRet, "segment.ms": own})
	testcluster.Eventually(t, 10*time.Second, "the source's change copied, the target's own settings kept", func() (bool, string) {
		got := fmt.Sprint(describeOverrides(t, dstAdm, remote))
		return got == want, got + ", want " + want
	})
}

// TestDroppedSourceOverrideDeletedWhileRunning is the same change without
// a restart: the override kmirror copied is deleted.
func TestDroppedSourceOverrideDeletedWhileRunning(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	ret := "7200000"
	testcluster.CreateTopic(t, &p.Source, orders, 1, map[string]*string{"retention.ms": &ret})
	remote := p.Source.Alias + "." + orders
	dstAdm, srcAdm := testcluster.Admin(t, &p.Target), testcluster.Admin(t, &p.Source)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	testcluster.Eventually(t, 20*time.Second, "remote topic", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 1 && describeOverrides(t, dstAdm, remote)["retention.ms"] == ret, fmt.Sprint(m.Status().Flows[0])
	})
	if _, err := srcAdm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, orders); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "override dropped on remote", func() (bool, string) {
		o := describeOverrides(t, dstAdm, remote)
		_, ok := o["retention.ms"]
		return !ok, fmt.Sprint(o)
	})
}

// TestCopiedBackPerKeyAndTopic pins which keys of a remote topic count as
// copied back by the flow back (configsBack): only the keys the flow back's
// own config.properties.exclude lets through, and only while it
// replicates the topic. It used to be decided per topic (the flow back
// selects it), so a key the flow back excludes, or a topic it skips (a
// refused collision, a cycle), was left to a flow back that never copies
// it, and the two sides differed forever.
func TestCopiedBackPerKeyAndTopic(t *testing.T) {
	mk := func(src, dst string, exclude ...string) *flow {
		fc := FlowConfig{Source: src, Target: dst, Topics: []string{"orders"}, Policy: identity(t, src),
			ConfigPropertiesExclude: append(append([]string(nil), DefaultConfigPropertiesExclude...), exclude...)}
		f, err := newFlow(fc, ClusterConfig{Alias: src}, ClusterConfig{Alias: dst}, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ab, ba := mk("a", "b"), mk("b", "a", `retention\.ms`)
	topo := newTopology([]string{"a", "b"})
	topo.flows[ab.name], topo.flows[ba.name] = ab, ba
	ab.topo, ba.topo = topo, topo
	back, _ := ab.configsBack("orders", "orders")
	if back == nil || back("retention.ms") || !back("segment.ms") {
		t.Fatalf("a->b: want segment.ms copied back by b->a, retention.ms (b->a excludes it) not")
	}
	if back, _ := ab.configsBack("other", "other"); back != nil {
		t.Errorf("a->b: a topic b->a does not select is not copied back")
	}
	ba.skips.note("orders", skip{skipCollision, "refused collision"}, time.Now())
	if back, _ := ab.configsBack("orders", "orders"); back != nil {
		t.Errorf("a->b: a topic b->a skips (refused collision) is not copied back")
	}
	ba.skips.clear("orders")
	ba.skips.note("orders", skip{skipCollisionAllowed, "allowed collision"}, time.Now())
	if back, _ := ab.configsBack("orders", "orders"); back == nil || !back("segment.ms") {
		t.Errorf("a->b: an allowed collision is replicated, so copied back")
	}
}

// TestActiveActiveKeyExcludedByFlowBackSyncedOneWay: identity both ways,
// but the flow back (a->b) excludes retention.ms with its own
// config.properties.exclude, so b->a is the only flow copying that key.
// b->a (alias "b" sorts second) used to believe a->b copies retention.ms
// back and yielded at the first observation: nobody copied b's value.
// Now b->a syncs it one way.
func TestActiveActiveKeyExcludedByFlowBackSyncedOneWay(t *testing.T) {
	t.Parallel()
	p, orders, ab, ba := aaConfigPair(t, 200*time.Millisecond, 200*time.Millisecond, "3600000", "7200000")
	ab.ConfigPropertiesExclude = append(append([]string(nil), DefaultConfigPropertiesExclude...), `retention\.ms`)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(ab), WithFlow(ba))...)
	testcluster.Eventually(t, 20*time.Second, "both flows running", func() (bool, string) {
		st := m.Status()
		return flowsReplicate(st, orders), fmt.Sprint(st.Flows)
	})
	aAdm, bAdm := testcluster.Admin(t, &p.Source), testcluster.Admin(t, &p.Target)
	testcluster.Eventually(t, 5*time.Second, "b's retention.ms copied to a by b->a (the only flow copying it)", func() (bool, string) {
		v := describe(t, aAdm, orders)["retention.ms"]
		return v == "7200000", "a: retention.ms=" + v
	})
	if v := describe(t, bAdm, orders)["retention.ms"]; v != "7200000" {
		t.Errorf("b: retention.ms=%s, want its own 7200000 (a->b excludes the key)", v)
	}
}

// TestSyncedConfigsDroppedWithTopic: what config sync remembers per remote
// topic (flow.synced) was never dropped for a topic that went away while
// the member held slot 0: with topic churn it grew without bound. Now a
// round keeps the entry of a remote topic whose source topic went away
// while the remote topic exists (for a source topic re-created:
// TestRecreatedSourceTopicDropsConfigsCopiedFromTheOld), and drops it once
// the remote topic is gone too (or after syncedGrace).
func TestSyncedConfigsDroppedWithTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	keep, gone := p.Topic("keep"), p.Topic("gone")
	ret := "7200000"
	for _, tn := range []string{keep, gone} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, map[string]*string{"retention.ms": &ret})
	}
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	fc.Topics = []string{regexp.QuoteMeta(keep), regexp.QuoteMeta(gone)}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	f := m.flows[0]
	remoteKeep, remoteGone := p.Source.Alias+"."+keep, p.Source.Alias+"."+gone
	synced := func() string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return fmt.Sprint(slices.Sorted(maps.Keys(f.synced)))
	}
	both := fmt.Sprint([]string{remoteGone, remoteKeep})
	testcluster.Eventually(t, 20*time.Second, "both topics synced", func() (bool, string) {
		s := synced()
		return s == both, s
	})
	if _, err := testcluster.Admin(t, &p.Source).DeleteTopics(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 20*time.Second, "the gone source topic's remote topic marked gone, still remembered", func() (bool, string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.synced[remoteGone]
		return s != nil && !s.goneSince.IsZero() && f.synced[remoteKeep] != nil && f.synced[remoteKeep].goneSince.IsZero(), fmt.Sprintf("%+v", s)
	})
	if _, err := testcluster.Admin(t, &p.Target).DeleteTopics(context.Background(), remoteGone); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 20*time.Second, "only the remaining topic remembered", func() (bool, string) {
		s := synced()
		return s == fmt.Sprint([]string{remoteKeep}), s
	})
}

// TestRecreatedSourceTopicDropsConfigsCopiedFromTheOld: a source topic
// with cleanup.policy=compact, max.message.bytes and retention.ms is
// replicated, then deleted and created again with retention.ms alone while
// the flow runs. Config sync forgot the topic when its source went away,
// so the keys it had copied from the old topic looked like the target's
// own settings: the remote topic stayed compacted (and on real Kafka
// refuses the new topic's keyless records) with no error and no log line
// (a breaker, stop 46). Now the memory is kept while the remote topic
// exists, and those keys are deleted.
func TestRecreatedSourceTopicDropsConfigsCopiedFromTheOld(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	compact, mmb, ret := "compact", "200000", "3600000"
	testcluster.CreateTopic(t, &p.Source, orders, 1, map[string]*string{"cleanup.policy": &compact, "max.message.bytes": &mmb, "retention.ms": &ret})
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	fc.Topics = []string{regexp.QuoteMeta(orders)}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	f := m.flows[0]
	remote := p.Source.Alias + "." + orders
	dstAdm, srcAdm := testcluster.Admin(t, &p.Target), testcluster.Admin(t, &p.Source)
	own := func() map[string]string {
		out := map[string]string{}
		rcs, err := dstAdm.DescribeTopicConfigs(context.Background(), remote)
		if err != nil {
			return map[string]string{"error": err.Error()}
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				return map[string]string{"error": rc.Err.Error()}
			}
			for _, c := range rc.Configs {
				if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
					out[c.Key] = c.MaybeValue()
				}
			}
		}
		return out
	}
	first := map[string]string{"cleanup.policy": "compact", "max.message.bytes": "200000", "retention.ms": "3600000"}
	testcluster.Eventually(t, 20*time.Second, "remote topic created with the source's configs", func() (bool, string) {
		got := own()
		return cmp.Equal(got, first), fmt.Sprint(got)
	})
	if _, err := srcAdm.DeleteTopics(context.Background(), orders); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 20*time.Second, "source topic gone", func() (bool, string) {
		td, err := srcAdm.ListTopics(context.Background(), orders)
		return err == nil && !td.Has(orders), fmt.Sprint(td.Names(), err)
	})
	testcluster.Eventually(t, 20*time.Second, "a config sync round without the topic (its memory kept)", func() (bool, string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.synced[remote]
		return s != nil && !s.goneSince.IsZero(), fmt.Sprintf("%+v", s)
	})
	ret2 := "7200000"
	testcluster.CreateTopic(t, &p.Source, orders, 1, map[string]*string{"retention.ms": &ret2})
	want := map[string]string{"retention.ms": "7200000"}
	testcluster.Eventually(t, 20*time.Second, "the old topic's copied keys deleted, the new one's set", func() (bool, string) {
		got := own()
		return cmp.Equal(got, want), fmt.Sprint(got)
	})
}

// TestPrecreatedRemoteTopicSettingKeptWhileRunning: the flow is running;
// an operator pre-creates the remote topic on the target with its own
// retention.ms (a longer DR retention), then the source topic appears (no
// override). README: a key only the target sets is kept while the flow
// runs. The topic had no memory (its remote topic already existed), so its
// first sync was taken for the first observation after a start and deleted
// the operator's setting; now only the flow's first round after a start or
// a slot-0 move deletes such overrides.
func TestPrecreatedRemoteTopicSettingKeptWhileRunning(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	first, orders := p.Topic("first"), p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, first, 1, nil)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	fc.Topics = []string{regexp.QuoteMeta(first), regexp.QuoteMeta(orders)}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 20*time.Second, "flow running", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 1, ""
	})
	remote := p.Source.Alias + "." + orders
	long, seg := "2592000000", "3600000"
	testcluster.CreateTopic(t, &p.Target, remote, 1, map[string]*string{"retention.ms": &long})
	testcluster.CreateTopic(t, &p.Source, orders, 1, map[string]*string{"segment.ms": &seg})
	dstAdm := testcluster.Admin(t, &p.Target)
	testcluster.Eventually(t, 20*time.Second, "orders replicated, its segment.ms synced", func() (bool, string) {
		o := describeOverrides(t, dstAdm, remote)
		return len(m.Status().Flows[0].Partitions) == 2 && o["segment.ms"] == seg, fmt.Sprint(o)
	})
	time.Sleep(time.Second) // five config sync rounds
	if got := describeOverrides(t, dstAdm, remote)["retention.ms"]; got != long {
		t.Errorf("pre-created %s retention.ms %q while the flow runs, want the operator's %s", remote, got, long)
	}
}

// TestActiveActiveIdentityThreeClustersSettleIdle: three clusters, identity
// both ways between every pair, values differing at start: all settle on
// one value, and once settled no IncrementalAlterConfigs is sent while
// idle. The alias rule is pairwise, so which value wins in a mesh depends
// on the order of the first syncs (b's value can reach c before a's does,
// and then a from c): the test does not pin it.
func TestActiveActiveIdentityThreeClustersSettleIdle(t *testing.T) {
	t.Parallel()
	cs := []testcluster.Cluster{testcluster.NewFake(t, "a"), testcluster.NewFake(t, "b"), testcluster.NewFake(t, "c")}
	var alters atomic.Int64
	for i := range cs {
		c := cs[i]
		c.Fake.ControlKey(int16(kmsg.IncrementalAlterConfigs), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.Fake.KeepControl()
			alters.Add(1)
			return nil, nil, false
		})
	}
	vals := []string{"3600000", "7200000", "10800000"}
	for i := range cs {
		v := vals[i]
		testcluster.CreateTopic(t, &cs[i], "orders", 1, map[string]*string{"retention.ms": &v})
	}
	var opts []Opt
	for _, c := range cs {
		opts = append(opts, WithCluster(ClusterConfig{Alias: c.Alias, Client: c.Opts()}))
	}
	for _, s := range cs {
		for _, d := range cs {
			if s.Alias == d.Alias {
				continue
			}
			fc := FlowConfig{Source: s.Alias, Target: d.Alias, Topics: []string{"orders"},
				RefreshTopicsInterval: 200 * time.Millisecond, SyncTopicConfigsInterval: 150 * time.Millisecond,
				OffsetFlushInterval: 100 * time.Millisecond, DisableHeartbeats: true, DisableCheckpoints: true,
				AdminTimeout: 10 * time.Second, Policy: identity(t, s.Alias), AllowTopicCollisions: true}
			opts = append(opts, WithFlow(fc))
		}
	}
	runMirror(t, opts...)
	adms := []*kadm.Client{testcluster.Admin(t, &cs[0]), testcluster.Admin(t, &cs[1]), testcluster.Admin(t, &cs[2])}
	get := func() string {
		s := ""
		for _, a := range adms {
			s += describe(t, a, "orders")["retention.ms"] + "/"
		}
		return s
	}
	// Agreement can be transient: a sync round decided before it (on an
	// older observation) may still carry another value around the mesh,
	// which then settles on that one. Settled: the same agreed values in
	// two reads a second (seven rounds) apart.
	var agreed, last string
	testcluster.Eventually(t, 20*time.Second, "all agree, for a second", func() (bool, string) {
		s := get()
		v := strings.TrimSuffix(s, "/")
		if i := strings.Index(v, "/"); i < 0 || v != strings.Repeat(v[:i]+"/", 2)+v[:i] || !slices.Contains(vals, v[:i]) {
			last = ""
			return false, s
		}
		if s != last {
			last = s
			time.Sleep(time.Second)
			return false, s + " (agreed, not yet for a second)"
		}
		agreed = s
		return true, s
	})
	before := alters.Load()
	time.Sleep(3 * time.Second) // 20 rounds of 6 flows
	if n := alters.Load() - before; n != 0 {
		t.Errorf("%d IncrementalAlterConfigs while idle (values %s)", n, get())
	}
	if s := get(); s != agreed {
		t.Errorf("values changed while idle: %s", s)
	}
}
