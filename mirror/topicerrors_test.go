package mirror

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
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
	t.Parallel()
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
	t.Parallel()
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

// TestRefusedTopicRetriedWithRefreshDisabled (issue 15): with
// refresh.topics.enabled=false topics are created at start only, but one
// refused then is retried until the target accepts it (it used to stay
// missing until a restart).
func TestRefusedTopicRetriedWithRefreshDisabled(t *testing.T) {
	t.Parallel()
	p, fc, good, bad, fault := refusedPair(t, true)
	fc.DisableRefreshTopics = true
	testcluster.Produce(t, &p.Source, valueRecords(good, "g", 0, 10)...)
	testcluster.Produce(t, &p.Source, valueRecords(bad, "b", 0, 10)...)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "good replicated", func() (bool, string) {
		fs := m.Status().Flows[0]
		ps, ok := partitionOf(fs, good)
		return ok && ps.Replicated == 10, fmt.Sprintf("%s %q %+v", fs.State, fs.Error, fs.Partitions)
	})
	checkRefused(t, p, m, good, bad, 10)
	fault.Remove()
	checkRecovered(t, p, m, good, bad)
}

// TestRefreshTopicsDisabledCreatesStartTopicsOnly (regression, found with
// issue 15): with refresh.topics.enabled=false the remote topics of the
// topics that exist at start are created and replicated (none was: the
// first round was judged by the catalog, which discovery at start-up set
// before this member held slot 0), and a topic created after start is not
// (MM2's rule).
func TestRefreshTopicsDisabledCreatesStartTopicsOnly(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	early, late := p.Topic("early"), p.Topic("late")
	testcluster.CreateTopic(t, &p.Source, early, 1, nil)
	testcluster.Produce(t, &p.Source, valueRecords(early, "e", 0, 10)...)
	fc := fastFlow(p)
	fc.Topics = []string{early, late}
	fc.DisableRefreshTopics = true
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "early replicated", func() (bool, string) {
		fs := m.Status().Flows[0]
		ps, ok := partitionOf(fs, early)
		return ok && ps.Replicated == 10 && fs.Records == 10, fmt.Sprintf("%s %q %+v", fs.State, fs.Error, fs.Partitions)
	})
	testcluster.CreateTopic(t, &p.Source, late, 1, nil)
	time.Sleep(5 * fc.RefreshTopicsInterval)
	td, err := testcluster.Admin(t, &p.Target).ListTopics(context.Background(), p.Source.Alias+"."+late)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := td[p.Source.Alias+"."+late]; ok && d.Err == nil {
		t.Errorf("remote topic of %s, created after start, was created with refresh.topics.enabled=false", late)
	}
	if fs := m.Status().Flows[0]; fs.Topics != 2 || len(fs.TopicErrors) != 0 || fs.State != StateRunning {
		t.Errorf("flow %s %q, %d topics selected, topic errors %+v; want RUNNING, 2, none", fs.State, fs.Error, fs.Topics, fs.TopicErrors)
	}
}

