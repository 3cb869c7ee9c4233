package mirror

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// targetEnd returns the sum of the end offsets of topic on c.
func targetEnd(t *testing.T, c *testcluster.Cluster, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm, done := testcluster.ShortAdmin(t, c)
	defer done()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, o := range ends[topic] {
		n += o.Offset
	}
	return n
}

// memberStates returns each Mirror's flow state, applied state and slots.
func memberStates(ms ...*Mirror) string {
	var s string
	for i, m := range ms {
		fs := m.Status().Flows[0]
		s += fmt.Sprintf("m%d: %s applied %s target %s slots %v parts %d; ", i+1, fs.State, fs.AppliedState, fs.TargetState, fs.Member.Slots, len(fs.Partitions))
	}
	return s
}

// membersWorld is the set-up of the tests of target states and of the
// status topic with several members: a pair with a 4-partition topic
// orders, and a flow of 4 slots whose members publish their status every
// 200 ms and leave the group 3 s after they die.
type membersWorld struct {
	t              *testing.T
	p              *testcluster.Pair
	orders, remote string
	fc             FlowConfig
}

func newMembersWorld(t *testing.T) *membersWorld {
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	w := &membersWorld{t: t, p: p, orders: p.Topic("orders"), fc: fastFlow(p)}
	w.remote = p.Source.Alias + "." + w.orders
	testcluster.CreateTopic(t, &p.Source, w.orders, 4, nil)
	w.fc.Tasks = 4
	w.fc.SessionTimeout, w.fc.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
	return w
}

// start runs a member of the flow with worker id worker (runMirror).
func (w *membersWorld) start(worker string) (*Mirror, func() error) {
	return runMirror(w.t, append(clusterOpts(w.p), WithFlow(w.fc), WithWorkerID(worker), WithStatusInterval(200*time.Millisecond))...)
}

