package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/statustopic"
)

type rerunWorld struct {
	t     *testing.T
	props string
	cl    *kgo.Client
	ctx   context.Context
	addrs []string // B's
	b     *kfake.Cluster
}

// opts reach B.
func (w *rerunWorld) opts() []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(w.addrs...)} }

// newRerunWorld: A dead, B holding A.orders (10 records), a checkpoint of
// group g at 5 and the flow's status topic.
func newRerunWorld(t *testing.T) *rerunWorld { return newRerunWorldN(t, 1) }

// newRerunWorldN is newRerunWorld with n partitions of A.orders, each of
// 10 records with g's checkpoint at 5.
func newRerunWorldN(t *testing.T, n int32) *rerunWorld {
	b, err := kfake.NewCluster(kfake.ClusterID("B"), kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	props := filepath.Join(t.TempDir(), "mm2.properties")
	body := fmt.Sprintf("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:%d\nB.bootstrap.servers = %s\nA->B.enabled = true\n",
		freeLoopbackPort(t), b.ListenAddrs()[0])
	if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic("A.orders", n, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic("A.checkpoints.internal", 1, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	for p := range n {
		for i := 0; i < 10; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "A.orders", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		cp := checkpoint.Checkpoint{Group: "g", Topic: "A.orders", Partition: p, UpstreamOffset: 5, DownstreamOffset: 5}
		k, _ := cp.Key()
		v, _ := cp.Value()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "A.checkpoints.internal", Key: k, Value: v,
			Headers: []kgo.RecordHeader{{Key: checkpoint.TranslationHeader, Value: []byte("exact")}}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ensuretopic.Ensure(ctx, kadm.NewClient(cl), statustopic.Spec("A", "B", -1)); err != nil {
		t.Fatal(err)
	}
	return &rerunWorld{t: t, props: props, cl: cl, ctx: ctx, addrs: b.ListenAddrs(), b: b}
}

// member writes the record of member m1, which applied state from the
// target-state record at offset off (nil: a release that does not say).
func (w *rerunWorld) member(state statustopic.TargetState, off *int64) {
	w.t.Helper()
	r, err := statustopic.MemberRecordOf("A", statustopic.MemberRecord{Flow: "A->B", MemberID: "m1", WorkerID: "w1:8080",
		Applied: state, AppliedOffset: off, State: string(state), IntervalMS: 5000, At: time.Now().UTC()})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.cl.ProduceSync(w.ctx, r).FirstErr(); err != nil {
		w.t.Fatal(err)
	}
}

func (w *rerunWorld) commitB(at int64) {
	w.t.Helper()
	o := kadm.Offsets{}
	o.Add(kadm.Offset{Topic: "A.orders", Partition: 0, At: at, LeaderEpoch: -1})
	if err := kadm.NewClient(w.cl).CommitAllOffsets(w.ctx, "g", o); err != nil {
		w.t.Fatal(err)
	}
}

func (w *rerunWorld) committedB() int64 {
	w.t.Helper()
	offs, err := kadm.NewClient(w.cl).FetchOffsets(w.ctx, "g")
	if err != nil {
		return -1 // no group
	}
	o, ok := offs.Lookup("A.orders", 0)
	if !ok {
		return -1
	}
	return o.At
}

// TestFailoverAfterWaitRefusalIsNoRerun (found by a review): a first
// failover refused because a member had not reported STOPPED within -stop-wait
// committed nothing; the group on B is still where group offset sync left
// it before a rewind on A (9, ahead of the translation 5). Run again as
// the report says, the failover is its first commit: the translation 5 is
// committed (it was taken for a rerun and kept 9, skipping the rewound
// records).
func TestFailoverAfterWaitRefusalIsNoRerun(t *testing.T) {
	w := newRerunWorld(t)
	w.commitB(9) // synced before the rewind on A
	w.member(statustopic.Running, nil)
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s", "-json")
	if code != drRefused || w.committedB() != 9 {
		t.Fatalf("first failover: exit %d, committed %d\n%s\n%s", code, w.committedB(), out, errOut)
	}
	followMember(t, w.addrs, "m1")
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	rep := decodeFailover(t, out)
	if got := w.committedB(); code != drOK || rep.Rerun || got != 5 {
		t.Fatalf("failover run again after a -wait refusal (nothing committed before): exit %d, rerun %v, g on B at %d; want the translation 5 committed\n%s\n%s",
			code, rep.Rerun, got, out, errOut)
	}
}

// TestFailoverAfterOperatorStopKeepsAhead (found by a review): after a
// failover committed 5, the consumers on B moved on to 9; an operator then
// PUT /stop on the flow (idempotent), which rewrites the target-state
// record. The failover run again keeps 9 (it moved the group back when
// reruns were told from the target-state record).
func TestFailoverAfterOperatorStopKeepsAhead(t *testing.T) {
	w := newRerunWorld(t)
	followMember(t, w.addrs, "m1")
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	if code != drOK || w.committedB() != 5 {
		t.Fatalf("first failover: exit %d, committed %d\n%s\n%s", code, w.committedB(), out, errOut)
	}
	w.commitB(9) // consumers on B moved on
	rec := statustopic.TargetStateRecord{Flow: "A->B", State: statustopic.Stopped, At: time.Now().UTC(), By: "PUT /connectors/A->B/stop on w1:8080"}
	if err := statustopic.WriteTargetState(w.ctx, w.cl, "A", rec); err != nil {
		t.Fatal(err)
	}
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	rep := decodeFailover(t, out)
	if got := w.committedB(); got != 9 {
		t.Fatalf("failover run again after an operator's stop: exit %d, rerun %v, g on B moved from 9 to %d\n%s\n%s",
			code, rep.Rerun, got, out, errOut)
	}
}

// TestFailoverWithUnreadableTargetStateRecord (found by a review): a
// hand-written target-state record that cannot be read (state "HALT") is a
// /status warning for the members; failover overwrites it with STOPPED and
// commits (it refused to run when it read that record to tell a rerun).
func TestFailoverWithUnreadableTargetStateRecord(t *testing.T) {
	w := newRerunWorld(t)
	followMember(t, w.addrs, "m1")
	r, err := statustopic.TargetStateRecordOf("A", statustopic.TargetStateRecord{Flow: "A->B", State: statustopic.Stopped, At: time.Now().UTC(), By: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	r.Value = []byte(`{"flow":"A->B","state":"HALT","at":"today","by":"ops"}`)
	if err := w.cl.ProduceSync(w.ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	if got := w.committedB(); code != drOK || got != 5 {
		t.Fatalf("failover over an unreadable target-state record: exit %d, g on B at %d; want 0 and 5\n%s\n%s", code, got, out, errOut)
	}
}

// TestFailoverAgainAfterAFailbackOfAnotherGroup (found by a review):
// failover of g commits 5; g's consumers move on on B to 9; a failback of
// another group h records h alone (the record was replaced as a whole,
// forgetting g); failover of g run again keeps g at 9. A failback of g
// itself, on the contrary, makes the next failover of g a first commit.
func TestFailoverAgainAfterAFailbackOfAnotherGroup(t *testing.T) {
	w := newRerunWorld(t)
	followMember(t, w.addrs, "m1")
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	if code != drOK || w.committedB() != 5 {
		t.Fatalf("first failover: exit %d, committed %d\n%s\n%s", code, w.committedB(), out, errOut)
	}
	w.commitB(9) // g's consumers moved on on B
	rec, found, err := statustopic.ReadDR(w.ctx, w.opts(), "A")
	if err != nil || !found || rec.Groups["g"] != drFailover {
		t.Fatalf("dr record after the failover: %+v, found %v, %v; want g committed by failover", rec, found, err)
	}
	// What a failback of h writes over it (recordDR: per group).
	rec.Groups["h"], rec.At = drFailback, time.Now().UTC()
	if err := statustopic.WriteDR(w.ctx, w.cl, "A", rec); err != nil {
		t.Fatal(err)
	}
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	rep := decodeFailover(t, out)
	if got := w.committedB(); code != drOK || !rep.Rerun || got != 9 {
		t.Fatalf("failover of g after a failback of h only: exit %d, rerun %v, g on B at %d; want 9 kept\n%s\n%s", code, rep.Rerun, got, out, errOut)
	}
	// A failback of g: the next failover of g is a first commit.
	rec.Groups["g"] = drFailback
	if err := statustopic.WriteDR(w.ctx, w.cl, "A", rec); err != nil {
		t.Fatal(err)
	}
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	if got := w.committedB(); code != drOK || got != 5 {
		t.Fatalf("failover of g after a failback of g: exit %d, g on B at %d; want the translation 5\n%s\n%s", code, got, out, errOut)
	}
	if rec, _, _ := statustopic.ReadDR(w.ctx, w.opts(), "A"); rec.Groups["g"] != drFailover || rec.Groups["h"] != drFailback {
		t.Errorf("dr record after the last failover: %+v; want g by failover, h by failback", rec.Groups)
	}
}

// TestFailoverWaitsForItsOwnStop: the flow was stopped (its only member
// reports STOPPED from that record), then resumed; the member has not
// published since (it is about to start replicating again). A failover
// writes STOPPED and waits for the member to apply that record: the
// member's STOPPED from before the resume does not count (it did, and the
// offsets were committed while the member could be restarting
// replication, checkpoints and group offset sync). Once the member applies
// the new record, the failover commits.
func TestFailoverWaitsForItsOwnStop(t *testing.T) {
	w := newRerunWorld(t)
	write := func(st statustopic.TargetState, by string) int64 {
		t.Helper()
		off, err := statustopic.WriteTargetStateOffset(w.ctx, w.cl, "A", statustopic.TargetStateRecord{Flow: "A->B", State: st, At: time.Now().UTC(), By: by})
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	stop := write(statustopic.Stopped, "PUT /connectors/A->B/stop on w1:8080")
	w.member(statustopic.Stopped, &stop) // applied that stop
	write(statustopic.Running, "PUT /connectors/A->B/resume on w1:8080")
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s", "-json")
	rep := decodeFailover(t, out)
	want := []string{"1 of 1 live member(s) of A->B did not report STOPPED within -stop-wait 1s (worker w1:8080 (member m1) applied STOPPED from an earlier record): nothing committed; the flow's target state is RUNNING again, as before this run; run failover again once the problems above are resolved"}
	if got := w.committedB(); code != drRefused || rep.Members == nil || !reflect.DeepEqual(*rep.Members, membersReport{Live: 1, Stopped: 0, WaitedMs: rep.Members.WaitedMs,
		Pending: []string{"worker w1:8080 (member m1) applied STOPPED from an earlier record"}}) ||
		!slices.Equal(rep.Problems, want) || got != -1 {
		t.Fatalf("failover while the only member's STOPPED predates a resume: exit %d, members %+v, problems %q, g on B at %d; want %d, 1 live 0 stopped, %q, nothing committed\n%s",
			code, rep.Members, rep.Problems, got, drRefused, want, errOut)
	}
	w.member(statustopic.Stopped, nil) // a release that does not say which record: as old
	code, out, _, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-stop-wait", "1s", "-json")
	if rep := decodeFailover(t, out); code != drRefused || rep.Members == nil || rep.Members.Stopped != 0 || w.committedB() != -1 {
		t.Fatalf("failover with a member record without applied_state_offset: exit %d, members %+v, g on B at %d; want refused, nothing committed", code, rep.Members, w.committedB())
	}
	followMember(t, w.addrs, "m1")
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	rep = decodeFailover(t, out)
	if got := w.committedB(); code != drOK || rep.Members == nil || rep.Members.Live != 1 || rep.Members.Stopped != 1 || got != 5 {
		t.Fatalf("failover once the member applies its STOPPED: exit %d, members %+v, g on B at %d; want 0, 1 of 1, 5\n%s", code, rep.Members, got, errOut)
	}
}

// TestFailoverSaysWhySourceIsDown: the unplanned failover's line says why
// the source probe failed from its error: a connection refused at once is
// "unreachable: ... connection refused" (it said "did not answer within
// 1s"), a timeout "did not answer within".
func TestFailoverSaysWhySourceIsDown(t *testing.T) {
	w := newRerunWorld(t)
	followMember(t, w.addrs, "m1")
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "1s", "-wait", "5s", "-json")
	re := regexp.MustCompile(`^kmirror failover: source A unreachable: cluster A: unable to dial: dial tcp 127\.0\.0\.1:\d+: connect: connection refused: unplanned failover from the last checkpoints\n`)
	if code != drOK || !re.MatchString(errOut) {
		t.Fatalf("failover with A refusing connections: exit %d, stderr %q; want 0 and a line matching %s\n%s", code, errOut, re, out)
	}
	if got, want := sourceDown("A", fmt.Errorf("cluster A: %w", context.DeadlineExceeded), time.Second), "source A did not answer within 1s"; got != want {
		t.Errorf("sourceDown of a timeout = %q, want %q", got, want)
	}
}

// TestFailoverRerunOnlyForMatchedGroups (found by a breaker): the report
// said rerun (and "an earlier failover committed: the groups it committed
// keep their offsets") whenever the DR record named any group a failover
// committed, also when this run matched none of them. Now rerun is set
// only for a group the run matches.
func TestFailoverRerunOnlyForMatchedGroups(t *testing.T) {
	w := newRerunWorld(t)
	followMember(t, w.addrs, "m1")
	if err := statustopic.WriteDR(w.ctx, w.cl, "A", statustopic.DRRecord{Flow: "A->B", At: time.Now().UTC(), Groups: map[string]string{"other": drFailover}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	rep := decodeFailover(t, out)
	if code != drOK || rep.Rerun || w.committedB() != 5 {
		t.Fatalf("failover of g after an earlier failover of another group: exit %d, rerun %v, g on B at %d; want exit 0, no rerun, 5\n%s\n%s", code, rep.Rerun, w.committedB(), out, errOut)
	}
	// g itself committed now: a run again is a rerun.
	_, out, _, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	if rep := decodeFailover(t, out); !rep.Rerun {
		t.Errorf("failover of g run again: rerun false, want true\n%s", out)
	}
}
