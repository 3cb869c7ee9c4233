package mirror

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNewRefusesSubMillisecondDurations: FlowConfig's durations are
// time.Duration, but their docs name MM2's keys in seconds and
// milliseconds (emit.checkpoints.interval.seconds), so a user writes
// EmitCheckpointsInterval: 60 and gets 60 ns. New accepted it, and the flow's
// loop then ticked without pause: one core busy per such field with nothing
// to replicate (a new user's try: about 1 CPU s per second for each of
// OffsetFlushInterval, EmitCheckpointsInterval, RefreshTopicsInterval, ...).
// New refuses a positive duration below a millisecond (no MM2 key can give
// one), naming the key, the value and what to write.
func TestNewRefusesSubMillisecondDurations(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	for _, tc := range []struct {
		set  func(*FlowConfig)
		want []string
	}{
		{func(f *FlowConfig) { f.EmitCheckpointsInterval = 60 }, []string{`a->b.emit.checkpoints.interval.seconds="60ns"`, "60 * time.Second"}},
		{func(f *FlowConfig) { f.OffsetFlushInterval = 500 }, []string{`a->b.offset.flush.interval.ms="500ns"`, "500 * time.Millisecond"}},
		{func(f *FlowConfig) { f.RefreshTopicsInterval = 10 }, []string{"a->b.refresh.topics.interval.seconds", "10 * time.Second"}},
		{func(f *FlowConfig) { f.SyncTopicConfigsInterval = 10 }, []string{"a->b.sync.topic.configs.interval.seconds"}},
		{func(f *FlowConfig) { f.SyncTopicACLsInterval = 10 }, []string{"a->b.sync.topic.acls.interval.seconds"}},
		{func(f *FlowConfig) { f.SyncGroupOffsetsInterval = 10 }, []string{"a->b.sync.group.offsets.interval.seconds"}},
		{func(f *FlowConfig) { f.RefreshGroupsInterval = 10 }, []string{"a->b.refresh.groups.interval.seconds"}},
		{func(f *FlowConfig) { f.EmitHeartbeatsInterval = 1 }, []string{"a->b.emit.heartbeats.interval.seconds", "1 * time.Second"}},
		{func(f *FlowConfig) { f.AdminTimeout = 30000 }, []string{"a->b.admin.timeout.ms", "30000 * time.Millisecond"}},
		{func(f *FlowConfig) { f.SessionTimeout = 10000 }, []string{"b.session.timeout.ms"}},
		{func(f *FlowConfig) { f.HeartbeatInterval = 3000 }, []string{"b.heartbeat.interval.ms"}},
		{func(f *FlowConfig) { f.RebalanceTimeout = 60000 }, []string{"b.rebalance.timeout.ms"}},
		{func(f *FlowConfig) { f.TransactionInterval = 100 }, []string{"a->b.transaction.boundary.interval.ms"}},
		{func(f *FlowConfig) { f.OpenTransactionAfter = 60 }, []string{"FlowConfig.OpenTransactionAfter"}},
	} {
		fc := FlowConfig{Source: "a", Target: "b"}
		tc.set(&fc)
		_, err := New(WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}), WithFlow(fc))
		if err == nil {
			t.Errorf("%s: New accepted it", tc.want[0])
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %T %v is not a *ConfigError", tc.want[0], err, err)
		}
		for _, w := range append(tc.want, "below a millisecond") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
	}
	// A millisecond and more, zero (the default) and the negative values
	// that mean something are still accepted.
	fc := FlowConfig{Source: "a", Target: "b", OffsetFlushInterval: time.Millisecond, RefreshGroupsInterval: -1}
	m, err := New(WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}), WithFlow(fc))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.Close()
}

// TestNewRefusesNegativeDurationNamingFields (a new user's finding): a
// negative RefreshTopicsInterval was refused under its MM2 key alone, with
// "use the Disable* field"; the error now names the FlowConfig field and
// the one that turns the task off.
func TestNewRefusesNegativeDurationNamingFields(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	for _, tc := range []struct {
		set  func(*FlowConfig)
		want string
	}{
		{func(f *FlowConfig) { f.RefreshTopicsInterval = -time.Second },
			`a->b.refresh.topics.interval.seconds="-1s": FlowConfig.RefreshTopicsInterval must not be negative (0 means the default); set FlowConfig.DisableRefreshTopics to turn the task off (MM2's negative interval)`},
		{func(f *FlowConfig) { f.AdminTimeout = -time.Second },
			`a->b.admin.timeout.ms="-1s": FlowConfig.AdminTimeout must not be negative (0 means the default)`},
		// A new user's finding: these meant the default in Go, where MM2's
		// -1 (and the properties loader) turns the task off.
		{func(f *FlowConfig) { f.EmitCheckpointsInterval = -time.Second },
			`a->b.emit.checkpoints.interval.seconds="-1s": FlowConfig.EmitCheckpointsInterval must not be negative (0 means the default); set FlowConfig.DisableCheckpoints to turn the task off (MM2's negative interval)`},
		{func(f *FlowConfig) { f.SyncGroupOffsets, f.SyncGroupOffsetsInterval = true, -time.Second },
			`a->b.sync.group.offsets.interval.seconds="-1s": FlowConfig.SyncGroupOffsetsInterval must not be negative (0 means the default); leave FlowConfig.SyncGroupOffsets false to turn the task off (MM2's negative interval)`},
		{func(f *FlowConfig) { f.EmitHeartbeatsInterval = -time.Second },
			`a->b.emit.heartbeats.interval.seconds="-1s": FlowConfig.EmitHeartbeatsInterval must not be negative (0 means the default); set FlowConfig.DisableHeartbeats to turn the task off (MM2's negative interval)`},
	} {
		fc := FlowConfig{Source: "a", Target: "b"}
		tc.set(&fc)
		_, err := New(WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}), WithFlow(fc))
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("New: %v, want an error ending %q", err, tc.want)
		}
	}
}

