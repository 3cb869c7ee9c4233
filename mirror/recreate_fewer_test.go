package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partValues returns records prefix-p<part>-<from..to) for partition part
// of topic.
func partValues(topic, prefix string, part int32, from, to int) []*kgo.Record {
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: part, Value: []byte(fmt.Sprintf("%s-p%d-%d", prefix, part, i))})
	}
	return rs
}

// TestSourceTopicRecreatedWithFewerPartitionsWhileRunning: a source topic
// of 3 partitions deleted and re-created under its name with 1 partition
// while the flow runs. Partition 0 is replicated from the new topic's log
// start; partitions 1 and 2 no longer exist and must leave the status.
// They stayed there for good, RETRYING on UNKNOWN_TOPIC_ID (the unit
// restarted every partition of the re-created topic on the new ID, also
// those the new topic does not have). With tasks.max=2 the slot that held
// partition 1 only has no partition of the topic left in its offer.
func TestSourceTopicRecreatedWithFewerPartitionsWhileRunning(t *testing.T) {
	t.Parallel()
	for _, tasks := range []int{1, 2} {
		t.Run(fmt.Sprint("tasks=", tasks), func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst")
			orders := p.Topic("orders")
			remote := p.Source.Alias + "." + orders
			testcluster.CreateTopic(t, &p.Source, orders, 3, nil)
			for part := int32(0); part < 3; part++ {
				testcluster.Produce(t, &p.Source, partValues(orders, "old", part, 0, 10)...)
			}
			fc := fastFlow(p)
			fc.Tasks = tasks
			fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
			m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
			waitReplicated(t, m, 30)
			if _, err := testcluster.Admin(t, &p.Source).DeleteTopic(context.Background(), orders); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond) // discovery sees the topic gone, or not: both must work
			testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
			testcluster.Produce(t, &p.Source, partValues(orders, "new", 0, 0, 20)...)
			testcluster.Eventually(t, 30*time.Second, "only partition 0 left, the new topic's 20 records replicated", func() (bool, string) {
				fs := m.Status().Flows[0]
				ps := fs.Partitions
				return len(ps) == 1 && ps[0].Topic == orders && ps[0].Partition == 0 && ps[0].State == StateRunning &&
						ps[0].Replicated == 20 && ps[0].Committed == 19 && fs.Lag == 0 && fs.State == StateRunning,
					fmt.Sprintf("%s %q lag %d %+v", fs.State, fs.Error, fs.Lag, ps)
			})
			got := testcluster.ReadAll(t, &p.Target, remote)
			if len(got[0]) != 30 || len(got[1]) != 10 || len(got[2]) != 10 {
				t.Fatalf("remote partitions hold %d, %d, %d records, want 30, 10, 10", len(got[0]), len(got[1]), len(got[2]))
			}
			for i, r := range got[0][10:] {
				if want := fmt.Sprintf("new-p0-%d", i); string(r.Value) != want {
					t.Errorf("remote partition 0 offset %d holds %q, want %q", 10+i, r.Value, want)
				}
			}
		})
	}
}
