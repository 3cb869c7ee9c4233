package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/policy"
)

func mustDefault(t testing.TB, opts ...policy.Opt) *policy.Default {
	t.Helper()
	p, err := policy.NewDefault(opts...)
	if err != nil {
		t.Fatalf("NewDefault: %v", err)
	}
	return p
}

func mustIdentity(t testing.TB, alias string, opts ...policy.Opt) *policy.Identity {
	t.Helper()
	p, err := policy.NewIdentity(alias, opts...)
	if err != nil {
		t.Fatalf("NewIdentity(%q): %v", alias, err)
	}
	return p
}

// parse is the (source, upstream) pair of a topic; ok false means Java null.
type parse struct {
	Source   string
	SourceOK bool
	Up       string
	UpOK     bool
}

func parseWith(p policy.ReplicationPolicy, topic string) parse {
	var r parse
	r.Source, r.SourceOK = p.TopicSource(topic)
	r.Up, r.UpOK = p.UpstreamTopic(topic)
	return r
}

func remote(source, up string) parse { return parse{source, true, up, true} }

var notRemote = parse{}

// TestDefaultTopicSourceSpecTable covers every row of the topicSource /
// upstreamTopic table in docs/mm2-compat.md §3.1 (verified against JDK 17
// there).
func TestDefaultTopicSourceSpecTable(t *testing.T) {
	tests := []struct {
		sep   string
		topic string
		want  parse
	}{
		{".", "us-west.orders", remote("us-west", "orders")},
		{".", "a.b.c", remote("a", "b.c")},
		{".", "orders", notRemote},
		{".", "heartbeats", notRemote},
		{".", "", notRemote},
		{".", "a.", notRemote},
		{".", "a..", notRemote},
		{".", ".", notRemote},
		{".", "a..b", remote("a", ".b")},
		{".", ".hidden", remote("", "hidden")},
		{".", "..b", remote("", ".b")},
		{"__", "a__b", remote("a", "b")},
		{"__", "a___b", remote("a", "_b")},
		{"__", "a____b", remote("a", "__b")},
		{"__", "a__", notRemote},
		{"__", "___x", remote("", "_x")},
		// Further Java split cases.
		{".", "...", notRemote},
		{".", "a.b.", remote("a", "b.")},
		{".", "a...b", remote("a", "..b")},
		{"__", "a_b", notRemote},
		{"__", "a____", notRemote},
		{"__", "a_____", remote("a", "___")},
		{"__", "__", notRemote},
		{"__", "____x", remote("", "__x")},
		{"-", "eu-prod-orders", remote("eu", "prod-orders")},
		{"-", "eu-prod-eu-dr-heartbeats", remote("eu", "prod-eu-dr-heartbeats")},
	}
	for _, tt := range tests {
		t.Run(tt.sep+"/"+tt.topic, func(t *testing.T) {
			p := mustDefault(t, policy.WithSeparator(tt.sep))
			if diff := cmp.Diff(tt.want, parseWith(p, tt.topic)); diff != "" {
				t.Errorf("parse(%q) sep %q (-want +got):\n%s", tt.topic, tt.sep, diff)
			}
		})
	}
}

