package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestPlannedFailoverCommitOnEmptyPartition (breaker): the group committed
// 50 on orders[0] and [1] and 0 on orders[2], which holds no record (a
// Java consumer commits its position on every assigned partition, 0 on an
// empty one). No offset sync or run ever covers an empty partition; the
// planned failover must still reach its catch-up (a checkpoint at 0, or
// the commit accounted otherwise) and move the group: 50, 50 and 0 on B.
func TestPlannedFailoverCommitOnEmptyPartition(t *testing.T) {
	w := newDRWorld(t, "")
	w.parts = 2
	w.produce(w.aAddrs, "A", w.topic, 100) // orders[0] and [1]
	w.parts = 3
	commitAt := map[int32]int64{0: 50, 1: 50}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := kadm.Offsets{}
	zero.Add(kadm.Offset{Topic: w.topic, Partition: 2, At: 0, LeaderEpoch: -1})
	if err := kadm.NewClient(w.client(w.aAddrs)).CommitAllOffsets(ctx, w.group, zero); err != nil {
		t.Fatal(err)
	}
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	defer func() {
		stopRunner()
		if err := waitRunner(); err != nil {
			t.Errorf("runner: %v\n%s", err, runnerLog)
		}
	}()
	var code int
	var out, errOut string
	eventually(t, "planned failover", func() string {
		code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "3s", "-json")
		if code != drOK {
			return fmt.Sprintf("exit %d: %s %s", code, out, errOut)
		}
		return ""
	})
	want := fmt.Sprint(map[string]map[int32]int64{w.remote: {0: 50, 1: 50, 2: 0}})
	if got := fmt.Sprint(w.committed(w.bAddrs)); got != want {
		t.Fatalf("after the planned failover: %s on B, want %s\n%s", got, want, out)
	}
}
