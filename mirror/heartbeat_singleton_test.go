package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestHeartbeatStatusOnlyOnSingleton: a member that loses slot 0 (its
// session expired, a rebalance revoked it) stops its heartbeat emitter,
// but its Status kept the last heartbeat it wrote and its last heartbeat
// failure: its kmirror_heartbeat_age_seconds grew from then on, firing
// KmirrorHeartbeatStale for a member that no longer emits while the new
// holder of slot 0 emitted fine, and its Error kept saying "heartbeats
// failing since ...". Only the member holding the singleton duties
// reports heartbeats, as it alone reports the groups and the topic errors.
func TestHeartbeatStatusOnlyOnSingleton(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "a", "b")
	if p.Target.Fake == nil {
		t.Skip("refuses the target's writes to its heartbeats topic with kfake's faults: runs on the embedded backend")
	}
	fc := fastFlow(p)
	fc.Topics = []string{"nothing-matches-this"}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "a first heartbeat", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.Member.Singleton && !fs.LastHeartbeat.IsZero(), fmt.Sprintf("%+v", fs.Member)
	})
	fault := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "heartbeats", Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer fault.Remove()
	testcluster.Eventually(t, 30*time.Second, "the refused heartbeats in the status", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.HeartbeatError != "" && !fs.HeartbeatErrorSince.IsZero(), fmt.Sprintf("error %q", fs.Error)
	})
	// What the group's callback does when the member's session expired.
	f := m.flows[0]
	f.onLost(context.Background(), nil, map[string][]int32{f.unitsTopic: {0}})
	fs := m.Status().Flows[0]
	if fs.Member.Singleton || !fs.LastHeartbeat.IsZero() || fs.HeartbeatError != "" || !fs.HeartbeatErrorSince.IsZero() || fs.Error != "" {
		t.Errorf("after losing slot 0: singleton %t, last heartbeat %v, heartbeat error %q since %v, error %q; want no heartbeat reported",
			fs.Member.Singleton, fs.LastHeartbeat, fs.HeartbeatError, fs.HeartbeatErrorSince, fs.Error)
	}
	// Slot 0 back (what the group's assignment does): the heartbeats still
	// fail, since the new emitter's first failure, not since the old one's
	// (the failure kept from before dated the gauge back).
	regained := time.Now()
	f.unitsMu.Lock()
	f.startSingleton()
	f.unitsMu.Unlock()
	testcluster.Eventually(t, 30*time.Second, "the new emitter's failure", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.Member.Singleton && fs.HeartbeatError != "", fmt.Sprintf("singleton %t error %q", fs.Member.Singleton, fs.HeartbeatError)
	})
	if fs := m.Status().Flows[0]; fs.HeartbeatErrorSince.Before(regained) {
		t.Errorf("heartbeats failing since %v, before slot 0 came back at %v", fs.HeartbeatErrorSince, regained)
	}
}
