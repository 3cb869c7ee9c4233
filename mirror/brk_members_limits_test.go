package mirror

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// valueForBatch returns a value of incompressible bytes whose keyless,
// headerless record is exactly size bytes as a one-record batch.
func valueForBatch(t *testing.T, size int64, seed byte) []byte {
	t.Helper()
	for n := int(size) - 80; n < int(size); n++ {
		if recordBatchSize(&kgo.Record{Value: make([]byte, n)}) == size {
			return randomBytes(n, seed)
		}
	}
	t.Fatalf("no value length gives a %d-byte batch", size)
	return nil
}

// TestProvenanceHeaderOverCopiedLimitAdvice (regression): a source topic
// with max.message.bytes=4000 holds a record of exactly 4000 bytes as a
// batch; config sync copies 4000 to the remote topic, and the provenance
// header (26 bytes) makes the copy 4026. The error told the operator to
// "raise that setting", the remote topic's: config sync set it back to
// 4000 within one sync interval (the remote topic's override read 4000
// again), so the next such record failed the same way. The error now says
// the header pushed it over, and to raise the source topic's limit (or
// exclude the key from config sync); doing so copies every record.
func TestProvenanceHeaderOverCopiedLimitAdvice(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("atlimit")
	remote := p.Source.Alias + "." + topic
	limit := "4000"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
	a, big, c := []byte("a"), valueForBatch(t, 4000, 7), []byte("c")
	cl := testcluster.Client(t, &p.Source, kgo.ProducerBatchCompression(kgo.NoCompression()))
	for _, v := range [][]byte{a, big, c} {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatalf("producing %d bytes: %v", len(v), err)
		}
	}
	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 1", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && ps.Replicated == 1, fmt.Sprintf("%+v", ps)
	})
	ps := partStatus(m, 0)
	// The header's size depends on the source cluster's ID (26 bytes on
	// kfake, 45 on a real broker): the record is 4000 bytes and the header.
	var size, header int64
	if sm := regexp.MustCompile(`is (\d+) bytes as a record batch.*it fits without the (\d+) bytes of the kmirror-provenance header`).FindStringSubmatch(ps.Error); sm != nil {
		size, _ = strconv.ParseInt(sm[1], 10, 64)
		header, _ = strconv.ParseInt(sm[2], 10, 64)
	}
	if header <= 0 || size != 4000+header {
		t.Fatalf("partition 0 error = %q, want a record of 4000 bytes and the header's size", ps.Error)
	}
	for _, want := range []string{
		fmt.Sprintf("the record at offset 1 is %d bytes as a record batch, above max.message.bytes of %s on %s (4000 bytes)", size, remote, p.Target.Alias),
		"raise the source topic's max.message.bytes",
		"exclude max.message.bytes from config sync",
	} {
		if !strings.Contains(ps.Error, want) {
			t.Fatalf("partition 0 error = %q, want it to say %q", ps.Error, want)
		}
	}
	if got, want := targetContents(t, p, remote), wantContents(a); !equalStrings(got, want) {
		t.Fatalf("target holds %v, want exactly %v while FAILED", got, want)
	}
	// The advice followed: the source topic's limit raised. Config sync
	// copies it, the unit reads it and restarts the partition.
	setTopicConfig(t, &p.Source, topic, "max.message.bytes", "8000")
	testcluster.Eventually(t, 30*time.Second, "every record replicated", func() (bool, string) {
		ps := partStatus(m, 0)
		if ps.State == StateFailed {
			m.RestartFailed(p.Source.Alias+"->"+p.Target.Alias, topic, 0)
		}
		return ps.State == StateRunning && ps.Replicated == 3, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetContents(t, p, remote), wantContents(a, big, c); !equalStrings(got, want) {
		t.Fatalf("target holds %v, want exactly %v", got, want)
	}
	if got := describeOverrides(t, testcluster.Admin(t, &p.Target), remote)["max.message.bytes"]; got != "8000" {
		t.Fatalf("remote topic's max.message.bytes = %q, want the source's 8000", got)
	}
}

// TestRecordBatchSizeHugeHeaders: records whose headers need multi-byte
// varints (300 headers, a 20 000-byte key, an empty key, null header
// values, a 70 000-byte header value) are sized as franz-go sizes them.
func TestRecordBatchSizeHugeHeaders(t *testing.T) {
	t.Parallel()
	many := make([]kgo.RecordHeader, 300)
	for i := range many {
		many[i] = kgo.RecordHeader{Key: fmt.Sprintf("h%03d", i), Value: randomBytes(i, byte(i))}
		if i%7 == 0 {
			many[i].Value = nil
		}
	}
	checkBatchSizes(t, []*kgo.Record{
		{Key: []byte{}, Value: []byte("x"), Headers: many},
		{Key: randomBytes(20000, 8), Headers: []kgo.RecordHeader{{Key: strings.Repeat("k", 200), Value: randomBytes(70000, 9)}}},
		{Headers: []kgo.RecordHeader{{Key: ""}}},
	})
}

// TestKeylessRecordExactlyOnceOtherPartitionCopied: exactly once, the
// remote topic (compacted) refuses the batch holding a keyless record of
// partition 0. The transaction holding it aborts; partition 0 fails at
// that record, and partition 1 of the same unit is still copied exactly
// once; once the target accepts the record, both are exact copies.
func TestKeylessRecordExactlyOnceOtherPartitionCopied(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection")
	}
	topic := p.Topic("keyless")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, compactConfig()) // and so the remote topic
	cl := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r0 := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i))}
			if i == 4 {
				r0.Key = nil
			}
			r1 := &kgo.Record{Topic: topic, Partition: 1, Key: []byte("x"), Value: []byte(fmt.Sprint("p1-", i))}
			if err := cl.ProduceSync(t.Context(), r0, r1).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fault := refuseKeyless(p, remote)
	produce(0, 4)
	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = true
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Eventually(t, 30*time.Second, "the keyed records copied", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.Committed == 3 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	produce(4, 10)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 4, partition 1 copied", func() (bool, string) {
		p0, p1 := partStatus(m, 0), partStatus(m, 1)
		return p0.State == StateFailed && p1.State == StateRunning && p1.Committed == 9 && p1.Lag == 0, fmt.Sprintf("%+v / %+v", p0, p1)
	})
	p0 := partStatus(m, 0)
	if !strings.Contains(p0.Error, "the record at offset 4 has no key") {
		t.Errorf("partition 0 error = %q, want it to name the keyless record at offset 4", p0.Error)
	}
	got, err := testcluster.ReadTopic(t.Context(), p.Target.Opts(), remote, true)
	if err != nil {
		t.Fatal(err)
	}
	src := testcluster.ReadAll(t, &p.Source, topic)
	if d := exactCopy(t, 1, src[1], got[1]); d != 0 {
		t.Errorf("partition 1: %d duplicates", d)
	}
	if len(got[0]) != 4 {
		t.Errorf("while FAILED the target holds %d committed records of partition 0, want exactly 4", len(got[0]))
	}
	fault.Remove()
	if n, err := m.RestartFailed(p.Source.Alias+"->"+p.Target.Alias, topic, 0); n != 1 || err != nil {
		t.Fatalf("RestartFailed = %d, %v; want 1, nil", n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "partition 0 copied", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Committed == 9 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	got, err = testcluster.ReadTopic(t.Context(), p.Target.Opts(), remote, true)
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 2; part++ {
		if d := exactCopy(t, part, src[part], got[part]); d != 0 || len(got[part]) != 10 {
			t.Errorf("partition %d: %d records, %d duplicates; want 10, 0", part, len(got[part]), d)
		}
	}
}

// TestTooLargeExactlyOnceOtherPartitionCopied: exactly once, one unit,
// partition 0 stopped on a record above the remote topic's limit while
// partition 1 streams: partition 1 is an exact copy, partition 0 holds
// exactly the record before the large one until the limit is raised.
func TestTooLargeExactlyOnceOtherPartitionCopied(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("large2")
	remote := p.Source.Alias + "." + topic
	limit := "3145728"
	testcluster.CreateTopic(t, &p.Source, topic, 2, map[string]*string{"max.message.bytes": &limit})
	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = true
	fc.ConfigPropertiesExclude = append(append([]string{}, DefaultConfigPropertiesExclude...), `max\.message\.bytes`)
	cl := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(8<<20), kgo.MaxBufferedBytes(64<<20))
	big := randomBytes(1536*1024, 11)
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r0 := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint("v", i))}
			if i == 3 {
				r0.Value = big
			}
			r1 := &kgo.Record{Topic: topic, Partition: 1, Value: []byte(fmt.Sprint("p1-", i))}
			if err := cl.ProduceSync(t.Context(), r0, r1).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	produce(0, 3)
	testcluster.Eventually(t, 30*time.Second, "the first records copied", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.Committed == 2 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	produce(3, 40)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 3, partition 1 copied", func() (bool, string) {
		p0, p1 := partStatus(m, 0), partStatus(m, 1)
		return p0.State == StateFailed && p1.State == StateRunning && p1.Committed == 39 && p1.Lag == 0, fmt.Sprintf("%+v / %+v", p0, p1)
	})
	src := testcluster.ReadAll(t, &p.Source, topic)
	got, err := testcluster.ReadTopic(t.Context(), append(p.Target.Opts(), kgo.FetchMaxBytes(64<<20)), remote, true)
	if err != nil {
		t.Fatal(err)
	}
	if d := exactCopy(t, 1, src[1], got[1]); d != 0 || len(got[1]) != 40 {
		t.Errorf("partition 1: %d records, %d duplicates; want 40, 0", len(got[1]), d)
	}
	if len(got[0]) != 3 {
		t.Errorf("while FAILED the target holds %d committed records of partition 0, want exactly 3", len(got[0]))
	}
	setTopicConfig(t, &p.Target, remote, "max.message.bytes", "4194304")
	testcluster.Eventually(t, 30*time.Second, "partition 0 copied", func() (bool, string) {
		ps := partStatus(m, 0)
		if ps.State == StateFailed {
			m.RestartFailed(p.Source.Alias+"->"+p.Target.Alias, topic, 0)
		}
		return ps.State == StateRunning && ps.Committed == 39 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	got, err = testcluster.ReadTopic(t.Context(), append(p.Target.Opts(), kgo.FetchMaxBytes(64<<20)), remote, true)
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 2; part++ {
		if d := exactCopy(t, part, src[part], got[part]); d != 0 || len(got[part]) != 40 {
			t.Errorf("partition %d: %d records, %d duplicates; want 40, 0", part, len(got[part]), d)
		}
	}
}

// TestLaterHopHeaderNotBlamedAlone: a record that already carries a
// provenance header from an earlier hop and is pushed over the copied
// limit is not said to fit "without the header kmirror adds" (turning the
// header off would copy the earlier hop's header as it is).
func TestLaterHopHeaderNotBlamedAlone(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("hop2")
	limit := "4000"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
	hdr := []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte("some-earlier-cluster-id,#5")}}
	size := recordBatchSize(&kgo.Record{Headers: hdr})
	v := randomBytes(int(4000-size)-3, 12)
	for recordBatchSize(&kgo.Record{Value: v, Headers: hdr}) < 4000 {
		v = append(v, 0)
	}
	if got := recordBatchSize(&kgo.Record{Value: v, Headers: hdr}); got != 4000 {
		t.Fatalf("the record is %d bytes as a batch, want 4000", got)
	}
	cl := testcluster.Client(t, &p.Source, kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: v, Headers: hdr}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 0", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed, fmt.Sprintf("%+v", ps)
	})
	ps := partStatus(m, 0)
	if !strings.Contains(ps.Error, "the record at offset 0 is") || !strings.Contains(ps.Error, "raise the source topic's max.message.bytes") ||
		strings.Contains(ps.Error, "header kmirror adds") {
		t.Fatalf("partition 0 error = %q: want offset 0, the source topic's limit named, and the header not blamed alone", ps.Error)
	}
}

