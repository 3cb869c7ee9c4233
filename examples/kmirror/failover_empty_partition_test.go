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

// TestPlannedFailoverOnlyCommitsAtLogStart: the group's only commits on
// orders are at the log start (0 on each partition, all empty), so no
// offset sync or run covers any of them and no checkpoint of the group
// comes at all, not even a never-committed one. The planned failover waited
// for a checkpoint of each and refused after -wait (catch-up not reached)
// on every run. It must move the group (0, 0 and 0 on B, the target log
// start, exit 0), and count those partitions as committed at the log
// start, not as never committed.
func TestPlannedFailoverOnlyCommitsAtLogStart(t *testing.T) {
	w := newDRWorld(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := kadm.Offsets{}
	for p := range w.parts {
		zero.Add(kadm.Offset{Topic: w.topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
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
	eventually(t, "A.orders on B", func() string {
		tds, err := kadm.NewClient(w.client(w.bAddrs)).ListTopics(ctx, w.remote)
		if err != nil {
			return err.Error()
		}
		if td := tds[w.remote]; td.Err != nil || len(td.Partitions) != int(w.parts) {
			return fmt.Sprintf("%+v", td)
		}
		return ""
	})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "20s", "-json")
	rep := decodeFailover(t, out)
	if code != drOK || rep.Mode != modePlanned {
		t.Fatalf("planned failover: exit %d, mode %s; want %d, planned\n%s\n%s", code, rep.Mode, drOK, out, errOut)
	}
	want := fmt.Sprint(map[string]map[int32]int64{w.remote: {0: 0, 1: 0, 2: 0}})
	if got := fmt.Sprint(w.committed(w.bAddrs)); got != want {
		t.Fatalf("after the planned failover: %s on B, want %s\n%s", got, want, out)
	}
	if s := rep.Summary; s.NeverCommitted != 0 || s.AtLogStart != 3 || s.Partitions != 3 {
		t.Errorf("summary %+v: want 3 partitions, 3 at the log start, 0 never committed\n%s", s, out)
	}
}
