package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/verify"
	"github.com/kmirror/kmirror/policy"
)

// topicNames lists the topics of c whose names match re.
func topicNames(t *testing.T, c *testcluster.Cluster, re string) []string {
	t.Helper()
	td, err := testcluster.Admin(t, c).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rx := regexp.MustCompile("^(?:" + re + ")$")
	var out []string
	for _, n := range td.Names() {
		if rx.MatchString(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// heartbeatsTopics names, per cluster of cs, its heartbeats topics
// (".*heartbeats"), sorted and joined by spaces.
func heartbeatsTopics(t *testing.T, cs []testcluster.Cluster) []string {
	var out []string
	for i := range cs {
		out = append(out, strings.Join(topicNames(t, &cs[i], ".*heartbeats"), " "))
	}
	return out
}

// values returns how often each record value is in topic on c.
func values(t *testing.T, c *testcluster.Cluster, topic string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, rs := range testcluster.ReadAll(t, c, topic) {
		for _, r := range rs {
			out[string(r.Value)]++
		}
	}
	return out
}

// TestEngineLocalTopicNamedLikeTargetWarns (issue bullet: a local topic
// "eu.metrics" on us, flow us->eu, was skipped as a cycle with no word in
// the log): the running engine logs one WARN line naming the topic and the
// reason, and Status lists it, while the other topics replicate.
func TestEngineLocalTopicNamedLikeTargetWarns(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "us", "eu")
	orders, metrics := p.Topic("orders"), p.Target.Alias+"."+p.Topic("metrics")
	for _, tn := range []string{orders, metrics} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: tn, Value: []byte("v")})
	}
	var lb logBuf
	fc := fastFlow(p)
	fc.DisableHeartbeatsReplication = true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	waitReplicated(t, m, 1)
	testcluster.Eventually(t, 10*time.Second, "cycle reported", func() (bool, string) {
		sk := m.Status().Flows[0].Skipped
		return len(sk) == 1 && sk[0].Topic == metrics, fmt.Sprintf("%+v", sk)
	})
	time.Sleep(3 * fc.RefreshTopicsInterval) // several refreshes: still one line
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	sk := m.Status().Flows[0].Skipped[0]
	if !strings.Contains(sk.Reason, "cycle by name") || !strings.Contains(sk.Reason, p.Target.Alias+", the target") {
		t.Errorf("reason %q", sk.Reason)
	}
	lines := lb.lines("level=WARN", `msg="topic not replicated"`, "topic="+metrics, `reason="cycle by name`)
	if len(lines) != 1 {
		t.Errorf("%d WARN lines for %s, want 1:\n%s", len(lines), metrics, strings.Join(lb.lines("topic="), "\n"))
	}
	got := topicNames(t, &p.Target, regexp.QuoteMeta(p.Source.Alias)+`\..*(`+regexp.QuoteMeta(orders)+"|"+regexp.QuoteMeta(metrics)+")")
	if len(got) != 1 || got[0] != p.Source.Alias+"."+orders {
		t.Errorf("remote topics on %s: %v, want only %s.%s", p.Target.Alias, got, p.Source.Alias, orders)
	}
}

// TestEngineInternalLookingUserTopicReplicates (issue bullet: application
// topics that merely look internal, listed explicitly, were never
// replicated): billing.internal replicates under Kafka 4.0's rule; a listed
// "__" topic is skipped with one WARN line naming it.
func TestEngineInternalLookingUserTopicReplicates(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	billing, audit, hidden := p.Topic("billing")+".internal", p.Topic("audit")+"-internal", "__"+p.Topic("ledger")
	for _, tn := range []string{billing, audit, hidden} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: tn, Value: []byte(tn)})
	}
	var lb logBuf
	fc := fastFlow(p)
	fc.DisableHeartbeatsReplication = true
	fc.Topics = []string{billing, regexp.QuoteMeta(audit), hidden}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	waitReplicated(t, m, 2)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, tn := range []string{billing, audit} {
		if got := values(t, &p.Target, p.Source.Alias+"."+tn); got[tn] != 1 || len(got) != 1 {
			t.Errorf("%s.%s holds %v, want the one record", p.Source.Alias, tn, got)
		}
	}
	sk := m.Status().Flows[0].Skipped
	if len(sk) != 1 || sk[0].Topic != hidden {
		t.Errorf("Skipped = %+v, want %s", sk, hidden)
	}
	if n := len(lb.lines("level=WARN", "topic="+hidden, `reason="internal topic`)); n != 1 {
		t.Errorf("%d WARN lines for %s, want 1", n, hidden)
	}
}

