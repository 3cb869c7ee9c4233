package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTopicRemotelyNamedLikeCheckpointsTopicNotReplicated: a user topic
// "checkpoints.internal" on a (not internal itself: Kafka 4.0's rule only
// counts names ending with ".checkpoints.internal") has the remote name
// "a.checkpoints.internal" under the default policy: the checkpoints topic
// of flow a->b on b. It was replicated into it, so the checkpoints topic
// held a record that is no checkpoint (every translation reading it fails
// to decode it). Now it is skipped with a WARN naming the remote topic,
// the flow's other topic is replicated, and every record of
// a.checkpoints.internal is a checkpoint of group g.
func TestTopicRemotelyNamedLikeCheckpointsTopicNotReplicated(t *testing.T) {
	t.Parallel()
	p := &testcluster.Pair{Source: testcluster.NewFake(t, "a"), Target: testcluster.NewFake(t, "b")}
	for _, tn := range []string{"checkpoints.internal", "orders"} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: tn, Key: []byte("k"), Value: []byte("user record of " + tn)})
	}
	gcl := testcluster.Client(t, &p.Source, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders"))
	if err := gcl.CommitRecords(context.Background(), &kgo.Record{Topic: "orders", Partition: 0, Offset: 0, LeaderEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	fc := fastFlow(p)
	fc.Topics = []string{"checkpoints\\.internal", "orders"}
	var lb logBuf
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	waitReplicated(t, m, 1)
	testcluster.Eventually(t, 20*time.Second, "a checkpoint of g", func() (bool, string) {
		n := 0
		for _, rs := range testcluster.ReadAll(t, &p.Target, "a.checkpoints.internal") {
			n += len(rs)
		}
		return n > 0, fmt.Sprint(n)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, rs := range testcluster.ReadAll(t, &p.Target, "a.checkpoints.internal") {
		for _, r := range rs {
			cp, err := checkpoint.DecodeCheckpoint(r.Key, r.Value)
			if err != nil || cp.Group != "g" || cp.Topic != "a.orders" {
				t.Errorf("a.checkpoints.internal offset %d holds %q=%q (%+v, %v), want only checkpoints of g on a.orders", r.Offset, r.Key, r.Value, cp, err)
			}
		}
	}
	sk := m.Status().Flows[0].Skipped
	if len(sk) != 1 || sk[0].Topic != "checkpoints.internal" || sk[0].Replicated ||
		!strings.Contains(sk[0].Reason, "its remote topic a.checkpoints.internal on b is named like an internal topic") {
		t.Errorf("Skipped = %+v, want checkpoints.internal named with its remote topic", sk)
	}
	if n := len(lb.lines("level=WARN", `msg="topic not replicated"`, "topic=checkpoints.internal")); n != 1 {
		t.Errorf("%d WARN lines for checkpoints.internal, want 1", n)
	}
	if got := values(t, &p.Target, "a.orders"); got["user record of orders"] != 1 || len(got) != 1 {
		t.Errorf("a.orders on b holds %v, want the one record of orders", got)
	}
}
