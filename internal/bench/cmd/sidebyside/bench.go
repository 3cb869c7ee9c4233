package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/bench/benchproc"
	"github.com/kmirror/kmirror/internal/bench/events"
)

// bench holds the admin clients of both clusters for one invocation.
type bench struct {
	c       *config
	runID   string
	started time.Time
	log     io.Writer

	srcCl, dstCl   *kgo.Client
	srcAdm, dstAdm *kadm.Client
}

func newBench(ctx context.Context, c *config, log io.Writer) (*bench, error) {
	b := &bench{c: c, log: log, started: time.Now()}
	// Lower-case letters and digits only: the ID goes into cluster aliases,
	// which MM2 puts into topic names and property keys.
	b.runID = "sbs" + strconv.FormatInt(b.started.Unix()%(1<<31), 36)
	var err error
	if b.srcCl, err = kgo.NewClient(kgo.SeedBrokers(c.source...)); err != nil {
		return nil, fmt.Errorf("source client: %w", err)
	}
	if b.dstCl, err = kgo.NewClient(kgo.SeedBrokers(c.target...)); err != nil {
		b.srcCl.Close()
		return nil, fmt.Errorf("target client: %w", err)
	}
	b.srcAdm, b.dstAdm = kadm.NewClient(b.srcCl), kadm.NewClient(b.dstCl)
	for name, adm := range map[string]*kadm.Client{"source": b.srcAdm, "target": b.dstAdm} {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err := adm.BrokerMetadata(cctx)
		cancel()
		if err != nil {
			b.close()
			return nil, fmt.Errorf("%s cluster does not answer (internal/realkafka/kafka.sh start?): %w", name, err)
		}
	}
	return b, nil
}

