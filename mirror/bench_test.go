package mirror

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// Benchmarks of the replicator against a bare franz-go consume→produce
// pipe over the same data on kfake (8 partitions). kfake serves every
// request on one goroutine, so both are bounded by it: the ratio measures
// kmirror's overhead, not absolute Kafka throughput (see the side-by-side
// script for real brokers). Run:
//
//	go test -run '^$' -bench 'Replicate' -benchtime 3x -count 5 ./mirror | tee new.txt
//	benchstat new.txt
//
// Each iteration replicates the whole data set to a fresh target cluster;
// records/s and MB/s are reported, plus peak-heap-MB (sampled every 10 ms)
// and allocs/record.

const benchPartitions = 8

type benchData struct {
	src     testcluster.Cluster
	records int
	bytes   int64
}

func newBenchData(b *testing.B, valueSize, records int) *benchData {
	b.Helper()
	src := testcluster.NewFake(b, "src")
	testcluster.CreateTopic(b, &src, "bench", benchPartitions, nil)
	cl := testcluster.Client(b, &src, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	ctx := context.Background()
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var total int64
	for i := 0; i < records; i++ {
		key := []byte(fmt.Sprintf("key-%08d", i))
		cl.Produce(ctx, &kgo.Record{Topic: "bench", Partition: int32(i % benchPartitions), Key: key, Value: value,
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}, nil)
		total += int64(len(key) + len(value) + 2)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	return &benchData{src: src, records: records, bytes: total}
}

// peakHeap samples the heap until stop is closed and returns the maximum in MB.
func peakHeap(stop <-chan struct{}) <-chan float64 {
	out := make(chan float64, 1)
	go func() {
		var ms runtime.MemStats
		var peak uint64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- float64(peak) / (1 << 20)
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// benchRun runs replicate b.N times. replicate returns when every record
// is acknowledged, with the time the first one was: records/s is the rate
// over the whole run, start-ms the part of it before the first record
// (start-up: group join, resume points), cpu-us/record the process CPU time
// per record.
func benchRun(b *testing.B, d *benchData, replicate func(dst *testcluster.Cluster) (first time.Time)) {
	b.ReportAllocs()
	var elapsed, startup, cpu time.Duration
	var peak float64
	var allocs uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dst := testcluster.NewFake(b, "dst")
		testcluster.CreateTopic(b, &dst, "src.bench", benchPartitions, nil)
		runtime.GC()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		stop := make(chan struct{})
		peakc := peakHeap(stop)
		b.StartTimer()
		start := time.Now()
		cpu0 := cpuTime()
		first := replicate(&dst)
		elapsed += time.Since(start)
		startup += first.Sub(start)
		cpu += cpuTime() - cpu0
		b.StopTimer()
		close(stop)
		peak = max(peak, <-peakc)
		runtime.ReadMemStats(&ms1)
		allocs += ms1.Mallocs - ms0.Mallocs
		dst.Fake.Close()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(d.records)*n/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(d.bytes)*n/elapsed.Seconds()/1e6, "MB/s")
	b.ReportMetric(peak, "peak-heap-MB")
	b.ReportMetric(float64(allocs)/n/float64(d.records), "allocs/record")
	b.ReportMetric(float64(startup.Milliseconds())/n, "start-ms")
	b.ReportMetric(float64(cpu.Microseconds())/n/float64(d.records), "cpu-us/record")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchMirror(b *testing.B, d *benchData, provenance bool) {
	benchMirrorTail(b, d, provenance, true)
}

// benchMirrorTail is benchMirror with tail resume (the offset element of
// the provenance header) on or off.
func benchMirrorTail(b *testing.B, d *benchData, provenance, tail bool) {
	benchRun(b, d, func(dst *testcluster.Cluster) (first time.Time) {
		m, err := newMirror(b,
			WithCluster(ClusterConfig{Alias: "src", Client: d.src.Opts()}),
			WithCluster(ClusterConfig{Alias: "dst", Client: dst.Opts()}),
			WithFlow(FlowConfig{Source: "src", Target: "dst", DisableTopicACLSync: true, DisableTopicConfigSync: true,
				DisableCheckpoints: true, DisableHeartbeats: true, DisableProvenanceHeader: !provenance,
				DisableTailResume: !tail}),
		)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(context.Background()) }()
		for {
			st := m.Status().Flows[0]
			if st.Records > 0 && first.IsZero() {
				first = time.Now()
			}
			if st.Records >= int64(d.records) {
				break
			}
			if st.State == StateFailed {
				b.Fatalf("flow failed: %s", st.Error)
			}
			time.Sleep(time.Millisecond)
		}
		m.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		return first
	})
}

// benchPipe is the baseline: a direct consumer of every partition and an
// idempotent producer with a manual partitioner, counting acknowledgements.
func benchPipe(b *testing.B, d *benchData) {
	benchRun(b, d, func(dst *testcluster.Cluster) (first time.Time) {
		parts := map[int32]kgo.Offset{}
		for p := int32(0); p < benchPartitions; p++ {
			parts[p] = kgo.NewOffset().AtStart()
		}
		src, err := kgo.NewClient(append(d.src.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": parts}),
			kgo.FetchMaxBytes(DefaultFetchMaxBytes), kgo.FetchMaxWait(500*time.Millisecond))...)
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		out, err := kgo.NewClient(append(dst.Opts(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.MaxBufferedBytes(DefaultMaxBufferedBytes), kgo.ProducerLinger(5*time.Millisecond))...)
		if err != nil {
			b.Fatal(err)
		}
		defer out.Close()
		ctx := context.Background()
		var acked atomic.Int64
		var firstNs atomic.Int64
		var wg sync.WaitGroup
		promise := func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
			if acked.Add(1) == 1 {
				firstNs.Store(time.Now().UnixNano())
			}
			wg.Done()
		}
		for seen := 0; seen < d.records; {
			fs := src.PollRecords(ctx, 10000)
			fs.EachRecord(func(r *kgo.Record) {
				seen++
				wg.Add(1)
				out.Produce(ctx, &kgo.Record{Topic: "src.bench", Partition: r.Partition, Key: r.Key, Value: r.Value,
					Headers: r.Headers, Timestamp: r.Timestamp}, promise)
			})
		}
		wg.Wait()
		return time.Unix(0, firstNs.Load())
	})
}

func BenchmarkReplicate(b *testing.B) {
	for _, size := range []struct {
		name           string
		value, records int
	}{{"1KiB", 1024, 100000}, {"100B", 100, 500000}} {
		d := newBenchData(b, size.value, size.records)
		b.Run(size.name+"/kmirror", func(b *testing.B) { benchMirror(b, d, true) })
		b.Run(size.name+"/kmirror-no-tail", func(b *testing.B) { benchMirrorTail(b, d, true, false) })
		b.Run(size.name+"/kmirror-no-provenance", func(b *testing.B) { benchMirror(b, d, false) })
		b.Run(size.name+"/bare-pipe", func(b *testing.B) { benchPipe(b, d) })
	}
}
