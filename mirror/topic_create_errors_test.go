package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRemoteTopicCollidingOnTargetNamesTheTopic: source topic a.b was
// replaced by a_b (Kafka keeps no two names differing only by '.' and
// '_'); the target still holds src.a.b, the old topic's remote topic, so
// creating src.a_b fails with INVALID_TOPIC_EXCEPTION. The topic error
// used to say only "The request attempted to perform an operation on an
// invalid topic": it names the colliding topic and what to do now, and the
// other topic replicates.
func TestRemoteTopicCollidingOnTargetNamesTheTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	good, renamed := p.Topic("good"), p.Topic("a_b")
	old := p.Source.Alias + "." + p.Topic("a.b")
	remote := p.Source.Alias + "." + renamed
	testcluster.CreateTopic(t, &p.Target, old, 1, nil)
	for _, tn := range []string{good, renamed} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
	}
	testcluster.Produce(t, &p.Source, append(valueRecords(good, "g", 0, 3), valueRecords(renamed, "r", 0, 4)...)...)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	broker := "" // kfake gives no message
	if p.Real {
		broker = fmt.Sprintf(" (broker: Topic '%s' collides with existing topic: %s)", remote, old)
	}
	wantErr := fmt.Sprintf("creating %s on %s: %s%s; %s collides with topic %s on %s (Kafka treats '.' and '_' in topic names alike): delete or rename %s there, or exclude %s with topics.exclude",
		remote, p.Target.Alias, kerr.InvalidTopicException, broker, remote, old, p.Target.Alias, old, renamed)
	testcluster.Eventually(t, 30*time.Second, "good replicated, a_b's collision named", func() (bool, string) {
		fs := m.Status().Flows[0]
		gp, ok := partitionOf(fs, good)
		return ok && gp.Replicated == 3 && len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Error == wantErr && fs.TopicErrors[0].Lag == 4 && fs.State == StateRunning,
			fmt.Sprintf("%s %+v", fs.State, fs.TopicErrors)
	})
}

// TestRemoteTopicConfigRefusedNamesTheKeys: the target refuses to create
// a remote topic with a config copied from the source topic
// (INVALID_CONFIG: remote.storage.enable on a target without tiered
// storage, say). The topic error used to say only "Configuration is
// invalid": it names the keys copied and the setting that leaves one out.
func TestRemoteTopicConfigRefusedNamesTheKeys(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		// A real source refuses remote.storage.enable without tiered
		// storage as the target does; only kfake's fault makes the
		// target alone refuse it.
		t.Skip("needs kfake's Fault hook: a target alone refusing a copied config")
	}
	tiered := p.Topic("tiered")
	remote := p.Source.Alias + "." + tiered
	on, ret := "true", "86400000"
	testcluster.CreateTopic(t, &p.Source, tiered, 1, map[string]*string{"remote.storage.enable": &on, "retention.ms": &ret})
	fault := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: remote, Err: kerr.InvalidConfig, Count: -1})
	testcluster.Produce(t, &p.Source, valueRecords(tiered, "t", 0, 2)...)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	wantErr := fmt.Sprintf("creating %s on %s: %s; the target refuses a config copied from %s (remote.storage.enable, retention.ms): leave the key out with config.properties.exclude, or create %s yourself",
		remote, p.Target.Alias, kerr.InvalidConfig, tiered, remote)
	testcluster.Eventually(t, 30*time.Second, "the refused configs named", func() (bool, string) {
		fs := m.Status().Flows[0]
		return len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Error == wantErr && fs.TopicErrors[0].Lag == 2, fmt.Sprintf("%+v", fs.TopicErrors)
	})
	fault.Remove()
	waitReplicated(t, m, 2)
	rcs, err := testcluster.Admin(t, &p.Target).DescribeTopicConfigs(context.Background(), remote)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rcs[0].Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			got[c.Key] = c.MaybeValue()
		}
	}
	if got["retention.ms"] != ret || got["remote.storage.enable"] != on {
		t.Errorf("remote topic configs %v, want retention.ms=%s remote.storage.enable=%s", got, ret, on)
	}
}