func (b *bench) close() {
	b.srcCl.Close()
	b.dstCl.Close()
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "%s sidebyside: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// result is one run of one system on one workload.
type result struct {
	Workload      workload
	System        string
	Rep           int
	Order         int // 1-based position within its repetition
	Start         time.Time
	Load1         float64 // 1-minute load average when the run started
	StartupS      float64 // process start -> first record appended on the target
	CopyS         float64 // first -> last bulk record appended on the target
	RecordsPerS   float64
	MBPerS        float64 // payload (key+value+headers) bytes, 10^6 bytes per second
	LatP50Ms      float64 // live phase: target append - source append
	LatP99Ms      float64
	LatMaxMs      float64
	LiveRecords   int
	PeakRSSMB     float64 // VmHWM of the process over the whole run, MiB
	CPUS          float64 // utime+stime of the process over the whole run
	CopyCPUS      float64 // CPU seconds between the first and the last bulk append (sampled every 50 ms)
	TargetRecords int64   // bulk records on the target (more than Records: duplicates)
	Codec         string  // producer codec the system was given ("default": no setting)
	TargetCodecs  string  // codecs of the target's bulk batches, read from the first and last record of every partition
	PayloadBytes  int64   // key+value+header bytes of the bulk topic's records
	CPUPerGB      float64 // CopyCPUS per 10^9 payload bytes
	SourceBytes   int64   // DescribeLogDirs size of the source bulk topic
	TargetBytes   int64   // DescribeLogDirs size of the remote bulk topic, after the process stopped
	StoredRatio   float64 // TargetBytes / SourceBytes
	Err           string
}

func timestampConfig() map[string]*string {
	v := "LogAppendTime"
	return map[string]*string{"message.timestamp.type": &v}
}

func (b *bench) createTopic(ctx context.Context, adm *kadm.Client, name string, configs map[string]*string) error {
	_, err := adm.CreateTopic(ctx, int32(b.c.partitions), 1, configs, name)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

// randomValues fills a fresh value per record: incompressible bytes, so a
// compression codec cannot make one system's work smaller than another's.
type valueSource struct {
	mu  sync.Mutex
	rng *rand.ChaCha8
}

func newValueSource(seed byte) *valueSource {
	var s [32]byte
	s[0] = seed
	return &valueSource{rng: rand.NewChaCha8(s)}
}

func (v *valueSource) value(n int) []byte {
	b := make([]byte, n)
	v.mu.Lock()
	_, _ = v.rng.Read(b)
	v.mu.Unlock()
	return b
}

// recordSource makes the records of a workload: random values, or the
// order events of internal/bench/events. seed 1 is the bulk topic, 2 the
// live topics.
type recordSource struct {
	w      workload
	random *valueSource
	orders *events.Orders
}

func newRecordSource(w workload, seed byte) *recordSource {
	if w.Kind == kindJSON {
		return &recordSource{w: w, orders: events.NewOrders(uint64(seed))}
	}
	return &recordSource{w: w, random: newValueSource(seed)}
}

// record fills r's key, value and headers for record i, keyed "%010d" for
// random values and by customer for order events.
func (s *recordSource) record(r *kgo.Record, i int) {
	if s.orders != nil {
		r.Key, r.Value, r.Headers = s.orders.Record(int64(i))
		return
	}
	r.Key, r.Value = fmt.Appendf(nil, "%010d", i), s.random.value(s.w.Size)
}

// codec returns the franz-go codec of a Kafka compression.type name.
func codec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// codecNames are Kafka's names of the batch codec IDs (the attributes'
// low three bits).
var codecNames = []string{"none", "gzip", "snappy", "lz4", "zstd"}

func codecName(id uint8) string {
	if int(id) < len(codecNames) {
		return codecNames[id]
	}
	return "codec" + strconv.Itoa(int(id))
}

// preload writes w.Records records to topic, record i to partition
// i%partitions, compressed with w.Codec, and returns their payload bytes
// (key + value + headers).
func (b *bench) preload(ctx context.Context, topic string, w workload) (int64, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(b.c.source...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec(w.Codec)), kgo.MaxBufferedBytes(64 << 20)}
	if b.c.sourceBatch > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(b.c.sourceBatch)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	rs := newRecordSource(w, 1)
	var failed error
	var mu sync.Mutex
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			failed = errors.Join(failed, err)
			mu.Unlock()
		}
	}
	start := time.Now()
	step := max(w.Records/10, 1)
	var payload int64
	for i := 0; i < w.Records; i++ {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		r := &kgo.Record{Topic: topic, Partition: int32(i % b.c.partitions)}
		rs.record(r, i)
		payload += int64(events.PayloadBytes(r.Key, r.Value, r.Headers))
		cl.Produce(ctx, r, promise)
		if (i+1)%step == 0 {
			b.logf("preload %s: %d/%d records", topic, i+1, w.Records)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if failed != nil {
		return 0, fmt.Errorf("preload %s: %w", topic, failed)
	}
	b.logf("preload %s: %d records (%s), %d payload bytes in %.1f s", topic, w.Records, w, payload, time.Since(start).Seconds())
	return payload, nil
}

// logDirBytes returns the size of topic's log (the sum over its partitions
// of DescribeLogDirs' segment sizes; of the largest replica where a
// partition has several).
func logDirBytes(ctx context.Context, adm *kadm.Client, topic string, partitions int) (int64, error) {
	ps := map[int32]struct{}{}
	for p := range partitions {
		ps[int32(p)] = struct{}{}
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: ps})
	if err != nil {
		return 0, fmt.Errorf("describe log dirs of %s: %w", topic, err)
	}
	sizes := map[int32]int64{}
	var dirErr error
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			dirErr = fmt.Errorf("log dir %s of broker %d: %w", d.Dir, d.Broker, d.Err)
			return
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic && !p.IsFuture {
				sizes[p.Partition] = max(sizes[p.Partition], p.Size)
			}
		})
	})
	if dirErr != nil {
		return 0, dirErr
	}
	if len(sizes) != partitions {
		return 0, fmt.Errorf("describe log dirs of %s: %d of %d partitions described", topic, len(sizes), partitions)
	}
	var sum int64
	for _, n := range sizes {
		sum += n
	}
	return sum, nil
}

// rotate returns the systems starting at index k: each repetition starts
// with another system, so none always runs first (cold caches) or last.
func rotate(systems []string, k int) []string {
	k %= len(systems)
	return append(slices.Clone(systems[k:]), systems[:k]...)
}

