package mirror

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClientMetadataAges: a flow's clients refresh their metadata unasked
// every 5 minutes and the units' producers every 30 s, unless the
// cluster's options (metadata.max.age.ms) or the role's say otherwise.
func TestClientMetadataAges(t *testing.T) {
	f := &flow{name: "src->dst", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	seed := kgo.SeedBrokers("127.0.0.1:1")
	for _, c := range []struct {
		name    string
		cluster []kgo.Opt
		role    []kgo.Opt
		opts    func(ClusterConfig, []kgo.Opt, ...kgo.Opt) []kgo.Opt
		want    time.Duration
	}{
		{"client", nil, nil, f.clientOpts, 5 * time.Minute},
		{"replication producer", nil, nil, f.replicationProducerOpts, 30 * time.Second},
		{"client, cluster's metadata.max.age.ms", []kgo.Opt{kgo.MetadataMaxAge(time.Minute)}, nil, f.clientOpts, time.Minute},
		{"replication producer, cluster's metadata.max.age.ms", []kgo.Opt{kgo.MetadataMaxAge(time.Minute)}, nil, f.replicationProducerOpts, time.Minute},
		{"replication producer, producer's metadata.max.age.ms", nil, []kgo.Opt{kgo.MetadataMaxAge(2 * time.Minute)}, f.replicationProducerOpts, 2 * time.Minute},
	} {
		cl, err := kgo.NewClient(c.opts(ClusterConfig{Alias: "dst", Client: c.cluster}, c.role, seed)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := cl.OptValue(kgo.MetadataMaxAge); got != c.want {
			t.Errorf("%s: metadata max age %v, want %v", c.name, got, c.want)
		}
		cl.Close()
	}
}