// checkRefused waits for the status to show bad refused while good runs.
func checkRefused(t *testing.T, p *testcluster.Pair, m *Mirror, good, bad string, badRecords int64) {
	t.Helper()
	remote := p.Source.Alias + "." + bad
	// The lag of a topic error is listed again at each refresh: a topic
	// created after start can be refused before its records are produced,
	// so wait for the refresh that counts them.
	testcluster.Eventually(t, 30*time.Second, "bad shown refused, with its records' lag", func() (bool, string) {
		fs := m.Status().Flows[0]
		return len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Lag == badRecords,
			fmt.Sprintf("%s %q %+v", fs.State, fs.Error, fs.TopicErrors)
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

// TestRefusedPartitionIncreaseOfOneTopic (issue 15): the target refuses to
// add partitions to one remote topic. The other topic's new partition is
// replicated, the refused topic's error (op "partitions") and the records
// of its new partition (lag) are in the status, the flow is RUNNING; once
// the target accepts, the new partition is added and replicated.
func TestRefusedPartitionIncreaseOfOneTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	a, b := p.Topic("grows"), p.Topic("refused")
	for _, tn := range []string{a, b} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
	}
	fc := fastFlow(p)
	fc.Topics = []string{a, b}
	fc.Tasks = 2
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Produce(t, &p.Source, append(valueRecords(a, "a", 0, 3), valueRecords(b, "b", 0, 3)...)...)
	waitReplicated(t, m, 6)
	remoteB := p.Source.Alias + "." + b
	fault := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreatePartitions}, Topic: remoteB,
		Err: kerr.PolicyViolation, Count: -1})
	ctx := context.Background()
	adm := testcluster.Admin(t, &p.Source)
	if _, err := adm.UpdatePartitions(ctx, 2, a, b); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "source metadata shows 2 partitions", func() (bool, string) {
		td, err := adm.ListTopics(ctx, a, b)
		return err == nil && len(td[a].Partitions) == 2 && len(td[b].Partitions) == 2, fmt.Sprint(err)
	})
	var more []*kgo.Record
	for i := range 5 {
		more = append(more, &kgo.Record{Topic: a, Partition: 1, Value: fmt.Appendf(nil, "a1-%d", i)},
			&kgo.Record{Topic: b, Partition: 1, Value: fmt.Appendf(nil, "b1-%d", i)})
	}
	testcluster.Produce(t, &p.Source, more...)
	testcluster.Eventually(t, 30*time.Second, "a[1] replicated, b's increase refused", func() (bool, string) {
		fs := m.Status().Flows[0]
		var a1 int64 = -1
		for _, ps := range fs.Partitions {
			if ps.Topic == a && ps.Partition == 1 {
				a1 = ps.Replicated
			}
		}
		return a1 == 5 && len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Lag == 5,
			fmt.Sprintf("%s %q %+v %+v", fs.State, fs.Error, fs.TopicErrors, fs.Partitions)
	})
	fs := m.Status().Flows[0]
	te := fs.TopicErrors[0]
	wantErr := fmt.Sprintf("increasing %s on %s from 1 to 2 partitions: %s; the target refuses it (policy, ACL or quota): allow it there, or add the partitions to %s yourself",
		remoteB, p.Target.Alias, kerr.PolicyViolation, remoteB)
	if te.Topic != b || te.RemoteTopic != remoteB || te.Op != TopicOpPartitions || te.Error != wantErr {
		t.Errorf("topic error %+v, want topic %s, op partitions, error %q", te, b, wantErr)
	}
	if fs.State != StateRunning || fs.Error != "1 topic error: "+b+": "+wantErr {
		t.Errorf("flow %s %q, want RUNNING with the topic error", fs.State, fs.Error)
	}
	if fs.Lag != 5 {
		t.Errorf("flow lag %d, want 5 (b[1]'s records)", fs.Lag)
	}
	fault.Remove()
	testcluster.Eventually(t, 30*time.Second, "b[1] replicated once the target accepts", func() (bool, string) {
		fs := m.Status().Flows[0]
		for _, ps := range fs.Partitions {
			if ps.Topic == b && ps.Partition == 1 {
				return ps.Replicated == 5 && len(fs.TopicErrors) == 0 && fs.Lag == 0 && fs.Error == "", fmt.Sprintf("%+v %q", ps, fs.Error)
			}
		}
		return false, fmt.Sprintf("%+v", fs.TopicErrors)
	})
	got := testcluster.ReadAll(t, &p.Target, remoteB)[1]
	if len(got) != 5 {
		t.Fatalf("remote b[1] has %d records, want 5", len(got))
	}
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("b1-%d", i) {
			t.Errorf("remote b[1] record %d: offset %d value %q, want b1-%d", i, r.Offset, r.Value, i)
		}
	}
}

