package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestUnknownConfigKey reads the key out of a broker's refusal of a topic
// config name it does not know. The first message is Kafka 4.3.1's,
// creating a topic with a 3.x source topic's message.format.version.
func TestUnknownConfigKey(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		msg  string
		want string
	}{
		{"Kafka 4.3.1, message.format.version", kerr.InvalidConfig, "Unknown topic config name: message.format.version", "message.format.version"},
		{"Kafka 4.3.1, message.downconversion.enable", kerr.InvalidConfig, "Unknown topic config name: message.downconversion.enable", "message.downconversion.enable"},
		{"wrapped error", fmt.Errorf("creating: %w", kerr.InvalidConfig), "Unknown topic config name: x.y", "x.y"},
		{"no message (kfake)", kerr.InvalidConfig, "", ""},
		{"a bad value, not an unknown key", kerr.InvalidConfig, "Invalid value abc for configuration retention.ms: Not a number of type LONG", ""},
		{"another error code", kerr.PolicyViolation, "Unknown topic config name: message.format.version", ""},
		{"no error", nil, "Unknown topic config name: message.format.version", ""},
		{"not one key", kerr.InvalidConfig, "Unknown topic config name: a, b", ""},
	} {
		if got := unknownConfigKey(c.err, c.msg); got != c.want {
			t.Errorf("%s: unknownConfigKey(%v, %q) = %q, want %q", c.name, c.err, c.msg, got, c.want)
		}
	}
}

// TestTargetLackingConfigKey: a 3.x source topic carries a config Kafka
// 4.0 removed (message.format.version, left by an old upgrade), and the
// 4.x target refuses every topic creation or config change that sets it
// ("Unknown topic config name"). The remote topic failed, its records
// never copied, until the operator excluded the key (Apache MM2 retries
// such a creation for ever). Now the remote topic is created without that
// key and with every other one, config sync goes on without it, and one
// WARN line names it. A flow started later, whose remote topic exists,
// learns it from config sync's refused change the same way.
func TestTargetLackingConfigKey(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's control hooks: a 4.x broker refuses message.format.version on the source as well")
	}
	// kfake knows no message.format.version: segment.ms stands for it,
	// refused by the target as Kafka 4.x refuses the removed key.
	const lacking = "segment.ms"
	refusals := refuseUnknownConfigs(&p.Target, map[string]bool{lacking: true}, "")
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	seg, ret := "3600000", "86400000"
	testcluster.CreateTopic(t, &p.Source, orders, 2, map[string]*string{lacking: &seg, "retention.ms": &ret})
	testcluster.Produce(t, &p.Source, valueRecords(orders, "o", 0, 5)...)
	fc := fastFlow(p)
	fc.DisableHeartbeats, fc.DisableHeartbeatsReplication, fc.DisableCheckpoints = true, true, true
	var logs syncBuffer
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))...)
	waitReplicated(t, m, 5)
	adm := testcluster.Admin(t, &p.Target)
	remoteConfigs := func() map[string]string {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(context.Background(), remote)
		if err == nil {
			err = rcs[0].Err
		}
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, c := range rcs[0].Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				got[c.Key] = c.MaybeValue()
			}
		}
		return got
	}
	if got, want := fmt.Sprint(remoteConfigs()), fmt.Sprintf("map[retention.ms:%s]", ret); got != want {
		t.Errorf("remote topic configs %s, want %s", got, want)
	}

	// A change on the source: retention.ms synced, the lacking key
	// never sent again.
	ret2, seg2 := "172800000", "7200000"
	if _, err := testcluster.Admin(t, &p.Source).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: &ret2}, {Op: kadm.SetConfig, Name: lacking, Value: &seg2}}, orders); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "retention.ms synced", func() (bool, string) {
		got := remoteConfigs()
		return got["retention.ms"] == ret2, fmt.Sprint(got)
	})
	if fs := m.Status().Flows[0]; len(fs.TopicErrors) != 0 {
		t.Errorf("topic errors %+v, want none", fs.TopicErrors)
	}
	if n := refusals.Load(); n != 1 {
		t.Errorf("%d refusals, want 1: the key is left out once the target refused it", n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "topic config not copied: the target does not know it"); n != 1 || !strings.Contains(logs.String(), "config="+lacking) {
		t.Errorf("%d WARN lines naming the key, want 1:\n%s", n, logs.String())
	}

	// A new flow (a restart): the remote topic exists, so config sync is
	// the first to send the key, and learns it from the refusal.
	ret3 := "259200000"
	if _, err := testcluster.Admin(t, &p.Source).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: &ret3}}, orders); err != nil {
		t.Fatal(err)
	}
	testcluster.Produce(t, &p.Source, valueRecords(orders, "o", 5, 8)...)
	m2, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "retention.ms synced after the restart", func() (bool, string) {
		got := remoteConfigs()
		fs := m2.Status().Flows[0]
		return got["retention.ms"] == ret3 && len(fs.TopicErrors) == 0, fmt.Sprintf("%v %+v", got, fs.TopicErrors)
	})
	waitReplicated(t, m2, 3)
	if n := refusals.Load(); n != 2 {
		t.Errorf("%d refusals, want 2: one at the creation, one at the restarted flow's first config sync", n)
	}
	if got := remoteConfigs(); got[lacking] != "" {
		t.Errorf("remote topic configs %v: %s set", got, lacking)
	}
}

// TestUnknownConfigKeyFromRealBroker pins unknownConfigKey to what a real
// Kafka 4.x broker answers for message.format.version, the key a 3.x
// source topic most often still carries, both when creating a topic and
// when altering one: a Kafka release that words it otherwise fails here,
// not silently in the field.
func TestUnknownConfigKeyFromRealBroker(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if !p.Real {
		t.Skip("kfake refuses an unknown topic config without Kafka's message; this pins a real broker's")
	}
	adm := testcluster.Admin(t, &p.Target)
	ctx := context.Background()
	v := "2.8"
	topic := p.Topic("mfv")
	resp, _ := adm.CreateTopic(ctx, 1, -1, map[string]*string{"message.format.version": &v}, topic)
	if got := unknownConfigKey(resp.Err, resp.ErrMessage); got != "message.format.version" {
		t.Errorf("creating with message.format.version: %v %q, read as unknown key %q", resp.Err, resp.ErrMessage, got)
	}
	testcluster.CreateTopic(t, &p.Target, topic, 1, nil)
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.format.version", Value: &v}}, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := unknownConfigKey(rs[0].Err, rs[0].ErrMessage); got != "message.format.version" {
		t.Errorf("altering message.format.version: %v %q, read as unknown key %q", rs[0].Err, rs[0].ErrMessage, got)
	}
}
