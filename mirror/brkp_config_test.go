package mirror

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrkPConsumeOptionsRefused: a service's consumer options passed in a
// ClusterConfig (kgo.ConsumeTopics, kgo.ConsumeRegex, ...). New accepted
// them; kmirror's consumers then fetched topics nobody polled, ignored
// every partition a slot added (ConsumeRegex), failed to join the flow's
// group (ConsumePartitions) or silently ignored the start offset. New now
// refuses each, naming the option and the cluster and what to set instead.
func TestBrkPConsumeOptionsRefused(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	for _, c := range []struct {
		opts    []kgo.Opt
		name    string
		instead string
	}{
		{[]kgo.Opt{kgo.ConsumeTopics("orders")}, "kgo.ConsumeTopics", "FlowConfig.Topics"},
		{[]kgo.Opt{kgo.ConsumeTopics("orders.*"), kgo.ConsumeRegex()}, "kgo.ConsumeTopics", "FlowConfig.Topics"},
		{[]kgo.Opt{kgo.ConsumeRegex()}, "kgo.ConsumeRegex", "FlowConfig.Topics"},
		{[]kgo.Opt{kgo.ConsumeRegex(), kgo.ConsumeExcludeTopics("x")}, "kgo.ConsumeRegex", "FlowConfig.Topics"},
		{[]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}})}, "kgo.ConsumePartitions", "kmirror assigns their partitions"},
		{[]kgo.Opt{kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd())}, "kgo.ConsumeResetOffset", "FlowConfig.StartOffset"},
		{[]kgo.Opt{kgo.ConsumeStartOffset(kgo.NewOffset().At(5))}, "kgo.ConsumeStartOffset", "FlowConfig.StartOffset"},
	} {
		for _, field := range []string{"Client", "Consumer", "Producer"} {
			src := ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}
			switch field {
			case "Client":
				src.Client = append(src.Client, c.opts...)
			case "Consumer":
				src.Consumer = c.opts
			case "Producer":
				src.Producer = c.opts
			}
			_, err := New(WithCluster(src), WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}), WithFlow(fastFlow(p)))
			want := "cluster src has " + c.name + ": kmirror's consumers choose their topics, partitions and start offsets themselves"
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != "ClusterConfig."+field || ce.Value != "src" || !strings.Contains(ce.Reason, want) || !strings.Contains(ce.Reason, c.instead) {
				t.Errorf("%s in %s: New: %v, want a ConfigError for ClusterConfig.%s saying %q and %q", c.name, field, err, field, want, c.instead)
			}
		}
	}
	// Consumer options that tune a client without choosing what it reads
	// stay allowed.
	m, err := New(WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(), Consumer: []kgo.Opt{
		kgo.FetchMaxWait(100e6), kgo.Rack("a"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	}}), WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}), WithFlow(fastFlow(p)))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}
