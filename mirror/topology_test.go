package mirror

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/policy"
)

// logBuf collects a text log for assertions; safe for concurrent writes.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log lines that contain every one of subs.
func (l *logBuf) lines(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		ok := line != ""
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

func (l *logBuf) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func identity(t *testing.T, source string) policy.ReplicationPolicy {
	t.Helper()
	p, err := policy.NewIdentity(source)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func rulesFor(t *testing.T, fc FlowConfig, inbound ...string) topicRules {
	t.Helper()
	fc = fc.withDefaults()
	flt, err := newFilter("topics", fc.Topics, "topics.exclude", fc.TopicsExclude)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, a := range inbound {
		in[a] = true
	}
	return newTopicRules(fc, flt, in)
}

type decision struct {
	Replicate bool
	Kind      skipKind
}

func decideAll(r topicRules, topics ...string) map[string]decision {
	out := map[string]decision{}
	for _, tn := range topics {
		ok, sk := r.decide(tn, nil)
		out[tn] = decision{ok, sk.kind}
	}
	return out
}

// TestKafka4InternalTopicRule: KAFKA-17200 (Kafka 4.0): user topics that
// merely look internal replicate; MM2's own topics and Kafka's "__"/"."
// topics never do, and an explicitly listed one is reported, not dropped
// silently. MM2 3.x excluded every *.internal and *-internal topic.
func TestKafka4InternalTopicRule(t *testing.T) {
	t.Parallel()
	all := rulesFor(t, FlowConfig{Source: "src", Target: "dst"})
	got := decideAll(all, "billing.internal", "audit-internal", "orders", "heartbeats",
		"mm2-offset-syncs.dst.internal", "mm2-offsets.src.internal", "dst.checkpoints.internal", "x.checkpoints.internal",
		"__consumer_offsets", ".hidden", "orders.replica")
	want := map[string]decision{
		"billing.internal": {true, skipNone}, "audit-internal": {true, skipNone}, "orders": {true, skipNone}, "heartbeats": {true, skipNone},
		// MM2's own topics: excluded by the default list or by the policy;
		// `.*` selecting them is no reason to warn.
		"mm2-offset-syncs.dst.internal": {false, skipNone}, "mm2-offsets.src.internal": {false, skipNone},
		"dst.checkpoints.internal": {false, skipNone}, "x.checkpoints.internal": {false, skipNone},
		"__consumer_offsets": {false, skipNone}, // topics.exclude's __.* (not selected)
		".hidden":            {false, skipKafkaInternal},
		"orders.replica":     {false, skipNone},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("topics=.* (-want +got):\n%s", diff)
	}

	listed := rulesFor(t, FlowConfig{Source: "src", Target: "dst",
		Topics: []string{"billing.internal", "__consumer_offsets", `x\.checkpoints\.internal`, "mm2-offsets.src.internal", "orders"}})
	got = decideAll(listed, "billing.internal", "__consumer_offsets", "x.checkpoints.internal", "mm2-offsets.src.internal", "orders", "other")
	want = map[string]decision{
		"billing.internal": {true, skipNone}, "orders": {true, skipNone}, "other": {false, skipNone},
		"__consumer_offsets":       {false, skipKafkaInternal},
		"x.checkpoints.internal":   {false, skipMM2Internal},
		"mm2-offsets.src.internal": {false, skipMM2Internal},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed topics (-want +got):\n%s", diff)
	}

	// A file carrying MM2 3.x's exclude list: the listed topic is excluded,
	// and the reason says which key to change.
	old := rulesFor(t, FlowConfig{Source: "src", Target: "dst", Topics: []string{"billing.internal"},
		TopicsExclude: []string{`.*[\-\.]internal`, `.*\.replica`, `__.*`}})
	ok, sk := old.decide("billing.internal", nil)
	if ok || sk.kind != skipExcluded || !strings.Contains(sk.reason, "topics.exclude") {
		t.Errorf("3.x exclude list: replicate=%t %+v", ok, sk)
	}
}

// TestCaseListedInternalTopicWarns (issue bullet: an explicitly listed "__"
// topic is skipped with a WARN line naming it): New records the skip,
// Status shows it, and the log has one WARN line with topic and reason.
func TestCaseListedInternalTopicWarns(t *testing.T) {
	t.Parallel()
	var lb logBuf
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	m, err := newMirror(t, WithLogger(lb.logger()),
		WithCluster(ClusterConfig{Alias: "src", Client: seeds}), WithCluster(ClusterConfig{Alias: "dst", Client: seeds}),
		WithFlow(FlowConfig{Source: "src", Target: "dst", Topics: []string{"orders", "__consumer_offsets", "billing.internal"}}))
	if err != nil {
		t.Fatal(err)
	}
	sk := m.Status().Flows[0].Skipped
	if len(sk) != 1 || sk[0].Topic != "__consumer_offsets" || !strings.Contains(sk[0].Reason, `"__"`) || sk[0].Replicated || sk[0].Since.IsZero() {
		t.Errorf("Skipped = %+v, want only __consumer_offsets with the internal-topic reason", sk)
	}
	lines := lb.lines("level=WARN", `msg="topic not replicated"`, "flow=src->dst", "topic=__consumer_offsets", `reason="internal topic`)
	if len(lines) != 1 || len(lb.lines("level=WARN")) != 1 {
		t.Errorf("want exactly one WARN line naming __consumer_offsets and the reason, got:\n%s", strings.Join(lb.lines(""), "\n"))
	}
}

// TestCaseLocalTopicNamedLikeTarget (issue bullet: "eu.metrics" on us, flow
// us->eu, is skipped as a cycle with no word in the log): the skip has a
// reason that names the topic, how the policy reads it and what to do.
func TestCaseLocalTopicNamedLikeTarget(t *testing.T) {
	t.Parallel()
	r := rulesFor(t, FlowConfig{Source: "us", Target: "eu"})
	ok, sk := r.decide("eu.metrics", nil)
	if ok || sk.kind != skipCycle || sk.kind.level() != slog.LevelWarn {
		t.Fatalf("eu.metrics: replicate=%t %+v", ok, sk)
	}
	for _, w := range []string{`"eu.metrics"`, `topic "metrics" replicated from eu, the target`, "rename it"} {
		if !strings.Contains(sk.reason, w) {
			t.Errorf("reason %q lacks %q", sk.reason, w)
		}
	}
	// The same name is the expected remote topic when this Mirror runs
	// eu->us: reported at INFO, not WARN...
	own := rulesFor(t, FlowConfig{Source: "us", Target: "eu"}, "eu")
	if _, sk := own.decide("eu.metrics", nil); sk.kind != skipOwnCycle || sk.kind.level() != slog.LevelInfo || !strings.Contains(sk.reason, "remote topic of flow eu->us") {
		t.Errorf("own reverse flow: %+v", sk)
	}
	// ...unless the target has no "metrics": then it is a local topic.
	if _, sk := own.decide("eu.metrics", func(string) bool { return false }); sk.kind != skipCycle || !strings.Contains(sk.reason, `eu has no topic "metrics"`) {
		t.Errorf("own reverse flow, upstream missing on target: %+v", sk)
	}
	// Multi-hop: "x.eu.metrics" came from eu through x.
	if _, sk := r.decide("x.eu.metrics", nil); sk.kind != skipCycle || !strings.Contains(sk.reason, `topic "metrics" replicated from eu`) {
		t.Errorf("x.eu.metrics: %+v", sk)
	}
	// Heartbeats selected only by the heartbeats rule: MM2's plumbing, not reported.
	hb := rulesFor(t, FlowConfig{Source: "us", Target: "eu", Topics: []string{"orders"}})
	if ok, sk := hb.decide("eu.heartbeats", nil); ok || sk.kind != skipNone {
		t.Errorf("eu.heartbeats via the heartbeats rule: replicate=%t %+v", ok, sk)
	}
}

// TestCycleByClusterID: one cluster configured under two aliases (a and
// a2): a name carrying either alias is a cycle for flows into it.
func TestCycleByClusterID(t *testing.T) {
	t.Parallel()
	r := rulesFor(t, FlowConfig{Source: "b", Target: "a2"})
	if ok, _ := r.decide("a.t1", nil); !ok {
		t.Fatal("by alias alone a.t1 is replicated to a2 (MM2 behaviour)")
	}
	ids := map[string]string{"a": idA, "a2": idA, "b": idB}
	r = r.withClusterIDs(ids, idA)
	ok, sk := r.decide("a.t1", nil)
	if ok || sk.kind != skipCycle || !strings.Contains(sk.reason, "a, the same cluster as the target a2 (cluster ID "+idA+")") {
		t.Errorf("a.t1 with cluster IDs: replicate=%t %+v", ok, sk)
	}
	if diff := cmp.Diff(map[string][]string{idA: {"a", "a2"}}, sharedClusters(ids)); diff != "" {
		t.Errorf("sharedClusters (-want +got):\n%s", diff)
	}
	if got := describeShared(sharedClusters(ids)); got != "aliases a, a2 are cluster "+idA {
		t.Errorf("describeShared = %q", got)
	}
}

func TestListedTopics(t *testing.T) {
	t.Parallel()
	got := listedTopics([]string{"orders", "billing.internal", `a\.b`, "__consumer_offsets", ".*", "orders-.*", "a|b", "x[0-9]", " spaced ", ""})
	want := []string{"orders", "billing.internal", "a.b", "__consumer_offsets", "spaced"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listedTopics (-want +got):\n%s", diff)
	}
}

// TestSkipSetLogsOncePerTopicAndReason: the once-per-topic logger.
func TestSkipSetLogsOncePerTopicAndReason(t *testing.T) {
	t.Parallel()
	var lb logBuf
	s := newSkipSet(lb.logger())
	t0 := time.Unix(1000, 0)
	s.note("b", skip{skipCycle, "r1"}, t0)
	s.note("b", skip{skipCycle, "r1"}, t0.Add(time.Second))
	s.note("a", skip{skipOwnCycle, "r2"}, t0)
	s.note("c", skip{}, t0)
	if n := len(lb.lines("topic=b")); n != 1 {
		t.Errorf("b logged %d times, want once", n)
	}
	s.note("b", skip{skipProvenance, "r3"}, t0.Add(2*time.Second))
	if n := len(lb.lines("level=WARN", "topic=b", "reason=r3")); n != 1 {
		t.Errorf("changed reason logged %d times, want once", n)
	}
	if n := len(lb.lines("level=INFO", "topic=a", "reason=r2")); n != 1 {
		t.Errorf("own cycle: %d INFO lines, want 1", n)
	}
	s.note("d", skip{skipCollisionAllowed, "r4"}, t0)
	if len(lb.lines("level=WARN", `msg="topic replicated without checkpoints"`, "topic=d")) != 1 || !s.noCheckpoints("d") || s.noCheckpoints("b") {
		t.Error("allowed collision not logged or not marked for checkpoints")
	}
	want := []SkippedTopic{{Topic: "a", Reason: "r2", Since: t0}, {Topic: "b", Reason: "r3", Since: t0.Add(2 * time.Second)},
		{Topic: "d", Reason: "r4", Since: t0, Replicated: true}}
	if diff := cmp.Diff(want, s.list()); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	s.retain(func(tn string) bool { return tn != "a" })
	s.clear("d")
	if got := s.list(); len(got) != 1 || got[0].Topic != "b" {
		t.Errorf("after retain/clear: %+v", got)
	}
}

// TestCaseIdentityManyToOneRefused (issue bullet: two sources feed one
// target with IdentityReplicationPolicy, both have "orders"): refused in
// New when the topic lists make it certain, naming topic, target and both
// sources; allowed only when every flow opts in.
func TestCaseIdentityManyToOneRefused(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	base := []Opt{WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}),
		WithCluster(ClusterConfig{Alias: "t", Client: seeds})}
	flows := func(allowA, allowB bool) []Opt {
		return append(append([]Opt(nil), base...),
			WithFlow(FlowConfig{Source: "a", Target: "t", Policy: identity(t, "a"), Topics: []string{"orders", "payments"}, AllowTopicCollisions: allowA}),
			WithFlow(FlowConfig{Source: "b", Target: "t", Policy: identity(t, "b"), Topics: []string{"orders", "refunds"}, AllowTopicCollisions: allowB}))
	}
	_, err := newMirror(t, flows(false, false)...)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *ConfigError", err)
	}
	for _, w := range []string{`flows a->t and b->t would both write topic "orders" on cluster t`, "topic orders of a", "topic orders of b",
		"allow.topic.collisions=true", "on a->t and b->t", "b->t.topics"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if _, err := newMirror(t, flows(true, false)...); err == nil || !strings.Contains(err.Error(), "on b->t (") {
		t.Errorf("only a->t allows it: %v, want an error naming b->t alone", err)
	}
	var lb logBuf
	m, err := newMirror(t, append(flows(true, true), WithLogger(lb.logger()))...)
	if err != nil {
		t.Fatalf("both allow: %v", err)
	}
	for i, fs := range m.Status().Flows {
		if len(fs.Skipped) != 1 || fs.Skipped[0].Topic != "orders" || !fs.Skipped[0].Replicated ||
			!strings.Contains(fs.Skipped[0].Reason, "checkpoints and group offset sync are off") {
			t.Errorf("flow %d Skipped = %+v", i, fs.Skipped)
		}
	}
	if n := len(lb.lines("level=WARN", "topic=orders", "collision allowed")); n != 2 {
		t.Errorf("%d WARN lines for the allowed collision, want 2 (one per flow)", n)
	}
	// Default policy: a.orders and b.orders never collide.
	_, err = newMirror(t, append(append([]Opt(nil), base...),
		WithFlow(FlowConfig{Source: "a", Target: "t", Topics: []string{"orders"}}),
		WithFlow(FlowConfig{Source: "b", Target: "t", Topics: []string{"orders"}}))...)
	if err != nil {
		t.Errorf("default policy: %v", err)
	}
	// Any combination: default a->t writes a.orders; identity b->t copies
	// b's topic "a.orders" under the same name.
	_, err = newMirror(t, append(append([]Opt(nil), base...),
		WithFlow(FlowConfig{Source: "a", Target: "t", Topics: []string{"orders"}}),
		WithFlow(FlowConfig{Source: "b", Target: "t", Policy: identity(t, "b"), Topics: []string{`a\.orders`}}))...)
	if err == nil || !strings.Contains(err.Error(), `write topic "a.orders" on cluster t (topic orders of a, topic a.orders of b)`) {
		t.Errorf("mixed policies: %v", err)
	}
}