// liveTraffic produces n records, one every interval, to topic on c, with
// values prefix0..prefix(n-1), and returns the values.
func liveTraffic(t *testing.T, c *testcluster.Cluster, topic, prefix string, n int, every time.Duration) []string {
	t.Helper()
	var vs []string
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%s%d", prefix, i)
		testcluster.Produce(t, c, &kgo.Record{Topic: topic, Value: []byte(v)})
		vs = append(vs, v)
		time.Sleep(every)
	}
	return vs
}

// exactlyOnce reports the values of want that topic on c does not hold
// exactly once, and the values it holds that are not in want.
func exactlyOnce(t *testing.T, c *testcluster.Cluster, topic string, want []string) (bad []string) {
	t.Helper()
	got := values(t, c, topic)
	for _, v := range want {
		if got[v] != 1 {
			bad = append(bad, fmt.Sprintf("%s x%d", v, got[v]))
		}
		delete(got, v)
	}
	for v, n := range got {
		bad = append(bad, fmt.Sprintf("unexpected %s x%d", v, n))
	}
	sort.Strings(bad)
	return bad
}

// TestEngineActiveActiveIdentity (issue acceptance, case B28): identity
// policy in both directions with live traffic on both sides for many
// refresh intervals: every record once on each side, no ping-pong, no
// prefix chain.
func TestEngineActiveActiveIdentity(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "a", "b")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	testcluster.CreateTopic(t, &p.Target, orders, 1, nil)
	ab, ba := fastFlow(p), fastFlow(p)
	ba.Source, ba.Target = p.Target.Alias, p.Source.Alias
	ab.Policy, ba.Policy = identity(t, ab.Source), identity(t, ba.Source)
	ab.Topics, ba.Topics = []string{regexp.QuoteMeta(orders)}, []string{regexp.QuoteMeta(orders)}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(ab), WithFlow(ba))...)
	done := make(chan []string)
	go func() { done <- liveTraffic(t, &p.Target, orders, "b", 20, 100*time.Millisecond) }()
	fromA := liveTraffic(t, &p.Source, orders, "a", 20, 100*time.Millisecond)
	fromB := <-done
	all := append(append([]string(nil), fromA...), fromB...)
	testcluster.Eventually(t, 30*time.Second, "both sides complete", func() (bool, string) {
		a, b := exactlyOnce(t, &p.Source, orders, all), exactlyOnce(t, &p.Target, orders, all)
		return len(a) == 0 && len(b) == 0, fmt.Sprintf("a: %v b: %v", a, b)
	})
	time.Sleep(10 * ab.RefreshTopicsInterval) // many more refreshes: nothing grows
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, c := range []*testcluster.Cluster{&p.Source, &p.Target} {
		if bad := exactlyOnce(t, c, orders, all); len(bad) > 0 {
			t.Errorf("%s: %v", c.Alias, bad)
		}
		if got := topicNames(t, c, ".*"+regexp.QuoteMeta(orders)); len(got) != 1 {
			t.Errorf("%s: topics %v, want only %s", c.Alias, got, orders)
		}
	}
	// Each flow read the 20 records the other flow copied into its source
	// and skipped exactly those (no restart: no replay).
	for _, fs := range m.Status().Flows {
		if fs.ProvenanceSkipped != 20 {
			t.Errorf("flow %s skipped %d records by provenance, want the 20 that came back", fs.Name, fs.ProvenanceSkipped)
		}
	}
}

