package mirror

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNewRefusesNegativeReplicationFactors: a FlowConfig replication factor
// below -1 (HeartbeatsTopicReplicationFactor: -3, say) was accepted by New
// and the preflight (which compares only with the broker count), and every
// creation of the topic then failed at the broker with
// INVALID_REPLICATION_FACTOR, naming no setting: heartbeats never written,
// the flow RUNNING. The properties loader refuses such a value; New now
// does too, naming the MM2 key and the value.
func TestNewRefusesNegativeReplicationFactors(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	newWith := func(fc FlowConfig) error {
		m, err := New(WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}), WithFlow(fc))
		if err == nil {
			m.Close()
		}
		return err
	}
	for _, tc := range []struct {
		set  func(*FlowConfig)
		want string
	}{
		{func(f *FlowConfig) { f.HeartbeatsTopicReplicationFactor = -3 }, `a->b.heartbeats.topic.replication.factor="-3": FlowConfig.HeartbeatsTopicReplicationFactor must be positive, or -1 for the broker default (0 means -1)`},
		{func(f *FlowConfig) { f.ReplicationFactor = -2 }, `a->b.replication.factor="-2": FlowConfig.ReplicationFactor must be positive, or -1 for the broker default (0 means -1)`},
		{func(f *FlowConfig) { f.CheckpointsTopicReplicationFactor = -32768 }, `a->b.checkpoints.topic.replication.factor="-32768": FlowConfig.CheckpointsTopicReplicationFactor must be positive, or -1 for the broker default (0 means -1)`},
		{func(f *FlowConfig) { f.OffsetSyncsTopicReplicationFactor = -5 }, `a->b.offset-syncs.topic.replication.factor="-5": FlowConfig.OffsetSyncsTopicReplicationFactor must be positive, or -1 for the broker default (0 means -1)`},
		{func(f *FlowConfig) { f.OffsetStorageReplicationFactor = -2 }, `a->b.offset.storage.replication.factor="-2": FlowConfig.OffsetStorageReplicationFactor must be positive, or -1 for the broker default (0 means -1)`},
	} {
		fc := FlowConfig{Source: "a", Target: "b"}
		tc.set(&fc)
		err := newWith(fc)
		var ce *ConfigError
		if !errors.As(err, &ce) || err.Error() != "mirror: "+tc.want {
			t.Errorf("New = %v, want the ConfigError %q", err, tc.want)
		}
	}
	// -1, 0 and positive values are accepted.
	if err := newWith(FlowConfig{Source: "a", Target: "b", HeartbeatsTopicReplicationFactor: -1, ReplicationFactor: 3, CheckpointsTopicReplicationFactor: 0}); err != nil {
		t.Fatalf("New: %v", err)
	}
}
