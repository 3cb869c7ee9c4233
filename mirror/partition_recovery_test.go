package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// partRecords returns records prefix<from>..prefix<to-1> for partition
// partition of topic.
func partRecords(topic, prefix string, partition int32, from, to int) []*kgo.Record {
	rs := valueRecords(topic, prefix, from, to)
	for _, r := range rs {
		r.Partition = partition
	}
	return rs
}

// targetValues returns the values of partition partition of the remote
// topic on the target, in offset order, as "offset:value".
func targetValues(t *testing.T, p *testcluster.Pair, remote string, partition int32) []string {
	t.Helper()
	var got []string
	for _, r := range testcluster.ReadAll(t, &p.Target, remote)[partition] {
		got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	return got
}

// wantValues is targetValues' expectation: the values of rs from target
// offset 0 on.
func wantValues(rs ...[]*kgo.Record) []string {
	var want []string
	for _, s := range rs {
		for _, r := range s {
			want = append(want, fmt.Sprintf("%d:%s", len(want), r.Value))
		}
	}
	return want
}

// recoveryFlow is the flow of the recovery tests: one slot, no heartbeats
// or checkpoints. Run it with recoveryOpts (automatic restarts after 200
// ms).
func recoveryFlow(p *testcluster.Pair, topic string) FlowConfig {
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 1
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	return fc
}

// recoveryOpts are the Mirror options of the recovery tests: p's clusters,
// flow fc, the first automatic restart after 200 ms, then opts.
func recoveryOpts(p *testcluster.Pair, fc FlowConfig, opts ...Opt) []Opt {
	return append(append(clusterOpts(p), WithFlow(fc), withPartRetryFirst(200*time.Millisecond)), opts...)
}

func partStatus(m *Mirror, partition int32) PartitionStatus {
	for _, ps := range m.Status().Flows[0].Partitions {
		if ps.Partition == partition {
			return ps
		}
	}
	return PartitionStatus{Partition: -1}
}

// TestTransientAuthErrorPartitionRecovers (regression, issue 15 case 5):
// one TOPIC_AUTHORIZATION_FAILED on produce (ACLs being rolled out,
// KAFKA-14250) left the partition FAILED for good while the flow said
// RUNNING. The partition now restarts by itself after a backoff, resumes
// after its last acknowledged record, and every record arrives once, in
// order; the other partition is not affected.
func TestTransientAuthErrorPartitionRecovers(t *testing.T) {
	t.Parallel()
	authErrorRecovers(t, "acl", false)
}

// TestTransientAuthErrorPartitionRecoversShallowCopy is
// TestTransientAuthErrorPartitionRecovers with shallow copy (batches
// copied as fetched): the restarted partition gets a new shallow state
// and every record arrives once, in order.
func TestTransientAuthErrorPartitionRecoversShallowCopy(t *testing.T) {
	t.Parallel()
	authErrorRecovers(t, "aclsh", true)
}

// authErrorRecovers runs the transient-authorization-error case on topic
// name (with shallow copy when shallow).
func authErrorRecovers(t *testing.T, name string, shallow bool) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic := p.Topic(name)
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	a0, b1 := partRecords(topic, "a", 0, 0, 10), partRecords(topic, "b", 1, 0, 10)
	testcluster.Produce(t, &p.Source, append(a0, b1...)...)
	fc := recoveryFlow(p, topic)
	if shallow {
		fc.ShallowCopy, fc.DisableProvenanceHeader = true, true
	}
	rec := &recMetrics{}
	m, _ := runMirror(t, recoveryOpts(p, fc, WithMetrics(rec))...)
	waitReplicated(t, m, 20)

	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: 1})
	c0, d1 := partRecords(topic, "c", 0, 0, 10), partRecords(topic, "d", 1, 0, 10)
	testcluster.Produce(t, &p.Source, c0...)
	testcluster.Produce(t, &p.Source, d1...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 recovered by itself", func() (bool, string) {
		st := m.Status().Flows[0]
		ok := len(st.Partitions) == 2 && st.FailedPartitions == 0
		for _, ps := range st.Partitions {
			ok = ok && ps.State == StateRunning && ps.Replicated == 20 && ps.Lag == 0
		}
		return ok, fmt.Sprintf("%+v", st.Partitions)
	})
	if got, want := targetValues(t, p, remote, 0), wantValues(a0, c0); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0:\n got %v\nwant %v", got, want)
	}
	if got, want := targetValues(t, p, remote, 1), wantValues(b1, d1); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 1:\n got %v\nwant %v", got, want)
	}
	if ps := partStatus(m, 0); ps.Records != 20 || ps.Error != "" || ps.Since.IsZero() {
		t.Errorf("partition 0 after recovery: %+v, want 20 records, no error, Since set", ps)
	}
	f := rec.flow(p.Source.Alias + "->" + p.Target.Alias)
	f.mu.Lock()
	if f.errs["partition_failed"] != 1 {
		t.Errorf("errors by kind %v: want partition_failed 1", f.errs)
	}
	f.mu.Unlock()
}