// TestEngineDifferentAliasesNoChain (issue bullet: two deployments call the
// same clusters differently, a/b and local/remote): no prefix chain grows
// and no record is copied twice.
func TestEngineDifferentAliasesNoChain(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "a", "b")
	t1, u1 := p.Topic("t1"), p.Topic("u1")
	testcluster.CreateTopic(t, &p.Source, t1, 1, nil)
	testcluster.CreateTopic(t, &p.Target, u1, 1, nil)
	// D1 runs a->b with aliases a, b; D2 runs remote->local, where remote
	// is b and local is a.
	d1 := fastFlow(p)
	local, remote := "local"+p.Source.Alias, "remote"+p.Target.Alias
	d2 := fastFlow(p)
	d2.Source, d2.Target = remote, local
	_, stop1 := runMirror(t, append(clusterOpts(p), WithFlow(d1))...)
	_, stop2 := runMirror(t, WithCluster(ClusterConfig{Alias: local, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: remote, Client: p.Target.Opts()}), WithFlow(d2))
	vt := liveTraffic(t, &p.Source, t1, "t", 10, 50*time.Millisecond)
	vu := liveTraffic(t, &p.Target, u1, "u", 10, 50*time.Millisecond)
	testcluster.Eventually(t, 30*time.Second, "both directions copied", func() (bool, string) {
		a, b := exactlyOnce(t, &p.Target, p.Source.Alias+"."+t1, vt), exactlyOnce(t, &p.Source, remote+"."+u1, vu)
		return len(a) == 0 && len(b) == 0, fmt.Sprintf("%v %v", a, b)
	})
	time.Sleep(10 * d1.RefreshTopicsInterval)
	if err := errors.Join(stop1(), stop2()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Exactly one remote topic per direction, and no name carrying two
	// aliases (remote.a.t1, a.remote.u1, remote.remote.heartbeats, ...).
	wantA := []string{remote + "." + u1, t1}
	wantB := []string{p.Source.Alias + "." + t1, u1}
	for _, x := range []struct {
		c    *testcluster.Cluster
		want []string
	}{{&p.Source, wantA}, {&p.Target, wantB}} {
		got := topicNames(t, x.c, ".*("+regexp.QuoteMeta(t1)+"|"+regexp.QuoteMeta(u1)+")")
		if strings.Join(got, " ") != strings.Join(x.want, " ") {
			t.Errorf("%s: topics %v, want %v", x.c.Alias, got, x.want)
		}
		for _, n := range topicNames(t, x.c, ".*") {
			if strings.Count(n, ".") >= 2 && !strings.HasSuffix(n, ".internal") && (strings.Contains(n, remote+".") && strings.Contains(n, p.Source.Alias+".")) {
				t.Errorf("%s: chained topic %s", x.c.Alias, n)
			}
		}
	}
}

// TestEngineThreeClusterRing (issue acceptance): x->y->z->x with identity
// names: every record reaches every cluster exactly once.
func TestEngineThreeClusterRing(t *testing.T) {
	t.Parallel()
	if _, _, real := testcluster.RealBrokers(); real {
		t.Skip("needs three clusters: runs on the embedded kfake backend (KMIRROR_*_BROKERS name real brokers)")
	}
	cs, opts := identityRing(t)
	_, stop := runMirror(t, opts...)
	var all []string
	for i := range cs {
		all = append(all, liveTraffic(t, &cs[i], "events", cs[i].Alias, 10, 20*time.Millisecond)...)
	}
	testcluster.Eventually(t, 30*time.Second, "ring complete", func() (bool, string) {
		var bad []string
		for i := range cs {
			bad = append(bad, exactlyOnce(t, &cs[i], "events", all)...)
		}
		return len(bad) == 0, fmt.Sprint(bad)
	})
	time.Sleep(2 * time.Second)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for i := range cs {
		if bad := exactlyOnce(t, &cs[i], "events", all); len(bad) > 0 {
			t.Errorf("%s: %v", cs[i].Alias, bad)
		}
	}
}

// TestEngineIdentityManyToOneRefusedAtStart (issue bullet: two sources, one
// target, identity, both have "orders", topics=.*): the topic lists do not
// show it, the discovery does; Run returns the error naming topic, target
// and both sources instead of merging.
func TestEngineIdentityManyToOneRefusedAtStart(t *testing.T) {
	t.Parallel()
	if _, _, real := testcluster.RealBrokers(); real {
		t.Skip("needs three clusters: runs on the embedded kfake backend (KMIRROR_*_BROKERS name real brokers)")
	}
	a, b, tc := testcluster.NewFake(t, "a"), testcluster.NewFake(t, "b"), testcluster.NewFake(t, "t")
	for _, c := range []*testcluster.Cluster{&a, &b} {
		testcluster.CreateTopic(t, c, "orders", 1, nil)
	}
	pair := &testcluster.Pair{Source: a, Target: tc}
	fa, fb := fastFlow(pair), fastFlow(pair)
	fb.Source = "b"
	fa.Policy, fb.Policy = identity(t, "a"), identity(t, "b")
	m, err := newMirror(t, WithCluster(ClusterConfig{Alias: "a", Client: a.Opts()}), WithCluster(ClusterConfig{Alias: "b", Client: b.Opts()}),
		WithCluster(ClusterConfig{Alias: "t", Client: tc.Opts()}), WithFlow(fa), WithFlow(fb))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.Run(ctx)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `write topic "orders" on cluster t (topic orders of a, topic orders of b)`) {
		t.Errorf("Run = %v, want the collision refused", err)
	}
	if got := topicNames(t, &tc, "orders"); len(got) != 0 {
		t.Errorf("the target got %v although the collision was refused", got)
	}
}

