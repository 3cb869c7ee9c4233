package mirror

// Shallow copy (FlowConfig.ShallowCopy) end to end on the test-cluster
// harness (kfake, or the real brokers of KMIRROR_SOURCE_BROKERS /
// KMIRROR_TARGET_BROKERS): the target's raw batches are read with a kmsg
// Fetch and compared with the source's byte for byte.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// rawBatch is one stored record batch as a fetch returns it.
type rawBatch struct {
	base       int64
	codec      uint8
	attrs      int16
	count      int32
	firstTs    int64
	maxTs      int64
	transact   bool
	control    bool
	payload    []byte // the records section (compressed when codec != 0)
	recs       []rec
	recOffsets []int64
}

// readRawBatches fetches every batch of topic[partition] on c (read
// uncommitted, control batches included) from its leader.
func readRawBatches(t *testing.T, c *testcluster.Cluster, topic string, partition int32) []rawBatch {
	t.Helper()
	cl := testcluster.Client(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %v %+v", topic, err, mresp)
	}
	var leader int32 = -1
	for _, p := range mresp.Topics[0].Partitions {
		if p.Partition == partition {
			leader = p.Leader
		}
	}
	var out []rawBatch
	var pos int64
	dec := kgo.DefaultDecompressor()
	for {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 50<<20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, mresp.Topics[0].TopicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, pos, 50<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch %s[%d]@%d: %v", topic, partition, pos, err)
		}
		fp := resp.Topics[0].Partitions[0]
		if fp.ErrorCode != 0 {
			t.Fatalf("fetch %s[%d]@%d: error code %d", topic, partition, pos, fp.ErrorCode)
		}
		in := fp.RecordBatches
		n := 0
		for len(in) > 0 {
			h, ok := readBatchHeader(in)
			if !ok {
				break
			}
			b := in[:h.length]
			in = in[h.length:]
			if h.last() < pos {
				continue
			}
			n++
			rb := rawBatch{base: h.base, codec: uint8(h.attrs & attrCodec), attrs: h.attrs, count: h.numRecords,
				maxTs: h.maxTs, transact: h.attrs&attrTransactional != 0, control: h.attrs&attrControl != 0,
				payload: append([]byte(nil), b[rbHeaderLen:]...)}
			rb.firstTs = int64(uint64(b[rbBaseTimestamp])<<56 | uint64(b[rbBaseTimestamp+1])<<48 | uint64(b[rbBaseTimestamp+2])<<40 |
				uint64(b[rbBaseTimestamp+3])<<32 | uint64(b[rbBaseTimestamp+4])<<24 | uint64(b[rbBaseTimestamp+5])<<16 |
				uint64(b[rbBaseTimestamp+6])<<8 | uint64(b[rbBaseTimestamp+7]))
			dp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{KeepControlRecords: true, Topic: topic, Partition: partition},
				&kmsg.FetchResponseTopicPartition{Partition: partition, RecordBatches: b}, dec, nil)
			if dp.Err != nil {
				t.Fatalf("decoding batch at %d: %v", h.base, dp.Err)
			}
			rb.recs = recsOf(dp.Records)
			for _, r := range dp.Records {
				rb.recOffsets = append(rb.recOffsets, r.Offset)
			}
			out = append(out, rb)
			pos = h.last() + 1
		}
		if n == 0 || pos >= fp.HighWatermark {
			return out
		}
	}
}

// shallowFlow is trFlow with shallow copy on (and the provenance header off,
// as shallow copy requires).
func shallowFlow(p *testcluster.Pair) FlowConfig {
	fc := trFlow(p)
	fc.ShallowCopy = true
	fc.DisableProvenanceHeader = true
	return fc
}

