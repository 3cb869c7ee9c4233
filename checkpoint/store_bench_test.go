package checkpoint

import (
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"
)

const (
	benchPartitions = 1000
	benchSyncs      = 100_000
	benchSpacing    = 101 // syncs of a dense partition with offset.lag.max=100
)

type benchFilled struct {
	store         *OffsetSyncStore
	bytesPerPart  float64 // measured heap growth per partition
	reportedBytes float64 // Stats().Bytes per partition
}

var (
	benchMu    sync.Mutex
	benchCache = map[int]*benchFilled{}
)

func benchTopic(i int) string { return fmt.Sprintf("topic-%03d", i/10) }

// filledStore returns (building once per history size) a read-to-end store
// holding benchSyncs syncs for each of benchPartitions partitions, added
// interleaved like records of one offset-syncs partition.
func filledStore(b *testing.B, history int) *benchFilled {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if f, ok := benchCache[history]; ok {
		return f
	}
	topics := make([]string, benchPartitions)
	for i := range topics {
		topics[i] = benchTopic(i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := NewOffsetSyncStore(WithRecentHistory(history))
	s.MarkReadToEnd()
	for n := int64(0); n < benchSyncs; n++ {
		for p := 0; p < benchPartitions; p++ {
			s.Add(OffsetSync{Topic: topics[p], Partition: int32(p % 10), UpstreamOffset: n * benchSpacing, DownstreamOffset: n * benchSpacing})
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	f := &benchFilled{
		store:         s,
		bytesPerPart:  float64(after.HeapAlloc-before.HeapAlloc) / benchPartitions,
		reportedBytes: float64(s.Stats().Bytes) / benchPartitions,
	}
	benchCache[history] = f
	return f
}

// clone deep-copies a store so a benchmark can mutate it.
func (s *OffsetSyncStore) clone() *OffsetSyncStore {
	c := *s
	c.parts = make(map[tpKey]*partState, len(s.parts))
	for k, p := range s.parts {
		q := *p
		q.recent = append(make([]syncPair, 0, cap(p.recent)), p.recent...)
		c.parts[k] = &q
	}
	return &c
}

// BenchmarkStoreAdd measures Add on a store whose 1000 partitions already
// hold 100 000 syncs each (steady state), round-robin over partitions.
func BenchmarkStoreAdd(b *testing.B) {
	for _, history := range []int{0, 1024} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			f := filledStore(b, history)
			s := f.store.clone()
			topics := make([]string, benchPartitions)
			for i := range topics {
				topics[i] = benchTopic(i)
			}
			next := int64(benchSyncs) * benchSpacing
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := i % benchPartitions
				if p == 0 {
					next += benchSpacing
				}
				s.Add(OffsetSync{Topic: topics[p], Partition: int32(p % 10), UpstreamOffset: next, DownstreamOffset: next})
			}
			b.StopTimer()
			b.ReportMetric(f.bytesPerPart, "heapB/partition")
			b.ReportMetric(f.reportedBytes, "statsB/partition")
		})
	}
}

// BenchmarkStoreTranslate measures Translate on the filled store for group
// offsets spread over the whole history (lagging groups) and at the head.
func BenchmarkStoreTranslate(b *testing.B) {
	for _, history := range []int{0, 1024} {
		for _, where := range []string{"spread", "head"} {
			b.Run(fmt.Sprintf("history=%d/%s", history, where), func(b *testing.B) {
				s := filledStore(b, history).store
				rng := rand.New(rand.NewSource(1))
				const n = 4096
				gs := make([]int64, n)
				head := int64(benchSyncs-1) * benchSpacing
				for i := range gs {
					if where == "head" {
						gs[i] = head + 1 - rng.Int63n(50)
					} else {
						gs[i] = rng.Int63n(head + 1)
					}
				}
				topics := make([]string, benchPartitions)
				for i := range topics {
					topics[i] = benchTopic(i)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					p := i % benchPartitions
					if _, ok := s.Translate(topics[p], int32(p%10), gs[i%n]); !ok {
						b.Fatal("no translation")
					}
				}
			})
		}
	}
}

// BenchmarkTranslationPrecision reports the mean and worst re-read
// distance (G - Translate(G), records) for groups lagging 0..lag records
// behind the head of a dense partition replicated with offset.lag.max=100
// (10 000 syncs), per retention: MM2's 64 slots alone and with recent
// histories. The numbers are deterministic; ns/op is irrelevant.
func BenchmarkTranslationPrecision(b *testing.B) {
	const syncs = 10_000
	for _, history := range []int{0, 256, 1024, 4096} {
		for _, lag := range []int64{1_000, 100_000, 1_000_000} {
			b.Run(fmt.Sprintf("history=%d/lag=%d", history, lag), func(b *testing.B) {
				s := NewOffsetSyncStore(WithRecentHistory(history))
				s.MarkReadToEnd()
				for n := int64(0); n < syncs; n++ {
					addSync(s, n*benchSpacing, n*benchSpacing)
				}
				head := int64(syncs-1) * benchSpacing
				rng := rand.New(rand.NewSource(2))
				var sum, worst, missing int64
				const groups = 10_000
				for i := 0; i < groups; i++ {
					g := head - rng.Int63n(min(lag, head))
					d, ok := s.Translate(tTopic, tPart, g)
					if !ok {
						missing++
						continue
					}
					sum += g - d
					worst = max(worst, g-d)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s.Translate(tTopic, tPart, head-int64(i)%lag)
				}
				b.StopTimer()
				b.ReportMetric(float64(sum)/float64(groups-missing), "mean-reread")
				b.ReportMetric(float64(worst), "max-reread")
				b.ReportMetric(float64(missing), "untranslated")
			})
		}
	}
}
