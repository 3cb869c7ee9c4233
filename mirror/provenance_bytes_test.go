package mirror

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProvenanceBytes measures what the provenance header costs on
// the target, in stored bytes per record (the record batches as a kfake
// broker stores them: what the producer built), for 100 B and 1 KiB JSON
// records, uncompressed and lz4: no header, the header with the source
// cluster's ID (22 characters, a Kafka cluster ID), and the header with the
// offset element of tail resume (issue 23). One iteration writes and reads
// 20 000 records of 100 B or 4 000 of 1 KiB, offsets from 1 000 000 on;
// the figures are the metric B/record.
func BenchmarkProvenanceBytes(b *testing.B) {
	pv := mustProv(b, idA, idB)
	for _, size := range []int{100, 1024} {
		for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.Lz4Compression()} {
			for _, variant := range []string{"none", "ids", "ids+offset"} {
				name := fmt.Sprintf("%dB/%s/%s", size, map[bool]string{true: "none", false: "lz4"}[codec == kgo.NoCompression()], variant)
				n := 20000
				if size > 100 {
					n = 4000
				}
				b.Run(name, func(b *testing.B) {
					var per float64
					for b.Loop() {
						per = storedBytesPerRecord(b, n, size, codec, func(r *kgo.Record, off int64) {
							switch variant {
							case "ids":
								_, idx := pv.check(r.Headers)
								r.Headers = pv.stamp(r.Headers, idx)
							case "ids+offset":
								_, idx := pv.check(r.Headers)
								_, _, r.Headers = pv.stampAt(nil, nil, r.Headers, idx, off)
							}
						})
					}
					b.ReportMetric(per, "B/record")
				})
			}
		}
	}
}

// storedBytesPerRecord produces n JSON-like records of about size bytes
// (offsets from 1 000 000 on, as a busy partition's) through stamp to a
// kfake topic with codec, then fetches them raw and returns the record
// batches' bytes divided by n.
func storedBytesPerRecord(b *testing.B, n, size int, codec kgo.CompressionCodec, stamp func(*kgo.Record, int64)) float64 {
	b.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic("t"),
		kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		b.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "t")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		v := fmt.Sprintf(`{"id":%d,"customer":"c-%06d","amount":%d.%02d,"currency":"EUR","note":"`, 1_000_000+i, rng.IntN(1_000_000), rng.IntN(10000), rng.IntN(100))
		for len(v) < size-2 {
			v += string(rune('a' + rng.IntN(26)))
		}
		r := &kgo.Record{Key: []byte(fmt.Sprintf("c-%06d", rng.IntN(1_000_000))), Value: []byte(v + `"}`)}
		stamp(r, int64(1_000_000+i))
		recs[i] = r
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	var total int
	for off := int64(0); off < int64(n); {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.MaxWaitMillis = 64<<20, 100
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "t", td["t"].ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = off, 64<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			b.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: off, Topic: "t"}, &p, kgo.DefaultDecompressor(), nil)
		if len(fp.Records) == 0 {
			b.Fatalf("no records at %d", off)
		}
		total += len(p.RecordBatches)
		off = next
	}
	return float64(total) / float64(n)
}