// produceWith produces recs with a client using codec, each call of n
// records forming one batch per partition: the records are buffered within
// the one-second linger, then flushed at once (ProduceSync would wait the
// whole linger out, a second per call).
func produceWith(t *testing.T, c *testcluster.Cluster, codec kgo.CompressionCodec, recs []*kgo.Record, opts ...kgo.Opt) {
	t.Helper()
	cl := testcluster.Client(t, c, append([]kgo.Opt{kgo.ProducerBatchCompression(codec), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Second), kgo.ProducerBatchMaxBytes(4 << 20)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	wg.Add(len(recs))
	for _, r := range recs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = err
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("produce: flush: %v", err)
	}
	wg.Wait()
	if first != nil {
		t.Fatalf("produce: %v", first)
	}
}

// eventRecords returns n compressible records shaped like application
// events: keys, JSON-ish values, a tombstone every 9th, headers and
// explicit timestamps.
func eventRecords(topic string, partition int32, from, n int, base time.Time) []*kgo.Record {
	rs := make([]*kgo.Record, n)
	for i := range rs {
		j := from + i
		r := &kgo.Record{Topic: topic, Partition: partition, Key: []byte(fmt.Sprintf("customer-%04d", j%37)),
			Timestamp: base.Add(time.Duration(j) * time.Millisecond),
			Value:     []byte(fmt.Sprintf(`{"order":%d,"status":"placed","items":[{"sku":"A-%d","qty":%d}],"note":"%s"}`, j, j%11, j%5, strings.Repeat("x", j%50))),
			Headers:   []kgo.RecordHeader{{Key: "event-type", Value: []byte("order")}, {Key: "trace", Value: []byte{byte(j), 0, 1}}}}
		if j%9 == 4 {
			r.Value = nil
		}
		if j%13 == 6 {
			r.Key = nil
		}
		rs[i] = r
	}
	return rs
}

func batchesEqual(t *testing.T, what string, src, dst []rawBatch) {
	t.Helper()
	if len(src) != len(dst) {
		t.Fatalf("%s: %d batches on the target, %d on the source", what, len(dst), len(src))
	}
	for i := range src {
		s, d := src[i], dst[i]
		if s.codec != d.codec || s.count != d.count || s.firstTs != d.firstTs || s.maxTs != d.maxTs || !bytes.Equal(s.payload, d.payload) {
			t.Errorf("%s batch %d: target codec %d count %d ts %d..%d (%d payload bytes), source codec %d count %d ts %d..%d (%d payload bytes), payload equal %v",
				what, i, d.codec, d.count, d.firstTs, d.maxTs, len(d.payload), s.codec, s.count, s.firstTs, s.maxTs, len(s.payload), bytes.Equal(s.payload, d.payload))
		}
		if fmt.Sprint(s.recs) != fmt.Sprint(d.recs) {
			t.Errorf("%s batch %d: records differ", what, i)
		}
		if d.transact || d.attrs&^attrCodec&^attrLogAppendTime != 0 {
			t.Errorf("%s batch %d: target attributes %#x", what, i, d.attrs)
		}
	}
}

// TestShallowCopyKeepsBatchesByteForByte: one partition whose batches use
// four codecs (lz4, zstd, none, snappy, gzip) and a second partition with
// zstd; every target batch has the source batch's codec, timestamps and
// records section byte for byte, at the same offsets, and the status counts
// every record.
func TestShallowCopyKeepsBatchesByteForByte(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	codecs := []kgo.CompressionCodec{kgo.Lz4Compression(), kgo.ZstdCompression(), kgo.NoCompression(), kgo.SnappyCompression(), kgo.GzipCompression()}
	for i, c := range codecs {
		produceWith(t, &p.Source, c, eventRecords(orders, 0, i*60, 60, base))
	}
	produceWith(t, &p.Source, kgo.ZstdCompression(), eventRecords(orders, 1, 0, 200, base))
	produceWith(t, &p.Source, kgo.ZstdCompression(), eventRecords(orders, 1, 200, 100, base))
	fc := shallowFlow(p)
	fc.Topics = []string{regexp.QuoteMeta(orders)}
	m, _ := trStart(t, p, fc)
	waitReplicated(t, m, 600)
	remote := p.Source.Alias + "." + orders
	for part := int32(0); part < 2; part++ {
		src := readRawBatches(t, &p.Source, orders, part)
		dst := readRawBatches(t, &p.Target, remote, part)
		batchesEqual(t, fmt.Sprintf("partition %d", part), src, dst)
		for i := range src {
			if src[i].base != dst[i].base {
				t.Errorf("partition %d batch %d at target offset %d, source %d", part, i, dst[i].base, src[i].base)
			}
		}
	}
	if got := readRawBatches(t, &p.Target, remote, 0); len(got) == 5 {
		var cs []uint8
		for _, b := range got {
			cs = append(cs, b.codec)
		}
		if fmt.Sprint(cs) != "[3 4 0 2 1]" {
			t.Errorf("target codecs of partition 0 = %v, want [3 4 0 2 1] (lz4, zstd, none, snappy, gzip)", cs)
		}
	}
	st := m.Status().Flows[0]
	if st.Records != 600 {
		t.Errorf("status records = %d, want 600", st.Records)
	}
}

// TestShallowCopyTransactionsAndResume: a partition mixing a compressed
// non-transactional batch, committed and aborted transactions (read
// committed) and a resume position inside a batch. The target holds exactly
// the committed records in source order; the plain batches are copied as
// they are; the committed transactional batches too, with the transactional
// bit cleared; aborted ones are not copied.
func TestShallowCopyTransactionsAndResume(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("txn")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	produceWith(t, &p.Source, kgo.Lz4Compression(), eventRecords(orders, 0, 0, 50, base))
	txn := testcluster.Client(t, &p.Source, kgo.TransactionalID("shallow-txn-"+p.Source.Alias), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	ctx := context.Background()
	var want []*kgo.Record
	want = append(want, eventRecords(orders, 0, 0, 50, base)...)
	for i, commit := range []bool{true, false, true, false, false, true} {
		rs := eventRecords(orders, 0, 1000+i*20, 20, base)
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			want = append(want, eventRecords(orders, 0, 1000+i*20, 20, base)...)
		}
	}
	produceWith(t, &p.Source, kgo.SnappyCompression(), eventRecords(orders, 0, 50, 30, base))
	want = append(want, eventRecords(orders, 0, 50, 30, base)...)

	fc := shallowFlow(p)
	fc.Topics = []string{regexp.QuoteMeta(orders)}
	m, stop := trStart(t, p, fc)
	waitReplicated(t, m, int64(len(want)))
	stop()
	remote := p.Source.Alias + "." + orders
	got := testcluster.ReadAll(t, &p.Target, remote)[0]
	if fmt.Sprint(recsOf(got)) != fmt.Sprint(recsOf(want)) {
		t.Fatalf("target holds %d records, want the %d committed ones in order", len(got), len(want))
	}
	src := readRawBatches(t, &p.Source, orders, 0)
	dst := readRawBatches(t, &p.Target, remote, 0)
	var srcData []rawBatch
	aborted := map[int]bool{1: true, 3: true, 4: true}
	ti := 0
	for _, b := range src {
		switch {
		case b.control:
		case b.transact:
			if !aborted[ti] {
				srcData = append(srcData, b)
			}
			ti++
		default:
			srcData = append(srcData, b)
		}
	}
	batchesEqual(t, "mixed partition", srcData, dst)

	// Resume inside a batch: the resume point is moved back to the middle
	// of the first batch; the next session copies the records from there
	// on (a batch starting before the position takes the normal path), and
	// the rest as batches.
	before := len(got)
	storeResumePoint(t, p, orders, 0, 24)
	m2, _ := trStart(t, p, fc)
	waitReplicated(t, m2, int64(len(want)-25))
	got = testcluster.ReadAll(t, &p.Target, remote)[0]
	if len(got) != before+len(want)-25 {
		t.Fatalf("after the replay the target holds %d records, want %d", len(got), before+len(want)-25)
	}
	if fmt.Sprint(recsOf(got[before:])) != fmt.Sprint(recsOf(want[25:])) {
		t.Errorf("replayed records differ from source records 25..")
	}
}

// storeResumePoint writes a resume point for topic[partition] into the
// flow's resume-point topic, as a unit stores it after acknowledgements.
func storeResumePoint(t *testing.T, p *testcluster.Pair, topic string, partition int32, off int64) {
	t.Helper()
	rt := connectoffsets.TopicName(p.Source.Alias)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := testcluster.Admin(t, &p.Target).ListTopics(ctx, rt)
	if err != nil || td[rt].Err != nil {
		t.Fatalf("resume topic %s: %v %v", rt, err, td[rt].Err)
	}
	key := connectoffsets.SourceKey(p.Source.Alias, topic, partition)
	testcluster.Produce(t, &p.Target, &kgo.Record{Topic: rt, Key: key, Value: connectoffsets.SourceValue(off),
		Partition: connectoffsets.Partition(key, int32(len(td[rt].Partitions)))})
}

// shStart is trStart with options for the target cluster's producer.
func shStart(t *testing.T, p *testcluster.Pair, fc FlowConfig, prod ...kgo.Opt) *Mirror {
	t.Helper()
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: prod}), WithFlow(fc))
	return m
}