// TestRecordErrorWaitsForRestart (regression, issue 15 case 5): an error
// that is the record's own (INVALID_RECORD; a MESSAGE_TOO_LARGE for a
// record this small is a batch refused at a stale limit since stop 38,
// retried by itself) is not retried
// automatically: the partition stays FAILED (no NextRetry), the flow's
// status counts it, and Mirror.RestartFailed brings it back after its
// last acknowledged record, every record arriving once, in order.
func TestRecordErrorWaitsForRestart(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic := p.Topic("toolarge")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	a0, b1 := partRecords(topic, "a", 0, 0, 10), partRecords(topic, "b", 1, 0, 10)
	testcluster.Produce(t, &p.Source, append(a0, b1...)...)
	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	waitReplicated(t, m, 20)
	flow := p.Source.Alias + "->" + p.Target.Alias

	if n, err := m.RestartFailed(flow, "", -1); n != 0 || err != nil {
		t.Errorf("RestartFailed with nothing failed = %d, %v; want 0, nil", n, err)
	}
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
		Err: kerr.InvalidRecord, Count: 1})
	c0, d1 := partRecords(topic, "c", 0, 0, 10), partRecords(topic, "d", 1, 0, 10)
	testcluster.Produce(t, &p.Source, c0...)
	testcluster.Produce(t, &p.Source, d1...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED, partition 1 replicated", func() (bool, string) {
		p0, p1 := partStatus(m, 0), partStatus(m, 1)
		return p0.State == StateFailed && p1.Replicated == 20, fmt.Sprintf("%+v %+v", p0, p1)
	})
	time.Sleep(time.Second) // five times the first automatic restart delay
	st := m.Status().Flows[0]
	p0 := partStatus(m, 0)
	if p0.State != StateFailed || !p0.NextRetry.IsZero() || p0.Since.IsZero() || p0.Replicated != 10 ||
		!strings.Contains(p0.Error, "INVALID_RECORD") {
		t.Fatalf("partition 0 = %+v; want FAILED on INVALID_RECORD, no NextRetry, Since set, Replicated 10", p0)
	}
	if st.State != StateRunning || st.FailedPartitions != 1 || !strings.Contains(st.Error, "1 partition(s) FAILED") ||
		!strings.Contains(st.Error, topic+"[0]") {
		t.Errorf("flow %s, %d failed, error %q; want RUNNING, 1 failed, an error naming %s[0]", st.State, st.FailedPartitions, st.Error, topic)
	}

	if _, err := m.RestartFailed("nope->dst", "", -1); err == nil || !strings.Contains(err.Error(), `"nope->dst"`) || !strings.Contains(err.Error(), flow) {
		t.Errorf("RestartFailed of an unknown flow: %v; want an error naming it and the flows", err)
	}
	if _, err := m.RestartFailed(flow, "", 0); err == nil {
		t.Errorf("RestartFailed with a partition and no topic: no error")
	}
	if n, err := m.RestartFailed(flow, topic, 1); n != 0 || err != nil {
		t.Errorf("RestartFailed of the running partition 1 = %d, %v; want 0, nil", n, err)
	}
	if n, err := m.RestartFailed(flow, topic, -1); n != 1 || err != nil {
		t.Fatalf("RestartFailed(%s, %s, -1) = %d, %v; want 1, nil", flow, topic, n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "partition 0 restarted", func() (bool, string) {
		st := m.Status().Flows[0]
		p0 := partStatus(m, 0)
		return p0.State == StateRunning && p0.Replicated == 20 && st.FailedPartitions == 0 && st.Error == "", fmt.Sprintf("%+v", p0)
	})
	if got, want := targetValues(t, p, remote, 0), wantValues(a0, c0); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0:\n got %v\nwant %v", got, want)
	}
	if got, want := targetValues(t, p, remote, 1), wantValues(b1, d1); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 1:\n got %v\nwant %v", got, want)
	}
}

// TestRemoteTopicDeletedOnTargetRefilled (regression, issue 15 case 1,
// KAFKA-10332): the remote topic deleted on the target while the flow
// runs is re-created by discovery; the unit sees its new topic ID and
// replicates the source again from its log start, so the target holds
// every source record from offset 0, and the records produced after it
// arrive too (the partition used to stay FAILED on UNKNOWN_TOPIC_ID).
func TestRemoteTopicDeletedOnTargetRefilled(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("orders")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a := partRecords(topic, "a", 0, 0, 100)
	testcluster.Produce(t, &p.Source, a...)
	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	waitReplicated(t, m, 100)

	adm := testcluster.Admin(t, &p.Target)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before, err := adm.ListTopics(ctx, remote)
	if err != nil || before[remote].Err != nil {
		t.Fatalf("listing %s on the target: %v %v", remote, err, before[remote].Err)
	}
	if _, err := adm.DeleteTopic(ctx, remote); err != nil {
		t.Fatalf("deleting %s on the target: %v", remote, err)
	}
	// Half of the next records while the remote topic is missing, half
	// once discovery re-created it.
	b := partRecords(topic, "b", 0, 0, 100)
	testcluster.Produce(t, &p.Source, b[:50]...)
	testcluster.Eventually(t, 30*time.Second, "discovery re-created the remote topic", func() (bool, string) {
		now, err := adm.ListTopics(ctx, remote)
		if err != nil || now[remote].Err != nil {
			return false, fmt.Sprint(err)
		}
		return now[remote].ID != before[remote].ID, fmt.Sprintf("id %s, was %s", now[remote].ID, before[remote].ID)
	})
	testcluster.Produce(t, &p.Source, b[50:]...)
	testcluster.Eventually(t, 60*time.Second, "the re-created remote topic refilled", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 200 && ps.SourceEnd == 200 && ps.Lag == 0 && ps.Committed == 199,
			fmt.Sprintf("%+v", ps)
	})
	c := partRecords(topic, "c", 0, 0, 10)
	testcluster.Produce(t, &p.Source, c...)
	testcluster.Eventually(t, 30*time.Second, "the next records replicated", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 210 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetValues(t, p, remote, 0), wantValues(a, b, c); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0 (%d records, want %d):\n got %v\nwant %v", len(got), len(want), got, want)
	}
}

