package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/mirror"
)

// failedOver is a world after a planned failover of A->B by a runner of
// the flows into B, stopped since: the group on B at A.orders (50 on each
// partition), no runner of B->A.
func failedOver(t *testing.T) *drWorld {
	t.Helper()
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 100)
	commitAt := map[int32]int64{0: 50, 1: 50, 2: 50}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	eventually(t, "planned failover", func() string {
		code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "5s", "-json")
		if code != drOK {
			return fmt.Sprintf("exit %d: %s %s", code, out, errOut)
		}
		return ""
	})
	stopRunner()
	if err := waitRunner(); err != nil {
		t.Errorf("runner: %v\n%s", err, runnerLog)
	}

	return w
}

// reverseRunning starts a runner of w's flows into A (the reverse flow
// B->A), stopped when t ends.
func reverseRunning(t *testing.T, w *drWorld) {
	t.Helper()
	_, revLog, stopRev, waitRev := started(t, "-config", w.props, "-clusters", "A", "-log-level", "warn")
	t.Cleanup(func() {
		stopRev()
		if err := waitRev(); err != nil {
			t.Errorf("reverse runner: %v\n%s", err, revLog)
		}
	})
}

// failbackAnswered runs failback with args (-json among them) until its
// report shows the reverse flow live (a heartbeat on A within 15 s), and
// returns that run.
func failbackAnswered(t *testing.T, args ...string) (code int, out, errOut string, rep failbackReport) {
	t.Helper()
	eventually(t, "failback answers (not waiting on the reverse flow)", func() string {
		code, out, errOut, _ = runDR(t, failbackMain, args...)
		rep = failbackReport{}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return err.Error()
		}
		if rep.ReverseHeartbeat.IsZero() || time.Since(rep.ReverseHeartbeat) > 15*time.Second {
			return "no live reverse flow yet: " + out
		}
		return ""
	})
	return code, out, errOut, rep
}

// heartbeatsOnlyReverse: after a planned failover of A->B (the group on B
// at A.orders), a runner runs the flows into A from a file that disables
// B->A: it emits B->A's heartbeats into A and replicates nothing. failback
// runs on w.props, which enables B->A (the file is right, the runner is
// not). It returns once a heartbeat of B->A on A is fresh and the runner's
// member of B->A is live in its status topic on A.
func heartbeatsOnlyReverse(t *testing.T) *drWorld {
	w := failedOver(t)
	body, err := os.ReadFile(w.props)
	if err != nil {
		t.Fatal(err)
	}
	off := strings.Replace(string(body), "B->A.enabled = true", "B->A.enabled = false", 1)
	if off == string(body) {
		t.Fatal("the world's file does not enable B->A")
	}
	hbProps := filepath.Join(t.TempDir(), "hb.properties")
	if err := os.WriteFile(hbProps, []byte(off), 0o600); err != nil {
		t.Fatal(err)
	}
	_, hbLog, stopHB, waitHB := started(t, "-config", hbProps, "-clusters", "A", "-log-level", "warn")
	t.Cleanup(func() {
		stopHB()
		if err := waitHB(); err != nil {
			t.Errorf("heartbeats-only runner: %v\n%s", err, hbLog)
		}
	})
	opts := []kgo.Opt{kgo.SeedBrokers(w.aAddrs...)}
	eventually(t, "B->A's heartbeats on A and its member live", func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hb, err := newestHeartbeat(ctx, opts, "heartbeats", "B", "A")
		if err != nil || hb.IsZero() || time.Since(hb) > 5*time.Second {
			return fmt.Sprintf("newest heartbeat B->A %v (%v)", hb, err)
		}
		ms, err := statustopic.ReadMembers(ctx, opts, "B", time.Now())
		if err != nil || len(ms) == 0 {
			return fmt.Sprintf("no live member of B->A on A (%v)", err)
		}
		return ""
	})
	return w
}

// TestFailbackRefusesHeartbeatsOnlyReverse (a new user's case A): the
// runner emitting B->A's heartbeats into A has B->A disabled, so nothing
// replicates B->A. failback -dry-run answered 0 with no problem, since the
// heartbeats were fresh. It must exit 1 and say that B->A does not
// replicate, and what to do.
func TestFailbackRefusesHeartbeatsOnlyReverse(t *testing.T) {
	w := heartbeatsOnlyReverse(t)
	code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "5s", "-dry-run", "-json")
	var rep failbackReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("failback -json: %v\n%s\n%s", err, out, errOut)
	}
	problems := strings.Join(rep.Problems, "\n")
	if code != drRefused {
		t.Errorf("failback -dry-run with B->A only emitting heartbeats: exit %d, want %d\n%s\n%s", code, drRefused, out, errOut)
	}
	for _, want := range []string{"B->A is not replicating: no member of it is RUNNING", "heartbeats only", "heartbeats alone come from any process with emit.heartbeats.enabled", "Its runners' files disable it: start a runner with B->A.enabled = true"} {
		if !strings.Contains(problems, want) {
			t.Errorf("failback problems %q: want %q", rep.Problems, want)
		}
	}
	if rep.ReverseHeartbeat.IsZero() || !strings.Contains(rep.ReverseEvidence, "none of 1 live member(s) replicating") {
		t.Errorf("failback reverse heartbeat %v, evidence %q: want a heartbeat and the member that does not replicate", rep.ReverseHeartbeat, rep.ReverseEvidence)
	}
}

