package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/kread"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// fastFlow returns a flow with test-friendly intervals.
func fastFlow(p *testcluster.Pair) FlowConfig {
	return FlowConfig{
		Source: p.Source.Alias, Target: p.Target.Alias,
		Topics:                       []string{p.TopicsPattern()},
		DisableHeartbeatsReplication: p.Real, // the shared real clusters carry other tests' heartbeats
		RefreshTopicsInterval:        200 * time.Millisecond,
		SyncTopicConfigsInterval:     200 * time.Millisecond,
		OffsetFlushInterval:          100 * time.Millisecond,
		EmitCheckpointsInterval:      200 * time.Millisecond,
		EmitHeartbeatsInterval:       200 * time.Millisecond,
		AdminTimeout:                 10 * time.Second,
	}
}

func clusterOpts(p *testcluster.Pair) []Opt {
	return []Opt{
		WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
	}
}

// runMirror starts a Mirror and returns it with a function that stops it
// gracefully and returns Run's error.
func runMirror(t *testing.T, opts ...Opt) (*Mirror, func() error) {
	t.Helper()
	m, err := newMirror(t, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- m.Run(context.Background()) }()
	var stopped bool
	var runErr error
	stop := func() error {
		if !stopped {
			stopped = true
			m.Close()
			runErr = <-errc
		}
		return runErr
	}
	t.Cleanup(func() { stop() })
	return m, stop
}

type rec struct {
	Key, Value []byte
	Headers    []kgo.RecordHeader
	Timestamp  int64
}

func recsOf(rs []*kgo.Record) []rec {
	out := make([]rec, len(rs))
	for i, r := range rs {
		out[i] = rec{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp.UnixMilli()}
	}
	return out
}

// bytesExact compares byte slices as cmp does by default (a nil slice
// differs from an empty one), in one bytes.Equal instead of cmp's
// reflection per byte: what a diff of thousands of large records costs
// under -race.
var bytesExact = cmp.Comparer(func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) })

// copiesOf is recsOf for records copied by one hop from the cluster
// sourceID, record i from src[i]: each must end with the
// kmirror-provenance header naming exactly that cluster and, as last
// element, src[i]'s offset (tail resume's offset element), which is
// removed before the comparison with the source's records.
func copiesOf(t *testing.T, rs []*kgo.Record, sourceID string, src []*kgo.Record) []rec {
	t.Helper()
	out := recsOf(rs)
	for i := range out {
		h := out[i].Headers
		want := string(FormatProvenance(sourceID))
		if i < len(src) {
			want += ",#" + strconv.FormatInt(src[i].Offset, 10)
		}
		if n := len(h); n == 0 || h[n-1].Key != ProvenanceHeader || string(h[n-1].Value) != want {
			t.Fatalf("record %d: headers %q, want the last one %s=%q", i, h, ProvenanceHeader, want)
		}
		out[i].Headers = h[:len(h)-1]
		if len(out[i].Headers) == 0 {
			out[i].Headers = nil
		}
	}
	return out
}

// clusterID returns the cluster ID of c.
func clusterID(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	md, err := testcluster.Admin(t, c).BrokerMetadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return md.Cluster
}

// workload produces n records per partition with keys, headers, tombstones
// and explicit timestamps.
func workload(topic string, partitions int32, n int, base time.Time) []*kgo.Record {
	return workloadOpts(topic, partitions, n, base, true)
}

// workloadOpts is workload; nullKeys=false keeps every key (compacted
// topics reject null keys).
func workloadOpts(topic string, partitions int32, n int, base time.Time, nullKeys bool) []*kgo.Record {
	var rs []*kgo.Record
	for i := 0; i < n; i++ {
		for p := int32(0); p < partitions; p++ {
			r := &kgo.Record{Topic: topic, Partition: p, Timestamp: base.Add(time.Duration(i) * time.Millisecond),
				Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(fmt.Sprintf("%s/%d/%d", topic, p, i))}
			switch i % 5 {
			case 1:
				r.Value = nil // tombstone
			case 2:
				if nullKeys {
					r.Key = nil
				}
				r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte{0, 1, 2}}, {Key: "empty", Value: nil}}
			}
			rs = append(rs, r)
		}
	}
	return rs
}

