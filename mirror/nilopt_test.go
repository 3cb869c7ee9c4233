package mirror

import (
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
