package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// refusedPair returns a kfake pair with topics good and bad (one partition
// each) and a flow replicating exactly those two, whose target refuses to
// create the remote topic of bad with POLICY_VIOLATION until the returned
// fault is removed.
func refusedPair(t *testing.T, createBad bool) (p *testcluster.Pair, fc FlowConfig, good, bad string, fault *kfake.FaultHandle) {
	t.Helper()
	p = testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	good, bad = p.Topic("good"), p.Topic("bad")
	testcluster.CreateTopic(t, &p.Source, good, 1, nil)
	if createBad {
		testcluster.CreateTopic(t, &p.Source, bad, 1, nil)
	}
	fc = fastFlow(p)
	fc.Topics = []string{good, bad}
	fc.Tasks = 2
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	fault = p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: p.Source.Alias + "." + bad,
		Err: kerr.PolicyViolation, Count: -1})
	return p, fc, good, bad, fault
}

// partitionOf returns the status of topic[0] in fs, or false.
func partitionOf(fs FlowStatus, topic string) (PartitionStatus, bool) {
	for _, ps := range fs.Partitions {
		if ps.Topic == topic && ps.Partition == 0 {
			return ps, true
		}
	}
	return PartitionStatus{}, false
}

// TestRefusedTopicAtStartDoesNotStopOthers (issue 15, case 2): the target
// refuses to create one remote topic at start (a create policy, quota or
// ACL: POLICY_VIOLATION on src.bad). The other topics are replicated, the
// flow is RUNNING, and the status names bad with the error; once the
// target accepts it, bad is created and replicated on the next refresh.
func TestRefusedTopicAtStartDoesNotStopOthers(t *testing.T) {
	p, fc, good, bad, fault := refusedPair(t, true)
	testcluster.Produce(t, &p.Source, valueRecords(good, "g", 0, 10)...)
	testcluster.Produce(t, &p.Source, valueRecords(bad, "b", 0, 10)...)
	var lb logBuf
	rec := &recMetrics{}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()), WithMetrics(rec))...)
	testcluster.Eventually(t, 30*time.Second, "good replicated", func() (bool, string) {
		fs := m.Status().Flows[0]
		ps, ok := partitionOf(fs, good)
		return ok && ps.Replicated == 10 && ps.Records == 10, fmt.Sprintf("%s %q %+v", fs.State, fs.Error, fs.Partitions)
	})
	checkRefused(t, p, m, good, bad, 10)
	// Several refreshes retry the creation: one WARN line, one error
	// counted per attempt.
	if err := fault.Wait(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	remote := p.Source.Alias + "." + bad
	if n := len(lb.lines("level=WARN", "topic not replicated", "remote_topic="+remote, "op=create")); n != 1 {
		t.Errorf("%d WARN lines for the refused topic, want 1:\n%s", n, strings.Join(lb.lines(remote), "\n"))
	}
	f := rec.flow(p.Source.Alias + "->" + p.Target.Alias)
	testcluster.Eventually(t, 10*time.Second, "each refused attempt counted", func() (bool, string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.errs["topic_create"] >= 3 && len(f.errs) == 1, fmt.Sprintf("errors by kind %v", f.errs)
	})
	fault.Remove()
	checkRecovered(t, p, m, good, bad)
	if n := len(lb.lines("level=INFO", "topic error cleared", "remote_topic="+remote, "op=create")); n != 1 {
		t.Errorf("%d INFO lines for the cleared topic error, want 1:\n%s", n, strings.Join(lb.lines(remote), "\n"))
	}
}

// TestRefusedTopicAfterStartShownInStatus (issue 15, case 3): the same
// refusal for a topic created after start is shown in the status (topic
// error, flow error, lag of its records), not only in the log.
func TestRefusedTopicAfterStartShownInStatus(t *testing.T) {
	p, fc, good, bad, fault := refusedPair(t, false)
	testcluster.Produce(t, &p.Source, valueRecords(good, "g", 0, 10)...)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "good replicated", func() (bool, string) {
		fs := m.Status().Flows[0]
		ps, ok := partitionOf(fs, good)
		return ok && ps.Replicated == 10, fmt.Sprintf("%s %q %+v", fs.State, fs.Error, fs.Partitions)
	})
	testcluster.CreateTopic(t, &p.Source, bad, 1, nil)
	testcluster.Produce(t, &p.Source, valueRecords(bad, "b", 0, 10)...)
	checkRefused(t, p, m, good, bad, 10)
	fault.Remove()
	checkRecovered(t, p, m, good, bad)
}

