package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestMembersStopped: a member counts as stopped when it applied STOPPED
// from the record failover wrote (offset 5) or a later one; STOPPED from
// an earlier record (before a resume it may not have applied yet), or
// from a release that does not say which record (-1), does not count.
func TestMembersStopped(t *testing.T) {
	ms := []statustopic.MemberState{
		{MemberID: "a", Applied: statustopic.Stopped, AppliedOffset: 5},
		{MemberID: "b", Applied: statustopic.Running, AppliedOffset: 9},
		{MemberID: "c", Applied: statustopic.Stopped, AppliedOffset: 3},
		{MemberID: "d", Applied: statustopic.Stopped, AppliedOffset: -1},
		{MemberID: "e", Applied: statustopic.Stopped, AppliedOffset: 7},
	}
	ms[1].WorkerID = "w2:8080"
	wantPending := []string{"worker w2:8080 (member b) applied RUNNING", "worker  (member c) applied STOPPED from an earlier record",
		"worker  (member d) applied STOPPED (a release that does not say from which record)"}
	if live, applied, pending := membersStopped(ms, statustopic.Stopped, 5); live != 5 || applied != 2 || !slices.Equal(pending, wantPending) {
		t.Errorf("membersStopped = %d live, %d applied, pending %q; want 5, 2 (a and e), %q", live, applied, pending, wantPending)
	}
	if live, applied, pending := membersStopped(nil, statustopic.Stopped, 5); live != 0 || applied != 0 || pending != nil {
		t.Errorf("no members: %d, %d, %q", live, applied, pending)
	}
}

// followMember runs, until the test ends, member id of the flow A->B as
// far as the status topic of A on the cluster at addrs shows it: it writes
// its record (RUNNING from no record) at once, and again, with the state
// and the record's offset, after each target-state record it reads, as a
// member applying them does.
func followMember(t *testing.T, addrs []string, id string) {
	t.Helper()
	followMemberThen(t, addrs, id, nil)
}

// followMemberThen is followMember calling onStopped, when not nil, on
// reading a STOPPED record, before it reports it applied.
func followMemberThen(t *testing.T, addrs []string, id string, onStopped func()) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{statustopic.Topic("A"): {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	write := func(st statustopic.TargetState, off int64) error {
		r, err := statustopic.MemberRecordOf("A", statustopic.MemberRecord{Flow: "A->B", MemberID: id, WorkerID: "w1:8080",
			Applied: st, AppliedOffset: &off, State: string(st), IntervalMS: 5000, At: time.Now().UTC()})
		if err == nil {
			err = cl.ProduceSync(ctx, r).FirstErr()
		}
		return err
	}
	if err := write(statustopic.Running, -1); err != nil {
		cancel()
		cl.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				if string(r.Key) != statustopic.TargetStateKey || r.Value == nil {
					return
				}
				if rec, err := statustopic.DecodeTargetState(r.Value); err == nil {
					if rec.State == statustopic.Stopped && onStopped != nil {
						onStopped()
					}
					if err := write(rec.State, r.Offset); err != nil && ctx.Err() == nil {
						t.Errorf("member %s: %v", id, err)
					}
				}
			})
		}
	}()
}

