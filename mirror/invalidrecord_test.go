package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestInvalidRecordNamesOffsetAndKeylessRecord (regression): a source
// partition holds a record without a key (written before the source topic
// became compact), and the remote topic, compacted, refuses every batch
// holding it with INVALID_RECORD, as Kafka does ("Compacted topic cannot
// accept message without key"; franz-go drops that message). The partition
// FAILED with the bare "INVALID_RECORD: This record has failed the
// validation on the broker", naming neither the record nor what to change.
// It now names the offset it stopped at, the keyless record and the remote
// topic's cleanup.policy, waits for an operator (no automatic retry) while
// the other partition is copied; once the target accepts the record and the
// partition is restarted, the target holds every record once, in order,
// with the null key kept.
func TestInvalidRecordNamesOffsetAndKeylessRecord(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection")
	}
	topic := p.Topic("keyless")
	remote := p.Source.Alias + "." + topic
	// Compacted: the remote topic is too (created with its configs), so
	// the keyless record is named as the cause.
	testcluster.CreateTopic(t, &p.Source, topic, 2, compactConfig())
	cl := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r0 := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i))}
			if i == 4 {
				r0.Key = nil
			}
			r1 := &kgo.Record{Topic: topic, Partition: 1, Key: []byte("x"), Value: []byte(fmt.Sprint("p1-", i))}
			if err := cl.ProduceSync(context.Background(), r0, r1).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fault := refuseKeyless(p, remote)
	produce(0, 4)
	fc := recoveryFlow(p, topic)
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Eventually(t, 30*time.Second, "the keyed records copied", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.Replicated == 4 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	produce(4, 10)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 4, partition 1 copied", func() (bool, string) {
		p0, p1 := partStatus(m, 0), partStatus(m, 1)
		return p0.State == StateFailed && p1.State == StateRunning && p1.Replicated == 10, fmt.Sprintf("%+v / %+v", p0, p1)
	})
	time.Sleep(time.Second) // automatic restarts would come after 200 ms
	p0 := partStatus(m, 0)
	for _, want := range []string{
		"INVALID_RECORD",
		"; the remote topic " + remote + " on " + p.Target.Alias + " refused the batch holding the record at offset 4, and nothing from this record on was replicated",
		"the record at offset 4 has no key, which a topic with cleanup.policy=compact refuses (" + remote + " has cleanup.policy=compact): set the cleanup.policy of " + remote + " to delete",
		"add cleanup.policy to config.properties.exclude",
		"then restart the partition (Mirror.RestartFailed",
	} {
		if !strings.Contains(p0.Error, want) {
			t.Errorf("partition error lacks %q:\n%s", want, p0.Error)
		}
	}
	if p0.State != StateFailed || !p0.NextRetry.IsZero() || p0.Replicated != 4 {
		t.Errorf("partition 0 = %+v; want FAILED at 4, waiting for an operator (no NextRetry)", p0)
	}
	if got := testcluster.ReadAll(t, &p.Target, remote)[0]; len(got) != 4 {
		t.Errorf("while FAILED the target holds %d records of partition 0, want exactly 4", len(got))
	}

	fault.Remove() // the operator made the remote topic accept it
	if n, err := m.RestartFailed(p.Source.Alias+"->"+p.Target.Alias, topic, 0); n != 1 || err != nil {
		t.Fatalf("RestartFailed = %d, %v; want 1, nil", n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "partition 0 copied", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 10, fmt.Sprintf("%+v", ps)
	})
	for part := int32(0); part < 2; part++ {
		want := testcluster.ReadAll(t, &p.Source, topic)[part]
		got := testcluster.ReadAll(t, &p.Target, remote)[part]
		if diff := cmp.Diff(recsOf(want), copiesOf(t, got, clusterID(t, &p.Source), want)); diff != "" {
			t.Errorf("partition %d: %s differs from %s (-want +got):\n%s", part, remote, topic, diff)
		}
	}
}

