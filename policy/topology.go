package policy

import (
	"fmt"
	"strings"
)

// orDefault lets the helpers accept a nil policy (treated as the zero
// [Default]) instead of panicking.
func orDefault(p ReplicationPolicy) ReplicationPolicy {
	if p == nil {
		return Default{}
	}
	return p
}

// IsCycle reports whether replicating topic (a name on the source cluster) to
// the cluster targetAlias would send data back to where it came from
// (MirrorSourceConnector.isCycle): walk
// TopicSource/UpstreamTopic; a source equal to targetAlias is a cycle; an
// unparsable name, or an upstream name equal to its input (identity-style
// policies), ends the walk without a cycle.
//
// Flow source->target, default policy: "target.topic1",
// "target.source.topic1", "source.target.topic1" are cycles; "topic1",
// "source.topic1" are not. With [Identity] only heartbeats-like topics can be
// cycles. A nil p is treated as the zero [Default].
func IsCycle(p ReplicationPolicy, targetAlias, topic string) bool {
	p = orDefault(p)
	for range maxOriginalHops {
		source, ok := p.TopicSource(topic)
		if !ok {
			return false
		}
		if source == targetAlias {
			return true
		}
		up, ok := p.UpstreamTopic(topic)
		if !ok || up == topic {
			return false
		}
		topic = up
	}
	return false
}

// NeverReplicated reports whether the flow sourceAlias->targetAlias must
// never replicate topic (a name on the source cluster), whatever its
// topics and topics.exclude say: topic is an internal topic
// (IsInternalTopic: Kafka's "__" and "." topics, MM2's mm2*.internal and
// checkpoints topics), replicating it would be a cycle ([IsCycle]), or its
// remote name on the target would be an internal topic's (the source's
// "checkpoints.internal" becomes "A.checkpoints.internal", the checkpoints
// topic of flow A->B under the default policy; MM2 copies it into that
// topic, kmirror does not). Heartbeats topics are not judged here: flows
// replicate them, consumer groups do not read them. A nil p is treated as
// the zero [Default].
func NeverReplicated(p ReplicationPolicy, sourceAlias, targetAlias, topic string) bool {
	p = orDefault(p)
	return p.IsInternalTopic(topic) || IsCycle(p, targetAlias, topic) || p.IsInternalTopic(p.FormatRemoteTopic(sourceAlias, topic))
}

// ValidateAlias checks that a cluster alias can be used with policy p
// without corrupting topic names. Java MM2 performs none of these checks.
// The rules, in order:
//
//  1. the alias is not empty;
//  2. it contains only bytes legal in topic names, [a-zA-Z0-9._-];
//  3. it does not start with "__" or "." (remote topics named after it would
//     count as internal topics and never be replicated further);
//  4. the first occurrence of the separator in alias+separator is the one
//     appended (the alias neither contains the separator nor ends with a
//     prefix of it); otherwise remote topics are attributed to the wrong
//     source, e.g. alias "eu-prod" with separator "-" is read back as "eu",
//     and heartbeats named after one alias come back double-prefixed;
//  5. every topic name derived from the alias (offset syncs, checkpoints,
//     remote heartbeats) fits in [MaxTopicNameLength] bytes: 223 bytes for
//     the default policy;
//  6. p.TopicSource(p.FormatRemoteTopic(alias, p.HeartbeatsTopic())) returns
//     the alias (catches custom policies).
//
// The error wraps [ErrInvalidAlias] and names the alias and the rule broken.
// A nil p is treated as the zero [Default].
func ValidateAlias(p ReplicationPolicy, alias string) error {
	p = orDefault(p)
	if err := validateAliasChars(alias); err != nil {
		return err
	}
	if strings.HasPrefix(alias, "__") || strings.HasPrefix(alias, ".") {
		return fmt.Errorf("%w %q: must not start with \"__\" or \".\": remote topics such as %q would be treated as internal and not replicated",
			ErrInvalidAlias, alias, p.FormatRemoteTopic(alias, p.HeartbeatsTopic()))
	}
	sep := p.Separator()
	if sep != "" && strings.Index(alias+sep, sep) != len(alias) {
		remote := p.FormatRemoteTopic(alias, p.HeartbeatsTopic())
		got, _ := p.TopicSource(remote)
		if strings.Contains(alias, sep) {
			return fmt.Errorf("%w %q: contains the replication separator %q, so remote topic %q would be attributed to cluster %q",
				ErrInvalidAlias, alias, sep, remote, got)
		}
		return fmt.Errorf("%w %q: ends with the start of the replication separator %q, so remote topic %q would be attributed to cluster %q",
			ErrInvalidAlias, alias, sep, remote, got)
	}
	for _, name := range []string{
		p.OffsetSyncsTopic(alias),
		p.CheckpointsTopic(alias),
		p.FormatRemoteTopic(alias, p.HeartbeatsTopic()),
	} {
		if len(name) > MaxTopicNameLength {
			return fmt.Errorf("%w %q: too long (%d bytes): derived topic name is %d bytes, Kafka allows at most %d",
				ErrInvalidAlias, alias, len(alias), len(name), MaxTopicNameLength)
		}
	}
	remote := p.FormatRemoteTopic(alias, p.HeartbeatsTopic())
	if got, ok := p.TopicSource(remote); !ok || got != alias {
		return fmt.Errorf("%w %q: the policy parses remote topic %q back as coming from %q (ok=%t)",
			ErrInvalidAlias, alias, remote, got, ok)
	}
	return nil
}

// validateAliasChars is rules 1 and 2 of [ValidateAlias].
func validateAliasChars(alias string) error {
	if alias == "" {
		return fmt.Errorf("%w: the alias must not be empty (an empty alias does not make remote topics keep their "+
			"source names: that is IdentityReplicationPolicy, replication.policy.class=%s)", ErrInvalidAlias, IdentityPolicyClass)
	}
	if i, r := indexIllegalTopicChar(alias); i >= 0 {
		return fmt.Errorf("%w %q: character %q at index %d is not allowed in topic names (legal: [a-zA-Z0-9._-])",
			ErrInvalidAlias, alias, r, i)
	}
	return nil
}

// ValidateAliasInNames checks a cluster alias that appears inside topic
// names but never starts a remote topic name, such as the target alias of a
// flow in its offset-syncs topic "mm2-offset-syncs.<target>.internal" on the
// source (MM2's default offset-syncs.topic.location=source). names are the
// topic names derived from the alias. The rules are rules 1, 2 and 5 of
// [ValidateAlias]: the alias is not empty, contains only bytes legal in topic
// names ([a-zA-Z0-9._-]), and every name fits in [MaxTopicNameLength]
// bytes. It may contain the separator or start with "__" or ".", which only
// matter for aliases that prefix remote topics. The error wraps
// [ErrInvalidAlias] and names the alias, the rule and the offending name.
func ValidateAliasInNames(alias string, names ...string) error {
	if err := validateAliasChars(alias); err != nil {
		return err
	}
	for _, name := range names {
		if len(name) > MaxTopicNameLength {
			return fmt.Errorf("%w %q: too long (%d bytes): derived topic name %q is %d bytes, Kafka allows at most %d",
				ErrInvalidAlias, alias, len(alias), name, len(name), MaxTopicNameLength)
		}
	}
	return nil
}
