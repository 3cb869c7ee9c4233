package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestFailoverAgainKeepsGroupsAhead (found by a review): an unplanned
// failover moves the group to B; its consumers on B read on, commit 90
// and stop. The failover run again (a retried script, or a second batch of
// groups whose -groups also matches this one) committed the same old
// translations over the group's newer commits on B, moving it back to 50.
// It keeps them, and says so.
func TestFailoverAgainKeepsGroupsAhead(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 100)
	commitAt := map[int32]int64{0: 50, 1: 50, 2: 50}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	flow := "A->B"
	eventually(t, "checkpoints of the group's commits", func() string {
		code, out, errOut, _ := runDR(t, translateMain, "-config", w.props, "-flow", flow, "-groups", w.group)
		if code != drOK {
			return fmt.Sprintf("exit %d: %s %s", code, out, errOut)
		}
		return ""
	})
	w.killA()
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-source-timeout", "1s", "-json")
	if code != drOK {
		t.Fatalf("first failover: exit %d\n%s\n%s", code, out, errOut)
	}
	if got, want := fmt.Sprint(w.committed(w.bAddrs)), fmt.Sprint(map[string]map[int32]int64{w.remote: commitAt}); got != want {
		t.Fatalf("after the first failover: %s, want %s", got, want)
	}
	stopRunner()
	if err := waitRunner(); err != nil {
		t.Errorf("runner: %v\n%s", err, runnerLog)
	}

	// The group's consumers on B processed up to 90 and committed; they stopped.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	onB := kadm.Offsets{}
	for p := range w.parts {
		onB.Add(kadm.Offset{Topic: w.remote, Partition: p, At: 90, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(w.client(w.bAddrs)).CommitAllOffsets(ctx, w.group, onB); err != nil {
		t.Fatal(err)
	}

	// The failover again.
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-source-timeout", "1s", "-json")
	got := w.committed(w.bAddrs)
	for p := range w.parts {
		if got[w.remote][p] != 90 {
			t.Errorf("second failover (exit %d) moved %s[%d] of %s on B from 90 to %d: its consumers re-read what they had processed on B\n%s\n%s",
				code, w.remote, p, w.group, got[w.remote][p], out, errOut)
		}
	}
	rep := decodeFailover(t, out)
	if code != drOK || !rep.Rerun || len(rep.Groups) != 1 || rep.Groups[0].Action != actionNone || len(rep.Groups[0].Partitions) != int(w.parts) {
		t.Fatalf("second failover: exit %d, groups %+v; want exit 0 and the group not moved\n%s", code, rep.Groups, errOut)
	}
	for _, p := range rep.Groups[0].Partitions {
		if p.Ahead != 90 || p.Offset != 50 {
			t.Errorf("partition %d: offset %d, ahead %d; want the translation 50 kept at 90", p.Partition, p.Offset, p.Ahead)
		}
	}
}

// TestFailbackAgainKeepsGroupsAhead (found by a review): failback moves
// the group home; its consumers at home read on, commit 115 and stop;
// failback run again (a retried script, a second batch of groups)
// translated the group's stale position on B back again and committed 100
// over the group's newer commits on A. It keeps them.
func TestFailbackAgainKeepsGroupsAhead(t *testing.T) {
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
	// The consumers on B read everything replicated and committed it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	end := kadm.Offsets{}
	for p := range w.parts {
		end.Add(kadm.Offset{Topic: w.remote, Partition: p, At: 100, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(w.client(w.bAddrs)).CommitAllOffsets(ctx, w.group, end); err != nil {
		t.Fatal(err)
	}
	_, revLog, stopRev, waitRev := started(t, "-config", w.props, "-clusters", "A", "-log-level", "warn")
	defer func() {
		stopRev()
		if err := waitRev(); err != nil {
			t.Errorf("reverse runner: %v\n%s", err, revLog)
		}
	}()
	eventually(t, "failback", func() string {
		code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-json")
		if code != drOK {
			return fmt.Sprintf("exit %d\n%s\n%s", code, out, errOut)
		}
		return ""
	})
	if got, want := fmt.Sprint(w.committed(w.aAddrs)), fmt.Sprint(map[string]map[int32]int64{w.topic: {0: 100, 1: 100, 2: 100}}); got != want {
		t.Fatalf("after the first failback: %s on A, want %s", got, want)
	}
	// Home again: the order service writes 15 records per partition, the
	// consumers read them, commit 115 and stop.
	w.produce(w.aAddrs, "A", w.topic, 15)
	home := kadm.Offsets{}
	for p := range w.parts {
		home.Add(kadm.Offset{Topic: w.topic, Partition: p, At: 115, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(w.client(w.aAddrs)).CommitAllOffsets(ctx, w.group, home); err != nil {
		t.Fatal(err)
	}
	code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-json")
	var rep failbackReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Rerun {
		t.Errorf("second failback: rerun %v (%v), want true: an earlier failback resumed the flow\n%s", rep.Rerun, err, out)
	}
	got := w.committed(w.aAddrs)
	for p := range w.parts {
		if got[w.topic][p] != 115 {
			t.Errorf("second failback (exit %d) moved %s[%d] of %s on A from 115 to %d: its consumers re-read 15 records\n%s\n%s",
				code, w.topic, p, w.group, got[w.topic][p], out, errOut)
		}
	}
}