// TestNamesSpecTable covers the naming table of docs/mm2-compat.md §1.2 and
// docs/field-failures.md case B29 (separator "__" with the internal-topic
// separator on and off).
func TestNamesSpecTable(t *testing.T) {
	type names struct {
		Heartbeats, Checkpoints, OffsetSyncs, Remote, RemoteHeartbeats string
	}
	tests := []struct {
		name     string
		opts     []policy.Opt
		identity bool
		want     names
	}{
		{"default dot", nil, false, names{"heartbeats", "X.checkpoints.internal", "mm2-offset-syncs.X.internal", "A.orders", "A.heartbeats"}},
		{"default __ isep on", []policy.Opt{policy.WithSeparator("__")}, false,
			names{"heartbeats", "X__checkpoints__internal", "mm2-offset-syncs__X__internal", "A__orders", "A__heartbeats"}},
		{"default __ isep off", []policy.Opt{policy.WithSeparator("__"), policy.WithInternalTopicSeparator(false)}, false,
			names{"heartbeats", "X.checkpoints.internal", "mm2-offset-syncs.X.internal", "A__orders", "A__heartbeats"}},
		{"identity dot", nil, true, names{"heartbeats", "X.checkpoints.internal", "mm2-offset-syncs.X.internal", "orders", "A.heartbeats"}},
		{"identity __ isep on", []policy.Opt{policy.WithSeparator("__")}, true,
			names{"heartbeats", "X__checkpoints__internal", "mm2-offset-syncs__X__internal", "orders", "A__heartbeats"}},
		{"identity __ isep off", []policy.Opt{policy.WithSeparator("__"), policy.WithInternalTopicSeparator(false)}, true,
			names{"heartbeats", "X.checkpoints.internal", "mm2-offset-syncs.X.internal", "orders", "A__heartbeats"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p policy.ReplicationPolicy
			if tt.identity {
				p = mustIdentity(t, "A", tt.opts...)
			} else {
				p = mustDefault(t, tt.opts...)
			}
			got := names{
				Heartbeats:       p.HeartbeatsTopic(),
				Checkpoints:      p.CheckpointsTopic("X"),
				OffsetSyncs:      p.OffsetSyncsTopic("X"),
				Remote:           p.FormatRemoteTopic("A", "orders"),
				RemoteHeartbeats: p.FormatRemoteTopic("A", "heartbeats"),
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			// Own internal topics are never replicated (docs/field-failures.md case B29).
			for _, n := range []string{got.Checkpoints, got.OffsetSyncs} {
				if !p.IsInternalTopic(n) || !p.IsMM2InternalTopic(n) {
					t.Errorf("%q: IsInternalTopic=%t IsMM2InternalTopic=%t, want both true", n, p.IsInternalTopic(n), p.IsMM2InternalTopic(n))
				}
			}
			if !p.IsCheckpointsTopic(got.Checkpoints) {
				t.Errorf("IsCheckpointsTopic(%q) = false", got.Checkpoints)
			}
		})
	}
}

func TestCaseB29CustomSeparatorInternalTopics(t *testing.T) {
	on := mustDefault(t, policy.WithSeparator("__"))
	off := mustDefault(t, policy.WithSeparator("__"), policy.WithInternalTopicSeparator(false))
	got := []string{
		off.CheckpointsTopic("src"), off.OffsetSyncsTopic("dst"), off.FormatRemoteTopic("src", "orders"),
		on.CheckpointsTopic("src"), on.OffsetSyncsTopic("dst"), on.FormatRemoteTopic("src", "orders"),
	}
	want := []string{
		"src.checkpoints.internal", "mm2-offset-syncs.dst.internal", "src__orders",
		"src__checkpoints__internal", "mm2-offset-syncs__dst__internal", "src__orders",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	// Both modes' internal topics are internal (never replicated) under
	// either policy, so switching the flag never replicates the old topics.
	// Java MM2 4.x recognises only its own mode's names (its topics.exclude
	// default catches the old mm2-* names, not the old checkpoints topic).
	for _, p := range []*policy.Default{on, off} {
		for _, n := range append(want[:2:2], want[3:5]...) {
			if !p.IsInternalTopic(n) || !p.IsMM2InternalTopic(n) {
				t.Errorf("isep=%t policy: IsInternalTopic(%q)=%t IsMM2InternalTopic=%t, want both true",
					p.InternalTopicSeparatorEnabled(), n, p.IsInternalTopic(n), p.IsMM2InternalTopic(n))
			}
		}
		// User topics that merely look internal replicate (KAFKA-17200).
		for _, n := range []string{"src__orders__internal", "billing.internal", "billing__internal", "checkpoints__internal"} {
			if p.IsInternalTopic(n) {
				t.Errorf("isep=%t policy: IsInternalTopic(%q) = true, want false", p.InternalTopicSeparatorEnabled(), n)
			}
		}
	}
	if on.IsCheckpointsTopic("src.checkpoints.internal") || off.IsCheckpointsTopic("src__checkpoints__internal") {
		t.Error("IsCheckpointsTopic matched the other mode's name")
	}
}

func TestPredicates(t *testing.T) {
	dot := mustDefault(t)
	us := mustDefault(t, policy.WithSeparator("__"))
	id := mustIdentity(t, "src")
	type row struct {
		p                                         policy.ReplicationPolicy
		topic                                     string
		heartbeats, checkpoints, mm2int, internal bool
	}
	rows := []row{
		// CT:MirrorClientTest testIsHeartbeatTopic / testIsCheckpointTopic.
		{dot, "heartbeats", true, false, false, false},
		{dot, "source1.heartbeats", true, false, false, false},
		{dot, "source2.source1.heartbeats", true, false, false, false},
		{dot, "heartbeats!", false, false, false, false},
		{dot, "!heartbeats", false, false, false, false},
		{dot, "source1heartbeats", false, false, false, false},
		{dot, "source1-heartbeats", false, false, false, false},
		{dot, ".heartbeats", true, false, false, true},
		{dot, "source1.checkpoints.internal", false, true, true, true},
		// Kafka 4.0 (KAFKA-17200): only "mm2*<isep>internal", checkpoints
		// topics and "__"/"." names are internal; 3.x also counted every
		// name ending with ".internal" or "-internal".
		{dot, "checkpoints.internal", false, false, false, false},
		{dot, "checkpoints-internal", false, false, false, false},
		{dot, "checkpoints.internal!", false, false, false, false},
		{dot, "!checkpoints.internal", false, false, false, false},
		{dot, "x.checkpoints.internal", false, true, true, true},
		{dot, "source1checkpointsinternal", false, false, false, false},
		{dot, "mm2-offset-syncs.B.internal", false, false, true, true},
		{dot, "mm2-offsets.A.internal", false, false, true, true},
		{dot, "mm2-kmirror-units.A.internal", false, false, true, true},
		{dot, "mm2.internal", false, false, true, true},
		{dot, "mm2-offsets.A-internal", false, false, false, false},
		{dot, "billing.internal", false, false, false, false},
		{dot, "billing-internal", false, false, false, false},
		{dot, "__consumer_offsets", false, false, false, true},
		{dot, "__billing.internal", false, false, false, true},
		{dot, ".billing", false, false, false, true},
		{dot, "_schemas", false, false, false, false},
		{dot, "connect-configs-internal", false, false, false, false},
		{dot, "orders", false, false, false, false},
		// Separator "__": A.heartbeats is not a heartbeats topic
		// (testReplicatesHeartbeatsDespiteFilter).
		{us, "A.heartbeats", false, false, false, false},
		{us, "A__heartbeats", true, false, false, false},
		{us, "A__checkpoints__internal", false, true, true, true},
		// Both spellings of MM2's names are internal whatever the
		// separator (kmirror; Java 4.x: false, false).
		{us, "A.checkpoints.internal", false, false, true, true},
		{us, "mm2-configs.A.internal", false, false, true, true},
		{us, "mm2-offset-syncs__B__internal", false, false, true, true},
		{us, "billing__internal", false, false, false, false},
		{us, "billing.internal", false, false, false, false},
		// Identity: heartbeats rules unchanged, user topics never heartbeats.
		{id, "heartbeats", true, false, false, false},
		{id, "src.heartbeats", true, false, false, false},
		{id, "app-heartbeats", false, false, false, false},
		{id, "orders", false, false, false, false},
		{id, "src.checkpoints.internal", false, true, true, true},
	}
	for _, r := range rows {
		got := [4]bool{r.p.IsHeartbeatsTopic(r.topic), r.p.IsCheckpointsTopic(r.topic), r.p.IsMM2InternalTopic(r.topic), r.p.IsInternalTopic(r.topic)}
		want := [4]bool{r.heartbeats, r.checkpoints, r.mm2int, r.internal}
		if got != want {
			t.Errorf("%T(sep %q) %q: [heartbeats checkpoints mm2internal internal] = %v, want %v", r.p, r.p.Separator(), r.topic, got, want)
		}
	}
}

func TestOriginalTopic(t *testing.T) {
	dot := mustDefault(t)
	id := mustIdentity(t, "src")
	tests := []struct {
		p     policy.ReplicationPolicy
		topic string
		want  string
	}{
		{dot, "orders", "orders"},
		{dot, "A.orders", "orders"},
		{dot, "B.A.orders", "orders"},
		{dot, "a..b", "b"},
		{dot, ".hidden", "hidden"},
		{dot, "a.", "a."},
		{id, "orders", "orders"},
		{id, "B.A.heartbeats", "heartbeats"},
		{id, "A.app-heartbeats", "app-heartbeats"},
		{id, "A.orders.x", "A.orders.x"},
	}
	for _, tt := range tests {
		if got := tt.p.OriginalTopic(tt.topic); got != tt.want {
			t.Errorf("%T.OriginalTopic(%q) = %q, want %q", tt.p, tt.topic, got, tt.want)
		}
	}
}

// TestIdentitySpec covers docs/mm2-compat.md §3.2.
func TestIdentitySpec(t *testing.T) {
	withAlias := mustIdentity(t, "src")
	noAlias := mustIdentity(t, "")
	under := mustIdentity(t, "src", policy.WithSeparator("__"))
	tests := []struct {
		name   string
		p      *policy.Identity
		topic  string
		remote string // FormatRemoteTopic("A", topic)
		want   parse
	}{
		{"plain topic", withAlias, "orders", "orders", remote("src", "orders")},
		{"plain topic no alias", noAlias, "orders", "orders", parse{Up: "orders", UpOK: true}},
		{"dotted user topic", withAlias, "my.topic", "my.topic", remote("src", "my.topic")},
		{"heartbeats", withAlias, "heartbeats", "A.heartbeats", notRemote},
		{"remote heartbeats", withAlias, "B.heartbeats", "A.B.heartbeats", remote("B", "heartbeats")},
		{"remote heartbeats no alias", noAlias, "B.heartbeats", "A.B.heartbeats", remote("B", "heartbeats")},
		{"suffix quirk", withAlias, "app-heartbeats", "A.app-heartbeats", notRemote},
		{"suffix quirk dotted", withAlias, "orders.heartbeats", "A.orders.heartbeats", remote("orders", "heartbeats")},
		{"hidden heartbeats", withAlias, ".heartbeats", "A..heartbeats", remote("", "heartbeats")},
		{"separator __", under, "B__heartbeats", "A__B__heartbeats", remote("B", "heartbeats")},
		{"separator __ dotted", under, "B.heartbeats", "A__B.heartbeats", notRemote},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.FormatRemoteTopic("A", tt.topic); got != tt.remote {
				t.Errorf("FormatRemoteTopic(A, %q) = %q, want %q", tt.topic, got, tt.remote)
			}
			if diff := cmp.Diff(tt.want, parseWith(tt.p, tt.topic)); diff != "" {
				t.Errorf("parse(%q) (-want +got):\n%s", tt.topic, diff)
			}
		})
	}
	if withAlias.SourceAlias() != "src" || noAlias.SourceAlias() != "" {
		t.Errorf("SourceAlias = %q, %q", withAlias.SourceAlias(), noAlias.SourceAlias())
	}
}