// TestRecordAtExactlyTheTopicLimitCopied (regression): a source topic with
// max.message.bytes=4000 holds a record whose batch is exactly 4000 bytes
// as the broker counts it (the limit is inclusive); config sync copies 4000
// to the remote topic, which accepts the same batch. kmirror refused it:
// its size was franz-go's, which adds the 4-byte length prefix a produce
// request puts before the batch, so the partition FAILED with "the record
// at offset 1 is 4004 bytes as a record batch, above max.message.bytes ...
// (4000 bytes)", a size the record does not have, and asked to raise a
// limit the record fits. Without the provenance header (which would add
// its own bytes), the target must hold exactly the three records.
// recordOfBatch returns a value of incompressible bytes whose keyless,
// headerless record is a batch of exactly size bytes as a broker counts it
// (the v2 batch: 61 bytes of header and the record).
func recordOfBatch(t *testing.T, size int, seed byte) []byte {
	t.Helper()
	for n := size - 80; n < size; n++ {
		l := 1 + 1 + 1 + 1 + varintLen(int64(n)) + n + 1 // attributes, deltas, null key, value, no headers
		if 61+varintLen(int64(l))+l == size {
			return randomBytes(n, seed)
		}
	}
	t.Fatalf("no value length gives a %d-byte batch", size)
	return nil
}

