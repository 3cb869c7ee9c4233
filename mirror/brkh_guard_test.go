package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBrkHOperatorGuardOnCreatedRemoteKept: kmirror creates the remote
// topic without the source topic's message.timestamp.after.max.ms (the
// default exclude list), then an operator (or a provisioning tool that sets
// it on every topic) sets the same value on the remote topic. Config sync
// deleted it at its next round, and again each time it was set (taken for
// a guard an earlier kmirror copied), although this flow created the topic
// and copied no guard: it stays now, like any setting made on the target.
func TestBrkHOperatorGuardOnCreatedRemoteKept(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Topic("guarded")
	remote := p.Source.Alias + "." + topic
	hour := "3600000"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{afterKey: &hour})
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 20*time.Second, "remote topic created", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 1, ""
	})
	if g := guardsOf(t, &p.Target, remote); len(g) != 0 {
		t.Fatalf("guards copied at creation: %v", g)
	}
	setTopicConfig(t, &p.Target, remote, afterKey, hour)
	// Each config sync round describes the source topic, then the remote
	// topic: three rounds begun after the setting saw it.
	rounds := p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeConfigs}, Resource: topic, Observe: true, Count: -1})
	defer rounds.Remove()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rounds.Wait(ctx, 3); err != nil {
		t.Fatalf("three config sync rounds: %v (%d)", err, rounds.Hits())
	}
	if diff := cmp.Diff(map[string]string{afterKey: hour}, guardsOf(t, &p.Target, remote)); diff != "" {
		t.Errorf("the operator's guard on %s (-want +got):\n%s", remote, diff)
	}
}