// TestRefusedConfigSyncOfOneTopic (issue 15): the target refuses to alter
// one remote topic's configs (an alter policy). The other topic's changed
// config is synced, both topics' records are replicated, the status shows
// the refused topic with op "config" (lag 0: its records are replicated)
// and the flow RUNNING; once the target accepts, the config is synced and
// the error clears.
func TestRefusedConfigSyncOfOneTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	a, b := p.Topic("synced"), p.Topic("locked")
	for _, tn := range []string{a, b} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
	}
	fc := fastFlow(p)
	fc.Topics = []string{a, b}
	fc.Tasks = 2
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Produce(t, &p.Source, append(valueRecords(a, "a", 0, 3), valueRecords(b, "b", 0, 3)...)...)
	waitReplicated(t, m, 6)
	remoteA, remoteB := p.Source.Alias+"."+a, p.Source.Alias+"."+b
	fault := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.IncrementalAlterConfigs}, Resource: remoteB,
		Err: kerr.PolicyViolation, Count: -1})
	ctx := context.Background()
	ret := "123456789"
	srcAdm, dstAdm := testcluster.Admin(t, &p.Source), testcluster.Admin(t, &p.Target)
	for _, tn := range []string{a, b} {
		if _, err := srcAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &ret}}, tn); err != nil {
			t.Fatal(err)
		}
	}
	testcluster.Eventually(t, 30*time.Second, "a's config synced, b's refused", func() (bool, string) {
		fs := m.Status().Flows[0]
		got := describeOverrides(t, dstAdm, remoteA)["retention.ms"]
		return got == ret && len(fs.TopicErrors) == 1, fmt.Sprintf("a retention.ms %q; %s %q %+v", got, fs.State, fs.Error, fs.TopicErrors)
	})
	testcluster.Produce(t, &p.Source, append(valueRecords(a, "a", 3, 6), valueRecords(b, "b", 3, 6)...)...)
	waitReplicated(t, m, 12)
	fs := m.Status().Flows[0]
	te := fs.TopicErrors[0]
	wantErr := fmt.Sprintf("altering 1 configs of %s on %s (retention.ms=SET): %s; the target refuses it (alter policy, ACL or quota): allow it there, or leave these keys out with config.properties.exclude",
		remoteB, p.Target.Alias, kerr.PolicyViolation)
	if te.Topic != b || te.RemoteTopic != remoteB || te.Op != TopicOpConfig || te.Error != wantErr || te.Lag != 0 {
		t.Errorf("topic error %+v, want topic %s, op config, lag 0, error %q", te, b, wantErr)
	}
	if fs.State != StateRunning || fs.Error != "1 topic error: "+b+": "+wantErr || fs.Lag != 0 {
		t.Errorf("flow %s %q lag %d, want RUNNING with the topic error, lag 0", fs.State, fs.Error, fs.Lag)
	}
	if got := describeOverrides(t, dstAdm, remoteB)["retention.ms"]; got == ret {
		t.Errorf("b's retention.ms synced through the refusal")
	}
	fault.Remove()
	testcluster.Eventually(t, 30*time.Second, "b's config synced once the target accepts", func() (bool, string) {
		fs := m.Status().Flows[0]
		got := describeOverrides(t, dstAdm, remoteB)["retention.ms"]
		return got == ret && len(fs.TopicErrors) == 0 && fs.Error == "", fmt.Sprintf("b retention.ms %q; %q %+v", got, fs.Error, fs.TopicErrors)
	})
}

// TestTopicErrorsReportedBySingletonOnly (issue 15): with two members,
// only the one holding the singleton duties (it creates topics) reports
// the refused topic and its lag, so the flow's totals over its members
// count it once.
func TestTopicErrorsReportedBySingletonOnly(t *testing.T) {
	t.Parallel()
	p, fc, good, bad, _ := refusedPair(t, true)
	testcluster.Produce(t, &p.Source, valueRecords(good, "g", 0, 10)...)
	testcluster.Produce(t, &p.Source, valueRecords(bad, "b", 0, 10)...)
	a, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	b, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "one slot each, good replicated, bad refused", func() (bool, string) {
		fa, fb := a.Status().Flows[0], b.Status().Flows[0]
		pa, oka := partitionOf(fa, good)
		pb, okb := partitionOf(fb, good)
		return len(fa.Member.Slots) == 1 && len(fb.Member.Slots) == 1 && ((oka && pa.Replicated == 10) || (okb && pb.Replicated == 10)) &&
				len(fa.TopicErrors)+len(fb.TopicErrors) == 1 && fa.Lag+fb.Lag == 10,
			fmt.Sprintf("a %v %d records lag %d %+v; b %v %d records lag %d %+v", fa.Member.Slots, fa.Records, fa.Lag, fa.TopicErrors,
				fb.Member.Slots, fb.Records, fb.Lag, fb.TopicErrors)
	})
	for _, m := range []*Mirror{a, b} {
		fs := m.Status().Flows[0]
		if fs.Member.Singleton != (len(fs.TopicErrors) == 1) {
			t.Errorf("member %v singleton %v reports topic errors %+v: only the singleton should", fs.Member.Slots, fs.Member.Singleton, fs.TopicErrors)
		}
		if fs.State != StateRunning {
			t.Errorf("member %v: flow %s %q, want RUNNING", fs.Member.Slots, fs.State, fs.Error)
		}
	}
}

