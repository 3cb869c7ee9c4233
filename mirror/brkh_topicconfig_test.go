package mirror

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBrkHRemoteNameAtLengthLimit: a remote topic name of exactly 249
// characters (Kafka's limit) is created and replicated; one character
// more is a topic error naming the length, and the other topic goes on.
func TestBrkHRemoteNameAtLengthLimit(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	prefix := p.Source.Alias + "."
	fit := strings.Repeat("f", maxTopicName-len(prefix))
	long := strings.Repeat("l", maxTopicName-len(prefix)+1)
	testcluster.CreateTopic(t, &p.Source, fit, 2, nil)
	testcluster.CreateTopic(t, &p.Source, long, 1, nil)
	testcluster.Produce(t, &p.Source, append(valueRecords(fit, "f", 0, 3), valueRecords(long, "l", 0, 2)...)...)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	wantErr := fmt.Sprintf("not creating %s on %s: the remote topic name has %d characters, Kafka allows %d: exclude %s with topics.exclude, or rename it on the source",
		prefix+long, p.Target.Alias, maxTopicName+1, maxTopicName, long)
	testcluster.Eventually(t, 30*time.Second, "fit replicated, long refused", func() (bool, string) {
		fs := m.Status().Flows[0]
		fp, ok := partitionOf(fs, fit)
		return ok && fp.Replicated == 3 && len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Error == wantErr && fs.TopicErrors[0].Lag == 2,
			fmt.Sprintf("%+v %+v", fs.Partitions, fs.TopicErrors)
	})
	got := testcluster.ReadAll(t, &p.Target, prefix+fit)
	if n := len(got[0]) + len(got[1]); n != 3 {
		t.Fatalf("%d records on %s, want 3", n, prefix+fit)
	}
}

// TestBrkHPrecreatedFewerPartitionsOtherConfigs: the remote topic exists
// (made by an operator) with 1 partition and cleanup.policy=delete while
// the source topic has 3 partitions and cleanup.policy=compact: the
// remote topic gets 3 partitions, the source's compact, and each record
// lands in its own partition.
func TestBrkHPrecreatedFewerPartitionsOtherConfigs(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	compact, del, own := "compact", "delete", "86400000"
	testcluster.CreateTopic(t, &p.Source, orders, 3, map[string]*string{"cleanup.policy": &compact})
	testcluster.CreateTopic(t, &p.Target, remote, 1, map[string]*string{"cleanup.policy": &del, "retention.ms": &own})
	recs := workloadOpts(orders, 3, 4, time.Now().Add(-time.Minute), false)
	testcluster.Produce(t, &p.Source, recs...)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 12)
	dstAdm := testcluster.Admin(t, &p.Target)
	testcluster.Eventually(t, 10*time.Second, "configs synced", func() (bool, string) {
		o := describeOverrides(t, dstAdm, remote)
		return o["cleanup.policy"] == compact && o["retention.ms"] == own, fmt.Sprint(o)
	})
	got := testcluster.ReadAll(t, &p.Target, remote)
	for pt := int32(0); pt < 3; pt++ {
		if len(got[pt]) != 4 {
			t.Fatalf("partition %d: %d records, want 4", pt, len(got[pt]))
		}
		for i, r := range got[pt] {
			want := fmt.Sprintf("%s/%d/%d", orders, pt, i)
			if string(r.Value) != want && !(i%5 == 1 && r.Value == nil) {
				t.Fatalf("partition %d record %d: %q, want %q", pt, i, r.Value, want)
			}
		}
	}
}

