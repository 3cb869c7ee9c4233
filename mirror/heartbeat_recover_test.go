package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestHeartbeatsTopicDeletedCreatedAgain and TestHeartbeatsTopicRecreated
// (found by a probe of the heartbeats): the emitter created the target's
// heartbeats topic once, at its start. Deleted on the target, it was never
// created again (a WARN every interval, the flow RUNNING); deleted and
// re-created, every heartbeat failed with UNKNOWN_TOPIC_ID until the
// process restarted (kgo keeps the ID it knows for a name). The emitter
// now creates a deleted topic again and takes a new client for a new
// topic ID: heartbeats resume by themselves.
func TestHeartbeatsTopicDeletedCreatedAgain(t *testing.T) {
	t.Parallel()
	heartbeatsRecover(t, false)
}

func TestHeartbeatsTopicRecreated(t *testing.T) {
	t.Parallel()
	heartbeatsRecover(t, true)
}

func heartbeatsRecover(t *testing.T, recreate bool) {
	p := testcluster.New(t, "a", "b")
	if p.Target.Fake == nil {
		t.Skip("deletes the target's heartbeats topic, which every test's flow shares on real brokers: runs on the embedded backend")
	}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	last := func() time.Time { return m.Status().Flows[0].LastHeartbeat }
	testcluster.Eventually(t, 30*time.Second, "a first heartbeat", func() (bool, string) { return !last().IsZero(), "none yet" })
	adm := testcluster.Admin(t, &p.Target)
	if _, err := adm.DeleteTopics(context.Background(), "heartbeats"); err != nil {
		t.Fatal(err)
	}
	if recreate {
		compact := "compact"
		testcluster.CreateTopic(t, &p.Target, "heartbeats", 1, map[string]*string{"cleanup.policy": &compact})
	}
	t0 := time.Now()
	testcluster.Eventually(t, 30*time.Second, "heartbeats written again after the topic was deleted", func() (bool, string) {
		return last().After(t0.Add(500 * time.Millisecond)), fmt.Sprintf("last heartbeat %v, deleted at %v", last(), t0)
	})
	tds, err := adm.ListTopics(context.Background(), "heartbeats")
	if err != nil || tds["heartbeats"].Err != nil {
		t.Fatalf("the heartbeats topic after the recovery: %v %v", err, tds["heartbeats"].Err)
	}
}

// TestHeartbeatWriteFailureInStatus (a probe's finding): a flow whose
// heartbeats the target refused was RUNNING with no error, and a
// heartbeats-only flow DISABLED with none: the failure showed only in a
// WARN line and a metric. It is now FlowStatus.HeartbeatError and, when
// the flow has no other error, its Error; both clear at the next heartbeat
// written.
func TestHeartbeatWriteFailureInStatus(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "a", "b")
	if p.Target.Fake == nil {
		t.Skip("refuses the target's writes to its heartbeats topic with kfake's faults: runs on the embedded backend")
	}
	reverse := FlowConfig{Source: p.Target.Alias, Target: p.Source.Alias, Disabled: true, EmitHeartbeatsInterval: 200 * time.Millisecond,
		AdminTimeout: 10 * time.Second}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)), WithFlow(reverse))...)
	testcluster.Eventually(t, 30*time.Second, "first heartbeats", func() (bool, string) {
		st := m.Status()
		return !st.Flows[0].LastHeartbeat.IsZero() && !st.Flows[1].LastHeartbeat.IsZero(), "none yet"
	})
	var hs []*kfake.FaultHandle
	for _, c := range []*kfake.Cluster{p.Target.Fake, p.Source.Fake} {
		hs = append(hs, c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "heartbeats", Err: kerr.TopicAuthorizationFailed, Count: -1}))
	}
	for i, want := range []State{StateRunning, StateDisabled} {
		testcluster.Eventually(t, 30*time.Second, "the refused heartbeats in the status", func() (bool, string) {
			fs := m.Status().Flows[i]
			ok := fs.State == want && strings.Contains(fs.HeartbeatError, "TOPIC_AUTHORIZATION_FAILED") &&
				strings.Contains(fs.HeartbeatError, "heartbeats on "+fs.Target) && strings.HasPrefix(fs.Error, "heartbeats failing since ") &&
				strings.Contains(fs.Error, "TOPIC_AUTHORIZATION_FAILED")
			return ok, fmt.Sprintf("%s: state %s error %q heartbeat error %q", fs.Name, fs.State, fs.Error, fs.HeartbeatError)
		})
	}
	for _, h := range hs {
		h.Remove()
	}
	for i := range 2 {
		testcluster.Eventually(t, 30*time.Second, "the error cleared by the next heartbeat", func() (bool, string) {
			fs := m.Status().Flows[i]
			return fs.HeartbeatError == "" && fs.Error == "", fmt.Sprintf("%s: error %q heartbeat error %q", fs.Name, fs.Error, fs.HeartbeatError)
		})
	}
}