// TestRecordAdvice: the advice for the record errors that name no setting
// keeps the error's code, names the offset, and leaves other errors alone.
func TestRecordAdvice(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err     error
		keyless int64
		want    string
	}{
		{kerr.InvalidRecord, -1, "refused the batch holding the record at offset 7, and nothing from this record on was replicated: the target's validation refused it (a record without a key on a compacted topic, or a broker-side validation of the remote topic such as schema validation)"},
		{kerr.InvalidRecord, 9, "the record at offset 9 has no key"},
		{kerr.CorruptMessage, 9, "refused the batch holding the record at offset 7, and nothing from this record on was replicated: then restart the partition"},
		{kerr.UnsupportedForMessageFormat, -1, "at offset 7"},
	} {
		got := recordAdvice(c.err, "a.orders", "b", 7, c.keyless, "")
		if !errors.Is(got, c.err) || !strings.Contains(got.Error(), c.want) || !strings.Contains(got.Error(), "the remote topic a.orders on b ") {
			t.Errorf("recordAdvice(%v, %d) = %q; want it to wrap the error and contain %q", c.err, c.keyless, got, c.want)
		}
		if c.err != kerr.InvalidRecord && strings.Contains(got.Error(), "no key") {
			t.Errorf("recordAdvice(%v) = %q: names a missing key for an error that is not INVALID_RECORD", c.err, got)
		}
	}
	for _, err := range []error{kerr.MessageTooLarge, kerr.TopicAuthorizationFailed, errors.New("x")} {
		if got := recordAdvice(err, "a.orders", "b", 7, 3, "compact"); got != err {
			t.Errorf("recordAdvice(%v) = %v, want it unchanged", err, got)
		}
	}
}

// TestShallowInvalidRecordNamesKeylessRecord (regression): with shallow
// copy, a batch the compacted remote topic refuses with INVALID_RECORD
// falls back to the normal path, whose records the target refuses again;
// the records of that path were put in flight without noting a missing
// key, so the partition's error gave the generic advice, not the keyless
// record and the cleanup.policy to change.
func TestShallowInvalidRecordNamesKeylessRecord(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection")
	}
	topic := p.Topic("keyless")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, compactConfig()) // and so the remote topic
	refuseKeyless(p, remote)
	recs := keylessAt4(topic)
	produceWith(t, &p.Source, kgo.NoCompression(), recs[:4])
	produceWith(t, &p.Source, kgo.NoCompression(), recs[4:])
	fc := recoveryFlow(p, topic)
	fc.ShallowCopy, fc.DisableProvenanceHeader = true, true
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 4", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && ps.Replicated == 4, fmt.Sprintf("%+v", ps)
	})
	if err := partStatus(m, 0).Error; !strings.Contains(err, "the record at offset 4 has no key, which a topic with cleanup.policy=compact refuses") {
		t.Errorf("partition error does not name the keyless record at offset 4:\n%s", err)
	}
}

// keylessAt4 returns 6 records for topic, k0/v0 to k5/v5, the one at
// index 4 without a key (the record a compacted remote topic refuses).
func keylessAt4(topic string) []*kgo.Record {
	var recs []*kgo.Record
	for i := range 6 {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i))}
		if i == 4 {
			r.Key = nil
		}
		recs = append(recs, r)
	}
	return recs
}

// refuseKeyless makes the target refuse, with INVALID_RECORD, every produce
// to partition 0 of remote whose batch holds a record without a key (as a
// compacted topic does), until the returned fault is removed.
func refuseKeyless(p *testcluster.Pair, remote string) *kfake.FaultHandle {
	dec := kgo.DefaultDecompressor()
	return p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0}, Err: kerr.InvalidRecord, Count: -1,
		When: func(req kmsg.Request) bool {
			for _, rt := range req.(*kmsg.ProduceRequest).Topics {
				for _, rp := range rt.Partitions {
					fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: remote, Partition: rp.Partition},
						&kmsg.FetchResponseTopicPartition{RecordBatches: rp.Records}, dec, nil)
					for _, r := range fp.Records {
						if r.Key == nil {
							return true
						}
					}
				}
			}
			return false
		}})
}