func waitReplicated(t *testing.T, m *Mirror, want int64) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "records replicated", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.Records >= want && st.Lag == 0, fmt.Sprintf("state %s %s, %d records, lag %d: %+v", st.State, st.Error, st.Records, st.Lag, st.Partitions)
	})
}

func TestCaseB19B20ReplicatesRecordsPartitionsAndFilteredConfigs(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders, accounts, short := p.Topic("orders"), p.Topic("accounts"), p.Topic("short")
	compact, seg, ret := "compact", "10000", "300000"
	testcluster.CreateTopic(t, &p.Source, orders, 3, nil)
	testcluster.CreateTopic(t, &p.Source, accounts, 2, map[string]*string{"cleanup.policy": &compact, "segment.ms": &seg})
	testcluster.CreateTopic(t, &p.Source, short, 1, map[string]*string{"retention.ms": &ret})
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	in := append(workload(orders, 3, 50, base), workloadOpts(accounts, 2, 20, base, false)...)
	in = append(in, workload(short, 1, 5, base)...)
	testcluster.Produce(t, &p.Source, in...)

	fc := fastFlow(p)
	// docs/field-failures.md case B20: an excluded property is not copied at
	// creation.
	fc.ConfigPropertiesExclude = append(append([]string{}, DefaultConfigPropertiesExclude...), `retention\.ms`)
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, int64(len(in)))
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	for _, topic := range []string{orders, accounts, short} {
		remote := p.Source.Alias + "." + topic
		got := testcluster.ReadAll(t, &p.Target, remote)
		want := testcluster.ReadAll(t, &p.Source, topic)
		if len(got) != len(want) {
			t.Fatalf("%s: %d partitions with data, want %d", remote, len(got), len(want))
		}
		for part, ws := range want {
			if diff := cmp.Diff(recsOf(ws), copiesOf(t, got[part], clusterID(t, &p.Source), ws)); diff != "" {
				t.Errorf("%s[%d] differs from source (-want +got):\n%s", remote, part, diff)
			}
		}
	}
	adm := testcluster.Admin(t, &p.Target)
	ctx := context.Background()
	td, err := adm.ListTopics(ctx, p.Source.Alias+"."+orders)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(td[p.Source.Alias+"."+orders].Partitions); n != 3 {
		t.Errorf("remote orders has %d partitions, want 3", n)
	}
	// docs/field-failures.md case B19: the compacted topic is compacted on
	// the target from creation.
	cfgs := describe(t, adm, p.Source.Alias+"."+accounts)
	if cfgs["cleanup.policy"] != "compact" || cfgs["segment.ms"] != "10000" {
		t.Errorf("remote accounts configs cleanup.policy=%q segment.ms=%q, want compact, 10000", cfgs["cleanup.policy"], cfgs["segment.ms"])
	}
	if v, ok := describeOverrides(t, adm, p.Source.Alias+"."+short)["retention.ms"]; ok {
		t.Errorf("docs/field-failures.md case B20: excluded retention.ms copied to remote short: %s", v)
	}
}

func describe(t *testing.T, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			m[c.Key] = c.MaybeValue()
		}
	}
	return m
}

func describeOverrides(t *testing.T, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Source.String() == "DYNAMIC_TOPIC_CONFIG" {
				m[c.Key] = c.MaybeValue()
			}
		}
	}
	return m
}

func TestCaseB21ConfigSyncKeepsTargetOnlySettings(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	fc := fastFlow(p)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	remote := p.Source.Alias + "." + orders
	testcluster.Eventually(t, 20*time.Second, "remote topic", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 1, fmt.Sprint(m.Status().Flows[0])
	})
	ctx := context.Background()
	dstAdm, srcAdm := testcluster.Admin(t, &p.Target), testcluster.Admin(t, &p.Source)
	two, ret := "2", "7200000"
	if _, err := dstAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: &two}}, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := srcAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &ret}}, orders); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 20*time.Second, "retention.ms synced", func() (bool, string) {
		o := describeOverrides(t, dstAdm, remote)
		return o["retention.ms"] == "7200000", fmt.Sprint(o)
	})
	if got := describeOverrides(t, dstAdm, remote)["min.insync.replicas"]; got != "2" {
		t.Errorf("target-only min.insync.replicas = %q after config sync, want 2", got)
	}
}