// TestNewReportsEveryError (a new user's finding): New stopped at the
// first bad option, so a configuration with three mistakes took three
// runs to fix (the properties loader already listed all of a file's). It
// now returns a *ConfigErrors with each independent error, in the order
// of the clusters, the flows and each flow's fields; errors.As finds the
// first *ConfigError, and a single error is still a *ConfigError.
func TestNewReportsEveryError(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	ok := FlowConfig{Source: "a", Target: "b", Tasks: -1, OffsetFlushInterval: 60, RefreshTopicsInterval: -time.Second}
	unknown := FlowConfig{Source: "b", Target: "C", ReplicationFactor: -2}
	_, err := New(WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}),
		WithCluster(ClusterConfig{Alias: "c", Client: seeds}), WithCluster(ClusterConfig{Alias: "a", Client: seeds}),
		WithFlow(ok), WithFlow(unknown))
	var ces *ConfigErrors
	if !errors.As(err, &ces) {
		t.Fatalf("New: %v (%T), want a *ConfigErrors", err, err)
	}
	var got []string
	for _, ce := range ces.Errs {
		got = append(got, ce.Key+"="+ce.Value)
	}
	want := []string{
		"clusters=a",                               // listed twice
		"a->b.tasks.max=-1",                        // out of range
		"a->b.offset.flush.interval.ms=60ns",       // the MM2 value as nanoseconds
		"a->b.refresh.topics.interval.seconds=-1s", // negative
		"FlowConfig.Target=C",                      // unknown alias (did you mean "c"?)
		"b->C.replication.factor=-2",               // below -1
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(err.Error(), "mirror: 6 configuration errors:\n\t") || !strings.Contains(err.Error(), `did you mean "c"?`) {
		t.Errorf("message:\n%v", err)
	}
	var first *ConfigError
	if !errors.As(err, &first) || first.Key != "clusters" {
		t.Errorf("errors.As found %v, want the first error (clusters)", first)
	}
	_, err = New(WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}),
		WithFlow(FlowConfig{Source: "a", Target: "b", Tasks: -1}))
	if _, single := err.(*ConfigError); !single {
		t.Errorf("one error: %v (%T), want a *ConfigError", err, err)
	}
}

// TestNewNamesFieldsAndSuggestsAliases (a new user's finding): New's
// errors for tasks.max and the replication factors named only the MM2 key
// (a Go user had to guess FlowConfig.Tasks), and a mistyped alias got a
// suggestion only when it differed in case.
func TestNewNamesFieldsAndSuggestsAliases(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	clusters := []Opt{WithCluster(ClusterConfig{Alias: "us-east-1", Client: seeds}), WithCluster(ClusterConfig{Alias: "ap-northeast-2", Client: seeds})}
	for _, tc := range []struct {
		fc   FlowConfig
		want string
	}{
		{FlowConfig{Source: "us-east-1", Target: "ap-northeast2"},
			`FlowConfig.Target="ap-northeast2": unknown target cluster alias (configured: [ap-northeast-2 us-east-1]): did you mean "ap-northeast-2"? (flow us-east-1->ap-northeast2)`},
		{FlowConfig{Source: "US-EAST-1", Target: "ap-northeast-2"},
			`FlowConfig.Source="US-EAST-1": unknown source cluster alias (configured: [ap-northeast-2 us-east-1]): aliases are case-sensitive, did you mean "us-east-1"? (flow US-EAST-1->ap-northeast-2)`},
		{FlowConfig{Source: "us-east-1", Target: "eu-central-1"},
			`FlowConfig.Target="eu-central-1": unknown target cluster alias (configured: [ap-northeast-2 us-east-1]) (flow us-east-1->eu-central-1)`},
		{FlowConfig{Source: "us-east-1", Target: "ap-northeast-2", Tasks: -3},
			`us-east-1->ap-northeast-2.tasks.max="-3": FlowConfig.Tasks must be between 1 and`},
	} {
		_, err := New(append(clusters, WithFlow(tc.fc))...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s): %v, want an error with %q", tc.fc.Name(), err, tc.want)
		}
	}
}

// nilHook implements Metrics through its embedded interface: a nil
// *nilHook panics on any call.
type nilHook struct{ Metrics }

// TestWithTypedNilMetrics (a breaker's finding): WithMetrics with a nil
// pointer of a Metrics type (a *T variable never set) made New panic in
// its Init call; it now reports nothing, as a nil Metrics does.
func TestWithTypedNilMetrics(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	var h *nilHook
	m, err := New(WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}),
		WithFlow(FlowConfig{Source: "a", Target: "b"}), WithMetrics(h))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if m.m != nil {
		t.Errorf("a typed nil Metrics is kept as a recorder")
	}
	m.Close()
}
