package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// Issue 18, part 2: a source topic's timestamp guard
// (message.timestamp.before.max.ms and its siblings) copied to the remote
// topic made the target refuse the source's history with
// INVALID_TIMESTAMP. kfake stores these topic configs but does not enforce
// them (it checks no record timestamp), so on kfake the tests prove the
// config handling; on real Kafka they also prove the records.

const (
	beforeKey = "message.timestamp.before.max.ms"
	afterKey  = "message.timestamp.after.max.ms"
	diffKey   = "message.timestamp.difference.max.ms" // removed in Kafka 4.0: kfake only
)

// stampedRecords returns n records of partition 0 of topic with values
// prefix-0 ... and timestamps base, base+1ms, ...
func stampedRecords(topic, prefix string, n int, base time.Time) []*kgo.Record {
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i)),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(prefix)}}}
	}
	return rs
}

// alterTopic applies alters to topic on c, failing the test on any error.
func alterTopic(t *testing.T, c *testcluster.Cluster, topic string, alters ...kadm.AlterConfig) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := testcluster.Admin(t, c).AlterTopicConfigs(ctx, alters, topic)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("altering %s on %s: %v", topic, c.Alias, err)
	}
	waitTopicConfigs(t, c, topic, alters...)
}

// waitTopicConfigs waits until c describes topic with alters applied (set
// keys with their values, deleted ones gone): a real broker applies an
// AlterConfigs asynchronously, so a record produced right after it may
// still meet the old configuration.
func waitTopicConfigs(t *testing.T, c *testcluster.Cluster, topic string, alters ...kadm.AlterConfig) {
	t.Helper()
	adm := testcluster.Admin(t, c)
	testcluster.Eventually(t, 30*time.Second, "topic configuration applied", func() (bool, string) {
		got := describeOverrides(t, adm, topic)
		for _, a := range alters {
			v, set := got[a.Name]
			switch {
			case a.Op == kadm.DeleteConfig && set:
				return false, fmt.Sprintf("%s still %s", a.Name, v)
			case a.Op == kadm.SetConfig && (a.Value == nil || v != *a.Value):
				return false, fmt.Sprintf("%s is %q", a.Name, v)
			}
		}
		return true, ""
	})
}

// guardsOf returns the timestamp guards topic sets itself on c
// (DYNAMIC_TOPIC_CONFIG), by key.
func guardsOf(t *testing.T, c *testcluster.Cluster, topic string) map[string]string {
	t.Helper()
	o := describeOverrides(t, testcluster.Admin(t, c), topic)
	m := map[string]string{}
	for _, k := range timestampGuards {
		if v, ok := o[k]; ok {
			m[k] = v
		}
	}
	return m
}

// copiedExactly fails the test unless the remote topic's partition 0 holds
// exactly the source topic's records (key, value, headers, timestamp, in
// order), n of them.
func copiedExactly(t *testing.T, p *testcluster.Pair, topic, remote string, n int) {
	t.Helper()
	want := testcluster.ReadAll(t, &p.Source, topic)[0]
	got := testcluster.ReadAll(t, &p.Target, remote)[0]
	if len(want) != n || len(got) != n {
		t.Fatalf("%d source records, %d on the target; want %d on both", len(want), len(got), n)
	}
	if diff := cmp.Diff(recsOf(want), copiesOf(t, got, clusterID(t, &p.Source), want)); diff != "" {
		t.Errorf("%s differs from %s (-want +got):\n%s", remote, topic, diff)
	}
}

// targetBrokerSetsNoTimestampGuard states the premise of the tests: the
// target broker has no log.message.timestamp.* setting of its own (no
// cluster-wide dynamic default, and every broker's value is Kafka's
// default), so any guard that refuses a copied record is the remote
// topic's.
func targetBrokerSetsNoTimestampGuard(t *testing.T, p *testcluster.Pair) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := testcluster.Admin(t, &p.Target)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx) // the cluster-wide dynamic defaults
	if err != nil {
		t.Fatal(err)
	}
	more, err := adm.DescribeBrokerConfigs(ctx, md.Brokers.NodeIDs()...)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rc := range append(rcs, more...) {
		if rc.Err != nil {
			t.Fatalf("describing broker %q on the target: %v", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if !strings.HasPrefix(c.Key, "log.message.timestamp.") {
				continue
			}
			seen[c.Key] = true
			if c.Source != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("target broker %q sets %s=%s (%s): the tests assume the broker's default", rc.Name, c.Key, c.MaybeValue(), c.Source)
			}
		}
	}
	want := []string{"log.message.timestamp.type"}
	if p.Real {
		want = append(want, "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms")
	}
	for _, k := range want {
		if !seen[k] {
			t.Errorf("the target's broker configs do not list %s", k)
		}
	}
}

