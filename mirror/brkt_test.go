package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrkTInvalidRecordAdviceAfterPolicySynced: the source topic (and so
// the remote topic) starts with cleanup.policy=delete, which discovery
// reads; the source topic is then made compact and config sync copies
// that to the remote topic, which now refuses the source's older keyless
// record. The advice said the remote topic "has cleanup.policy=delete,
// which takes records without a key" and blamed a broker-side validation:
// discovery reads a topic's policy again only at a full refresh
// (refresh.topics.interval.seconds, 10 minutes by default), while config
// sync changed it. Config sync's own writes of cleanup.policy now update
// what the advice reads.
func TestBrkTInvalidRecordAdviceAfterPolicySynced(t *testing.T) {
	t.Parallel()
	p, topic, remote := keylessOnDeletePair(t)
	compact := "compact"
	recs := keylessAt4(topic)
	produceWith(t, &p.Source, kgo.NoCompression(), recs[:4])
	fc := recoveryFlow(p, topic)
	fc.RefreshTopicsInterval = time.Hour // no full re-read of the remote topic's configs
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Eventually(t, 30*time.Second, "the keyed records copied, the delete policy read", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.Replicated == 4 && ps.Lag == 0 && m.flows[0].cleanupPolicy(remote) == "delete", fmt.Sprintf("%+v", ps)
	})
	if _, err := testcluster.Admin(t, &p.Source).AlterTopicConfigs(context.Background(),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &compact}}, topic); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "config sync made the remote topic compact", remotePolicyIs(t, p, remote, compact))
	produceWith(t, &p.Source, kgo.NoCompression(), recs[4:])
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 4", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && ps.Replicated == 4, fmt.Sprintf("%+v", ps)
	})
	wantCompactAdvice(t, m, remote, 4)
}

// TestBrkTInvalidRecordAdviceAfterRecreation: the remote topic, created
// with cleanup.policy=delete as its source topic then was, is deleted on
// the target after the source topic was made compact (config sync off),
// and the flow creates it again, compact. Discovery had read its policy
// and did not read it again before a full refresh, so the advice for the
// source's keyless record said the remote topic "has
// cleanup.policy=delete, which takes records without a key". The policy
// the flow creates a remote topic with is what the advice reads now.
func TestBrkTInvalidRecordAdviceAfterRecreation(t *testing.T) {
	t.Parallel()
	p, topic, remote := keylessOnDeletePair(t)
	compact := "compact"
	produceWith(t, &p.Source, kgo.NoCompression(), []*kgo.Record{{Topic: topic, Key: []byte("k0"), Value: []byte("v0")}})
	fc := recoveryFlow(p, topic)
	fc.RefreshTopicsInterval = time.Hour // no full re-read of the remote topic's configs
	fc.DisableTopicConfigSync = true
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Eventually(t, 30*time.Second, "the keyed record copied, the delete policy read", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.Replicated == 1 && ps.Lag == 0 && m.flows[0].cleanupPolicy(remote) == "delete", fmt.Sprintf("%+v", ps)
	})
	if _, err := testcluster.Admin(t, &p.Source).AlterTopicConfigs(context.Background(),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &compact}}, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := testcluster.Admin(t, &p.Target).DeleteTopics(context.Background(), remote); err != nil {
		t.Fatal(err)
	}
	isCompact := remotePolicyIs(t, p, remote, compact)
	testcluster.Eventually(t, 30*time.Second, "the flow created the remote topic again, compact", func() (bool, string) {
		m.flows[0].wakeRefresh() // a discovery without a full refresh, as a unit finding the topic gone asks for
		return isCompact()
	})
	produceWith(t, &p.Source, kgo.NoCompression(), []*kgo.Record{{Topic: topic, Value: []byte("v1")}})
	// The new remote topic is refilled from offset 0: the batch refused
	// holds the keyless record at offset 1.
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && strings.Contains(ps.Error, "INVALID_RECORD"), fmt.Sprintf("%+v", ps)
	})
	wantCompactAdvice(t, m, remote, 1)
}

// keylessOnDeletePair returns a kfake pair with source topic "keyless" (1
// partition, cleanup.policy=delete, as its remote topic gets) and the
// remote topic's name, whose batches holding a record without a key the
// target refuses with INVALID_RECORD (refuseKeyless).
func keylessOnDeletePair(t *testing.T) (p *testcluster.Pair, topic, remote string) {
	t.Helper()
	p = testcluster.NewFakePair(t, "src", "dst")
	topic = p.Topic("keyless")
	remote = p.Source.Alias + "." + topic
	del := "delete"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"cleanup.policy": &del})
	refuseKeyless(p, remote)
	return p, topic, remote
}

// remotePolicyIs is a testcluster.Eventually condition: remote's
// cleanup.policy on p's target is want.
func remotePolicyIs(t *testing.T, p *testcluster.Pair, remote, want string) func() (bool, string) {
	return func() (bool, string) {
		rcs, err := testcluster.Admin(t, &p.Target).DescribeTopicConfigs(context.Background(), remote)
		if err != nil {
			return false, err.Error()
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				return false, rc.Err.Error()
			}
			for _, c := range rc.Configs {
				if c.Key == "cleanup.policy" && c.Value != nil {
					return *c.Value == want, *c.Value
				}
			}
		}
		return false, "no cleanup.policy"
	}
}

// wantCompactAdvice checks that partition 0's error blames the record
// without a key at source offset off on remote's cleanup.policy=compact,
// and never says cleanup.policy=delete.
func wantCompactAdvice(t *testing.T, m *Mirror, remote string, off int) {
	t.Helper()
	got := partStatus(m, 0).Error
	want := fmt.Sprintf("the record at offset %d has no key, which a topic with cleanup.policy=compact refuses (%s has cleanup.policy=compact)", off, remote)
	if !strings.Contains(got, want) || strings.Contains(got, "cleanup.policy=delete") {
		t.Errorf("partition error:\n%s\nwant it to say %q, and not cleanup.policy=delete", got, want)
	}
}

// TestBrkTLongAliasesReplicate: aliases of 130 characters each (remote
// topic names stay within Kafka's 249) made the client id kmirror gives
// its clients, "kmirror|<source>-><target>", 270 bytes long; franz-go
// takes at most 256, so every client of the flow refused itself and
// nothing was replicated, while New accepted the configuration. The id is
// cut to franz-go's limit now.
func TestBrkTLongAliasesReplicate(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Topic("longalias")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceN(t, &p.Source, topic, 0, 5)
	a, b := strings.Repeat("a", 130), strings.Repeat("b", 130)
	fc := recoveryFlow(p, topic)
	fc.Source, fc.Target = a, b
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: a, Client: p.Source.Opts()}), WithCluster(ClusterConfig{Alias: b, Client: p.Target.Opts()}),
		WithFlow(fc), withPartRetryFirst(200*time.Millisecond))
	testcluster.Eventually(t, 30*time.Second, "the records copied", func() (bool, string) {
		st := m.Status().Flows[0]
		if len(st.Partitions) != 1 {
			return false, fmt.Sprintf("%+v", st)
		}
		ps := st.Partitions[0]
		return ps.State == StateRunning && ps.SourceEnd == 5 && ps.Lag == 0 && !ps.LagUnknown, fmt.Sprintf("%+v", st)
	})
	if got := len(testcluster.ReadAll(t, &p.Target, a+"."+topic)[0]); got != 5 {
		t.Errorf("the remote partition holds %d records, want 5", got)
	}
}
