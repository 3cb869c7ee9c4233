package interop

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
)

// eosMM2Props is resumeMM2Props with Apache MM2 in exactly-once mode
// (KIP-618): the target's workers support exactly-once source connectors,
// the connector requires it, and the source consumer reads read_committed
// (MirrorSourceConnector reports exactly-once support only then). The
// internal REST server (KIP-710) is what dedicated mode needs for the
// fencing round of exactly-once tasks.
func eosMM2Props(p *testcluster.Pair, topic string, restPort int) string {
	return mm2Properties(p, []string{regexp.QuoteMeta(topic)}, []string{regexp.QuoteMeta(p.Group("nogroup"))},
		p.Target.Alias+".exactly.once.source.support = enabled",
		"exactly.once.support = required",
		p.Source.Alias+".consumer.isolation.level = read_committed",
		"dedicated.mode.enable.internal.rest = true",
		fmt.Sprintf("listeners = http://127.0.0.1:%d", restPort))
}

// committedValues reads the remote topic read_committed and returns each
// partition's values in order.
func committedValues(t *testing.T, c *testcluster.Cluster, topic string) map[int32][]string {
	t.Helper()
	recs, err := testcluster.ReadTopic(context.Background(), c.Opts(), topic, true)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32][]string{}
	for part, rs := range recs {
		for _, r := range rs {
			out[part] = append(out[part], string(r.Value))
		}
	}
	return out
}

func valuesUpTo(partitions int32, n int) map[int32][]string {
	out := map[int32][]string{}
	for part := range partitions {
		for i := range n {
			out[part] = append(out[part], fmt.Sprint(i))
		}
	}
	return out
}

// TestResumeFromMM2ExactlyOnce: Apache MM2 in exactly-once mode replicates
// and stops; kmirror in exactly-once mode takes over from the resume points
// MM2 wrote in its transactions: a read_committed reader of the remote
// topic sees every source record once, in order.
func TestResumeFromMM2ExactlyOnce(t *testing.T) {
	e := setup(t, "ea", "eb")
	p := e.p
	topic := p.Topic("payments")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceRange(t, &p.Source, topic, 2, 0, 30)

	m := e.startMM2(t, "mm2-eos", eosMM2Props(p, topic, 19293))
	testcluster.Eventually(t, 90*time.Second, "MM2 committed 30 records per partition", func() (bool, string) {
		got := resumePoints(t, p, topic)
		return cmp.Equal(got, map[int32]int64{0: 29, 1: 29}), fmt.Sprint(got)
	})
	m.stop(t)

	produceRange(t, &p.Source, topic, 2, 30, 50)
	fc := fastFlow(p.Source.Alias, p.Target.Alias, regexp.QuoteMeta(topic))
	fc.DisableCheckpoints = true
	fc.ExactlyOnce = true
	km, stop := e.runMirror(t, "kmirror-eos", clusterOpt(p.Source.Alias, &p.Source), clusterOpt(p.Target.Alias, &p.Target), mirror.WithFlow(fc))
	testcluster.Eventually(t, 60*time.Second, "kmirror caught up", func() (bool, string) {
		st := km.Status().Flows[0]
		return st.Lag == 0 && st.Records >= 40, fmt.Sprintf("%d records, lag %d", st.Records, st.Lag)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := km.Status().Flows[0]; st.Records != 40 {
		t.Errorf("kmirror replicated %d records, want 40 (20 per partition after MM2's 30)", st.Records)
	}
	if diff := cmp.Diff(valuesUpTo(2, 50), committedValues(t, &p.Target, remote)); diff != "" {
		t.Errorf("remote topic %s, read_committed (-want +got):\n%s", remote, diff)
	}
	assertTransactional(t, &p.Target, remote)
}

// assertTransactional checks that every record of topic on c was written
// in a transaction (both writers ran exactly once).
func assertTransactional(t *testing.T, c *testcluster.Cluster, topic string) {
	t.Helper()
	for part, rs := range testcluster.ReadAll(t, c, topic) {
		for _, r := range rs {
			if !r.Attrs.IsTransactional() {
				t.Errorf("%s[%d]@%d (%s) was not written in a transaction", topic, part, r.Offset, r.Value)
				return
			}
		}
	}
}

// TestMM2ResumesFromKmirrorExactlyOnce is the reverse: kmirror in
// exactly-once mode replicates and stops, then Apache MM2 in exactly-once
// mode (the only MM2 that may take over: a read_uncommitted reader of the
// resume points could take an aborted one) resumes after kmirror's
// committed resume points.
func TestMM2ResumesFromKmirrorExactlyOnce(t *testing.T) {
	e := setup(t, "ec", "ed")
	p := e.p
	topic := p.Topic("payments")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceRange(t, &p.Source, topic, 2, 0, 30)

	fc := fastFlow(p.Source.Alias, p.Target.Alias, regexp.QuoteMeta(topic))
	fc.DisableCheckpoints = true
	fc.ExactlyOnce = true
	km, stop := e.runMirror(t, "kmirror-eos", clusterOpt(p.Source.Alias, &p.Source), clusterOpt(p.Target.Alias, &p.Target), mirror.WithFlow(fc))
	testcluster.Eventually(t, 60*time.Second, "kmirror committed 30 records per partition", func() (bool, string) {
		st := km.Status().Flows[0]
		return st.Lag == 0 && st.Records >= 60, fmt.Sprintf("%d records, lag %d", st.Records, st.Lag)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if diff := cmp.Diff(map[int32]int64{0: 29, 1: 29}, resumePoints(t, p, topic)); diff != "" {
		t.Fatalf("resume points kmirror committed (-want +got):\n%s", diff)
	}

	produceRange(t, &p.Source, topic, 2, 30, 50)
	m := e.startMM2(t, "mm2-eos", eosMM2Props(p, topic, 19294))
	testcluster.Eventually(t, 90*time.Second, "MM2 committed up to 49", func() (bool, string) {
		got := resumePoints(t, p, topic)
		return cmp.Equal(got, map[int32]int64{0: 49, 1: 49}), fmt.Sprint(got)
	})
	m.stop(t)
	if diff := cmp.Diff(valuesUpTo(2, 50), committedValues(t, &p.Target, remote)); diff != "" {
		t.Errorf("remote topic %s, read_committed (-want +got):\n%s", remote, diff)
	}
	assertTransactional(t, &p.Target, remote)
}
