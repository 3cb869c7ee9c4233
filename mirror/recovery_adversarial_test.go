package mirror

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
)

// probeDiff describes how got (target values) differs from want (source
// values in order): first divergence index, duplicates, missing.
func probeDiff(got, want []string) string {
	cnt := map[string]int{}
	for _, g := range got {
		cnt[g]++
	}
	dups, missing := 0, 0
	for _, w := range want {
		switch c := cnt[w]; {
		case c == 0:
			missing++
		case c > 1:
			dups += c - 1
		}
	}
	first := -1
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			first = i
			break
		}
	}
	ctx := ""
	if first >= 0 {
		lo, hi := max(first-3, 0), min(first+8, len(got))
		ctx = fmt.Sprint(got[lo:hi])
	}
	return fmt.Sprintf("len got %d want %d, dups %d, missing %d, first divergence at %d %s", len(got), len(want), dups, missing, first, ctx)
}

type probeLogW struct{ t *testing.T }

func (w probeLogW) Write(b []byte) (int, error) {
	if s := string(b); strings.Contains(s, "refill") || strings.Contains(s, "produce") || strings.Contains(s, "unit") {
		w.t.Log(strings.TrimSpace(s))
	}
	return len(b), nil
}

func probeValues(t *testing.T, p *testcluster.Pair, topic string, partition int32) []string {
	var out []string
	for _, r := range testcluster.ReadAll(t, &p.Source, topic)[partition] {
		out = append(out, string(r.Value))
	}
	return out
}

func probeTargetValues(t *testing.T, p *testcluster.Pair, remote string, partition int32, committed bool) []string {
	out, err := tryTargetValues(t, p, remote, partition, committed)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryTargetValues is probeTargetValues returning the read's error, for
// polls: a real broker may answer UNKNOWN_TOPIC_OR_PARTITION for a topic
// created a moment ago (the flake of TestStaleOfferRefillsAgain on real
// Kafka, which failed its poll at once).
func tryTargetValues(t *testing.T, p *testcluster.Pair, remote string, partition int32, committed bool) ([]string, error) {
	recs, err := testcluster.ReadTopic(t.Context(), p.Target.Opts(), remote, committed)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range recs[partition] {
		out = append(out, string(r.Value))
	}
	return out, nil
}

// TestFaultWhileStreaming: a single TOPIC_AUTHORIZATION_FAILED on
// partition 0 hits while the source is produced to continuously: records
// the poll loop pushes between kgo failing the batch and the promise
// setting p.err must not land on the target ahead of the failed record
// (the restart resumes at the failed record).
func TestFaultWhileStreaming(t *testing.T)        { t.Parallel(); probeStreaming(t, "") }
func TestFaultWhileStreamingEOS(t *testing.T)     { t.Parallel(); probeStreaming(t, "eos") }
func TestFaultWhileStreamingShallow(t *testing.T) { t.Parallel(); probeStreaming(t, "shallow") }

func probeStreaming(t *testing.T, mode string) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("stream")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "w", 0, 0, 5)...)
	rec := &recMetrics{}
	fc := recoveryFlow(p, topic)
	switch mode {
	case "eos":
		fc.ExactlyOnce = true
	case "shallow":
		fc.ShallowCopy, fc.DisableProvenanceHeader = true, true
	}
	m, _ := runMirror(t, recoveryOpts(p, fc, WithMetrics(rec))...)
	waitReplicated(t, m, 5)

	cl := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	var wg sync.WaitGroup
	const n = 3000
	for part := int32(0); part < 2; part++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				r := &kgo.Record{Topic: topic, Partition: part, Value: []byte(fmt.Sprintf("p%d-%d", part, i))}
				if i%3 == 0 {
					if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
						t.Error(err)
						return
					}
				} else {
					cl.Produce(t.Context(), r, nil)
				}
				if i == n/3 && part == 0 {
					p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
						Err: kerr.TopicAuthorizationFailed, Count: 1})
				}
			}
		}()
	}
	wg.Wait()
	if err := cl.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 60*time.Second, "all replicated", func() (bool, string) {
		st := m.Status().Flows[0]
		p0, p1 := partStatus(m, 0), partStatus(m, 1)
		return p0.Replicated == n+5 && p1.Replicated == n && st.FailedPartitions == 0, fmt.Sprintf("%+v %+v", p0, p1)
	})
	time.Sleep(500 * time.Millisecond)
	for part := int32(0); part < 2; part++ {
		got, want := probeTargetValues(t, p, remote, part, mode == "eos"), probeValues(t, p, topic, part)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("partition %d: %s", part, probeDiff(got, want))
		}
	}
	t.Logf("partition 0 status %+v", partStatus(m, 0))
	t.Logf("partition 1 status %+v flow records %d", partStatus(m, 1), m.Status().Flows[0].Records)
	f := rec.flow(p.Source.Alias + "->" + p.Target.Alias)
	f.mu.Lock()
	t.Logf("errors by kind %v", f.errs)
	f.mu.Unlock()
}

