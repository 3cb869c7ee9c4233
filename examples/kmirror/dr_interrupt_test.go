package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/statustopic"
)

// backWorld is the world of a failback without runners: A and B up, the
// groups committed on B at 5 on each partition of A.orders, a live
// RUNNING member of B->A in its status topic on A, and offset syncs of
// A->B on A mapping 5 on B to 5 on A (orders and A.orders hold 10
// records per partition).
type backWorld struct {
	t        *testing.T
	props    string
	a, b     *kfake.Cluster
	aCl, bCl *kgo.Client
	ctx      context.Context
}

func newBackWorld(t *testing.T, n int32, groups ...string) *backWorld {
	t.Helper()
	w := &backWorld{t: t}
	var err error
	if w.a, err = kfake.NewCluster(kfake.ClusterID("A"), kfake.NumBrokers(1)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.a.Close)
	if w.b, err = kfake.NewCluster(kfake.ClusterID("B"), kfake.NumBrokers(1)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.b.Close)
	w.props = filepath.Join(t.TempDir(), "mm2.properties")
	body := fmt.Sprintf("clusters = A, B\nA.bootstrap.servers = %s\nB.bootstrap.servers = %s\nA->B.enabled = true\nB->A.enabled = true\n",
		w.a.ListenAddrs()[0], w.b.ListenAddrs()[0])
	if err := os.WriteFile(w.props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	w.ctx = ctx
	client := func(c *kfake.Cluster) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	w.aCl, w.bCl = client(w.a), client(w.b)
	for _, c := range []struct {
		on    *kfake.Cluster
		topic string
		n     int32
	}{{w.a, "orders", n}, {w.a, "mm2-offset-syncs.B.internal", 1}, {w.b, "A.orders", n}} {
		if err := c.on.CreateTopic(c.topic, c.n, nil); err != nil {
			t.Fatal(err)
		}
	}
	for p := range n {
		for range 10 {
			for _, x := range []struct {
				cl    *kgo.Client
				topic string
			}{{w.aCl, "orders"}, {w.bCl, "A.orders"}} {
				if err := x.cl.ProduceSync(ctx, &kgo.Record{Topic: x.topic, Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
		s := checkpoint.OffsetSync{Topic: "orders", Partition: p, UpstreamOffset: 5, DownstreamOffset: 5}
		k, _ := s.Key()
		v, _ := s.Value()
		if err := w.aCl.ProduceSync(ctx, &kgo.Record{Topic: "mm2-offset-syncs.B.internal", Key: k, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ensuretopic.Ensure(ctx, kadm.NewClient(w.aCl), statustopic.Spec("B", "A", -1)); err != nil {
		t.Fatal(err)
	}
	if _, err := ensuretopic.Ensure(ctx, kadm.NewClient(w.bCl), statustopic.Spec("A", "B", -1)); err != nil {
		t.Fatal(err)
	}
	r, err := statustopic.MemberRecordOf("B", statustopic.MemberRecord{Flow: "B->A", MemberID: "r1", WorkerID: "w2:8080",
		State: "RUNNING", IntervalMS: 60000, At: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.aCl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		o := kadm.Offsets{}
		for p := range n {
			o.Add(kadm.Offset{Topic: "A.orders", Partition: p, At: 5, LeaderEpoch: -1})
		}
		if err := kadm.NewClient(w.bCl).CommitAllOffsets(ctx, g, o); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// commit commits g's offsets on the topic of cl's cluster.
func commitAt(t *testing.T, ctx context.Context, cl *kgo.Client, g, topic string, at map[int32]int64) {
	t.Helper()
	o := kadm.Offsets{}
	for p, x := range at {
		o.Add(kadm.Offset{Topic: topic, Partition: p, At: x, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, g, o); err != nil {
		t.Fatal(err)
	}
}

// committedOn returns g's committed offsets on cl's cluster by partition.
func committedOn(t *testing.T, ctx context.Context, cl *kgo.Client, g string) map[int32]int64 {
	t.Helper()
	got := map[int32]int64{}
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, g)
	if err != nil {
		return got
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			got[o.Partition] = o.At
		}
	})
	return got
}

// cancelOnCommitOf cancels the command's context when c receives the
// first OffsetCommit of group g, which it drops.
func cancelOnCommitOf(c *kfake.Cluster, g string, cancel func()) {
	var n atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if r.(*kmsg.OffsetCommitRequest).Group == g && n.Add(1) == 1 {
			cancel()
			time.Sleep(200 * time.Millisecond)
			return nil, errors.New("dropped"), true
		}
		return nil, nil, false
	})
}

// TestFailbackInterruptedMidCommitsSaysInterrupted: failback commits g on
// A, then is interrupted (SIGINT) before h's commit. failover says
// "interrupted" (exit 3) there; failback said "refused" (exit 1, which the
// README reads as nothing committed, the broker's refusals aside) with h
// "commit refused on A: context canceled", though no broker refused
// anything and g was committed. It must say interrupted, exit 3, name the
// interruption as the reason h is not committed, and record g so that the
// run again keeps it.
func TestFailbackInterruptedMidCommitsSaysInterrupted(t *testing.T) {
	w := newBackWorld(t, 1, "g", "h")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelOnCommitOf(w.a, "h", cancel)
	var out, errOut bytes.Buffer
	code := failbackMain(ctx, []string{"-config", w.props, "-flow", "A->B", "-groups", "g|h", "-wait", "2s", "-json"}, &out, &errOut)
	var rep failbackReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("failback -json: %v\n%s", err, out.String())
	}
	if code != drUnreachable || rep.Result != "interrupted" || rep.ExitCode != drUnreachable {
		t.Errorf("failback interrupted between two groups' commits: exit %d, result %q; want %d, interrupted\n%s\n%s", code, rep.Result, drUnreachable, out.String(), errOut.String())
	}
	if len(rep.Groups) != 2 || rep.Groups[0].Action != actionCommitted || rep.Groups[1].Action != actionRefused ||
		!strings.Contains(rep.Groups[1].Reason, "interrupted") || strings.Contains(rep.Groups[1].Reason, "commit refused") {
		t.Errorf("groups %+v: want g committed, h not committed because interrupted (no broker refused it)", rep.Groups)
	}
	if got := committedOn(t, w.ctx, w.aCl, "g"); got[0] != 5 {
		t.Errorf("g on A: %v, want 5", got)
	}
	if dr, _, err := statustopic.ReadDR(w.ctx, []kgo.Opt{kgo.SeedBrokers(w.b.ListenAddrs()...)}, "A"); err != nil || dr.Groups["g"] != drFailback || dr.Groups["h"] != "" {
		t.Errorf("DR record %+v (%v): want g by failback, h absent", dr, err)
	}
}

// TestFailoverInterruptedMidCommitsSaysInterrupted: the same for failover:
// exit 3, and h's reason is the interruption, not a broker's refusal.
func TestFailoverInterruptedMidCommitsSaysInterrupted(t *testing.T) {
	w := newRerunWorld(t)
	w.checkpointGroup("h", 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelOnCommitOf(w.b, "h", cancel)
	var out, errOut bytes.Buffer
	code := failoverMain(ctx, []string{"-config", w.props, "-groups", "g|h", "-source-timeout", "500ms", "-wait", "5s", "-json"}, &out, &errOut)
	rep := decodeFailover(t, out.String())
	if code != drUnreachable || rep.Result != "interrupted" || len(rep.Groups) != 2 || rep.Groups[0].Action != actionCommitted ||
		rep.Groups[1].Action != actionRefused || !strings.Contains(rep.Groups[1].Reason, "interrupted") || strings.Contains(rep.Groups[1].Reason, "commit refused") {
		t.Errorf("failover interrupted between two groups' commits: exit %d, result %q, groups %+v; want 3, interrupted, g committed, h not committed because interrupted\n%s", code, rep.Result, rep.Groups, errOut.String())
	}
}

func (w *rerunWorld) checkpointGroup(g string, at int64) {
	w.t.Helper()
	cp := checkpoint.Checkpoint{Group: g, Topic: "A.orders", Partition: 0, UpstreamOffset: at, DownstreamOffset: at}
	k, _ := cp.Key()
	v, _ := cp.Value()
	if err := w.cl.ProduceSync(w.ctx, &kgo.Record{Topic: "A.checkpoints.internal", Key: k, Value: v,
		Headers: []kgo.RecordHeader{{Key: checkpoint.TranslationHeader, Value: []byte("exact")}}}).FirstErr(); err != nil {
		w.t.Fatal(err)
	}
}
