package heartbeat

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/wire"
)

// TestBrk1207NewEmitterRefusesUnencodableAlias: an alias longer than a
// Kafka STRING holds (32767 bytes) can never be written into a heartbeat
// key. NewEmitter accepted it, and Run then failed every heartbeat without
// logging anything (only OnError, when set, saw it): no heartbeats, no
// trace. NewEmitter, which validates cfg, refuses it naming the field.
func TestBrk1207NewEmitterRefusesUnencodableAlias(t *testing.T) {
	long := strings.Repeat("a", wire.MaxStringLen+1)
	for _, cfg := range []EmitterConfig{
		{SourceAlias: long, TargetAlias: "b", TargetOpts: []kgo.Opt{kgo.SeedBrokers("x:1")}},
		{SourceAlias: "a", TargetAlias: long, TargetOpts: []kgo.Opt{kgo.SeedBrokers("x:1")}},
	} {
		e, err := NewEmitter(cfg)
		if e != nil || !errors.Is(err, ErrStringTooLong) || !strings.Contains(err.Error(), "ClusterAlias") {
			t.Errorf("NewEmitter(alias of %d bytes) = emitter %v, %v; want an error wrapping ErrStringTooLong naming the alias field", len(long), e != nil, err)
		}
	}
}

// TestBrk1207NewEmitterRefusesNegativeDurations: in MM2 a negative
// emit.heartbeats.interval.seconds turns heartbeats off. NewEmitter took a
// negative Interval (and AdminTimeout) as "use the default" and emitted a
// heartbeat every second, silently doing the opposite of what an MM2 user
// meant; a negative ReplicationFactor below -1 was already refused. Both
// are refused, naming the field and what to write.
func TestBrk1207NewEmitterRefusesNegativeDurations(t *testing.T) {
	base := EmitterConfig{SourceAlias: "a", TargetAlias: "b", TargetOpts: []kgo.Opt{kgo.SeedBrokers("x:1")}}
	ni, na := base, base
	ni.Interval = -1
	na.AdminTimeout = -1
	for _, tc := range []struct {
		cfg  EmitterConfig
		want string
	}{{ni, "Interval"}, {na, "AdminTimeout"}} {
		e, err := NewEmitter(tc.cfg)
		if e != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewEmitter(negative %s) = emitter %v, %v; want an error naming %s", tc.want, e != nil, err, tc.want)
		}
	}
}
