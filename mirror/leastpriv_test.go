package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// preTopic is a topic ACLS.md's least-privilege profile creates in advance.
type preTopic struct {
	c          *testcluster.Cluster
	name       string
	partitions int32
	configs    map[string]*string
}

func strp(s string) *string { return &s }

// leastPrivilegeTopics returns every topic flow fc (offset syncs at the
// source, or at the target with offset-syncs.topic.location=target, heartbeats, checkpoints, no heartbeat replication) needs, as
// ACLS.md's least-privilege profile lists them, for the source topic orders
// with partitions partitions.
func leastPrivilegeTopics(p *testcluster.Pair, fc FlowConfig, orders string, partitions int32) []preTopic {
	compact := map[string]*string{"cleanup.policy": strp("compact")}
	syncs, at := "mm2-offset-syncs."+p.Target.Alias+".internal", &p.Source
	if fc.OffsetSyncsTopicLocationTarget {
		syncs, at = "mm2-offset-syncs."+p.Source.Alias+".internal", &p.Target // ACLS.md: named after the other cluster
	}
	return []preTopic{
		{at, syncs, 1, compact},
		{at, checkpoint.OffsetRunsTopic(syncs), 1, checkpoint.OffsetRunsTopicConfig()},
		{&p.Target, p.Source.Alias + "." + orders, partitions, nil},
		{&p.Target, connectoffsets.TopicName(p.Source.Alias), connectoffsets.DefaultPartitions, compact},
		{&p.Target, unitsTopicName(p.Source.Alias), int32(fc.Tasks), compact},
		{&p.Target, statustopic.Topic(p.Source.Alias), 1, compact},
		{&p.Target, p.Source.Alias + ".checkpoints.internal", 1, compact},
		{&p.Target, "heartbeats", 1, compact},
	}
}

// precreate creates on kfake, in advance, the topics of
// leastPrivilegeTopics for one-partition source topic orders that edit
// keeps (edit may change a topic's partitions or configs first).
func precreate(t *testing.T, p *testcluster.Pair, fc FlowConfig, orders string, edit func(*preTopic) bool) {
	t.Helper()
	for _, pt := range leastPrivilegeTopics(p, fc, orders, 1) {
		if edit(&pt) {
			testcluster.CreateTopic(t, pt.c, pt.name, pt.partitions, pt.configs)
		}
	}
}

// createShared creates topic on c; "heartbeats", which the shared real
// clusters may already have, may exist.
func createShared(t *testing.T, c *testcluster.Cluster, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := testcluster.Admin(t, c).CreateTopic(ctx, partitions, -1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !(topic == "heartbeats" && errors.Is(err, kerr.TopicAlreadyExists)) {
		t.Fatalf("create topic %s on %s: %v", topic, c.Alias, err)
	}
}

// fetchCommitted returns group's committed offsets for topic on c
// (partition -> offset) as the admin; an absent group has none.
func fetchCommitted(c *testcluster.Cluster, group, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(c.Opts()...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.Err == nil && o.At >= 0 {
			out[p] = o.At
		}
	}
	return out, nil
}

// leastPrivilegeFlow is the flow of the least-privilege tests: 2 tasks,
// checkpoints, group offset sync, heartbeats, offset syncs at the source.
func leastPrivilegeFlow(p *testcluster.Pair) FlowConfig {
	fc := trFlow(p)
	fc.Tasks = 2
	fc.DisableHeartbeatsReplication = true // src.heartbeats would be one more remote topic to create
	fc.DisableTopicACLSync = true          // ACLS.md's profile: ALTER on the cluster is not least privilege
	return fc
}

// refuseCreates answers every CreateTopics on both kfake clusters with
// TOPIC_AUTHORIZATION_FAILED, as a principal without CREATE gets.
func refuseCreates(t *testing.T, p *testcluster.Pair) {
	t.Helper()
	for _, c := range []*testcluster.Cluster{&p.Source, &p.Target} {
		h := c.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Err: kerr.TopicAuthorizationFailed, Count: -1})
		t.Cleanup(h.Remove)
	}
}