// runAll runs every workload, repetition and system. A failing run is kept
// with its error and the others continue; the error returned is the first
// one, or the context's.
func (b *bench) runAll(ctx context.Context) ([]result, error) {
	var results []result
	var firstErr error
	for wi, w := range b.c.workloads {
		bulk := fmt.Sprintf("%s-w%d-bulk", b.runID, wi+1)
		if err := b.createTopic(ctx, b.srcAdm, bulk, nil); err != nil {
			return results, err
		}
		payload, err := b.preload(ctx, bulk, w)
		if err != nil {
			b.deleteTopics(b.srcAdm, []string{bulk})
			return results, err
		}
		for rep := 1; rep <= b.c.reps; rep++ {
			for i, sys := range rotate(b.c.systems, rep-1) {
				if ctx.Err() != nil {
					break
				}
				r := b.runOne(ctx, wi, w, bulk, payload, sys, rep)
				r.Order = i + 1
				if r.Err != "" {
					b.logf("%s rep %d on %s: FAILED: %s", sys, rep, w, r.Err)
					if firstErr == nil {
						firstErr = fmt.Errorf("%s rep %d on %s: %s", sys, rep, w, r.Err)
					}
				} else {
					b.logf("%s rep %d on %s: %.0f records/s, %.1f MB/s, p50 %.0f ms, p99 %.0f ms, peak RSS %.0f MiB, CPU %.1f s, copy CPU %.2f s/GB, startup %.1f s, codec %s -> %s, target/source bytes %.2f",
						sys, rep, w, r.RecordsPerS, r.MBPerS, r.LatP50Ms, r.LatP99Ms, r.PeakRSSMB, r.CPUS, r.CPUPerGB, r.StartupS, r.Codec, r.TargetCodecs, r.StoredRatio)
				}
				results = append(results, r)
			}
		}
		if !b.c.keep {
			b.deleteTopics(b.srcAdm, []string{bulk})
		}
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	return results, firstErr
}

// deleteTopics deletes the named topics, logging failures.
func (b *bench) deleteTopics(adm *kadm.Client, names []string) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := adm.DeleteTopics(ctx, names...)
	if err != nil {
		b.logf("delete topics: %v", err)
		return
	}
	for _, r := range rs.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			b.logf("delete topic %s: %v", r.Topic, r.Err)
		}
	}
}

// cleanup deletes the topics and groups whose names contain tag, on both
// clusters: the run's remote topics, offset-syncs topic, Connect internal
// topics and groups, and its live topic (whose name holds the tag too). It
// lists again every 2 s (a deleted topic stays listed for a moment) and
// deletes again, for up to 10 s, then logs what is left.
func (b *bench) cleanup(tag string, extra ...string) {
	if b.c.keep {
		return
	}
	for _, c := range []struct {
		name string
		adm  *kadm.Client
	}{{"source", b.srcAdm}, {"target", b.dstAdm}} {
		var left []string
		for attempt := 0; attempt < 6; attempt++ {
			if attempt > 0 {
				time.Sleep(2 * time.Second)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			td, err := c.adm.ListTopics(ctx)
			cancel()
			if err != nil {
				b.logf("cleanup: list topics on %s: %v", c.name, err)
				continue
			}
			left = left[:0]
			for _, n := range td.Names() {
				if strings.Contains(n, tag) || slices.Contains(extra, n) {
					left = append(left, n)
				}
			}
			if len(left) == 0 {
				break
			}
			b.deleteTopics(c.adm, left)
		}
		if len(left) > 0 {
			b.logf("cleanup: topics left on %s: %s", c.name, strings.Join(left, ", "))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if gs, err := c.adm.ListGroups(ctx); err == nil {
			var groups []string
			for _, g := range gs.Groups() {
				if strings.Contains(g, tag) {
					groups = append(groups, g)
				}
			}
			if len(groups) > 0 {
				_, _ = c.adm.DeleteGroups(ctx, groups...)
			}
		}
		cancel()
	}
}

// sumEnds returns the sum of the end offsets of topic.
func sumEnds(ctx context.Context, adm *kadm.Client, topic string) (int64, map[int32]int64, error) {
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, nil, err
	}
	if err := lo.Error(); err != nil {
		return 0, nil, err
	}
	var sum int64
	ends := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) {
		sum += o.Offset
		ends[o.Partition] = o.Offset
	})
	return sum, ends, nil
}

// waitFor polls topic on the target every 100 ms until it holds want
// records. It fails when p exits or after the timeout.
func (b *bench) waitFor(ctx context.Context, p *benchproc.Proc, topic string, want int64) (int64, error) {
	deadline := time.Now().Add(b.c.timeout)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var last int64
	lastLog := time.Now()
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, _, err := sumEnds(cctx, b.dstAdm, topic)
		cancel()
		if err == nil {
			if n >= want {
				return n, nil
			}
			last = n
		}
		if done, werr := p.Exited(); done {
			return last, fmt.Errorf("%s exited (%v) with %d of %d records on %s; log %s:\n%s", p.Name, werr, last, want, topic, p.LogPath, p.LogTail(20))
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("%d of %d records on %s after %s (-timeout); log %s:\n%s", last, want, topic, b.c.timeout, p.LogPath, p.LogTail(20))
		}
		if time.Since(lastLog) > 30*time.Second {
			b.logf("  %s: %d/%d records on %s", p.Name, n, want, topic)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-t.C:
		}
	}
}

