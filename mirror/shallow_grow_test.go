package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestShallowCopyPartitionIncreaseReplicated: with shallow copy, the
// partitions added to a source topic the flow already replicates are
// started and copied from their start. The start of an added partition
// waited for the target producer's metadata to show it, but shallow copy
// writes batches in requests of its own and its producer never loaded the
// remote topic: the wait ran out every time (5 s of the control goroutine,
// again every 500 ms) and the added partitions never started, absent from
// the status with lag 0 while their records were never copied.
func TestShallowCopyPartitionIncreaseReplicated(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	tn := p.Topic("grows")
	remote := p.Source.Alias + "." + tn
	testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
	fc := fastFlow(p)
	fc.ShallowCopy, fc.DisableProvenanceHeader = true, true
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	fc.Tasks = 1 // the added partitions join a unit that writes the remote topic already
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Produce(t, &p.Source, valueRecords(tn, "p0-", 0, 3)...)
	waitReplicated(t, m, 3)
	ctx := context.Background()
	adm := testcluster.Admin(t, &p.Source)
	if _, err := adm.UpdatePartitions(ctx, 3, tn); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "source metadata shows 3 partitions", func() (bool, string) {
		td, err := adm.ListTopics(ctx, tn)
		return err == nil && len(td[tn].Partitions) == 3, fmt.Sprint(err)
	})
	var more []*kgo.Record
	for _, part := range []int32{1, 2} {
		for i := range 4 {
			more = append(more, &kgo.Record{Topic: tn, Partition: part, Value: fmt.Appendf(nil, "p%d-%d", part, i)})
		}
	}
	testcluster.Produce(t, &p.Source, more...)
	testcluster.Eventually(t, 30*time.Second, "the added partitions replicated", func() (bool, string) {
		fs := m.Status().Flows[0]
		got := map[int32]int64{}
		for _, ps := range fs.Partitions {
			got[ps.Partition] = ps.Replicated
		}
		return len(fs.Partitions) == 3 && got[0] == 3 && got[1] == 4 && got[2] == 4 && fs.Lag == 0, fmt.Sprintf("%v lag %d", got, fs.Lag)
	})
	all := testcluster.ReadAll(t, &p.Target, remote)
	for _, part := range []int32{1, 2} {
		rs := all[part]
		if len(rs) != 4 {
			t.Fatalf("%s[%d] holds %d records, want 4", remote, part, len(rs))
		}
		for i, r := range rs {
			if want := fmt.Sprintf("p%d-%d", part, i); r.Offset != int64(i) || string(r.Value) != want {
				t.Errorf("%s[%d] record %d: offset %d value %q, want offset %d value %q", remote, part, i, r.Offset, r.Value, i, want)
			}
		}
	}
}