// TestTransientAuthErrorPartitionRecoversExactlyOnce is
// TestTransientAuthErrorPartitionRecovers with exactly once: the failed
// record aborts its transaction, the partition restarts after its last
// committed resume point, and read_committed consumers of the target see
// every record once, in order, with no record of the aborted transaction.
func TestTransientAuthErrorPartitionRecoversExactlyOnce(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic := p.Topic("aclx")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	a0, b1 := partRecords(topic, "a", 0, 0, 10), partRecords(topic, "b", 1, 0, 10)
	testcluster.Produce(t, &p.Source, append(a0, b1...)...)
	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = true
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicatedCommitted(t, m, 20)

	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: 1})
	c0, d1 := partRecords(topic, "c", 0, 0, 10), partRecords(topic, "d", 1, 0, 10)
	testcluster.Produce(t, &p.Source, c0...)
	testcluster.Produce(t, &p.Source, d1...)
	testcluster.Eventually(t, 60*time.Second, "partition 0 recovered by itself", func() (bool, string) {
		st := m.Status().Flows[0]
		ok := len(st.Partitions) == 2 && st.FailedPartitions == 0
		for _, ps := range st.Partitions {
			ok = ok && ps.State == StateRunning && ps.Replicated == 20 && ps.Committed == 19 && ps.Lag == 0
		}
		return ok, fmt.Sprintf("%+v", st.Partitions)
	})
	recs, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), remote, true)
	if err != nil {
		t.Fatal(err)
	}
	for part, want := range map[int32][]*kgo.Record{0: append(a0, c0...), 1: append(b1, d1...)} {
		var got, wantV []string
		for _, r := range recs[part] {
			got = append(got, string(r.Value))
		}
		for _, r := range want {
			wantV = append(wantV, string(r.Value))
		}
		if strings.Join(got, " ") != strings.Join(wantV, " ") {
			t.Errorf("target partition %d read_committed:\n got %v\nwant %v", part, got, wantV)
		}
	}
}

// TestRemoteTopicDeletedOnTargetRefilledExactlyOnce is
// TestRemoteTopicDeletedOnTargetRefilled with exactly once: read_committed
// consumers of the re-created remote topic see every source record once,
// in order, from offset 0 on.
func TestRemoteTopicDeletedOnTargetRefilledExactlyOnce(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("ordersx")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a := partRecords(topic, "a", 0, 0, 100)
	testcluster.Produce(t, &p.Source, a...)
	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = true
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicatedCommitted(t, m, 100)

	adm := testcluster.Admin(t, &p.Target)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.DeleteTopic(ctx, remote); err != nil {
		t.Fatalf("deleting %s on the target: %v", remote, err)
	}
	b := partRecords(topic, "b", 0, 0, 100)
	testcluster.Produce(t, &p.Source, b...)
	testcluster.Eventually(t, 60*time.Second, "the re-created remote topic refilled", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 200 && ps.Committed == 199 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	// A real broker may not know the re-created topic on every connection
	// at once (UNKNOWN_TOPIC_OR_PARTITION while listing its end offsets).
	var recs map[int32][]*kgo.Record
	// Its last stable offset may also lag the commit for a moment: read
	// until the 200 records show (their contents are checked below).
	testcluster.Eventually(t, 30*time.Second, "the re-created remote topic readable", func() (bool, string) {
		var err error
		recs, err = testcluster.ReadTopic(ctx, p.Target.Opts(), remote, true)
		return err == nil && len(recs[0]) >= 200, fmt.Sprintf("%d records, err %v", len(recs[0]), err)
	})
	var got, want []string
	for _, r := range recs[0] {
		got = append(got, string(r.Value))
	}
	for _, r := range append(a, b...) {
		want = append(want, string(r.Value))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target read_committed (%d records, want %d):\n got %v\nwant %v", len(got), len(want), got, want)
	}
}

// TestPartitionRetryBackoff: the automatic restart delay of a failed
// partition starts at the first delay, doubles at each failure and stops
// at 5 min; an error that is the record's own schedules no restart, and
// the status shows Since, NextRetry and Retries.
func TestPartitionRetryBackoff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, lifeConfig{flow: "a->b"})
	m := h.m
	p := h.start(tp{"orders", 0}, startPos{remote: "a.orders", committed: 9}).p
	var got []time.Duration
	for range 9 {
		p.err = nil
		m.fail(p, kerr.TopicAuthorizationFailed, true, true)
		got = append(got, p.nextRetry.Sub(p.failedAt))
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	p.retries = 3
	s := p.status(m.now, time.Hour)
	if s.State != StateFailed || s.Since != p.failedAt || s.NextRetry != p.nextRetry || s.Retries != 3 {
		t.Errorf("status %+v: want FAILED, Since %v, NextRetry %v, Retries 3", s, p.failedAt, p.nextRetry)
	}
	m.fail(p, kerr.MessageTooLarge, false, true) // the first error wins
	if !errors.Is(p.err, kerr.TopicAuthorizationFailed) {
		t.Errorf("err = %v, want the first error kept", p.err)
	}
	q := h.start(tp{"orders", 1}, startPos{remote: "a.orders", committed: 9}).p
	m.fail(q, kerr.MessageTooLarge, !recordError(kerr.MessageTooLarge), true)
	if s := q.status(m.now, time.Hour); s.State != StateFailed || !s.NextRetry.IsZero() || s.Retries != 0 {
		t.Errorf("record error status %+v: want FAILED with no NextRetry", s)
	}
}

