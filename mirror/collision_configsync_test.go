package mirror

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestAllowedCollisionConfigsDoNotFlipFlop: identity a->t and b->t with
// allow.topic.collisions merge a's and b's "orders" into t's "orders",
// whose retention.ms differ on the two sources (1 h on a, 2 h on b). Each
// flow synced its key one way, SETting its own source's value wherever the
// remote topic differed, so the two overwrote each other at every sync,
// forever (the remote topic's retention.ms alternated, one
// IncrementalAlterConfigs per flow and interval). Now the first writer (a->t)
// alone syncs the key: t's orders settles on a's value, no alteration is
// sent while nothing changes, and a change on a is still copied.
func TestAllowedCollisionConfigsDoNotFlipFlop(t *testing.T) {
	t.Parallel()
	a, b, tg := testcluster.NewFake(t, "a"), testcluster.NewFake(t, "b"), testcluster.NewFake(t, "t")
	var mu sync.Mutex
	var sets []string // every retention.ms SET t was asked for, in order
	tg.Fake.ControlKey(int16(kmsg.IncrementalAlterConfigs), func(r kmsg.Request) (kmsg.Response, error, bool) {
		tg.Fake.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, rr := range r.(*kmsg.IncrementalAlterConfigsRequest).Resources {
			for _, c := range rr.Configs {
				if rr.ResourceName == "orders" && c.Name == "retention.ms" && c.Value != nil {
					sets = append(sets, *c.Value)
				}
			}
		}
		return nil, nil, false
	})
	nsets := func() int { mu.Lock(); defer mu.Unlock(); return len(sets) }
	va, vb := "3600000", "7200000"
	testcluster.CreateTopic(t, &a, "orders", 1, map[string]*string{"retention.ms": &va})
	testcluster.CreateTopic(t, &b, "orders", 1, map[string]*string{"retention.ms": &vb})
	var opts []Opt
	for _, c := range []testcluster.Cluster{a, b, tg} {
		opts = append(opts, WithCluster(ClusterConfig{Alias: c.Alias, Client: c.Opts()}))
	}
	for _, s := range []testcluster.Cluster{a, b} {
		opts = append(opts, WithFlow(FlowConfig{Source: s.Alias, Target: tg.Alias, Topics: []string{"orders"},
			RefreshTopicsInterval: 200 * time.Millisecond, SyncTopicConfigsInterval: 150 * time.Millisecond,
			OffsetFlushInterval: 100 * time.Millisecond, DisableHeartbeats: true, DisableCheckpoints: true,
			AdminTimeout: 10 * time.Second, Policy: identity(t, s.Alias), AllowTopicCollisions: true}))
	}
	runMirror(t, opts...)
	adm := testcluster.Admin(t, &tg)
	testcluster.Eventually(t, 20*time.Second, "t's orders has a's retention.ms", func() (bool, string) {
		v := describe(t, adm, "orders")["retention.ms"]
		return v == va, v
	})
	before := nsets()
	time.Sleep(time.Second) // about seven sync rounds of each flow
	if n := nsets() - before; n != 0 {
		mu.Lock()
		t.Errorf("%d retention.ms SETs on t's orders while nothing changed, want 0 (the flows overwrite each other): %v", n, sets)
		mu.Unlock()
	}
	if v := describe(t, adm, "orders")["retention.ms"]; v != va {
		t.Errorf("t's orders retention.ms = %s, want a's %s", v, va)
	}
	vc := "10800000"
	if _, err := testcluster.Admin(t, &a).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &vc}}, "orders"); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 20*time.Second, "a's change copied to t", func() (bool, string) {
		v := describe(t, adm, "orders")["retention.ms"]
		return v == vc, v
	})
}

// TestSyncedByOtherPerKey: which writer of a merged remote topic syncs a
// key: the first (by flow, then source topic) whose flow syncs topic
// configs and whose config.properties.exclude lets the key through; a
// remote topic with one writer is nobody else's.
func TestSyncedByOtherPerKey(t *testing.T) {
	mk := func(name string, noSync bool, exclude ...string) *flow {
		cf, err := newFilter("x", []string{".*"}, "x", exclude)
		if err != nil {
			t.Fatal(err)
		}
		return &flow{name: name, cfg: FlowConfig{DisableTopicConfigSync: noSync}, configs: cf}
	}
	a, b, c := mk("a->t", false, `retention\.ms`), mk("b->t", false), mk("c->t", true)
	flows := map[string]*flow{a.name: a, b.name: b, c.name: c}
	writers := map[string][]writer{"orders": {{flow: "a->t", topic: "orders"}, {flow: "b->t", topic: "orders"}, {flow: "b->t", topic: "orders2"}, {flow: "c->t", topic: "orders"}}}
	cases := []struct {
		f           *flow
		topic, key  string
		byOther     bool
		description string
	}{
		{a, "orders", "cleanup.policy", false, "the first writer"},
		{b, "orders", "cleanup.policy", true, "a->t syncs it"},
		{b, "orders", "retention.ms", false, "a->t excludes it: b->t's orders is next"},
		{b, "orders2", "retention.ms", true, "b->t's orders syncs it"},
		{c, "orders", "segment.ms", true, "c->t does not sync configs"},
	}
	for _, tc := range cases {
		other := tc.f.syncedByOther(tc.topic, "orders", writers, flows)
		if got := other(tc.key); got != tc.byOther {
			t.Errorf("%s %s %s: synced by another writer = %t, want %t (%s)", tc.f.name, tc.topic, tc.key, got, tc.byOther, tc.description)
		}
	}
	if other := a.syncedByOther("payments", "payments", writers, flows); other != nil {
		t.Errorf("a remote topic with one writer: want nil")
	}
}
