package mirrorprom_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/mirror/mirrorprom"
)

// TestNuGoRegisterAgainAfterClose: a service that rebuilds its Mirror in
// the same process (after a fatal error) on the same Registerer got only
// Prometheus's "duplicate metrics collector registration attempted" from
// New, though the first Mirror was closed: a closed Mirror's metrics stay
// registered. The error says so and what to do, and still matches
// prometheus.AlreadyRegisteredError.
func TestNuGoRegisterAgainAfterClose(t *testing.T) {
	reg := prometheus.NewRegistry()
	build := func() (*mirror.Mirror, error) {
		return mirror.New(mirror.WithCluster(mirror.ClusterConfig{Alias: "a", Client: seeds}),
			mirror.WithCluster(mirror.ClusterConfig{Alias: "b", Client: seeds}),
			mirror.WithFlow(mirror.FlowConfig{Source: "a", Target: "b"}), mirrorprom.WithRegisterer(reg))
	}
	m, err := build()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = build()
	if !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Fatalf("New after Close on the same registry = %v, want a prometheus.AlreadyRegisteredError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "closed one too") || !strings.Contains(msg, "registry of its own") {
		t.Errorf("New after Close on the same registry = %q, want it to say a closed Mirror's metrics stay registered and what to do", msg)
	}
	if _, err := mirror.New(mirror.WithCluster(mirror.ClusterConfig{Alias: "a", Client: seeds}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: "b", Client: seeds}),
		mirror.WithFlow(mirror.FlowConfig{Source: "a", Target: "b"}), mirrorprom.WithRegisterer(prometheus.NewRegistry())); err != nil {
		t.Fatalf("New on a registry of its own: %v", err)
	}
}