// TestListingTopicsFailingShowsRetrying (issue 15): an error of a whole
// cluster, here the source's topics that cannot be listed, is what makes
// a flow RETRYING (with the listing's error), unlike one topic's error;
// the flow is RUNNING again once the listing works.
func TestListingTopicsFailingShowsRetrying(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's request control (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, valueRecords(topic, "o", 0, 10)...)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(), Admin: []kgo.Opt{kgo.RequestRetries(0)}}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}), WithFlow(fc))
	waitReplicated(t, m, 10)
	refuse := refuseListing(p)
	wantErr := "listing topics on " + p.Source.Alias + ": "
	testcluster.Eventually(t, 30*time.Second, "RETRYING with the listing error", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRetrying && strings.Contains(fs.Error, wantErr), fmt.Sprintf("%s %q", fs.State, fs.Error)
	})
	refuse.Store(false)
	testcluster.Eventually(t, 30*time.Second, "RUNNING again", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRunning && fs.Error == "", fmt.Sprintf("%s %q", fs.State, fs.Error)
	})
}

// TestRemoteTopicNameTooLongDoesNotStopOthers is issue 15 case 2 with a
// cause that needs no injected error, so it runs on real Kafka too: a
// source topic of 249 characters (Kafka's limit) has a remote topic name
// longer than that, which Kafka refuses (INVALID_TOPIC_EXCEPTION) and kfake
// accepted while every client refuses to write it (the partition failed
// over and over): kmirror does not ask for it. The other topic
// replicates, the flow stays RUNNING, and the status names the long topic,
// the limit and what to do.
func TestRemoteTopicNameTooLongDoesNotStopOthers(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	good := p.Topic("good")
	long := p.Topic("long")
	long += strings.Repeat("x", maxTopicName-len(long))
	testcluster.CreateTopic(t, &p.Source, good, 1, nil)
	testcluster.CreateTopic(t, &p.Source, long, 1, nil)
	testcluster.Produce(t, &p.Source, valueRecords(good, "g", 0, 10)...)
	testcluster.Produce(t, &p.Source, valueRecords(long, "l", 0, 10)...)
	fc := fastFlow(p)
	fc.Topics = []string{good, long}
	fc.Tasks = 2
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	remote := p.Source.Alias + "." + long
	testcluster.Eventually(t, 30*time.Second, "good replicated, long refused", func() (bool, string) {
		fs := m.Status().Flows[0]
		ps, ok := partitionOf(fs, good)
		return ok && ps.Replicated == 10 && len(fs.TopicErrors) == 1, fmt.Sprintf("%s %q %+v %+v", fs.State, fs.Error, fs.Partitions, fs.TopicErrors)
	})
	fs := m.Status().Flows[0]
	te := fs.TopicErrors[0]
	if fs.State != StateRunning || te.Topic != long || te.RemoteTopic != remote || te.Op != TopicOpCreate ||
		!strings.Contains(te.Error, fmt.Sprintf("has %d characters, Kafka allows 249", len(remote))) {
		t.Errorf("flow %s, topic error %+v; want RUNNING and a create error of %s naming the length %d", fs.State, te, remote, len(remote))
	}
	if len(fs.Partitions) != 1 || fs.Partitions[0].Topic != good {
		t.Errorf("partitions %+v; want only %s[0]", fs.Partitions, good)
	}
	if got := len(testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+good)[0]); got != 10 {
		t.Errorf("target holds %d records of %s, want 10", got, good)
	}
}

