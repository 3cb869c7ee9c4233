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

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/cpwatch"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
)

// checkpointViolations collects, across every test of the package, the
// checkpoints written past the target log end (installed by TestMain).
var checkpointViolations struct {
	sync.Mutex
	list    []string
	checked int
}

// watchCheckpoints installs the invariant "no checkpoint written by
// kmirror points past the target log end at the time it is written" for
// every checkpoint emitter the package's tests run (through runMirror or
// any other way): after each batch of acknowledged checkpoints, the
// emitter's target client lists the remote partitions' log ends, and a
// checkpoint above its end is a violation. The end is read after the
// write, so it is at least the end at write time (logs only grow, unless
// a test truncates or re-creates the remote topic): the check is weaker
// than the invariant (a checkpoint past the end at write time that the
// log has passed since goes unnoticed) but never reports a valid
// checkpoint. Partitions whose end cannot be listed (target down, topic
// deleted by the test) are not checked.
func watchCheckpoints() {
	cpwatch.Set(func(ctx context.Context, target *kadm.Client, written []cpwatch.Written) {
		topics := map[string]bool{}
		var list []string
		for _, w := range written {
			if !topics[w.Topic] {
				topics[w.Topic] = true
				list = append(list, w.Topic)
			}
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ends, err := target.ListEndOffsets(lctx, list...)
		if err != nil && ends == nil {
			return
		}
		checkpointViolations.Lock()
		defer checkpointViolations.Unlock()
		for _, w := range written {
			o, ok := ends.Lookup(w.Topic, w.Partition)
			if !ok || o.Err != nil {
				continue
			}
			checkpointViolations.checked++
			if w.Offset > o.Offset {
				checkpointViolations.list = append(checkpointViolations.list,
					fmt.Sprintf("group %s: checkpoint %s-%d at %d, past the target log end %d", w.Group, w.Topic, w.Partition, w.Offset, o.Offset))
			}
		}
	})
}

// checkpointInvariantHeld reports the violations found by watchCheckpoints
// on stderr and returns false if there were any.
func checkpointInvariantHeld() bool {
	checkpointViolations.Lock()
	defer checkpointViolations.Unlock()
	for _, v := range checkpointViolations.list {
		fmt.Fprintln(os.Stderr, "checkpoint invariant violated:", v)
	}
	return len(checkpointViolations.list) == 0
}

// TestCheckpointInvariantWatched: the engine's checkpoints reach the
// package-wide invariant check (watchCheckpoints), and the offset syncs and
// runs the engine writes record the target cluster ID
// (checkpoint.TargetClusterHeader) with which the checkpoint emitter tells
// a rebuilt target's syncs apart.
func TestCheckpointInvariantWatched(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	orders, g := p.Topic("orders"), p.Group("g")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 20)
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 20})
	checkpointViolations.Lock()
	before := checkpointViolations.checked
	checkpointViolations.Unlock()
	trStart(t, p, trFlow(p))
	remote := p.Source.Alias + "." + orders
	testcluster.Eventually(t, 30*time.Second, "target group at 20", func() (bool, string) {
		got := committed(t, &p.Target, g, remote)[0]
		return got == 20, fmt.Sprint(got)
	})
	testcluster.Eventually(t, 10*time.Second, "checkpoints checked", func() (bool, string) {
		checkpointViolations.Lock()
		defer checkpointViolations.Unlock()
		return checkpointViolations.checked > before, fmt.Sprintf("%d checked before, %d now", before, checkpointViolations.checked)
	})
	// The check itself: a checkpoint one past the end is reported (and
	// taken back, so that TestMain does not fail the run for it).
	checkpointViolations.Lock()
	n := len(checkpointViolations.list)
	checkpointViolations.Unlock()
	cpwatch.Call(context.Background(), testcluster.Admin(t, &p.Target), []cpwatch.Written{{Group: g, Topic: remote, Partition: 0, Offset: 21}})
	checkpointViolations.Lock()
	got := checkpointViolations.list[n:]
	checkpointViolations.list = checkpointViolations.list[:n]
	checkpointViolations.Unlock()
	want := []string{fmt.Sprintf("group %s: checkpoint %s-0 at 21, past the target log end 20", g, remote)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("violations of a checkpoint past the end (-want +got):\n%s", d)
	}

	dstID := clusterID(t, &p.Target)
	pol, _ := policy.NewDefault()
	for _, topic := range []string{pol.OffsetSyncsTopic(p.Target.Alias), checkpoint.OffsetRunsTopic(pol.OffsetSyncsTopic(p.Target.Alias))} {
		recs := testcluster.ReadAll(t, &p.Source, topic)[0]
		if len(recs) == 0 {
			t.Fatalf("%s: no records", topic)
		}
		for _, r := range recs {
			if len(r.Headers) != 1 || r.Headers[0].Key != checkpoint.TargetClusterHeader || string(r.Headers[0].Value) != dstID {
				t.Fatalf("%s record at %d: headers %q, want %s=%q", topic, r.Offset, r.Headers, checkpoint.TargetClusterHeader, dstID)
			}
		}
	}
}