// TestRecordErrorClassification: the produce errors that wait for an
// operator (the record's own) and those restarted automatically or
// handled as transient.
func TestRecordErrorClassification(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err               error
		record, transient bool
	}{
		{kerr.MessageTooLarge, true, false},
		{kerr.RecordListTooLarge, true, false},
		{kerr.InvalidRecord, true, false},
		{kerr.CorruptMessage, true, true}, // retriable for kgo: it retries it first
		{kerr.InvalidTimestamp, true, false},
		{kerr.TopicAuthorizationFailed, false, false},
		{kerr.PolicyViolation, false, false},
		{kerr.UnknownTopicID, false, false},
		{kerr.UnknownTopicOrPartition, false, false},
		{kerr.NotEnoughReplicas, false, true},
		{kgo.ErrRecordRetries, false, true},
	} {
		if got := recordError(c.err); got != c.record {
			t.Errorf("recordError(%v) = %v, want %v", c.err, got, c.record)
		}
		if got := transientProduceErr(c.err); got != c.transient {
			t.Errorf("transientProduceErr(%v) = %v, want %v", c.err, got, c.transient)
		}
	}
}

// TestPersistentAuthErrorBacksOff: while the target keeps refusing a
// partition (its ACLs missing for a while), the partition stays FAILED
// with its automatic restarts counted and the next one scheduled, the
// flow stays RUNNING with the failure in its error and count, and the
// other partition goes on; once the target accepts the writes again, the
// partition catches up with every record once, in order.
func TestPersistentAuthErrorBacksOff(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic := p.Topic("aclp")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	a0, b1 := partRecords(topic, "a", 0, 0, 10), partRecords(topic, "b", 1, 0, 10)
	testcluster.Produce(t, &p.Source, append(a0, b1...)...)
	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	waitReplicated(t, m, 20)

	denied := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: -1})
	c0, d1 := partRecords(topic, "c", 0, 0, 10), partRecords(topic, "d", 1, 0, 10)
	testcluster.Produce(t, &p.Source, c0...)
	testcluster.Produce(t, &p.Source, d1...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 retried twice", func() (bool, string) {
		st := m.Status().Flows[0]
		p0, p1 := partStatus(m, 0), partStatus(m, 1)
		return p0.State == StateFailed && p0.Retries >= 2 && p0.NextRetry.After(p0.Since) && p0.Replicated == 10 &&
				p1.State == StateRunning && p1.Replicated == 20 &&
				st.State == StateRunning && st.FailedPartitions == 1 && strings.Contains(st.Error, "TOPIC_AUTHORIZATION_FAILED"),
			fmt.Sprintf("flow %s %d %q: %+v %+v", st.State, st.FailedPartitions, st.Error, p0, p1)
	})
	denied.Remove()
	testcluster.Eventually(t, 30*time.Second, "partition 0 recovered", func() (bool, string) {
		st := m.Status().Flows[0]
		p0 := partStatus(m, 0)
		return p0.State == StateRunning && p0.Replicated == 20 && p0.Retries == 0 && p0.NextRetry.IsZero() &&
			st.FailedPartitions == 0 && st.Error == "", fmt.Sprintf("%+v", p0)
	})
	if got, want := targetValues(t, p, remote, 0), wantValues(a0, c0); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0:\n got %v\nwant %v", got, want)
	}
	if got, want := targetValues(t, p, remote, 1), wantValues(b1, d1); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 1:\n got %v\nwant %v", got, want)
	}
}