// checkRefused waits for the status to show bad refused while good runs.
func checkRefused(t *testing.T, p *testcluster.Pair, m *Mirror, good, bad string, badRecords int64) {
	t.Helper()
	remote := p.Source.Alias + "." + bad
	testcluster.Eventually(t, 30*time.Second, "bad shown refused", func() (bool, string) {
		fs := m.Status().Flows[0]
		return len(fs.TopicErrors) == 1, fmt.Sprintf("%s %q %+v", fs.State, fs.Error, fs.TopicErrors)
	})
	fs := m.Status().Flows[0]
	if fs.State != StateRunning {
		t.Errorf("flow state %s (%q), want RUNNING: the other topics run", fs.State, fs.Error)
	}
	te := fs.TopicErrors[0]
	wantErr := fmt.Sprintf("creating %s on %s: %s; the target refuses this topic (create policy, ACL or quota): allow it there, create %s yourself, or exclude %s with topics.exclude",
		remote, p.Target.Alias, kerr.PolicyViolation, remote, bad)
	if te.Topic != bad || te.RemoteTopic != remote || te.Op != TopicOpCreate || te.Error != wantErr {
		t.Errorf("topic error %+v, want topic %s, remote %s, op create, error %q", te, bad, remote, wantErr)
	}
	if te.Lag != badRecords {
		t.Errorf("topic error lag %d, want %d", te.Lag, badRecords)
	}
	if te.Since.IsZero() || te.LastAttempt.Before(te.Since) {
		t.Errorf("topic error since %v, last attempt %v", te.Since, te.LastAttempt)
	}
	wantFlowErr := "1 topic error: " + bad + ": " + wantErr
	if fs.Error != wantFlowErr {
		t.Errorf("flow error %q, want %q", fs.Error, wantFlowErr)
	}
	if ps, ok := partitionOf(fs, good); !ok || ps.Replicated != 10 || ps.Records != 10 || ps.State != StateRunning {
		t.Errorf("good[0] %+v, want 10 records replicated, RUNNING", ps)
	}
	if _, ok := partitionOf(fs, bad); ok {
		t.Errorf("bad has a partition status before its remote topic exists: %+v", fs.Partitions)
	}
	if fs.Lag != badRecords {
		t.Errorf("flow lag %d, want %d (bad's records, not replicated)", fs.Lag, badRecords)
	}
	got := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+good)[0]
	if len(got) != 10 {
		t.Fatalf("remote good has %d records, want 10", len(got))
	}
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("g%d", i) {
			t.Errorf("remote good record %d: offset %d value %q, want offset %d value g%d", i, r.Offset, r.Value, i, i)
		}
	}
}

// checkRecovered waits for bad to be created and replicated once the
// target accepts it, and for its topic error to clear.
func checkRecovered(t *testing.T, p *testcluster.Pair, m *Mirror, good, bad string) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "bad replicated after the refusal ends", func() (bool, string) {
		fs := m.Status().Flows[0]
		ps, ok := partitionOf(fs, bad)
		return ok && ps.Replicated == 10 && len(fs.TopicErrors) == 0 && fs.Lag == 0,
			fmt.Sprintf("%s %q %+v %+v", fs.State, fs.Error, fs.TopicErrors, fs.Partitions)
	})
	fs := m.Status().Flows[0]
	if fs.State != StateRunning || fs.Error != "" {
		t.Errorf("flow %s %q after the refusal ended, want RUNNING without error", fs.State, fs.Error)
	}
	got := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+bad)[0]
	if len(got) != 10 {
		t.Fatalf("remote bad has %d records, want 10", len(got))
	}
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("b%d", i) {
			t.Errorf("remote bad record %d: offset %d value %q, want offset %d value b%d", i, r.Offset, r.Value, i, i)
		}
	}
}
