package interop

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
)

// resumePoints reads mm2-offsets.<src>.internal on the target and returns
// the last MirrorSourceConnector offset stored for each partition of topic
// (the offset of the last replicated record, docs/mm2-compat.md §2.6), in log order.
func resumePoints(t *testing.T, p *testcluster.Pair, topic string) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for _, rs := range testcluster.ReadAll(t, &p.Target, connectoffsets.TopicName(p.Source.Alias)) {
		for _, r := range rs {
			conn, alias, tp, part, err := connectoffsets.ParseSourceKey(r.Key)
			if err != nil || conn != connectoffsets.SourceConnector || alias != p.Source.Alias || tp != topic {
				continue
			}
			if r.Value == nil {
				delete(out, part)
				continue
			}
			off, err := connectoffsets.ParseSourceValue(r.Value)
			if err != nil {
				t.Fatalf("resume point %s: %v", r.Value, err)
			}
			out[part] = off
		}
	}
	return out
}

// produceRange writes values "<from>".."<to-1>" (as decimal text) to each
// partition.
func produceRange(t *testing.T, c *testcluster.Cluster, topic string, partitions int32, from, to int) {
	t.Helper()
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		for part := range partitions {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprintf("k%d", i%3)), Value: []byte(fmt.Sprint(i))})
		}
	}
	testcluster.Produce(t, c, rs...)
}

// remoteValues reads the remote topic and returns each partition's values
// and offsets as "offset:value".
func remoteValues(t *testing.T, c *testcluster.Cluster, topic string) map[int32][]string {
	t.Helper()
	out := map[int32][]string{}
	for part, rs := range testcluster.ReadAll(t, c, topic) {
		for _, r := range rs {
			out[part] = append(out[part], fmt.Sprintf("%d:%s", r.Offset, r.Value))
		}
	}
	return out
}

func wantValues(partitions int32, n int) map[int32][]string {
	out := map[int32][]string{}
	for part := range partitions {
		for i := range n {
			out[part] = append(out[part], fmt.Sprintf("%d:%d", i, i))
		}
	}
	return out
}

// waitEnd waits until every partition of topic on c has end offset n.
func waitEnd(t *testing.T, c *testcluster.Cluster, topic string, partitions int32, n int64) {
	t.Helper()
	adm := testcluster.Admin(t, c)
	testcluster.Eventually(t, 60*time.Second, "end offsets of "+topic, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		got := map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) { got[o.Partition] = o.Offset })
		for part := range partitions {
			if got[part] < n {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
}

// resumeMM2Props is an MM2 file replicating only topic (no checkpoints for
// any real group, no heartbeats replication).
func resumeMM2Props(p *testcluster.Pair, topic string) string {
	return mm2Properties(p, []string{regexp.QuoteMeta(topic)}, []string{regexp.QuoteMeta(p.Group("nogroup"))})
}

// TestResumeFromMM2 replicates with Apache MM2, stops it, and lets kmirror
// take over the same flow: kmirror must start after the last record MM2
// stored in mm2-offsets.<source>.internal, so the remote topic holds every
// source record exactly once, in order (docs/mm2-compat.md §2.6).
func TestResumeFromMM2(t *testing.T) {
	e := setup(t, "ra", "rb")
	p := e.p
	topic := p.Topic("orders")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceRange(t, &p.Source, topic, 2, 0, 30)

	start := time.Now()
	m := e.startMM2(t, "mm2", resumeMM2Props(p, topic))
	waitEnd(t, &p.Target, remote, 2, 30)
	testcluster.Eventually(t, 30*time.Second, "MM2 source offsets stored", func() (bool, string) {
		got := resumePoints(t, p, topic)
		return cmp.Equal(got, map[int32]int64{0: 29, 1: 29}), fmt.Sprint(got)
	})
	m.stop(t)
	t.Logf("MM2 replicated and stored its offsets after %v", time.Since(start).Round(time.Millisecond))

	produceRange(t, &p.Source, topic, 2, 30, 50)
	fc := fastFlow(p.Source.Alias, p.Target.Alias, regexp.QuoteMeta(topic))
	fc.DisableCheckpoints = true
	km, stop := e.runMirror(t, "kmirror", clusterOpt(p.Source.Alias, &p.Source), clusterOpt(p.Target.Alias, &p.Target), mirror.WithFlow(fc))
	waitEnd(t, &p.Target, remote, 2, 50)
	testcluster.Eventually(t, 30*time.Second, "kmirror caught up", func() (bool, string) {
		st := km.Status().Flows[0]
		return st.Lag == 0 && st.Records >= 40, fmt.Sprintf("%d records, lag %d", st.Records, st.Lag)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := km.Status().Flows[0]; st.Records != 40 {
		t.Errorf("kmirror replicated %d records, want 40 (20 per partition after MM2's 30)", st.Records)
	}
	if diff := cmp.Diff(wantValues(2, 50), remoteValues(t, &p.Target, remote)); diff != "" {
		t.Errorf("remote topic %s (-want +got):\n%s", remote, diff)
	}
	if diff := cmp.Diff(map[int32]int64{0: 49, 1: 49}, resumePoints(t, p, topic)); diff != "" {
		t.Errorf("resume points after kmirror (-want +got):\n%s", diff)
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// TestMM2ResumesFromKmirror is the reverse: kmirror replicates and stops,
// then Apache MM2 takes over and must start after the last record kmirror
// stored in mm2-offsets.<source>.internal.
func TestMM2ResumesFromKmirror(t *testing.T) {
	e := setup(t, "rc", "rd")
	p := e.p
	topic := p.Topic("orders")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceRange(t, &p.Source, topic, 2, 0, 30)

	start := time.Now()
	fc := fastFlow(p.Source.Alias, p.Target.Alias, regexp.QuoteMeta(topic))
	fc.DisableCheckpoints = true
	km, stop := e.runMirror(t, "kmirror", clusterOpt(p.Source.Alias, &p.Source), clusterOpt(p.Target.Alias, &p.Target), mirror.WithFlow(fc))
	waitEnd(t, &p.Target, remote, 2, 30)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := km.Status().Flows[0]; st.Records != 60 {
		t.Errorf("kmirror replicated %d records, want 60", st.Records)
	}
	if diff := cmp.Diff(map[int32]int64{0: 29, 1: 29}, resumePoints(t, p, topic)); diff != "" {
		t.Fatalf("resume points kmirror stored (-want +got):\n%s", diff)
	}
	t.Logf("kmirror replicated and stored its resume points after %v", time.Since(start).Round(time.Millisecond))

	produceRange(t, &p.Source, topic, 2, 30, 50)
	m := e.startMM2(t, "mm2", resumeMM2Props(p, topic))
	waitEnd(t, &p.Target, remote, 2, 50)
	testcluster.Eventually(t, 30*time.Second, "MM2 source offsets stored", func() (bool, string) {
		got := resumePoints(t, p, topic)
		return cmp.Equal(got, map[int32]int64{0: 49, 1: 49}), fmt.Sprint(got)
	})
	m.stop(t)
	if diff := cmp.Diff(wantValues(2, 50), remoteValues(t, &p.Target, remote)); diff != "" {
		t.Errorf("remote topic %s (-want +got):\n%s", remote, diff)
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}