// produceLive writes n records of w at rate records/s to topic (round robin
// over partitions), keys "L%09d", values and headers as in the bulk topic,
// compressed with w.Codec.
func (b *bench) produceLive(ctx context.Context, topic string, n, rate int, w workload) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.c.source...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec(w.Codec)), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	rs := newRecordSource(w, 2)
	var failed error
	var mu sync.Mutex
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			failed = errors.Join(failed, err)
			mu.Unlock()
		}
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	for sent := 0; sent < n; {
		due := min(int(time.Since(start).Seconds()*float64(rate))+1, n)
		for ; sent < due; sent++ {
			r := &kgo.Record{Topic: topic, Partition: int32(sent % b.c.partitions)}
			rs.record(r, sent)
			r.Key = fmt.Appendf(nil, "L%09d", sent) // unique: the latency join is by key
			cl.Produce(ctx, r, promise)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	return failed
}

// consume reads topic from from[p] (inclusive) to until[p] (exclusive) for
// every partition in until, calling fn for each record.
func consume(ctx context.Context, seeds []string, topic string, from, until map[int32]int64, fn func(*kgo.Record)) error {
	offsets := map[int32]kgo.Offset{}
	pending := map[int32]bool{}
	for p, u := range until {
		if from[p] < u {
			offsets[p] = kgo.NewOffset().At(from[p])
			pending[p] = true
		}
	}
	if len(pending) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for len(pending) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("read %s[%d]: %w", topic, p, err) })
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !pending[r.Partition] || r.Offset >= until[r.Partition] {
				return
			}
			fn(r)
			if r.Offset >= until[r.Partition]-1 {
				delete(pending, r.Partition)
				cl.PauseFetchPartitions(map[string][]int32{topic: {r.Partition}})
			}
		})
	}
	return nil
}

// appendSpan returns the smallest and largest record timestamp of topic
// (append times: the target topics use LogAppendTime), reading the first
// and the last record of every partition, and the names of the codecs of
// the batches those records came in, sorted and joined by "+".
func appendSpan(ctx context.Context, seeds []string, topic string, ends map[int32]int64) (first, last time.Time, codecs string, err error) {
	zero, one, endm1 := map[int32]int64{}, map[int32]int64{}, map[int32]int64{}
	for p, e := range ends {
		if e > 0 {
			zero[p], one[p], endm1[p] = 0, 1, e-1
		}
	}
	seen := map[string]bool{}
	err = consume(ctx, seeds, topic, zero, one, func(r *kgo.Record) {
		seen[codecName(r.Attrs.CompressionType())] = true
		if first.IsZero() || r.Timestamp.Before(first) {
			first = r.Timestamp
		}
	})
	if err != nil {
		return
	}
	err = consume(ctx, seeds, topic, endm1, ends, func(r *kgo.Record) {
		seen[codecName(r.Attrs.CompressionType())] = true
		if r.Timestamp.After(last) {
			last = r.Timestamp
		}
	})
	names := slices.Sorted(maps.Keys(seen))
	return first, last, strings.Join(names, "+"), err
}

// liveLatencies joins the source and target live topics by key and returns
// target append time - source append time per record, in ms, sorted.
func (b *bench) liveLatencies(ctx context.Context, live, remoteLive string) ([]float64, error) {
	_, srcEnds, err := sumEnds(ctx, b.srcAdm, live)
	if err != nil {
		return nil, err
	}
	_, dstEnds, err := sumEnds(ctx, b.dstAdm, remoteLive)
	if err != nil {
		return nil, err
	}
	srcTS := map[string]time.Time{}
	if err := consume(ctx, b.c.source, live, map[int32]int64{}, srcEnds, func(r *kgo.Record) {
		srcTS[string(r.Key)] = r.Timestamp
	}); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var lat []float64
	var missing int
	if err := consume(ctx, b.c.target, remoteLive, map[int32]int64{}, dstEnds, func(r *kgo.Record) {
		k := string(r.Key)
		if seen[k] {
			return // a duplicate: the first copy counts
		}
		seen[k] = true
		ts, ok := srcTS[k]
		if !ok {
			missing++
			return
		}
		lat = append(lat, float64(r.Timestamp.Sub(ts).Microseconds())/1000)
	}); err != nil {
		return nil, err
	}
	if missing > 0 || len(lat) != len(srcTS) {
		return nil, fmt.Errorf("live topics do not match: %d source records, %d matched, %d unknown keys on the target", len(srcTS), len(lat), missing)
	}
	slices.Sort(lat)
	return lat, nil
}