// TestTimestampGuardNotCopied (issue 18, aws-samples/mirrormaker2-msk-
// migration PR #26, KAFKA-20163): 10 records two hours old, then
// message.timestamp.before.max.ms=3600000 (and after.max.ms) set on the
// source topic, then 5 new records. The default config.properties.exclude
// keeps the guards off the remote topic, at creation and in config sync,
// so all 15 records are copied exactly (MM2 4.3 copies the guard and the
// target refuses the 10 old ones: 0 of 15 on real Kafka).
func TestTimestampGuardNotCopied(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	targetBrokerSetsNoTimestampGuard(t, p)
	topic := p.Topic("tsguard")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	old := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond)
	testcluster.Produce(t, &p.Source, stampedRecords(topic, "old", 10, old)...)
	hour := "3600000"
	guards := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: beforeKey, Value: &hour}, {Op: kadm.SetConfig, Name: afterKey, Value: &hour}}
	if p.Source.Fake != nil {
		guards = append(guards, kadm.AlterConfig{Op: kadm.SetConfig, Name: diffKey, Value: &hour})
	}
	alterTopic(t, &p.Source, topic, guards...)
	if p.Real {
		// The guard holds on the source: a record two hours old is refused.
		err := testcluster.Client(t, &p.Source).ProduceSync(context.Background(), stampedRecords(topic, "refused", 1, old)...).FirstErr()
		if !errors.Is(err, kerr.InvalidTimestamp) {
			t.Fatalf("producing a record two hours old to the guarded source topic: %v, want INVALID_TIMESTAMP", err)
		}
	}
	testcluster.Produce(t, &p.Source, stampedRecords(topic, "new", 5, time.Now().Truncate(time.Millisecond))...)

	fc := recoveryFlow(p, topic)
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 15)
	if st := m.Status().Flows[0]; st.State != StateRunning || st.FailedPartitions != 0 || st.Error != "" {
		t.Fatalf("flow %s, %d failed partitions, error %q; want RUNNING without errors", st.State, st.FailedPartitions, st.Error)
	}
	copiedExactly(t, p, topic, remote, 15)
	// The source still carries the guards; config sync (every 200 ms)
	// never copies them.
	if g := guardsOf(t, &p.Source, topic); len(g) != len(guards) {
		t.Fatalf("source guards %v, want the %d set", g, len(guards))
	}
	time.Sleep(time.Second)
	if g := guardsOf(t, &p.Target, remote); len(g) != 0 {
		t.Errorf("the remote topic sets timestamp guards %v; want none", g)
	}
	if g := describe(t, testcluster.Admin(t, &p.Target), remote)["message.timestamp.type"]; g != "CreateTime" {
		t.Errorf("remote message.timestamp.type = %q, want CreateTime (never copied)", g)
	}
}

