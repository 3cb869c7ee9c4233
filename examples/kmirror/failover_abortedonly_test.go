package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPlannedFailoverAbortedOnlyPartition (regression, found in review): partitions 0 and 1 hold
// committed records; partition 2 holds only one aborted record and its
// ABORT marker (offsets 0-1): nothing to replicate, so the mirror never
// stores a resume point for it. The planned failover said "nothing
// replicated of offsets 0-1" and refused when -wait ended; it now probes
// such a partition from its log start, as it does past a resume point,
// and counts it caught up.
func TestPlannedFailoverAbortedOnlyPartition(t *testing.T) {
	w := newDRWorld(t, "")
	txn := w.client(w.aAddrs, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("aborted-only-txn"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inTxn := func(parts []int32, n int, end kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			for range n {
				if err := txn.ProduceSync(ctx, &kgo.Record{Topic: w.topic, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	inTxn([]int32{0, 1}, 10, kgo.TryCommit) // 0-9 data, COMMIT 10
	inTxn([]int32{2}, 1, kgo.TryAbort)      // partition 2: aborted 0, ABORT 1
	commitAt := map[int32]int64{0: 5, 1: 5}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stop, wait := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	defer func() {
		stop()
		if err := wait(); err != nil {
			t.Errorf("runner: %v\n%s", err, runnerLog)
		}
	}()
	eventually(t, "the group's commits checkpointed, 20 records on B", func() string {
		if _, out, errOut, _ := runDR(t, translateMain, "-config", w.props, "-flow", "A->B", "-groups", w.group); !strings.Contains(out, "2 exact") {
			return fmt.Sprintf("translate: %s %s", out, errOut)
		}
		if n := len(w.consumeAll(w.bAddrs, w.remote)); n != 20 {
			return fmt.Sprintf("%d records", n)
		}
		return ""
	})
	code, out, errOut, took := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "8s", "-uncommitted", "earliest", "-json")
	rep := decodeFailover(t, out)
	if code != drOK || rep.Result != "done" {
		t.Fatalf("planned failover, everything replicated (partition 2 holds only an aborted record): exit %d (%s) after %v, problems:\n%s\nwant 0 (done)\n%s",
			code, rep.Result, took.Round(time.Second), strings.Join(rep.Problems, "\n"), errOut)
	}
}
