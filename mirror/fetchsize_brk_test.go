package mirror

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrk1206LargeRecordsPastTheFirstFetchFloor: records of 70 KiB to
// 5 MiB (batches far past the 64 KiB the first fetches ask for), random
// and uncompressed on one topic, zero-filled and zstd-compressed on
// another, many partitions, at least once and exactly once: every record
// is copied once, in order, and nothing is stuck.
func TestBrk1206LargeRecordsPastTheFirstFetchFloor(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run("eos="+strconv.FormatBool(eos), func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst")
			const parts = 6
			maxMsg := strconv.Itoa(16 << 20)
			plain, packed := p.Topic("plain"), p.Topic("packed")
			sizes := []int{70 << 10, 1 << 20, 100, 3 << 20, 5 << 20, 200 << 10}
			rng := rand.New(rand.NewPCG(7, 8))
			n := 0
			for _, tc := range []struct {
				topic string
				comp  kgo.CompressionCodec
				fill  func(b []byte)
			}{
				{plain, kgo.NoCompression(), func(b []byte) {
					for i := range b {
						b[i] = byte(rng.Uint32())
					}
				}},
				{packed, kgo.ZstdCompression(), func([]byte) {}},
			} {
				testcluster.CreateTopic(t, &p.Source, tc.topic, parts, map[string]*string{"max.message.bytes": &maxMsg})
				cl := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()),
					kgo.ProducerBatchCompression(tc.comp), kgo.ProducerBatchMaxBytes(16<<20), kgo.MaxBufferedBytes(64<<20))
				var in []*kgo.Record
				for i, sz := range sizes {
					for part := int32(0); part < parts; part++ {
						if (i+int(part))%3 == 0 && sz > 1<<20 {
							sz = 100 << 10 // keep the total moderate
						}
						v := make([]byte, sz)
						tc.fill(v)
						copy(v, fmt.Sprintf("%s/%d/%d/", tc.topic, part, i))
						in = append(in, &kgo.Record{Topic: tc.topic, Partition: part, Value: v})
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if err := cl.ProduceSync(ctx, in...).FirstErr(); err != nil {
					t.Fatal(err)
				}
				cancel()
				n += len(in)
			}
			fc := fastFlow(p)
			fc.ExactlyOnce = eos
			fc.DisableHeartbeats, fc.DisableCheckpoints, fc.DisableHeartbeatsReplication = true, true, true
			m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
			start := time.Now()
			waitReplicatedCommitted(t, m, int64(n))
			t.Logf("%d records replicated in %v", n, time.Since(start))
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			for _, topic := range []string{plain, packed} {
				src := testcluster.ReadAll(t, &p.Source, topic)
				got, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), p.Source.Alias+"."+topic, true)
				if err != nil {
					t.Fatal(err)
				}
				for part := int32(0); part < parts; part++ {
					s, d := src[part], got[part]
					if len(s) != len(d) {
						t.Errorf("%s[%d]: %d copies of %d records", topic, part, len(d), len(s))
						continue
					}
					for i := range s {
						if !bytes.Equal(s[i].Value, d[i].Value) {
							t.Errorf("%s[%d]: copy %d differs from the source record", topic, part, i)
							break
						}
					}
				}
			}
		})
	}
}
