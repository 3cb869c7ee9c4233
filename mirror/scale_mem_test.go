package mirror_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/mirror/mirrorprom"
)

// BenchmarkScaleMemory is the in-process counterpart of
// internal/bench/scale.sh (issue 22): one Mirror (tasks.max=2, Prometheus
// metrics registered, checkpoints and group offset sync every 2 s) on
// KMIRROR_SCALE_TOPICS topics x 10 partitions (default 300) of 20
// 100-byte records, and KMIRROR_SCALE_GROUPS groups (default 1000), each
// committed on every partition of 4 topics. Once every partition is
// replicated and every group checkpointed, and two more intervals have
// passed, it reports the live heap after a GC (heap-live-MB), the peak
// heap in use sampled every 20 ms (peak-heap-MB) and the runtime's memory
// obtained from the OS (sys-MB); with KMIRROR_HEAPPROFILE=file it writes
// a heap profile of that moment (the kfake clusters live in the same
// process: attribute by package with go tool pprof -top). Run:
//
//	KMIRROR_HEAPPROFILE=heap.pprof go test -run '^$' -bench ScaleMemory -benchtime 1x ./mirror
//	go tool pprof -top -sample_index=inuse_space heap.pprof
func BenchmarkScaleMemory(b *testing.B) {
	topics, groups := envInt("KMIRROR_SCALE_TOPICS", 300), envInt("KMIRROR_SCALE_GROUPS", 1000)
	const (
		partitions = 10
		records    = 20
		interval   = 2 * time.Second
	)
	runtime.MemProfileRate = 64 << 10
	src := testcluster.NewFake(b, "src")
	ctx := context.Background()
	adm := testcluster.Admin(b, &src)
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%04d", i)
	}
	if _, err := adm.CreateTopics(ctx, partitions, 1, nil, names...); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	cl := testcluster.Client(b, &src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, t := range names {
		for p := range int32(partitions) {
			for range records {
				cl.Produce(ctx, &kgo.Record{Topic: t, Partition: p, Value: value}, nil)
			}
		}
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	sem := make(chan struct{}, 16)
	errc := make(chan error, groups)
	for g := range groups {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			var os kadm.Offsets
			for k := range 4 {
				for p := range int32(partitions) {
					os.Add(kadm.Offset{Topic: names[(g*4+k)%topics], Partition: p, At: int64(g % records), LeaderEpoch: -1})
				}
			}
			errc <- adm.CommitAllOffsets(ctx, fmt.Sprintf("g%05d", g), os)
		}()
	}
	for range groups {
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for range b.N {
		dst := testcluster.NewFake(b, "dst")
		runtime.GC()
		stop := make(chan struct{})
		peakc := samplePeak(stop, os.Getenv("KMIRROR_HEAPPROFILE"))
		m, err := mirror.New(
			mirror.WithCluster(mirror.ClusterConfig{Alias: "src", Client: src.Opts()}),
			mirror.WithCluster(mirror.ClusterConfig{Alias: "dst", Client: dst.Opts()}),
			mirror.WithFlow(mirror.FlowConfig{Source: "src", Target: "dst", Topics: []string{"scale-.*"}, Groups: []string{"g.*"},
				Tasks: 2, DisableTopicACLSync: true, DisableTopicConfigSync: true, DisableHeartbeats: true,
				EmitCheckpointsInterval: interval, SyncGroupOffsets: true, SyncGroupOffsetsInterval: interval}),
			mirrorprom.WithRegisterer(prometheus.NewRegistry()),
		)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		want := int64(topics * partitions * records)
		deadline := time.Now().Add(10 * time.Minute)
		for {
			st := m.Status().Flows[0]
			if st.State == mirror.StateFailed {
				b.Fatalf("flow failed: %s", st.Error)
			}
			checkpointed := 0
			for _, g := range st.Groups {
				if g.State == checkpoint.StateCheckpointed || g.State == checkpoint.StateSynced {
					checkpointed++
				}
			}
			if st.Records >= want && checkpointed == groups {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("after 10 minutes: %d of %d records, %d of %d groups checkpointed", st.Records, want, checkpointed, groups)
			}
			time.Sleep(time.Second)
		}
		time.Sleep(2 * interval)
		close(stop)
		peak := <-peakc
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if path := os.Getenv("KMIRROR_HEAPPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.WriteHeapProfile(f); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		m.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		dst.Fake.Close()
		b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-live-MB")
		b.ReportMetric(peak.inuse, "peak-heap-MB")
		b.ReportMetric(peak.live, "peak-live-MB")
		b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MB")
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// peaks are the maxima samplePeak saw, in MiB.
type peaks struct {
	inuse float64 // HeapInuse
	live  float64 // the live heap marked by a GC (/gc/heap/live:bytes)
}

// samplePeak samples HeapInuse and the live heap every 20 ms until stop
// is closed and returns their maxima. With profile set it writes a heap
// profile to profile+".peak" whenever the live heap reaches a new
// maximum (the profile's inuse figures are those of the last GC: the
// moment that live heap was marked).
func samplePeak(stop <-chan struct{}, profile string) <-chan peaks {
	out := make(chan peaks, 1)
	go func() {
		var ms runtime.MemStats
		var inuse, live uint64
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			inuse = max(inuse, ms.HeapInuse)
			metrics.Read(sample)
			if l := sample[0].Value.Uint64(); l > live+live/20 {
				live = l
				if profile != "" {
					if f, err := os.Create(profile + ".peak"); err == nil {
						_ = pprof.WriteHeapProfile(f)
						f.Close()
					}
				}
			}
			select {
			case <-stop:
				out <- peaks{inuse: float64(inuse) / (1 << 20), live: float64(live) / (1 << 20)}
				return
			case <-t.C:
			}
		}
	}()
	return out
}