// membersWorld is the B side of a failover whose source A never answers
// (unplanned): A.orders with an exact checkpoint of group g at 5, the
// status topic, and member, which writes member m1's record applying a
// state. It returns the properties file, B and a client of B.
func membersWorld(t *testing.T) (props string, b *kfake.Cluster, cl *kgo.Client, member func(statustopic.TargetState)) {
	t.Helper()
	var err error
	b, err = kfake.NewCluster(kfake.ClusterID("B"), kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	props = filepath.Join(t.TempDir(), "mm2.properties")
	body := fmt.Sprintf("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:%d\nB.bootstrap.servers = %s\nA->B.enabled = true\n",
		freeLoopbackPort(t), b.ListenAddrs()[0]) // A: nothing listens there
	if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic("A.orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic("A.checkpoints.internal", 1, nil); err != nil {
		t.Fatal(err)
	}
	cl, err = kgo.NewClient(kgo.SeedBrokers(b.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cp := checkpoint.Checkpoint{Group: "g", Topic: "A.orders", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 5}
	k, _ := cp.Key()
	v, _ := cp.Value()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "A.checkpoints.internal", Key: k, Value: v,
		Headers: []kgo.RecordHeader{{Key: checkpoint.TranslationHeader, Value: []byte("exact")}}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := ensuretopic.Ensure(ctx, kadm.NewClient(cl), statustopic.Spec("A", "B", -1)); err != nil {
		t.Fatal(err)
	}
	member = func(state statustopic.TargetState) {
		t.Helper()
		r, err := statustopic.MemberRecordOf("A", statustopic.MemberRecord{Flow: "A->B", MemberID: "m1", WorkerID: "w1:8080",
			Applied: state, State: string(state), IntervalMS: 5000, At: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return props, b, cl, member
}

// TestFailoverWaitsForMembers: after writing STOPPED, failover commits only
// once every live member of the flow reports it applied STOPPED in its
// member record of the status topic (seam 1); a member still replicating
// after -stop-wait refuses the commit (exit 1) and writes the target state
// it had back (RUNNING).
func TestFailoverWaitsForMembers(t *testing.T) {
	props, b, cl, member := membersWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	member(statustopic.Running)
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s", "-json")
	rep := decodeFailover(t, out)
	if code != drRefused || rep.TargetState != "RUNNING" || rep.Members == nil || rep.Members.Live != 1 || rep.Members.Stopped != 0 ||
		len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "did not report STOPPED") {
		t.Fatalf("failover with a member still RUNNING: exit %d\n%s\n%s", code, out, errOut)
	}
	if st, found, err := statustopic.ReadTargetState(ctx, []kgo.Opt{kgo.SeedBrokers(b.ListenAddrs()...)}, "A"); err != nil || !found || st.State != statustopic.Running {
		t.Fatalf("after the refusal the flow's target state is %+v (found %t, %v), want RUNNING written back", st, found, err)
	}
	if got := kadm.NewClient(cl); got != nil {
		offs, err := got.FetchOffsets(ctx, "g")
		if err == nil && len(offs) > 0 {
			t.Fatalf("committed %v while a member had not stopped", offs)
		}
	}
	followMember(t, b.ListenAddrs(), "m1") // applies the STOPPED the next run writes
	code, out, errOut, _ = runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-wait", "0s", "-json")
	rep = decodeFailover(t, out)
	if code != drOK || rep.Members.Live != 1 || rep.Members.Stopped != 1 || rep.Groups[0].Action != actionCommitted {
		t.Fatalf("failover with the member STOPPED: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestReverseLines: what failback asks the file for.
func TestReverseLines(t *testing.T) {
	d := &drFlow{}
	d.flow.Source, d.flow.Target, d.flow.Topics = "A", "B", []string{"orders"}
	if got := reverseLines(d, d.flow, false, []string{"g"}); fmt.Sprint(got) != "[B->A.enabled = true B->A.topics = orders]" {
		t.Errorf("missing reverse flow: %q", got)
	}
	rev := d.flow
	rev.Source, rev.Target, rev.DisableCheckpoints, rev.Groups = "B", "A", true, []string{"billing"}
	got := reverseLines(d, rev, true, []string{"billing", "orders-consumer"})
	want := []string{"B->A.emit.checkpoints.enabled = true", "B->A.groups = billing, orders-consumer (the flow's groups and groups.exclude leave out orders-consumer)"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("incomplete reverse flow: %q, want %q", got, want)
	}
	rev.DisableCheckpoints, rev.Groups = false, nil
	if got := reverseLines(d, rev, true, []string{"orders-consumer"}); len(got) != 0 {
		t.Errorf("complete reverse flow: %q, want none", got)
	}
}

// TestReverseBehind: failback waits for the reverse flow's checkpoint of
// each latest commit on B's own topics, and, within -wait, for it to be
// exact (a checkpoint written before the offset syncs of its records
// arrived is only safe, and a later emission makes it exact: failback had
// committed a safe one, re-reading records, under load).
func TestReverseBehind(t *testing.T) {
	pol, err := policy.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	d := &drFlow{pol: pol}
	d.flow.Source, d.flow.Target = "A", "B"
	committed := map[string]map[string]map[int32]int64{"g": {"billing": {0: 20, 1: 7, 2: 5}, "A.orders": {0: 9}}}
	cps := map[string][]remoteclusterutils.PartitionTranslation{"g": {
		{Topic: "B.billing", Partition: 0, SourceOffset: 20, Translation: remoteclusterutils.TranslationSafe},
		{Topic: "B.billing", Partition: 1, SourceOffset: 7, Translation: remoteclusterutils.TranslationExact},
		{Topic: "B.billing", Partition: 2, SourceOffset: 3, Translation: remoteclusterutils.TranslationExact},
	}}
	behind, inexact := reverseBehind(d, committed, cps, func(string) bool { return true })
	if want := []string{"group g: billing[2] committed at 5 on B, checkpointed at 3"}; fmt.Sprint(behind) != fmt.Sprint(want) {
		t.Errorf("behind %q, want %q", behind, want)
	}
	if want := []string{"group g: billing[0] checkpointed at 20, not exact yet"}; fmt.Sprint(inexact) != fmt.Sprint(want) {
		t.Errorf("inexact %q, want %q", inexact, want)
	}
}

// TestFailoverInterruptedWhileMembersStop (a breaker's finding, then a
// second new user's): a failover interrupted while it waits for the
// members, STOPPED written, said only "context canceled" and left the flow
// STOPPED while the source's producers went on. Nothing is committed, so
// it writes the state from before back, as a refusal does (exit 3).
func TestFailoverInterruptedWhileMembersStop(t *testing.T) {
	props, b, cl, member := membersWorld(t)
	member(statustopic.Running) // never applies STOPPED
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupted once STOPPED is written, while the command waits for
	// the members (a fixed delay could end before it on a loaded machine).
	onStopped(t, b, func(context.Context) {
		time.Sleep(200 * time.Millisecond) // into the wait
		cancel()
	})
	var out, errOut bytes.Buffer
	code := failoverMain(ctx, []string{"-config", props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1m", "-json"}, &out, &errOut)
	rep := decodeFailover(t, out.String())
	want := []string{"interrupted while waiting for the members (context canceled): nothing committed; the flow's target state is RUNNING again, as before this run; run failover again once the problems above are resolved"}
	if code != drUnreachable || rep.Result != "interrupted" || rep.TargetState != "RUNNING" || !slices.Equal(rep.Problems, want) {
		t.Fatalf("failover interrupted in the members' wait: exit %d, result %q, state %q, problems %q; want %d, interrupted, RUNNING, %q\n%s",
			code, rep.Result, rep.TargetState, rep.Problems, drUnreachable, want, errOut.String())
	}
	if offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "g"); err == nil && len(offs) > 0 {
		t.Fatalf("committed %v on B", offs)
	}
	if st, found, err := statustopic.ReadTargetState(context.Background(), []kgo.Opt{kgo.SeedBrokers(b.ListenAddrs()...)}, "A"); err != nil || !found || st.State != statustopic.Running {
		t.Fatalf("target state %+v (found %t, %v), want RUNNING written back", st, found, err)
	}
}