// runLeastPrivilege pre-creates every topic (with admin, which may create),
// then refuses creation (refuse) and runs fc with clusters reaching the clusters as kmirror (which may
// not) and asserts 300 of 300 records copied with their exact contents,
// checkpoints written, group offsets synced and heartbeats written.
func runLeastPrivilege(t *testing.T, p *testcluster.Pair, fc FlowConfig, admin map[string]*testcluster.Cluster, kmirror []Opt, refuse func()) {
	t.Helper()
	orders, g1 := p.Topic("orders"), p.Group("g1")
	const parts = 3
	for _, pt := range leastPrivilegeTopics(p, fc, orders, parts) {
		createShared(t, admin[pt.c.Alias], pt.name, pt.partitions, pt.configs)
	}
	testcluster.CreateTopic(t, admin[p.Source.Alias], orders, parts, nil)
	var rs []*kgo.Record
	base := time.Now().Add(-time.Minute) // recent: real brokers delete records older than their retention
	for i := 0; i < 300; i++ {
		rs = append(rs, &kgo.Record{Topic: orders, Partition: int32(i % parts), Key: []byte(fmt.Sprintf("k%d", i)),
			Value: []byte(fmt.Sprintf("v%d", i)), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{byte(i)}}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond)})
	}
	testcluster.Produce(t, admin[p.Source.Alias], rs...)
	refuse()
	trCommit(t, admin[p.Source.Alias], g1, orders, map[int32]int64{0: 100, 1: 100, 2: 60})

	var lb logBuf
	opts := append(append([]Opt{}, kmirror...), WithFlow(fc), WithLogger(lb.logger()))
	m, stop := runMirror(t, opts...)
	remote := p.Source.Alias + "." + orders
	testcluster.Eventually(t, 60*time.Second, "300 records copied, group offsets synced, heartbeats written", func() (bool, string) {
		st := m.Status().Flows[0]
		got, err := fetchCommitted(admin[p.Target.Alias], g1, remote)
		if err != nil {
			return false, err.Error() // a fresh real cluster's coordinator may not be ready
		}
		want := map[int32]int64{0: 100, 1: 100, 2: 60}
		return st.Records == 300 && st.Lag == 0 && cmp.Equal(got, want) && !st.LastHeartbeat.IsZero(),
			fmt.Sprintf("state %s %q, %d records, lag %d, %s offsets %v, partitions %+v, topic errors %+v; log: %v", st.State, st.Error, st.Records, st.Lag, g1, got,
				st.Partitions, st.TopicErrors, lb.lines("level=WARN"))
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	srcID := clusterID(t, admin[p.Source.Alias])
	src, dst := testcluster.ReadAll(t, admin[p.Source.Alias], orders), testcluster.ReadAll(t, admin[p.Target.Alias], remote)
	n := 0
	for part := int32(0); part < parts; part++ {
		if d := cmp.Diff(recsOf(src[part]), copiesOf(t, dst[part], srcID, src[part])); d != "" {
			t.Errorf("partition %d of %s (-source +target):\n%s", part, remote, d)
		}
		n += len(dst[part])
	}
	if n != 300 {
		t.Errorf("%d records on %s, want 300", n, remote)
	}
	cps := map[int32]int64{}
	for _, recs := range testcluster.ReadAll(t, admin[p.Target.Alias], p.Source.Alias+".checkpoints.internal") {
		for _, r := range recs {
			cp, err := checkpoint.DecodeCheckpoint(r.Key, r.Value)
			if err != nil {
				t.Fatal(err)
			}
			if cp.Group == g1 && cp.Topic == remote {
				cps[cp.Partition] = cp.DownstreamOffset
			}
		}
	}
	if want := (map[int32]int64{0: 100, 1: 100, 2: 60}); !cmp.Equal(cps, want) {
		t.Errorf("newest checkpoints of %s: %v, want %v", g1, cps, want)
	}
	if l := lb.lines("AUTHORIZATION_FAILED", "level=ERROR"); len(l) != 0 {
		t.Errorf("errors logged: %v", l)
	}
	for _, l := range lb.lines("level=WARN") {
		t.Log(l)
	}
}

// TestLeastPrivilegeTopicsCreatedInAdvance (issue 18, part 3; KAFKA-15465):
// every topic kmirror needs exists and CreateTopics is answered
// TOPIC_AUTHORIZATION_FAILED on both clusters (a principal without CREATE).
// The flow runs: 300 of 300 records copied with their exact contents,
// checkpoints written, group offsets synced.
func TestLeastPrivilegeTopicsCreatedInAdvance(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("refusing CreateTopics needs kfake faults; TestRealAuthorizerLeastPrivilege runs this against a real authorizer")
	}
	admin := map[string]*testcluster.Cluster{p.Source.Alias: &p.Source, p.Target.Alias: &p.Target}
	runLeastPrivilege(t, p, leastPrivilegeFlow(p), admin, clusterOpts(p), func() { refuseCreates(t, p) })
}

// TestLeastPrivilegeMissingTopicNamesACLAndAlternative: with creation
// refused and the offset-syncs topic not created in advance, the flow
// retries with an error naming the topic, the cluster, the ACL to grant and
// how to create the topic in advance.
func TestLeastPrivilegeMissingTopicNamesACLAndAlternative(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("refusing CreateTopics needs kfake faults")
	}
	fc := leastPrivilegeFlow(p)
	orders := p.Topic("orders")
	syncs := "mm2-offset-syncs." + p.Target.Alias + ".internal"
	precreate(t, p, fc, orders, func(pt *preTopic) bool { return pt.name != syncs })
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	refuseCreates(t, p)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	want := []string{"topic " + syncs + " is missing on " + p.Source.Alias, "TOPIC_AUTHORIZATION_FAILED",
		"CREATE on the cluster or on topic " + syncs, "create the topic in advance with 1 partition(s), cleanup.policy=compact"}
	testcluster.Eventually(t, 30*time.Second, "flow error names the topic, the ACL and the alternative", func() (bool, string) {
		st := m.Status().Flows[0]
		for _, w := range want {
			if !strings.Contains(st.Error, w) {
				return false, fmt.Sprintf("state %s, error %q lacks %q", st.State, st.Error, w)
			}
		}
		return st.State == StateRetrying, ""
	})
}

