package policy

import "strings"

// Identity is MM2's IdentityReplicationPolicy
// (org.apache.kafka.connect.mirror.IdentityReplicationPolicy, KAFKA-9726,
// Kafka 3.0): remote topics keep their source name.
//
// Topics whose name ends with "heartbeats" (a plain suffix test, so
// "app-heartbeats" counts too) get the [Default] rules with the same
// separator, so heartbeats are still prefixed ("A.heartbeats") and
// topology discovery and heartbeat cycle detection keep working. For every
// other topic, FormatRemoteTopic returns the topic unchanged, TopicSource
// returns the configured source alias, and UpstreamTopic and OriginalTopic
// return the topic itself. Consequently [IsCycle] never reports a cycle for a
// non-heartbeat topic: A->B plus B->A with Identity loops records forever.
//
// Internal topic names are the same as under [Default]. The zero value has
// separator "." and no source alias. An Identity is immutable and safe for
// concurrent use.
type Identity struct {
	base        Default
	sourceAlias string // "" = source.cluster.alias not configured
}

var _ ReplicationPolicy = Identity{}

// NewIdentity returns an IdentityReplicationPolicy. sourceAlias is MM2's
// source.cluster.alias, which MM2 connectors always configure; pass "" for a
// policy that, like a MirrorClient without that key, cannot name the source
// of non-heartbeat topics ([Identity.TopicSource] then returns ok == false).
// The options and errors are those of [NewDefault]; the alias itself is not
// validated (see [ValidateAlias]).
func NewIdentity(sourceAlias string, opts ...Opt) (*Identity, error) {
	d, err := NewDefault(opts...)
	if err != nil {
		return nil, err
	}
	return &Identity{base: *d, sourceAlias: sourceAlias}, nil
}

// SourceAlias returns the configured source.cluster.alias ("" if none).
func (p Identity) SourceAlias() string { return p.sourceAlias }

// Separator returns the separator used for heartbeats-like topics and
// internal topic names.
func (p Identity) Separator() string { return p.base.Separator() }

// InternalTopicSeparatorEnabled reports whether the separator is used in the
// checkpoints and offset-syncs topic names.
func (p Identity) InternalTopicSeparatorEnabled() bool {
	return p.base.InternalTopicSeparatorEnabled()
}

// looksLikeHeartbeat is IdentityReplicationPolicy's suffix test.
func (p Identity) looksLikeHeartbeat(topic string) bool {
	return strings.HasSuffix(topic, p.base.HeartbeatsTopic())
}

// FormatRemoteTopic returns topic unchanged, or sourceAlias + separator +
// topic if topic ends with "heartbeats".
func (p Identity) FormatRemoteTopic(sourceAlias, topic string) string {
	if p.looksLikeHeartbeat(topic) {
		return p.base.FormatRemoteTopic(sourceAlias, topic)
	}
	return topic
}

// TopicSource returns the configured source alias (ok == false if none), or
// the [Default.TopicSource] result if topic ends with "heartbeats".
func (p Identity) TopicSource(topic string) (string, bool) {
	if p.looksLikeHeartbeat(topic) {
		return p.base.TopicSource(topic)
	}
	return p.sourceAlias, p.sourceAlias != ""
}

// UpstreamTopic returns topic itself, or the [Default.UpstreamTopic] result
// if topic ends with "heartbeats".
func (p Identity) UpstreamTopic(topic string) (string, bool) {
	if p.looksLikeHeartbeat(topic) {
		return p.base.UpstreamTopic(topic)
	}
	return topic, true
}

// OriginalTopic follows [Identity.UpstreamTopic] until it fails or stops
// changing; non-heartbeat topics are their own original.
func (p Identity) OriginalTopic(topic string) string { return DefaultOriginalTopic(p, topic) }

// HeartbeatsTopic returns "heartbeats".
func (p Identity) HeartbeatsTopic() string { return p.base.HeartbeatsTopic() }

// OffsetSyncsTopic is [Default.OffsetSyncsTopic].
func (p Identity) OffsetSyncsTopic(clusterAlias string) string {
	return p.base.OffsetSyncsTopic(clusterAlias)
}

// CheckpointsTopic is [Default.CheckpointsTopic].
func (p Identity) CheckpointsTopic(clusterAlias string) string {
	return p.base.CheckpointsTopic(clusterAlias)
}

// IsHeartbeatsTopic reports whether the original topic of topic is
// "heartbeats".
func (p Identity) IsHeartbeatsTopic(topic string) bool { return DefaultIsHeartbeatsTopic(p, topic) }

// IsCheckpointsTopic is [Default.IsCheckpointsTopic].
func (p Identity) IsCheckpointsTopic(topic string) bool { return p.base.IsCheckpointsTopic(topic) }

// IsMM2InternalTopic is [Default.IsMM2InternalTopic].
func (p Identity) IsMM2InternalTopic(topic string) bool { return p.base.IsMM2InternalTopic(topic) }

// IsInternalTopic is [Default.IsInternalTopic].
func (p Identity) IsInternalTopic(topic string) bool { return DefaultIsInternalTopic(p, topic) }