// percentile returns the nearest-rank percentile q (0..1] of sorted values.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// runOne replicates the bulk topic (and a live topic) with one system.
func (b *bench) runOne(ctx context.Context, wi int, w workload, bulk string, payload int64, sys string, rep int) (r result) {
	r = result{Workload: w, System: sys, Rep: rep, Start: time.Now(), Load1: benchproc.LoadAvg1(), Codec: b.c.codecFor(sys, w), PayloadBytes: payload}
	fail := func(err error) result {
		r.Err = strings.ReplaceAll(err.Error(), "\n", " | ")
		return r
	}
	tag := fmt.Sprintf("%sw%d%sr%d", b.runID, wi+1, sys, rep)
	srcAlias, dstAlias := tag+"src", tag+"dst"
	live := fmt.Sprintf("%s-w%d-live-%s-r%d", b.runID, wi+1, sys, rep)
	topics := []string{bulk}
	if b.c.liveRecords > 0 {
		topics = append(topics, live)
	}
	defer b.cleanup(tag, live)
	if b.c.liveRecords > 0 {
		if err := b.createTopic(ctx, b.srcAdm, live, timestampConfig()); err != nil {
			return fail(err)
		}
	}
	for _, t := range topics {
		if err := b.createTopic(ctx, b.dstAdm, srcAlias+"."+t, timestampConfig()); err != nil {
			return fail(err)
		}
	}
	b.logf("%s rep %d on %s: start (aliases %s -> %s, load %.2f)", sys, rep, w, srcAlias, dstAlias, r.Load1)
	argv, err := b.command(sys, r.Codec, srcAlias, dstAlias, topics, tag)
	if err != nil {
		return fail(err)
	}
	p, err := benchproc.Start(sys, argv, b.c.kmirrorEnv.For(sys), filepath.Join(b.c.workdir, tag+".log"))
	if err != nil {
		return fail(err)
	}
	defer p.Stop(60 * time.Second)

	remoteBulk := srcAlias + "." + bulk
	n, err := b.waitFor(ctx, p, remoteBulk, int64(w.Records))
	if err != nil {
		return fail(err)
	}
	r.TargetRecords = n
	if b.c.liveRecords > 0 {
		if err := b.produceLive(ctx, live, b.c.liveRecords, b.c.liveRate, w); err != nil {
			return fail(fmt.Errorf("produce live records: %w", err))
		}
		if _, err := b.waitFor(ctx, p, srcAlias+"."+live, int64(b.c.liveRecords)); err != nil {
			return fail(err)
		}
	}
	u, err := p.Usage()
	if err != nil {
		return fail(fmt.Errorf("read /proc of %s: %w", sys, err))
	}
	r.PeakRSSMB, r.CPUS = float64(u.PeakRSSKB)/1024, u.CPU
	p.Stop(60 * time.Second)

	_, ends, err := sumEnds(ctx, b.dstAdm, remoteBulk)
	if err != nil {
		return fail(err)
	}
	first, last, codecs, err := appendSpan(ctx, b.c.target, remoteBulk, ends)
	if err != nil {
		return fail(err)
	}
	r.TargetCodecs = codecs
	// Sizes after the process stopped: every record it wrote is in the
	// target's log, and the source topic is not written any more.
	if r.SourceBytes, err = logDirBytes(ctx, b.srcAdm, bulk, b.c.partitions); err != nil {
		return fail(err)
	}
	if r.TargetBytes, err = logDirBytes(ctx, b.dstAdm, remoteBulk, b.c.partitions); err != nil {
		return fail(err)
	}
	if r.SourceBytes > 0 {
		r.StoredRatio = float64(r.TargetBytes) / float64(r.SourceBytes)
	}
	r.StartupS = first.Sub(p.Started).Seconds()
	r.CopyCPUS = p.CPUAt(last) - p.CPUAt(first)
	copyS := max(last.Sub(first).Seconds(), 0.001)
	r.CopyS = copyS
	r.RecordsPerS = float64(w.Records) / copyS
	r.MBPerS = float64(payload) / copyS / 1e6
	if payload > 0 {
		r.CPUPerGB = r.CopyCPUS / (float64(payload) / 1e9)
	}
	if b.c.liveRecords > 0 {
		lat, err := b.liveLatencies(ctx, live, srcAlias+"."+live)
		if err != nil {
			return fail(err)
		}
		r.LiveRecords = len(lat)
		r.LatP50Ms, r.LatP99Ms, r.LatMaxMs = percentile(lat, 0.50), percentile(lat, 0.99), lat[len(lat)-1]
	}
	return r
}