// TestRuntimeCollisions: the discovery's part, on the topics that exist.
func TestRuntimeCollisions(t *testing.T) {
	t.Parallel()
	keys := []flowKey{
		keyOf(FlowConfig{Source: "a", Target: "t", Policy: identity(t, "a")}),
		keyOf(FlowConfig{Source: "b", Target: "t", Policy: identity(t, "b")}),
		keyOf(FlowConfig{Source: "c", Target: "t"}),
		keyOf(FlowConfig{Source: "b", Target: "u", Policy: identity(t, "b")}),
	}
	sel := map[string][]string{
		"a->t": {"orders", "payments", "c.x", "orders"},
		"b->t": {"orders", "refunds"},
		"c->t": {"x"},
		"b->u": {"orders"},
		"z->t": {"orders"}, // not a flow: ignored
	}
	cs := collisions(keys, sel)
	type row struct {
		Target, Topic string
		Writers       []string
		Allowed       bool
	}
	var got []row
	for _, c := range cs {
		r := row{Target: c.target, Topic: c.topic, Allowed: c.allowed}
		for _, w := range c.writers {
			r.Writers = append(r.Writers, w.flow+":"+w.topic)
		}
		got = append(got, r)
	}
	want := []row{{"t", "c.x", []string{"a->t:c.x", "c->t:x"}, false}, {"t", "orders", []string{"a->t:orders", "b->t:orders"}, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("collisions (-want +got):\n%s", diff)
	}
	// At start: refused.
	if _, err := collisionSkips(cs, true, nil); err == nil || !strings.Contains(err.Error(), `"c.x" on cluster t`) {
		t.Errorf("start: %v", err)
	}
	// Later, a->t already replicates orders: only b->t skips it. Nobody
	// replicates c.x yet: both skip it, nothing is merged.
	skips, err := collisionSkips(cs, false, func(flow, topic string) bool { return flow == "a->t" && topic == "orders" })
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]skipKind{}
	for f, m := range skips {
		for tn, sk := range m {
			kinds[f+":"+tn] = sk.kind
		}
	}
	if diff := cmp.Diff(map[string]skipKind{"b->t:orders": skipCollision, "a->t:c.x": skipCollision, "c->t:x": skipCollision}, kinds); diff != "" {
		t.Errorf("running skips (-want +got):\n%s", diff)
	}
	if r := skips["b->t"]["orders"].reason; !strings.Contains(r, "flow a->t writes it already") {
		t.Errorf("reason %q", r)
	}
}