// TestLeastPrivilegeUnitsTopicWrongPartitions: a coordination topic created
// in advance with more partitions than tasks.max is accepted (issue 20: it
// keeps the largest count a member needed; only the first tasks.max are
// slots); one with fewer is grown to tasks.max, and when the target
// refuses that (no ALTER), the flow retries with an error naming the topic,
// both counts, the ACL and the command that adds the partitions.
func TestLeastPrivilegeUnitsTopicWrongPartitions(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("refusing CreateTopics needs kfake faults")
	}
	fc := leastPrivilegeFlow(p)
	orders := p.Topic("orders")
	units := unitsTopicName(p.Source.Alias)
	precreate(t, p, fc, orders, func(pt *preTopic) bool {
		if pt.name == units {
			pt.partitions = 3
		}
		return true
	})
	refuseCreates(t, p)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "2 slots over the 3 partitions", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRunning && slices.Equal(fs.Member.Slots, []int32{0, 1}), fmt.Sprintf("%s %s %v", fs.State, fs.Error, fs.Member.Slots)
	})

	p2 := testcluster.New(t, "src", "dst")
	fc2 := leastPrivilegeFlow(p2)
	fc2.Tasks = 3
	units2 := unitsTopicName(p2.Source.Alias)
	precreate(t, p2, fc2, p2.Topic("orders"), func(pt *preTopic) bool {
		if pt.name == units2 {
			pt.partitions = 2
		}
		return true
	})
	refuseCreates(t, p2)
	h := p2.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreatePartitions}, Err: kerr.TopicAuthorizationFailed, Count: -1})
	m2, _ := runMirror(t, append(clusterOpts(p2), WithFlow(fc2))...)
	testcluster.Eventually(t, 30*time.Second, "RETRYING, naming the ACL and the command", func() (bool, string) {
		fs := m2.Status().Flows[0]
		return fs.State == StateRetrying && strings.Contains(fs.Error, "adding partitions to the coordination topic "+units2+" on "+p2.Target.Alias+" (from 2 to tasks.max 3)") &&
			strings.Contains(fs.Error, "TOPIC_AUTHORIZATION_FAILED") && strings.Contains(fs.Error, "grant ALTER on topic "+units2) &&
			strings.Contains(fs.Error, "--alter --topic "+units2+" --partitions 3"), fs.Error
	})
	h.Remove()
	testcluster.Eventually(t, 30*time.Second, "3 slots once the partitions can be added", func() (bool, string) {
		fs := m2.Status().Flows[0]
		return fs.State == StateRunning && len(fs.Member.Slots) == 3, fmt.Sprintf("%s %s %v", fs.State, fs.Error, fs.Member.Slots)
	})
}

// TestLeastPrivilegeResumeTopicNotCompacted: a resume-point topic created in
// advance without compaction (its resume points would expire) is refused
// with an error naming the topic and the policy to set.
func TestLeastPrivilegeResumeTopicNotCompacted(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("refusing CreateTopics needs kfake faults")
	}
	fc := leastPrivilegeFlow(p)
	orders := p.Topic("orders")
	resume := connectoffsets.TopicName(p.Source.Alias)
	precreate(t, p, fc, orders, func(pt *preTopic) bool {
		if pt.name == resume {
			pt.configs = map[string]*string{"cleanup.policy": strp("delete")}
		}
		return true
	})
	refuseCreates(t, p)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	want := "topic " + resume + " on " + p.Target.Alias + " has cleanup.policy=delete, kmirror needs it compacted"
	testcluster.Eventually(t, 30*time.Second, "flow error names the policy", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.State == StateRetrying && strings.Contains(st.Error, want), fmt.Sprintf("state %s, error %q", st.State, st.Error)
	})
}

// TestLeastPrivilegeMissingCheckpointsAndHeartbeatsTopics: with creation
// refused and neither the checkpoints nor the heartbeats topic created in
// advance, records are still copied, and the log names each missing topic
// with the ACL and how to create it (the emitters retry).
func TestLeastPrivilegeMissingCheckpointsAndHeartbeatsTopics(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("refusing CreateTopics needs kfake faults")
	}
	fc := leastPrivilegeFlow(p)
	orders := p.Topic("orders")
	cps := p.Source.Alias + ".checkpoints.internal"
	precreate(t, p, fc, orders, func(pt *preTopic) bool { return pt.name != cps && pt.name != "heartbeats" })
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 20)
	refuseCreates(t, p)
	var lb logBuf
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	waitReplicated(t, m, 20)
	for _, topic := range []string{cps, "heartbeats"} {
		want := "topic " + topic + " is missing on " + p.Target.Alias
		testcluster.Eventually(t, 30*time.Second, "log names "+topic, func() (bool, string) {
			l := lb.lines(want, "CREATE on the cluster or on topic "+topic, "create the topic in advance with 1 partition(s), cleanup.policy=compact")
			return len(l) > 0, fmt.Sprintf("no log line with %q", want)
		})
	}
}
