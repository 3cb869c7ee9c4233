package mirror

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIdentityBothWaysWithoutProvenanceWarned (a breaker's finding): flows
// a->b and b->a that both keep topic names with the provenance header off
// copy a record of a topic both select back and forth without end (one
// record was copied 254 times in 3 s, with no warning). New now warns,
// once, naming both flows; not when either flow uses the default policy,
// or is disabled. With the header on one flow only the loop is not
// endless: that case has its own warning (duplicates,
// TestBrkLIdentityOneFlowWithoutHeaderWarned).
func TestIdentityBothWaysWithoutProvenanceWarned(t *testing.T) {
	flow := func(src, dst string, identityPolicy, noProvenance, disabled bool) FlowConfig {
		fc := FlowConfig{Source: src, Target: dst, Topics: []string{"orders"}, DisableProvenanceHeader: noProvenance, Disabled: disabled}
		if identityPolicy {
			fc.Policy = identity(t, src)
		}
		return fc
	}
	for _, c := range []struct {
		name  string
		flows []FlowConfig
		warn  int
	}{
		{"identity both ways, no provenance", []FlowConfig{flow("a", "b", true, true, false), flow("b", "a", true, true, false)}, 1},
		{"provenance on one flow", []FlowConfig{flow("a", "b", true, true, false), flow("b", "a", true, false, false)}, 0},
		{"default policy one way", []FlowConfig{flow("a", "b", false, true, false), flow("b", "a", true, true, false)}, 0},
		{"one flow disabled", []FlowConfig{flow("a", "b", true, true, false), flow("b", "a", true, true, true)}, 0},
		{"one way only", []FlowConfig{flow("a", "b", true, true, false), flow("a", "c", true, true, false)}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs logBuf
			opts := []Opt{WithLogger(logs.logger())}
			for _, alias := range []string{"a", "b", "c"} {
				opts = append(opts, WithCluster(ClusterConfig{Alias: alias, Client: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}}))
			}
			for _, fc := range c.flows {
				opts = append(opts, WithFlow(fc))
			}
			if _, err := New(opts...); err != nil {
				t.Fatalf("New: %v", err)
			}
			got := logs.lines("level=WARN", "copied back and forth without end", "a->b", "b->a")
			if len(got) != c.warn {
				t.Errorf("%d warnings naming a->b and b->a, want %d: %v", len(got), c.warn, got)
			}
		})
	}
}