// TestCaseAliasesValidatedWhereUsed (issue bullet: MM2 accepts any alias
// that never appears in a topic name; kmirror refused every alias that is
// not a legal topic name).
func TestCaseAliasesValidatedWhereUsed(t *testing.T) {
	t.Parallel()
	odd := "backup.target-with-url-reserved-chars!@#$%^&*()"
	for _, tc := range []struct {
		name string
		fc   FlowConfig
		want []string // substrings of the error; nil = valid
	}{
		{"odd target alias, offset syncs on the target", FlowConfig{Source: "primary", Target: odd, OffsetSyncsTopicLocationTarget: true}, nil},
		{"odd target alias, no offset syncs", FlowConfig{Source: "primary", Target: odd, DisableOffsetSyncs: true}, nil},
		{"odd target alias of a heartbeats-only flow", FlowConfig{Source: odd, Target: "primary", Disabled: true}, nil},
		{"target alias with the separator", FlowConfig{Source: "primary", Target: "us.east"}, nil},
		{"target alias starting with __", FlowConfig{Source: "primary", Target: "__dr"}, nil},
		{"odd target alias in the offset-syncs topic", FlowConfig{Source: "primary", Target: odd},
			[]string{`"` + odd + `"`, "character '!'", "mm2-offset-syncs." + odd + ".internal on primary", "offset-syncs.topic.location=target"}},
		{"odd source alias", FlowConfig{Source: odd, Target: "dr", OffsetSyncsTopicLocationTarget: true},
			[]string{`"` + odd + `"`, "as the source of flow", "mm2-offsets." + odd + ".internal"}},
		{"source alias with the separator", FlowConfig{Source: "us.east", Target: "dr"}, []string{"contains the replication separator", "us.east.heartbeats"}},
		{"source alias starting with __", FlowConfig{Source: "__x", Target: "dr"}, []string{`must not start with "__"`}},
		{"alias with ->", FlowConfig{Source: "a->b", Target: "c"}, []string{`must not contain "->"`}},
		{"empty target alias", FlowConfig{Source: "a", Target: ""}, []string{"empty", "IdentityReplicationPolicy", "replication.policy.class = " + policy.IdentityPolicyClass, "replication.policy.separator = ."}},
	} {
		err := validateFlowAliases(tc.fc)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
	// Through New: the odd alias is accepted as a target with offset syncs
	// on the target, refused otherwise.
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	cl := []Opt{WithCluster(ClusterConfig{Alias: "primary", Client: seeds}), WithCluster(ClusterConfig{Alias: odd, Client: seeds})}
	if _, err := newMirror(t, append(cl, WithFlow(FlowConfig{Source: "primary", Target: odd, OffsetSyncsTopicLocationTarget: true}))...); err != nil {
		t.Errorf("New, odd target alias: %v", err)
	}
	if _, err := newMirror(t, append(cl, WithFlow(FlowConfig{Source: "primary", Target: odd}))...); err == nil {
		t.Error("New accepted an odd target alias that appears in mm2-offset-syncs.<alias>.internal")
	}
	if _, err := newMirror(t, WithCluster(ClusterConfig{Client: seeds}), WithFlow(FlowConfig{Source: "", Target: "b"})); err == nil || !strings.Contains(err.Error(), "IdentityReplicationPolicy") {
		t.Errorf("New, empty alias: %v", err)
	}
	// Through a properties file (the reverse pair b->primary is a
	// heartbeats-only herder there).
	for loc, wantErr := range map[string]bool{"target": false, "source": true} {
		file := "clusters = primary, " + odd + "\nbootstrap.servers = x:1\nprimary->" + odd + ".enabled = true\noffset-syncs.topic.location = " + loc + "\n"
		p, err := ParseProperties(strings.NewReader(file))
		if err == nil {
			_, err = newMirror(t, p.Opts()...)
		}
		if (err != nil) != wantErr || (wantErr && !strings.Contains(err.Error(), "mm2-offset-syncs."+odd+".internal")) {
			t.Errorf("properties, offset-syncs.topic.location=%s: %v", loc, err)
		}
	}
}

// TestNuFSourceAliasRefusalSaysWhatToWrite: an MM2 file whose source alias
// holds the separator (MM2 runs it) or a character illegal in topic names
// was refused with the rule broken but not what to write instead (an
// operator's find: clusters = dc.one, dc.two).
func TestNuFSourceAliasRefusalSaysWhatToWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ alias, want string }{
		{"dc.one", `mirror: clusters="dc.one": policy: invalid cluster alias "dc.one": contains the replication separator ".", ` +
			`so remote topic "dc.one.heartbeats" would be attributed to cluster "dc"; as the source of flow dc.one->dr ` +
			`this alias starts topic names: remote topics dc.one.heartbeats, dc.one.checkpoints.internal on dr and the resume points topic mm2-offsets.dc.one.internal: ` +
			`rename the cluster in clusters and in its keys (e.g. dc-one, with dc-one.bootstrap.servers), ` +
			`or set replication.policy.separator to a string the alias does not contain (not "."); ` +
			`either names these topics anew, so remote topics an MM2 deployment wrote under this alias are not continued`},
		{"eu+prod", `mirror: clusters="eu+prod": policy: invalid cluster alias "eu+prod": character '+' at index 2 is not allowed in topic names (legal: [a-zA-Z0-9._-]); ` +
			`as the source of flow eu+prod->dr this alias starts topic names: remote topics eu+prod.heartbeats, eu+prod.checkpoints.internal on dr and the resume points topic mm2-offsets.eu+prod.internal: ` +
			`rename the cluster in clusters and in its keys (e.g. eu-prod, with eu-prod.bootstrap.servers)`},
	} {
		text := fmt.Sprintf("clusters = %[1]s, dr\n%[1]s.bootstrap.servers = a:9092\ndr.bootstrap.servers = b:9092\n%[1]s->dr.enabled = true\n", tc.alias)
		_, err := ParseProperties(strings.NewReader(text))
		if err == nil || err.Error() != tc.want {
			t.Errorf("alias %s: got error\n%v\nwant\n%s", tc.alias, err, tc.want)
		}
	}
}