// TestEngineCrosswiseAliasesNoChain (issue 20 part 3, the two-deployments
// case): deployment 1 writes into Y with remote = X, local = Y and flow
// remote->local; deployment 2 writes into X with remote = Y, local = X and
// the same flow name. X's t1 becomes remote.t1 on Y, every record once;
// deployment 2 creates no remote.remote.t1 on X (its records all came from
// X, provenance would skip every one) and neither deployment creates a
// remote.remote.heartbeats; both say why in Skipped.
func TestEngineCrosswiseAliasesNoChain(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "x", "y")
	t1 := p.Topic("t1")
	testcluster.CreateTopic(t, &p.Source, t1, 1, nil)
	remote, local := "remote"+p.Source.Alias, "local"+p.Source.Alias
	flow := func() FlowConfig {
		fc := fastFlow(p)
		fc.Source, fc.Target = remote, local
		// The heartbeats chain too (remote.remote.heartbeats); on shared
		// real brokers the heartbeats topic holds other tests' records.
		fc.DisableHeartbeatsReplication = p.Real
		return fc
	}
	m1, stop1 := runMirror(t, WithCluster(ClusterConfig{Alias: remote, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: local, Client: p.Target.Opts()}), WithFlow(flow()))
	m2, stop2 := runMirror(t, WithCluster(ClusterConfig{Alias: remote, Client: p.Target.Opts()}),
		WithCluster(ClusterConfig{Alias: local, Client: p.Source.Opts()}), WithFlow(flow()))
	vt := liveTraffic(t, &p.Source, t1, "t", 20, 50*time.Millisecond)
	onY := remote + "." + t1
	testcluster.Eventually(t, 30*time.Second, "remote.t1 readable on Y", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := testcluster.Admin(t, &p.Target).ListEndOffsets(ctx, onY)
		if err == nil {
			err = ends.Error()
		}
		return err == nil, fmt.Sprint(err)
	})
	testcluster.Eventually(t, 30*time.Second, "t1 copied to Y once", func() (bool, string) {
		a := exactlyOnce(t, &p.Target, onY, vt)
		return len(a) == 0, fmt.Sprint(a)
	})
	chained := remote + "." + remote + "."
	testcluster.Eventually(t, 30*time.Second, "deployment 2 skips remote.t1 as a cycle by provenance", func() (bool, string) {
		for _, s := range m2.Status().Flows[0].Skipped {
			if s.Topic == onY && strings.Contains(s.Reason, "cycle by provenance") && strings.Contains(s.Reason, "the flow's own source") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", m2.Status().Flows[0].Skipped)
	})
	time.Sleep(10 * flow().RefreshTopicsInterval)
	s1, s2 := m1.Status().Flows[0], m2.Status().Flows[0]
	if err := errors.Join(stop1(), stop2()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, c := range []*testcluster.Cluster{&p.Source, &p.Target} {
		for _, n := range topicNames(t, c, ".*") {
			if strings.HasPrefix(n, chained) {
				t.Errorf("%s: chained topic %s created (deployment 1 skipped %+v, deployment 2 skipped %+v)", c.Alias, n, s1.Skipped, s2.Skipped)
			}
		}
	}
	if got := topicNames(t, &p.Source, ".*"+regexp.QuoteMeta(t1)); strings.Join(got, " ") != t1 {
		t.Errorf("X: topics %v, want only %s", got, t1)
	}
	if got := topicNames(t, &p.Target, ".*"+regexp.QuoteMeta(t1)); strings.Join(got, " ") != onY {
		t.Errorf("Y: topics %v, want only %s", got, onY)
	}
}

// TestEngineListedTopicMissingOnSourceWarns (a new user's try: a misspelt
// topic in topics replicated nothing, with no word in the status or the
// log): a name listed in topics that the source lacks is in Skipped with
// one WARN line, and the entry goes once the topic is created and
// replicated.
func TestEngineListedTopicMissingOnSourceWarns(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "us", "eu")
	orders, typo := p.Topic("orders"), p.Topic("ordres")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: orders, Value: []byte("v")})
	var lb logBuf
	fc := fastFlow(p)
	fc.Topics = []string{orders, typo}
	fc.DisableHeartbeatsReplication = true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	defer stop()
	waitReplicated(t, m, 1)
	testcluster.Eventually(t, 10*time.Second, "missing topic reported", func() (bool, string) {
		sk := m.Status().Flows[0].Skipped
		return len(sk) == 1 && sk[0].Topic == typo && !sk[0].Replicated, fmt.Sprintf("%+v", sk)
	})
	time.Sleep(3 * fc.RefreshTopicsInterval) // several refreshes: still one line
	sk := m.Status().Flows[0].Skipped
	if len(sk) != 1 || !strings.Contains(sk[0].Reason, "source cluster "+p.Source.Alias+" has no topic of that name: check the spelling") {
		t.Fatalf("Skipped %+v, want %s with the missing-topic reason", sk, typo)
	}
	if lines := lb.lines("level=WARN", `msg="topic not replicated"`, "topic="+typo); len(lines) != 1 {
		t.Errorf("%d WARN lines for %s, want 1:\n%s", len(lines), typo, strings.Join(lb.lines("topic="), "\n"))
	}
	testcluster.CreateTopic(t, &p.Source, typo, 1, nil)
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: typo, Value: []byte("w")})
	waitReplicated(t, m, 2)
	testcluster.Eventually(t, 10*time.Second, "entry gone once the topic exists", func() (bool, string) {
		sk := m.Status().Flows[0].Skipped
		return len(sk) == 0, fmt.Sprintf("%+v", sk)
	})
	if got := values(t, &p.Target, p.Source.Alias+"."+typo); got["w"] != 1 || len(got) != 1 {
		t.Errorf("remote topic of %s holds %v, want the one record w", typo, got)
	}
}

