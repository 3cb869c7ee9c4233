package mirror

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNuGoRunNilContext: Run(nil) panicked in context.WithCancel while
// holding the Mirror's mutex, so the usual `defer m.Close(); return
// m.Run(ctx)` turned the panic into a goroutine blocked forever in Close
// (a new user's misuse). Run refuses a nil ctx with an error instead, and
// the Mirror can still be closed.
func TestNuGoRunNilContext(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	m, err := New(WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}),
		WithFlow(FlowConfig{Source: "a", Target: "b"}))
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // the misuse under test
	if err := m.Run(nil); err == nil || !strings.Contains(err.Error(), "nil context") {
		t.Fatalf("Run(nil) = %v, want an error naming the nil context", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close after Run(nil) did not return: the mutex is still held")
	}
	if err := m.Run(context.Background()); err != ErrClosed {
		t.Fatalf("Run after Close = %v, want ErrClosed", err)
	}
}

// TestNuGoRunZeroMirror: Run on a zero Mirror (a struct field never
// assigned New's result) returned nil at once, replicating nothing and
// saying nothing. It returns an error pointing at New.
func TestNuGoRunZeroMirror(t *testing.T) {
	t.Parallel()
	var m Mirror
	if err := m.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "make it with New") {
		t.Fatalf("Run on a zero Mirror = %v, want an error naming New", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestNuGoFatalErrorOnePrefix: a fatal configuration error found at start
// (a replication factor above the target's broker count) was returned by
// Run as "mirror: flow a->b: mirror: a->b.replication.factor=...": the
// flow's wrapping repeated the *ConfigError's own prefix. Run says
// "mirror:" once, and the *ConfigError is still found with errors.As.
func TestNuGoFatalErrorOnePrefix(t *testing.T) {
	t.Parallel()
	var seeds [2][]kgo.Opt
	for i, id := range []string{"nugo-a", "nugo-b"} {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		seeds[i] = []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	}
	m, err := New(WithCluster(ClusterConfig{Alias: "a", Client: seeds[0]}), WithCluster(ClusterConfig{Alias: "b", Client: seeds[1]}),
		WithFlow(FlowConfig{Source: "a", Target: "b", ReplicationFactor: 3}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = m.Run(ctx)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Run = %v, want a *ConfigError", err)
	}
	if msg := err.Error(); strings.Count(msg, "mirror:") != 1 || !strings.HasPrefix(msg, "mirror: flow a->b: a->b.replication.factor=") {
		t.Errorf("Run = %q, want one \"mirror:\" prefix: \"mirror: flow a->b: a->b.replication.factor=...\"", msg)
	}
}

// TestNuGoRefusesGroupOptions: a service passing its own kgo options to
// ClusterConfig (kgo.ConsumerGroup("svc") among them) had kmirror's
// clients join its group on the source, taking partitions from its
// consumers, while the flow stayed RETRYING with franz-go's "invalid
// direct-partition consuming option". New refuses a kgo.GroupOpt in any of
// a cluster's option lists, naming the cluster, the list and what to do.
func TestNuGoRefusesGroupOptions(t *testing.T) {
	t.Parallel()
	seeds := kgo.SeedBrokers("127.0.0.1:1")
	for _, tc := range []struct {
		field string
		cc    ClusterConfig
	}{
		{"Client", ClusterConfig{Alias: "a", Client: []kgo.Opt{seeds, kgo.ConsumerGroup("svc"), kgo.ConsumeTopics("orders")}}},
		{"Consumer", ClusterConfig{Alias: "a", Client: []kgo.Opt{seeds}, Consumer: []kgo.Opt{kgo.InstanceID("pod-0")}}},
		{"Producer", ClusterConfig{Alias: "a", Client: []kgo.Opt{seeds}, Producer: []kgo.Opt{kgo.SessionTimeout(time.Minute)}}},
		{"Admin", ClusterConfig{Alias: "a", Client: []kgo.Opt{seeds}, Admin: []kgo.Opt{kgo.DisableAutoCommit()}}},
	} {
		_, err := New(WithCluster(tc.cc), WithCluster(ClusterConfig{Alias: "b", Client: []kgo.Opt{seeds}}), WithFlow(FlowConfig{Source: "a", Target: "b"}))
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: New = %v, want a *ConfigError", tc.field, err)
			continue
		}
		if ce.Key != "ClusterConfig."+tc.field || ce.Value != "a" || !strings.Contains(ce.Reason, "consumer-group option") || !strings.Contains(ce.Reason, "FlowConfig.GroupID") {
			t.Errorf("%s: New = %v, want ClusterConfig.%s=\"a\" naming the consumer-group option and FlowConfig.GroupID", tc.field, err, tc.field)
		}
	}
	// Connection and consumer settings stay accepted.
	m, err := New(WithCluster(ClusterConfig{Alias: "a", Client: []kgo.Opt{seeds, kgo.ClientID("svc")}, Consumer: []kgo.Opt{kgo.FetchMaxWait(time.Second)}}),
		WithCluster(ClusterConfig{Alias: "b", Client: []kgo.Opt{seeds}, Producer: []kgo.Opt{kgo.ProducerLinger(0)}}), WithFlow(FlowConfig{Source: "a", Target: "b"}))
	if err != nil {
		t.Fatalf("New with connection and client settings: %v", err)
	}
	m.Close()
}
