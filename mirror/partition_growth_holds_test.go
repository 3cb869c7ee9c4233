package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// recordValues returns the values of rs, in order.
func recordValues(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	return out
}

// TestPartitionGrowthInStepsWhileProducing: a source topic grows from 1 to
// 3, 5 and 7 partitions while the flow runs (3 units, so the added
// partitions land in units that already write the remote topic and in
// others), with records produced to every partition at each step, the new
// ones right after they exist. Every remote partition ends with exactly its
// source partition's records, at the same offsets, the remote topic has 7
// partitions and the flow reports 7 partitions and no lag.
func TestPartitionGrowthInStepsWhileProducing(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	tn := p.Topic("steps")
	remote := p.Source.Alias + "." + tn
	testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
	fc := fastFlow(p)
	fc.Tasks = 3
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	ctx := context.Background()
	adm := testcluster.Admin(t, &p.Source)
	total := 0
	for step, n := range []int{1, 3, 5, 7} {
		if n > 1 {
			if _, err := adm.UpdatePartitions(ctx, n, tn); err != nil {
				t.Fatal(err)
			}
			testcluster.Eventually(t, 10*time.Second, "source metadata shows the partitions", func() (bool, string) {
				td, err := adm.ListTopics(ctx, tn)
				return err == nil && len(td[tn].Partitions) == n, fmt.Sprint(err)
			})
		}
		var recs []*kgo.Record
		for part := range n {
			for i := range 3 {
				recs = append(recs, &kgo.Record{Topic: tn, Partition: int32(part), Value: fmt.Appendf(nil, "s%d-p%d-%d", step, part, i)})
			}
		}
		testcluster.Produce(t, &p.Source, recs...) // a client of its own: its metadata shows the new partitions
		total += len(recs)
	}
	waitReplicated(t, m, int64(total))
	src, dst := testcluster.ReadAll(t, &p.Source, tn), testcluster.ReadAll(t, &p.Target, remote)
	if len(src) != 7 || len(dst) != 7 {
		t.Fatalf("%d source and %d remote partitions hold records, want 7 and 7", len(src), len(dst))
	}
	for part, rs := range src {
		if want, got := recordValues(rs), recordValues(dst[part]); fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%s[%d] holds %v, want %v", remote, part, got, want)
		}
		for i, r := range dst[part] {
			if r.Offset != rs[i].Offset {
				t.Errorf("%s[%d] record %d at offset %d, source offset %d", remote, part, i, r.Offset, rs[i].Offset)
			}
		}
	}
	fs := m.Status().Flows[0]
	if len(fs.Partitions) != 7 || fs.Lag != 0 {
		t.Errorf("status lists %d partitions with lag %d, want 7 and 0", len(fs.Partitions), fs.Lag)
	}
}

// TestIdentityBothWaysPartitionsAddedOnOneSide: identity a->b and b->a
// replicate topic t (1 partition). t grows to 3 partitions on b; the flow
// b->a grows a's t, and records produced on b to the new partitions, then
// on a to one of them, are each copied once to the other cluster, in the
// partition they were written to, and never back: each partition holds the
// same values on both clusters, none twice.
func TestIdentityBothWaysPartitionsAddedOnOneSide(t *testing.T) {
	t.Parallel()
	p := &testcluster.Pair{Source: testcluster.NewFake(t, "a"), Target: testcluster.NewFake(t, "b")}
	testcluster.CreateTopic(t, &p.Source, "t", 1, nil)
	ab, ba := fastFlow(p), fastFlow(p)
	ab.Topics, ba.Topics = []string{"t"}, []string{"t"}
	ba.Source, ba.Target = p.Target.Alias, p.Source.Alias
	ab.Policy, ba.Policy = identity(t, ab.Source), identity(t, ba.Source)
	ab.DisableHeartbeats, ba.DisableHeartbeats = true, true
	_, stop := runMirror(t, append(clusterOpts(p), WithFlow(ab), WithFlow(ba))...)
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: "t", Partition: 0, Value: []byte("a-p0")})
	testcluster.Eventually(t, 20*time.Second, "t created on b", func() (bool, string) {
		n := topicNames(t, &p.Target, "t")
		return len(n) == 1, fmt.Sprint(n)
	})
	testcluster.Eventually(t, 20*time.Second, "a-p0 on b", func() (bool, string) {
		v := values(t, &p.Target, "t")
		return v["a-p0"] == 1, fmt.Sprint(v)
	})
	if _, err := testcluster.Admin(t, &p.Target).UpdatePartitions(context.Background(), 3, "t"); err != nil {
		t.Fatal(err)
	}
	testcluster.Produce(t, &p.Target, &kgo.Record{Topic: "t", Partition: 1, Value: []byte("b-p1")}, &kgo.Record{Topic: "t", Partition: 2, Value: []byte("b-p2")})
	testcluster.Eventually(t, 20*time.Second, "b's records on a", func() (bool, string) {
		v := values(t, &p.Source, "t")
		return v["b-p1"] == 1 && v["b-p2"] == 1, fmt.Sprint(v)
	})
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: "t", Partition: 2, Value: []byte("a-p2")})
	testcluster.Eventually(t, 20*time.Second, "a-p2 on b", func() (bool, string) {
		v := values(t, &p.Target, "t")
		return v["a-p2"] == 1, fmt.Sprint(v)
	})
	time.Sleep(time.Second) // about five refreshes: anything copied back would have landed
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[int32]string{0: "[a-p0]", 1: "[b-p1]", 2: "[b-p2 a-p2]"}
	for _, c := range []*testcluster.Cluster{&p.Source, &p.Target} {
		got := testcluster.ReadAll(t, c, "t")
		if len(got) != 3 {
			t.Errorf("%s: t has records in %d partitions, want 3", c.Alias, len(got))
		}
		for part, w := range want {
			if g := fmt.Sprint(recordValues(got[part])); g != w {
				t.Errorf("%s: t[%d] holds %s, want %s", c.Alias, part, g, w)
			}
		}
	}
}
