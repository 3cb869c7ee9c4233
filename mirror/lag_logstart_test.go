package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestLagOfPartitionEmptiedBeforeFirstCopy: a partition whose records were
// all deleted (retention, DeleteRecords) before kmirror first copied it has
// nothing to copy: its lag is 0 once its log start is listed, not its
// source end (it showed 10 for good before: kgo returns no empty fetch, so
// no record ever said where the log starts).
func TestLagOfPartitionEmptiedBeforeFirstCopy(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	var rs []*kgo.Record
	for i := range 15 {
		rs = append(rs, &kgo.Record{Topic: orders, Partition: int32(min(i/10, 1)), Value: []byte(fmt.Sprint(i))})
	}
	testcluster.Produce(t, &p.Source, rs...) // 10 records in partition 0, 5 in partition 1
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: orders, Partition: 0, At: 10})
	if resp, err := testcluster.Admin(t, &p.Source).DeleteRecords(context.Background(), del); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, resp.Error())
	}
	fc := fastFlow(p)
	fc.OpenTransactionAfter = 2 * time.Second // the listing runs every second
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "partition 1 copied, partition 0 with no lag", func() (bool, string) {
		st := m.Status().Flows[0]
		if len(st.Partitions) != 2 {
			return false, fmt.Sprintf("%+v", st.Partitions)
		}
		p0, p1 := partStatus(m, 0), partStatus(m, 1)
		return p1.Replicated == 5 && p1.Lag == 0 && p0.SourceEnd == 10 && p0.Lag == 0 && st.Lag == 0,
			fmt.Sprintf("p0 %+v p1 %+v flow lag %d", p0, p1, st.Lag)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+orders); len(got[0]) != 0 || len(got[1]) != 5 {
		t.Fatalf("target partitions hold %d and %d records; want 0 and 5", len(got[0]), len(got[1]))
	}
}