func TestRecordAtExactlyTheTopicLimitCopied(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("exact")
	remote := p.Source.Alias + "." + topic
	limit := "4000"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
	a, big, c := []byte("a"), recordOfBatch(t, 4000, 13), []byte("c")
	cl := testcluster.Client(t, &p.Source, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20))
	for _, v := range [][]byte{a, big, c} {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatalf("producing %d bytes: %v", len(v), err)
		}
	}
	// The source broker took the big record in a batch of exactly its
	// limit, and refuses one byte more.
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: recordOfBatch(t, 4001, 14)}).FirstErr(); err == nil ||
		!strings.Contains(err.Error(), "MESSAGE_TOO_LARGE") {
		t.Fatalf("a batch one byte above the source topic's limit: %v, want MESSAGE_TOO_LARGE", err)
	}
	fc := recoveryFlow(p, topic)
	fc.DisableProvenanceHeader = true
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Eventually(t, 30*time.Second, "the three records copied", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 3 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetContents(t, p, remote), wantContents(a, big, c); !equalStrings(got, want) {
		t.Fatalf("target holds %v, want exactly %v", got, want)
	}
}

// TestSmallRecordsBatchedUpToTheLimit: a remote topic accepting 4000-byte
// batches and a backlog of 600 small incompressible records: the producer
// fills batches up to the limit (kgoBatchLimit), which the target takes;
// every record is copied once, in order, in every mode.
func TestSmallRecordsBatchedUpToTheLimit(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"at-least-once", "exactly-once"} {
		t.Run(mode, func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("small")
			remote := p.Source.Alias + "." + topic
			limit := "4000"
			testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
			testcluster.CreateTopic(t, &p.Target, remote, 1, map[string]*string{"max.message.bytes": &limit})
			var recs []*kgo.Record
			var vals [][]byte
			// Recent timestamps: the test brokers check retention (7 days)
			// every second and would delete older records.
			base := time.Now().Add(-time.Hour).UnixMilli()
			for i := range 600 {
				v := randomBytes(50+i%40, byte(i))
				vals = append(vals, v)
				recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: v, Timestamp: time.UnixMilli(base + int64(i*1999))})
			}
			testcluster.Produce(t, &p.Source, recs...)
			fc := recoveryFlow(p, topic)
			fc.ConfigPropertiesExclude = append(append([]string{}, DefaultConfigPropertiesExclude...), `max\.message\.bytes`)
			fc.ExactlyOnce = mode == "exactly-once"
			m, _ := runMirror(t, recoveryOpts(p, fc)...)
			testcluster.Eventually(t, 60*time.Second, "600 records copied", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.State == StateRunning && ps.Replicated == 600 && ps.Lag == 0 && ps.Retries == 0, fmt.Sprintf("%+v", ps)
			})
			got, err := testcluster.ReadTopic(t.Context(), p.Target.Opts(), remote, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(got[0]) != 600 {
				t.Fatalf("target holds %d records, want 600", len(got[0]))
			}
			for i, r := range got[0] {
				if string(r.Value) != string(vals[i]) {
					t.Fatalf("target record %d differs from source record %d", i, i)
				}
			}
		})
	}
}
