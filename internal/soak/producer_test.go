package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLedgerLeadsStream is the regression test of the CI soak failure
// "source broker restart: 1 unexpected target records": the producer wrote
// the stream and the ledger at once, a stream partition came back from the
// restart before its ledger twin, the mirror copied a record whose ledger
// record was not written yet, and verify, reading the ledger, called the
// copy unexpected. The ledger must lead: while the ledger's produce fails
// (retriably), nothing reaches the stream; afterwards both topics hold the
// same records at the same offsets.
func TestLedgerLeadsStream(t *testing.T) {
	const parts, pairs = 3, 30
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "stream", "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "ledger", Err: kerr.NotLeaderForPartition, Count: -1})
	p, err := newProducer(c.ListenAddrs(), "stream", "ledger", parts, 64, 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	p.start() // rate 0: only the pairs below
	for range pairs {
		p.producePair()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fault.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // room for a stream record that would overtake its ledger twin
	acl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	ends := func(topic string) map[int32]int64 {
		t.Helper()
		o, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int32]int64{}
		o.Each(func(lo kadm.ListedOffset) { m[lo.Partition] = lo.Offset })
		return m
	}
	for part, end := range ends("stream") {
		if end != 0 {
			t.Fatalf("stream[%d] holds %d records while the ledger takes none", part, end)
		}
	}
	fault.Remove()
	if err := p.close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.acked.Load(); got != pairs {
		t.Fatalf("acked %d pairs, want %d", got, pairs)
	}
	if se, le := ends("stream"), ends("ledger"); len(se) != parts || se[0] != pairs/parts || se[1] != pairs/parts || se[2] != pairs/parts ||
		le[0] != se[0] || le[1] != se[1] || le[2] != se[2] {
		t.Fatalf("end offsets: stream %v, ledger %v; want %d in every partition of both", se, le, pairs/parts)
	}
	read := func(topic string) map[int32][]*kgo.Record {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		got, n := map[int32][]*kgo.Record{}, 0
		for n < pairs {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r); n++ })
		}
		return got
	}
	st, lg := read("stream"), read("ledger")
	for part := range int32(parts) {
		for i, r := range st[part] {
			l := lg[part][i]
			if r.Offset != l.Offset || !bytes.Equal(r.Key, l.Key) || !bytes.Equal(r.Value, l.Value) || !r.Timestamp.Equal(l.Timestamp) {
				t.Fatalf("stream[%d] record %d (offset %d, key %s) differs from the ledger's (offset %d, key %s)", part, i, r.Offset, r.Key, l.Offset, l.Key)
			}
		}
	}
}