// TestIsCycle covers docs/mm2-compat.md §4.3 (MT:MirrorSourceConnectorTest
// testNoCycles and testIdentityReplication) for flow source->target.
func TestIsCycle(t *testing.T) {
	dot := mustDefault(t)
	id := mustIdentity(t, "source")
	us := mustDefault(t, policy.WithSeparator("__"))
	tests := []struct {
		p     policy.ReplicationPolicy
		topic string
		want  bool
	}{
		{dot, "target.topic1", true},
		{dot, "target.source.topic1", true},
		{dot, "source.target.topic1", true},
		{dot, "source.target.source.topic1", true},
		{dot, "topic1", false},
		{dot, "source.topic1", false},
		{dot, "target.heartbeats", true},
		{dot, "heartbeats", false},
		{dot, "othersource.heartbeats", false},
		{dot, "target", false},
		{dot, "target.", false},
		{dot, ".target.x", true},
		{us, "target__topic1", true},
		{us, "target.topic1", false},
		{id, "target.heartbeats", true},
		{id, "source.target.heartbeats", true},
		{id, "heartbeats", false},
		{id, "othersource.heartbeats", false},
		{id, "topic1", false},
		{id, "target.topic1", false},
		{id, "source.topic1", false},
	}
	for _, tt := range tests {
		if got := policy.IsCycle(tt.p, "target", tt.topic); got != tt.want {
			t.Errorf("IsCycle(%T sep %q, target, %q) = %t, want %t", tt.p, tt.p.Separator(), tt.topic, got, tt.want)
		}
	}
	// Identity whose configured alias equals the target: every topic is a
	// cycle at the first step (the topic claims to come from the target).
	if !policy.IsCycle(mustIdentity(t, "target"), "target", "orders") {
		t.Error("identity with source alias = target: IsCycle(orders) = false, want true")
	}
}