// TestEarlierCopiedTimestampGuardRemoved (regression, issue 18): a remote
// topic that an earlier kmirror created with the source topic's
// message.timestamp.before.max.ms loses it at the first config sync; a
// guard the remote topic sets to another value than the source's (put
// there by someone else) is left alone. The guards are a day wide here, so
// the records pass them before the sync removes them on real Kafka too.
func TestEarlierCopiedTimestampGuardRemoved(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("tscopied")
	remote := p.Source.Alias + "." + topic
	day, hour, twoHours := "86400000", "3600000", "7200000"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{beforeKey: &day, afterKey: &hour})
	// What an earlier kmirror created: the same before.max.ms; after.max.ms
	// was changed on the target since.
	testcluster.CreateTopic(t, &p.Target, remote, 1, map[string]*string{beforeKey: &day, afterKey: &twoHours})
	testcluster.Produce(t, &p.Source, stampedRecords(topic, "old", 10, time.Now().Add(-2*time.Hour).Truncate(time.Millisecond))...)
	testcluster.Produce(t, &p.Source, stampedRecords(topic, "new", 5, time.Now().Truncate(time.Millisecond))...)

	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	testcluster.Eventually(t, 20*time.Second, "the copied guard removed", func() (bool, string) {
		g := guardsOf(t, &p.Target, remote)
		_, has := g[beforeKey]
		return !has, fmt.Sprint(g)
	})
	waitReplicated(t, m, 15)
	copiedExactly(t, p, topic, remote, 15)
	time.Sleep(time.Second) // several config syncs
	if diff := cmp.Diff(map[string]string{afterKey: twoHours}, guardsOf(t, &p.Target, remote)); diff != "" {
		t.Errorf("remote topic guards (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{beforeKey: day, afterKey: hour}, guardsOf(t, &p.Source, topic)); diff != "" {
		t.Errorf("source topic guards changed (-want +got):\n%s", diff)
	}
}

// TestOwnExcludeListCopiesTimestampGuard: a config.properties.exclude of
// the user's own is honoured as written (LoadProperties warns about it):
// MM2 4.3's default list lets message.timestamp.before.max.ms through, so
// it is copied at creation and kept by config sync, not removed.
func TestOwnExcludeListCopiesTimestampGuard(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("tsown")
	remote := p.Source.Alias + "." + topic
	day := "86400000"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{beforeKey: &day})
	testcluster.Produce(t, &p.Source, stampedRecords(topic, "old", 3, time.Now().Add(-2*time.Hour).Truncate(time.Millisecond))...)
	fc := recoveryFlow(p, topic)
	fc.ConfigPropertiesExclude = []string{`follower\.replication\.throttled\.replicas`, `leader\.replication\.throttled\.replicas`,
		`message\.timestamp\.difference\.max\.ms`, `message\.timestamp\.type`, `unclean\.leader\.election\.enable`, `min\.insync\.replicas`,
		`log\.message\.timestamp\.before\.max\.ms`, `log\.message\.timestamp\.after\.max\.ms`}
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 3)
	time.Sleep(time.Second) // several config syncs
	if diff := cmp.Diff(map[string]string{beforeKey: day}, guardsOf(t, &p.Target, remote)); diff != "" {
		t.Errorf("remote topic guards (-want +got):\n%s", diff)
	}
	copiedExactly(t, p, topic, remote, 3)
}

// TestInvalidTimestampNamesTheRemoteSetting (issue 18): a remote topic
// whose own message.timestamp.before.max.ms refuses the copied records
// (set on the target: the source topic has no guard, so config sync
// leaves it alone) fails the partition with INVALID_TIMESTAMP, waiting
// for an operator, and the error names the remote topic, the setting
// and how to remove it. Once it is removed, RestartFailed copies every
// record. On kfake, which enforces no guard, the refusal is injected.
func TestInvalidTimestampNamesTheRemoteSetting(t *testing.T) {
	t.Parallel()
	invalidTimestampNamesTheSetting(t, "tsrefused", false)
}

// TestInvalidTimestampNamesTheRemoteSettingShallow is the same with shallow
// copy: the refused batch falls back to record-by-record copying, which
// the target refuses too.
func TestInvalidTimestampNamesTheRemoteSettingShallow(t *testing.T) {
	t.Parallel()
	invalidTimestampNamesTheSetting(t, "tsrefusedsh", true)
}

