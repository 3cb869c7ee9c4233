package mirror

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// Tests of issue 18 part 1: records above franz-go's default batch limit,
// produce results matched to their own record, and the restart after a
// record too large.

// randomBytes returns n incompressible bytes (the producer may compress).
func randomBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// produceLarge writes records one request each, with a producer whose
// batch limit takes them.
func produceLarge(t *testing.T, c *testcluster.Cluster, recs ...*kgo.Record) {
	t.Helper()
	cl := testcluster.Client(t, c, kgo.ProducerBatchMaxBytes(8<<20), kgo.MaxBufferedBytes(64<<20))
	for _, r := range recs {
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("producing %d bytes to %s: %v", len(r.Value), r.Topic, err)
		}
	}
}

// targetContents reads partition 0 of the remote topic (read_committed) and
// describes each record as offset:value, large values by size and digest.
func targetContents(t *testing.T, p *testcluster.Pair, remote string) []string {
	t.Helper()
	recs, err := testcluster.ReadTopic(context.Background(), append(p.Target.Opts(), kgo.FetchMaxBytes(64<<20)), remote, true)
	if err != nil {
		t.Fatalf("reading %s: %v", remote, err)
	}
	var out []string
	for _, r := range recs[0] {
		out = append(out, fmt.Sprintf("%d:%s", r.Offset, describeValue(r.Value)))
	}
	return out
}

func describeValue(v []byte) string {
	if len(v) <= 64 {
		return string(v)
	}
	return fmt.Sprintf("<%d bytes %x>", len(v), v[:8])
}

func wantContents(vals ...[]byte) []string {
	var out []string
	for i, v := range vals {
		out = append(out, fmt.Sprintf("%d:%s", i, describeValue(v)))
	}
	return out
}

// limitedFlow is recoveryFlow for topic in one of the modes the large
// record tests run ("at-least-once", "exactly-once", "shallow",
// "gapstop"), with max.message.bytes not copied: the remote topic keeps
// the target's default limit (1 MiB).
func limitedFlow(p *testcluster.Pair, topic, mode string) FlowConfig {
	return limitMode(recoveryFlow(p, topic), mode)
}

// limitMode is fc in mode (limitedFlow), max.message.bytes not copied.
func limitMode(fc FlowConfig, mode string) FlowConfig {
	fc.ConfigPropertiesExclude = append(append([]string{}, DefaultConfigPropertiesExclude...), `max\.message\.bytes`)
	switch mode {
	case "exactly-once":
		fc.ExactlyOnce = true
	case "shallow":
		fc.ShallowCopy, fc.DisableProvenanceHeader = true, true
	case "gapstop":
		fc.OnGap = GapStop
	}
	return fc
}

func setTopicConfig(t *testing.T, c *testcluster.Cluster, topic, key, value string) {
	t.Helper()
	rs, err := testcluster.Admin(t, c).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &value}}, topic)
	if err == nil {
		_, err = rs.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("setting %s=%s on %s: %v", key, value, topic, err)
	}
	waitTopicConfigs(t, c, topic, kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: &value})
}