// TestPauseResumeStopSeenByEveryMember: two members share a flow; a pause
// written through one of them is applied by both within seconds (every
// partition PAUSED; 15 s allowed on a loaded machine, the time taken is
// logged; slots kept, nothing more replicated while heartbeats
// go on), survives a member's restart (the new member starts nothing),
// and a resume replicates what arrived meanwhile exactly once per record
// (graceful stops: no duplicate). STOPPED also stops the heartbeats; every
// live member reports the applied state in its status-topic record
// (statustopic.ReadMembers), which the failover command waits for.
func TestPauseResumeStopSeenByEveryMember(t *testing.T) {
	t.Parallel()
	w := newMembersWorld(t)
	p, orders, remote, fc, start := w.p, w.orders, w.remote, w.fc, w.start
	produceN(t, &p.Source, orders, 0, 50)
	produceN(t, &p.Source, orders, 1, 50)
	m1, _ := start("w1:8083")
	m2, stop2 := start("w2:8083")
	testcluster.Eventually(t, 60*time.Second, "100 records replicated, 4 slots shared by 2 members", func() (bool, string) {
		a, b := m1.Status().Flows[0], m2.Status().Flows[0]
		return targetEnd(t, &p.Target, remote) == 100 && len(a.Member.Slots) > 0 && len(b.Member.Slots) > 0 &&
			len(a.Member.Slots)+len(b.Member.Slots) == 4 && len(a.Partitions)+len(b.Partitions) == 4, memberStates(m1, m2)
	})
	ctx := context.Background()
	flow := fc.Name()

	if err := m1.SetTargetState(ctx, flow, TargetPaused, "", "maintenance"); err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	applied := func(st TargetState, state State, ms ...*Mirror) func() (bool, string) {
		return func() (bool, string) {
			for _, m := range ms {
				fs := m.Status().Flows[0]
				if fs.AppliedState != st || fs.TargetState != st || fs.State != state {
					return false, memberStates(ms...)
				}
				for _, ps := range fs.Partitions {
					if st != TargetRunning && ps.State != state {
						return false, fmt.Sprintf("%s[%d] %s; %s", ps.Topic, ps.Partition, ps.State, memberStates(ms...))
					}
				}
			}
			return true, ""
		}
	}
	testcluster.Eventually(t, 15*time.Second, "both members PAUSED", applied(TargetPaused, StatePaused, m1, m2))
	t.Logf("pause applied by both members %v after it was written", time.Since(asked).Round(time.Millisecond))
	a, b := m1.Status().Flows[0], m2.Status().Flows[0]
	if len(a.Member.Slots)+len(b.Member.Slots) != 4 {
		t.Fatalf("slots after the pause: %v and %v, want 4 kept", a.Member.Slots, b.Member.Slots)
	}
	if n := len(a.Partitions) + len(b.Partitions); n != 4 {
		t.Fatalf("%d partitions shown while paused, want 4", n)
	}
	if a.Records+b.Records != 100 {
		t.Fatalf("records %d + %d after the pause, want 100 (counters never go down)", a.Records, b.Records)
	}
	hb := func() time.Time {
		var last time.Time
		for _, m := range []*Mirror{m1, m2} {
			if fs := m.Status().Flows[0]; fs.LastHeartbeat.After(last) {
				last = fs.LastHeartbeat
			}
		}
		return last
	}
	produceN(t, &p.Source, orders, 2, 30)
	pausedHB := hb()
	time.Sleep(1500 * time.Millisecond)
	if n := targetEnd(t, &p.Target, remote); n != 100 {
		t.Fatalf("%d records on the target while paused, want 100", n)
	}
	if !hb().After(pausedHB) {
		t.Fatalf("no heartbeat while paused (last %v)", pausedHB)
	}

	// A member restarted while the flow is paused starts nothing.
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	m3, _ := start("w3:8083")
	testcluster.Eventually(t, 30*time.Second, "the new member PAUSED from its start", applied(TargetPaused, StatePaused, m1, m3))
	testcluster.Eventually(t, 30*time.Second, "4 slots owned again", func() (bool, string) {
		return len(m1.Status().Flows[0].Member.Slots)+len(m3.Status().Flows[0].Member.Slots) == 4, memberStates(m1, m3)
	})
	if n := targetEnd(t, &p.Target, remote); n != 100 {
		t.Fatalf("%d records on the target after a restart while paused, want 100", n)
	}
	// The member that left tombstoned its record: 2 live members.
	testcluster.Eventually(t, 15*time.Second, "2 live members report PAUSED in the status topic", func() (bool, string) {
		ms, err := statustopic.ReadMembers(ctx, p.Target.Opts(), p.Source.Alias, time.Now())
		if err != nil {
			return false, err.Error()
		}
		return len(ms) == 2 && ms[0].Applied == statustopic.Paused && ms[1].Applied == statustopic.Paused, fmt.Sprintf("%+v", ms)
	})

	if err := m3.SetTargetState(ctx, flow, TargetRunning, "test", ""); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "130 records after the resume", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 130, memberStates(m1, m3)
	})
	// Exactly once per record: the pause stored every resume point.
	got := testcluster.ReadAll(t, &p.Target, remote)
	for part, want := range map[int32]int{0: 50, 1: 50, 2: 30, 3: 0} {
		if len(got[part]) != want {
			t.Fatalf("partition %d: %d records on the target, want %d", part, len(got[part]), want)
		}
		for i, r := range got[part] {
			if w := fmt.Sprint(i); string(r.Value) != w {
				t.Fatalf("partition %d record %d: %q, want %q", part, i, r.Value, w)
			}
		}
	}

	if err := m1.SetTargetState(ctx, flow, TargetStopped, "test", "failover"); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 15*time.Second, "both members STOPPED", applied(TargetStopped, StateStopped, m1, m3))
	testcluster.Eventually(t, 15*time.Second, "both members report STOPPED in the status topic", func() (bool, string) {
		ms, err := statustopic.ReadMembers(ctx, p.Target.Opts(), p.Source.Alias, time.Now())
		if err != nil {
			return false, err.Error()
		}
		for _, m := range ms {
			if m.Applied != statustopic.Stopped {
				return false, fmt.Sprintf("%+v", ms)
			}
		}
		return len(ms) == 2, fmt.Sprintf("%+v", ms)
	})
	for _, m := range []*Mirror{m1, m3} {
		if fs := m.Status().Flows[0]; fs.Member.Singleton {
			t.Fatalf("%s still holds the singleton duties while STOPPED", fs.Member.MemberID)
		}
	}
	stoppedHB := hb()
	produceN(t, &p.Source, orders, 3, 10)
	time.Sleep(time.Second)
	if last := hb(); last.After(stoppedHB) {
		t.Fatalf("heartbeat at %v while STOPPED (last before %v)", last, stoppedHB)
	}
	if n := targetEnd(t, &p.Target, remote); n != 130 {
		t.Fatalf("%d records on the target while stopped, want 130", n)
	}
	rec, found, err := statustopic.ReadTargetState(ctx, p.Target.Opts(), p.Source.Alias)
	if err != nil || !found || rec.State != statustopic.Stopped || rec.By != "test" || rec.Reason != "failover" || rec.Flow != flow {
		t.Fatalf("persisted target state %+v, found %v, %v", rec, found, err)
	}
	if err := m1.SetTargetState(ctx, flow, TargetRunning, "", ""); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "140 records after the restart from STOPPED", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 140, memberStates(m1, m3)
	})
	if err := m1.SetTargetState(ctx, "nope->dst", TargetPaused, "", ""); err == nil || err.Error() != `mirror: SetTargetState: unknown flow "nope->dst": the flows are ["`+flow+`"] (names are "source->target")` {
		t.Fatalf("unknown flow: %v", err)
	}
	if err := m1.SetTargetState(ctx, flow, "HALTED", "", ""); err == nil || err.Error() != `mirror: SetTargetState: target state "HALTED": write RUNNING, PAUSED or STOPPED` {
		t.Fatalf("bad state: %v", err)
	}
}