// command writes the configuration of sys and returns its command line.
// codec is the producer codec to give it ("default": no setting).
func (b *bench) command(sys, codec, srcAlias, dstAlias string, topics []string, tag string) ([]string, error) {
	switch sys {
	case sysBare:
		return []string{b.c.barepipe, "-source", strings.Join(b.c.source, ","), "-target", strings.Join(b.c.target, ","),
			"-topics", strings.Join(topics, ","), "-prefix", srcAlias, "-compression", codec}, nil
	case sysKmirror, sysShallow, sysBase, sysMM2:
		props := filepath.Join(b.c.workdir, tag+".properties")
		text := b.properties(srcAlias, dstAlias, topics, codec)
		if sys == sysShallow {
			text += fmt.Sprintf("%s->%s.shallow.copy.enabled = true\n%s->%s.provenance.header.enabled = false\n", srcAlias, dstAlias, srcAlias, dstAlias)
		}
		if err := os.WriteFile(props, []byte(text), 0o644); err != nil {
			return nil, err
		}
		if sys != sysMM2 {
			bin := b.c.mirrormaker
			if sys == sysBase {
				bin = b.c.baseBinary
			}
			return []string{bin, "-config", props, "-clusters", dstAlias, "-log-level", "warn"}, nil
		}
		log4j := filepath.Join(b.c.workdir, "log4j2-mm2.properties")
		if err := os.WriteFile(log4j, []byte(mm2Log4j), 0o644); err != nil {
			return nil, err
		}
		argv := []string{"java"}
		argv = append(argv, strings.Fields(b.c.mm2JavaOpts)...)
		argv = append(argv, "-Dlog4j2.configurationFile="+log4j, "-cp", b.c.classpath,
			"org.apache.kafka.connect.mirror.MirrorMaker", props, "--clusters", dstAlias)
		return argv, nil
	}
	return nil, fmt.Errorf("unknown system %q", sys)
}

const mm2Log4j = `status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
`

// properties is the MM2 dedicated-mode file that both MM2 and kmirror run:
// one flow, the run's topics only, replication factor 1, and everything but
// record replication and offset syncs switched off (heartbeats,
// checkpoints, group offset sync, topic config and ACL sync, replication of
// other heartbeats topics of the shared source cluster). codec is the
// target producer's compression.type; "default" writes none.
func (b *bench) properties(src, dst string, topics []string, codec string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# Written by internal/bench/cmd/sidebyside for one run.\n")
	fmt.Fprintf(&s, "clusters = %s, %s\n", src, dst)
	fmt.Fprintf(&s, "%s.bootstrap.servers = %s\n", src, strings.Join(b.c.source, ","))
	fmt.Fprintf(&s, "%s.bootstrap.servers = %s\n", dst, strings.Join(b.c.target, ","))
	fmt.Fprintf(&s, "%s->%s.enabled = true\n", src, dst)
	fmt.Fprintf(&s, "%s->%s.enabled = false\n", dst, src)
	fmt.Fprintf(&s, "%s->%s.topics = %s\n", src, dst, strings.Join(topics, ", "))
	if codec != "default" {
		fmt.Fprintf(&s, "%s.producer.compression.type = %s\n", dst, codec)
	}
	fmt.Fprintf(&s, "tasks.max = %d\n", b.c.mm2Tasks)
	for _, k := range []string{"replication.factor", "checkpoints.topic.replication.factor", "heartbeats.topic.replication.factor",
		"offset-syncs.topic.replication.factor", "offset.storage.replication.factor", "status.storage.replication.factor",
		"config.storage.replication.factor"} {
		fmt.Fprintf(&s, "%s = 1\n", k)
	}
	for _, k := range []string{"emit.heartbeats.enabled", "emit.checkpoints.enabled", "sync.group.offsets.enabled",
		"refresh.groups.enabled", "sync.topic.configs.enabled", "sync.topic.acls.enabled", "heartbeats.replication.enabled"} {
		fmt.Fprintf(&s, "%s = false\n", k)
	}
	return s.String()
}