// TestRecordAboveFranzGoDefaultCopied (regression, issue 18 part 1):
// with every setting at its default, a record of 1 040 000 bytes between
// two small ones was never copied (the target holds [a c] then): franz-go's
// default batch limit, 1 000 012 bytes, is below Kafka's max.message.bytes
// (1 048 588) and Java's max.request.size (1 048 576), which MM2 copies it
// with. The limit is now the remote topic's max.message.bytes.
func TestRecordAboveFranzGoDefaultCopied(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("large")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a, b, c := []byte("a"), randomBytes(1040000, 1), []byte("c")
	produceLarge(t, &p.Source, &kgo.Record{Topic: topic, Value: a}, &kgo.Record{Topic: topic, Value: b}, &kgo.Record{Topic: topic, Value: c})
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 3)
	if got, want := targetContents(t, p, remote), wantContents(a, b, c); !equalStrings(got, want) {
		t.Fatalf("target holds %v, want %v", got, want)
	}
	if ps := partStatus(m, 0); ps.State != StateRunning || ps.Replicated != 3 || ps.Records != 3 {
		t.Fatalf("partition 0 = %+v, want RUNNING with 3 records replicated", ps)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRecordTooLargeMatchedToItsRecord (regression, issue 18 part 1):
// records small-0, 1.5 MiB, small-2, and a remote topic that accepts
// 1 MiB. Before, the too-large error (franz-go fails such a record before
// buffering it, ahead of record 0's acknowledgement) was charged to record
// 0: small-2 reached the target after the failed record, each restart sent
// the two small records again (end offset 2, 4, 6), and once the limit was
// raised the target held 9 records out of order. Now the result is matched
// to its record, the poll loop refuses the record before producing it (and
// everything after it), and the restart resumes at it: the target holds
// exactly [small-0] while the partition is FAILED, however often it is
// restarted, then exactly [small-0 <1.5 MiB> small-2]. In every mode.
func TestRecordTooLargeMatchedToItsRecord(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"at-least-once", "exactly-once", "shallow"} {
		t.Run(mode, func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("large")
			remote := p.Source.Alias + "." + topic
			limit := "3145728"
			testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
			small0, big, small2 := []byte("small-0"), randomBytes(1536*1024, 2), []byte("small-2")
			produceLarge(t, &p.Source, &kgo.Record{Topic: topic, Value: small0}, &kgo.Record{Topic: topic, Value: big}, &kgo.Record{Topic: topic, Value: small2})
			fc := limitedFlow(p, topic, mode)
			m, _ := runMirror(t, recoveryOpts(p, fc)...)
			flow := p.Source.Alias + "->" + p.Target.Alias
			// Exactly once, transaction markers take target offsets too:
			// the values and their order are compared there.
			contents := func() []string {
				got := targetContents(t, p, remote)
				if fc.ExactlyOnce {
					for i := range got {
						got[i] = fmt.Sprintf("%d:%s", i, strings.SplitN(got[i], ":", 2)[1])
					}
				}
				return got
			}
			failedAtBig := func(what string) {
				t.Helper()
				testcluster.Eventually(t, 30*time.Second, what, func() (bool, string) {
					ps := partStatus(m, 0)
					return ps.State == StateFailed && ps.Replicated == 1, fmt.Sprintf("%+v", ps)
				})
				ps := partStatus(m, 0)
				if !strings.Contains(ps.Error, "MESSAGE_TOO_LARGE") || !strings.Contains(ps.Error, "at offset 1 is") ||
					!strings.Contains(ps.Error, "max.message.bytes of "+remote+" on "+p.Target.Alias) || !ps.NextRetry.IsZero() {
					t.Fatalf("partition 0 error = %q (next retry %v), want MESSAGE_TOO_LARGE naming offset 1, its size and max.message.bytes of %s, no automatic retry", ps.Error, ps.NextRetry, remote)
				}
				if got, want := contents(), wantContents(small0); !equalStrings(got, want) {
					t.Fatalf("%s: target holds %v, want exactly %v (nothing after the failed record)", what, got, want)
				}
			}
			failedAtBig("partition 0 FAILED at the 1.5 MiB record")
			for i := range 2 {
				// The failure the restart ends: the status may show it
				// a moment after the restart (published at most every
				// publishEvery), so the restart's own failure is the one
				// that began later.
				prev := partStatus(m, 0).Since
				if n, err := m.RestartFailed(flow, topic, 0); n != 1 || err != nil {
					t.Fatalf("RestartFailed = %d, %v; want 1, nil", n, err)
				}
				testcluster.Eventually(t, 30*time.Second, "restarted and FAILED again", func() (bool, string) {
					ps := partStatus(m, 0)
					return ps.State == StateFailed && ps.Since.After(prev) && ps.Retries == 0, fmt.Sprintf("%+v (failed before since %v)", ps, prev)
				})
				failedAtBig(fmt.Sprintf("restart %d: FAILED again at the same record", i+1))
			}
			setTopicConfig(t, &p.Target, remote, "max.message.bytes", "4194304")
			// A discovery round that reads the raised limit restarts the
			// partition by itself (restartRaised): the operator's restart
			// then finds nothing failed and answers 0. Either way the
			// partition must end with exactly the three records.
			if n, err := m.RestartFailed(flow, topic, 0); n > 1 || err != nil {
				t.Fatalf("RestartFailed after raising the limit = %d, %v; want 1 (or 0 once restarted by the raised limit), nil", n, err)
			}
			testcluster.Eventually(t, 30*time.Second, "every record replicated", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.State == StateRunning && ps.Replicated == 3, fmt.Sprintf("%+v", ps)
			})
			if got, want := contents(), wantContents(small0, big, small2); !equalStrings(got, want) {
				t.Fatalf("target holds %v, want exactly %v", got, want)
			}
			recs, err := testcluster.ReadTopic(context.Background(), append(p.Target.Opts(), kgo.FetchMaxBytes(64<<20)), remote, true)
			if err != nil || len(recs[0]) != 3 || !bytes.Equal(recs[0][1].Value, big) {
				t.Fatalf("the 1.5 MiB record differs on the target (err %v)", err)
			}
		})
	}
}

