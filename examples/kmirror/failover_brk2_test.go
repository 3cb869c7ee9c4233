package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// brk2State writes the flow A->B's target state on B as an operator
// does (PUT /connectors/A->B/pause|resume writes this record).
func brk2State(t *testing.T, cl *kgo.Client, state statustopic.TargetState, by, reason string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := statustopic.WriteTargetState(ctx, cl, "A", statustopic.TargetStateRecord{Flow: "A->B", State: state,
		At: time.Now().UTC(), By: by, Reason: reason}); err != nil {
		t.Fatal(err)
	}
}

// onStopped calls fn once the status topic on b holds a STOPPED target
// state of flow A->B (the failover command wrote it and waits for the
// members), from a goroutine the test's cleanup stops.
func onStopped(t *testing.T, b *kfake.Cluster, fn func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		opts := []kgo.Opt{kgo.SeedBrokers(b.ListenAddrs()...)}
		for ctx.Err() == nil {
			if st, found, _ := statustopic.ReadTargetState(ctx, opts, "A"); found && st.State == statustopic.Stopped {
				fn(ctx)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// brk2OnStopped writes state (by an operator) once the status topic on b
// holds a STOPPED target state: an operator acting while failover waits
// for the members.
func brk2OnStopped(t *testing.T, b *kfake.Cluster, cl *kgo.Client, state statustopic.TargetState, by string) {
	onStopped(t, b, func(ctx context.Context) {
		err := statustopic.WriteTargetState(ctx, cl, "A", statustopic.TargetStateRecord{Flow: "A->B", State: state,
			At: time.Now().UTC(), By: by})
		if err != nil && ctx.Err() == nil {
			t.Error(err)
		}
	})
}

func brk2TargetState(t *testing.T, b *kfake.Cluster) statustopic.TargetStateRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, found, err := statustopic.ReadTargetState(ctx, []kgo.Opt{kgo.SeedBrokers(b.ListenAddrs()...)}, "A")
	if err != nil || !found {
		t.Fatalf("target state %+v (found %t): %v", st, found, err)
	}
	return st
}

// TestBrk2FailoverRefusalKeepsOperatorPause: an operator pauses the flow
// (PUT /connectors/A->B/pause) while failover waits for a member that
// does not report STOPPED. The refusal wrote RUNNING (the state at the
// start) over the operator's PAUSED: the flow replicated again against
// the operator's newer decision. The write-back only replaces the record
// failover wrote; a newer one is left, and the report says so.
func TestBrk2FailoverRefusalKeepsOperatorPause(t *testing.T) {
	props, b, cl, member := membersWorld(t)
	member(statustopic.Running) // never applies STOPPED
	brk2OnStopped(t, b, cl, statustopic.Paused, "alice")
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "3s", "-json")
	rep := decodeFailover(t, out)
	if st := brk2TargetState(t, b); st.State != statustopic.Paused || st.By != "alice" {
		t.Fatalf("after the refusal the target state is %s by %q, want the operator's PAUSED by alice left\n%s\n%s", st.State, st.By, out, errOut)
	}
	want := "the flow's target state was set to PAUSED by alice"
	if code != drRefused || rep.TargetState != "STOPPED" || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], want) {
		t.Fatalf("exit %d, target_state %q, problems %q; want %d, STOPPED, one saying %q", code, rep.TargetState, rep.Problems, drRefused, want)
	}
}

// TestBrk2FailoverRefusalKeepsOperatorResume: the flow was PAUSED before
// the run; an operator resumes it while failover waits (to call the
// failover off). The refusal wrote PAUSED back over the resume.
func TestBrk2FailoverRefusalKeepsOperatorResume(t *testing.T) {
	props, b, cl, member := membersWorld(t)
	brk2State(t, cl, statustopic.Paused, "alice", "maintenance")
	member(statustopic.Paused) // never applies STOPPED
	brk2OnStopped(t, b, cl, statustopic.Running, "bob")
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "3s", "-json")
	if st := brk2TargetState(t, b); st.State != statustopic.Running || st.By != "bob" {
		t.Fatalf("after the refusal (exit %d) the target state is %s by %q, want the operator's RUNNING by bob left\n%s\n%s", code, st.State, st.By, out, errOut)
	}
}

// TestBrk2FailoverRefusalBeforeIsTheStateAtTheStop: an operator pauses
// the flow after failover read its target state, before it wrote STOPPED
// (planned, that is the catch-up's -wait, up to minutes). The refusal
// wrote back the state read at the start (RUNNING), undoing the pause.
func TestBrk2FailoverRefusalBeforeIsTheStateAtTheStop(t *testing.T) {
	props, b, cl, member := membersWorld(t)
	member(statustopic.Running) // never applies STOPPED
	var once atomic.Bool
	b.ControlKey(int16(kmsg.DescribeGroups), func(kmsg.Request) (kmsg.Response, error, bool) {
		if once.CompareAndSwap(false, true) { // the plan's read, after the start's read of the status topic
			b.SleepControl(func() { brk2State(t, cl, statustopic.Paused, "alice", "maintenance") })
		}
		return nil, nil, false
	})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s", "-json")
	rep := decodeFailover(t, out)
	if st := brk2TargetState(t, b); code != drRefused || !once.Load() || st.State != statustopic.Paused || rep.TargetState != "PAUSED" {
		t.Fatalf("exit %d, target_state %q; after the refusal the target state is %s by %q, want PAUSED (the state at the stop) written back\n%s\n%s",
			code, rep.TargetState, st.State, st.By, out, errOut)
	}
}