// TestCaseEmptySeparatorOrAliasTeachesIdentity (issue bullet: an empty
// replication.policy.separator was refused with "must not be empty" only,
// an empty source.cluster.alias accepted).
func TestCaseEmptySeparatorOrAliasTeachesIdentity(t *testing.T) {
	t.Parallel()
	const base = "clusters=A,B\nA.bootstrap.servers=a:9092\nB.bootstrap.servers=b:9092\nA->B.enabled=true\n"
	for _, tc := range []struct {
		line, key string
		want      []string
	}{
		{"replication.policy.separator=", "replication.policy.separator",
			[]string{"must not be empty", "\n  replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n  replication.policy.separator = .\n"}},
		{"A->B.replication.policy.separator=", "A->B.replication.policy.separator",
			[]string{"\n  A->B.replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n  A->B.replication.policy.separator = .\n"}},
		{"source.cluster.alias=", "source.cluster.alias", []string{"must not be empty", "IdentityReplicationPolicy", "replication.policy.class = "}},
		{"A->B.target.cluster.alias= ", "A->B.target.cluster.alias", []string{"must not be empty", "A->B.replication.policy.class = "}},
	} {
		_, err := ParseProperties(strings.NewReader(base + tc.line + "\n"))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%s: %v, want a *ConfigError for key %s", tc.line, err, tc.key)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.line, err, w)
			}
		}
	}
}