// TestRecordErrorSurvivesSessionRestart: partition 0 stopped on
// INVALID_RECORD (a record error; a MESSAGE_TOO_LARGE for a record this
// small is a batch refused at a stale limit since stop 38, retried by
// itself), then a transient outage on partition 1 restarts the
// unit's session. Partition 0 stays FAILED (same Since, no NextRetry),
// does not replicate by itself, and RestartFailed then brings it back with
// every record once, in order.
func TestRecordErrorSurvivesSessionRestart(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("carry")
	remote := p.Source.Alias + "." + topic
	flow := p.Source.Alias + "->" + p.Target.Alias
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	a0, b1 := partRecords(topic, "a", 0, 0, 10), partRecords(topic, "b", 1, 0, 10)
	testcluster.Produce(t, &p.Source, append(a0, b1...)...)
	rec := &recMetrics{}
	fc := recoveryFlow(p, topic)
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.RecordRetries(3)}}),
		WithFlow(fc), withPartRetryFirst(200*time.Millisecond), WithMetrics(rec))
	waitReplicated(t, m, 20)

	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
		Err: kerr.InvalidRecord, Count: 1})
	c0 := partRecords(topic, "c", 0, 0, 10)
	testcluster.Produce(t, &p.Source, c0...)
	var failed PartitionStatus
	testcluster.Eventually(t, 30*time.Second, "partition 0 failed", func() (bool, string) {
		failed = partStatus(m, 0)
		return failed.State == StateFailed, fmt.Sprintf("%+v", failed)
	})
	if !failed.NextRetry.IsZero() || failed.Replicated != 10 {
		t.Errorf("failed status %+v: want no NextRetry, Replicated 10", failed)
	}
	outage := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{1},
		Err: kerr.NotEnoughReplicas, Count: -1})
	d1 := partRecords(topic, "d", 1, 0, 10)
	testcluster.Produce(t, &p.Source, d1...)
	testcluster.Eventually(t, 30*time.Second, "session restarted", func() (bool, string) {
		f := rec.flow(flow)
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.errs["produce"] > 0, fmt.Sprint(f.errs)
	})
	outage.Remove()
	testcluster.Eventually(t, 30*time.Second, "partition 1 caught up", func() (bool, string) {
		p1 := partStatus(m, 1)
		return p1.Replicated == 20 && p1.State == StateRunning, fmt.Sprintf("%+v", p1)
	})
	time.Sleep(time.Second)
	p0 := partStatus(m, 0)
	if p0.State != StateFailed || p0.Replicated != 10 || !p0.Since.Equal(failed.Since) || !p0.NextRetry.IsZero() || !strings.Contains(p0.Error, "INVALID_RECORD") {
		t.Errorf("partition 0 after the session restart: %+v\nwant FAILED as before: %+v", p0, failed)
	}
	if st := m.Status().Flows[0]; st.FailedPartitions != 1 {
		t.Errorf("flow FailedPartitions %d, want 1", st.FailedPartitions)
	}
	n, err := m.RestartFailed(flow, topic, 0)
	if n != 1 || err != nil {
		t.Errorf("RestartFailed = %d, %v; want 1, nil", n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "partition 0 restarted", func() (bool, string) {
		p0 := partStatus(m, 0)
		return p0.State == StateRunning && p0.Replicated == 20 && p0.Lag == 0, fmt.Sprintf("%+v", p0)
	})
	if got, want := probeTargetValues(t, p, remote, 0, false), probeValues(t, p, topic, 0); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("partition 0: %s", probeDiff(got, want))
	}
	got1, want1 := probeTargetValues(t, p, remote, 1, false), probeValues(t, p, topic, 1)
	t.Logf("partition 1 (at least once): %s", probeDiff(got1, want1))
	if n, err := m.RestartFailed(flow, topic, 0); n != 0 || err != nil {
		t.Errorf("RestartFailed on a running partition = %d, %v; want 0, nil", n, err)
	}
}

