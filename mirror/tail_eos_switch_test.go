package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTailResumeAfterExactlyOnceRun: a flow runs exactly once (its copies
// are written in transactions, each with its commit marker, and carry
// their source offsets), is stopped, and restarts at least once with its
// stored resume point set back (a crash): the restart resumes after the
// last committed copy ("ahead"), reading the remote partition committed
// past the markers, and copies the new records once.
func TestTailResumeAfterExactlyOnceRun(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("eosswitch")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce = true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	for i := 0; i < 4; i++ { // several transactions
		produceValues(t, &p.Source, topic, valuesOf("v", 5*i, 5*i+5))
		waitReplicated(t, m, int64(5*i+5))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	rewindResumePoint(t, p, topic, 3)
	produceValues(t, &p.Source, topic, valuesOf("v", 20, 30))
	fc.ExactlyOnce = false
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	want := valuesOf("v", 0, 30)
	testcluster.Eventually(t, 30*time.Second, "30 records, each once", func() (bool, string) {
		got := tailValues(t, &p.Target, remote)
		return strings.Join(got, " ") == strings.Join(want, " "), fmt.Sprint(got)
	})
	if c := tailCounts(m); c["ahead"] != 1 {
		t.Errorf("outcomes %v, want ahead 1", c)
	}
}

// TestTailResumeIgnoresAbortedCopies: the remote partition ends with
// copies of source records 10-29 that a zombie exactly-once writer
// produced and whose transaction was aborted (same contents, same
// provenance with offsets). A restart at least once from resume point 9
// must not resume after them: consumers reading committed never see them.
func TestTailResumeIgnoresAbortedCopies(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("aborted")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceValues(t, &p.Source, topic, valuesOf("v", 0, 10))
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 10)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	produceValues(t, &p.Source, topic, valuesOf("v", 10, 30))
	src := testcluster.ReadAll(t, &p.Source, topic)[0]
	id := clusterID(t, &p.Source)
	txn := testcluster.Client(t, &p.Target, kgo.TransactionalID("zombie-"+topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, r := range src[10:] {
		c := &kgo.Record{Topic: remote, Partition: 0, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
			Headers: []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte(string(FormatProvenance(id)) + ",#" + fmt.Sprint(r.Offset))}}}
		if err := txn.ProduceSync(ctx, c).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 20)
	committed, err := testcluster.ReadTopic(ctx, p.Target.Opts(), remote, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range committed[0] {
		got = append(got, string(r.Value))
	}
	if want := valuesOf("v", 0, 30); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("committed records on the target %v, want %v (outcomes %v)", got, want, tailCounts(m))
	}
	if c := tailCounts(m); c["behind"] != 1 {
		t.Errorf("outcomes %v, want behind 1 (the last committed copy is at the resume point)", c)
	}
}

// TestTailResumeAfterRecordFailure: the target refuses a produce for good
// (INVALID_RECORD, the record's own error: the partition stays FAILED
// until asked) while records keep arriving; the member is stopped and a
// new one starts. The target holds nothing after the refused records (the
// produce gate), so the new member's tail is at or before its resume point
// and every record lands once, in order.
func TestTailResumeAfterRecordFailure(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("injects produce errors: kfake only")
	}
	topic := p.Topic("refused")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceValues(t, &p.Source, topic, valuesOf("v", 0, 10))
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 10)
	h := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Err: kerr.InvalidRecord})
	for i := 10; i < 40; i += 3 {
		produceValues(t, &p.Source, topic, valuesOf("v", i, min(i+3, 40)))
	}
	testcluster.Eventually(t, 20*time.Second, "partition FAILED", func() (bool, string) {
		ps := m.Status().Flows[0].Partitions
		return len(ps) == 1 && ps[0].State == StateFailed, fmt.Sprintf("%+v", ps)
	})
	h.Remove()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	want := valuesOf("v", 0, 40)
	testcluster.Eventually(t, 30*time.Second, "40 records, each once, in order", func() (bool, string) {
		got := tailValues(t, &p.Target, remote)
		return strings.Join(got, " ") == strings.Join(want, " "), fmt.Sprint(got)
	})
	if c := tailCounts(m); c["ahead"] != 0 {
		t.Errorf("outcomes %v, want no ahead", c)
	}
}