// TestStopReportedOnceUnitsStopped (found by a review): a member reported
// STOPPED in its status-topic record (what kmirror failover waits for)
// while its units were still stopping gracefully, and a produce the target
// held landed records after it. It reports STOPPED once they stopped.
func TestStopReportedOnceUnitsStopped(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if p.Target.Fake == nil {
		t.Skip("holds a produce request with kfake's control functions")
	}
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 20)
	fc := fastFlow(p)
	fc.Tasks = 1
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w1:8083"), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 60*time.Second, "20 records replicated", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 20, memberStates(m)
	})

	// From now on, produce requests carrying the remote topic are held 3 s
	// by the target (a slow or congested target); the status topic's are not.
	var remoteID atomic.Value
	{
		td, err := testcluster.Admin(t, &p.Target).ListTopics(context.Background(), remote)
		if err != nil {
			t.Fatal(err)
		}
		remoteID.Store([16]byte(td[remote].ID))
	}
	var held atomic.Int32
	var slow atomic.Bool
	slow.Store(true)
	c := p.Target.Fake
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		for _, tp := range pr.Topics {
			if (tp.Topic == remote || (tp.TopicID != [16]byte{} && tp.TopicID == remoteID.Load().([16]byte))) && slow.Load() {
				held.Add(1)
				c.SleepControl(func() { time.Sleep(3 * time.Second) })
				break
			}
		}
		return nil, nil, false
	})
	produceN(t, &p.Source, orders, 0, 10)
	testcluster.Eventually(t, 10*time.Second, "a produce of the remote topic in flight", func() (bool, string) {
		return held.Load() > 0, fmt.Sprint(held.Load())
	})
	slow.Store(false) // only the one in flight is slow

	ctx := context.Background()
	if err := m.SetTargetState(ctx, fc.Name(), TargetStopped, "test", "failover"); err != nil {
		t.Fatal(err)
	}
	var ackEnd int64
	var ackAt time.Time
	testcluster.Eventually(t, 10*time.Second, "the member reports STOPPED in the status topic", func() (bool, string) {
		ms, err := statustopic.ReadMembers(ctx, p.Target.Opts(), p.Source.Alias, time.Now())
		if err != nil {
			return false, err.Error()
		}
		if len(ms) != 1 || ms[0].Applied != statustopic.Stopped {
			return false, fmt.Sprintf("%+v", ms)
		}
		ackEnd, ackAt = targetEnd(t, &p.Target, remote), time.Now()
		return true, ""
	})
	time.Sleep(3500 * time.Millisecond) // past the held produce, had it still been in flight
	if end := targetEnd(t, &p.Target, remote); end != ackEnd || end != 30 {
		t.Fatalf("the member acknowledged STOPPED at %s with %d records on %s (want all 30); %d records there 3.5 s later: the flow wrote %d records after it acknowledged the stop",
			ackAt.Format("15:04:05.000"), ackEnd, remote, end, end-ackEnd)
	}
}

