package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestSourceTopicDeletedLeavesStatus: regression test for a helper's
// finding (stop 40). A source topic deleted while the flow ran stayed in
// Status as RUNNING for as long as the member ran, with its lag and its
// metrics series: within a session partitions were only ever added. The
// unit's session now restarts without the partitions of a topic the source
// confirms deleted (as MM2 reconfigures its tasks), the other topic keeps
// replicating, and a topic re-created under the name is replicated from
// its new log.
func TestSourceTopicDeletedLeavesStatus(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	gone, kept := p.Topic("gone"), p.Topic("kept")
	testcluster.CreateTopic(t, &p.Source, gone, 2, nil)
	testcluster.CreateTopic(t, &p.Source, kept, 1, nil)
	testcluster.Produce(t, &p.Source, append(partRecords(gone, "g", 0, 0, 5), partRecords(gone, "g", 1, 0, 5)...)...)
	testcluster.Produce(t, &p.Source, partRecords(kept, "k", 0, 0, 5)...)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	waitReplicated(t, m, 15)
	topics := func() string {
		var out []string
		for _, ps := range m.Status().Flows[0].Partitions {
			out = append(out, fmt.Sprintf("%s[%d] %s replicated %d", ps.Topic, ps.Partition, ps.State, ps.Replicated))
		}
		slices.Sort(out)
		return fmt.Sprint(out)
	}
	if _, err := testcluster.Admin(t, &p.Source).DeleteTopic(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]string{kept + "[0] RUNNING replicated 5"})
	testcluster.Eventually(t, 30*time.Second, "only "+kept+" in the status", func() (bool, string) {
		got := topics()
		return got == want, got
	})
	testcluster.Produce(t, &p.Source, partRecords(kept, "k", 0, 5, 8)...)
	remoteKept := p.Source.Alias + "." + kept
	testcluster.Eventually(t, 30*time.Second, kept+" still replicated", func() (bool, string) {
		n := targetEnd(t, &p.Target, remoteKept)
		return n == 8, fmt.Sprintf("%d records on the target; status %s", n, topics())
	})
	testcluster.Eventually(t, 10*time.Second, "the flow RUNNING without lag", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.Lag == 0 && !fs.LagUnknown && fs.State == StateRunning, fmt.Sprintf("%s lag %d (unknown %v)", fs.State, fs.Lag, fs.LagUnknown)
	})

	// Re-created under the same name: its new log is replicated after the
	// old copies on the remote topic.
	testcluster.CreateTopic(t, &p.Source, gone, 2, nil)
	testcluster.Produce(t, &p.Source, partRecords(gone, "n", 0, 0, 3)...)
	remoteGone := p.Source.Alias + "." + gone
	testcluster.Eventually(t, 30*time.Second, "the re-created topic replicated", func() (bool, string) {
		got := targetValues(t, p, remoteGone, 0)
		want := []string{"0:g0", "1:g1", "2:g2", "3:g3", "4:g4", "5:n0", "6:n1", "7:n2"}
		return slices.Equal(got, want), fmt.Sprintf("%v; status %s", got, topics())
	})
}

// TestSessionRestartKeepsOtherTopicsInStatus: a source topic deleted while
// the flow runs restarts its unit's session (TestSourceTopicDeletedLeavesStatus);
// the unit's other topic must stay in Status throughout. The new session
// marked its status to be published at its start (evSession), and the
// first drain of its offer published the lifecycle before any partition
// had started: for at least publishEvery the unit's status listed none of
// its partitions (the flow's lag and the status topic's view with them),
// at every session restart that took longer than publishEvery to load its
// resume points (real Kafka, a loaded machine). Here every status
// publication takes 60 ms (a test hook), so that the next session's first
// publication always comes more than publishEvery after the last one.
func TestSessionRestartKeepsOtherTopicsInStatus(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	gone, kept := p.Topic("gone"), p.Topic("kept")
	testcluster.CreateTopic(t, &p.Source, gone, 1, nil)
	testcluster.CreateTopic(t, &p.Source, kept, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(gone, "g", 0, 0, 5)...)
	testcluster.Produce(t, &p.Source, partRecords(kept, "k", 0, 0, 5)...)
	fc := fastFlow(p)
	fc.Tasks = 1 // both topics in one unit: the deletion restarts the kept topic's session too
	slow := &unitHooks{snapshot: func() { time.Sleep(60 * time.Millisecond) }}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), withUnitHooks(slow))...)
	waitReplicated(t, m, 10)
	has := func(topic string) (bool, []PartitionStatus) {
		ps := m.Status().Flows[0].Partitions
		for _, s := range ps {
			if s.Topic == topic {
				return true, ps
			}
		}
		return false, ps
	}
	stop := make(chan struct{})
	missing := make(chan []PartitionStatus, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if ok, ps := has(kept); !ok {
				select {
				case missing <- ps:
				default:
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	if _, err := testcluster.Admin(t, &p.Source).DeleteTopic(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, gone+" out of the status", func() (bool, string) {
		ok, ps := has(gone)
		return !ok, fmt.Sprintf("%+v", ps)
	})
	time.Sleep(200 * time.Millisecond) // the session after the restart publishes again
	close(stop)
	<-done
	select {
	case ps := <-missing:
		t.Errorf("%s left the status while its unit's session restarted: %+v", kept, ps)
	default:
	}
}

// TestSettleDeletedNeedsTheSourcesAnswer: only "no such topic", answered
// disputeTries times in a row against the known ID, deletes a topic the
// offer lacks. A topic the source did not answer about (its Metadata
// request failed, or an error for the topic) is never taken for deleted
// (a review of stop 40's last edit: it was, which would have dropped a
// live topic at a source outage), and only an answered dispute asks again
// soon.
func TestSettleDeletedNeedsTheSourcesAnswer(t *testing.T) {
	known := [16]byte{7}
	tests := []struct {
		name        string
		answers     []map[string][16]byte // one per offer applied
		deleted     bool                  // after the last
		unconfirmed bool                  // after the last
	}{
		{"no answer", []map[string][16]byte{nil, nil, nil, nil}, false, false},
		{"no answer about the topic", []map[string][16]byte{{"other": {}}, {"other": {}}, {"other": {}}}, false, false},
		{"the known ID", []map[string][16]byte{{"t": known}, {"t": known}, {"t": known}}, false, false},
		{"no such topic twice", []map[string][16]byte{{"t": {}}, {"t": {}}}, false, true},
		{"no such topic three times", []map[string][16]byte{{"t": {}}, {"t": {}}, {"t": {}}}, true, false},
		{"interrupted by the known ID", []map[string][16]byte{{"t": {}}, {"t": {}}, {"t": known}, {"t": {}}}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := &unit{log: slog.New(slog.DiscardHandler), life: newLifecycle(lifeConfig{})}
			u.life.topicIDs["t"] = known
			var deleted map[string]bool
			var unconfirmed bool
			for _, a := range tc.answers {
				current := map[string]kadm.TopicID{}
				for k, v := range a {
					current[k] = v
				}
				if a == nil {
					current = nil
				}
				unconfirmed = false
				deleted = u.settleDeleted(map[string]bool{"t": true}, current, &unconfirmed)
			}
			if deleted["t"] != tc.deleted || unconfirmed != tc.unconfirmed {
				t.Errorf("deleted %v, unconfirmed %v; want %v, %v", deleted["t"], unconfirmed, tc.deleted, tc.unconfirmed)
			}
		})
	}
}
