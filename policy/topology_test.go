package policy_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/policy"
)

// TestCaseB25SeparatorInsideAlias: with separator "-" and aliases eu-prod /
// eu-dr, MM2 mis-parses eu-prod-heartbeats as coming from "eu". kmirror
// rejects such aliases up front.
func TestCaseB25SeparatorInsideAlias(t *testing.T) {
	dash := mustDefault(t, policy.WithSeparator("-"))
	// What goes wrong without validation: the source is mis-parsed, so the
	// reverse flow eu-dr->eu-prod does not see eu-prod-heartbeats as a
	// cycle and would replicate it again as eu-dr-eu-prod-heartbeats.
	if src, _ := dash.TopicSource("eu-prod-heartbeats"); src != "eu" {
		t.Fatalf("TopicSource(eu-prod-heartbeats) = %q, want the mis-parse %q", src, "eu")
	}
	if policy.IsCycle(dash, "eu-prod", "eu-prod-heartbeats") {
		t.Fatal("IsCycle unexpectedly detected the cycle despite the mis-parse")
	}
	for _, alias := range []string{"eu-prod", "eu-dr"} {
		err := policy.ValidateAlias(dash, alias)
		if !errors.Is(err, policy.ErrInvalidAlias) {
			t.Fatalf("ValidateAlias(sep -, %q) = %v, want ErrInvalidAlias", alias, err)
		}
		for _, part := range []string{alias, "separator", `"-"`, `"eu"`} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("error %q does not mention %s", err, part)
			}
		}
	}
	// The same aliases are fine with the default separator, and then the
	// topology of the scenario parses correctly.
	dot := mustDefault(t)
	for _, alias := range []string{"eu-prod", "eu-dr"} {
		if err := policy.ValidateAlias(dot, alias); err != nil {
			t.Errorf("ValidateAlias(sep ., %q) = %v", alias, err)
		}
	}
	if !policy.IsCycle(dot, "eu-prod", "eu-prod.heartbeats") {
		t.Error("flow eu-dr->eu-prod: eu-prod.heartbeats is not a cycle")
	}
	if src, ok := dot.TopicSource("eu-prod.heartbeats"); !ok || src != "eu-prod" {
		t.Errorf("TopicSource(eu-prod.heartbeats) = %q, %v; want eu-prod", src, ok)
	}
}

func TestValidateAlias(t *testing.T) {
	dot := mustDefault(t)
	us := mustDefault(t, policy.WithSeparator("__"))
	dash := mustDefault(t, policy.WithSeparator("-"))
	id := mustIdentity(t, "src")
	long := strings.Repeat("a", 223)
	tests := []struct {
		p       policy.ReplicationPolicy
		alias   string
		wantErr string // substring; "" = valid
	}{
		{dot, "us-west", ""},
		{dot, "A", ""},
		{dot, "prod_1", ""},
		{dot, long, ""},
		{dot, long + "a", "too long (224 bytes): derived topic name is 250 bytes"},
		{us, strings.Repeat("a", 221), ""},
		{us, strings.Repeat("a", 222), "too long"},
		{policy.Default{}, "", "must not be empty"},
		{dot, "", "must not be empty"},
		{dot, "us west", `character ' ' at index 2`},
		{dot, "us/west", `character '/' at index 2`},
		{dot, "é", `character 'é' at index 0`},
		{dot, "a\x00", `character '\x00' at index 1`},
		{dot, "a\xff", "character '\uFFFD' at index 1"},
		{dot, "__a", `must not start with "__" or "."`},
		{dot, ".a", `must not start with "__" or "."`},
		{us, "_a", ""},
		{dot, "us.west", `contains the replication separator "."`},
		{dot, "a.", `contains the replication separator "."`},
		{us, "us.west", ""},
		{us, "us__west", `contains the replication separator "__"`},
		{us, "us_", `ends with the start of the replication separator "__", so remote topic "us___heartbeats" would be attributed to cluster "us"`},
		{dash, "eu-prod", `contains the replication separator "-"`},
		{dash, "eu_prod", ""},
		{id, "us.west", `contains the replication separator "."`},
		{id, "us-west", ""},
		{nil, "us-west", ""},
		{nil, "us.west", "separator"},
		{badPolicy{}, "a", `parses remote topic "a.heartbeats" back as coming from "x"`},
	}
	for _, tt := range tests {
		err := policy.ValidateAlias(tt.p, tt.alias)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ValidateAlias(%T, %q) = %v, want nil", tt.p, tt.alias, err)
		case tt.wantErr != "" && (!errors.Is(err, policy.ErrInvalidAlias) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ValidateAlias(%T, %q) = %v, want ErrInvalidAlias containing %q", tt.p, tt.alias, err, tt.wantErr)
		case tt.wantErr != "" && tt.alias != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.alias)):
			t.Errorf("ValidateAlias(%T, %q) = %v: does not name the alias", tt.p, tt.alias, err)
		}
	}
}

// badPolicy is a custom policy that parses every remote topic as coming
// from "x".
type badPolicy struct{ policy.Default }

func (badPolicy) TopicSource(string) (string, bool) { return "x", true }

// loopPolicy claims every topic comes from "x" and is its own upstream, but
// whose upstream names differ from their input so that only the
// visited-source checks (and the hop bound) stop the walks.
type loopPolicy struct{ policy.Default }