// TestRefillInterruptedBySessionRestart: the remote topic is
// deleted on the target while the partition is idle; discovery re-creates
// it and the unit refills it from the source's log start. The refill's
// first produces fail transiently (the new topic not writable yet: a
// retriable error past the producer's retries), which restarts the unit's
// session before any refilled record was acknowledged. The stored resume
// point still names the old remote topic's log (99): the next session
// must not resume after it, or records 0..99 are never on the new remote
// topic.
func TestRefillInterruptedBySessionRestart(t *testing.T) {
	t.Parallel()
	probeRefillInterrupted(t, false)
}
func TestRefillInterruptedBySessionRestartEOS(t *testing.T) {
	t.Parallel()
	probeRefillInterrupted(t, true)
}

func probeRefillInterrupted(t *testing.T, eos bool) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("refill")
	remote := p.Source.Alias + "." + topic
	flow := p.Source.Alias + "->" + p.Target.Alias
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a := partRecords(topic, "a", 0, 0, 100)
	testcluster.Produce(t, &p.Source, a...)
	rec := &recMetrics{}
	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = eos
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.RecordRetries(3)}}),
		WithFlow(fc), withPartRetryFirst(200*time.Millisecond), WithMetrics(rec),
		WithLogger(slog.New(slog.NewTextHandler(probeLogW{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	testcluster.Eventually(t, 30*time.Second, "replicated and resume point stored", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.Replicated == 100 && ps.Committed == 99, fmt.Sprintf("%+v", ps)
	})

	outage := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote,
		Err: kerr.NotEnoughReplicas, Count: -1})
	adm := testcluster.Admin(t, &p.Target)
	before, err := adm.ListTopics(t.Context(), remote)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteTopic(t.Context(), remote); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "re-created, refill attempted and session restarted twice", func() (bool, string) {
		now, err := adm.ListTopics(t.Context(), remote)
		if err != nil || now[remote].Err != nil || now[remote].ID == before[remote].ID {
			return false, fmt.Sprint("not re-created ", err)
		}
		f := rec.flow(flow)
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.errs["produce"] >= 1, fmt.Sprint(f.errs)
	})
	time.Sleep(3 * time.Second)
	t.Logf("during the outage: status %+v", partStatus(m, 0))
	outage.Remove()
	c := partRecords(topic, "c", 0, 0, 10)
	testcluster.Produce(t, &p.Source, c...)
	testcluster.Eventually(t, 30*time.Second, "caught up", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 110 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	time.Sleep(500 * time.Millisecond)
	got, want := probeTargetValues(t, p, remote, 0, eos), probeValues(t, p, topic, 0)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("re-created remote topic: %s", probeDiff(got, want))
	}
	t.Logf("status %+v", partStatus(m, 0))
}