// TestShallowCopyTooLargeFallsBack: the remote topic's max.message.bytes is
// below the source batches' size: the target refuses the batches as they
// are (MESSAGE_TOO_LARGE) and their records take the normal path, whose
// producer makes batches under the limit. Every record arrives, in order.
func TestShallowCopyTooLargeFallsBack(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	big := p.Topic("big")
	limit := "60000"
	testcluster.CreateTopic(t, &p.Source, big, 1, nil)
	remote := p.Source.Alias + "." + big
	testcluster.CreateTopic(t, &p.Target, remote, 1, map[string]*string{"max.message.bytes": &limit})
	rnd := rand.New(rand.NewPCG(1, 2))
	var rs []*kgo.Record
	for i := 0; i < 300; i++ {
		v := make([]byte, 1000)
		for j := range v {
			v[j] = byte(rnd.Uint32())
		}
		rs = append(rs, &kgo.Record{Topic: big, Key: []byte(fmt.Sprint(i)), Value: v})
	}
	produceWith(t, &p.Source, kgo.NoCompression(), rs[:150])
	produceWith(t, &p.Source, kgo.NoCompression(), rs[150:])
	fc := shallowFlow(p)
	fc.Topics = []string{regexp.QuoteMeta(big)}
	m := shStart(t, p, fc, kgo.ProducerBatchMaxBytes(50000))
	waitReplicated(t, m, 300)
	got := testcluster.ReadAll(t, &p.Target, remote)[0]
	if fmt.Sprint(recsOf(got)) != fmt.Sprint(recsOf(testcluster.ReadAll(t, &p.Source, big)[0])) {
		t.Fatalf("target records differ from the source's (%d records)", len(got))
	}
	for _, b := range readRawBatches(t, &p.Target, remote, 0) {
		if len(b.payload)+rbHeaderLen > 60000 {
			t.Errorf("target batch at %d has %d bytes", b.base, len(b.payload)+rbHeaderLen)
		}
	}
}