// TestRecordAboveBufferShareCopied (regression, issue 18 part 1): with
// buffer.memory 8 MiB over 8 slots a unit's producer buffer was 1 MiB, and
// franz-go fails a record larger than its buffer at once. The buffer now
// holds the largest record any remote topic of the unit accepts.
func TestRecordAboveBufferShareCopied(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("large")
	remote := p.Source.Alias + "." + topic
	limit := "4194304"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
	a, b, c := []byte("a"), randomBytes(3<<20, 3), []byte("c")
	produceLarge(t, &p.Source, &kgo.Record{Topic: topic, Value: a}, &kgo.Record{Topic: topic, Value: b}, &kgo.Record{Topic: topic, Value: c})
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks, fc.MaxBufferedBytes = 8, 8<<20
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 3)
	if got, want := targetContents(t, p, remote), wantContents(a, b, c); !equalStrings(got, want) {
		t.Fatalf("target holds %v, want %v", got, want)
	}
}

// TestRecordBatchSizeMatchesFranzGo: the poll loop's size of a record as a
// one-record batch is franz-go's, so a record it passes is one franz-go
// takes at the same limit, and one it refuses franz-go refuses too.
func TestRecordBatchSizeMatchesFranzGo(t *testing.T) {
	t.Parallel()
	checkBatchSizes(t, []*kgo.Record{
		{Value: []byte("x")},
		{Key: []byte("k"), Value: randomBytes(100, 4)},
		{Value: randomBytes(20000, 5), Headers: []kgo.RecordHeader{{Key: "kmirror-provenance", Value: []byte("abc")}, {Key: "h", Value: nil}}},
		{Value: randomBytes(1040000, 6)},
	})
}