// probeCheckpointHistory returns, in log order, the downstream offsets
// of the checkpoints of key group/remote/partition.
func probeCheckpointHistory(t *testing.T, p *testcluster.Pair, key string) []int64 {
	pol, _ := policy.NewDefault()
	recs, err := testcluster.ReadTopic(t.Context(), p.Target.Opts(), pol.CheckpointsTopic(p.Source.Alias), false)
	if err != nil {
		return nil
	}
	var out []int64
	for _, r := range recs[0] {
		cp, err := checkpoint.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%s/%s/%d", cp.Group, cp.Topic, cp.Partition) == key {
			out = append(out, cp.DownstreamOffset)
		}
	}
	return out
}

// TestMetadataBlipKeepsCheckpointsFlowing: a normal running mirror;
// the target's metadata briefly answers UNKNOWN_TOPIC_OR_PARTITION for the
// remote topic (a broker with a stale metadata cache). Nothing was
// rebuilt: once it answers again, checkpoints follow the group (no
// decrease, and the next commit is translated).
func TestMetadataBlipKeepsCheckpointsFlowing(t *testing.T) { t.Parallel(); probeBlip(t, false) }

// TestMetadataBlipThenNewRecords: the same, with one more source
// record replicated after the blip (the replicator writes a new sync).
func TestMetadataBlipThenNewRecords(t *testing.T) { t.Parallel(); probeBlip(t, true) }

func probeBlip(t *testing.T, more bool) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("blip")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "a", 0, 0, 100)...)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 1
	fc.DisableHeartbeats = true
	g := p.Group("g")
	fc.Groups = []string{g}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 100)
	trCommit(t, &p.Source, g, topic, map[int32]int64{0: 50})
	key := g + "/" + remote + "/0"
	testcluster.Eventually(t, 30*time.Second, "checkpoint 50", func() (bool, string) {
		cp := readCheckpoints(t, p)[key]
		return cp.DownstreamOffset == 50, fmt.Sprintf("%+v", cp)
	})
	blip := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Metadata}, Topic: remote, Err: kerr.UnknownTopicOrPartition, Count: -1})
	time.Sleep(1500 * time.Millisecond)
	blip.Remove()
	if more {
		testcluster.Produce(t, &p.Source, partRecords(topic, "b", 0, 0, 1)...)
	}
	trCommit(t, &p.Source, g, topic, map[int32]int64{0: 80})
	testcluster.Eventually(t, 20*time.Second, "checkpoint 80", func() (bool, string) {
		cp := readCheckpoints(t, p)[key]
		return cp.DownstreamOffset == 80, fmt.Sprintf("%+v; group status %+v", cp, m.Status().Flows[0].Groups)
	})
	h := probeCheckpointHistory(t, p, key)
	for i := 1; i < len(h); i++ {
		if h[i] < h[i-1] {
			t.Errorf("checkpoint decreased: history %v", h)
			break
		}
	}
}

// TestRemoteDeletedWhileStreaming: the remote topic is deleted on
// the target while both partitions stream; discovery re-creates it and the
// unit refills it: the new remote topic holds every source record once, in
// order.
func TestRemoteDeletedWhileStreaming(t *testing.T)        { t.Parallel(); probeDelStream(t, "") }
func TestRemoteDeletedWhileStreamingEOS(t *testing.T)     { t.Parallel(); probeDelStream(t, "eos") }
func TestRemoteDeletedWhileStreamingShallow(t *testing.T) { t.Parallel(); probeDelStream(t, "shallow") }