// TestBrk2FailoverWriteBackKeepsWhoAndWhy: the state written back keeps
// who set it and why (verify's flow state line, /status): it said only
// "kmirror failover (refused: nothing committed)", the operator's reason
// lost.
func TestBrk2FailoverWriteBackKeepsWhoAndWhy(t *testing.T) {
	props, b, cl, member := membersWorld(t)
	brk2State(t, cl, statustopic.Paused, "alice", "maintenance window")
	member(statustopic.Paused) // never applies STOPPED
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s", "-json")
	st := brk2TargetState(t, b)
	if code != drRefused || st.State != statustopic.Paused || !strings.Contains(st.Reason, "alice") || !strings.Contains(st.Reason, "maintenance window") {
		t.Fatalf("exit %d; written back: %+v; want PAUSED with a reason naming alice and %q\n%s\n%s", code, st, "maintenance window", out, errOut)
	}
}

// TestBrk2FailoverBadNewestRecordBefore: the newest target-state record
// cannot be read (written by hand with a typo); the members keep the last
// one that can, PAUSED. failover took the state before it as RUNNING, and
// its refusal resumed a flow that was paused.
func TestBrk2FailoverBadNewestRecordBefore(t *testing.T) {
	props, b, cl, member := membersWorld(t)
	brk2State(t, cl, statustopic.Paused, "alice", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: statustopic.Topic("A"), Key: []byte(statustopic.TargetStateKey),
		Value: []byte(`{"flow":"A->B","state":"PAUSD"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	member(statustopic.Paused) // what a member applies: the last readable record
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s", "-json")
	if st := brk2TargetState(t, b); code != drRefused || st.State != statustopic.Paused {
		t.Fatalf("exit %d; after the refusal the target state is %s by %q, want PAUSED (what the members ran) written back\n%s\n%s", code, st.State, st.By, out, errOut)
	}
}

// TestBrk2FailoverWriteBackFailedAdvice: the flow was PAUSED; writing it
// back fails (the target refuses the write). The report said "resume it
// (PUT /connectors/A->B/resume ...)", which would make it RUNNING, not
// PAUSED as it was.
func TestBrk2FailoverWriteBackFailedAdvice(t *testing.T) {
	props, b, cl, member := membersWorld(t)
	brk2State(t, cl, statustopic.Paused, "alice", "")
	member(statustopic.Paused) // never applies STOPPED
	var produces atomic.Int32
	b.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		b.KeepControl()
		if produces.Add(1) == 1 {
			return nil, nil, false // failover's STOPPED
		}
		req := kr.(*kmsg.ProduceRequest) // then the status topic refuses writes
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s", "-json")
	rep := decodeFailover(t, out)
	want := "pause it (PUT /connectors/A-%3EB/pause on a member)"
	if code != drRefused || rep.TargetState != "STOPPED" || len(rep.Problems) != 1 ||
		!strings.Contains(rep.Problems[0], "the flow stays STOPPED: writing its target state PAUSED back failed") || !strings.Contains(rep.Problems[0], want) {
		t.Fatalf("exit %d, target_state %q, problems %q; want %d, STOPPED, one saying the write failed and %q\n%s", code, rep.TargetState, rep.Problems, drRefused, want, errOut)
	}
}

// TestBrk2FailoverRefusalTextSaysStopped: after a refusal that wrote
// RUNNING back, the text report read "target state RUNNING written; 1 live
// member(s), 0 applied it": STOPPED, which the members were waited for,
// was not named, and "applied it" read as RUNNING.
func TestBrk2FailoverRefusalTextSaysStopped(t *testing.T) {
	props, _, _, member := membersWorld(t)
	member(statustopic.Running) // never applies STOPPED
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s")
	want := "flow A->B: target state STOPPED written; 1 live member(s), 0 applied it (waited "
	want2 := "; target state RUNNING written back\n"
	if code != drRefused || !strings.Contains(out, want) || !strings.Contains(out, want2) {
		t.Fatalf("exit %d; want the text to say %q ... %q\n%s\n%s", code, want, want2, out, errOut)
	}
}

// TestBrk2FailoverSecondReadFailsSaysStopped: the plan made again after
// the stop cannot read the target (here B refuses to describe the group;
// a Ctrl-C there is the same path). The report gave only the read's error:
// not that STOPPED was written, nothing committed, and how to go on, as
// the members' wait says since 2026-12-06.
func TestBrk2FailoverSecondReadFailsSaysStopped(t *testing.T) {
	props, b, _, _ := membersWorld(t) // no live member: the wait ends at once
	var describes atomic.Int32
	b.ControlKey(int16(kmsg.DescribeGroups), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		b.KeepControl()
		if describes.Add(1) == 1 {
			return nil, nil, false // the first plan's
		}
		req := kr.(*kmsg.DescribeGroupsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s", "-json")
	rep := decodeFailover(t, out)
	want := "(after writing STOPPED: nothing committed; the flow stays STOPPED: run failover again, or resume it with PUT /connectors/A-%3EB/resume on a member)"
	if code != drUnreachable || rep.TargetState != "STOPPED" || len(rep.Problems) != 1 ||
		!strings.Contains(rep.Problems[0], "GROUP_AUTHORIZATION_FAILED") || !strings.HasSuffix(rep.Problems[0], want) {
		t.Fatalf("exit %d, target_state %q, problems %q; want %d, STOPPED, one ending %q\n%s", code, rep.TargetState, rep.Problems, drUnreachable, want, errOut)
	}
	if st := brk2TargetState(t, b); st.State != statustopic.Stopped {
		t.Fatalf("target state %s, want STOPPED left", st.State)
	}
}
