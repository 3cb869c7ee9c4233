package heartbeat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

func runEmitter(t *testing.T, cfg EmitterConfig) (*Emitter, func()) {
	t.Helper()
	e, err := NewEmitter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return e, stop
}

func TestEmitterWritesHeartbeats(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("heartbeats")
	var emitted []time.Time
	emittedC := make(chan time.Time, 100)
	e, stop := runEmitter(t, EmitterConfig{
		SourceAlias: p.Source.Alias, TargetAlias: p.Target.Alias,
		TargetOpts: p.Target.Opts(), Topic: topic, Interval: 50 * time.Millisecond,
		OnEmit: func(at time.Time) { emittedC <- at },
	})
	testcluster.Eventually(t, 10*time.Second, "three heartbeats", func() (bool, string) {
		_, n := e.Last()
		return n >= 3, fmt.Sprint(n)
	})
	stop()
	close(emittedC)
	for at := range emittedC {
		emitted = append(emitted, at)
	}
	last, n := e.Last()
	if int(n) != len(emitted) || !last.Equal(emitted[len(emitted)-1]) {
		t.Errorf("Last() = %v, %d; OnEmit saw %d, last %v", last, n, len(emitted), emitted[len(emitted)-1])
	}

	recs := testcluster.ReadAll(t, &p.Target, topic)
	if len(recs) != 1 || len(recs[0]) != len(emitted) {
		t.Fatalf("heartbeat records per partition: %d partitions, %d records in 0; want 1 partition, %d records", len(recs), len(recs[0]), len(emitted))
	}
	for i, r := range recs[0] {
		h, err := Decode(r.Key, r.Value)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		want := Heartbeat{SourceClusterAlias: p.Source.Alias, TargetClusterAlias: p.Target.Alias, Timestamp: emitted[i].UnixMilli()}
		if d := cmp.Diff(want, h); d != "" {
			t.Errorf("record %d (-want +got):\n%s", i, d)
		}
		if r.Timestamp.UnixMilli() != h.Timestamp {
			t.Errorf("record %d timestamp %d ms, value timestamp %d ms; want equal", i, r.Timestamp.UnixMilli(), h.Timestamp)
		}
		if len(r.Value) != 10 {
			t.Errorf("record %d value is %d bytes, want 10", i, len(r.Value))
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := testcluster.Admin(t, &p.Target)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(td[topic].Partitions); got != 1 {
		t.Errorf("heartbeats topic has %d partitions, want 1", got)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Configs {
		if c.Key == "cleanup.policy" && (c.Value == nil || *c.Value != "compact") {
			t.Errorf("cleanup.policy = %v, want compact", c.MaybeValue())
		}
	}
}

func TestEmitterKeepsExistingTopic(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("heartbeats")
	testcluster.CreateTopic(t, &p.Target, topic, 3, nil) // created by someone else, 3 partitions
	e, stop := runEmitter(t, EmitterConfig{
		SourceAlias: p.Source.Alias, TargetAlias: p.Target.Alias,
		TargetOpts: p.Target.Opts(), Topic: topic, Interval: 50 * time.Millisecond,
	})
	testcluster.Eventually(t, 10*time.Second, "two heartbeats", func() (bool, string) {
		_, n := e.Last()
		return n >= 2, fmt.Sprint(n)
	})
	stop()
	recs := testcluster.ReadAll(t, &p.Target, topic)
	if len(recs[1]) != 0 || len(recs[2]) != 0 || len(recs[0]) < 2 {
		t.Errorf("records per partition: 0:%d 1:%d 2:%d; want all in partition 0", len(recs[0]), len(recs[1]), len(recs[2]))
	}
}

func TestNewEmitterErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  EmitterConfig
		want string
	}{
		{"no source", EmitterConfig{TargetAlias: "b", TargetOpts: []kgo.Opt{kgo.SeedBrokers("x:1")}},
			`heartbeat: emitter needs both cluster aliases (source "", target "b")`},
		{"no opts", EmitterConfig{SourceAlias: "a", TargetAlias: "b"},
			"heartbeat: emitter needs TargetOpts (at least kgo.SeedBrokers)"},
		// Was accepted: the broker then refused every creation of the
		// topic (INVALID_REPLICATION_FACTOR), naming no setting.
		{"replication factor below -1", EmitterConfig{SourceAlias: "a", TargetAlias: "b", TargetOpts: []kgo.Opt{kgo.SeedBrokers("x:1")}, ReplicationFactor: -2},
			"heartbeat: ReplicationFactor (heartbeats.topic.replication.factor) is -2: it must be positive, or -1 (or 0) for the broker default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewEmitter(tc.cfg)
			if err == nil || err.Error() != tc.want {
				t.Errorf("NewEmitter error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestEmitterStopsWhileTargetSilent: a heartbeat write the target never
// answers does not hold the emitter's stop. Run used ProduceSync, which
// waits for a record already sent until the delivery timeout
// (admin.timeout.ms, here 10 minutes) however its context ends, and a
// Mirror's Shutdown waited for the emitter past its own bound.
func TestEmitterStopsWhileTargetSilent(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("holds produce requests with kfake's control hooks: runs on the embedded backend, not with KMIRROR_*_BROKERS")
	}
	topic := p.Topic("heartbeats")
	e, err := NewEmitter(EmitterConfig{
		SourceAlias: p.Source.Alias, TargetAlias: p.Target.Alias,
		TargetOpts: p.Target.Opts(), Topic: topic, Interval: 50 * time.Millisecond,
		AdminTimeout: 10 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	testcluster.Eventually(t, 10*time.Second, "one heartbeat", func() (bool, string) {
		_, n := e.Last()
		return n >= 1, fmt.Sprint(n)
	})
	// From now on every produce request is held, unanswered, until the
	// test ends.
	release := make(chan struct{})
	defer close(release)
	held := make(chan struct{}, 1)
	p.Target.Fake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.Target.Fake.KeepControl()
		select {
		case held <- struct{}{}:
		default:
		}
		p.Target.Fake.SleepControl(func() { <-release })
		return nil, nil, false
	})
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("no heartbeat was produced within 30 s")
	}
	_, before := e.Last()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of its context's end while the target held a heartbeat write (delivery timeout 10 minutes)")
	}
	if _, n := e.Last(); n != before {
		t.Errorf("heartbeats counted after the unanswered write: %d, want %d", n, before)
	}
}