// TestListedTopicCreatedAfterStartReplicatedSoon (a new user's try, stop
// 42): a topic named in topics and created after the start waited for the
// next refresh.topics.interval.seconds (600 s by default, as in MM2), with
// the status saying it did not exist and a lag of 0. The flow now asks for
// the missing listed names every listedCheckEvery and discovers the topic
// as soon as it exists; the skip reason says when it will be replicated.
func TestListedTopicCreatedAfterStartReplicatedSoon(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "us", "eu")
	later := p.Topic("later")
	fc := fastFlow(p)
	fc.Topics = []string{later}
	fc.RefreshTopicsInterval = 10 * time.Minute // MM2's 600 s: the refresh never comes in this test
	fc.DisableHeartbeatsReplication = true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	defer stop()
	testcluster.Eventually(t, 20*time.Second, "missing topic reported", func() (bool, string) {
		sk := m.Status().Flows[0].Skipped
		return len(sk) == 1 && sk[0].Topic == later && strings.HasSuffix(sk[0].Reason, "it is replicated within 10s of its creation"), fmt.Sprintf("%+v", sk)
	})
	testcluster.CreateTopic(t, &p.Source, later, 2, nil)
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: later, Partition: 0, Value: []byte("a")},
		&kgo.Record{Topic: later, Partition: 1, Value: []byte("b")}, &kgo.Record{Topic: later, Partition: 1, Value: []byte("c")})
	testcluster.Eventually(t, 60*time.Second, "the topic created later replicated", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.Records == 3 && len(st.Skipped) == 0, fmt.Sprintf("records %d, skipped %+v", st.Records, st.Skipped)
	})
	if got := values(t, &p.Target, p.Source.Alias+"."+later); len(got) != 3 || got["a"] != 1 || got["b"] != 1 || got["c"] != 1 {
		t.Errorf("remote topic of %s holds %v, want a, b and c once each", later, got)
	}
}

// mergeNamePolicy names source topic from like to on the target: a
// many-to-one custom policy.
type mergeNamePolicy struct {
	*policy.Default
	from, to string
}

func (p mergeNamePolicy) FormatRemoteTopic(alias, topic string) string {
	if topic == p.from {
		topic = p.to
	}
	return p.Default.FormatRemoteTopic(alias, topic)
}

