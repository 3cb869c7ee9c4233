package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

func TestMembersStopped(t *testing.T) {
	ms := []statustopic.MemberState{{MemberID: "a", Applied: statustopic.Stopped}, {MemberID: "b", Applied: statustopic.Running}}
	if live, applied := membersStopped(ms, statustopic.Stopped); live != 2 || applied != 1 {
		t.Errorf("membersStopped = %d live, %d applied; want 2, 1", live, applied)
	}
	if live, applied := membersStopped(nil, statustopic.Stopped); live != 0 || applied != 0 {
		t.Errorf("no members: %d, %d", live, applied)
	}
}

// TestFailoverWaitsForMembers: after writing STOPPED, failover commits only
// once every live member of the flow reports it applied STOPPED in its
// member record of the status topic (seam 1); a member still replicating
// after -wait refuses the commit (exit 1) with the state left STOPPED.
func TestFailoverWaitsForMembers(t *testing.T) {
	b, err := kfake.NewCluster(kfake.ClusterID("B"), kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	props := filepath.Join(t.TempDir(), "mm2.properties")
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
	member := func(state statustopic.TargetState) {
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
	member(statustopic.Running)
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-wait", "1s", "-json")
	rep := decodeFailover(t, out)
	if code != drRefused || rep.TargetState != "STOPPED" || rep.Members == nil || rep.Members.Live != 1 || rep.Members.Stopped != 0 ||
		len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "did not report STOPPED") {
		t.Fatalf("failover with a member still RUNNING: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := kadm.NewClient(cl); got != nil {
		offs, err := got.FetchOffsets(ctx, "g")
		if err == nil && len(offs) > 0 {
			t.Fatalf("committed %v while a member had not stopped", offs)
		}
	}
	member(statustopic.Stopped)
	code, out, errOut, _ = runDR(t, failoverMain, "-config", props, "-groups", "g", "-source-timeout", "500ms", "-wait", "1s", "-json")
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