// TestGapStopRestartAcceptsLoss: a partition stopped by a source gap
// (OnGap GapStop) is not restarted automatically; Mirror.RestartFailed
// accepts the loss and resumes at the source's log start, so the target
// holds the records before the gap, then those after it.
func TestGapStopRestartAcceptsLoss(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("gapstop")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	rs := partRecords(topic, "r", 0, 0, 50)
	testcluster.Produce(t, &p.Source, rs[:10]...)
	fc := recoveryFlow(p, topic)
	fc.OnGap = GapStop
	m, stop := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 10)
	stop()
	testcluster.Produce(t, &p.Source, rs[10:]...)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 30})
	if _, err := testcluster.Admin(t, &p.Source).DeleteRecords(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	m, _ = runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Eventually(t, 30*time.Second, "partition stopped by the gap", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed, fmt.Sprintf("%+v", ps)
	})
	time.Sleep(time.Second) // five times the first automatic restart delay
	if ps := partStatus(m, 0); ps.State != StateFailed || !ps.NextRetry.IsZero() || ps.Replicated != 10 || !strings.Contains(ps.Error, "20 records lost") {
		t.Fatalf("partition %+v: want FAILED on the 20 records lost, no NextRetry, Replicated 10", ps)
	}
	flow := p.Source.Alias + "->" + p.Target.Alias
	if n, err := m.RestartFailed(flow, "", -1); n != 1 || err != nil {
		t.Fatalf("RestartFailed(%s) = %d, %v; want 1, nil", flow, n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "partition resumed after the gap", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 50 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetValues(t, p, remote, 0), wantValues(rs[:10], rs[30:]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0:\n got %v\nwant %v", got, want)
	}
}

// TestRecordTooLargeForTargetTopic is issue 15's record-error case with a
// real cause instead of an injected error, so it runs on real Kafka too:
// the remote topic's max.message.bytes is lowered on the target (a
// target-only config, which config sync leaves alone), a source record
// larger than it fails with MESSAGE_TOO_LARGE and stops its partition
// (after at most one automatic retry that reads the new limit), which
// waits for an operator; once the limit is raised and the partition
// restarted, the record and those after it arrive in order.
func TestRecordTooLargeForTargetTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("large")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	first := partRecords(topic, "a", 0, 0, 5)
	testcluster.Produce(t, &p.Source, first...)
	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	waitReplicated(t, m, 5)
	flow := p.Source.Alias + "->" + p.Target.Alias

	adm := testcluster.Admin(t, &p.Target)
	ctx := context.Background()
	setMax := func(v *string) {
		t.Helper()
		op := kadm.SetConfig
		if v == nil {
			op = kadm.DeleteConfig
		}
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: "max.message.bytes", Value: v}}, remote)
		if err == nil {
			_, err = rs.On(remote, nil)
		}
		if err != nil {
			t.Fatalf("altering max.message.bytes of %s: %v", remote, err)
		}
		waitTopicConfigs(t, &p.Target, remote, kadm.AlterConfig{Op: op, Name: "max.message.bytes", Value: v})
	}
	small := "2048"
	setMax(&small)
	// Incompressible, so that no codec brings it under the limit.
	big := make([]byte, 8192)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range big {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		big[i] = byte(x)
	}
	bigRec := &kgo.Record{Topic: topic, Partition: 0, Value: big}
	testcluster.Produce(t, &p.Source, bigRec)
	after := partRecords(topic, "c", 0, 0, 3)
	testcluster.Produce(t, &p.Source, after...)
	// The producer may still apply the limit it read before (1 MiB): the
	// target then refuses the batch, the partition restarts by itself
	// with the limit read again (one retry), and the record is refused
	// before it is produced, naming the limit now in force.
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED on MESSAGE_TOO_LARGE at the new limit", func() (bool, string) {
		p0 := partStatus(m, 0)
		// (The record's size with its provenance header depends on the
		// cluster IDs: 8 294 bytes on kfake.)
		return p0.State == StateFailed && strings.Contains(p0.Error, "MESSAGE_TOO_LARGE: the record at offset 5 is ") &&
				strings.Contains(p0.Error, " bytes as a record batch, above max.message.bytes of "+remote+" on "+p.Target.Alias+" (2048 bytes)"),
			fmt.Sprintf("%+v", p0)
	})
	time.Sleep(time.Second) // five times the first automatic restart delay: a record error is not restarted
	if p0 := partStatus(m, 0); p0.State != StateFailed || !p0.NextRetry.IsZero() || p0.Replicated != 5 || p0.Retries > 1 {
		t.Fatalf("partition 0 = %+v; want FAILED, no NextRetry, Replicated 5, at most 1 retry", p0)
	}
	setMax(nil)
	if n, err := m.RestartFailed(flow, topic, 0); n != 1 || err != nil {
		t.Fatalf("RestartFailed(%s, %s, 0) = %d, %v; want 1, nil", flow, topic, n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "partition 0 running, every record replicated", func() (bool, string) {
		p0 := partStatus(m, 0)
		return p0.State == StateRunning && p0.Replicated == 9, fmt.Sprintf("%+v", p0)
	})
	recs := testcluster.ReadAll(t, &p.Target, remote)[0]
	if len(recs) != 9 {
		t.Fatalf("target holds %d records, want 9", len(recs))
	}
	want := append(append(append([]*kgo.Record{}, first...), bigRec), after...)
	for i, r := range recs {
		if r.Offset != int64(i) || string(r.Value) != string(want[i].Value) {
			t.Fatalf("target record %d at offset %d (%d bytes), want offset %d with the source's record %d (%d bytes)", i, r.Offset, len(r.Value), i, i, len(want[i].Value))
		}
	}
}

// TestRemoteTopicDeletedWhileDownRefilled: the remote topic is deleted on
// the target while no kmirror runs. The resume point stored on the target
// says 99, and resuming after it would leave records 0-99 missing from the
// re-created remote topic for good (what MM2 does). The resume point
// records the remote topic's ID (header kmirror-remote-topic-id): the
// restarted mirror sees that the remote topic discovery re-created is
// another one and refills it from the source's log start.
func TestRemoteTopicDeletedWhileDownRefilled(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("orders")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a := partRecords(topic, "a", 0, 0, 100)
	testcluster.Produce(t, &p.Source, a...)
	m, stop := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	waitReplicated(t, m, 100)
	if err := stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resume, ids, err := readResumePoints(ctx, p.Target.Opts(), "mm2-offsets."+p.Source.Alias+".internal", p.Source.Alias, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	adm := testcluster.Admin(t, &p.Target)
	before, err := adm.ListTopics(ctx, remote)
	if err != nil || before[remote].Err != nil {
		t.Fatalf("listing %s on the target: %v %v", remote, err, before[remote].Err)
	}
	k := tp{topic, 0}
	if resume[k] != 99 || ids[k].remote != before[remote].ID {
		t.Fatalf("resume point %d recording remote topic ID %s; want 99 recording %s", resume[k], ids[k].remote, before[remote].ID)
	}
	if _, err := adm.DeleteTopic(ctx, remote); err != nil {
		t.Fatalf("deleting %s on the target: %v", remote, err)
	}
	testcluster.Eventually(t, 30*time.Second, "remote topic deleted", func() (bool, string) {
		td, err := adm.ListTopics(ctx, remote)
		return err == nil && td[remote].Err != nil, fmt.Sprint(td, err)
	})
	b := partRecords(topic, "b", 0, 0, 20)
	testcluster.Produce(t, &p.Source, b...)

	var lb logBuf
	m2, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic), WithLogger(lb.logger()))...)
	testcluster.Eventually(t, 60*time.Second, "the re-created remote topic refilled", func() (bool, string) {
		ps := partStatus(m2, 0)
		return ps.State == StateRunning && ps.Replicated == 120 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetValues(t, p, remote, 0), wantValues(a, b); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0 (%d records, want %d):\n got %v\nwant %v", len(got), len(want), got, want)
	}
	if n := len(lb.lines("level=WARN", "re-created on the target since the resume point was stored", "resume_point=99")); n != 1 {
		t.Errorf("%d WARN lines about the refill, want 1", n)
	}
}