func TestNewDefaultErrors(t *testing.T) {
	for _, sep := range []string{"", " ", "->", "é", "a/b"} {
		_, err := policy.NewDefault(policy.WithSeparator(sep))
		if !errors.Is(err, policy.ErrInvalidSeparator) {
			t.Errorf("NewDefault(WithSeparator(%q)) error = %v, want ErrInvalidSeparator", sep, err)
		}
		if _, err := policy.NewIdentity("a", policy.WithSeparator(sep)); !errors.Is(err, policy.ErrInvalidSeparator) {
			t.Errorf("NewIdentity(WithSeparator(%q)) error = %v, want ErrInvalidSeparator", sep, err)
		}
		if err := policy.ValidateOpts(policy.WithSeparator(sep)); !errors.Is(err, policy.ErrInvalidSeparator) {
			t.Errorf("ValidateOpts(WithSeparator(%q)) = %v", sep, err)
		}
	}
	for _, sep := range []string{".", "_", "__", "-", "--", "x"} {
		p, err := policy.NewDefault(policy.WithSeparator(sep), nil)
		if err != nil {
			t.Errorf("NewDefault(WithSeparator(%q)): %v", sep, err)
			continue
		}
		if p.Separator() != sep || !p.InternalTopicSeparatorEnabled() {
			t.Errorf("sep %q: Separator()=%q InternalTopicSeparatorEnabled()=%t", sep, p.Separator(), p.InternalTopicSeparatorEnabled())
		}
	}
}