// TestEngineRefusedCollisionNotCheckpointed (found by a review): a custom
// policy names a topic created while the flow runs like a replicated one;
// discovery refuses it as a collision, but checkpoints still covered it,
// and a group committed on it crashed the checkpoint emitter at the next
// group offset sync round (checkpoints and group offset sync of every
// group stopped). The refused topic is not checkpointed, and the other
// group goes on being synced.
func TestEngineRefusedCollisionNotCheckpointed(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	def, err := policy.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Topic("ordersA"), p.Topic("ordersB")
	ga, gb := p.Group("ga"), p.Group("gb")
	testcluster.CreateTopic(t, &p.Source, a, 1, nil)
	produceN(t, &p.Source, a, 0, 20)
	trCommit(t, &p.Source, ga, a, map[int32]int64{0: 5})
	fc := trFlow(p)
	fc.Policy = mergeNamePolicy{Default: def, from: b, to: a}
	remote := def.FormatRemoteTopic(p.Source.Alias, a)
	m, _ := trStart(t, p, fc)
	testcluster.Eventually(t, 30*time.Second, "ga synced", func() (bool, string) {
		got := tryCommitted(&p.Target, ga, remote)
		return got[0] == 5, fmt.Sprint(got)
	})
	testcluster.CreateTopic(t, &p.Source, b, 1, nil)
	produceN(t, &p.Source, b, 0, 20)
	testcluster.Eventually(t, 30*time.Second, b+" skipped as a collision", func() (bool, string) {
		st := m.Status().Flows[0]
		return len(st.Skipped) == 1 && st.Skipped[0].Topic == b && strings.Contains(st.Skipped[0].Reason, "collision"), fmt.Sprintf("%+v", st.Skipped)
	})
	trCommit(t, &p.Source, gb, b, map[int32]int64{0: 7})
	trCommit(t, &p.Source, ga, a, map[int32]int64{0: 9})
	testcluster.Eventually(t, 30*time.Second, "ga synced again", func() (bool, string) {
		got := tryCommitted(&p.Target, ga, remote)
		gs, _ := groupStatusOf(m, 0, ga)
		return got[0] == 9, fmt.Sprintf("%v %+v", got, gs)
	})
	testcluster.Eventually(t, 30*time.Second, "gb skipped", func() (bool, string) {
		gs, ok := groupStatusOf(m, 0, gb)
		return ok && gs.State == checkpoint.StateSkipped, fmt.Sprintf("%+v", gs)
	})
	if got := tryCommitted(&p.Target, gb, remote); len(got) != 0 {
		t.Errorf("gb committed %v on %s, the remote topic of %s: want nothing", got, remote, a)
	}
}