// TestSourceTopicRecreatedWhileDownReplicatedFromItsStart: the source
// topic is deleted and re-created while no kmirror runs, and the new topic
// holds more records than the old one did. The resume point stored on the
// target says 59, an offset of the old topic: resuming after it skipped
// the new topic's records 0-59 without a word (what MM2 does). The resume
// point records the source topic's ID (header kmirror-source-topic-id):
// the restarted mirror sees that the topic is another one and replicates
// it from its log start, after the old topic's records.
func TestSourceTopicRecreatedWhileDownReplicatedFromItsStart(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("orders")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a := partRecords(topic, "a", 0, 0, 60)
	testcluster.Produce(t, &p.Source, a...)
	m, stop := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	waitReplicated(t, m, 60)
	if err := stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := testcluster.Admin(t, &p.Source)
	before, err := adm.ListTopics(ctx, topic)
	if err != nil || before[topic].Err != nil {
		t.Fatalf("listing %s on the source: %v %v", topic, err, before[topic].Err)
	}
	resume, ids, err := readResumePoints(ctx, p.Target.Opts(), "mm2-offsets."+p.Source.Alias+".internal", p.Source.Alias, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	k := tp{topic, 0}
	if resume[k] != 59 || ids[k].source != before[topic].ID {
		t.Fatalf("resume point %d recording source topic ID %s; want 59 recording %s", resume[k], ids[k].source, before[topic].ID)
	}
	recreateSourceTopic(t, adm, topic)
	b := partRecords(topic, "b", 0, 0, 80)
	testcluster.Produce(t, &p.Source, b...)

	var lb logBuf
	m2, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic), WithLogger(lb.logger()))...)
	testcluster.Eventually(t, 60*time.Second, "the new source topic replicated from its start", func() (bool, string) {
		ps := partStatus(m2, 0)
		return ps.State == StateRunning && ps.Replicated == 80 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetValues(t, p, remote, 0), wantValues(a, b); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0 (%d records, want %d):\n got %v\nwant %v", len(got), len(want), got, want)
	}
	gaps := m2.Status().Flows[0].Gaps
	if len(gaps) != 1 || gaps[0].Topic != topic || gaps[0].From != 60 || gaps[0].To != 60 || !strings.Contains(gaps[0].Reason, "re-created while no unit replicated it") {
		t.Errorf("gaps %+v, want one for %s[0] at offset 60 (From == To: the old topic's records after the resume point are unknown) naming the re-creation", gaps, topic)
	}
	if n := len(lb.lines("level=ERROR", "source gap", "re-created while no unit replicated it")); n != 1 {
		t.Errorf("%d ERROR lines reporting the gap, want 1", n)
	}
}

// TestStaleSourceOfferRestartsNothing: left by the note of 87c0d8a, the
// source topic ID a discovery offer carries was trusted as is. An offer
// listed before a re-creation the unit already handled names the old
// topic's ID: the unit took it for a second re-creation, restarted the
// partition at the log start and reported a false gap (every record copied
// again). The unit now asks the source, which names the current topic.
func TestStaleSourceOfferRestartsNothing(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("stale-src")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "a", 0, 0, 60)...)
	fc := recoveryFlow(p, topic)
	fc.RefreshTopicsInterval = time.Hour // the test hands the unit its offers
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 60)
	u, stale := onlyUnitOffer(m)
	if len(stale) != 1 {
		t.Fatalf("offer %v, want the topic's one partition", stale)
	}

	ctx := t.Context()
	adm := testcluster.Admin(t, &p.Source)
	newID := recreateSourceTopic(t, adm, topic)
	testcluster.Produce(t, &p.Source, partRecords(topic, "b", 0, 0, 80)...)
	fresh := maps.Clone(stale)
	for k, o := range fresh {
		if o.id == newID {
			t.Fatalf("the re-created topic has the old ID %s", o.id)
		}
		o.id = newID
		fresh[k] = o
	}
	u.setOffer(fresh) // the discovery round that sees the re-creation
	testcluster.Eventually(t, 30*time.Second, "the new topic replicated", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 80 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	before, gaps := partStatus(m, 0), len(m.Status().Flows[0].Gaps)
	end := func() int64 {
		ends, err := testcluster.Admin(t, &p.Target).ListEndOffsets(ctx, remote)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := ends.Lookup(remote, 0)
		return o.Offset
	}
	targetEnd := end()

	u.setOffer(stale) // a discovery round that listed the source before the re-creation
	// A restart's first fetch can wait for the unit's fetch in flight
	// (fetchMaxWait): watch past it.
	time.Sleep(fetchMaxWait + 2*time.Second)
	after := partStatus(m, 0)
	if after.Records != before.Records || after.Replicated != 80 || after.State != StateRunning {
		t.Errorf("after the stale offer: %+v; want the partition running at 80 with %d records acknowledged, as before it (a restart copies the new topic again)", after, before.Records)
	}
	if n := len(m.Status().Flows[0].Gaps); n != gaps {
		t.Errorf("%d gaps after the stale offer, want %d (no second re-creation)", n, gaps)
	}
	if e := end(); e != targetEnd {
		t.Errorf("target end offset %d after the stale offer, want %d (nothing copied again)", e, targetEnd)
	}
}