func TestNewTopicsAndPartitionIncreasesPickedUp(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	a, b := p.Topic("alpha"), p.Topic("beta")
	testcluster.CreateTopic(t, &p.Source, a, 1, nil)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	testcluster.Produce(t, &p.Source, workload(a, 1, 10, time.Now())...)
	waitReplicated(t, m, 10)

	testcluster.CreateTopic(t, &p.Source, b, 2, nil)
	ctx := context.Background()
	if _, err := testcluster.Admin(t, &p.Source).UpdatePartitions(ctx, 3, a); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "source metadata shows 3 partitions", func() (bool, string) {
		td, err := testcluster.Admin(t, &p.Source).ListTopics(ctx, a, b)
		return err == nil && len(td[a].Partitions) == 3 && len(td[b].Partitions) == 2, fmt.Sprint(err)
	})
	more := append(workload(b, 2, 10, time.Now()), workload(a, 3, 10, time.Now())...)
	// Partitions 1 and 2 of alpha are new: produce after they exist.
	testcluster.Produce(t, &p.Source, more...)
	waitReplicated(t, m, int64(10+len(more)))
	td, err := testcluster.Admin(t, &p.Target).ListTopics(ctx, p.Source.Alias+"."+a, p.Source.Alias+"."+b)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(td[p.Source.Alias+"."+a].Partitions); n != 3 {
		t.Errorf("remote alpha has %d partitions, want 3", n)
	}
	if n := len(td[p.Source.Alias+"."+b].Partitions); n != 2 {
		t.Errorf("remote beta has %d partitions, want 2", n)
	}
	got := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+a)
	if len(got[2]) != 10 {
		t.Errorf("remote alpha[2] has %d records, want 10", len(got[2]))
	}
}

func TestTopicFilterAndCycles(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	keep, skip := p.Topic("orders"), p.Topic("audit")
	cycle := p.Target.Alias + "." + p.Topic("loop") // came from the target: never sent back
	for _, tn := range []string{keep, skip, cycle} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: tn, Value: []byte("v")})
	}
	fc := fastFlow(p)
	fc.Topics = []string{regexp.QuoteMeta(keep), ".*" + regexp.QuoteMeta(p.Topic("loop"))}
	fc.DisableHeartbeatsReplication = true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 1)
	stop()
	var got []string
	for _, ps := range m.Status().Flows[0].Partitions {
		got = append(got, ps.Topic)
	}
	if diff := cmp.Diff([]string{keep}, got); diff != "" {
		t.Errorf("replicated topics (-want +got):\n%s", diff)
	}
}

// TestGracefulRestartExactlyOnce stops and restarts the engine: a graceful
// stop stores the resume points after the last acknowledged records, so a
// restart neither loses nor repeats a record.
func TestGracefulRestartNoLossNoDuplicates(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	var all []*kgo.Record
	for round := 0; round < 3; round++ {
		batch := workload(orders, 2, 30, time.Now())
		for _, r := range batch {
			r.Value = append(r.Value, []byte(fmt.Sprintf("/r%d", round))...)
		}
		all = append(all, batch...)
		testcluster.Produce(t, &p.Source, batch...)
		m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
		waitReplicated(t, m, int64(len(batch)))
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	got := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+orders)
	want := testcluster.ReadAll(t, &p.Source, orders)
	for part := range want {
		if diff := cmp.Diff(recsOf(want[part]), copiesOf(t, got[part], clusterID(t, &p.Source), want[part])); diff != "" {
			t.Errorf("partition %d after 3 graceful restarts (-want +got):\n%s", part, diff)
		}
	}
}

