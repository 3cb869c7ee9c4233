package mirror

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTargetOutageLongerThanRetriesRecovers (regression, found by review):
// with the target's producer limited to a few retries (MM2 configurations
// set retries, or delivery.timeout.ms), an outage of the target longer
// than that fails the records in flight (kgo.ErrRecordRetries). That is
// transient: the unit's session restarts from its stored resume points and
// replication resumes once the target is back, nothing lost (it used to
// stop the partition for good).
func TestTargetOutageLongerThanRetriesRecovers(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic := p.Topic("outage")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, valueRecords(topic, "a", 0, 10)...)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 1
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	rec := &recMetrics{}
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.RecordRetries(3)}}),
		WithFlow(fc), WithMetrics(rec))
	waitReplicated(t, m, 10)
	// The target rejects every write with a retriable error for 3 s.
	outage := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	time.AfterFunc(3*time.Second, outage.Remove)
	testcluster.Produce(t, &p.Source, valueRecords(topic, "b", 0, 10)...)
	time.Sleep(4 * time.Second) // the outage is over
	testcluster.Produce(t, &p.Source, valueRecords(topic, "c", 0, 10)...)
	testcluster.Eventually(t, 30*time.Second, "replication resumed after the outage", func() (bool, string) {
		ps := m.Status().Flows[0].Partitions
		return len(ps) == 1 && ps[0].Replicated == 30 && ps[0].State == StateRunning, fmt.Sprintf("%+v", ps)
	})
	var want []*kgo.Record
	for _, prefix := range []string{"a", "b", "c"} {
		want = append(want, valueRecords(topic, prefix, 0, 10)...)
	}
	lost, dups := missingValues(t, p, p.Source.Alias+"."+topic, want)
	if lost != 0 {
		var got []string
		for _, r := range testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+topic)[0] {
			got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value))
		}
		t.Errorf("%d records lost across the outage; target: %v; status %+v", lost, got, m.Status().Flows[0].Partitions)
	}
	f := rec.flow(p.Source.Alias + "->" + p.Target.Alias)
	f.mu.Lock()
	if f.errs["produce"] == 0 {
		t.Errorf("errors by kind %v: the failed produce was not counted as kind produce", f.errs)
	}
	f.mu.Unlock()
	t.Logf("%d duplicates (replayed from the stored resume point)", dups)
}

// TestDeliveryTimeoutDoesNotFailOldRecords (regression): franz-go measures
// delivery.timeout.ms from a record's timestamp, which replication keeps,
// so with the target's producer configured with a delivery timeout every
// record older than it failed at once and a backlog could never be copied.
// The replication producer ignores it.
func TestDeliveryTimeoutDoesNotFailOldRecords(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("backlog")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	rs := valueRecords(topic, "old", 0, 50)
	for i, r := range rs {
		r.Timestamp = old.Add(time.Duration(i) * time.Millisecond)
	}
	testcluster.Produce(t, &p.Source, rs...)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.RecordDeliveryTimeout(time.Second)}}),
		WithFlow(fc))
	waitReplicated(t, m, 50)
	if lost, _ := missingValues(t, p, p.Source.Alias+"."+topic, rs); lost != 0 {
		t.Errorf("%d records an hour old not replicated with delivery.timeout.ms=1000", lost)
	}
	for _, ps := range m.Status().Flows[0].Partitions {
		if ps.State != StateRunning {
			t.Errorf("partition %d: %s %s", ps.Partition, ps.State, ps.Error)
		}
	}
}

// TestIdlePartitionFetchErrorClears (regression, found by review): a fetch
// error is shown as RETRYING while fetches keep returning it; once it stops
// repeating (the source recovered) an idle partition, which fetches no
// record that would clear it, is RUNNING again.
func TestIdlePartitionFetchErrorClears(t *testing.T) {
	t.Parallel()
	h := newHarness(t, lifeConfig{flow: "a->b"})
	f := h.start(tp{"orders", 0}, startPos{remote: "a.orders", committed: 9})
	h.post(event{kind: evFetchErr, f: f, err: kerr.NotLeaderForPartition})
	if s := h.status(f.k); s.State != StateRetrying || !strings.Contains(s.Error, "NOT_LEADER_FOR_PARTITION") {
		t.Errorf("fresh fetch error: %s %q, want RETRYING with the error", s.State, s.Error)
	}
	h.advance(fetchErrStale + time.Second)
	if s := h.status(f.k); s.State != StateRunning || s.Error != "" {
		t.Errorf("fetch error not repeated for %v: %s %q, want RUNNING", fetchErrStale, s.State, s.Error)
	}
}

// TestEndedSessionStopsItsPollLoopFirst: regression test for a helper's
// finding (stop 40, reading the code). A session ended by a transient
// produce failure returned with its poll loop still running: the loop
// reads the unit's clients, which the next session replaces, and what it
// posted last (exactly once: an aborted transaction's end) was applied to
// the next session's partitions. The session now returns after its poll
// loop, and replication resumes with nothing lost.
func TestEndedSessionStopsItsPollLoopFirst(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic := p.Topic("ended")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, valueRecords(topic, "a", 0, 10)...)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 1
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	var mu sync.Mutex
	var ended []string
	hooks := &unitHooks{sessionEnded: func(err error, loops int32) {
		mu.Lock()
		defer mu.Unlock()
		ended = append(ended, fmt.Sprintf("%d poll loops running after %v", loops, err))
	}}
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.RecordRetries(3)}}),
		WithFlow(fc), withUnitHooks(hooks))
	waitReplicated(t, m, 10)
	outage := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	testcluster.Produce(t, &p.Source, valueRecords(topic, "b", 0, 10)...)
	testcluster.Eventually(t, 30*time.Second, "a session ended by the failed produce", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(ended) > 0, fmt.Sprint(ended)
	})
	outage.Remove()
	testcluster.Eventually(t, 30*time.Second, "replication resumed", func() (bool, string) {
		ps := m.Status().Flows[0].Partitions
		return len(ps) == 1 && ps[0].Replicated == 20 && ps[0].State == StateRunning, fmt.Sprintf("%+v", ps)
	})
	mu.Lock()
	defer mu.Unlock()
	t.Logf("sessions ended: %q", ended)
	for _, e := range ended {
		if !strings.HasPrefix(e, "0 poll loops") {
			t.Errorf("a session ended with its poll loop running: %s", e)
		}
	}
	want := append(valueRecords(topic, "a", 0, 10), valueRecords(topic, "b", 0, 10)...)
	if lost, _ := missingValues(t, p, p.Source.Alias+"."+topic, want); lost != 0 {
		t.Errorf("%d records lost", lost)
	}
}