func TestZeroValues(t *testing.T) {
	var d policy.Default
	var id policy.Identity
	got := []string{
		d.Separator(), d.FormatRemoteTopic("A", "t"), d.CheckpointsTopic("A"), d.OffsetSyncsTopic("B"),
		id.Separator(), id.FormatRemoteTopic("A", "t"), id.FormatRemoteTopic("A", "heartbeats"), id.CheckpointsTopic("A"),
	}
	want := []string{
		".", "A.t", "A.checkpoints.internal", "mm2-offset-syncs.B.internal",
		".", "t", "A.heartbeats", "A.checkpoints.internal",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("zero values (-want +got):\n%s", diff)
	}
	if !d.InternalTopicSeparatorEnabled() || !id.InternalTopicSeparatorEnabled() {
		t.Error("zero value: internal topic separator disabled")
	}
}

func TestFromConfig(t *testing.T) {
	tests := []struct {
		class, sep string
		isep       bool
		alias      string
		wantType   string
		wantCkpt   string // CheckpointsTopic("S")
		wantRemote string // FormatRemoteTopic("S", "orders")
		wantSource string // TopicSource("orders") if ok
	}{
		{"", "", true, "", "*policy.Default", "S.checkpoints.internal", "S.orders", ""},
		{"DefaultReplicationPolicy", "__", true, "", "*policy.Default", "S__checkpoints__internal", "S__orders", ""},
		{policy.DefaultPolicyClass, "__", false, "x", "*policy.Default", "S.checkpoints.internal", "S__orders", ""},
		{"  " + policy.DefaultPolicyClass + " ", "", true, "", "*policy.Default", "S.checkpoints.internal", "S.orders", ""},
		{"IdentityReplicationPolicy", "", true, "S", "*policy.Identity", "S.checkpoints.internal", "orders", "S"},
		{policy.IdentityPolicyClass, "_", true, "", "*policy.Identity", "S_checkpoints_internal", "orders", ""},
	}
	for _, tt := range tests {
		p, err := policy.FromConfig(tt.class, tt.sep, tt.isep, tt.alias)
		if err != nil {
			t.Errorf("FromConfig(%q, %q, %t, %q): %v", tt.class, tt.sep, tt.isep, tt.alias, err)
			continue
		}
		src, _ := p.TopicSource("orders")
		got := []string{typeName(p), p.CheckpointsTopic("S"), p.FormatRemoteTopic("S", "orders"), src}
		want := []string{tt.wantType, tt.wantCkpt, tt.wantRemote, tt.wantSource}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("FromConfig(%q, %q, %t, %q) (-want +got):\n%s", tt.class, tt.sep, tt.isep, tt.alias, diff)
		}
	}
	for _, class := range []string{"LegacyReplicationPolicy", "com.example.MyPolicy", "org.apache.kafka.connect.mirror.defaultreplicationpolicy"} {
		_, err := policy.FromConfig(class, "", true, "")
		if !errors.Is(err, policy.ErrUnknownPolicyClass) || !strings.Contains(err.Error(), class) {
			t.Errorf("FromConfig(%q) error = %v, want ErrUnknownPolicyClass naming the class", class, err)
		}
	}
	if _, err := policy.FromConfig("", "a b", true, ""); !errors.Is(err, policy.ErrInvalidSeparator) {
		t.Errorf("FromConfig bad separator error = %v", err)
	}
}

func typeName(p policy.ReplicationPolicy) string {
	switch p.(type) {
	case *policy.Default:
		return "*policy.Default"
	case *policy.Identity:
		return "*policy.Identity"
	}
	return "?"
}
