package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// Regression tests of resume from the target's tail (issue 23) with the
// engine: a tail that does not belong to the source's current log never
// makes a partition skip records.

// tailValues returns the values of partition 0 of topic on c, in order.
func tailValues(t *testing.T, c *testcluster.Cluster, topic string) []string {
	t.Helper()
	var out []string
	for _, r := range testcluster.ReadAll(t, c, topic)[0] {
		out = append(out, string(r.Value))
	}
	return out
}

func valuesOf(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

func produceValues(t *testing.T, c *testcluster.Cluster, topic string, vals []string) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range vals {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	testcluster.Produce(t, c, recs...)
}

func tailCounts(m *Mirror) map[string]int64 { return m.Status().Flows[0].TailResume }

// TestTailResumeRecreatedSourceWhileStopped: 30 records copied, kmirror
// stopped gracefully, the source topic deleted and re-created with 10 new
// records. The resume point records the old topic's ID
// (kmirror-source-topic-id), so the partition starts at the new log's
// start without a tail read (the tail names the old log's offsets), and
// the re-creation is reported as a gap: nothing is skipped.
func TestTailResumeRecreatedSourceWhileStopped(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("re-creates a topic under the same name: kfake only (real brokers delete topics asynchronously)")
	}
	topic := p.Topic("recreated")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceValues(t, &p.Source, topic, valuesOf("old", 0, 30))
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 30)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := testcluster.Admin(t, &p.Source).DeleteTopics(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "source topic deleted", func() (bool, string) {
		td, err := testcluster.Admin(t, &p.Source).ListTopics(context.Background(), topic)
		return err == nil && !td.Has(topic), fmt.Sprint(err)
	})
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceValues(t, &p.Source, topic, valuesOf("new", 0, 10))
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	want := append(valuesOf("old", 0, 30), valuesOf("new", 0, 10)...)
	testcluster.Eventually(t, 30*time.Second, "the new log copied", func() (bool, string) {
		got := tailValues(t, &p.Target, remote)
		return strings.Join(got, " ") == strings.Join(want, " "), fmt.Sprint(got)
	})
	if got := tailCounts(m); len(got) != 0 {
		t.Errorf("tail resume outcomes %v, want none (the re-created topic starts at its log start)", got)
	}
	if gaps := m.Status().Flows[0].Gaps; len(gaps) != 1 || gaps[0].From != 30 || gaps[0].To != 30 {
		t.Errorf("gaps %+v, want one at offset 30 (From == To) for the re-created topic", gaps)
	}
}

// TestTailResumeMismatchFallsBack: the remote partition's last record
// claims source offset 30 but differs from the source's record there (a
// record of another incarnation, or written by hand): the start falls
// back ("mismatch") and every source record is copied after it.
func TestTailResumeMismatchFallsBack(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("mismatch")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.CreateTopic(t, &p.Target, remote, 1, nil)
	produceValues(t, &p.Source, topic, valuesOf("v", 0, 40))
	prov := FormatProvenance(clusterID(t, &p.Source))
	testcluster.Produce(t, &p.Target, &kgo.Record{Topic: remote, Value: []byte("not-v-30"),
		Headers: []kgo.RecordHeader{{Key: ProvenanceHeader, Value: append(prov, ",#30"...)}}})
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 40)
	want := append([]string{"not-v-30"}, valuesOf("v", 0, 40)...)
	if got := tailValues(t, &p.Target, remote); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("target holds %v, want %v", got, want)
	}
	if got := tailCounts(m); got["mismatch"] != 1 || got["ahead"] != 0 {
		t.Errorf("tail resume outcomes %v, want mismatch 1, no ahead", got)
	}
}

// TestTailResumeRemoteWithoutOffsets: the remote topic was last written
// without offsets in its provenance (Apache MM2 copies no kmirror header;
// an older kmirror wrote the IDs only): kmirror resumes from the stored
// resume point ("none"), and no record is skipped.
func TestTailResumeRemoteWithoutOffsets(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("older")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceValues(t, &p.Source, topic, valuesOf("v", 0, 20))
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.DisableTailResume = true // as an older kmirror: IDs only
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 20)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, r := range testcluster.ReadAll(t, &p.Target, remote)[0] {
		if _, ok := ProvenanceOffset(r.Headers[len(r.Headers)-1].Value); ok {
			t.Fatalf("with tail resume off, record %d carries an offset: %q", r.Offset, r.Headers)
		}
	}
	produceValues(t, &p.Source, topic, valuesOf("v", 20, 30))
	fc.DisableTailResume = false
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 10)
	if got, want := tailValues(t, &p.Target, remote), valuesOf("v", 0, 30); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("target holds %v, want %v", got, want)
	}
	if got := tailCounts(m); got["none"] != 1 || got["ahead"] != 0 {
		t.Errorf("tail resume outcomes %v, want none 1, no ahead", got)
	}
}
