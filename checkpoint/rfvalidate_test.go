package checkpoint

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNewEmitterRefusesReplicationFactorBelowMinusOne: as
// heartbeat.NewEmitter and mirror.New, checkpoint.NewEmitter refuses a
// ReplicationFactor below -1 (it was accepted, and every creation of the
// checkpoints topic then failed at the broker with
// INVALID_REPLICATION_FACTOR, naming no setting).
func TestNewEmitterRefusesReplicationFactorBelowMinusOne(t *testing.T) {
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	cfg := EmitterConfig{SourceAlias: "a", TargetAlias: "b", OffsetSyncsTopic: "mm2-offset-syncs.b.internal",
		SourceOpts: seeds, TargetOpts: seeds, OffsetSyncsOpts: seeds, ReplicationFactor: -2}
	_, err := NewEmitter(cfg)
	const want = "checkpoint: ReplicationFactor (checkpoints.topic.replication.factor) is -2: it must be positive, or -1 (or 0) for the broker default"
	if err == nil || err.Error() != want {
		t.Fatalf("NewEmitter = %v, want %q", err, want)
	}
}