// checkBatchSizes asks franz-go itself, on a kfake cluster, whether each
// record fits the batch limit a unit gives franz-go (kgoBatchLimit) for a
// limit of exactly recordBatchSize(r) bytes (it must) and of one byte less
// (it must not).
func checkBatchSizes(t *testing.T, cases []*kgo.Record) {
	t.Helper()
	c := testcluster.NewFake(t, "x")
	big := "8388608"
	testcluster.CreateTopic(t, &c, "t", 1, map[string]*string{"max.message.bytes": &big})
	for i, r := range cases {
		size := recordBatchSize(r)
		for _, lim := range []int64{size, size - 1} {
			cl, err := kgo.NewClient(append(c.Opts(), kgo.ProducerBatchMaxBytesFn(func(topic string) int32 {
				if topic == "t" {
					return kgoBatchLimit(int32(lim))
				}
				return 1 << 20
			}), kgo.MaxBufferedBytes(8<<20))...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			rec := *r
			rec.Topic = "t"
			var perr error
			done := make(chan struct{})
			cl.Produce(ctx, &rec, func(_ *kgo.Record, err error) { perr = err; close(done) })
			<-done
			cancel()
			cl.Close()
			tooLarge := perr != nil && strings.Contains(perr.Error(), "MESSAGE_TOO_LARGE")
			if want := lim < size; tooLarge != want {
				t.Errorf("case %d (key %d, value %d, %d bytes as a batch) at limit %d: franz-go says too large = %v (%v), want %v",
					i, len(r.Key), len(r.Value), size, lim, tooLarge, perr, want)
			}
		}
	}
}

// TestLoweredLimitRecoversByItself: the source topic's max.message.bytes
// is lowered to 16 KiB (its records are 100 bytes) and config sync copies
// it to the remote topic. The unit's producer still batches up to the
// limit it read before (1 MiB) until its topic refresh reads the new one,
// so the target refuses batches of records that each fit. That is not
// the records' fault: the partition restarts by itself with the limit
// read again, and every record arrives, with no operator. Before, it
// stopped for good, told to raise a limit every record fits, quoting the
// stale 1 MiB (a helper trying to break the record limits, stop 38).
func TestLoweredLimitRecoversByItself(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("lowered")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	fc := recoveryFlow(p, topic)
	fc.RefreshTopicsInterval = time.Minute // the limit is read again only by the partition's restart
	fc.SyncTopicConfigsInterval = 200 * time.Millisecond
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	small := testcluster.Client(t, &p.Source, kgo.ProducerBatchMaxBytes(16000), kgo.ProducerLinger(50*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	produce := func(from, to int) {
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Value: randomBytes(100, byte(i))})
		}
		if err := small.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 10)
	testcluster.Eventually(t, 30*time.Second, "first records", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.Replicated == 10, fmt.Sprintf("%+v", ps)
	})
	setTopicConfig(t, &p.Source, topic, "max.message.bytes", "16384")
	lim := "16384"
	waitTopicConfigs(t, &p.Target, remote, kadm.AlterConfig{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &lim})
	produce(10, 5010)
	sawRefusal := false
	testcluster.Eventually(t, 60*time.Second, "5010 records replicated without an operator", func() (bool, string) {
		ps := partStatus(m, 0)
		if ps.State == StateFailed {
			sawRefusal = true
			if ps.NextRetry.IsZero() {
				t.Fatalf("the partition waits for an operator on records that fit the new limit:\n%s", ps.Error)
			}
			if !strings.Contains(ps.Error, "the target refused a batch holding the record at offset") ||
				!strings.Contains(ps.Error, "restarted automatically with the limit read again") {
				t.Errorf("error does not say the batch was refused at a stale limit: %s", ps.Error)
			}
		}
		return ps.Replicated == 5010, fmt.Sprintf("%+v", ps)
	})
	got := testcluster.ReadAll(t, &p.Target, remote)[0]
	if len(got) != 5010 {
		t.Fatalf("target has %d records, want 5010", len(got))
	}
	for i, r := range got {
		if !bytes.Equal(r.Value, randomBytes(100, byte(i))) {
			t.Fatalf("target record %d is not source record %d", r.Offset, i)
		}
	}
	t.Logf("a batch was refused on the way: %t", sawRefusal)
}

// TestTopicLimitsReadDespiteOneRefusedTopic: the target refuses
// DESCRIBE_CONFIGS on one remote topic. kadm fails the whole call for it,
// so no remote topic's max.message.bytes was read and every one was
// written with Kafka's default limit; now the others' limits are read and
// only the refused topic is left out.
func TestTopicLimitsReadDespiteOneRefusedTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	open, closed := p.Topic("open"), p.Topic("closed")
	big := "4000000"
	testcluster.CreateTopic(t, &p.Target, open, 1, map[string]*string{"max.message.bytes": &big})
	testcluster.CreateTopic(t, &p.Target, closed, 1, map[string]*string{"max.message.bytes": &big})
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeConfigs}, Resource: closed, Err: kerr.TopicAuthorizationFailed, Count: -1})
	got, _, err := topicLimits(context.Background(), testcluster.Client(t, &p.Target), []string{open, closed})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int32{open: 4000000}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("limits %v, want %v", got, want)
	}
}

