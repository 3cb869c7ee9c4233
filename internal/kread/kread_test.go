package kread_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/kread"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestReadRanges: each partition's range is read exactly ([From, To), -2 the
// log start), empty ranges read nothing, and read committed leaves out an
// aborted transaction's records although its offsets are inside a range.
func TestReadRanges(t *testing.T) {
	t.Parallel()
	c := testcluster.NewFake(t, "x")
	testcluster.CreateTopic(t, &c, "t", 2, nil)
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: "t", Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, i))})
		}
	}
	testcluster.Produce(t, &c, recs...)
	// Offsets 10 (aborted record) and 11 (its ABORT marker) of partition 1.
	txn := testcluster.Client(t, &c, kgo.TransactionalID("kread-test"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 1, Value: []byte("aborted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	testcluster.Produce(t, &c, &kgo.Record{Topic: "t", Partition: 1, Value: []byte("1-12")})
	values := func(got map[string]map[int32][]*kgo.Record, p int32) string {
		var out []string
		for _, r := range got["t"][p] {
			out = append(out, fmt.Sprintf("%d:%s", r.Offset, r.Value))
		}
		return fmt.Sprint(out)
	}
	got, err := kread.ReadRanges(ctx, c.Opts(), map[string]map[int32]kread.Range{"t": {0: {From: 3, To: 6}, 1: {From: 9, To: 13}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if v, want := values(got, 0), "[3:0-3 4:0-4 5:0-5]"; v != want {
		t.Errorf("partition 0 [3,6) = %s, want %s", v, want)
	}
	if v, want := values(got, 1), "[9:1-9 12:1-12]"; v != want {
		t.Errorf("partition 1 [9,13) read committed = %s, want %s", v, want)
	}
	got, err = kread.ReadRanges(ctx, c.Opts(), map[string]map[int32]kread.Range{"t": {0: {From: -2, To: 2}, 1: {From: 5, To: 5}}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if v, want := values(got, 0), "[0:0-0 1:0-1]"; v != want {
		t.Errorf("partition 0 [start,2) = %s, want %s", v, want)
	}
	if v := values(got, 1); v != "[]" {
		t.Errorf("partition 1 empty range = %s, want nothing", v)
	}
}

// TestFirstData: the first record to replicate of each range, read
// committed: a range holding only a COMMIT marker, an aborted record and its
// ABORT marker has none (To), a range reaching a committed or plain record
// has its offset, and a partition whose range ends inside an open
// transaction does not resolve (absent) before the context ends.
func TestFirstData(t *testing.T) {
	t.Parallel()
	c := testcluster.NewFake(t, "x")
	testcluster.CreateTopic(t, &c, "t", 2, nil)
	ctx := context.Background()
	txn := testcluster.Client(t, &c, kgo.TransactionalID("kread-first"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	inTxn := func(end kgo.TransactionEndTry, open bool, recs ...*kgo.Record) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := txn.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if !open {
			if err := txn.EndTransaction(ctx, end); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec := func(p int32, v string) *kgo.Record { return &kgo.Record{Topic: "t", Partition: p, Value: []byte(v)} }
	// Partition 0: committed 0-2, COMMIT 3, aborted 4, ABORT 5, plain 6.
	inTxn(kgo.TryCommit, false, rec(0, "a"), rec(0, "b"), rec(0, "c"))
	inTxn(kgo.TryAbort, false, rec(0, "x"))
	testcluster.Produce(t, &c, rec(0, "d"))
	// Partition 1: plain 0, then an open transaction (1).
	testcluster.Produce(t, &c, rec(1, "e"))
	inTxn(kgo.TryAbort, true, rec(1, "open"))
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	got, err := kread.FirstData(rctx, c.Opts(), map[string]map[int32]kread.Range{"t": {0: {From: 3, To: 6}, 1: {From: 1, To: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if s, want := fmt.Sprint(got), "map[t:map[0:6]]"; s != want {
		t.Errorf("markers and aborted records only, and an open transaction: %s, want %s", s, want)
	}
	got, err = kread.FirstData(ctx, c.Opts(), map[string]map[int32]kread.Range{"t": {0: {From: 2, To: 6}, 1: {From: 0, To: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if s, want := fmt.Sprint(got), "map[t:map[0:2 1:0]]"; s != want {
		t.Errorf("ranges starting at a committed and a plain record: %s, want %s", s, want)
	}
	got, err = kread.FirstData(ctx, c.Opts(), map[string]map[int32]kread.Range{"t": {0: {From: 4, To: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	if s, want := fmt.Sprint(got), "map[t:map[0:6]]"; s != want {
		t.Errorf("an aborted record, its marker, then a plain record: %s, want %s", s, want)
	}
}

// TestReadRangesReportsRefusedFetch (regression): a fetch the source
// refuses for good (TOPIC_AUTHORIZATION_FAILED) is the read's error. The
// poll loop cancelled its context before it looked at the fetch errors,
// took every error for its own timeout, and waited for the caller's
// deadline instead.
func TestReadRangesReportsRefusedFetch(t *testing.T) {
	t.Parallel()
	c := testcluster.NewFake(t, "x")
	testcluster.CreateTopic(t, &c, "t", 1, nil)
	testcluster.Produce(t, &c, &kgo.Record{Topic: "t", Value: []byte("v")})
	c.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: "t", Err: kerr.TopicAuthorizationFailed, Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := kread.ReadRanges(ctx, c.Opts(), map[string]map[int32]kread.Range{"t": {0: {From: 0, To: 1}}}, false)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || ctx.Err() != nil {
		t.Fatalf("ReadRanges = %v (context %v), want TOPIC_AUTHORIZATION_FAILED before the deadline", err, ctx.Err())
	}
}
