package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// rewindResumePoint writes the resume point of source partition (topic, 0)
// back to last (a crash after the flow copied past it), in the partition
// Connect's producer picks.
func rewindResumePoint(t *testing.T, p *testcluster.Pair, topic string, last int64) {
	t.Helper()
	rt := connectoffsets.TopicName(p.Source.Alias)
	td, err := testcluster.Admin(t, &p.Target).ListTopics(context.Background(), rt)
	if err != nil || !td.Has(rt) {
		t.Fatalf("listing %s: %v", rt, err)
	}
	key := connectoffsets.SourceKey(p.Source.Alias, topic, 0)
	testcluster.Produce(t, &p.Target, &kgo.Record{Topic: rt, Key: key, Value: connectoffsets.SourceValue(last),
		Partition: connectoffsets.Partition(key, int32(len(td[rt].Partitions)))})
}

// TestTailResumeOddContentsNoDuplicates: records with contents at the edges
// of what sameRecord compares (empty and null keys and values, empty and
// null header values, repeated header keys, a provenance header of an
// earlier hop, extreme timestamps) are copied; then the stored resume point
// goes back to offset 1 (a crash), and the restart must resume after the
// target's tail (outcome "ahead"): the copies match their source records,
// so nothing is copied twice.
func TestTailResumeOddContentsNoDuplicates(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	odd := []*kgo.Record{
		{Key: []byte{}, Value: []byte{}},
		{Key: nil, Value: nil},
		{Key: []byte("k"), Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "e", Value: []byte{}}, {Key: "n", Value: nil}}},
		{Value: []byte("dup"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: []byte("2")}, {Key: "", Value: []byte("x")}}},
		{Value: []byte("hop"), Headers: []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte("upstream-cluster,#7")}, {Key: "after", Value: []byte("a")}}},
		{Value: []byte("empty-prov"), Headers: []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte{}}}},
		{Value: []byte("old"), Timestamp: time.UnixMilli(0)},
		{Value: []byte("last"), Timestamp: ts},
	}
	for i, r := range odd {
		if r.Timestamp.IsZero() {
			r.Timestamp = ts.Add(time.Duration(i) * time.Millisecond)
		}
	}
	var topics []string
	for i, r := range odd {
		tt := p.Topic(fmt.Sprintf("odd%d", i))
		topics = append(topics, tt)
		// No retention: real Kafka deletes at once a segment whose records
		// are older than retention.ms (7 days by default), and "old" is.
		testcluster.CreateTopic(t, &p.Source, tt, 1, map[string]*string{"retention.ms": strp("-1")})
		r.Topic = tt
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: tt, Value: []byte("plain"), Timestamp: ts}, r)
	}
	fc := fastFlow(p)
	fc.Topics = topics
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, int64(2*len(odd)))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range topics {
		rewindResumePoint(t, p, tt, 0)
	}
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 20*time.Second, "started", func() (bool, string) {
		c := tailCounts(m)
		var n int64
		for _, v := range c {
			n += v
		}
		return n == int64(len(odd)) && m.Status().Flows[0].Lag == 0, fmt.Sprint(c)
	})
	time.Sleep(500 * time.Millisecond)
	for i, tt := range topics {
		if got := len(testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+tt)[0]); got != 2 {
			t.Errorf("record %d (%+v): the target holds %d records, want 2", i, odd[i], got)
		}
	}
	if c := tailCounts(m); c["ahead"] != int64(len(odd)) {
		t.Errorf("outcomes %v, want ahead %d", c, len(odd))
	}
}