// TestHandWrittenStopApplied (found by a review): a STOPPED written by
// hand with an "at" that is not RFC 3339 was ignored without a word and
// the flow kept replicating. It applies; a record that cannot be read at
// all is a warning of the flow's status, naming what to write.
func TestHandWrittenStopApplied(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 20)
	fc := fastFlow(p)
	fc.Tasks = 1
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 60*time.Second, "20 records replicated", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 20, memberStates(m)
	})
	write := func(v string) {
		testcluster.Produce(t, &p.Target, &kgo.Record{Topic: statustopic.Topic(p.Source.Alias), Key: []byte(statustopic.TargetStateKey), Value: []byte(v)})
	}
	write(`{"flow":"` + fc.Name() + `","state":"HALTED"}`)
	testcluster.Eventually(t, 10*time.Second, "a warning names the unreadable record", func() (bool, string) {
		ws := m.Status().Flows[0].Warnings
		return len(ws) == 1 && strings.Contains(ws[0], "the target-state record at offset") && strings.Contains(ws[0], "the flow keeps target state RUNNING"), fmt.Sprint(ws)
	})
	write(`{"flow":"` + fc.Name() + `","state":"STOPPED","at":"2026-12-01 10:00:00","by":"ops"}`)
	testcluster.Eventually(t, 10*time.Second, "STOPPED applied", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.AppliedState == TargetStopped && len(fs.Warnings) == 0, fmt.Sprintf("%s %q", fs.AppliedState, fs.Warnings)
	})
	produceN(t, &p.Source, orders, 0, 10)
	time.Sleep(time.Second)
	if n := targetEnd(t, &p.Target, remote); n != 20 {
		t.Errorf("%d records on %s after the stop, want 20", n, remote)
	}
}

// partLine describes the partitions for the assertions below: state,
// resume point, next offset, source end, lag.
func partLine(ps []PartitionStatus) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s[%d] %s committed %d replicated %d end %d lag %d unknown %v",
			p.Topic, p.Partition, p.State, p.Committed, p.Replicated, p.SourceEnd, p.Lag, p.LagUnknown))
	}
	return strings.Join(out, "; ")
}

// TestMemberStartedPausedShowsLag: a member started on a flow whose
// persisted target state is PAUSED starts no unit; its owned slots' partitions
// are shown (discovery's catalog, the stored resume points) PAUSED with
// their lag, and STOPPED once the flow is stopped. It reported no partition
// and lag 0 while 8 records waited on the source: the lag hid.
func TestMemberStartedPausedShowsLag(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	produceN(t, &p.Source, orders, 0, 10)
	produceN(t, &p.Source, orders, 1, 10)
	fc := fastFlow(p)
	fc.Tasks = 2
	opts := append(clusterOpts(p), WithFlow(fc), WithStatusInterval(200*time.Millisecond))
	first, stopFirst := runMirror(t, opts...)
	testcluster.Eventually(t, 30*time.Second, "20 records replicated", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 20, memberStates(first)
	})
	if err := stopFirst(); err != nil { // graceful: resume points 9 and 9 stored
		t.Fatal(err)
	}
	produceN(t, &p.Source, orders, 0, 5)
	produceN(t, &p.Source, orders, 1, 3)
	ctx := context.Background()
	pre, err := New(opts...) // not running: SetTargetState uses its own client
	if err != nil {
		t.Fatal(err)
	}
	defer pre.Close()
	if err := pre.SetTargetState(ctx, fc.Name(), TargetPaused, "test", "maintenance"); err != nil {
		t.Fatal(err)
	}
	m, _ := runMirror(t, opts...)
	check := func(st TargetState, state State) {
		t.Helper()
		want := fmt.Sprintf("%[1]s[0] %[2]s committed 9 replicated 10 end 15 lag 5 unknown false; %[1]s[1] %[2]s committed 9 replicated 10 end 13 lag 3 unknown false", orders, state)
		testcluster.Eventually(t, 15*time.Second, "the member "+string(state)+" with both slots and lag 8", func() (bool, string) {
			fs := m.Status().Flows[0]
			cf := m.ClusterStatus().Flows[0]
			slotParts := slotPartitions(cf)
			ok := fs.State == state && fs.AppliedState == st && len(fs.Member.Slots) == 2 && fs.Lag == 8 && !fs.LagUnknown &&
				partLine(fs.Partitions) == want && cf.Lag == 8 && !cf.LagUnknown && partLine(slotParts) == want
			return ok, fmt.Sprintf("Status: %s lag %d (unknown %v): %s; ClusterStatus: %s lag %d (unknown %v), slots' partitions: %s; want %s",
				fs.State, fs.Lag, fs.LagUnknown, partLine(fs.Partitions), cf.State, cf.Lag, cf.LagUnknown, partLine(slotParts), want)
		})
	}
	check(TargetPaused, StatePaused)
	if err := m.SetTargetState(ctx, fc.Name(), TargetStopped, "test", ""); err != nil {
		t.Fatal(err)
	}
	check(TargetStopped, StateStopped)
	if n := targetEnd(t, &p.Target, remote); n != 20 {
		t.Errorf("%d records on the target, want 20 (nothing replicated while paused)", n)
	}
}

