package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBrkHDotUnderscoreCollisionTwoFlows: two flows of one Mirror into
// cluster c with the identity policy, a->c replicating x.y and b->c x_y.
// Their remote topics differ only by '.' and '_', so c keeps only the one
// created first (x_y here). The topic error of x.y said "delete or rename
// x_y there": advice to delete the live remote topic of the other flow,
// which that flow would create again. It names the flow that replicates
// x_y and says to exclude one of the two topics.
func TestBrkHDotUnderscoreCollisionTwoFlows(t *testing.T) {
	t.Parallel()
	cs := []testcluster.Cluster{testcluster.NewFake(t, "a"), testcluster.NewFake(t, "b"), testcluster.NewFake(t, "c")}
	testcluster.CreateTopic(t, &cs[1], "x_y", 1, nil)
	testcluster.Produce(t, &cs[1], valueRecords("x_y", "b", 0, 2)...)
	var opts []Opt
	for _, c := range cs {
		opts = append(opts, WithCluster(ClusterConfig{Alias: c.Alias, Client: c.Opts()}))
	}
	for i, s := range cs[:2] {
		fc := FlowConfig{Source: s.Alias, Target: "c", Topics: []string{[]string{"x.y", "x_y"}[i]},
			RefreshTopicsInterval: 200 * time.Millisecond, SyncTopicConfigsInterval: 200 * time.Millisecond,
			OffsetFlushInterval: 100 * time.Millisecond, DisableHeartbeats: true, DisableCheckpoints: true,
			AdminTimeout: 10 * time.Second, Policy: identity(t, s.Alias)}
		opts = append(opts, WithFlow(fc))
	}
	m, _ := runMirror(t, opts...)
	flowOf := func(name string) FlowStatus {
		for _, fs := range m.Status().Flows {
			if fs.Name == name {
				return fs
			}
		}
		t.Fatalf("no flow %s", name)
		return FlowStatus{}
	}
	testcluster.Eventually(t, 20*time.Second, "x_y replicated by b->c", func() (bool, string) {
		fs := flowOf("b->c")
		return fs.Records == 2 && fs.Lag == 0, fmt.Sprintf("%+v", fs)
	})
	testcluster.CreateTopic(t, &cs[0], "x.y", 1, nil)
	testcluster.Produce(t, &cs[0], valueRecords("x.y", "a", 0, 3)...)
	wantErr := fmt.Sprintf("creating x.y on c: %s; x.y collides with topic x_y on c, the remote topic of x_y that flow b->c of this Mirror replicates (Kafka treats '.' and '_' in topic names alike, so only one of them can exist): exclude x.y from a->c or x_y from b->c with topics.exclude",
		kerr.InvalidTopicException)
	testcluster.Eventually(t, 20*time.Second, "x.y's collision named", func() (bool, string) {
		fs := flowOf("a->c")
		return len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Error == wantErr && fs.TopicErrors[0].Lag == 3, fmt.Sprintf("%+v", fs.TopicErrors)
	})
	got := testcluster.ReadAll(t, &cs[2], "x_y")
	if len(got[0]) != 2 || string(got[0][0].Value) != "b0" || string(got[0][1].Value) != "b1" {
		t.Fatalf("x_y on c: %d records", len(got[0]))
	}
}

// TestBrkHCreateAnsweredExistsNotLoggedCreated: the target answers the
// creation of a remote topic with TOPIC_ALREADY_EXISTS (another deployment
// made it since the listing). kmirror logged "remote topic created" with
// the configs it had copied, although it created nothing and the topic's
// configs were the other creator's. It logs that the topic exists, and
// "created" only for the creation that went through.
func TestBrkHCreateAnsweredExistsNotLoggedCreated(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	ret := "7200000"
	testcluster.CreateTopic(t, &p.Source, orders, 2, map[string]*string{"retention.ms": &ret})
	testcluster.Produce(t, &p.Source, valueRecords(orders, "o", 0, 3)...)
	exists := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: remote, Err: kerr.TopicAlreadyExists})
	defer exists.Remove()
	var lb logBuf
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	waitReplicated(t, m, 3)
	if got := describeOverrides(t, testcluster.Admin(t, &p.Target), remote)["retention.ms"]; got != ret {
		t.Fatalf("%s retention.ms %q, want %s", remote, got, ret)
	}
	if n := exists.Hits(); n != 1 {
		t.Fatalf("%d creations answered TOPIC_ALREADY_EXISTS, want 1", n)
	}
	if got := lb.lines("remote topic exists already", "topic="+remote); len(got) != 1 {
		t.Errorf("%d lines saying %s exists, want 1: %q", len(got), remote, got)
	}
	if got := lb.lines("remote topic created", "topic="+remote); len(got) != 1 {
		t.Errorf("%d lines saying %s was created, want 1: %q", len(got), remote, got)
	}
}

// TestBrkHRemoteDescribeConfigsRefusedSaysWhatToGrant: the target refuses
// DESCRIBE_CONFIGS on one remote topic (its ACLs grant it per prefix, and
// the topic falls outside). The config sync's topic error said only
// "TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics": it names
// the ACL to grant, where, and the other way out; the other topic's
// change is synced meanwhile.
func TestBrkHRemoteDescribeConfigsRefusedSaysWhatToGrant(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	a, b := p.Topic("a"), p.Topic("b")
	ra, rb := p.Source.Alias+"."+a, p.Source.Alias+"."+b
	for _, tn := range []string{a, b} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, nil)
	}
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 20*time.Second, "both remote topics", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 2, fmt.Sprint(m.Status().Flows[0])
	})
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeConfigs}, Resource: rb, Err: kerr.TopicAuthorizationFailed, Count: -1})
	ret := "7200000"
	setTopicConfig(t, &p.Source, a, "retention.ms", ret)
	dstAdm := testcluster.Admin(t, &p.Target)
	wantErr := fmt.Sprintf("describing configs of %s on %s: %s; kmirror may not read its configs: grant DESCRIBE_CONFIGS on topic %s on %s to kmirror's principal, or set sync.topic.configs.enabled=false",
		rb, p.Target.Alias, kerr.TopicAuthorizationFailed, rb, p.Target.Alias)
	testcluster.Eventually(t, 20*time.Second, "a synced, b's refusal named", func() (bool, string) {
		fs := m.Status().Flows[0]
		got := describeOverrides(t, dstAdm, ra)["retention.ms"]
		return got == ret && len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Topic == b && fs.TopicErrors[0].Op == TopicOpConfig && fs.TopicErrors[0].Error == wantErr,
			fmt.Sprintf("a retention.ms %q; %+v", got, fs.TopicErrors)
	})
}
