package mirror

import (
	"errors"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrkGSharedGroupIDRefused: two flows of one Mirror with the same
// group id on the same target are refused. They shared one group, whose
// leader assigned the slots of its own flow only: the other flow's member
// held no slot and copied nothing, with state RUNNING and no error (a
// breaker's finding: other->dst copied 0 of 400 records while src->dst
// held both slots). The default group ids differ, and explicit ones on
// different targets are accepted.
func TestBrkGSharedGroupIDRefused(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	other := WithCluster(ClusterConfig{Alias: "other", Client: p.Source.Opts()})
	fc := fastFlow(p)
	fc.GroupID = "shared"
	fc2 := fc
	fc2.Source = "other"
	_, err := newMirror(t, append(clusterOpts(p), other, WithFlow(fc), WithFlow(fc2))...)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *ConfigError", err)
	}
	const reason = `flows src->dst and other->dst both use group shared on dst: the group's leader assigns the slots of its own flow only, so the other flow replicates nothing; give each flow its own GroupID ("" is kmirror.<source>-><target>)`
	if ce.Key != "FlowConfig.GroupID" || ce.Value != "shared" || ce.Reason != reason {
		t.Errorf("error %q %q %q, want FlowConfig.GroupID, shared, %q", ce.Key, ce.Value, ce.Reason, reason)
	}
	// A flow whose explicit group id is another flow's default one.
	fc.GroupID, fc2.GroupID = "", "kmirror.src->dst"
	if _, err := newMirror(t, append(clusterOpts(p), other, WithFlow(fc), WithFlow(fc2))...); !errors.As(err, &ce) || ce.Value != "kmirror.src->dst" {
		t.Errorf("New with other->dst in src->dst's default group = %v, want a *ConfigError for kmirror.src->dst", err)
	}
	// Default group ids, and one group id on two targets, are accepted.
	fc2.GroupID = ""
	if _, err := newMirror(t, append(clusterOpts(p), other, WithFlow(fc), WithFlow(fc2))...); err != nil {
		t.Errorf("New with the default group ids = %v", err)
	}
	fc.GroupID = "shared"
	back := FlowConfig{Source: "dst", Target: "src", GroupID: "shared"}
	if _, err := newMirror(t, append(clusterOpts(p), WithFlow(fc), WithFlow(back))...); err != nil {
		t.Errorf("New with one group id on two targets = %v", err)
	}
	// A flow that runs nothing (no replication, no heartbeats) has no group.
	fc2.GroupID, fc2.Disabled, fc2.DisableHeartbeats = "shared", true, true
	if _, err := newMirror(t, append(clusterOpts(p), other, WithFlow(fc), WithFlow(fc2))...); err != nil {
		t.Errorf("New with a flow that runs nothing in the same group = %v", err)
	}
}
