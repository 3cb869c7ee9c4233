package mirror

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNewSkipsNilOpt: a nil Opt (an option left unset in a list built
// conditionally) made New panic with a nil pointer dereference, where every
// other package of the module (remoteclusterutils, policy, checkpoint's
// stores) skips nil options. New and ParseProperties skip them too.
func TestNewSkipsNilOpt(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	var none Opt
	m, err := New(none, WithCluster(ClusterConfig{Alias: "a", Client: seeds}), nil,
		WithCluster(ClusterConfig{Alias: "b", Client: seeds}), WithFlow(FlowConfig{Source: "a", Target: "b"}))
	if err != nil {
		t.Fatalf("New with nil options: %v", err)
	}
	if got := m.Status().Flows[0].Name; got != "a->b" {
		t.Errorf("flow %q, want a->b", got)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := New(nil); err == nil || !strings.Contains(err.Error(), "no replication flow") {
		t.Errorf("New(nil) = %v, want the no-flow ConfigError", err)
	}
	p, err := ParseProperties(strings.NewReader("clusters=a,b\na.bootstrap.servers=127.0.0.1:1\nb.bootstrap.servers=127.0.0.1:1\na->b.enabled=true\n"), nil)
	if err != nil {
		t.Fatalf("ParseProperties with a nil LoadOpt: %v", err)
	}
	if p == nil {
		t.Fatal("ParseProperties returned nil")
	}
}

// TestNewNamesMistakenFlowNames: WithFlowSettings for a flow no WithFlow
// configures was accepted silently (its settings never published), and a
// flow's alias in another case than its cluster's was refused under the
// key "a->B" with no hint (a new user's tries, stop 46). Both name the bad
// value and what to write.
func TestNewNamesMistakenFlowNames(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	clusters := []Opt{WithCluster(ClusterConfig{Alias: "A", Client: seeds}), WithCluster(ClusterConfig{Alias: "B", Client: seeds})}
	for _, tc := range []struct {
		name string
		opts []Opt
		want string
	}{
		{"settings of an unknown flow", []Opt{WithFlow(FlowConfig{Source: "A", Target: "B"}), WithFlowSettings("A->C", map[string]string{"x": "y"})},
			`mirror: WithFlowSettings="A->C": no such flow: the flows are ["A->B"] (names are "source->target")`},
		{"alias in another case", []Opt{WithFlow(FlowConfig{Source: "a", Target: "B"})},
			`mirror: FlowConfig.Source="a": unknown source cluster alias (configured: [A B]): aliases are case-sensitive, did you mean "A"? (flow a->B)`},
		{"unknown target", []Opt{WithFlow(FlowConfig{Source: "A", Target: "C"})},
			`mirror: FlowConfig.Target="C": unknown target cluster alias (configured: [A B]) (flow A->C)`},
	} {
		_, err := New(append(slices.Clone(clusters), tc.opts...)...)
		var ce *ConfigError
		if !errors.As(err, &ce) || err.Error() != tc.want {
			t.Errorf("%s: %v, want the ConfigError %q", tc.name, err, tc.want)
		}
	}
}