// TestVerifyActiveActiveIdentity: `kmirror verify` of one flow of a correct
// identity active-active pair. The source topic also holds the records the
// flow back copied there (their provenance lists the target), which the
// flow rightly never copies back; verify used to expect them and reported
// the pair as out of order. Now they are not expected (ProvenanceSkipped)
// and the target's own records are recognized as originals.
func TestVerifyActiveActiveIdentity(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "a", "b")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	testcluster.CreateTopic(t, &p.Target, orders, 1, nil)
	ab, ba := fastFlow(p), fastFlow(p)
	ba.Source, ba.Target = p.Target.Alias, p.Source.Alias
	ab.Policy, ba.Policy = identity(t, ab.Source), identity(t, ba.Source)
	ab.Topics, ba.Topics = []string{regexp.QuoteMeta(orders)}, []string{regexp.QuoteMeta(orders)}
	_, stop := runMirror(t, append(clusterOpts(p), WithFlow(ab), WithFlow(ba))...)
	done := make(chan []string)
	go func() { done <- liveTraffic(t, &p.Target, orders, "b", 10, 50*time.Millisecond) }()
	fromA := liveTraffic(t, &p.Source, orders, "a", 10, 50*time.Millisecond)
	fromB := <-done
	all := append(append([]string(nil), fromA...), fromB...)
	testcluster.Eventually(t, 30*time.Second, "both sides complete", func() (bool, string) {
		a, b := exactlyOnce(t, &p.Source, orders, all), exactlyOnce(t, &p.Target, orders, all)
		return len(a) == 0 && len(b) == 0, fmt.Sprintf("a: %v b: %v", a, b)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []struct {
		src, dst *testcluster.Cluster
		pol      policy.ReplicationPolicy
	}{{&p.Source, &p.Target, ab.Policy}, {&p.Target, &p.Source, ba.Policy}} {
		rep, err := verify.Run(context.Background(), verify.Config{
			Source: verify.Cluster{Alias: dir.src.Alias, Opts: dir.src.Opts()},
			Target: verify.Cluster{Alias: dir.dst.Alias, Opts: dir.dst.Opts()},
			Policy: dir.pol, Topics: []string{orders},
		})
		if err != nil {
			t.Fatal(err)
		}
		tt := rep.Totals
		if rep.Mismatch() || tt.Compared != 10 || tt.Matched != 10 || tt.ProvenanceSkipped != 10 || tt.TargetRecords != 20 || tt.TargetOriginals != 10 {
			var b bytes.Buffer
			rep.WriteText(&b)
			t.Errorf("verify %s->%s: totals %+v, want 10 compared and matched, 10 skipped by provenance, 20 target records of which 10 originals, no mismatch\n%s",
				dir.src.Alias, dir.dst.Alias, tt, b.String())
		}
	}
}

// TestRefreshOffGatedTopicCreatedAtItsFirstRecord: with
// refresh.topics.enabled=false, an empty topic named like a remote topic of
// an alias the Mirror does not know ("ext.orders") is held back by the
// naming gate until it holds a record. The rounds after the first only
// retried topics with a topic error, so the topic was never created and
// its records never replicated, against its skip reason. Now gated topics
// are judged again in every round: its remote topic is created at its
// first record and the record copied (MM2, which has no such gate,
// creates it at start).
func TestRefreshOffGatedTopicCreatedAtItsFirstRecord(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	ext := "ext." + p.Topic("orders")
	plain := p.Topic("plain")
	testcluster.CreateTopic(t, &p.Source, ext, 1, nil)
	testcluster.CreateTopic(t, &p.Source, plain, 1, nil)
	fc := fastFlow(p)
	fc.DisableRefreshTopics = true
	fc.DisableHeartbeatsReplication = true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 20*time.Second, "plain replicated, ext.orders awaiting a record", func() (bool, string) {
		st := m.Status().Flows[0]
		return len(st.Partitions) == 1 && len(st.Skipped) == 1 && st.Skipped[0].Topic == ext, fmt.Sprintf("%+v", st)
	})
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: ext, Value: []byte("first")}, &kgo.Record{Topic: plain, Value: []byte("p")})
	remote := p.Source.Alias + "." + ext
	testcluster.Eventually(t, 20*time.Second, "ext.orders created and its record copied", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.Records == 2 && len(st.Partitions) == 2 && len(st.Skipped) == 0, fmt.Sprintf("records %d partitions %d skipped %+v", st.Records, len(st.Partitions), st.Skipped)
	})
	if got := topicNames(t, &p.Target, ".*"+regexp.QuoteMeta(p.Topic("orders"))); len(got) != 1 || got[0] != remote {
		t.Errorf("target topics %v, want [%s]", got, remote)
	}
	if got := testcluster.ReadAll(t, &p.Target, remote); len(got[0]) != 1 || string(got[0][0].Value) != "first" {
		t.Errorf("%s holds %v, want the one record \"first\"", remote, got)
	}
}

// identityRing returns three kfake clusters x, y and z, each with topic
// events (1 partition), and the options of the ring x->y->z->x under the
// identity policy, replicating events (fastFlow).
func identityRing(t *testing.T) ([]testcluster.Cluster, []Opt) {
	t.Helper()
	cs := []testcluster.Cluster{testcluster.NewFake(t, "x"), testcluster.NewFake(t, "y"), testcluster.NewFake(t, "z")}
	var opts []Opt
	for i := range cs {
		testcluster.CreateTopic(t, &cs[i], "events", 1, nil)
		opts = append(opts, WithCluster(ClusterConfig{Alias: cs[i].Alias, Client: cs[i].Opts()}))
	}
	pair := &testcluster.Pair{Source: cs[0], Target: cs[1]}
	for i := range cs {
		fc := fastFlow(pair)
		fc.Source, fc.Target = cs[i].Alias, cs[(i+1)%3].Alias
		fc.Policy = identity(t, fc.Source)
		fc.Topics = []string{"events"}
		opts = append(opts, WithFlow(fc))
	}
	return cs, opts
}
