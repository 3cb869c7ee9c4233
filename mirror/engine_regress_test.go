package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// Regression tests for faults of the units-of-work engine found by an
// adversarial review (members, slots, exactly once).

// TestExactlyOnceIntervalBoundaryCommitsWhenSourceQuiet: with
// transaction.boundary=interval, the records of the last transaction before
// the source goes quiet are committed once the interval has passed, not
// held invisible (and eventually aborted by the coordinator's transaction
// timeout) until more source records arrive.
func TestExactlyOnceIntervalBoundaryCommitsWhenSourceQuiet(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("quiet")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 1
	fc.TransactionBoundary, fc.TransactionInterval = TransactionBoundaryInterval, 300*time.Millisecond
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "partition started", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 1, fmt.Sprint(m.Status().Flows[0].Partitions)
	})
	// One burst, then nothing: the burst is one poll, far below the
	// interval, so only the interval can commit it.
	testcluster.Produce(t, &p.Source, valueRecords(topic, "v", 0, 20)...)
	remote := p.Source.Alias + "." + topic
	testcluster.Eventually(t, 20*time.Second, "the burst visible to read_committed", func() (bool, string) {
		recs, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), remote, true)
		if err != nil {
			return false, err.Error()
		}
		ps := m.Status().Flows[0].Partitions
		return len(recs[0]) == 20 && ps[0].Replicated == 20, fmt.Sprintf("%d visible, status %+v", len(recs[0]), ps)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
