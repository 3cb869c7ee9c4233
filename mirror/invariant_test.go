package mirror

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/cpwatch"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
)

// cpWatch checks, for one Mirror of one test, the invariant "no
// checkpoint written by kmirror points past the target log end at the
// time it is written": after each batch of acknowledged checkpoints, the
// emitter's target client lists the remote partitions' log ends, and a
// checkpoint above its end is a violation. The end is read after the
// write, so it is at least the end at write time (logs only grow, unless
// a test truncates or re-creates the remote topic): the check is weaker
// than the invariant (a checkpoint past the end at write time that the
// log has passed since goes unnoticed) but never reports a valid
// checkpoint. Partitions whose end cannot be listed (target down, topic
// deleted by the test) are not checked.
//
// Every Mirror the package's tests create goes through newMirror, which
// installs one (withCheckpointWatch): each test checks its own emitters,
// so tests can run in parallel. Violations fail the test that owns the
// Mirror (in its cleanup); one found after that test ended (an emitter
// still running) goes to lateViolations, which fails the run in TestMain.
type cpWatch struct {
	mu        sync.Mutex
	name      string
	list      []string
	checked   int
	testEnded bool
}

// lateViolations are the violations found after their test ended.
var lateViolations struct {
	sync.Mutex
	list []string
}

// watchCheckpoints returns a cpWatch whose violations fail t.
func watchCheckpoints(t testing.TB) *cpWatch {
	w := &cpWatch{name: t.Name()}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.testEnded = true
		for _, v := range w.list {
			t.Errorf("checkpoint invariant violated: %s", v)
		}
	})
	return w
}

// hook is the cpwatch.Hook of w.
func (w *cpWatch) hook(ctx context.Context, target *kadm.Client, written []cpwatch.Written) {
	topics := map[string]bool{}
	var list []string
	for _, wr := range written {
		if !topics[wr.Topic] {
			topics[wr.Topic] = true
			list = append(list, wr.Topic)
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := target.ListEndOffsets(lctx, list...)
	if err != nil && ends == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wr := range written {
		o, ok := ends.Lookup(wr.Topic, wr.Partition)
		if !ok || o.Err != nil {
			continue
		}
		w.checked++
		if wr.Offset > o.Offset {
			v := fmt.Sprintf("group %s: checkpoint %s-%d at %d, past the target log end %d", wr.Group, wr.Topic, wr.Partition, wr.Offset, o.Offset)
			if w.testEnded {
				lateViolations.Lock()
				lateViolations.list = append(lateViolations.list, w.name+": "+v)
				lateViolations.Unlock()
				continue
			}
			w.list = append(w.list, v)
		}
	}
}

// newMirror is New with the checkpoint invariant check of t
// (watchCheckpoints) installed; a withCheckpointWatch in opts replaces it.
// Every test of the package creates its Mirrors with it.
func newMirror(t testing.TB, opts ...Opt) (*Mirror, error) {
	return New(append([]Opt{withCheckpointWatch(watchCheckpoints(t).hook)}, opts...)...)
}

// checkpointInvariantHeld reports the violations found after their test
// ended on stderr and returns false if there were any.
func checkpointInvariantHeld() bool {
	lateViolations.Lock()
	defer lateViolations.Unlock()
	for _, v := range lateViolations.list {
		fmt.Fprintln(os.Stderr, "checkpoint invariant violated (after the test ended):", v)
	}
	return len(lateViolations.list) == 0
}

// TestCheckpointInvariantWatched: the engine's checkpoints reach the
// invariant check every test's Mirror has (newMirror, watchCheckpoints),
// and the offset syncs and runs the engine writes record the target
// cluster ID (checkpoint.TargetClusterHeader) and the remote topic's ID
// (checkpoint.TargetTopicIDHeader), with which the checkpoint emitter
// tells a rebuilt target's or a re-created remote topic's syncs apart.
func TestCheckpointInvariantWatched(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders, g := p.Topic("orders"), p.Group("g")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 20)
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 20})
	w := watchCheckpoints(t)
	runMirror(t, append(clusterOpts(p), WithFlow(trFlow(p)), withCheckpointWatch(w.hook))...)
	remote := p.Source.Alias + "." + orders
	testcluster.Eventually(t, 30*time.Second, "target group at 20", func() (bool, string) {
		got := committed(t, &p.Target, g, remote)[0]
		return got == 20, fmt.Sprint(got)
	})
	testcluster.Eventually(t, 10*time.Second, "checkpoints checked", func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.checked > 0, fmt.Sprintf("%d checked", w.checked)
	})
	// The check itself: a checkpoint one past the end is reported (and
	// taken back, so that the cleanup does not fail the test for it).
	w.mu.Lock()
	n := len(w.list)
	w.mu.Unlock()
	ctx := cpwatch.With(context.Background(), w.hook)
	cpwatch.Call(ctx, testcluster.Admin(t, &p.Target), []cpwatch.Written{{Group: g, Topic: remote, Partition: 0, Offset: 21}})
	w.mu.Lock()
	got := append([]string(nil), w.list[n:]...)
	w.list = w.list[:n]
	w.mu.Unlock()
	want := []string{fmt.Sprintf("group %s: checkpoint %s-0 at 21, past the target log end 20", g, remote)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("violations of a checkpoint past the end (-want +got):\n%s", d)
	}

	dstID := clusterID(t, &p.Target)
	td, err := testcluster.Admin(t, &p.Target).ListTopics(context.Background(), remote)
	if err != nil || td[remote].Err != nil {
		t.Fatalf("listing %s: %v %v", remote, err, td[remote].Err)
	}
	remoteID := td[remote].ID
	wantHs := []kgo.RecordHeader{{Key: checkpoint.TargetClusterHeader, Value: []byte(dstID)}, {Key: checkpoint.TargetTopicIDHeader, Value: remoteID[:]}}
	pol, _ := policy.NewDefault()
	for _, topic := range []string{pol.OffsetSyncsTopic(p.Target.Alias), checkpoint.OffsetRunsTopic(pol.OffsetSyncsTopic(p.Target.Alias))} {
		recs := testcluster.ReadAll(t, &p.Source, topic)[0]
		if len(recs) == 0 {
			t.Fatalf("%s: no records", topic)
		}
		for _, r := range recs {
			if d := cmp.Diff(wantHs, r.Headers); d != "" {
				t.Fatalf("%s record at %d: headers (-want +got):\n%s", topic, r.Offset, d)
			}
		}
	}
}
