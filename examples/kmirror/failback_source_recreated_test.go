package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// recreatedOnA is what failback answered after orders was deleted and
// re-created on A (recreateOnAThenFailback).
type recreatedOnA struct {
	code         int
	out, errOut  string
	rep          failbackReport
	oldID, newID string // orders' topic IDs on A, before and after, as Kafka prints them
	committedOnA map[string]map[int32]int64
}

// recreateOnAThenFailback: after a planned failover, the group consumed
// everything replicated on B (100 per partition) and stopped. A came back
// with orders deleted and re-created (a new log, offsets from 0), and n
// records were written to each partition of the new log; then failback
// runs with the reverse flow live.
func recreateOnAThenFailback(t *testing.T, n int) recreatedOnA {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 100)
	commitAt := map[int32]int64{0: 50, 1: 50, 2: 50}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	flow := "A->B"
	eventually(t, "planned failover", func() string {
		code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-json")
		if code != drOK {
			return fmt.Sprintf("exit %d: %s %s", code, out, errOut)
		}
		return ""
	})
	stopRunner()
	if err := waitRunner(); err != nil {
		t.Errorf("runner: %v\n%s", err, runnerLog)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end := kadm.Offsets{}
	for p := range w.parts {
		end.Add(kadm.Offset{Topic: w.remote, Partition: p, At: 100, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(w.client(w.bAddrs)).CommitAllOffsets(ctx, w.group, end); err != nil {
		t.Fatal(err)
	}
	// orders re-created on A, and written to.
	aAdm := kadm.NewClient(w.client(w.aAddrs))
	topicID := func() string { // a new client: kgo caches metadata
		tds, err := kadm.NewClient(w.client(w.aAddrs)).ListTopics(ctx, w.topic)
		if err != nil || tds[w.topic].Err != nil {
			t.Fatalf("listing %s on A: %v %v", w.topic, err, tds[w.topic].Err)
		}
		id := tds[w.topic].ID
		return base64.RawURLEncoding.EncodeToString(id[:])
	}
	var r recreatedOnA
	r.oldID = topicID()
	if r, err := aAdm.DeleteTopics(ctx, w.topic); err != nil || r.Error() != nil {
		t.Fatalf("deleting %s on A: %v %v", w.topic, err, r.Error())
	}
	eventually(t, "orders re-created on A", func() string {
		resp, err := aAdm.CreateTopic(ctx, w.parts, 1, nil, w.topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return err.Error()
		}
		return ""
	})
	r.newID = topicID()
	if r.newID == r.oldID {
		t.Fatalf("orders re-created on A with the same topic ID %s", r.newID)
	}
	w.produce(w.aAddrs, "A", w.topic, n)

	reverseRunning(t, w)
	r.code, r.out, r.errOut, r.rep = failbackAnswered(t, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-json")
	r.committedOnA = w.committed(w.aAddrs)
	return r
}

// TestFailbackSourceTopicRecreatedOnA (breaker): 15 records on the
// re-created orders. The copies, runs and syncs all describe the old log:
// translated back, the group's position is 100, past the new log's end 15.
// Committing 100 on A would make the consumer skip the new log's records
// below 100 once it grows there (and the outage count, from 100 to 15,
// counted none of the 15). failback must not commit it: it refuses the
// partition (orders' topic ID on A is not the one the forward flow
// replicated), commits nothing.
func TestFailbackSourceTopicRecreatedOnA(t *testing.T) {
	r := recreateOnAThenFailback(t, 15)
	for p, at := range r.committedOnA["orders"] {
		if at > 15 {
			t.Errorf("failback (exit %d) committed orders[%d] on A at %d, past the re-created log's end 15: the consumer skips the new log's records below it\n%s\n%s",
				r.code, p, at, r.out, r.errOut)
		}
	}
	want := fmt.Sprintf("A.orders[0] at 100 on B translates back to orders[0] offset 100 of the orders A->B replicated (topic ID %s), but orders on A has topic ID %s now", r.oldID, r.newID)
	if !strings.Contains(strings.Join(r.rep.Problems, "\n"), want) {
		t.Errorf("failback problems %q: want A.orders[0]'s translation named with both topic IDs (%q)", r.rep.Problems, want)
	}
	if r.code != drRefused {
		t.Errorf("failback exit %d, want %d (refused: the translation is of orders' old incarnation)\n%s\n%s", r.code, drRefused, r.out, r.errOut)
	}
}

// TestFailbackSourceTopicRecreatedOnAGrownPast: as above, but the
// re-created orders on A grew to 150 records per partition, past the old
// log's translation 100: a check against A's log end alone lets 100
// through, and a consumer on A would skip the new log's records 0-99.
// failback compares orders' topic ID on A with the one the forward flow
// recorded (offset runs, resume points): they differ, so it refuses,
// naming the partition and both IDs, commits nothing (exit 1), and counts
// the whole new log as records that never reached B (0-149).
func TestFailbackSourceTopicRecreatedOnAGrownPast(t *testing.T) {
	r := recreateOnAThenFailback(t, 150)
	if len(r.committedOnA["orders"]) > 0 {
		t.Errorf("failback (exit %d) committed %v on A: the translations 100 are of orders' old incarnation, and a consumer would skip the new log's records 0-99\n%s\n%s",
			r.code, r.committedOnA["orders"], r.out, r.errOut)
	}
	if r.code != drRefused {
		t.Errorf("failback exit %d, want %d (refused)\n%s\n%s", r.code, drRefused, r.out, r.errOut)
	}
	problems := strings.Join(r.rep.Problems, "\n")
	for p := range 3 {
		want := fmt.Sprintf("A.orders[%d] at 100 on B translates back to orders[%[1]d] offset 100 of the orders A->B replicated (topic ID %s), but orders on A has topic ID %s now", p, r.oldID, r.newID)
		if !strings.Contains(problems, want) {
			t.Errorf("failback problems %q: want %q", r.rep.Problems, want)
		}
	}
	if !strings.Contains(problems, "-reset-offsets --to-earliest") {
		t.Errorf("failback problems %q: want what to do (reset the group to the new log's start)", r.rep.Problems)
	}
	want := []outageRange{{"orders", 0, 0, 150, 150}, {"orders", 1, 0, 150, 150}, {"orders", 2, 0, 150, 150}}
	if fmt.Sprint(r.rep.Outage) != fmt.Sprint(want) || r.rep.OutageTotal != 450 {
		t.Errorf("failback outage %v (total %d), want %v (450): the re-created log never reached B", r.rep.Outage, r.rep.OutageTotal, want)
	}
}