// TestDescribeConfigsRefusedForOneTopicCreatesTheOthers: the flow may not
// DESCRIBE_CONFIGS one new source topic ("secret": an ACL granted per
// prefix). kadm turns that one resource's TOPIC_AUTHORIZATION_FAILED into
// the error of the whole DescribeTopicConfigs call; kmirror used to return
// it from the round, so no remote topic at all was created and the flow
// read RUNNING with no topic error. Now the other topic is created and
// replicated, and "secret" carries a topic error of op "create" naming the
// refusal; once the source allows it, its remote topic is created too.
func TestDescribeConfigsRefusedForOneTopicCreatesTheOthers(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	good, secret := p.Topic("good"), p.Topic("secret")
	ret := "7200000"
	testcluster.CreateTopic(t, &p.Source, good, 1, map[string]*string{"retention.ms": &ret})
	testcluster.CreateTopic(t, &p.Source, secret, 1, nil)
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: good, Value: []byte("g")}, &kgo.Record{Topic: secret, Value: []byte("s")})
	fault := p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeConfigs}, Resource: secret, Err: kerr.TopicAuthorizationFailed, Count: -1})
	fc := fastFlow(p)
	fc.DisableHeartbeatsReplication = true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	remoteGood, remoteSecret := p.Source.Alias+"."+good, p.Source.Alias+"."+secret
	wantErr := fmt.Sprintf("describing configs of %s on %s to create %s: %s; kmirror may not read its configs: grant DESCRIBE_CONFIGS on topic %s on %s to kmirror's principal, or create %s yourself, or exclude %s with topics.exclude",
		secret, p.Source.Alias, remoteSecret, kerr.TopicAuthorizationFailed, secret, p.Source.Alias, remoteSecret, secret)
	testcluster.Eventually(t, 20*time.Second, "good replicated, secret's creation refused", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.Records == 1 && len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Error == wantErr,
			fmt.Sprintf("%s %q records %d topic errors %+v", fs.State, fs.Error, fs.Records, fs.TopicErrors)
	})
	fs := m.Status().Flows[0]
	if te := fs.TopicErrors[0]; te.Topic != secret || te.RemoteTopic != remoteSecret || te.Op != TopicOpCreate || te.Lag != 1 {
		t.Errorf("topic error %+v, want topic %s, remote %s, op create, lag 1", te, secret, remoteSecret)
	}
	if got := topicNames(t, &p.Target, ".*("+regexp.QuoteMeta(good)+"|"+regexp.QuoteMeta(secret)+")"); len(got) != 1 || got[0] != remoteGood {
		t.Errorf("target topics %v, want [%s]", got, remoteGood)
	}
	if got := describeOverrides(t, testcluster.Admin(t, &p.Target), remoteGood)["retention.ms"]; got != ret {
		t.Errorf("%s retention.ms %q, want the source's %s", remoteGood, got, ret)
	}
	fault.Remove()
	testcluster.Eventually(t, 20*time.Second, "secret created and replicated once allowed", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.Records == 2 && len(fs.TopicErrors) == 0, fmt.Sprintf("records %d topic errors %+v", fs.Records, fs.TopicErrors)
	})
}

