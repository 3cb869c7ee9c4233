package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestOpenSourceTransactionReported: reading read_committed (the
// default), a source transaction left open holds its partition at the
// last stable offset; after OpenTransactionAfter the partition's status
// says since when, and once the transaction commits its record is copied
// and the report clears.
func TestOpenSourceTransactionReported(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("opentxn")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: topic, Value: []byte("a")}, &kgo.Record{Topic: topic, Value: []byte("b")})
	txn := testcluster.Client(t, &p.Source, kgo.TransactionalID(p.Topic("open-txn")), kgo.DefaultProduceTopic(topic))
	ctx := context.Background()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("in-txn")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.OpenTransactionAfter = 2 * time.Second
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	// The open transaction's record counts in the lag (it waits), and
	// after OpenTransactionAfter the partition says why.
	testcluster.Eventually(t, 30*time.Second, "open transaction reported", func() (bool, string) {
		ps := partStatus(m, 0)
		return !ps.OpenTransactionSince.IsZero() && ps.Replicated == 2 && ps.Lag == 1, fmt.Sprintf("%+v", ps)
	})
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "committed record copied, report cleared", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.OpenTransactionSince.IsZero() && m.Status().Flows[0].Records == 3, fmt.Sprintf("%+v", ps)
	})
	if got := tailValues(t, &p.Target, p.Source.Alias+"."+topic); fmt.Sprint(got) != "[a b in-txn]" {
		t.Errorf("target holds %v, want [a b in-txn]", got)
	}
}