func probeDelStream(t *testing.T, mode string) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("delstream")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "w", 0, 0, 5)...)
	fc := recoveryFlow(p, topic)
	switch mode {
	case "eos":
		fc.ExactlyOnce = true
	case "shallow":
		fc.ShallowCopy, fc.DisableProvenanceHeader = true, true
	}
	m, _ := runMirror(t, recoveryOpts(p, fc, WithLogger(slog.New(slog.NewTextHandler(probeLogW{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))))...)
	waitReplicated(t, m, 5)
	adm := testcluster.Admin(t, &p.Target)
	cl := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	var wg sync.WaitGroup
	const n = 3000
	for part := int32(0); part < 2; part++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				r := &kgo.Record{Topic: topic, Partition: part, Value: []byte(fmt.Sprintf("p%d-%d", part, i))}
				if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
					t.Error(err)
					return
				}
				if i == n/3 && part == 0 {
					if _, err := adm.DeleteTopic(t.Context(), remote); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	testcluster.Eventually(t, 60*time.Second, "all replicated", func() (bool, string) {
		st := m.Status().Flows[0]
		p0, p1 := partStatus(m, 0), partStatus(m, 1)
		return p0.Replicated == n+5 && p1.Replicated == n && p0.Lag == 0 && p1.Lag == 0 && st.FailedPartitions == 0, fmt.Sprintf("%+v %+v", p0, p1)
	})
	time.Sleep(time.Second)
	for part := int32(0); part < 2; part++ {
		got, want := probeTargetValues(t, p, remote, part, mode == "eos"), probeValues(t, p, topic, part)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("partition %d: %s", part, probeDiff(got, want))
		}
	}
}

// TestBackoffStatusExact: a partition denied for good fails at
// each automatic restart; its status shows Retries k with NextRetry -
// Since = 200 ms * 2^k, and Records/Replicated do not move.
func TestBackoffStatusExact(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("boff")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "a", 0, 0, 10)...)
	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	waitReplicated(t, m, 10)
	denied := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Err: kerr.TopicAuthorizationFailed, Count: -1})
	testcluster.Produce(t, &p.Source, partRecords(topic, "b", 0, 0, 10)...)
	seen := map[int]time.Duration{}
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && len(seen) < 4 {
		ps := partStatus(m, 0)
		if ps.State == StateFailed {
			d := ps.NextRetry.Sub(ps.Since)
			if old, ok := seen[ps.Retries]; ok && old != d {
				t.Errorf("retries %d: delay changed %v -> %v", ps.Retries, old, d)
			}
			seen[ps.Retries] = d
			if ps.Replicated != 10 {
				t.Errorf("failed status %+v: want Replicated 10", ps)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	for k := 0; k < 4; k++ {
		if want := 200 * time.Millisecond << k; seen[k] != want {
			t.Errorf("retries %d: NextRetry-Since = %v, want %v (all seen %v)", k, seen[k], want, seen)
		}
	}
	denied.Remove()
	n, err := m.RestartFailed(p.Source.Alias+"->"+p.Target.Alias, "", -1)
	t.Logf("RestartFailed all = %d, %v", n, err)
	testcluster.Eventually(t, 30*time.Second, "recovered", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 20 && ps.Retries == 0, fmt.Sprintf("%+v", ps)
	})
	if got, want := probeTargetValues(t, p, remote, 0, false), probeValues(t, p, topic, 0); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("partition 0: %s", probeDiff(got, want))
	}
}