func invalidTimestampNamesTheSetting(t *testing.T, name string, shallow bool) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic(name)
	remote := p.Source.Alias + "." + topic
	hour := "3600000"
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.CreateTopic(t, &p.Target, remote, 1, map[string]*string{beforeKey: &hour})
	testcluster.Produce(t, &p.Source, stampedRecords(topic, "old", 5, time.Now().Add(-2*time.Hour).Truncate(time.Millisecond))...)
	if p.Target.Fake != nil {
		n := 1
		if shallow {
			n = 2 // the batch as fetched, then its records
		}
		p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0}, Err: kerr.InvalidTimestamp, Count: n})
	}
	fc := recoveryFlow(p, topic)
	if shallow {
		fc.ShallowCopy, fc.DisableProvenanceHeader = true, true
	}
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED", func() (bool, string) {
		p0 := partStatus(m, 0)
		return p0.State == StateFailed, fmt.Sprintf("%+v", p0)
	})
	time.Sleep(time.Second) // automatic restarts would come after 200 ms; config syncs every 200 ms
	p0 := partStatus(m, 0)
	for _, want := range []string{
		"INVALID_TIMESTAMP",
		"; the remote topic " + remote + " on " + p.Target.Alias + " refuses the record's timestamp ",
		" old) by its message.timestamp.before.max.ms (or the target broker's log.message.timestamp.before.max.ms when the topic sets none;",
		"kafka-configs.sh --alter --entity-type topics --entity-name " + remote + " --delete-config message.timestamp.before.max.ms) or raise it, then restart the failed partition",
	} {
		if !strings.Contains(p0.Error, want) {
			t.Errorf("partition error lacks %q:\n%s", want, p0.Error)
		}
	}
	if p0.State != StateFailed || !p0.NextRetry.IsZero() || p0.Replicated > 0 {
		t.Errorf("partition 0 = %+v; want FAILED, waiting for an operator (no NextRetry), nothing replicated", p0)
	}
	if diff := cmp.Diff(map[string]string{beforeKey: hour}, guardsOf(t, &p.Target, remote)); diff != "" {
		t.Errorf("config sync changed the target's own guard (-want +got):\n%s", diff)
	}

	alterTopic(t, &p.Target, remote, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: beforeKey})
	// alterTopic waited until the broker describes the topic without the
	// guard; a restart that still meets it fails again, and the operator
	// restarts again.
	flow := p.Source.Alias + "->" + p.Target.Alias
	if n, err := m.RestartFailed(flow, topic, 0); n != 1 || err != nil {
		t.Fatalf("RestartFailed = %d, %v; want 1, nil", n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "replicated after the restart", func() (bool, string) {
		p0 := partStatus(m, 0)
		if p0.State == StateFailed {
			if _, err := m.RestartFailed(flow, topic, 0); err != nil {
				return false, err.Error()
			}
		}
		return p0.Replicated >= 5, fmt.Sprintf("%+v", p0)
	})
	waitReplicated(t, m, 5)
	if shallow {
		want, got := testcluster.ReadAll(t, &p.Source, topic)[0], testcluster.ReadAll(t, &p.Target, remote)[0]
		if diff := cmp.Diff(recsOf(want), recsOf(got)); diff != "" {
			t.Errorf("%s differs from %s (-want +got):\n%s", remote, topic, diff)
		}
		return
	}
	copiedExactly(t, p, topic, remote, 5)
}

