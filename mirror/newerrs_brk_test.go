package mirror

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNewReportsEveryErrorOnce (found by a breaker): New's list of every
// independent configuration error (TestNewReportsEveryError) missed some
// and repeated others:
//   - a nil kgo.Opt in a ClusterConfig's option lists made New panic (in
//     kgo.ValidateOpts) instead of naming the list;
//   - once any error was found, no later flow was built, so the topic,
//     group and config-exclude regexes of the flows after it were not
//     checked: a second flow's bad regex, or one next to a bad cluster
//     alias, showed up only in the next run;
//   - a cluster without client options was reported once per flow using
//     it, and a flow configured three times was "configured twice" twice.
func TestNewReportsEveryErrorOnce(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	a := WithCluster(ClusterConfig{Alias: "a", Client: seeds})
	b := WithCluster(ClusterConfig{Alias: "b", Client: seeds})
	c := WithCluster(ClusterConfig{Alias: "c", Client: seeds})
	ab := FlowConfig{Source: "a", Target: "b"}
	for _, tc := range []struct {
		name string
		opts []Opt
		want []string // Key=Value of each error, in order
	}{
		{"a nil client option", []Opt{WithCluster(ClusterConfig{Alias: "a", Client: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1"), nil}}), b, WithFlow(ab)},
			[]string{"a="}},
		{"a nil consumer option and a bad field", []Opt{WithCluster(ClusterConfig{Alias: "a", Client: seeds, Consumer: []kgo.Opt{nil}}), b,
			WithFlow(FlowConfig{Source: "a", Target: "b", Tasks: -1})},
			[]string{"a->b.tasks.max=-1", "a="}},
		{"two flows' bad regexes", []Opt{a, b, WithFlow(FlowConfig{Source: "a", Target: "b", Topics: []string{"("}}),
			WithFlow(FlowConfig{Source: "b", Target: "a", Groups: []string{"["}})},
			[]string{"a->b.topics=(", "b->a.groups=["}},
		{"a bad regex next to an empty alias", []Opt{a, b, WithCluster(ClusterConfig{Alias: ""}),
			WithFlow(FlowConfig{Source: "a", Target: "b", TopicsExclude: []string{"*x"}})},
			[]string{"clusters=", "a->b.topics.exclude=*x"}},
		{"a cluster without client options in two flows", []Opt{WithCluster(ClusterConfig{Alias: "a"}), b, c,
			WithFlow(ab), WithFlow(FlowConfig{Source: "a", Target: "c"})},
			[]string{"a->b=a"}},
		{"a flow configured three times", []Opt{a, b, WithFlow(ab), WithFlow(ab), WithFlow(ab)},
			[]string{"a->b="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				var m *Mirror
				if m, err = New(tc.opts...); m != nil {
					m.Close()
				}
			}()
			var got []string
			var ces *ConfigErrors
			var ce *ConfigError
			switch {
			case errors.As(err, &ces) && len(ces.Errs) > 1:
				for _, ce := range ces.Errs {
					got = append(got, ce.Key+"="+ce.Value)
				}
			case errors.As(err, &ce):
				got = []string{ce.Key + "=" + ce.Value}
			default:
				t.Fatalf("New: %v (%T), want configuration errors %q", err, err, tc.want)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s\n(%v)", strings.Join(got, "\n"), strings.Join(tc.want, "\n"), err)
			}
		})
	}
}

// TestNewNamesEmptyAndFlowNameAliases (found by a breaker): a FlowConfig
// with neither Source nor Target set was refused as `->: a flow's source
// and target must be different clusters`, and one with the flow name
// "a->b" in both fields the same way, hiding the hint New has for each
// (an empty alias; a flow name where an alias belongs). The same-cluster
// error is kept for a real alias.
func TestNewNamesEmptyAndFlowNameAliases(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	clusters := []Opt{WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds})}
	for _, tc := range []struct {
		name string
		fc   FlowConfig
		want []string // each error's message, in order
	}{
		{"no alias set", FlowConfig{}, []string{
			`FlowConfig.Source: empty: set it to the alias of the flow's source cluster (configured: [a b]) (flow ->)`,
			`FlowConfig.Target: empty: set it to the alias of the flow's target cluster (configured: [a b]) (flow ->)`}},
		{"a flow name in both fields", FlowConfig{Source: "a->b", Target: "a->b"}, []string{
			`FlowConfig.Source="a->b": Source is one cluster alias, not a flow: write Source: "a", Target: "b"`,
			`FlowConfig.Target="a->b": Target is one cluster alias, not a flow: write Source: "a", Target: "b"`}},
		{"one cluster", FlowConfig{Source: "a", Target: "a"}, []string{
			`a->a="a": a flow's source and target must be different clusters`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(append(clusters, WithFlow(tc.fc))...)
			var got []string
			var ces *ConfigErrors
			var ce *ConfigError
			switch {
			case errors.As(err, &ces) && len(ces.Errs) > 1:
				for _, ce := range ces.Errs {
					got = append(got, strings.TrimPrefix(ce.Error(), "mirror: "))
				}
			case errors.As(err, &ce):
				got = []string{strings.TrimPrefix(ce.Error(), "mirror: ")}
			default:
				t.Fatalf("New: %v (%T)", err, err)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