// TestBrkHConfigSyncOneTopicRefused: the target refuses one topic's
// config change; the other topic's change is synced, and the refused one
// once the target accepts it.
func TestBrkHConfigSyncOneTopicRefused(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	a, b := p.Topic("a"), p.Topic("b")
	ra, rb := p.Source.Alias+"."+a, p.Source.Alias+"."+b
	ret, newRet := "7200000", "3600000"
	for _, tn := range []string{a, b} {
		testcluster.CreateTopic(t, &p.Source, tn, 1, map[string]*string{"retention.ms": &ret})
	}
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	fc.Topics = []string{regexp.QuoteMeta(a), regexp.QuoteMeta(b)}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	dstAdm, srcAdm := testcluster.Admin(t, &p.Target), testcluster.Admin(t, &p.Source)
	testcluster.Eventually(t, 20*time.Second, "both remote topics", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 2, fmt.Sprint(m.Status().Flows[0])
	})
	fault := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.IncrementalAlterConfigs}, Resource: ra, Err: kerr.PolicyViolation, Count: -1})
	for _, tn := range []string{a, b} {
		if _, err := srcAdm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &newRet}}, tn); err != nil {
			t.Fatal(err)
		}
	}
	testcluster.Eventually(t, 20*time.Second, "b synced, a's refusal a topic error", func() (bool, string) {
		fs := m.Status().Flows[0]
		return describeOverrides(t, dstAdm, rb)["retention.ms"] == newRet && len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Topic == a && fs.TopicErrors[0].Op == TopicOpConfig,
			fmt.Sprintf("%+v", fs.TopicErrors)
	})
	if got := describeOverrides(t, dstAdm, ra)["retention.ms"]; got != ret {
		t.Fatalf("%s retention.ms %q while refused, want %s", ra, got, ret)
	}
	fault.Remove()
	testcluster.Eventually(t, 40*time.Second, "a synced, error cleared", func() (bool, string) {
		fs := m.Status().Flows[0]
		return describeOverrides(t, dstAdm, ra)["retention.ms"] == newRet && len(fs.TopicErrors) == 0, fmt.Sprintf("%+v", fs.TopicErrors)
	})
}

// TestBrkHIdentityNameAtLengthLimit: identity policy, a 249-character
// topic keeps its name on the target.
func TestBrkHIdentityNameAtLengthLimit(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	name := strings.Repeat("i", maxTopicName)
	compact := "compact"
	testcluster.CreateTopic(t, &p.Source, name, 1, map[string]*string{"cleanup.policy": &compact})
	testcluster.Produce(t, &p.Source, workloadOpts(name, 1, 3, time.Now().Add(-time.Minute), false)...)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	fc.Policy = identity(t, p.Source.Alias)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 3)
	if o := describeOverrides(t, testcluster.Admin(t, &p.Target), name); o["cleanup.policy"] != compact {
		t.Fatalf("overrides %v", o)
	}
}

// TestBrkHUseDefaultsFromSource: use.defaults.from=source copies the
// source topic's default values too at creation, except the excluded keys.
func TestBrkHUseDefaultsFromSource(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Topic("defs")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	fc.UseDefaultsFromSource = true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 20*time.Second, "remote topic created", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 1, ""
	})
	// kfake's topic defaults, minus the excluded min.insync.replicas and
	// message.timestamp.type.
	want := map[string]string{"cleanup.policy": "delete", "compression.type": "producer", "delete.retention.ms": "86400000",
		"max.message.bytes": "1048588", "retention.bytes": "-1", "retention.ms": "604800000", "segment.bytes": "104857600", "segment.ms": "604800000"}
	if diff := cmp.Diff(want, describeOverrides(t, testcluster.Admin(t, &p.Target), remote)); diff != "" {
		t.Errorf("remote topic overrides (-want +got):\n%s", diff)
	}
}

// TestBrkHOwnExcludeList: a config.properties.exclude of one's own
// replaces the default list (min.insync.replicas is copied) and is
// full-matched as a regex (segment\..* excludes segment.ms and
// segment.bytes).
func TestBrkHOwnExcludeList(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Topic("own")
	remote := p.Source.Alias + "." + topic
	two, seg, ret, segb := "2", "3600000", "7200000", "2000000"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"min.insync.replicas": &two, "segment.ms": &seg, "segment.bytes": &segb, "retention.ms": &ret})
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	fc.ConfigPropertiesExclude = []string{`segment\..*`}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 20*time.Second, "remote topic created", func() (bool, string) {
		return len(m.Status().Flows[0].Partitions) == 1, ""
	})
	want := map[string]string{"min.insync.replicas": two, "retention.ms": ret}
	got := describeOverrides(t, testcluster.Admin(t, &p.Target), remote)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("remote topic overrides (-want +got):\n%s", diff)
	}
}