// TestShallowCopyExactTranslation: ten batches of ten records copied as
// the source's batches; a group at 47 (inside the fifth batch) is checkpointed 47 -> 47
// and committed on the target.
func TestShallowCopyExactTranslation(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders, g := p.Topic("orders"), p.Group("g47")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := 0; i < 10; i++ {
		produceWith(t, &p.Source, kgo.Lz4Compression(), eventRecords(orders, 0, i*10, 10, base))
	}
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 47})
	remote := p.Source.Alias + "." + orders
	m, _ := trStart(t, p, shallowFlow(p))
	testcluster.Eventually(t, 30*time.Second, "checkpoint 47 -> 47, target group at 47", func() (bool, string) {
		got, err := translated(t, p, g)
		gs, _ := groupStatusOf(m, 0, g)
		return tryCommitted(&p.Target, g, remote)[0] == 47 && err == nil && got[remote+"-0"] == 47 && gs.SafeToSwitch,
			fmt.Sprintf("translated %v %v, status %+v", got, err, gs)
	})
	if cp := readCheckpoints(t, p)[g+"/"+remote+"/0"]; cp.UpstreamOffset != 47 || cp.DownstreamOffset != 47 {
		t.Errorf("checkpoint %+v, want 47 -> 47", cp)
	}
	// The source's batches as the producer wrote them: ten of ten records
	// mostly, but kgo sometimes sends the first records of one ahead (CI:
	// 11 batches, 90+1 and 91+9). The target holds the same batches.
	layout := func(c *testcluster.Cluster, topic string) []string {
		var out []string
		for _, b := range readRawBatches(t, c, topic, 0) {
			out = append(out, fmt.Sprintf("%d+%d codec %d", b.base, b.count, b.codec))
		}
		return out
	}
	src, dst := layout(&p.Source, orders), layout(&p.Target, remote)
	if len(src) < 10 || fmt.Sprint(dst) != fmt.Sprint(src) {
		t.Errorf("target batches %v, want the source's %v (at least 10)", dst, src)
	}
}

// TestShallowCopyRefused: shallow copy with the provenance header on, or
// with exactly once, is refused by New naming the key.
func TestShallowCopyRefused(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	for _, c := range []struct {
		fc   func(FlowConfig) FlowConfig
		want string
	}{
		{func(f FlowConfig) FlowConfig { f.DisableProvenanceHeader = false; return f }, "provenance.header.enabled=false"},
		{func(f FlowConfig) FlowConfig { f.ExactlyOnce = true; return f }, p.Target.Alias + ".exactly.once.source.support=disabled"},
	} {
		_, err := newMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
			WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}), WithFlow(c.fc(shallowFlow(p))))
		if err == nil || !strings.Contains(err.Error(), "shallow.copy.enabled") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New = %v, want an error naming shallow.copy.enabled and %q", err, c.want)
		}
	}
}