func (loopPolicy) TopicSource(string) (string, bool) { return "x", true }
func (loopPolicy) UpstreamTopic(t string) (string, bool) {
	if t == "heartbeats" {
		return "x.heartbeats", true
	}
	return "heartbeats", true
}
func (loopPolicy) OriginalTopic(string) string       { return "heartbeats" }
func (p loopPolicy) IsHeartbeatsTopic(t string) bool { return policy.DefaultIsHeartbeatsTopic(p, t) }

func TestLoopingPolicyTerminates(t *testing.T) {
	p := loopPolicy{}
	if got := policy.DefaultOriginalTopic(p, "heartbeats"); got != "heartbeats" && got != "x.heartbeats" {
		t.Errorf("DefaultOriginalTopic on a looping policy returned %q", got)
	}
	if policy.IsCycle(p, "target", "heartbeats") {
		t.Error("IsCycle on a looping policy = true, want false after the hop bound")
	}
}

// TestEmptySeparatorPointsToIdentity: an empty separator (the widely copied
// trick for prefix-less remote topics) is refused with an error that names
// IdentityReplicationPolicy and the two property lines to write instead.
func TestEmptySeparatorPointsToIdentity(t *testing.T) {
	_, err := policy.NewDefault(policy.WithSeparator(""))
	if !errors.Is(err, policy.ErrInvalidSeparator) {
		t.Fatalf("NewDefault(WithSeparator(\"\")) = %v, want ErrInvalidSeparator", err)
	}
	for _, want := range []string{
		"must not be empty",
		"policy.NewIdentity",
		"replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
		"replication.policy.separator=.",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := policy.NewIdentity("a", policy.WithSeparator("")); !errors.Is(err, policy.ErrInvalidSeparator) {
		t.Errorf("NewIdentity(WithSeparator(\"\")) = %v, want ErrInvalidSeparator", err)
	}
	err = policy.ValidateAlias(nil, "")
	if !errors.Is(err, policy.ErrInvalidAlias) || !strings.Contains(err.Error(), "IdentityReplicationPolicy") {
		t.Errorf("ValidateAlias(\"\") = %v, want ErrInvalidAlias naming IdentityReplicationPolicy", err)
	}
}

// TestValidateAliasInNames: an alias that appears only inside topic names
// (a target alias in mm2-offset-syncs.<target>.internal) may contain the
// separator or start with "__"; it must still be a legal, short enough
// topic-name fragment.
func TestValidateAliasInNames(t *testing.T) {
	dot := mustDefault(t)
	long := strings.Repeat("a", 249-len("mm2-offset-syncs..internal"))
	tests := []struct {
		alias   string
		wantErr string
	}{
		{"us.west", ""},
		{"__dr", ""},
		{".dr", ""},
		{long, ""},
		{long + "b", `derived topic name "mm2-offset-syncs.` + long + `b.internal" is 250 bytes`},
		{"", "must not be empty"},
		{"dr site", `character ' ' at index 2`},
		{"dr/1", `character '/' at index 2`},
	}
	for _, tt := range tests {
		err := policy.ValidateAliasInNames(tt.alias, dot.OffsetSyncsTopic(tt.alias))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ValidateAliasInNames(%q) = %v, want nil", tt.alias, err)
		case tt.wantErr != "" && (!errors.Is(err, policy.ErrInvalidAlias) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ValidateAliasInNames(%q) = %v, want ErrInvalidAlias containing %q", tt.alias, err, tt.wantErr)
		case tt.wantErr != "" && tt.alias != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.alias)):
			t.Errorf("ValidateAliasInNames(%q) = %v: does not name the alias", tt.alias, err)
		}
	}
}

// TestNeverReplicated: internal topics, cycles and topics whose remote name
// is an internal topic's are never replicated, under the default and the
// identity policy; ordinary and heartbeats topics are left to the filters.
func TestNeverReplicated(t *testing.T) {
	def, err := policy.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	id, err := policy.NewIdentity("A")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		p     policy.ReplicationPolicy
		topic string
		want  bool
	}{
		{"ordinary", def, "orders", false},
		{"remote of a third cluster", def, "C.orders", false},
		{"heartbeats", def, "heartbeats", false},
		{"kafka internal", def, "__consumer_offsets", true},
		{"dot topic", def, ".hidden", true},
		{"mm2 offset syncs", def, "mm2-offset-syncs.B.internal", true},
		{"checkpoints of another flow", def, "C.checkpoints.internal", true},
		{"cycle", def, "B.orders", true},
		{"cycle two hops", def, "C.B.orders", true},
		{"remote name is the flow's checkpoints topic", def, "checkpoints.internal", true},
		{"identity ordinary", id, "orders", false},
		{"identity kafka internal", id, "__transaction_state", true},
		{"identity remote name internal", id, "A.checkpoints.internal", true},
		{"nil policy", nil, "B.orders", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := policy.NeverReplicated(tc.p, "A", "B", tc.topic); got != tc.want {
				t.Errorf("NeverReplicated(%s, A->B, %q) = %v, want %v", tc.name, tc.topic, got, tc.want)
			}
		})
	}
}
