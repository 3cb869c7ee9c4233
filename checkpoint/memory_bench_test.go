package checkpoint

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
	"unsafe"

	"github.com/kmirror/kmirror/internal/heapwatch"
)

// BenchmarkEmitterMemory measures what the checkpoint emitter keeps per
// group partition at issue 22's 6 000 partitions / 2 000 groups, without
// a cluster (the in-memory model of incremental_test.go): 600 topics x 10
// partitions replicated (one offset run and two syncs each), 2 000 groups
// committed on every partition of 4 topics (80 000 group partitions).
// One iteration is the first emission and group offset sync round, then an
// idle emission and round. It reports the live heap the emitter keeps
// afterwards (kept-MB, kept-B/gp per group partition) and the largest
// live heap the collector marked during the first emission (peak-emit-MB)
// and during the first round (peak-sync-MB), above the state before the
// emission (the last collection's live heap sampled every millisecond with
// GOGC=10: within about 10 % of the true peak, repeatable within a few
// percent). With KMIRROR_HEAPPROFILE_PEAK=file it writes a heap profile of
// the largest live heap of those two phases. The model's own data (its
// commits, the target groups it keeps) counts too, a few MB.
//
//	go test -run '^$' -bench EmitterMemory -benchtime 3x ./checkpoint
func BenchmarkEmitterMemory(b *testing.B) {
	const topics, parts, groups, perGroup = 600, 10, 2000, 4
	for range b.N {
		b.StopTimer()
		m, _ := scaleWorld(topics, parts, groups, perGroup)
		s := readSide(b, m)
		s.quiet = true
		ctx := context.Background()
		runtime.GC()
		base := liveHeap()
		old := debug.SetGCPercent(10)
		var stopWatch func()
		if path := os.Getenv("KMIRROR_HEAPPROFILE_PEAK"); path != "" {
			runtime.MemProfileRate = 4096
			stopWatch = heapwatch.Watch(path, time.Millisecond)
		}
		stop, peakc := watchLive()
		b.StartTimer()
		s.e.emit(ctx, s)
		s.emitted = nil
		close(stop)
		peakEmit := <-peakc
		stop, peakc = watchLive()
		s.e.sync(ctx, s)
		s.e.publish()
		b.StopTimer()
		close(stop)
		peakSync := <-peakc
		if stopWatch != nil {
			stopWatch()
		}
		debug.SetGCPercent(old)
		s.e.emit(ctx, s)
		s.e.sync(ctx, s)
		s.e.publish()
		s.emitted, s.committed = nil, nil
		m.commits = nil
		runtime.GC()
		kept := liveHeap() - base
		runtime.KeepAlive(s)
		b.ReportMetric(float64(kept)/(1<<20), "kept-MB")
		b.ReportMetric(float64(kept)/float64(groups*perGroup*parts), "kept-B/gp")
		b.ReportMetric(float64(peakEmit-base)/(1<<20), "peak-emit-MB")
		b.ReportMetric(float64(peakSync-base)/(1<<20), "peak-sync-MB")
		if n := len(s.e.Status()); n != groups {
			b.Fatalf("%d group statuses, want %d", n, groups)
		}
	}
}

// BenchmarkIdleEmission is one idle emission and sync round at issue 22's
// 80 000 group partitions on the in-memory model (no I/O: what the
// emitter's own work costs when nothing changed; a real emission also
// waits for the group listing and the OffsetFetch).
//
//	go test -run '^$' -bench IdleEmission ./checkpoint
func BenchmarkIdleEmission(b *testing.B) {
	m, groups := scaleWorld(600, 10, 2000, 4)
	s := readSide(b, m)
	s.quiet = true
	ctx := context.Background()
	s.e.emit(ctx, s)
	s.e.sync(ctx, s)
	s.e.publish()
	before := s.e.workSnapshot()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.e.emit(ctx, s)
		s.e.sync(ctx, s)
	}
	b.StopTimer()
	if w := s.e.workSnapshot().minus(before); w.translations != 0 || w.written != 0 {
		b.Fatalf("idle emissions did work: %+v", w)
	}
	if n := len(s.e.Status()); n != groups {
		b.Fatalf("%d group statuses, want %d", n, groups)
	}
}

// scaleWorld is scaleModel with groups groups, group g committed at
// offset 10 on every partition of perGroup topics (from topic g*perGroup
// on).
func scaleWorld(topics int, parts int32, groups, perGroup int) (*model, int) {
	m := scaleModel(topics, parts)
	for g := range groups {
		c := map[tpKey]int64{}
		for k := range perGroup {
			t := m.topics[(g*perGroup+k)%topics]
			for p := range parts {
				c[tpKey{t, p}] = 10
			}
		}
		m.commits[fmt.Sprintf("g%05d", g)] = c
	}
	return m, groups
}

// readSide is an incremental side of m that read the model's sync and
// run records so far.
func readSide(t testing.TB, m *model) *side {
	s := newSide(t, m, false)
	s.read(m.feed)
	m.feed = nil
	return s
}

// scaleModel is a model (incremental_test.go) of topics x parts source
// partitions of 20 records each, all replicated.
func scaleModel(topics int, parts int32) *model {
	m := newModel(1)
	m.topics, m.parts = nil, parts
	clear(m.remote)
	clear(m.ends)
	clear(m.repl)
	clear(m.holes)
	for i := range topics {
		t := fmt.Sprintf("scale-%04d", i)
		m.topics = append(m.topics, t)
		m.remote["src."+t] = [16]byte{byte(i), byte(i >> 8), 1}
		for p := range parts {
			k := tpKey{t, p}
			m.holes[k] = map[int64]bool{}
			m.newSession(k)
			m.produce(k, 20, 0)
			m.replicate(k, 20)
		}
	}
	return m
}

// liveHeap is the live heap the last collection marked.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// watchLive samples liveHeap every millisecond until stop is closed and
// sends the largest value seen.
func watchLive() (stop chan struct{}, peak chan uint64) {
	stop, peak = make(chan struct{}), make(chan uint64, 1)
	go func() {
		var max uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if v := liveHeap(); v > max {
				max = v
			}
			select {
			case <-stop:
				if v := liveHeap(); v > max {
					max = v
				}
				peak <- max
				return
			case <-t.C:
			}
		}
	}()
	return stop, peak
}

// TestPartitionStatusPacks: there is one PartitionStatus per group
// partition in the emitter's cached statuses (80 000 at 2 000 groups);
// its fields are ordered to pack into 88 bytes (104 in declaration order
// by meaning). A field added or moved should keep it packed.
func TestPartitionStatusPacks(t *testing.T) {
	// Three strings, four int64s, and the int32 with the two bools in
	// one 8-byte word: no padding.
	want := 3*unsafe.Sizeof("") + 4*8 + 8
	if n := unsafe.Sizeof(PartitionStatus{}); n != want {
		t.Fatalf("PartitionStatus is %d bytes, want %d (order the fields by size)", n, want)
	}
}
