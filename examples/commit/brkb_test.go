package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrkBCommitTopicEndingWithTransactionMarker: a topic written
// transactionally (a remote topic of an exactly-once flow, a transactional
// application) ends with a transaction marker, which no consumer receives
// as a record: commit still reads it to its end and commits the end
// offsets. It read until its timeout and failed ("not every partition's
// end").
func TestBrkBCommitTopicEndingWithTransactionMarker(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	plain, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	txn, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("app"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	for i := range 3 { // offsets 0-2 of partition 0
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Partition 0: a committed transaction (3-4, marker 5); partition 1:
	// an aborted one (0, marker 1).
	for _, tx := range []struct {
		part   int32
		n      int
		commit bool
	}{{0, 2, true}, {1, 1, false}} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range tx.n {
			if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: tx.part, Value: []byte(fmt.Sprint("t", i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(tx.commit)); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(c.ListenAddrs(), "orders", "orders-app", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	os, err := kadm.NewClient(plain).FetchOffsets(ctx, "orders-app")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(os.Offsets()["orders"][0].At, os.Offsets()["orders"][1].At); got != "6 2" {
		t.Fatalf("committed %s, want the end offsets 6 2", got)
	}
}
