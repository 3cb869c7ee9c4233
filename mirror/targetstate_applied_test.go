package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// heartbeatsOnlyMember runs a member of a flow that only emits heartbeats
// (Disabled, one slot, status every 200 ms) on a new pair.
func heartbeatsOnlyMember(t *testing.T) (*testcluster.Pair, FlowConfig, *Mirror) {
	t.Helper()
	p := testcluster.New(t, "src", "dst")
	testcluster.CreateTopic(t, &p.Source, p.Topic("orders"), 1, nil)
	fc := fastFlow(p)
	fc.Tasks = 1
	fc.Disabled = true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithStatusInterval(200*time.Millisecond))...)
	return p, fc, m
}

// TestHeartbeatsOnlyMemberReportsAppliedOffset: a member whose flow
// only emits heartbeats (Disabled) must report the STOPPED kmirror failover
// writes (applied_state_offset at or past it), or the failover waits its
// whole -wait and refuses. Also after a RUNNING written between two STOPPED.
func TestHeartbeatsOnlyMemberReportsAppliedOffset(t *testing.T) {
	t.Parallel()
	p, fc, m := heartbeatsOnlyMember(t)
	ctx := context.Background()
	testcluster.Eventually(t, 10*time.Second, "the member's record", func() (bool, string) {
		ms, err := statustopic.ReadMembers(ctx, p.Target.Opts(), p.Source.Alias, time.Now())
		return err == nil && len(ms) == 1, fmt.Sprintf("%+v %v", ms, err)
	})
	for i, st := range []TargetState{TargetStopped, TargetRunning, TargetStopped, TargetStopped} {
		if err := m.SetTargetState(ctx, fc.Name(), st, "test", ""); err != nil {
			t.Fatal(err)
		}
		v, err := statustopic.ReadView(ctx, p.Target.Opts(), p.Source.Alias)
		if err != nil {
			t.Fatal(err)
		}
		want := v.TargetOffset()
		testcluster.Eventually(t, 10*time.Second, fmt.Sprintf("write %d: the member reports %s from offset %d", i, st, want), func() (bool, string) {
			ms, err := statustopic.ReadMembers(ctx, p.Target.Opts(), p.Source.Alias, time.Now())
			if err != nil {
				return false, err.Error()
			}
			return len(ms) == 1 && ms[0].Applied == statustopic.TargetState(st) && ms[0].AppliedOffset == want, fmt.Sprintf("%+v", ms)
		})
	}
}

// TestSetTargetStateWhileRunStarts (regression, found in review, under
// -race): SetTargetState (PUT /connectors/{flow}/pause|resume|stop) called
// while the Mirror's Run was starting read the flow's admin client while
// openClients wrote it, without a lock (and closeClients cleared it: a
// call during Close could use a closed client). It uses its own client's
// admin now. The race showed in about 1 run in 4 to 8.
func TestSetTargetStateWhileRunStarts(t *testing.T) {
	t.Parallel()
	_, fc, m := heartbeatsOnlyMember(t)
	if err := m.SetTargetState(context.Background(), fc.Name(), TargetStopped, "test", ""); err != nil {
		t.Fatal(err)
	}
}

// TestStartedOnStoppedFlowLogsItHolds (an operator's find): a member
// started on a flow whose target state is STOPPED logged "target state at
// start state=STOPPED", then "flow state state=RUNNING", while its status
// said STOPPED. The line now says the flow holds its partitions stopped.
func TestStartedOnStoppedFlowLogsItHolds(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	testcluster.CreateTopic(t, &p.Source, p.Topic("orders"), 1, nil)
	fc := fastFlow(p)
	fc.Tasks = 1
	first, err := New(append(clusterOpts(p), WithFlow(fc))...) // writes the state only, never runs
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := first.SetTargetState(context.Background(), fc.Name(), TargetStopped, "test", "failed over"); err != nil {
		t.Fatal(err)
	}
	var lb logBuf
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	testcluster.Eventually(t, 30*time.Second, "the flow started, STOPPED", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.State == StateStopped && len(lb.lines("flow state", "RUNNING")) > 0, fmt.Sprintf("state %s, log %q", st.State, lb.lines("flow state"))
	})
	for _, l := range lb.lines("flow state", "RUNNING") {
		if !strings.Contains(l, "target_state=STOPPED") || !strings.Contains(l, "its partitions stay STOPPED until resumed") {
			t.Errorf("log line %q; want it to say the flow holds its partitions STOPPED", l)
		}
	}
}