// TestShallowCopyCompactedWithHoles (real brokers only: kfake does not
// compact): a compacted topic whose cleaned batches have holes (fewer
// records than their offset range) is replicated with those batches on the
// normal path and the others copied as they are; the target holds the
// source's records, and a group at an offset after the holes translates
// exactly.
func TestShallowCopyCompactedWithHoles(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if !p.Real {
		t.Skip("kfake does not compact; runs on real brokers (KMIRROR_SOURCE_BROKERS, KMIRROR_TARGET_BROKERS)")
	}
	topic, g := p.Topic("compacted"), p.Group("gc")
	compact, seg, ratio, lag := "compact", "500", "0.001", "0"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"cleanup.policy": &compact, "segment.ms": &seg,
		"min.cleanable.dirty.ratio": &ratio, "min.compaction.lag.ms": &lag})
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := 0; i < 6; i++ {
		rs := eventRecords(topic, 0, i*40, 40, base)
		for _, r := range rs {
			if r.Key == nil {
				r.Key = []byte("nokey")
			}
			if r.Value == nil {
				r.Value = []byte("v")
			}
		}
		produceWith(t, &p.Source, kgo.Lz4Compression(), rs)
	}
	// Roll the segment (a record after segment.ms) and wait for the cleaner.
	holes := func() bool {
		for _, b := range readRawBatches(t, &p.Source, topic, 0) {
			if int64(b.count) != int64(len(b.recOffsets)) || (len(b.recOffsets) > 0 && b.recOffsets[len(b.recOffsets)-1]-b.base+1 != int64(b.count)) {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; !holes(); i++ {
		if time.Now().After(deadline) {
			t.Fatal("the source broker did not compact the topic within 60 s")
		}
		time.Sleep(time.Second)
		produceWith(t, &p.Source, kgo.NoCompression(), []*kgo.Record{{Topic: topic, Key: []byte(fmt.Sprintf("roll%d", i)), Value: []byte("r")}})
	}
	srcRecs := testcluster.ReadAll(t, &p.Source, topic)[0]
	last := srcRecs[len(srcRecs)-1].Offset
	trCommit(t, &p.Source, g, topic, map[int32]int64{0: last})
	fc := shallowFlow(p)
	fc.Topics = []string{regexp.QuoteMeta(topic)}
	m, _ := trStart(t, p, fc)
	waitReplicated(t, m, int64(len(srcRecs)))
	remote := p.Source.Alias + "." + topic
	got := testcluster.ReadAll(t, &p.Target, remote)[0]
	if fmt.Sprint(recsOf(got)) != fmt.Sprint(recsOf(srcRecs)) {
		t.Fatalf("target holds %d records, source %d: they differ", len(got), len(srcRecs))
	}
	want := int64(len(got) - 1) // the last record's target offset
	testcluster.Eventually(t, 30*time.Second, fmt.Sprintf("checkpoint %d -> %d", last, want), func() (bool, string) {
		cp := readCheckpoints(t, p)[g+"/"+remote+"/0"]
		return cp.UpstreamOffset == last && cp.DownstreamOffset == want, fmt.Sprintf("%+v", cp)
	})
}

// TestNormalPathKeepsSourceCodec: without shallow copy, the target producer
// compresses with the codec of the source data (lz4 here), unless the
// target's producer options configure one (zstd), which wins.
func TestNormalPathKeepsSourceCodec(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		prod []kgo.Opt
		want uint8
	}{{"follows the source", nil, 3}, {"configured wins", []kgo.Opt{kgo.ProducerBatchCompression(kgo.ZstdCompression())}, 4},
		{"configured none", []kgo.Opt{kgo.ProducerBatchCompression(kgo.NoCompression())}, 0}} {
		t.Run(c.name, func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			orders := p.Topic("orders")
			testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
			base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			produceWith(t, &p.Source, kgo.Lz4Compression(), eventRecords(orders, 0, 0, 300, base))
			fc := trFlow(p)
			fc.Topics = []string{regexp.QuoteMeta(orders)}
			m := shStart(t, p, fc, c.prod...)
			waitReplicated(t, m, 300)
			bs := readRawBatches(t, &p.Target, p.Source.Alias+"."+orders, 0)
			if len(bs) == 0 {
				t.Fatal("no batch on the target")
			}
			for _, b := range bs {
				if b.codec != c.want {
					t.Errorf("target batch at %d: codec %d, want %d", b.base, b.codec, c.want)
				}
				if b.codec == 3 && lz4BlockSize(t, b.payload) != 1<<20 { // TestLz4CompressorBlocks
					t.Errorf("target batch at %d: lz4 blocks of %d bytes, want 1 MiB", b.base, lz4BlockSize(t, b.payload))
				}
			}
		})
	}
}

// TestBatchHeaderRules: which fetched batches shallow copy writes as they
// are, and the produce rewrite (CRC-32C valid, records section untouched,
// header restored exactly).
func TestBatchHeaderRules(t *testing.T) {
	t.Parallel()
	mk := func(base int64, attrs int16, lastDelta, count int32) []byte {
		b := make([]byte, rbHeaderLen+20)
		binary.BigEndian.PutUint64(b[rbBaseOffset:], uint64(base))
		binary.BigEndian.PutUint32(b[rbLength:], uint32(len(b)-12))
		binary.BigEndian.PutUint32(b[rbLeaderEpoch:], 7)
		b[rbMagic] = 2
		binary.BigEndian.PutUint16(b[rbAttributes:], uint16(attrs))
		binary.BigEndian.PutUint32(b[rbLastOffsetDelta:], uint32(lastDelta))
		binary.BigEndian.PutUint64(b[rbProducerID:], 42)
		binary.BigEndian.PutUint16(b[rbProducerEpoch:], 3)
		binary.BigEndian.PutUint32(b[rbBaseSequence:], 99)
		binary.BigEndian.PutUint32(b[rbNumRecords:], uint32(count))
		for i := rbHeaderLen; i < len(b); i++ {
			b[i] = byte(i)
		}
		binary.BigEndian.PutUint32(b[rbCRC:], crc32.Checksum(b[rbAttributes:], castagnoli))
		return b
	}
	for _, c := range []struct {
		b    []byte
		pos  int64
		want bool
		why  string
	}{
		{mk(100, 3, 9, 10), 100, true, ""},
		{mk(100, 3|attrTransactional, 9, 10), 100, true, ""},
		{mk(100, 4, 9, 10), 95, true, ""},
		{mk(100, 3, 9, 10), 101, false, "batch starts before the resume position"},
		{mk(100, 3, 9, 7), 100, false, "offsets not contiguous (compacted)"},
		{mk(100, 3|attrControl, 0, 1), 100, false, "control batch"},
		{mk(100, 3|attrLogAppendTime, 9, 10), 100, false, "LogAppendTime timestamps"},
		{mk(100, 3|attrDeleteHorizon, 9, 10), 100, false, "delete horizon set"},
	} {
		h, ok := readBatchHeader(c.b)
		if !ok {
			t.Fatal("header not read")
		}
		if got, why := h.copyable(c.pos); got != c.want || why != c.why {
			t.Errorf("attrs %#x last delta %d count %d at position %d: copyable %v (%q), want %v (%q)", h.attrs, h.lastDelta, h.numRecords, c.pos, got, why, c.want, c.why)
		}
	}
	b := mk(100, 4|attrTransactional, 9, 10)
	before := append([]byte(nil), b...)
	var orig [rbHeaderLen]byte
	rewriteForProduce(b, &orig)
	h, _ := readBatchHeader(b)
	if h.base != 0 || h.producerID != -1 || h.attrs != 4 || h.numRecords != 10 || h.lastDelta != 9 ||
		int16(binary.BigEndian.Uint16(b[rbProducerEpoch:])) != -1 || int32(binary.BigEndian.Uint32(b[rbBaseSequence:])) != -1 ||
		int32(binary.BigEndian.Uint32(b[rbLeaderEpoch:])) != -1 {
		t.Errorf("rewritten header %+v", h)
	}
	if crc32.Checksum(b[rbAttributes:], castagnoli) != binary.BigEndian.Uint32(b[rbCRC:]) {
		t.Error("CRC-32C of the rewritten batch does not match")
	}
	if !bytes.Equal(b[rbHeaderLen:], before[rbHeaderLen:]) {
		t.Error("records section changed")
	}
	restoreHeader(b, &orig)
	if !bytes.Equal(b, before) {
		t.Error("restoreHeader did not restore the batch as fetched")
	}
	if _, ok := readBatchHeader(before[:40]); ok {
		t.Error("a partial batch was read as whole")
	}
}

