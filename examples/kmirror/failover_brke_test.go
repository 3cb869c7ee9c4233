package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestBrkEFailoverBelowTargetLogStart: the group committed 20, 60 and 100
// on orders[0..2] (100 records each), all checkpointed exactly; then the
// target's retention (DeleteRecords here) removed A.orders[0] below 50.
// The planned failover committed the checkpoint, 20, below the log start:
// the group's consumer on B gets OFFSET_OUT_OF_RANGE there and, with
// auto.offset.reset=latest (Kafka's default), skips the 50 records B still
// holds and it never read. It commits the log start, 50, now, and says so
// (below_log_start); the other partitions get their checkpoints.
func TestBrkEFailoverBelowTargetLogStart(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 100)
	commitAt := map[int32]int64{0: 20, 1: 60, 2: 100}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	defer func() {
		stopRunner()
		if err := waitRunner(); err != nil {
			t.Errorf("runner: %v\n%s", err, runnerLog)
		}
	}()
	w.waitCheckpointed(300)
	w.deleteRecords(w.bAddrs, w.remote, 0, 50)
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "20s", "-json")
	if code != drOK {
		t.Fatalf("planned failover: exit %d\n%s\n%s", code, out, errOut)
	}
	want := fmt.Sprint(map[string]map[int32]int64{w.remote: {0: 50, 1: 60, 2: 100}})
	if got := fmt.Sprint(w.committed(w.bAddrs)); got != want {
		t.Fatalf("after the planned failover: %s on B, want %s\n%s", got, want, out)
	}
	rep := decodeFailover(t, out)
	if got := belowLogStart(rep.Groups); got != fmt.Sprintf("[%s[0] 50]", w.remote) {
		t.Errorf("partitions below the log start: %s, want %s[0] 50\n%s", got, w.remote, out)
	}
}

// TestBrkEPlanFailoverBelowTargetLogStart: planFailover's side of
// TestBrkEFailoverBelowTargetLogStart. A.orders[0] starts at 50: its
// checkpoint 20 is committed as 50 (below_log_start); [1] at 60 and [2]
// (start unknown) keep their checkpoints.
func TestBrkEPlanFailoverBelowTargetLogStart(t *testing.T) {
	cp := func(p int32, off int64) remoteclusterutils.PartitionTranslation {
		return cpAt("A.orders", p, off, off, remoteclusterutils.TranslationExact, "", 0, time.Second)
	}
	pl := planFailover(planInput{Mode: modeUnplanned, Now: planNow, Upstream: upstream,
		Checkpoints:  map[string][]remoteclusterutils.PartitionTranslation{"g": {cp(0, 20), cp(1, 60), cp(2, 10)}},
		TargetStarts: map[string]map[int32]int64{"A.orders": {0: 50, 1: 50}}})
	if len(pl.Groups) != 1 || pl.Groups[0].Action != actionCommit || len(pl.Problems) != 0 {
		t.Fatalf("plan %+v, want g committed, no problem", pl)
	}
	var got []string
	for _, p := range pl.Groups[0].Partitions {
		got = append(got, fmt.Sprintf("%d:%d:%v", p.Partition, p.Offset, p.BelowLogStart))
	}
	if want := "[0:50:true 1:60:false 2:10:false]"; fmt.Sprint(got) != want {
		t.Errorf("partitions %v, want %s", got, want)
	}
}

// deleteRecords deletes the records of topic[partition] below offset at
// on the cluster at addrs (as retention would).
func (w *drWorld) deleteRecords(addrs []string, topic string, partition int32, at int64) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: partition, At: at})
	res, err := kadm.NewClient(w.client(addrs)).DeleteRecords(ctx, del)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

// belowLogStart lists the partitions of gs committed at their log start
// (BelowLogStart), as "topic[partition] offset".
func belowLogStart(gs []groupReport) string {
	var below []string
	for _, g := range gs {
		for _, p := range g.Partitions {
			if p.BelowLogStart {
				below = append(below, fmt.Sprintf("%s[%d] %d", p.Topic, p.Partition, p.Offset))
			}
		}
	}
	return fmt.Sprint(below)
}
