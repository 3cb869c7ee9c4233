package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestFailbackSourceTopicRecreatedOnA (breaker): after a planned
// failover, the group consumed everything replicated on B (100 per
// partition) and stopped. A came back with orders deleted and re-created
// (a new log, offsets from 0), and 15 records were written to each
// partition of the new log. The copies, runs and syncs all describe the
// old log: translated back, the group's position is 100, past the new
// log's end 15. Committing 100 on A would make the consumer skip the new
// log's records below 100 once it grows there (and the outage count, from
// 100 to 15, counted none of the 15). failback must not commit an offset
// past A's log end: it refuses the partition, commits nothing.
func TestFailbackSourceTopicRecreatedOnA(t *testing.T) {
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
	w.produce(w.aAddrs, "A", w.topic, 15)

	_, revLog, stopRev, waitRev := started(t, "-config", w.props, "-clusters", "A", "-log-level", "warn")
	defer func() {
		stopRev()
		if err := waitRev(); err != nil {
			t.Errorf("reverse runner: %v\n%s", err, revLog)
		}
	}()
	var code int
	var out, errOut string
	eventually(t, "failback answers (not waiting on the reverse flow)", func() string {
		code, out, errOut, _ = runDR(t, failbackMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-json")
		var rep failbackReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return err.Error()
		}
		if rep.ReverseHeartbeat.IsZero() || time.Since(rep.ReverseHeartbeat) > 15*time.Second {
			return "no live reverse flow yet: " + out
		}
		return ""
	})
	got := w.committed(w.aAddrs)
	for p := range w.parts {
		if at, ok := got[w.topic][p]; ok && at > 15 {
			t.Errorf("failback (exit %d) committed %s[%d] of %s on A at %d, past the re-created log's end 15: the consumer skips the new log's records below it\n%s\n%s",
				code, w.topic, p, w.group, at, out, errOut)
		}
	}
	var rep failbackReport
	_ = json.Unmarshal([]byte(out), &rep)
	if !strings.Contains(strings.Join(rep.Problems, "\n"), "A.orders[0] at 100 on B translates back to orders[0] offset 100, past its log end 15 on A") {
		t.Errorf("failback problems %q: want A.orders[0]'s translation named past A's log end", rep.Problems)
	}
	if code != drRefused {
		t.Errorf("failback exit %d, want %d (refused: the translation is past A's log end)\n%s\n%s", code, drRefused, out, errOut)
	}
}