// TestRaisedLimitReadAtTheFailure (found by a new user): the remote
// topic's max.message.bytes raised on the target, then a record above the
// old limit produced at once: the unit still applied the limit it read at
// its start, failed the partition with "above max.message.bytes of ...
// (1048588 bytes): raise that setting" (already raised) and waited for an
// operator, or for discovery's next reading of the limits (every refresh
// interval, 10 minutes by default). The failure now reads the limit
// again: a raised one restarts the partition by itself and the record is
// copied.
func TestRaisedLimitReadAtTheFailure(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("raised")
	remote := p.Source.Alias + "." + topic
	limit := "3145728"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
	fc := recoveryFlow(p, topic)
	fc.RefreshTopicsInterval = 10 * time.Minute // no discovery round reads the limit in the test
	// The remote topic keeps the target's default limit (1 MiB) until
	// the test raises it.
	fc.ConfigPropertiesExclude = append(append([]string{}, DefaultConfigPropertiesExclude...), `max\.message\.bytes`)
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	small0, big := []byte("small-0"), randomBytes(1536*1024, 3)
	produceLarge(t, &p.Source, &kgo.Record{Topic: topic, Value: small0})
	testcluster.Eventually(t, 30*time.Second, "the first record replicated", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.Replicated == 1, fmt.Sprintf("%+v", ps)
	})
	setTopicConfig(t, &p.Target, remote, "max.message.bytes", "4194304")
	produceLarge(t, &p.Source, &kgo.Record{Topic: topic, Value: big})
	testcluster.Eventually(t, 20*time.Second, "the 1.5 MiB record replicated without an operator", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 2, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetContents(t, p, remote), wantContents(small0, big); !equalStrings(got, want) {
		t.Fatalf("target holds %v, want exactly %v", got, want)
	}
}

// TestUserLimitAtBrokerWriteLimitOpens: a user's producer.max.request.size
// of 104857600 bytes (kgo.ProducerBatchMaxBytes, equal to franz-go's
// default BrokerMaxWriteBytes, which the properties loader raises only
// above it) is handed to franz-go 4 bytes larger (kgoBatchLimit), and
// franz-go refused the client ("max broker write bytes 104857600 is
// erroneously less than max record batch bytes 104857604"): the unit's
// producer never opened and nothing was replicated. The request limit is
// raised with it.
func TestUserLimitAtBrokerWriteLimitOpens(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("userlimit")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a, b := []byte("a"), []byte("b")
	produceLarge(t, &p.Source, &kgo.Record{Topic: topic, Value: a}, &kgo.Record{Topic: topic, Value: b})
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.ProducerBatchMaxBytes(100 << 20)}}),
		WithFlow(fc))
	waitReplicated(t, m, 2)
	if got, want := targetContents(t, p, remote), wantContents(a, b); !equalStrings(got, want) {
		t.Fatalf("target holds %v, want %v", got, want)
	}
}

// TestRecordTooLargeUserLimitAdviceNamesNoConfigSync: a record above the
// user's producer.max.request.size, in a flow whose config sync copies
// max.message.bytes, was told "raise that setting (config sync copies the
// source topic's max.message.bytes to the remote topic)": config sync has
// nothing to do with the producer setting named.
func TestRecordTooLargeUserLimitAdviceNamesNoConfigSync(t *testing.T) {
	e := &RecordTooLargeError{Offset: 7, Size: 2000, Limit: 1000, Setting: "dst.producer.max.request.size (1000 bytes)", synced: true}
	if msg := e.Error(); strings.Contains(msg, "config sync") || !strings.Contains(msg, "above dst.producer.max.request.size (1000 bytes): raise that setting, then restart") {
		t.Fatalf("error %q: want the producer setting to raise, without config sync", msg)
	}
}
