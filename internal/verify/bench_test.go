package verify

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func benchRecords(n, valueSize int) []*kgo.Record {
	base := time.Now()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		v := make([]byte, valueSize)
		copy(v, fmt.Sprint(i))
		rs[i] = &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", i)), Value: v, Offset: int64(i),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}, {Key: ProvenanceHeader, Value: []byte("x")}}, Timestamp: base.Add(time.Duration(i))}
	}
	return rs
}

// BenchmarkCompareInOrder measures the comparison itself (hashing both
// sides and matching) on an in-order copy, without I/O: the CPU cost per
// source record, 100-byte and 10-KiB values.
func BenchmarkCompareInOrder(b *testing.B) {
	for _, size := range []int{100, 10 << 10} {
		b.Run(fmt.Sprintf("value=%dB", size), func(b *testing.B) {
			const n = 10_000
			rs := benchRecords(n, size)
			h := newHasher(maphash.MakeSeed(), []string{ProvenanceHeader})
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; {
				var r PartitionReport
				m := newMatcher(matchOpts{maxReplay: DefaultMaxReplay, maxSkip: DefaultMaxSkip, compareTS: true}, &r)
				next := 0
				for j := 0; j < n && i < b.N; j, i = j+1, i+1 {
					f := h.fields(rs[j])
					t := tgtRec{off: int64(j), f: f, fp: h.fingerprint(f, true)}
					for m.wants(t) && next < n {
						sf := h.fields(rs[next])
						m.addSource(srcEntry{off: int64(next), f: sf, fp: h.fingerprint(sf, true)})
						next++
					}
					m.target(t)
				}
				m.drain()
			}
		})
	}
}

// BenchmarkBufferBytes reports the heap held per buffered source record
// (entry, ring slot and index), the figure behind the memory bound
// Parallel x (MaxReplay + MaxSkip) x bytes.
func BenchmarkBufferBytes(b *testing.B) {
	const n = 200_000
	var r PartitionReport
	var ms0, ms1 runtime.MemStats
	for range b.N {
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		m := newMatcher(matchOpts{maxReplay: n, maxSkip: n, compareTS: true}, &r)
		for i := range n {
			m.addSource(srcEntry{off: int64(i), fp: uint64(i) * 0x9e3779b97f4a7c15})
		}
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		b.ReportMetric(float64(ms1.HeapAlloc-ms0.HeapAlloc)/n, "B/entry")
		runtime.KeepAlive(m)
	}
}