// TestBrkHIncreaseRefusedThenDone: with refresh.topics.enabled=false, a
// remote topic made in advance with 1 partition of the source's 3, whose
// increase the target refuses at first: partition 0 replicates, the
// others are a topic error with their lag, and once the target allows it
// (the first round's failures are retried) every record is copied.
func TestBrkHIncreaseRefusedThenDone(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	testcluster.CreateTopic(t, &p.Source, orders, 3, nil)
	testcluster.CreateTopic(t, &p.Target, remote, 1, nil)
	fault := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreatePartitions}, Topic: remote, Err: kerr.PolicyViolation, Count: -1})
	testcluster.Produce(t, &p.Source, workloadOpts(orders, 3, 4, time.Now().Add(-time.Minute), false)...)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	fc.DisableRefreshTopics = true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 20*time.Second, "increase refused", func() (bool, string) {
		fs := m.Status().Flows[0]
		pp, ok := partitionOf(fs, orders)
		return ok && pp.Replicated == 4 && len(fs.TopicErrors) == 1 && fs.TopicErrors[0].Op == TopicOpPartitions && fs.TopicErrors[0].Lag == 8, fmt.Sprintf("%+v %+v", fs.Partitions, fs.TopicErrors)
	})
	fault.Remove()
	waitReplicated(t, m, 12)
	got := testcluster.ReadAll(t, &p.Target, remote)
	for pt := int32(0); pt < 3; pt++ {
		if len(got[pt]) != 4 {
			t.Fatalf("partition %d: %d records", pt, len(got[pt]))
		}
	}
	if fs := m.Status().Flows[0]; len(fs.TopicErrors) != 0 {
		t.Fatalf("%+v", fs.TopicErrors)
	}
}

// TestBrkHRemoteDeletedRefreshOffCreatedAgain: refresh.topics.enabled=false,
// and an operator deletes a remote topic while the flow runs. The
// partition's error said "deleted? discovery re-creates it", but with
// refresh off discovery only retried the creations that failed at start,
// so the partition stayed RETRYING, its records uncopied, until a
// restart. The remote topic is created again (the topic was replicated
// since the start: no new topic), the source's records are copied into it,
// and a source topic created after the start is still not replicated.
func TestBrkHRemoteDeletedRefreshOffCreatedAgain(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	orders, late := p.Topic("orders"), p.Topic("late")
	remote, lateRemote := p.Source.Alias+"."+orders, p.Source.Alias+"."+late
	ret := "7200000"
	testcluster.CreateTopic(t, &p.Source, orders, 1, map[string]*string{"retention.ms": &ret})
	testcluster.Produce(t, &p.Source, valueRecords(orders, "o", 0, 3)...)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	fc.DisableRefreshTopics = true
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 3)
	testcluster.CreateTopic(t, &p.Source, late, 1, nil)
	dstAdm := testcluster.Admin(t, &p.Target)
	if _, err := dstAdm.DeleteTopics(context.Background(), remote); err != nil {
		t.Fatal(err)
	}
	testcluster.Produce(t, &p.Source, valueRecords(orders, "o", 3, 5)...)
	testcluster.Eventually(t, 30*time.Second, "the remote topic created again with the source's records", func() (bool, string) {
		fs := m.Status().Flows[0]
		op, ok := partitionOf(fs, orders)
		if !ok || op.State != StateRunning || op.Lag != 0 || op.Replicated != 5 {
			return false, fmt.Sprintf("%+v %+v", fs.Partitions, fs.TopicErrors)
		}
		td, err := dstAdm.ListTopics(context.Background(), remote)
		return err == nil && td[remote].Err == nil, fmt.Sprint(td[remote].Err, err)
	})
	got := testcluster.ReadAll(t, &p.Target, remote)[0]
	var vals []string
	for _, r := range got {
		vals = append(vals, string(r.Value))
	}
	if diff := cmp.Diff([]string{"o0", "o1", "o2", "o3", "o4"}, vals); diff != "" {
		t.Errorf("%s after its re-creation (-want +got):\n%s", remote, diff)
	}
	if o := describeOverrides(t, dstAdm, remote); o["retention.ms"] != ret {
		t.Errorf("%s overrides %v, want retention.ms=%s", remote, o, ret)
	}
	td, err := dstAdm.ListTopics(context.Background(), lateRemote)
	if err != nil {
		t.Fatal(err)
	}
	if d := td[lateRemote]; d.Err == nil {
		t.Errorf("%s created with refresh.topics.enabled=false (%d partitions)", lateRemote, len(d.Partitions))
	}
}
