package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

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
