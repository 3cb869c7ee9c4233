package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// failTwoTopics runs a one-member Mirror replicating two one-partition
// topics whose first produce to the target each fails with INVALID_RECORD
// (the record's own error: FAILED until an operator restarts it), and
// returns the Mirror, the flow's name and the two source topics once both
// partitions are FAILED.
func failTwoTopics(t *testing.T, p *testcluster.Pair) (*Mirror, string, [2]string) {
	t.Helper()
	topics := [2]string{p.Topic("ra"), p.Topic("rb")}
	for _, tp := range topics {
		testcluster.CreateTopic(t, &p.Source, tp, 1, nil)
		p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: p.Source.Alias + "." + tp, Partitions: []int32{0}, Err: kerr.InvalidRecord, Count: 1})
	}
	fc := recoveryFlow(p, topics[0])
	fc.Topics = topics[:]
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	for _, tp := range topics {
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: tp, Partition: 0, Value: []byte("v")})
	}
	testcluster.Eventually(t, 30*time.Second, "both partitions FAILED", func() (bool, string) {
		return states(m) == fmt.Sprintf("%s[0] FAILED, %s[0] FAILED", topics[0], topics[1]), states(m)
	})
	return m, p.Source.Alias + "->" + p.Target.Alias, topics
}

// states lists the first flow's partitions and their states.
func states(m *Mirror) string {
	s := ""
	for i, ps := range m.Status().Flows[0].Partitions {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s[%d] %s", ps.Topic, ps.Partition, ps.State)
	}
	return s
}

// TestRestartRequestsReadInOneFetchEachApply (regression): two restart
// requests written in quick succession by another member (one for each
// topic: two POSTs a few milliseconds apart) reach a member in one fetch
// of its status tail. applyRestart looked only at the view's last request
// after the fetch, so the member restarted the second topic's FAILED
// partition and never the first's, though it read both requests (on a
// live tail compaction removes nothing).
func TestRestartRequestsReadInOneFetchEachApply(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection")
	}
	m, flow, topics := failTwoTopics(t, p)
	var recs []*kgo.Record
	for _, tp := range topics {
		r, err := statustopic.RestartRecordOf(p.Source.Alias, statustopic.RestartRecord{Flow: flow, Topic: tp, Partition: -1, At: time.Now().UTC(), By: "test", FromMember: "other-member"})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	// One produce: one batch, so the member's tail reads both at once.
	cl := testcluster.Client(t, &p.Target)
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 15*time.Second, "both partitions RUNNING again", func() (bool, string) {
		return states(m) == fmt.Sprintf("%s[0] RUNNING, %s[0] RUNNING", topics[0], topics[1]), states(m)
	})
}

// TestRestartTaskOnlyItsSlot: RestartTaskInCluster restarts the FAILED
// partitions of its slot only (counted here, on the member owning both
// slots): the other slot's restart restarts nothing, its own restarts the
// partition. (The runner's two-member test can only wait a second for a
// wrong restart that would show.)
func TestRestartTaskOnlyItsSlot(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection")
	}
	topic := p.Topic("rs")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: p.Source.Alias + "." + topic, Partitions: []int32{0}, Err: kerr.InvalidRecord, Count: 1})
	fc := recoveryFlow(p, topic)
	fc.Tasks = 2
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("v")}, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("v")})
	flow := p.Source.Alias + "->" + p.Target.Alias
	slot := int32(-1)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED in its slot", func() (bool, string) {
		for _, ss := range m.ClusterStatus().Flows[0].Slots {
			for _, ps := range ss.Partitions {
				if ps.Partition == 0 && ps.State == StateFailed {
					slot = ss.Slot
					return true, ""
				}
			}
		}
		return false, states(m)
	})
	if n, err := m.RestartTaskInCluster(context.Background(), flow, 1-slot, ""); n != 0 || err != nil {
		t.Fatalf("RestartTaskInCluster of slot %d (not partition 0's) = %d, %v; want 0, nil", 1-slot, n, err)
	}
	if n, err := m.RestartTaskInCluster(context.Background(), flow, slot, ""); n != 1 || err != nil {
		t.Fatalf("RestartTaskInCluster of slot %d (partition 0's) = %d, %v; want 1, nil", slot, n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "both partitions RUNNING", func() (bool, string) {
		return states(m) == fmt.Sprintf("%s[0] RUNNING, %s[1] RUNNING", topic, topic), states(m)
	})
	if n, err := m.RestartTaskInCluster(context.Background(), flow, -1, ""); n != 0 || err == nil || !strings.Contains(err.Error(), "task -1") {
		t.Errorf("RestartTaskInCluster of task -1 = %d, %v; want an error naming it", n, err)
	}
}