// TestSettleSourceID: an offer's source topic ID is taken when the source
// agrees; an answer that contradicts it is taken only after disputeTries
// answers in a row (a broker's metadata can lag a re-creation the offer
// saw); no answer settles nothing; another offered ID starts a new count;
// "no such topic" is a contradicting answer too, and settles (with no ID:
// not started, nothing re-created) after as many.
func TestSettleSourceID(t *testing.T) {
	a, b, c := kadm.TopicID{1}, kadm.TopicID{2}, kadm.TopicID{3}
	u := &unit{log: slog.New(slog.DiscardHandler)}
	type step struct {
		offered kadm.TopicID
		answer  map[string]kadm.TopicID
		want    kadm.TopicID
		ok      bool
	}
	for i, s := range []step{
		{a, map[string]kadm.TopicID{"t": a}, a, true},
		{b, nil, kadm.TopicID{}, false},
		{b, map[string]kadm.TopicID{"t": a}, kadm.TopicID{}, false},
		{b, map[string]kadm.TopicID{"t": a}, kadm.TopicID{}, false},
		{c, map[string]kadm.TopicID{"t": a}, kadm.TopicID{}, false}, // another offer: counted anew
		{c, map[string]kadm.TopicID{"t": a}, kadm.TopicID{}, false},
		{c, map[string]kadm.TopicID{"t": a}, a, true},
		{b, map[string]kadm.TopicID{"t": a}, kadm.TopicID{}, false}, // settled: counted anew
		{b, map[string]kadm.TopicID{"t": b}, b, true},
		{c, map[string]kadm.TopicID{"t": a}, kadm.TopicID{}, false},
		{c, map[string]kadm.TopicID{"t": {}}, kadm.TopicID{}, false}, // "no such topic" contradicts too
		{c, map[string]kadm.TopicID{"t": {}}, kadm.TopicID{}, true},  // the third: settled, the topic is gone
		{c, map[string]kadm.TopicID{"t": a}, kadm.TopicID{}, false},  // counted anew
	} {
		id, ok := u.settleID("t", s.offered, s.answer)
		if id != s.want || ok != s.ok {
			t.Errorf("step %d: offered %v, answer %v: got %v %v, want %v %v", i, s.offered, s.answer, id, ok, s.want, s.ok)
		}
	}
	if d := u.disputes["t"]; len(u.disputes) != 1 || d.offered != c || d.n != 1 {
		t.Errorf("disputes left: %v, want t's one answer against %v", u.disputes, c)
	}
}

// TestGapStopAfterRecreationRestartAcceptsLoss: review of 4ce9e3b. A source
// topic re-created with its first records deleted before kmirror read them
// stops its partition at the gap [0, log start) under GapStop; the
// operator's RestartFailed accepts the gap. The restart of a re-created
// topic's partition checked for a gap from offset 0 again, found the same
// one and stopped again, at every restart.
func TestGapStopAfterRecreationRestartAcceptsLoss(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("gaprec")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a := partRecords(topic, "a", 0, 0, 10)
	testcluster.Produce(t, &p.Source, a...)
	fc := recoveryFlow(p, topic)
	fc.OnGap = GapStop
	fc.RefreshTopicsInterval = time.Hour // the test hands the unit the offer that shows the re-creation
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 10)
	u, offer := onlyUnitOffer(m)

	ctx := t.Context()
	adm := testcluster.Admin(t, &p.Source)
	newID := recreateSourceTopic(t, adm, topic)
	b := partRecords(topic, "b", 0, 0, 20)
	testcluster.Produce(t, &p.Source, b...)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5})
	testcluster.Eventually(t, 30*time.Second, "the new topic's first 5 records deleted", func() (bool, string) {
		resp, err := adm.DeleteRecords(ctx, del)
		return err == nil && resp.Error() == nil, fmt.Sprint(err, resp.Error())
	})
	for k, o := range offer {
		o.id = newID
		offer[k] = o
	}
	u.setOffer(offer)
	testcluster.Eventually(t, 30*time.Second, "stopped at the new topic's gap", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && strings.Contains(ps.Error, "5 records lost"), fmt.Sprintf("%+v", ps)
	})
	flow := p.Source.Alias + "->" + p.Target.Alias
	if n, err := m.RestartFailed(flow, "", -1); n != 1 || err != nil {
		t.Fatalf("RestartFailed(%s) = %d, %v; want 1, nil", flow, n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "resumed after the accepted gap", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 20 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetValues(t, p, remote, 0), wantValues(a, b[5:]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0:\n got %v\nwant %v", got, want)
	}
}

// TestGapStopAcceptedOldGapChecksRecreatedTopicStart: review of b2e327f. A
// partition stopped at a gap of its log (GapStop) whose source topic is
// then re-created, and the new topic's first records deleted, before the
// operator's RestartFailed: the gap accepted was the old log's, so the
// restart still checks the new log's start and stops at its gap (the
// first cut of the fix read the new log from its start without a check:
// the new topic's lost records went unreported).
func TestGapStopAcceptedOldGapChecksRecreatedTopicStart(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("gapold")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a := partRecords(topic, "a", 0, 0, 30)
	testcluster.Produce(t, &p.Source, a[:10]...)
	fc := recoveryFlow(p, topic)
	fc.OnGap = GapStop
	fc.RefreshTopicsInterval = time.Hour // the test hands the unit the offer that shows the re-creation
	m, stop := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 10)
	stop()
	ctx := t.Context()
	adm := testcluster.Admin(t, &p.Source)
	testcluster.Produce(t, &p.Source, a[10:]...)
	deleteTo := func(at int64) {
		del := kadm.Offsets{}
		del.Add(kadm.Offset{Topic: topic, Partition: 0, At: at})
		testcluster.Eventually(t, 30*time.Second, fmt.Sprintf("records before %d deleted", at), func() (bool, string) {
			resp, err := adm.DeleteRecords(ctx, del)
			return err == nil && resp.Error() == nil, fmt.Sprint(err, resp.Error())
		})
	}
	deleteTo(20)
	m, _ = runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Eventually(t, 30*time.Second, "stopped at the old log's gap", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && strings.Contains(ps.Error, "10 records lost"), fmt.Sprintf("%+v", ps)
	})
	u, offer := onlyUnitOffer(m)

	newID := recreateSourceTopic(t, adm, topic)
	b := partRecords(topic, "b", 0, 0, 20)
	testcluster.Produce(t, &p.Source, b...)
	deleteTo(5)
	for k, o := range offer {
		o.id = newID
		offer[k] = o
	}
	u.setOffer(offer)
	testcluster.Eventually(t, 30*time.Second, "the re-creation seen", func() (bool, string) {
		gaps := m.Status().Flows[0].Gaps
		return len(gaps) == 2, fmt.Sprintf("%+v", gaps)
	})

	flow := p.Source.Alias + "->" + p.Target.Alias
	if n, err := m.RestartFailed(flow, "", -1); n != 1 || err != nil {
		t.Fatalf("RestartFailed(%s) = %d, %v; want 1, nil", flow, n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "stopped at the new log's gap", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && strings.Contains(ps.Error, "5 records lost"), fmt.Sprintf("%+v", ps)
	})
	if n, err := m.RestartFailed(flow, "", -1); n != 1 || err != nil {
		t.Fatalf("second RestartFailed(%s) = %d, %v; want 1, nil", flow, n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "resumed after the new log's accepted gap", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 20 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetValues(t, p, remote, 0), wantValues(a[:10], b[5:]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0:\n got %v\nwant %v", got, want)
	}
}

// onlyUnitOffer returns the one unit of m's first flow and a copy of its
// current offer (the tests that hand the unit offers of their own).
func onlyUnitOffer(m *Mirror) (*unit, map[tp]offered) {
	f := m.flows[0]
	f.unitsMu.Lock()
	var u *unit
	for _, x := range f.units {
		u = x
	}
	f.unitsMu.Unlock()
	u.offerMu.Lock()
	defer u.offerMu.Unlock()
	return u, maps.Clone(u.offer)
}

// recreateSourceTopic deletes topic (one partition) with adm and creates it
// again, and returns the new topic's ID once it is listed.
func recreateSourceTopic(t *testing.T, adm *kadm.Client, topic string) kadm.TopicID {
	t.Helper()
	ctx := t.Context()
	if _, err := adm.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "source topic deleted", func() (bool, string) {
		td, err := adm.ListTopics(ctx, topic)
		return err == nil && td[topic].Err != nil, fmt.Sprint(td, err)
	})
	testcluster.Eventually(t, 30*time.Second, "source topic re-created", func() (bool, string) {
		_, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		return err == nil, fmt.Sprint(err)
	})
	var td kadm.TopicDetails
	testcluster.Eventually(t, 30*time.Second, "the re-created topic listed", func() (bool, string) {
		var err error
		td, err = adm.ListTopics(ctx, topic)
		return err == nil && td[topic].Err == nil, fmt.Sprint(td, err)
	})
	return td[topic].ID
}