// TestCrashRestartNoLossBoundedDuplicates kills the engine without
// flushing or storing resume points, many times, mid-stream. Every source
// record must reach the target; a record may repeat only if it was
// replicated after the last stored resume point, so the target log of each
// partition is the source log with, at each crash, a replay that starts
// exactly one past the resume point stored before the crash.
func TestCrashRestartNoLossBoundedDuplicates(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	const parts, perRound, rounds = 2, 400, 6
	testcluster.CreateTopic(t, &p.Source, orders, parts, nil)
	producer := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	remote := p.Source.Alias + "." + orders
	for round := 0; round < rounds; round++ {
		m, err := newMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		// Produce while the engine runs, then crash it mid-stream.
		for i := 0; i < perRound; i++ {
			for part := int32(0); part < parts; part++ {
				producer.Produce(ctx, &kgo.Record{Topic: orders, Partition: part, Value: []byte(fmt.Sprintf("%d-%d-%d", round, part, i))}, nil)
			}
			if i == perRound/2 {
				time.Sleep(150 * time.Millisecond)
			}
		}
		if err := producer.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+round*40) * time.Millisecond)
		m.kill()
		if err := <-done; err != nil {
			t.Fatalf("round %d: Run: %v", round, err)
		}
	}
	// A last graceful run replicates the rest.
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	testcluster.Eventually(t, 30*time.Second, "caught up", func() (bool, string) {
		st := m.Status().Flows[0]
		return len(st.Partitions) == parts && st.Lag == 0 && st.Partitions[0].Replicated == perRound*rounds &&
			st.Partitions[1].Replicated == perRound*rounds, fmt.Sprintf("%+v", st.Partitions)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	src := testcluster.ReadAll(t, &p.Source, orders)
	dst := testcluster.ReadAll(t, &p.Target, remote)
	stored := storedResumePoints(t, p, orders)
	for part := int32(0); part < parts; part++ {
		dups := checkReplays(t, part, src[part], dst[part], stored[part])
		t.Logf("partition %d: %d source records, %d target records, %d duplicates over %d crashes", part, len(src[part]), len(dst[part]), dups, rounds)
	}
}

func indexOf(rs []*kgo.Record, v []byte) int {
	for i, r := range rs {
		if bytes.Equal(r.Value, v) {
			return i
		}
	}
	return -1
}

// TestCaseB12SourceGapReported: records deleted on the source before they
// were replicated are reported as a gap of exactly [resume+1, log start),
// and replication continues from the log start.
func TestCaseB12SourceGapReported(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	mk := func(from, to int) []*kgo.Record {
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Topic: orders, Value: []byte(fmt.Sprint(i))})
		}
		return rs
	}
	testcluster.Produce(t, &p.Source, mk(0, 100)...)
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	waitReplicated(t, m, 100)
	stop()
	testcluster.Produce(t, &p.Source, mk(100, 1000)...)
	ctx := context.Background()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: orders, Partition: 0, At: 600})
	if _, err := testcluster.Admin(t, &p.Source).DeleteRecords(ctx, os); err != nil {
		t.Fatal(err)
	}
	m, stop = runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	testcluster.Eventually(t, 30*time.Second, "caught up after gap", func() (bool, string) {
		st := m.Status().Flows[0]
		return len(st.Partitions) == 1 && st.Partitions[0].Replicated == 1000, fmt.Sprintf("%+v", st.Partitions)
	})
	stop()
	gaps := m.Status().Flows[0].Gaps
	if len(gaps) != 1 {
		t.Fatalf("gaps = %+v, want one", gaps)
	}
	g := gaps[0]
	if g.Topic != orders || g.Partition != 0 || g.From != 100 || g.To != 600 {
		t.Errorf("gap = %s[%d] [%d, %d), want %s[0] [100, 600)", g.Topic, g.Partition, g.From, g.To, orders)
	}
	got := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+orders)[0]
	if len(got) != 100+400 {
		t.Errorf("target has %d records, want 100 + (1000 - 600) = 500", len(got))
	}
	if string(got[100].Value) != "600" {
		t.Errorf("first record after the gap = %q, want 600", got[100].Value)
	}
}

func TestCaseB12GapStopPolicy(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	var rs []*kgo.Record
	for i := 0; i < 50; i++ {
		rs = append(rs, &kgo.Record{Topic: orders, Value: []byte(fmt.Sprint(i))})
	}
	testcluster.Produce(t, &p.Source, rs[:10]...)
	fc := fastFlow(p)
	fc.OnGap = GapStop
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 10)
	stop()
	testcluster.Produce(t, &p.Source, rs[10:]...)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: orders, Partition: 0, At: 30})
	if _, err := testcluster.Admin(t, &p.Source).DeleteRecords(context.Background(), os); err != nil {
		t.Fatal(err)
	}
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "partition stopped by the gap", func() (bool, string) {
		st := m.Status().Flows[0]
		return len(st.Partitions) == 1 && st.Partitions[0].State == StateFailed, fmt.Sprintf("%+v", st.Partitions)
	})
	ps := m.Status().Flows[0].Partitions[0]
	if !strings.Contains(ps.Error, "20 records lost") || ps.Replicated != 10 {
		t.Errorf("partition status = %+v, want FAILED with 20 records lost at 10", ps)
	}
}

