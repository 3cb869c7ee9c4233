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
// New, though the first Mirror was closed: a closed Mirror's metrics
// stayed registered. Close now unregisters them (the new Mirror registers
// on the same registry); while the first Mirror is not closed, the error
// says whose metrics they are and what to do, and still matches
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
	_, err = build()
	if !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Fatalf("New beside a Mirror not closed, on the same registry = %v, want a prometheus.AlreadyRegisteredError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "close it first") || !strings.Contains(msg, "registry of its own") {
		t.Errorf("New beside a Mirror not closed = %q, want it to say what to do", msg)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := build()
	if err != nil {
		t.Fatalf("New after Close on the same registry: %v", err)
	}
	defer m2.Close()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) == 0 {
		t.Errorf("the registry gathers nothing after the second Mirror registered")
	}
	if err := m.Close(); err != nil { // Close again: releases nothing of the second Mirror's
		t.Fatal(err)
	}
	if _, err := build(); !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Errorf("New beside the second Mirror after the first's second Close = %v, want a prometheus.AlreadyRegisteredError (its metrics still registered)", err)
	}
}