// TestPausedThenStoppedPartitionsRelabeled: a flow paused, then stopped,
// then paused again: every partition takes each new state, in Status and
// in the slots of ClusterStatus. They kept the label of the first
// transition (applyTarget relabeled only the partitions of the units it
// stopped, and a paused member has none).
func TestPausedThenStoppedPartitionsRelabeled(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	produceN(t, &p.Source, orders, 0, 10)
	fc := fastFlow(p)
	fc.Tasks = 2
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 30*time.Second, "10 records replicated", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 10 && len(m.Status().Flows[0].Partitions) == 2, memberStates(m)
	})
	ctx := context.Background()
	for _, st := range []TargetState{TargetPaused, TargetStopped, TargetPaused} {
		if err := m.SetTargetState(ctx, fc.Name(), st, "test", ""); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%[1]s[0] %[2]s committed 9 replicated 10 end 10 lag 0 unknown false; %[1]s[1] %[2]s committed -1 replicated -1 end 0 lag 0 unknown false", orders, st)
		testcluster.Eventually(t, 10*time.Second, "every partition "+string(st), func() (bool, string) {
			fs := m.Status().Flows[0]
			cf := m.ClusterStatus().Flows[0]
			slotParts := slotPartitions(cf)
			return fs.State == State(st) && fs.AppliedState == st && partLine(fs.Partitions) == want && partLine(slotParts) == want,
				fmt.Sprintf("Status %s: %s; ClusterStatus %s: %s; want %s", fs.State, partLine(fs.Partitions), cf.State, partLine(slotParts), want)
		})
	}
}

// TestMemberReportsAppliedRecordOffset: a member's record names the
// target-state record it applied (applied_state_offset), and a STOPPED
// written again on a stopped flow moves it (kmirror failover waits for
// its own STOPPED, not for one applied before a later resume).
func TestMemberReportsAppliedRecordOffset(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	testcluster.CreateTopic(t, &p.Source, p.Topic("orders"), 1, nil)
	fc := fastFlow(p)
	fc.Tasks = 1
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithStatusInterval(200*time.Millisecond))...)
	ctx := context.Background()
	prev := int64(-1)
	for i := range 2 {
		if err := m.SetTargetState(ctx, fc.Name(), TargetStopped, "test", ""); err != nil {
			t.Fatal(err)
		}
		v, err := statustopic.ReadView(ctx, p.Target.Opts(), p.Source.Alias)
		if err != nil {
			t.Fatal(err)
		}
		want := v.TargetOffset()
		if want <= prev {
			t.Fatalf("write %d of STOPPED at offset %d, not after %d", i+1, want, prev)
		}
		prev = want
		testcluster.Eventually(t, 10*time.Second, fmt.Sprintf("the member reports STOPPED from offset %d", want), func() (bool, string) {
			ms, err := statustopic.ReadMembers(ctx, p.Target.Opts(), p.Source.Alias, time.Now())
			if err != nil {
				return false, err.Error()
			}
			return len(ms) == 1 && ms[0].Applied == statustopic.Stopped && ms[0].AppliedOffset == want, fmt.Sprintf("%+v", ms)
		})
	}
}