// TestCaseB03OffsetSyncsOnQuietTopic: a quiet topic (fewer records than
// offset.lag.max since the last sync) still gets an offset sync of its
// newest record within one flush interval, so a caught-up group translates
// to the end.
func TestCaseB03OffsetSyncsOnQuietTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	var rs []*kgo.Record
	for i := 0; i < 5; i++ {
		rs = append(rs, &kgo.Record{Topic: orders, Value: []byte(fmt.Sprint(i))})
	}
	testcluster.Produce(t, &p.Source, rs...)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	waitReplicated(t, m, 5)
	syncTopic := "mm2-offset-syncs." + p.Target.Alias + ".internal"
	testcluster.Eventually(t, 10*time.Second, "offset sync of the last record", func() (bool, string) {
		recs, err := kread.ReadToEnd(context.Background(), p.Source.Opts(), syncTopic, kread.Options{})
		if err != nil {
			return false, err.Error()
		}
		var last checkpoint.OffsetSync
		for _, r := range recs {
			s, err := checkpoint.DecodeOffsetSync(r.Key, r.Value)
			if err != nil {
				return false, err.Error()
			}
			if s.Topic == orders {
				last = s
			}
		}
		return last.UpstreamOffset == 4 && last.DownstreamOffset == 4, fmt.Sprintf("last sync %+v", last)
	})
}

func TestCaseB18ReplicationFactorLargerThanCluster(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	fc := fastFlow(p)
	fc.ReplicationFactor = 3
	m, err := newMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.Run(ctx)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Run = %v, want a *ConfigError", err)
	}
	if !strings.Contains(err.Error(), "replication.factor") || !strings.Contains(err.Error(), "3") || !strings.Contains(err.Error(), "1 broker") {
		t.Errorf("error %q should name replication.factor, 3 and the broker count", err)
	}
	if st := m.Status().Flows[0]; st.State != StateFailed {
		t.Errorf("state = %s, want FAILED", st.State)
	}
}