// TestDescribeConfigsRefusedForOneTopicSyncsTheOthers: config sync and the
// reading of the remote topics' max.message.bytes described every topic in
// one call too, so one topic the source refuses to describe stopped config
// sync of every topic. Now the other topic's change is synced and the
// refused topic carries a topic error of op "config".
func TestDescribeConfigsRefusedForOneTopicSyncsTheOthers(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	a, b := p.Topic("synced"), p.Topic("hidden")
	for _, tn := range []string{a, b} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
	}
	fc := fastFlow(p)
	fc.Topics = []string{a, b}
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Produce(t, &p.Source, append(valueRecords(a, "a", 0, 3), valueRecords(b, "b", 0, 3)...)...)
	waitReplicated(t, m, 6)
	p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeConfigs}, Resource: b, Err: kerr.TopicAuthorizationFailed, Count: -1})
	ret := "123456789"
	srcAdm, dstAdm := testcluster.Admin(t, &p.Source), testcluster.Admin(t, &p.Target)
	if _, err := srcAdm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &ret}}, a); err != nil {
		t.Fatal(err)
	}
	remoteA, remoteB := p.Source.Alias+"."+a, p.Source.Alias+"."+b
	wantErr := fmt.Sprintf("describing configs of %s on %s: %s; kmirror may not read its configs: grant DESCRIBE_CONFIGS on topic %s on %s to kmirror's principal, or set sync.topic.configs.enabled=false",
		b, p.Source.Alias, kerr.TopicAuthorizationFailed, b, p.Source.Alias)
	testcluster.Eventually(t, 20*time.Second, "a's config synced, b's describe refused", func() (bool, string) {
		fs := m.Status().Flows[0]
		got := describeOverrides(t, dstAdm, remoteA)["retention.ms"]
		return got == ret && len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Error == wantErr,
			fmt.Sprintf("a retention.ms %q; %s %q %+v", got, fs.State, fs.Error, fs.TopicErrors)
	})
	if te := m.Status().Flows[0].TopicErrors[0]; te.Topic != b || te.RemoteTopic != remoteB || te.Op != TopicOpConfig || te.Lag != 0 {
		t.Errorf("topic error %+v, want topic %s, op config, lag 0", te, b)
	}
}

// TestDescribeConfigsRefusedForOneTopicStaysBatched: one topic of many the
// source refuses to describe. describeTopicConfigs used to describe every
// topic again one by one then, serially, in every config sync round (and
// the round's topic error makes the refresh loop retry soon): N+1
// DescribeConfigs round trips per round while the ACL is missing. The
// response's per-resource error codes name the refused topic, so one
// batched request per round serves every topic.
func TestDescribeConfigsRefusedForOneTopicStaysBatched(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	const n = 40
	var topics []string
	for i := 0; i < n; i++ {
		tn := p.Topic(fmt.Sprintf("t%02d", i))
		topics = append(topics, tn)
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
	}
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	fc.SyncTopicConfigsInterval = time.Second
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "all partitions", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == n, ""
	})
	p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeConfigs}, Resource: topics[7], Err: kerr.TopicAuthorizationFailed, Count: -1})
	var batch, single atomic.Int64
	p.Source.Fake.ControlKey(int16(kmsg.DescribeConfigs), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		p.Source.Fake.KeepControl()
		if len(kreq.(*kmsg.DescribeConfigsRequest).Resources) > 1 {
			batch.Add(1)
		} else {
			single.Add(1)
		}
		return nil, nil, false
	})
	wantErr := fmt.Sprintf("describing configs of %s on %s: %s; kmirror may not read its configs: grant DESCRIBE_CONFIGS on topic %s on %s to kmirror's principal, or set sync.topic.configs.enabled=false",
		topics[7], p.Source.Alias, kerr.TopicAuthorizationFailed, topics[7], p.Source.Alias)
	testcluster.Eventually(t, 10*time.Second, "the refused topic's error", func() (bool, string) {
		fs := m.Status().Flows[0]
		return len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Topic == topics[7] && fs.TopicErrors[0].Error == wantErr, fmt.Sprintf("%+v", fs.TopicErrors)
	})
	time.Sleep(3 * time.Second)
	b, s := batch.Load(), single.Load()
	t.Logf("source DescribeConfigs: %d batched, %d of one topic", b, s)
	if b == 0 || s > 2 {
		t.Errorf("%d single-topic DescribeConfigs for %d batched ones (%d topics, one refused): want every round in one batched request", s, b, n)
	}
}

// refuseListing makes p's source (kfake) refuse every listing of all its
// topics (a Metadata request naming none: the flows' discovery) while the
// returned flag is set, which it is.
func refuseListing(p *testcluster.Pair) *atomic.Bool {
	var refuse atomic.Bool
	refuse.Store(true)
	p.Source.Fake.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		p.Source.Fake.KeepControl()
		if req := kreq.(*kmsg.MetadataRequest); refuse.Load() && req.Topics == nil {
			return nil, errors.New("listing refused by the test"), true
		}
		return nil, nil, false
	})
	return &refuse
}