// TestTopologyProperties: the kmirror keys of this feature load without
// warnings and map to the FlowConfig fields.
func TestTopologyProperties(t *testing.T) {
	t.Parallel()
	const file = "clusters=A,B,T\nbootstrap.servers=x:1\nA->T.enabled=true\nB->T.enabled=true\n" +
		"replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy\nallow.topic.collisions=true\nB->T.provenance.header.enabled=false\n" +
		"A->T.topics=orders\nB->T.topics=orders\n"
	p, err := ParseProperties(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	got := map[string][2]bool{}
	for _, f := range p.Flows() {
		if !f.Disabled {
			got[f.Name()] = [2]bool{f.AllowTopicCollisions, f.DisableProvenanceHeader}
		}
	}
	if diff := cmp.Diff(map[string][2]bool{"A->T": {true, false}, "B->T": {true, true}}, got); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
	for _, w := range []string{"A->T.allow.topic.collisions = true", "B->T.provenance.header.enabled = false", "A->T.provenance.header.enabled = true"} {
		if !strings.Contains(p.Effective(), w) {
			t.Errorf("Effective lacks %q", w)
		}
	}
	m, err := newMirror(t, p.Opts()...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var skipped []string
	for _, fs := range m.Status().Flows {
		for _, s := range fs.Skipped {
			skipped = append(skipped, fs.Name+":"+s.Topic)
		}
	}
	if diff := cmp.Diff([]string{"A->T:orders", "B->T:orders"}, skipped); diff != "" {
		t.Errorf("allowed collision in Status (-want +got):\n%s", diff)
	}
	_, err = ParseProperties(strings.NewReader(strings.Replace(file, "allow.topic.collisions=true\n", "", 1)))
	if err != nil {
		t.Fatalf("without the opt-in the file still loads (New refuses): %v", err)
	}
}

// TestChainGateTwoDeployments simulates two deployments that replicate
// between the same two clusters but name them differently (D1: a, b; D2:
// local = a, remote = b), each running the flow into its own site, with
// provenance on: no topic of another deployment's naming is created, so no
// prefix chain grows, while local topics (also empty ones with plain
// names) are created as in MM2.
func TestChainGateTwoDeployments(t *testing.T) {
	t.Parallel()
	d1 := rulesFor(t, FlowConfig{Source: "a", Target: "b"})
	d2 := rulesFor(t, FlowConfig{Source: "remote", Target: "local"})
	known1 := map[string]bool{"a": true, "b": true}
	known2 := map[string]bool{"local": true, "remote": true}
	pvAB, pvBA := mustProv(t, idA, idB), mustProv(t, idB, idA)
	rec := func(ids ...string) []kgo.RecordHeader {
		if len(ids) == 0 {
			return nil
		}
		return []kgo.RecordHeader{{Key: ProvenanceHeader, Value: FormatProvenance(ids...)}}
	}
	never := func() [][]kgo.RecordHeader { t.Error("sampled a topic with a plain name"); return nil }
	sample := func(rs ...[]kgo.RecordHeader) func() [][]kgo.RecordHeader {
		return func() [][]kgo.RecordHeader { return rs }
	}
	type verdict struct {
		Create bool
		Kind   skipKind
	}
	check := func(name string, r topicRules, topic string, known map[string]bool, pv *provenance, s func() [][]kgo.RecordHeader, want verdict) {
		t.Helper()
		create, sk := r.gate(topic, known, pv, s)
		if got := (verdict{create, sk.kind}); got != want {
			t.Errorf("%s %s: %+v (%s), want %+v", name, topic, got, sk.reason, want)
		}
	}
	// D1 copied t1 from a to b as "a.t1"; D2 (b->a) sees a name from the
	// unknown alias "a" whose records all came from a: not created.
	check("D2", d2, "a.t1", known2, pvBA, sample(rec(idA), rec(idA)), verdict{false, skipProvenance})
	// D2's remote topics on a ("remote.u1", from b) are not copied back to b by D1.
	check("D1", d1, "remote.u1", known1, pvAB, sample(rec(idB)), verdict{false, skipProvenance})
	check("D1", d1, "remote.heartbeats", known1, pvAB, sample(rec(idB)), verdict{false, skipProvenance})
	// Plain names are created without sampling, also when empty.
	check("D1", d1, "orders", known1, pvAB, never, verdict{true, skipNone})
	check("D2", d2, "heartbeats", known2, pvBA, never, verdict{true, skipNone})
	// A local topic whose name merely contains the separator: created once
	// it holds a local record; waits while empty.
	check("D1", d1, "my.topic", known1, pvAB, sample(), verdict{false, skipAwaitRecord})
	check("D1", d1, "my.topic", known1, pvAB, sample(rec(idB), rec()), verdict{true, skipNone})
	// Provenance off: MM2 behaviour, created by name.
	check("D1 off", d1, "remote.u1", known1, nil, never, verdict{true, skipNone})
	// Identity names are never suspect.
	id := rulesFor(t, FlowConfig{Source: "a", Target: "b", Policy: identity(t, "a")})
	check("identity", id, "orders.v2", known1, pvAB, never, verdict{true, skipNone})
	if _, sk := d2.gate("a.t1", known2, pvBA, sample(rec(idA))); !strings.Contains(sk.reason, `cluster alias "a", which this Mirror does not know`) {
		t.Errorf("reason %q", sk.reason)
	}

	// Issue 20: the deployments name the clusters crosswise with the same
	// aliases (D3: remote = x, local = y; D4: remote = y, local = x). D3
	// copied t1 from x to y as "remote.t1"; for D4 (y->x) it is named
	// after its own source alias, and its records came from x, its
	// target: not created (MM2 and the gate above created
	// "remote.remote.t1" on x, whose records were all skipped).
	d3 := rulesFor(t, FlowConfig{Source: "remote", Target: "local"})
	known3 := map[string]bool{"local": true, "remote": true}
	pvXY, pvYX := mustProv(t, idA, idB), mustProv(t, idB, idA) // x = idA, y = idB
	check("D4", d3, "remote.t1", known3, pvYX, sample(rec(idA), rec(idA)), verdict{false, skipProvenance})
	check("D4", d3, "remote.heartbeats", known3, pvYX, sample(rec(idA)), verdict{false, skipProvenance})
	check("D4", d3, "remote.t1", known3, pvYX, sample(), verdict{false, skipAwaitRecord})
	// D3 likewise for D4's remote topics on x.
	check("D3", d3, "remote.u1", known3, pvXY, sample(rec(idB)), verdict{false, skipProvenance})
	// A native topic named after its own cluster is created once it holds
	// a record that did not come from the target.
	check("D3", d3, "remote.orders", known3, pvXY, sample(rec()), verdict{true, skipNone})
	// Names of the other known alias stay MM2's.
	check("D3", d3, "local.t1", known3, pvXY, never, verdict{true, skipNone})
	if _, sk := d3.gate("remote.t1", known3, pvYX, sample(rec(idA))); !strings.Contains(sk.reason, `cluster alias "remote", the flow's own source`) {
		t.Errorf("reason %q", sk.reason)
	}
}

// TestListedNameMatchingAnotherTopic: an entry of topics read as a name
// ("orders.v1") is still a regular expression whose dots match any
// character: when it selects "orders-v1" it is not reported as missing;
// written "orders\.v1" it selects nothing else, and is (found by a review:
// the escaped dot was read as any character too).
func TestListedNameMatchingAnotherTopic(t *testing.T) {
	t.Parallel()
	src := map[string]bool{"orders-v1": true, "payments": true}
	r := rulesFor(t, FlowConfig{Source: "us", Target: "eu", Topics: []string{"orders.v1", `orders\.v2`, "ordres", `billing\.v1`}})
	for name, want := range map[string]bool{"orders.v1": true, "orders.v2": false, "ordres": false, "billing.v1": false} {
		if !r.listed[name] {
			t.Errorf("%q not listed", name)
		}
		if got := r.listedSelects(name, maps.Keys(src)); got != want {
			t.Errorf("listedSelects(%q) = %v, want %v", name, got, want)
		}
	}
	src["orders-v2"] = true
	if r.listedSelects("orders.v2", maps.Keys(src)) {
		t.Error(`orders\.v2 selects orders-v2`)
	}
}

// TestReverseFlowRemoteTopicExpectedWhenTheTargetHasItsUpstream (a new
// user's finding): with MM2's --clusters split, the process running A->B
// does not run B->A, so A's remote topics of B->A (B.heartbeats, B.orders)
// were logged at WARN with "if it is a local topic, rename it". Named
// after the target and with their upstream topic on the target, they are
// the reverse flow's remote topics: expected (INFO). A name whose upstream
// the target lacks is still a probable local topic (WARN).
func TestReverseFlowRemoteTopicExpectedWhenTheTargetHasItsUpstream(t *testing.T) {
	t.Parallel()
	r := rulesFor(t, FlowConfig{Source: "A", Target: "B"}) // no inbound flow in this process
	onB := map[string]bool{"heartbeats": true, "orders": true}
	for topic, want := range map[string]skipKind{"B.heartbeats": skipOwnCycle, "B.orders": skipOwnCycle, "B.ledger": skipCycle} {
		ok, sk := r.decide(topic, func(t string) bool { return onB[t] })
		if ok || sk.kind != want {
			t.Errorf("%s: replicate %v, kind %v (%s), want %v", topic, ok, sk.kind, sk.reason, want)
		}
	}
	if got := skipOwnCycle.level(); got != slog.LevelInfo {
		t.Errorf("level %v", got)
	}
}