// TestSetTargetStateRefusals: the errors of SetTargetState that refuse the
// request (unknown flow, unknown state, a flow that runs nothing) match
// ErrTargetStateRefused, with their messages unchanged; a write the target
// does not acknowledge does not (the runner answers 409 for the first, 500
// for the second).
func TestSetTargetStateRefusals(t *testing.T) {
	t.Parallel()
	dst, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Close)
	inert := FlowConfig{Source: "src", Target: "dst", Disabled: true, DisableHeartbeats: true}
	down := FlowConfig{Source: "dst", Target: "src"} // src: nothing listens
	m, err := New(WithCluster(ClusterConfig{Alias: "src", Client: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}}),
		WithCluster(ClusterConfig{Alias: "dst", Client: []kgo.Opt{kgo.SeedBrokers(dst.ListenAddrs()...)}}),
		WithFlow(inert), WithFlow(down))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	for _, c := range []struct {
		flow  string
		state TargetState
		msg   string
	}{
		{"nope->dst", TargetPaused, `mirror: SetTargetState: unknown flow "nope->dst": the flows are ["src->dst" "dst->src"] (names are "source->target")`},
		{"src->dst", TargetState("HALTED"), `mirror: SetTargetState: target state "HALTED": write RUNNING, PAUSED or STOPPED`},
		{"src->dst", TargetPaused, "mirror: SetTargetState: flow src->dst neither replicates nor emits heartbeats: it runs nothing to pause or stop"},
	} {
		err := m.SetTargetState(ctx, c.flow, c.state, "test", "")
		if !errors.Is(err, ErrTargetStateRefused) || err.Error() != c.msg {
			t.Errorf("SetTargetState(%s, %s) = %v (refused: %v); want %q, refused", c.flow, c.state, err, errors.Is(err, ErrTargetStateRefused), c.msg)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := m.SetTargetState(wctx, down.Name(), TargetPaused, "test", ""); err == nil || errors.Is(err, ErrTargetStateRefused) {
		t.Errorf("SetTargetState with the target unreachable: %v; want an error that is no refusal", err)
	}
}

// slotPartitions lists the partitions of a flow's cluster view sorted by
// partition. The view lists them slot by slot, and which slot holds which
// partition depends on the topic's name (random per test), so a test
// comparing a line of them must sort.
func slotPartitions(cf ClusterFlowStatus) []PartitionStatus {
	var out []PartitionStatus
	for _, s := range cf.Slots {
		out = append(out, s.Partitions...)
	}
	slices.SortFunc(out, func(a, b PartitionStatus) int { return cmp.Compare(a.Partition, b.Partition) })
	return out
}

// TestFlowSinceAfterResume (a new user's finding): after a pause and a
// resume the flow's Since stayed at its start, where FlowStatus.Since is
// documented as when State was entered; it is now the resume's time (and
// the pause's while PAUSED, as before).
func TestFlowSinceAfterResume(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("since")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithStatusInterval(200*time.Millisecond))...)
	state := func(st TargetState, want State) func() (bool, string) {
		return func() (bool, string) {
			fs := m.Status().Flows[0]
			return fs.AppliedState == st && fs.State == want, fmt.Sprintf("state %s applied %s", fs.State, fs.AppliedState)
		}
	}
	testcluster.Eventually(t, 20*time.Second, "RUNNING", state(TargetRunning, StateRunning))
	started := m.Status().Flows[0].Since
	ctx := context.Background()
	time.Sleep(20 * time.Millisecond)
	paused := time.Now()
	if err := m.SetTargetState(ctx, fc.Name(), TargetPaused, "", "test"); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "PAUSED", state(TargetPaused, StatePaused))
	if since := m.Status().Flows[0].Since; since.Before(paused) {
		t.Errorf("PAUSED since %v, before the pause was asked at %v", since, paused)
	}
	time.Sleep(20 * time.Millisecond)
	resumed := time.Now()
	if err := m.SetTargetState(ctx, fc.Name(), TargetRunning, "", "test"); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "RUNNING again", state(TargetRunning, StateRunning))
	if since := m.Status().Flows[0].Since; since.Before(resumed) {
		t.Errorf("RUNNING again since %v (the flow started at %v), before the resume was asked at %v", since, started, resumed)
	}
}
