package remoteclusterutils_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// Benchmark shape: a checkpoints topic of 100 000 records = 10 groups x
// 1000 partitions x 10 checkpoint rounds, read to translate one group over
// 1000 partitions. MB/s counts the key+value bytes of the whole topic.
const (
	benchGroups     = 10
	benchPartitions = 1000
	benchRounds     = 10
)

func benchCluster(b *testing.B) (*testcluster.Cluster, int64) {
	b.Helper()
	c := testcluster.NewFake(b, "dst")
	topic := "src.checkpoints.internal"
	testcluster.CreateTopic(b, &c, topic, 1, nil)
	var size int64
	recs := make([]*kgo.Record, 0, benchGroups*benchPartitions)
	for r := range benchRounds {
		recs = recs[:0]
		for g := range benchGroups {
			for p := range benchPartitions {
				ck := checkpoint.Checkpoint{
					Group: fmt.Sprintf("group-%02d", g), Topic: fmt.Sprintf("src.orders-%d", p/100), Partition: int32(p % 100),
					UpstreamOffset: int64(1000 * (r + 1)), DownstreamOffset: int64(990 * (r + 1)),
				}
				rec := cp(b, topic, ck)
				size += int64(len(rec.Key) + len(rec.Value))
				recs = append(recs, rec)
			}
		}
		testcluster.Produce(b, &c, recs...)
	}
	return &c, size
}

func BenchmarkTranslateOffsets(b *testing.B) {
	c, size := benchCluster(b)
	rc := remoteclusterutils.NewClient(testcluster.Client(b, c))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		offs, err := rc.TranslateOffsets(ctx, "src", "group-03")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		offs.Each(func(o kadm.Offset) {
			if o.At == 990*benchRounds {
				n++
			}
		})
		if n != benchPartitions {
			b.Fatalf("%d partitions at the last checkpoint, want %d", n, benchPartitions)
		}
	}
}

// BenchmarkTranslateFromRecords: one source offset translated from the
// copies of a remote partition of 200 000 stamped records (100-byte
// values, every 50th unstamped), on kfake: the binary search's reads.
func BenchmarkTranslateFromRecords(b *testing.B) {
	c := testcluster.NewFake(b, "dst")
	topic := "src.orders"
	testcluster.CreateTopic(b, &c, topic, 1, nil)
	const n = 200_000
	val := make([]byte, 100)
	recs := make([]*kgo.Record, 0, 10_000)
	u := int64(0)
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Value: val}
		if i%50 != 49 {
			r.Headers = []kgo.RecordHeader{{Key: "kmirror-provenance", Value: fmt.Appendf(nil, "SRC,#%d", u)}}
			u++
		}
		recs = append(recs, r)
		if len(recs) == cap(recs) {
			testcluster.Produce(b, &c, recs...)
			recs = recs[:0]
		}
	}
	cl := testcluster.Client(b, &c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.ResetTimer()
	i := int64(0)
	for b.Loop() {
		x := (i*7919 + 13) % u
		i++
		got, err := remoteclusterutils.TranslateFromRecords(ctx, cl, "SRC", map[string]map[int32]int64{topic: {0: x}})
		if err != nil {
			b.Fatal(err)
		}
		if r := got[topic][0]; r.Err != nil || r.Offset < x {
			b.Fatalf("X %d: %+v", x, r)
		}
	}
}