// TestShallowCopyProperties: shallow.copy.enabled (flow-scoped or global)
// sets FlowConfig.ShallowCopy; New refuses it with the provenance header
// on, naming the key and what to write.
func TestShallowCopyProperties(t *testing.T) {
	t.Parallel()
	base := "clusters=A,B\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nA->B.enabled=true\n"
	p := parseString(t, base+"A->B.shallow.copy.enabled=true\nA->B.provenance.header.enabled=false\n")
	if fs := p.Flows(); len(fs) == 0 || !fs[0].ShallowCopy || !fs[0].DisableProvenanceHeader {
		t.Fatalf("flows %+v", p.Flows())
	}
	if _, err := newMirror(t, p.Opts()...); err != nil {
		t.Errorf("New: %v", err)
	}
	if fs := parseString(t, base).Flows(); fs[0].ShallowCopy {
		t.Error("shallow copy on by default")
	}
	p = parseString(t, base+"shallow.copy.enabled=true\n")
	_, err := newMirror(t, p.Opts()...)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "A->B.shallow.copy.enabled" || !strings.Contains(ce.Reason, "provenance.header.enabled=false") {
		t.Errorf("New with the provenance header on = %v", err)
	}
	if _, err := ParseProperties(strings.NewReader(base + "A->B.shallow.copy.enabled=maybe\n")); err == nil || !strings.Contains(err.Error(), "shallow.copy.enabled") {
		t.Errorf("a bad boolean: %v", err)
	}
}

// TestShallowFetchWait: a shallow fetch long-polls for the consumer's
// fetch.max.wait.ms when it names every fetchable partition of its broker,
// and at most 500 ms when one was left out (it may be ready sooner).
func TestShallowFetchWait(t *testing.T) {
	for _, c := range []struct {
		long time.Duration
		held bool
		want time.Duration
	}{
		{fetchMaxWait, false, 5 * time.Second},
		{fetchMaxWait, true, 500 * time.Millisecond},
		{2 * time.Second, false, 2 * time.Second},
		{2 * time.Second, true, 500 * time.Millisecond},
		{100 * time.Millisecond, false, 100 * time.Millisecond},
		{100 * time.Millisecond, true, 100 * time.Millisecond},
	} {
		if got := shallowFetchWait(c.long, c.held); got != c.want {
			t.Errorf("shallowFetchWait(%v, held %v) = %v, want %v", c.long, c.held, got, c.want)
		}
	}
}

