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

// TestCommitReadsToEndAndCommits: the group reads every record of the
// topic and commits each partition's end; a second run starts from there
// and commits the records produced since.
func TestCommitReadsToEndAndCommits(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(perPartition int) {
		for p := range int32(3) {
			for i := range perPartition {
				r := &kgo.Record{Topic: "orders", Partition: p, Value: []byte(fmt.Sprint(i))}
				if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	committed := func() string {
		os, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "orders-app")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(os.Offsets()["orders"][0].At, os.Offsets()["orders"][1].At, os.Offsets()["orders"][2].At)
	}
	produce(4)
	if err := run(c.ListenAddrs(), "orders", "orders-app", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := committed(); got != "4 4 4" {
		t.Fatalf("committed %s, want 4 4 4", got)
	}
	produce(2)
	if err := run(c.ListenAddrs(), "orders", "orders-app", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := committed(); got != "6 6 6" {
		t.Fatalf("committed %s after the second run, want 6 6 6", got)
	}
}
