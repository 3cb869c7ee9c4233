package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
)

// mergePolicy is DefaultReplicationPolicy except that every source topic
// listed in merge is written to one remote topic, <alias>.<into> (a
// many-to-one custom policy, allowed with AllowTopicCollisions).
type mergePolicy struct {
	policy.Default
	merge map[string]bool
	into  string
}

func (p mergePolicy) FormatRemoteTopic(sourceAlias, topic string) string {
	if p.merge[topic] {
		topic = p.into
	}
	return p.Default.FormatRemoteTopic(sourceAlias, topic)
}

// TestTailResumeMergedTopicsLoseNothing (adversarial round 2, LOSS): one
// flow writes two source topics into one remote topic (a many-to-one
// policy, AllowTopicCollisions). An application writes each event to both
// topics (same value, same timestamp: a dual write), so the topics hold
// equal records at equal offsets. The flow first copies only t2, then t1
// is added to its topic list. t1's partition has no resume point; the
// remote partition's last record of the flow is t2's copy of offset 19,
// and the source record of t1 at offset 19 is equal to it: the provenance
// header names the source cluster and the offset but not the topic, so
// the tail is taken as t1's and t1 starts at offset 20. t1's records 0-19
// are never copied.
func TestTailResumeMergedTopicsLoseNothing(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	t1, t2, merged := p.Topic("dual1"), p.Topic("dual2"), p.Topic("merged")
	remote := p.Source.Alias + "." + merged
	testcluster.CreateTopic(t, &p.Source, t1, 1, nil)
	testcluster.CreateTopic(t, &p.Source, t2, 1, nil)
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for i := 0; i < 20; i++ {
		for _, topic := range []string{t1, t2} {
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("event-%d", i)), Timestamp: base.Add(time.Duration(i) * time.Millisecond)})
		}
	}
	testcluster.Produce(t, &p.Source, recs...)
	def, _ := policy.NewDefault()
	fc := fastFlow(p)
	fc.Policy = mergePolicy{Default: *def, merge: map[string]bool{t1: true, t2: true}, into: merged}
	fc.AllowTopicCollisions = true
	fc.DisableCheckpoints = true
	fc.Topics = []string{t2}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 20)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	fc.Topics = []string{t1, t2}
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	// Wait for t1's partition to report offset 19 acknowledged, not for a
	// zero lag: a partition's lag stays 0 until its first fetch is
	// answered (PartitionStatus.Lag), and a late-started partition of an
	// otherwise idle unit waits for the fetch in flight (up to
	// fetchMaxWait), so "lag 0" alone passed before t1 was fetched (CI,
	// stop 30). With the loss this test guards against, t1 would start at
	// offset 20 and the check of the remote topic below fails.
	testcluster.Eventually(t, 30*time.Second, "t1 replicated to offset 19", func() (bool, string) {
		st := m.Status().Flows[0]
		for _, ps := range st.Partitions {
			if ps.Topic == t1 && ps.Replicated >= 20 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", st.Partitions)
	})
	time.Sleep(time.Second) // let anything t1 copies in excess land too
	var fromT1 []string
	for _, v := range tailValues(t, &p.Target, remote)[20:] {
		fromT1 = append(fromT1, v)
	}
	if want := valuesOf("event", 0, 20); strings.Join(fromT1, " ") != strings.Join(want, " ") {
		t.Fatalf("t1's copies on %s: %v, want %v (tail resume outcomes %v)", remote, fromT1, want, tailCounts(m))
	}
}
