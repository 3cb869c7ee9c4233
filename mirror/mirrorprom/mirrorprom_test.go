package mirrorprom_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/mirror/mirrorprom"
)

var seeds = []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}

func newMirror(t testing.TB, opts ...mirror.Opt) *mirror.Mirror {
	t.Helper()
	m, err := mirror.New(append([]mirror.Opt{
		mirror.WithCluster(mirror.ClusterConfig{Alias: "a", Client: seeds}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: "b", Client: seeds}),
		mirror.WithFlow(mirror.FlowConfig{Source: "a", Target: "b"}),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// samples returns every sample of the gathered kmirror_* families as
// "name{label=value,...}" -> value (histograms: their sample count).
func samples(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			key := mf.GetName() + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestEventsBecomeSeries drives every recorder method once (or a known
// number of times) and checks the resulting series and values; the
// scrape-time gauges come from the Mirror's Status (before Run: the flow
// is UNASSIGNED and owns no slot).
func TestEventsBecomeSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	pm := mirrorprom.New(reg)
	rec := pm.Flow("a", "b")
	newMirror(t, mirror.WithMetrics(pm))
	// mirror.New called Flow itself; events recorded through any recorder
	// of the flow land in the same series.
	p := rec.Partition("a.orders", 2)
	ts := time.Now().Add(-time.Second)
	p.Fetched(ts)
	p.Acked(100, ts)
	p.Acked(20, time.Time{}) // no timestamp: counted, no latency sample
	rec.SourceGap("orders", 1, 7)
	rec.Error("fetch")
	rec.Error("fetch")
	rec.Error("checkpoint_list_groups")
	rec.OffsetSyncWritten()
	rec.ResumePointsStored(3 * time.Millisecond)
	rec.Rebalanced(2 * time.Second)
	rec.ProvenanceSkipped(4)
	cp := rec.Checkpoints()
	cp.CheckpointLatency(time.Second)
	cp.CheckpointsWritten(3)
	cp.GroupOffsetsSynced(5)

	got := samples(t, reg)
	age := got["kmirror_record_age_seconds{partition=2,source=a,target=b,topic=a.orders}"]
	if age < 1 || age > 60 {
		t.Errorf("record age %v s, want about 1 s", age)
	}
	delete(got, "kmirror_record_age_seconds{partition=2,source=a,target=b,topic=a.orders}")
	want := map[string]float64{
		"kmirror_replication_records_total{partition=2,source=a,target=b,topic=a.orders}": 2,
		"kmirror_replication_bytes_total{partition=2,source=a,target=b,topic=a.orders}":   120,
		"kmirror_replication_latency_seconds{source=a,target=b,topic=a.orders}":           1,
		"kmirror_source_gap_records_total{partition=1,source=a,target=b,topic=orders}":    7,
		"kmirror_errors_total{kind=fetch,source=a,target=b}":                              2,
		"kmirror_errors_total{kind=checkpoint_list_groups,source=a,target=b}":             1,
		"kmirror_offset_syncs_total{source=a,target=b}":                                   1,
		"kmirror_resume_commit_seconds{source=a,target=b}":                                1,
		"kmirror_rebalances_total{source=a,target=b}":                                     1,
		"kmirror_rebalance_seconds_total{source=a,target=b}":                              2,
		"kmirror_provenance_skipped_records_total{source=a,target=b}":                     4,
		"kmirror_checkpoint_latency_seconds{source=a,target=b}":                           1,
		"kmirror_checkpoints_total{source=a,target=b}":                                    3,
		"kmirror_group_offsets_synced_total{source=a,target=b}":                           5,
		"kmirror_flow_state{source=a,state=UNASSIGNED,target=b}":                          1,
		"kmirror_flow_failed_partitions{source=a,target=b}":                               0,
		// Issue 20: a Mirror that has not started cannot count its lag
		// (unknown, no lag series); its cluster view is itself, its 8
		// slots unowned.
		"kmirror_flow_lag_unknown{source=a,target=b}":               1,
		"kmirror_cluster_members{source=a,target=b}":                1,
		"kmirror_cluster_slots{source=a,state=RUNNING,target=b}":    0,
		"kmirror_cluster_slots{source=a,state=UNASSIGNED,target=b}": 8,
		"kmirror_config_mismatch_keys{source=a,target=b}":           0,
		"kmirror_member_slots{source=a,target=b}":                   0,
		"kmirror_member_singleton{source=a,target=b}":               0,
		"kmirror_topic_errors{op=create,source=a,target=b}":         0,
		"kmirror_topic_errors{op=partitions,source=a,target=b}":     0,
		"kmirror_topic_errors{op=describe,source=a,target=b}":       0,
		"kmirror_topic_errors{op=config,source=a,target=b}":         0,
		"kmirror_topic_errors{op=acl,source=a,target=b}":            0,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
}

// TestRegistration: nothing is registered before New succeeds or when it
// fails; a second Mirror on the same registry fails New with the
// registry's error and leaves the first one's metrics in place.
func TestRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := mirror.New(mirror.WithCluster(mirror.ClusterConfig{Alias: "a", Client: seeds}),
		mirror.WithFlow(mirror.FlowConfig{Source: "a", Target: "b"}), mirrorprom.WithRegisterer(reg)); err == nil {
		t.Fatal("New accepted a flow to an unknown cluster")
	}
	if n := len(samples(t, reg)); n != 0 {
		t.Fatalf("a failed New left %d series registered", n)
	}
	newMirror(t, mirrorprom.WithRegisterer(reg))
	before := samples(t, reg)
	if before["kmirror_flow_state{source=a,state=UNASSIGNED,target=b}"] != 1 {
		t.Fatalf("gauges of the first Mirror missing: %v", before)
	}
	_, err := mirror.New(mirror.WithCluster(mirror.ClusterConfig{Alias: "a", Client: seeds}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: "b", Client: seeds}),
		mirror.WithFlow(mirror.FlowConfig{Source: "a", Target: "b"}), mirrorprom.WithRegisterer(reg))
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second New on one registry: %v, want a prometheus.AlreadyRegisteredError", err)
	}
	if d := cmp.Diff(before, samples(t, reg)); d != "" {
		t.Errorf("the failed second New changed the registry (-before +after):\n%s", d)
	}
	if mirrorprom.New(nil) != nil {
		t.Error("New(nil) is not nil")
	}
	newMirror(t, mirrorprom.WithRegisterer(nil)) // no metrics, no panic
}

// TestReplicationCounts runs a Mirror on embedded clusters: the records
// and bytes counters equal the flow's Status counts, and the lag gauge of
// every partition returns to 0.
func TestReplicationCounts(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	var in []*kgo.Record
	for i := range 50 {
		in = append(in, &kgo.Record{Topic: orders, Partition: int32(i % 2), Key: []byte("k"), Value: []byte(fmt.Sprint(i))})
	}
	testcluster.Produce(t, &p.Source, in...)
	reg := prometheus.NewRegistry()
	m, err := mirror.New(mirror.WithCluster(mirror.ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
		mirror.WithFlow(mirror.FlowConfig{Source: p.Source.Alias, Target: p.Target.Alias, Topics: []string{p.TopicsPattern()},
			DisableHeartbeats: true, DisableCheckpoints: true, OffsetFlushInterval: 100 * time.Millisecond,
			DisableHeartbeatsReplication: p.Real, // the shared real source's heartbeats topic has other tests' records
			RefreshTopicsInterval:        200 * time.Millisecond}),
		mirrorprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	defer func() {
		m.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	remote := p.Source.Alias + "." + orders
	testcluster.Eventually(t, 30*time.Second, "counters match Status", func() (bool, string) {
		st := m.Status().Flows[0]
		got := samples(t, reg)
		var records, bytes, lag float64
		lags := 0
		for k, v := range got {
			switch {
			case strings.HasPrefix(k, "kmirror_replication_records_total{") && strings.Contains(k, "topic="+remote+"}"):
				records += v
			case strings.HasPrefix(k, "kmirror_replication_bytes_total{") && strings.Contains(k, "topic="+remote+"}"):
				bytes += v
			case strings.HasPrefix(k, "kmirror_replication_lag_records{") && strings.Contains(k, "topic="+orders+"}"):
				lag += v
				lags++
			}
		}
		return records == 50 && records == float64(st.Records) && bytes == float64(st.Bytes) && lags == 2 && lag == 0,
			fmt.Sprintf("records %v, bytes %v, lag %v over %d partitions; Status records %d bytes %d", records, bytes, lag, lags, st.Records, st.Bytes)
	})
}

// TestTopicErrorsGauge: a remote topic the target refuses to create shows
// as kmirror_topic_errors{op="create"} 1 (the other ops 0) and as one
// kmirror_errors_total{kind="topic_create"} per refused attempt, while the
// other topic replicates; the gauge returns to 0 once the target accepts.
func TestTopicErrorsGauge(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection")
	}
	good, bad := p.Topic("good"), p.Topic("bad")
	for _, tn := range []string{good, bad} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: tn, Value: []byte("v")})
	}
	fault := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: p.Source.Alias + "." + bad,
		Err: kerr.PolicyViolation, Count: -1})
	reg := prometheus.NewRegistry()
	m, err := mirror.New(mirror.WithCluster(mirror.ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
		mirror.WithFlow(mirror.FlowConfig{Source: p.Source.Alias, Target: p.Target.Alias, Topics: []string{good, bad},
			DisableHeartbeats: true, DisableCheckpoints: true, OffsetFlushInterval: 100 * time.Millisecond,
			RefreshTopicsInterval: 200 * time.Millisecond}),
		mirrorprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	defer func() {
		m.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	flow := "source=" + p.Source.Alias + ",target=" + p.Target.Alias
	series := func(got map[string]float64) string {
		return fmt.Sprintf("create %v partitions %v describe %v config %v; errors %v",
			got["kmirror_topic_errors{op=create,"+flow+"}"], got["kmirror_topic_errors{op=partitions,"+flow+"}"],
			got["kmirror_topic_errors{op=describe,"+flow+"}"], got["kmirror_topic_errors{op=config,"+flow+"}"],
			got["kmirror_errors_total{kind=topic_create,"+flow+"}"])
	}
	testcluster.Eventually(t, 30*time.Second, "refused topic counted", func() (bool, string) {
		got := samples(t, reg)
		return got["kmirror_topic_errors{op=create,"+flow+"}"] == 1 && got["kmirror_topic_errors{op=partitions,"+flow+"}"] == 0 &&
			got["kmirror_topic_errors{op=describe,"+flow+"}"] == 0 && got["kmirror_topic_errors{op=config,"+flow+"}"] == 0 &&
			got["kmirror_errors_total{kind=topic_create,"+flow+"}"] >= 1 &&
			got["kmirror_replication_records_total{partition=0,"+flow+",topic="+p.Source.Alias+"."+good+"}"] == 1, series(got)
	})
	fault.Remove()
	testcluster.Eventually(t, 30*time.Second, "gauge back to 0", func() (bool, string) {
		got := samples(t, reg)
		return got["kmirror_topic_errors{op=create,"+flow+"}"] == 0 &&
			got["kmirror_replication_records_total{partition=0,"+flow+",topic="+p.Source.Alias+"."+bad+"}"] == 1, series(got)
	})
}

// BenchmarkPartitionRecorder is the per-record cost of the Prometheus
// recorder on the replication path: one Fetched and one Acked.
func BenchmarkPartitionRecorder(b *testing.B) {
	pm := mirrorprom.New(prometheus.NewRegistry())
	p := pm.Flow("src", "dst").Partition("src.bench", 3)
	ts := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		p.Fetched(ts)
		p.Acked(120, ts)
	}
}

// BenchmarkScrapePartitions is one Gather of the per-partition series of
// 6 000 partitions (records, bytes and record age each): the cost of a
// Prometheus scrape of an idle member at the scale of issue 22.
func BenchmarkScrapePartitions(b *testing.B) {
	reg := prometheus.NewRegistry()
	pm := mirrorprom.New(reg)
	if err := pm.Init(nil); err != nil { // no Mirror: the per-partition series only
		b.Fatal(err)
	}
	f := pm.Flow("src", "dst")
	ts := time.Now()
	for i := range 6000 {
		p := f.Partition(fmt.Sprintf("src.topic-%03d", i/10), int32(i%10))
		p.Fetched(ts)
		p.Acked(100, ts)
	}
	b.ReportAllocs()
	for b.Loop() {
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		if n := len(mfs); n == 0 {
			b.Fatal("no families")
		}
	}
}

// TestLeftPartitionSeriesDropped: a member exports the per-partition
// series (records, bytes, record age) of the partitions of its own slots
// only, as METRICS.md says: once a second member took some of its slots,
// the series of the partitions it handed over (and the latency histogram
// of a topic none of whose partitions it replicates any more, and a
// source gap series of such a partition) leave its scrape after the stale
// period, instead of staying for as long as the process runs. A
// partition that comes back counts again.
func TestLeftPartitionSeriesDropped(t *testing.T) {
	defer mirrorprom.SetStaleAfter(300 * time.Millisecond)()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	orders, single := p.Topic("orders"), p.Topic("single")
	testcluster.CreateTopic(t, &p.Source, orders, 8, nil)
	testcluster.CreateTopic(t, &p.Source, single, 1, nil)
	var in []*kgo.Record
	for i := range 8 {
		in = append(in, &kgo.Record{Topic: orders, Partition: int32(i), Value: []byte("v")})
	}
	testcluster.Produce(t, &p.Source, append(in, &kgo.Record{Topic: single, Value: []byte("v")})...)
	fc := mirror.FlowConfig{Source: p.Source.Alias, Target: p.Target.Alias, Topics: []string{orders, single}, Tasks: 2,
		DisableHeartbeats: true, DisableCheckpoints: true, OffsetFlushInterval: 100 * time.Millisecond,
		DisableHeartbeatsReplication: p.Real, // the shared real source's heartbeats topic (other tests') would be a tenth partition
		RefreshTopicsInterval:        200 * time.Millisecond}
	start := func(worker string, opts ...mirror.Opt) (*mirror.Mirror, func()) {
		m, err := mirror.New(append([]mirror.Opt{mirror.WithCluster(mirror.ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
			mirror.WithCluster(mirror.ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
			mirror.WithFlow(fc), mirror.WithWorkerID(worker), mirror.WithStatusInterval(100 * time.Millisecond)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(context.Background()) }()
		return m, func() {
			m.Close()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	reg := prometheus.NewRegistry()
	pm := mirrorprom.New(reg)
	m1, stop1 := start("m1", mirror.WithMetrics(pm))
	defer stop1()
	flow := "source=" + p.Source.Alias + ",target=" + p.Target.Alias
	remote, remoteSingle := p.Source.Alias+"."+orders, p.Source.Alias+"."+single
	// exported: the partitions (remote topic/partition) of the records
	// series; owned: those of m1's Status.
	exported := func(got map[string]float64) []string {
		var out []string
		for k := range got {
			if rest, ok := strings.CutPrefix(k, "kmirror_replication_records_total{partition="); ok {
				part, _, _ := strings.Cut(rest, ",")
				out = append(out, k[strings.Index(k, ",topic=")+7:len(k)-1]+"/"+part)
			}
		}
		sort.Strings(out)
		return out
	}
	owned := func() []string {
		var out []string
		for _, ps := range m1.Status().Flows[0].Partitions {
			out = append(out, fmt.Sprintf("%s/%d", ps.RemoteTopic, ps.Partition))
		}
		sort.Strings(out)
		return out
	}
	testcluster.Eventually(t, 30*time.Second, "m1 replicated every partition", func() (bool, string) {
		e := exported(samples(t, reg))
		return len(e) == 9 && len(owned()) == 9, fmt.Sprintf("exported %v, owned %v", e, owned())
	})
	pm.Flow(p.Source.Alias, p.Target.Alias).SourceGap(single, 0, 3)
	_, stop2 := start("m2")
	testcluster.Eventually(t, 60*time.Second, "m1 exports the partitions of its own slot only", func() (bool, string) {
		got := samples(t, reg)
		e, o := exported(got), owned()
		return len(o) > 0 && len(o) < 9 && slices.Equal(e, o), fmt.Sprintf("m1 owns %v, exports %v", o, e)
	})
	got := samples(t, reg)
	o := owned()
	singleOwned := slices.Contains(o, remoteSingle+"/0")
	if _, ok := got["kmirror_replication_latency_seconds{"+flow+",topic="+remoteSingle+"}"]; ok != singleOwned {
		t.Errorf("latency histogram of %s scraped: %v; m1 replicates it: %v (%v)", remoteSingle, ok, singleOwned, o)
	}
	if _, ok := got["kmirror_source_gap_records_total{partition=0,"+flow+",topic="+single+"}"]; ok != singleOwned {
		t.Errorf("gap series of %s scraped: %v; m1 replicates it: %v (%v)", single, ok, singleOwned, o)
	}
	stop2()
	for i := range 8 {
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: orders, Partition: int32(i), Value: []byte("w")})
	}
	testcluster.Eventually(t, 60*time.Second, "m1 counts every partition again", func() (bool, string) {
		got := samples(t, reg)
		e := exported(got)
		var n float64
		for i := range 8 {
			n += got[fmt.Sprintf("kmirror_replication_records_total{partition=%d,%s,topic=%s}", i, flow, remote)]
		}
		return len(e) == 9 && n >= 8, fmt.Sprintf("exports %v, %v records of %s", e, n, remote)
	})
}

// TestDroppedSeriesRevived: series dropped for being out of Status and
// idle for the stale period come back, with their counts, when a recorder
// that still holds them counts again; the topic's latency histogram is
// dropped with its last partition and starts again.
func TestDroppedSeriesRevived(t *testing.T) {
	defer mirrorprom.SetStaleAfter(time.Millisecond)()
	reg := prometheus.NewRegistry()
	pm := mirrorprom.New(reg)
	newMirror(t, mirror.WithMetrics(pm)) // not running: its Status has no partition
	rec := pm.Flow("a", "b").Partition("a.orders", 0)
	rec.Acked(10, time.Now())
	const records, latency = "kmirror_replication_records_total{partition=0,source=a,target=b,topic=a.orders}",
		"kmirror_replication_latency_seconds{source=a,target=b,topic=a.orders}"
	if got := samples(t, reg); got[records] != 1 || got[latency] != 1 {
		t.Fatalf("a partition that just counted: records %v, latency %v, want 1 and 1", got[records], got[latency])
	}
	// A scrape sweeps while the collectors gather: what it drops leaves
	// that scrape or the next.
	testcluster.Eventually(t, 5*time.Second, "idle partition out of Status dropped", func() (bool, string) {
		time.Sleep(2 * time.Millisecond)
		got := samples(t, reg)
		_, r := got[records]
		_, l := got[latency]
		return !r && !l, fmt.Sprintf("records series scraped: %v, latency of a topic without partitions scraped: %v", r, l)
	})
	rec.Acked(5, time.Now())
	got := samples(t, reg)
	if got[records] != 2 || got["kmirror_replication_bytes_total{partition=0,source=a,target=b,topic=a.orders}"] != 15 || got[latency] != 1 {
		t.Errorf("revived series: records %v bytes %v latency %v, want 2, 15 and 1", got[records],
			got["kmirror_replication_bytes_total{partition=0,source=a,target=b,topic=a.orders}"], got[latency])
	}
}