func TestBadConfigurationNamesTheValue(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	cl := func(a string) Opt { return WithCluster(ClusterConfig{Alias: a, Client: seeds}) }
	for _, tc := range []struct {
		name string
		opts []Opt
		want []string
	}{
		{"empty alias", []Opt{cl(""), cl("b"), WithFlow(FlowConfig{Source: "", Target: "b"})}, []string{"alias is empty"}},
		{"alias with separator", []Opt{cl("us.east"), cl("b"), WithFlow(FlowConfig{Source: "us.east", Target: "b"})}, []string{"us.east"}},
		{"lookahead regex", []Opt{cl("a"), cl("b"), WithFlow(FlowConfig{Source: "a", Target: "b", Topics: []string{"(?!internal).*"}})}, []string{"a->b.topics", "(?!internal).*", "exclude"}},
		{"backreference", []Opt{cl("a"), cl("b"), WithFlow(FlowConfig{Source: "a", Target: "b", TopicsExclude: []string{`(a)\1`}})}, []string{"topics.exclude", "backreferences"}},
		{"same source and target", []Opt{cl("a"), WithFlow(FlowConfig{Source: "a", Target: "a"})}, []string{"a->a", "different"}},
		{"unknown cluster", []Opt{cl("a"), WithFlow(FlowConfig{Source: "a", Target: "zz"})}, []string{"zz", "unknown target"}},
		{"no flow", []Opt{cl("a")}, []string{"no replication flow"}},
		// A new user's try: Source: "east->west" read as an unknown alias
		// under a garbled key, and a cluster without client options was
		// not named.
		{"flow name as the source", []Opt{cl("east"), cl("west"), WithFlow(FlowConfig{Source: "east->west"})},
			[]string{`FlowConfig.Source="east->west"`, `Source is one cluster alias, not a flow: write Source: "east", Target: "west"`}},
		// A new user's try (stop 38): a cluster alias "a->b" made a flow
		// from it be told to write Source "a", Target "b", aliases that
		// did not exist.
		{"cluster alias with an arrow", []Opt{cl("a->b"), cl("c"), WithFlow(FlowConfig{Source: "a->b", Target: "c"})},
			[]string{`"a->b"`, `a cluster alias must not contain "->"`, `such as "a-b"`}},
		// A new user's try (stop 38): the identity policy's alias was not
		// checked; the target's alias makes every topic a cycle.
		{"identity policy of another alias", []Opt{cl("a"), cl("b"), WithFlow(FlowConfig{Source: "a", Target: "b", Policy: identity(t, "b")})},
			[]string{`a->b.source.cluster.alias`, `reads every topic as replicated from "b"`, `policy.NewIdentity("a")`}},
		{"cluster without client options", []Opt{cl("a"), WithCluster(ClusterConfig{Alias: "b"}), WithFlow(FlowConfig{Source: "a", Target: "b"})},
			[]string{"cluster b has no client options: set its ClusterConfig.Client"}},
		{"negative flush interval", []Opt{cl("a"), cl("b"), WithFlow(FlowConfig{Source: "a", Target: "b", OffsetFlushInterval: -time.Second})}, []string{"a->b.offset.flush.interval.ms", "negative"}},
		// Regression (issue 21's trial): session 3 s with the default 3 s
		// heartbeat kept the member expiring and /status losing its groups.
		{"heartbeat not below the session", []Opt{cl("a"), cl("b"), WithFlow(FlowConfig{Source: "a", Target: "b", SessionTimeout: 3 * time.Second})},
			[]string{"b.heartbeat.interval.ms", "3s", "lower than b.session.timeout.ms (3s)", "b.heartbeat.interval.ms = 1000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newMirror(t, tc.opts...)
			if err == nil {
				t.Fatal("New succeeded")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error %T %v is not a *ConfigError", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestUnreachableClusterIsRetried: a target nobody listens on is reported
// as RETRYING with the error, Run keeps trying, and Close ends it.
func TestUnreachableClusterIsRetried(t *testing.T) {
	t.Parallel()
	src := testcluster.NewFake(t, "src")
	m, stop := runMirror(t,
		WithCluster(ClusterConfig{Alias: "src", Client: src.Opts()}),
		WithCluster(ClusterConfig{Alias: "dst", Client: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1"), kgo.DialTimeout(100 * time.Millisecond)}}),
		WithFlow(FlowConfig{Source: "src", Target: "dst", AdminTimeout: 300 * time.Millisecond}))
	testcluster.Eventually(t, 20*time.Second, "RETRYING", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.State == StateRetrying && strings.Contains(st.Error, "dst"), fmt.Sprintf("%s: %s", st.State, st.Error)
	})
	if err := stop(); err != nil {
		t.Errorf("Run after Close = %v, want nil", err)
	}
	if st := m.Status().Flows[0].State; st != StateStopped {
		t.Errorf("state after Close = %s, want STOPPED", st)
	}
}

// TestRecordTooLargeStopsOnlyThatPartition: a record the target rejects as
// too large is a non-retriable error: its partition stops with a clear
// status error (no silent skip, resume point not advanced past it) while
// the other partitions keep replicating.
func TestRecordTooLargeStopsOnlyThatPartition(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	small := "2000"
	testcluster.CreateTopic(t, &p.Target, p.Source.Alias+"."+orders, 2, map[string]*string{"max.message.bytes": &small})
	big := make([]byte, 10000)
	rand.NewChaCha8([32]byte{1}).Read(big) // incompressible: the producer compresses batches
	testcluster.Produce(t, &p.Source,
		&kgo.Record{Topic: orders, Partition: 0, Value: []byte("ok-0")},
		&kgo.Record{Topic: orders, Partition: 0, Value: big},
		&kgo.Record{Topic: orders, Partition: 0, Value: []byte("after-big")},
		&kgo.Record{Topic: orders, Partition: 1, Value: []byte("ok-1")},
		&kgo.Record{Topic: orders, Partition: 1, Value: []byte("ok-2")},
	)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 failed, partition 1 replicated", func() (bool, string) {
		ps := m.Status().Flows[0].Partitions
		return len(ps) == 2 && ps[0].State == StateFailed && ps[1].Replicated == 2, fmt.Sprintf("%+v", ps)
	})
	ps := m.Status().Flows[0].Partitions
	if !strings.Contains(ps[0].Error, "MESSAGE_TOO_LARGE") || !strings.Contains(ps[0].Error, orders+"[0]") {
		t.Errorf("partition 0 error = %q, want MESSAGE_TOO_LARGE naming %s[0]", ps[0].Error, orders)
	}
	// ok-0 may share the rejected batch with the big record (then it is not
	// replicated either); the resume point never passes the big record.
	if ps[0].Replicated != 1 && ps[0].Replicated != -1 {
		t.Errorf("partition 0 replicated up to %d, want 1 or nothing (stopped before the big record)", ps[0].Replicated)
	}
	// Partition 1's resume point is stored within a few flush intervals
	// (waited for: load delays the store); partition 0's never passes the
	// big record.
	testcluster.Eventually(t, 30*time.Second, "partition 1's resume point stored at 1", func() (bool, string) {
		ps = m.Status().Flows[0].Partitions
		return ps[1].Committed == 1, fmt.Sprintf("resume points %d and %d", ps[0].Committed, ps[1].Committed)
	})
	if ps[0].Committed > 0 {
		t.Errorf("partition 0's resume point %d, want before the big record (<= 0)", ps[0].Committed)
	}
}

func firstValue(rs []*kgo.Record) string {
	if len(rs) == 0 {
		return ""
	}
	return string(rs[0].Value)
}

// TestDeadSourceShowsRetryingAndShutdownIsBounded: when the source cluster
// dies mid-run the flow turns RETRYING with an error naming it within a
// probe interval, and Shutdown with a deadline returns even though the
// final offset syncs can no longer be written to the source.
func TestDeadSourceShowsRetryingAndShutdownIsBounded(t *testing.T) {
	t.Parallel()
	src := testcluster.NewFake(t, "src")
	dst := testcluster.NewFake(t, "dst")
	testcluster.CreateTopic(t, &src, "orders", 1, nil)
	testcluster.Produce(t, &src, &kgo.Record{Topic: "orders", Value: []byte("a")})
	m, err := newMirror(t, WithCluster(ClusterConfig{Alias: "src", Client: append(src.Opts(), kgo.DialTimeout(200*time.Millisecond))}),
		WithCluster(ClusterConfig{Alias: "dst", Client: dst.Opts()}),
		WithFlow(FlowConfig{Source: "src", Target: "dst", OffsetFlushInterval: 200 * time.Millisecond, AdminTimeout: 2 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	waitReplicated(t, m, 1)
	src.Fake.Close()
	testcluster.Eventually(t, 20*time.Second, "RETRYING naming the source", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.State == StateRetrying && strings.Contains(st.Error, "source cluster src unreachable"), fmt.Sprintf("%s: %s", st.State, st.Error)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = m.Shutdown(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want nil or deadline exceeded", err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after Shutdown")
	}
}

// TestGracefulStopAlwaysStoresResumePoints (regression): a graceful stop
// stores the resume point of every partition, every time. The unit's
// control goroutine used to pick, between its stopped context and its poll
// loop's nil return (both ready after a stop), the poll loop, and return
// without storing the final resume points: the next start replayed the
// partition from its previous resume point (duplicates after a graceful
// restart, seen under load).
func TestGracefulStopAlwaysStoresResumePoints(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 4, nil)
	fc := fastFlow(p)
	fc.Topics = []string{regexp.QuoteMeta(orders)}
	fc.Tasks = 4
	fc.DisableCheckpoints, fc.DisableHeartbeats = true, true
	for round := 1; round <= 12; round++ {
		var rs []*kgo.Record
		for i := 0; i < 40; i++ {
			rs = append(rs, &kgo.Record{Topic: orders, Partition: int32(i % 4), Value: []byte(fmt.Sprintf("%d-%d", round, i))})
		}
		testcluster.Produce(t, &p.Source, rs...)
		m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
		waitReplicated(t, m, 40)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		stored := storedResumePoints(t, p, orders)
		for part := int32(0); part < 4; part++ {
			if want := int64(round*10 - 1); !stored[part][want] {
				t.Fatalf("round %d: partition %d: resume point %d not stored by the graceful stop (stored: %v)", round, part, want, stored[part])
			}
		}
	}
}