// TestShallowIdleFetchesUseConsumerWait: once an idle shallow unit has
// copied everything, its raw fetches wait the source consumer's
// fetch.max.wait.ms (here 1 500 ms), not a fixed 500 ms: raw fetches have
// no fetch session, so each one names every partition and how often an
// idle unit fetches is its idle cost (issue 22). Before, every shallow
// fetch waited 500 ms whatever the user set.
func TestShallowIdleFetchesUseConsumerWait(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's request control (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("idle")
	testcluster.CreateTopic(t, &p.Source, topic, 3, nil)
	testcluster.Produce(t, &p.Source, eventRecords(topic, 0, 0, 10, time.Now())...)
	ids, err := testcluster.Admin(t, &p.Source).ListTopics(context.Background(), topic)
	if err != nil || ids.Error() != nil {
		t.Fatalf("list %s: %v %v", topic, err, ids.Error())
	}
	id := ids[topic].ID
	var mu sync.Mutex
	var waits []int32
	watch := false
	sc := p.Source.Fake
	sc.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		sc.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		for _, rt := range req.Topics {
			if rt.TopicID == id || rt.Topic == topic {
				mu.Lock()
				if watch {
					waits = append(waits, req.MaxWaitMillis)
				}
				mu.Unlock()
				break
			}
		}
		return nil, nil, false
	})
	fc := shallowFlow(p)
	fc.Topics = []string{topic}
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
		Consumer: []kgo.Opt{kgo.FetchMaxWait(1500 * time.Millisecond)}}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}), WithFlow(fc))
	waitReplicated(t, m, 10)
	mu.Lock()
	watch = true
	mu.Unlock()
	testcluster.Eventually(t, 20*time.Second, "two idle fetches", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(waits) >= 2, fmt.Sprint(waits)
	})
	mu.Lock()
	defer mu.Unlock()
	for i, w := range waits {
		if w != 1500 {
			t.Errorf("idle fetch %d waits %d ms, want 1500 (the source consumer's fetch.max.wait.ms); all: %v", i, w, waits)
		}
	}
	if got := m.Status().Flows[0].Records; got != 10 {
		t.Errorf("%d records replicated, want 10", got)
	}
}

// TestShallowNextLook: the shallow loop sleeps until the earliest pause
// ends, at most shallowIdleTick, never a negative time.
func TestShallowNextLook(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		wakeAt time.Time
		want   time.Duration
	}{
		{time.Time{}, shallowIdleTick},
		{now.Add(250 * time.Millisecond), 250 * time.Millisecond},
		{now, 0},
		{now.Add(-time.Second), 0},
		{now.Add(3 * time.Second), shallowIdleTick},
	} {
		if got := shallowNextLook(now, c.wakeAt); got != c.want {
			t.Errorf("shallowNextLook(now, %v) = %v, want %v", c.wakeAt.Sub(now), got, c.want)
		}
	}
}

// TestShallowListOffsetsDoNotHoldTheLoop (regression, found reading the
// shallow loop after the soak's metadata stall): a partition that starts
// at its log start or end has its position listed (ListOffsets) before it
// is fetched. The loop used to wait for that answer, up to the admin
// timeout (10 s) and again at once: while the source did not answer, the
// partitions already running were neither fetched nor produced, nor were
// their acks applied. Now the round runs beside the loop: here the source
// holds every ListOffsets request, resolvePositions returns at once, a
// second call sends nothing while the round is in flight, and the answer,
// once the source gives it, resolves the position (a partition restarted
// meanwhile keeps its own).
func TestShallowListOffsetsDoNotHoldTheLoop(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's request control (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("positions")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	recs := eventRecords(topic, 0, 0, 7, time.Now())
	testcluster.Produce(t, &p.Source, recs...)
	released := make(chan struct{})
	release := sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	var held atomic.Int32
	sc := p.Source.Fake
	sc.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		sc.KeepControl()
		select {
		case <-released:
		default:
			held.Add(1)
			sc.SleepControl(func() { <-released })
		}
		return nil, nil, false
	})
	cl := testcluster.Client(t, &p.Source)
	s := &shallow{u: &unit{env: &unitEnv{cfg: FlowConfig{AdminTimeout: 20 * time.Second}}, cons: cl},
		parts: map[tp]*shPart{}, posCh: make(chan shPositions, 1), toResolve: true}
	k0, k1 := tp{topic, 0}, tp{topic, 1}
	newPart := func(pos int64) *shPart {
		return &shPart{f: &feed{gate: newProduceGate()}, pos: pos}
	}
	s.parts[k0], s.parts[k1] = newPart(posEnd), newPart(posStart)
	begin := time.Now()
	s.resolvePositions(context.Background())
	if d := time.Since(begin); d > time.Second || !s.posBusy || s.pending != 1 {
		t.Fatalf("resolvePositions took %v (busy %v, %d pending), want an immediate return with one round in flight", d, s.posBusy, s.pending)
	}
	testcluster.Eventually(t, 10*time.Second, "the source holds the round", func() (bool, string) {
		return held.Load() > 0, fmt.Sprint(held.Load())
	})
	s.toResolve = true
	s.resolvePositions(context.Background())
	if s.pending != 1 {
		t.Fatalf("%d rounds in flight after a second call, want 1", s.pending)
	}
	s.parts[k1].gen++ // restarted meanwhile, at the log end: the next round asks for it
	s.parts[k1].pos = posEnd
	release()
	var r shPositions
	select {
	case r = <-s.posCh:
	case <-time.After(20 * time.Second):
		t.Fatal("no answer after the source was released")
	}
	s.pending--
	s.posBusy = false
	s.applyPositions(r)
	if got := s.parts[k0].pos; got != 7 {
		t.Errorf("partition 0 resolved to %d, want 7 (its log end)", got)
	}
	if got := s.parts[k1].pos; got != posEnd {
		t.Errorf("partition 1 (restarted meanwhile) at %d, want still posEnd (the answer was its log start's)", got)
	}
	if !s.toResolve {
		t.Error("partition 1's new position is not asked for")
	}
}

