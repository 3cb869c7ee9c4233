package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestRefreshOffPartitionIncreaseShownAndReplicatedOnceAdded: with
// refresh.topics.enabled=false kmirror follows no source partition
// increase after its first round (MM2's rule), but the new partition's
// records were invisible: the flow RUNNING, lag 0, no error, nothing
// logged. The increase is now a topic error (op partitions) naming both
// counts and what to do, its records in the lag; once the operator adds
// the partition to the remote topic, it is replicated and the error
// clears.
func TestRefreshOffPartitionIncreaseShownAndReplicatedOnceAdded(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	a := p.Topic("alpha")
	remote := p.Source.Alias + "." + a
	testcluster.CreateTopic(t, &p.Source, a, 1, nil)
	fc := fastFlow(p)
	fc.DisableRefreshTopics = true
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Produce(t, &p.Source, partValues(a, "x", 0, 0, 10)...)
	waitReplicated(t, m, 10)
	ctx := context.Background()
	if _, err := testcluster.Admin(t, &p.Source).UpdatePartitions(ctx, 2, a); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "source metadata shows 2 partitions", func() (bool, string) {
		td, err := testcluster.Admin(t, &p.Source).ListTopics(ctx, a)
		return err == nil && len(td[a].Partitions) == 2, fmt.Sprint(err)
	})
	testcluster.Produce(t, &p.Source, partValues(a, "y", 1, 0, 7)...)
	wantErr := fmt.Sprintf("source topic %s has 2 partitions, %s on %s has 1: refresh.topics.enabled=false, so partitions added after the start are not replicated; "+
		"restart kmirror (it adds them at start), add them to %s yourself, or set refresh.topics.enabled=true", a, remote, p.Target.Alias, remote)
	testcluster.Eventually(t, 30*time.Second, "the held increase shown with its 7 records", func() (bool, string) {
		fs := m.Status().Flows[0]
		return len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Op == TopicOpPartitions && fs.TopicErrors[0].Error == wantErr &&
				fs.TopicErrors[0].Lag == 7 && fs.Lag == 7 && fs.State == StateRunning,
			fmt.Sprintf("%s %q lag %d %+v", fs.State, fs.Error, fs.Lag, fs.TopicErrors)
	})
	// Not followed: the remote topic keeps 1 partition.
	time.Sleep(5 * fc.RefreshTopicsInterval)
	td, err := testcluster.Admin(t, &p.Target).ListTopics(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(td[remote].Partitions); n != 1 {
		t.Fatalf("remote topic has %d partitions with refresh.topics.enabled=false, want 1", n)
	}
	// Nothing is attempted: no attempt time moves (a review found the
	// error's LastAttempt and the error metric moving every round).
	if te := m.Status().Flows[0].TopicErrors; len(te) != 1 || !te[0].LastAttempt.Equal(te[0].Since) {
		t.Errorf("held increase %+v: want LastAttempt == Since", te)
	}
	if _, err := testcluster.Admin(t, &p.Target).UpdatePartitions(ctx, 2, remote); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "partition 1 replicated once added on the target", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.Records == 17 && fs.Lag == 0 && len(fs.TopicErrors) == 0, fmt.Sprintf("%d records lag %d %+v", fs.Records, fs.Lag, fs.TopicErrors)
	})
	if got := testcluster.ReadAll(t, &p.Target, remote); len(got[1]) != 7 || string(got[1][0].Value) != "y-p1-0" {
		t.Errorf("remote partition 1 holds %d records, want 7 from y-p1-0", len(got[1]))
	}
	f := m.flows[0]
	f.mu.Lock()
	held := len(f.heldIncrease)
	f.mu.Unlock()
	if held != 0 {
		t.Errorf("%d held increases remembered after the error cleared, want 0", held)
	}
}
