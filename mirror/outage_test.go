package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTargetOutageLongerThanDeliveryTimeoutRecovers (regression, found by
// review): with the target's producer configured with a delivery timeout
// (delivery.timeout.ms, which MM2 configurations commonly set; retries
// gives the same with kgo.ErrRecordRetries), an outage of the target longer
// than that timeout fails the records in flight with kgo.ErrRecordTimeout.
// That is transient: the unit's session restarts from its stored resume
// points and replication resumes once the target is back (it used to stop
// the partition for good).
func TestTargetOutageLongerThanDeliveryTimeoutRecovers(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic := p.Topic("outage")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, valueRecords(topic, "a", 0, 10)...)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 1
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.RecordDeliveryTimeout(time.Second)}}),
		WithFlow(fc))
	waitReplicated(t, m, 10)
	// The target rejects every write with a retriable error for 3 s.
	outage := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	time.AfterFunc(3*time.Second, outage.Remove)
	testcluster.Produce(t, &p.Source, valueRecords(topic, "b", 0, 10)...)
	time.Sleep(4 * time.Second) // the outage is over
	testcluster.Produce(t, &p.Source, valueRecords(topic, "c", 0, 10)...)
	testcluster.Eventually(t, 30*time.Second, "replication resumed after the outage", func() (bool, string) {
		ps := m.Status().Flows[0].Partitions
		return len(ps) == 1 && ps[0].Replicated == 30 && ps[0].State == StateRunning, fmt.Sprintf("%+v", ps)
	})
	var want []*kgo.Record
	for _, prefix := range []string{"a", "b", "c"} {
		want = append(want, valueRecords(topic, prefix, 0, 10)...)
	}
	lost, dups := missingValues(t, p, p.Source.Alias+"."+topic, want)
	if lost != 0 {
		t.Errorf("%d records lost across the outage", lost)
	}
	t.Logf("%d duplicates (replayed from the stored resume point)", dups)
}