// TestRestartDelay: a unit's wait before its next session doubles from
// 250 ms up to 30 s while sessions fail without storing resume points,
// and starts over after one that stored some.
func TestRestartDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		prev       time.Duration
		progressed bool
		want       time.Duration
	}{
		{0, false, 250 * time.Millisecond},
		{250 * time.Millisecond, false, 500 * time.Millisecond},
		{8 * time.Second, false, 16 * time.Second},
		{16 * time.Second, false, 30 * time.Second},
		{30 * time.Second, false, 30 * time.Second},
		{0, true, 250 * time.Millisecond},
		{4 * time.Second, true, 250 * time.Millisecond},
		{30 * time.Second, true, 250 * time.Millisecond},
	} {
		if got := restartDelay(tc.prev, tc.progressed); got != tc.want {
			t.Errorf("restartDelay(%v, %t) = %v, want %v", tc.prev, tc.progressed, got, tc.want)
		}
	}
}

// TestSessionBackoffStartsOverAfterProgress: exactly once, a refused
// produce aborts the transaction and ends the unit's session. Between
// isolated refusals the unit commits transactions, so each restart waits
// the first backoff (250 ms): the sixth recovery is as quick as the first.
// Before, the waits grew over the process's life (250 ms, 500 ms, 1 s, 2
// s, 4 s, 8 s, ... 30 s), and each stalled the slot's every partition
// that long (a helper trying to break exactly-once mode, stop 38, measured
// recoveries of 0.4, 0.56, 1.1, 2.1, 4.1, 8.1 and 16.1 s).
func TestSessionBackoffStartsOverAfterProgress(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("blip")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = true
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	committed := func() int { return committedRecords(p, remote) } // one partition
	n := 0
	var took []time.Duration
	for round := range 6 {
		testcluster.Produce(t, &p.Source, partRecords(topic, fmt.Sprintf("r%d-", round), 0, 0, 10)...)
		n += 10
		testcluster.Eventually(t, 30*time.Second, "caught up", func() (bool, string) {
			return committed() == n, fmt.Sprint(committed(), partStatus(m, 0))
		})
		p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Err: kerr.TopicAuthorizationFailed, Count: 1})
		start := time.Now()
		testcluster.Produce(t, &p.Source, partRecords(topic, fmt.Sprintf("f%d-", round), 0, 0, 10)...)
		n += 10
		testcluster.Eventually(t, 60*time.Second, "recovered", func() (bool, string) {
			return committed() == n, fmt.Sprint(committed(), partStatus(m, 0))
		})
		took = append(took, time.Since(start).Round(10*time.Millisecond))
	}
	// A functional bound, far from both sides: about 0.5 s each now, 8 s
	// for the sixth before.
	if took[5] > 4*time.Second {
		t.Errorf("recoveries from isolated refusals %v: the sixth took %v, want the first backoff's (well under 4 s)", took, took[5])
	}
}