// TestFailbackNoCatchUpWaitForHeartbeatsOnlyReverse (a new user's case
// B): the group also committed on B's own orders, and B->A only emits
// heartbeats. failback waited -wait and refused with "the reverse flow has
// not caught up: ... no checkpoint on A yet", a catch-up that cannot
// happen. It must refuse at once, naming the reverse flow not
// replicating, and commit nothing.
func TestFailbackNoCatchUpWaitForHeartbeatsOnlyReverse(t *testing.T) {
	w := heartbeatsOnlyReverse(t)
	w.produce(w.bAddrs, "B", w.topic, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	offs := kadm.Offsets{}
	for p := range w.parts {
		offs.Add(kadm.Offset{Topic: w.topic, Partition: p, At: 5, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(w.client(w.bAddrs)).CommitAllOffsets(ctx, w.group, offs); err != nil {
		t.Fatal(err)
	}
	before := w.committed(w.aAddrs)
	code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "30s", "-json")
	var rep failbackReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("failback -json: %v\n%s\n%s", err, out, errOut)
	}
	problems := strings.Join(rep.Problems, "\n")
	if code != drRefused || !strings.Contains(problems, "B->A is not replicating") {
		t.Errorf("failback: exit %d, problems %q; want 1, B->A not replicating\n%s", code, rep.Problems, errOut)
	}
	if strings.Contains(problems, "not caught up") {
		t.Errorf("failback problems %q: a catch-up of a flow that does not replicate", rep.Problems)
	}
	if after := w.committed(w.aAddrs); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("committed on A: %v, was %v: a refused failback commits nothing", after, before)
	}
}

// TestReverseMembers: the live members of the reverse flow decide whether
// it replicates; with none (Apache MM2 writes no status topic), failback
// falls back on the heartbeats.
func TestReverseMembers(t *testing.T) {
	now := time.Now()
	rec := func(id string, m statustopic.MemberRecord) *kgo.Record {
		m.Flow, m.MemberID, m.WorkerID, m.IntervalMS = "B->A", id, "w:"+id, 1000
		if m.At.IsZero() {
			m.At = now
		}
		r, err := statustopic.MemberRecordOf("B", m)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name              string
		recs              []*kgo.Record
		live, replicating int
		held, hbOnly      int
		why               string
	}{
		{name: "no status topic (Apache MM2)"},
		{name: "stale member only", recs: []*kgo.Record{rec("m1", statustopic.MemberRecord{State: "RUNNING", Applied: statustopic.Running, At: now.Add(-time.Minute)})}},
		{name: "heartbeats only", recs: []*kgo.Record{rec("m1", statustopic.MemberRecord{State: string(mirror.StateDisabled), Applied: statustopic.Running, HeartbeatsOnly: true})},
			live: 1, hbOnly: 1, why: "member m1 (worker w:m1): heartbeats only"},
		{name: "stopped", recs: []*kgo.Record{rec("m1", statustopic.MemberRecord{State: "STOPPED", Applied: statustopic.Stopped})},
			live: 1, held: 1, why: "target state STOPPED applied"},
		{name: "heartbeats only, paused while disabled", recs: []*kgo.Record{rec("m1", statustopic.MemberRecord{State: string(mirror.StateDisabled), Applied: statustopic.Paused, HeartbeatsOnly: true})},
			live: 1, held: 1, hbOnly: 1, why: "member m1 (worker w:m1): heartbeats only (its file sets enabled = false), target state PAUSED applied"},
		{name: "failed", recs: []*kgo.Record{rec("m1", statustopic.MemberRecord{State: "FAILED", Error: "boom", Applied: statustopic.Running})},
			live: 1, why: "FAILED: boom"},
		{name: "one of two replicates", recs: []*kgo.Record{
			rec("m1", statustopic.MemberRecord{State: string(mirror.StateDisabled), HeartbeatsOnly: true}),
			rec("m2", statustopic.MemberRecord{State: "RUNNING", Applied: statustopic.Running})},
			live: 2, replicating: 1, hbOnly: 1},
	} {
		v := statustopic.NewView()
		for i, r := range tc.recs {
			r.Offset = int64(i)
			v.Apply(r)
		}
		rs := flowMembers(v, now)
		if rs.Live != tc.live || rs.Replicating != tc.replicating || rs.Held != tc.held || rs.HeartbeatsOnly != tc.hbOnly ||
			!strings.Contains(strings.Join(rs.NotReplicating, "; "), tc.why) {
			t.Errorf("%s: %+v, want live %d, replicating %d, held %d, heartbeats only %d, %q", tc.name, rs, tc.live, tc.replicating, tc.held, tc.hbOnly, tc.why)
		}
	}
}

// TestReverseAdvice (a new user's finding): B->A paused while its file
// disabled it, then enabled: its member started PAUSED (the state is
// kept), and failback told the user to start a runner with
// B->A.enabled = true, which they had done. Members holding the flow are
// told to resume it, runners that disable it to enable it, a mix both.
func TestReverseAdvice(t *testing.T) {
	const resume = "resume B->A with PUT /connectors/B-%3EA/resume on a member"
	const enable = "start a runner with B->A.enabled = true"
	for _, tc := range []struct {
		name     string
		rs       reverseStatus
		want     []string
		wantNone string
	}{
		{"held", reverseStatus{Live: 1, Held: 1}, []string{"Its members hold it paused or stopped: " + resume}, enable},
		{"heartbeats only", reverseStatus{Live: 1, HeartbeatsOnly: 1}, []string{"Its runners' files disable it: " + enable}, resume},
		{"both", reverseStatus{Live: 2, Held: 1, HeartbeatsOnly: 1}, []string{enable, resume}, ""},
		{"failed", reverseStatus{Live: 1}, []string{enable, resume}, ""},
	} {
		got := reverseAdvice("B->A", "A", tc.rs)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want %q", tc.name, got, w)
			}
		}
		if tc.wantNone != "" && strings.Contains(got, tc.wantNone) {
			t.Errorf("%s: %q, want no %q", tc.name, got, tc.wantNone)
		}
	}
}

