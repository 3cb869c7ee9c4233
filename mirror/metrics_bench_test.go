package mirror

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// BenchmarkMetricsHotPath is the per-record cost of the metrics on the
// replication path with the Prometheus recorder (package mirrorprom): one
// fetched and one acknowledged record. It must not allocate.
func BenchmarkMetricsHotPath(b *testing.B) {
	m := newMetrics(promMetrics())
	pm := m.forPartition(m.labelsOf("src", "dst"), "src.bench", 3)
	r := &kgo.Record{Timestamp: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		m.polled(pm, r)
		m.acked(pm, 120, r.Timestamp)
	}
}

// BenchmarkReplicateMetrics replicates 200 000 records of 100 bytes (8
// partitions, kfake) without metrics and with the Prometheus recorder:
// allocs/record must be the same (the recorders are resolved per
// partition, the per-record calls allocate nothing).
func BenchmarkReplicateMetrics(b *testing.B) {
	d := newBenchData(b, 100, 200000)
	for _, tc := range []struct {
		name    string
		metrics func() Metrics
	}{{"none", func() Metrics { return nil }}, {"prometheus", promMetrics}} {
		b.Run(tc.name, func(b *testing.B) {
			var elapsed time.Duration
			var allocs uint64
			for range b.N {
				b.StopTimer()
				dst := testcluster.NewFake(b, "dst")
				testcluster.CreateTopic(b, &dst, "src.bench", benchPartitions, nil)
				m, err := newMirror(b, WithCluster(ClusterConfig{Alias: "src", Client: d.src.Opts()}),
					WithCluster(ClusterConfig{Alias: "dst", Client: dst.Opts()}),
					WithFlow(FlowConfig{Source: "src", Target: "dst", DisableTopicACLSync: true, DisableTopicConfigSync: true,
						DisableCheckpoints: true, DisableHeartbeats: true}),
					WithMetrics(tc.metrics()))
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				b.StartTimer()
				start := time.Now()
				done := make(chan error, 1)
				go func() { done <- m.Run(context.Background()) }()
				for {
					st := m.Status().Flows[0]
					if st.Records >= int64(d.records) {
						break
					}
					if st.State == StateFailed {
						b.Fatalf("flow failed: %s", st.Error)
					}
					time.Sleep(time.Millisecond)
				}
				elapsed += time.Since(start)
				b.StopTimer()
				runtime.ReadMemStats(&ms1)
				allocs += ms1.Mallocs - ms0.Mallocs
				m.Close()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				dst.Fake.Close()
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(float64(d.records)*n/elapsed.Seconds(), "records/s")
			b.ReportMetric(float64(allocs)/n/float64(d.records), "allocs/record")
		})
	}
}