// TestCheckpointMonotonicAcrossPartitionRestart: a running mirror
// whose partition 0 fails on an authorization error twice (restarted
// automatically) while the source streams and a group follows the source
// end: the checkpoints written for the group never decrease and reach
// the final position.
func TestCheckpointMonotonicAcrossPartitionRestart(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("cpmono")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "a", 0, 0, 100)...)
	fc := recoveryFlow(p, topic)
	fc.DisableCheckpoints = false
	g := p.Group("g")
	fc.Groups = []string{g}
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 100)
	trCommit(t, &p.Source, g, topic, map[int32]int64{0: 100})
	key := g + "/" + remote + "/0"
	testcluster.Eventually(t, 30*time.Second, "checkpoint 100", func() (bool, string) {
		cp := readCheckpoints(t, p)[key]
		return cp.DownstreamOffset == 100, fmt.Sprintf("%+v", cp)
	})
	for round := 0; round < 2; round++ {
		p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Err: kerr.TopicAuthorizationFailed, Count: 1})
		for i := 0; i < 10; i++ {
			testcluster.Produce(t, &p.Source, partRecords(topic, fmt.Sprintf("r%d-", round), 0, i*10, i*10+10)...)
			end := int64(100 + round*100 + i*10 + 10)
			trCommit(t, &p.Source, g, topic, map[int32]int64{0: end})
			time.Sleep(50 * time.Millisecond)
		}
	}
	testcluster.Eventually(t, 30*time.Second, "checkpoint 300", func() (bool, string) {
		cp := readCheckpoints(t, p)[key]
		return cp.DownstreamOffset == 300, fmt.Sprintf("%+v %+v", cp, partStatus(m, 0))
	})
	h := probeCheckpointHistory(t, p, key)
	for i := 1; i < len(h); i++ {
		if h[i] < h[i-1] {
			t.Errorf("checkpoint decreased: history %v", h)
			break
		}
	}
	if got, want := probeTargetValues(t, p, remote, 0, false), probeValues(t, p, topic, 0); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("partition 0: %s", probeDiff(got, want))
	}
}

// TestStaleOfferRefillsAgain: the remote topic is re-created on the
// target by an operator; the failed partition's automatic restart sees the
// new ID and refills it. A discovery round whose target listing predates
// the re-creation (its offer names the old remote topic ID) is then
// applied: the unit must not refill the topic again (every record would
// be on the target twice).
func TestStaleOfferRefillsAgain(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("stale")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "a", 0, 0, 100)...)
	fc := recoveryFlow(p, topic)
	fc.RefreshTopicsInterval = time.Hour
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 100)
	u, stale := onlyUnitOffer(m)

	adm := testcluster.Admin(t, &p.Target)
	if _, err := adm.DeleteTopic(t.Context(), remote); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "deleted", func() (bool, string) {
		td, err := adm.ListTopics(t.Context(), remote)
		return err == nil && td[remote].Err != nil, fmt.Sprint(td, err)
	})
	testcluster.CreateTopic(t, &p.Target, remote, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "b", 0, 0, 10)...)
	testcluster.Eventually(t, 30*time.Second, "refilled", func() (bool, string) {
		ps := partStatus(m, 0)
		vals, err := tryTargetValues(t, p, remote, 0, false)
		if err != nil {
			return false, err.Error()
		}
		n := len(vals)
		return ps.State == StateRunning && ps.Replicated == 110 && n == 110, fmt.Sprintf("%d on target, %+v", n, ps)
	})
	for k, o := range stale {
		t.Logf("stale offer %v remoteID %v id %v", k, o.remoteID, o.id)
	}
	u.setOffer(stale) // a discovery round that listed the target before the re-creation
	// A second refill would restart the partition, whose first fetch can
	// wait for the unit's fetch in flight (fetchMaxWait): wait past it.
	time.Sleep(fetchMaxWait + 2*time.Second)
	t.Logf("after: status %+v", partStatus(m, 0))
	// 100 before the re-creation + 110 refilled: a second refill acks 110 more.
	if ps := partStatus(m, 0); ps.Records != 210 {
		t.Errorf("Records = %d, want 210 (a stale offer refilled the topic again)", ps.Records)
	}
	ends, err := adm.ListEndOffsets(t.Context(), remote)
	starts, _ := adm.ListStartOffsets(t.Context(), remote)
	td, _ := adm.ListTopics(t.Context(), remote)
	t.Logf("target %s id %v end %+v start %+v err %v", remote, td[remote].ID, ends, starts, err)
	if got, want := probeTargetValues(t, p, remote, 0, false), probeValues(t, p, topic, 0); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("partition 0: %s", probeDiff(got, want))
	}
}