// TestTimestampAdvice: the advice names before.max.ms for a record in the
// past, after.max.ms for one in the future, both when the timestamp is
// unknown (shallow copy), keeps the error's code, and leaves other errors
// alone.
func TestTimestampAdvice(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, c := range []struct {
		span       timeSpan
		want, not  string
		deleteKeys string
	}{
		{timeSpan{now.Add(-2 * time.Hour), now.Add(-time.Hour)}, "(2h0m0s old) by its message.timestamp.before.max.ms (or the target broker's log.message.timestamp.before.max.ms", "after.max.ms", beforeKey},
		{timeSpan{now.Add(time.Hour), now.Add(3 * time.Hour)}, "(3h0m0s ahead) by its message.timestamp.after.max.ms (or the target broker's log.message.timestamp.after.max.ms", "before.max.ms", afterKey},
		{timeSpan{}, "refuses the record's timestamp by its message.timestamp.before.max.ms or message.timestamp.after.max.ms (or the target broker's log.message.timestamp.before.max.ms or log.message.timestamp.after.max.ms", " old)", beforeKey + "," + afterKey},
		// A batch with a record 10 s ahead (clock skew) and one 2 h old:
		// the old one is the likely culprit, named first, and both
		// settings are given (a helper trying to break the record limits,
		// stop 38: only after.max.ms was named).
		{timeSpan{now.Add(-2 * time.Hour), now.Add(10 * time.Second)},
			"(2h0m0s old) by its message.timestamp.before.max.ms (or its message.timestamp.after.max.ms, for the record at ", "\x00", beforeKey + "," + afterKey},
		{timeSpan{now.Add(-10 * time.Second), now.Add(3 * time.Hour)},
			"(3h0m0s ahead) by its message.timestamp.after.max.ms (or its message.timestamp.before.max.ms, for the record at ", "\x00", beforeKey + "," + afterKey},
	} {
		err := timestampAdvice(kerr.InvalidTimestamp, "a.orders", "b", c.span)
		s := err.Error()
		if !errors.Is(err, kerr.InvalidTimestamp) || !recordError(err) {
			t.Errorf("%v: the advice hides INVALID_TIMESTAMP", err)
		}
		if !strings.HasPrefix(s, kerr.InvalidTimestamp.Error()+"; the remote topic a.orders on b refuses the record's timestamp") ||
			!strings.Contains(s, c.want) || !strings.Contains(s, "--entity-name a.orders --delete-config "+c.deleteKeys+")") {
			t.Errorf("advice for %v:\n%s\nwant it to contain %q", c.span, s, c.want)
		}
		if strings.Contains(s, c.not) {
			t.Errorf("advice for %v contains %q: %s", c.span, c.not, s)
		}
	}
	if err := timestampAdvice(kerr.MessageTooLarge, "a.orders", "b", timeSpan{now, now}); err != kerr.MessageTooLarge {
		t.Errorf("timestampAdvice(MESSAGE_TOO_LARGE) = %v, want it unchanged", err)
	}
}

// TestRefusedBatchTimestampsNamed: a Kafka broker refuses a whole batch
// with INVALID_TIMESTAMP when one of its records is out of range. The
// remote topic refuses records more than an hour old (emulated below as
// Kafka enforces message.timestamp.before.max.ms); the partition holds a
// record 10 s ahead (producer clock skew) and then one 2 h old. The error
// names before.max.ms and the 2 h old record first (a helper trying to
// break the record limits, stop 38: it named only after.max.ms, from the
// batch's first record, and the operator would have deleted the wrong
// setting).
func TestRefusedBatchTimestampsNamed(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("tsmix")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	now := time.Now().Truncate(time.Millisecond)
	testcluster.Produce(t, &p.Source,
		&kgo.Record{Topic: topic, Value: []byte("skewed"), Timestamp: now.Add(10 * time.Second)},
		&kgo.Record{Topic: topic, Value: []byte("old"), Timestamp: now.Add(-2 * time.Hour)},
		&kgo.Record{Topic: topic, Value: []byte("recent"), Timestamp: now})
	dec := kgo.DefaultDecompressor()
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Err: kerr.InvalidTimestamp, Count: -1,
		When: func(req kmsg.Request) bool {
			for _, rt := range req.(*kmsg.ProduceRequest).Topics {
				for _, rp := range rt.Partitions {
					fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: remote},
						&kmsg.FetchResponseTopicPartition{RecordBatches: rp.Records}, dec, nil)
					for _, r := range fp.Records {
						if time.Since(r.Timestamp) > time.Hour {
							return true
						}
					}
				}
			}
			return false
		}})
	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed, fmt.Sprintf("%+v", ps)
	})
	ps := partStatus(m, 0)
	for _, want := range []string{
		"refuses the record's timestamp " + now.Add(-2*time.Hour).UTC().Format(time.RFC3339Nano) + " (2h0m",
		"old) by its message.timestamp.before.max.ms (or its message.timestamp.after.max.ms, for the record at " + now.Add(10*time.Second).UTC().Format(time.RFC3339Nano),
		"--delete-config message.timestamp.before.max.ms,message.timestamp.after.max.ms)",
	} {
		if !strings.Contains(ps.Error, want) {
			t.Errorf("the error lacks %q:\n%s", want, ps.Error)
		}
	}
}