// TestShallowFailedPartitionReleasesBuffer: two partitions of one topic
// fail on a record of the normal path (here a resume point inside their
// first batch: its records go through the unit's kgo producer, which the
// target refuses with INVALID_RECORD, a record's own error that waits for
// an operator). The batches the shallow loop had fetched after that record
// stayed queued, counted in the unit's buffer, until the partition
// restarted: with the two queues filling the buffer, the unit fetched
// nothing more, and another topic of the same unit stopped replicating.
// They are dropped once the partition is stopped; the healthy topic's
// records arrive.
func TestShallowFailedPartitionReleasesBuffer(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control (KMIRROR_*_BROKERS name real brokers)")
	}
	stuck, healthy := p.Topic("stuck"), p.Topic("healthy")
	testcluster.CreateTopic(t, &p.Source, stuck, 2, nil)
	testcluster.CreateTopic(t, &p.Source, healthy, 1, nil)
	pad := strings.Repeat("x", 1000)
	src := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for b := 0; b < 30; b++ { // 30 batches of 40 records of 1 kB per partition
		var rs []*kgo.Record
		for part := int32(0); part < 2; part++ {
			for i := 0; i < 40; i++ {
				rs = append(rs, &kgo.Record{Topic: stuck, Partition: part, Value: []byte(fmt.Sprintf("%d-%d-%s", b, i, pad))})
			}
		}
		if err := src.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The remote topic and the resume points in advance: each partition
	// resumes at offset 5, inside its first batch.
	remote := p.Source.Alias + "." + stuck
	testcluster.CreateTopic(t, &p.Target, remote, 2, nil)
	compact := "compact"
	testcluster.CreateTopic(t, &p.Target, connectoffsets.TopicName(p.Source.Alias), 25, map[string]*string{"cleanup.policy": &compact})
	for part := int32(0); part < 2; part++ {
		storeResumePoint(t, p, stuck, part, 4)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := testcluster.Admin(t, &p.Target).ListTopics(ctx, remote)
	if err != nil || td[remote].Err != nil {
		t.Fatalf("remote topic %s: %v %v", remote, err, td[remote].Err)
	}
	remoteID := [16]byte(td[remote].ID)
	// The target refuses the records kgo produces to the stuck topic (an
	// idempotent producer's batches; copied batches carry no producer id).
	c := p.Target.Fake
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ProduceRequest)
		refuse := false
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				h, ok := readBatchHeader(rp.Records)
				if ok && h.producerID >= 0 && (rt.TopicID == remoteID || rt.Topic == remote) {
					refuse = true
				}
			}
		}
		if !refuse {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.NotLeaderForPartition.Code // retried: the resume points kgo sends alongside
				if rt.TopicID == remoteID || rt.Topic == remote {
					sp.ErrorCode = kerr.InvalidRecord.Code
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	fc := shallowFlow(p)
	fc.Topics = []string{regexp.QuoteMeta(stuck), regexp.QuoteMeta(healthy)}
	fc.Tasks = 1
	fc.MaxBufferedBytes = 1 << 20 // the unit's buffer: 1 MiB, a partition's share 512 KiB
	fc.FetchMaxPartitionBytes = 256 << 10
	m, _ := trStart(t, p, fc)
	testcluster.Eventually(t, 30*time.Second, "both partitions of the stuck topic failed", func() (bool, string) {
		n := 0
		for _, ps := range m.Status().Flows[0].Partitions {
			if ps.Topic == stuck && ps.State == StateFailed {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%+v", m.Status().Flows[0].Partitions)
	})
	var want []*kgo.Record
	for i := 0; i < 10; i++ {
		want = append(want, &kgo.Record{Topic: healthy, Value: []byte(fmt.Sprint("healthy-", i))})
	}
	testcluster.Produce(t, &p.Source, want...)
	remoteHealthy := p.Source.Alias + "." + healthy
	testcluster.Eventually(t, 30*time.Second, "the healthy topic replicated", func() (bool, string) {
		for _, ps := range m.Status().Flows[0].Partitions {
			if ps.Topic == healthy {
				return ps.Replicated == 10, fmt.Sprintf("%+v", ps)
			}
		}
		return false, "no status of the healthy topic"
	})
	got := testcluster.ReadAll(t, &p.Target, remoteHealthy)[0]
	var vs []string
	for _, r := range got {
		vs = append(vs, string(r.Value))
	}
	if fmt.Sprint(vs) != "[healthy-0 healthy-1 healthy-2 healthy-3 healthy-4 healthy-5 healthy-6 healthy-7 healthy-8 healthy-9]" {
		t.Errorf("healthy topic on the target: %v", vs)
	}
	if n := len(testcluster.ReadAll(t, &p.Target, remote)); n != 0 {
		t.Errorf("the stuck topic has records on %d target partitions, want none", n)
	}
}