// TestFailbackNoReverseMemberNorHeartbeat (a new user's finding): before
// anything runs B->A, failback's evidence read "heartbeats only: no live
// kmirror member" though there was no heartbeat either.
func TestFailbackNoReverseMemberNorHeartbeat(t *testing.T) {
	w := failedOver(t)
	code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "1s", "-dry-run", "-json")
	var rep failbackReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("failback -json: %v\n%s\n%s", err, out, errOut)
	}
	wantEvidence := "no live member, no recent heartbeat: no live kmirror member in mm2-kmirror-status.B.internal on A (a flow run by Apache MM2 publishes none)"
	if code != drRefused || rep.ReverseEvidence != wantEvidence || len(rep.Problems) != 1 ||
		!strings.HasPrefix(rep.Problems[0], "the reverse flow B->A has no live member: it has no heartbeat on A, and no live kmirror member") {
		t.Fatalf("failback with nothing running B->A: exit %d, evidence %q, problems %q; want %d, %q and the no-live-member problem\n%s",
			code, rep.ReverseEvidence, rep.Problems, drRefused, wantEvidence, errOut)
	}
}

// TestFailbackRefusesFlowNeverFailedOver (a new user's finding): with A->B
// replicating (a live member of it RUNNING in its status topic on B) and
// never failed over, failback took the group's offsets on B, copies of its
// offsets on A, back to A: the dry run said "would commit" and exited 0,
// and a run could have moved the group on A backwards. It refuses now,
// saying to fail over first, and commits nothing.
func TestFailbackRefusesFlowNeverFailedOver(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 100)
	commitAt := map[int32]int64{0: 50, 1: 50, 2: 50}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-log-level", "warn")
	defer func() {
		stopRunner()
		if err := waitRunner(); err != nil {
			t.Errorf("runner: %v\n%s", err, runnerLog)
		}
	}()
	var rep failbackReport
	eventually(t, "failback refused: A->B not failed over", func() string {
		code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "1s", "-dry-run", "-json")
		rep = failbackReport{}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return fmt.Sprintf("exit %d: %v\n%s\n%s", code, err, out, errOut)
		}
		if code != drRefused || len(rep.Problems) != 1 || !strings.HasPrefix(rep.Problems[0], "A->B was not failed over: 1 of its 1 live member(s) replicate it (status topic mm2-kmirror-status.A.internal on B)") {
			return fmt.Sprintf("exit %d, problems %q", code, rep.Problems)
		}
		return ""
	})
	if !strings.Contains(rep.Problems[0], "Fail over first (kmirror failover -flow 'A->B')") || len(rep.Groups) != 0 {
		t.Errorf("problem %q, groups %+v; want it to say to fail over first, and no group planned", rep.Problems[0], rep.Groups)
	}
}

// TestBrkRFailbackNoHeartbeatWording: failback before anything runs B->A
// said "its newest heartbeat on A is none", as if "none" were a
// heartbeat; it says the flow has no heartbeat there now.
func TestBrkRFailbackNoHeartbeatWording(t *testing.T) {
	w := failedOver(t)
	code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "1s", "-dry-run")
	want := "problem: the reverse flow B->A has no live member: it has no heartbeat on A, and no live kmirror member in mm2-kmirror-status.B.internal on A (a flow run by Apache MM2 publishes none); start kmirror on the file (kmirror -config FILE, or -clusters A for that flow alone)\n"
	if code != drRefused || !strings.Contains(out, want) {
		t.Fatalf("failback with nothing running B->A: exit %d, want %d and %q in\n%s\n%s", code, drRefused, want, out, errOut)
	}
}
