package policy

import (
	"fmt"
	"slices"
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
// (MirrorSourceConnector.isCycle, docs/mm2-compat.md §4.3): walk
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
//     source, e.g. alias "eu-prod" with separator "-" is read back as "eu"
//     (docs/field-failures.md case B25);
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

// ReplicationHops returns the smallest number of replication hops from the
// cluster alias to the cluster whose topic names are listed in topics, or -1
// if alias is not upstream (MirrorClient.replicationHops, docs/mm2-compat.md
// §8.2). Only heartbeats topics are considered: "A.heartbeats" is 1 hop from
// A, "B.A.heartbeats" 2 hops from A. A walk that reaches a non-remote name or
// a source it has already seen counts as unreachable. A nil p is treated as
// the zero [Default].
func ReplicationHops(p ReplicationPolicy, topics []string, alias string) int {
	p = orDefault(p)
	best := -1
	for _, t := range topics {
		if !p.IsHeartbeatsTopic(t) {
			continue
		}
		if h := countHops(p, t, alias); h != -1 && (best == -1 || h < best) {
			best = h
		}
	}
	return best
}

func countHops(p ReplicationPolicy, topic, alias string) int {
	seen := map[string]bool{}
	for hops := 1; hops <= maxOriginalHops; hops++ {
		source, ok := p.TopicSource(topic)
		if !ok {
			return -1
		}
		if source == alias {
			return hops
		}
		if seen[source] {
			return -1
		}
		seen[source] = true
		if topic, ok = p.UpstreamTopic(topic); !ok {
			return -1
		}
	}
	return -1
}

// UpstreamClusters returns the sorted, de-duplicated aliases of every cluster
// upstream of the cluster whose topic names are listed in topics, found by
// walking each heartbeats topic's sources (MirrorClient.upstreamClusters,
// docs/mm2-compat.md §8.2): "source3.source4.source5.heartbeats" contributes
// source3, source4 and source5; "heartbeats" contributes nothing;
// ".heartbeats" contributes the empty alias "" (as in Java). Returns nil if
// there are none. A nil p is treated as the zero [Default].
func UpstreamClusters(p ReplicationPolicy, topics []string) []string {
	p = orDefault(p)
	set := map[string]bool{}
	for _, t := range topics {
		if !p.IsHeartbeatsTopic(t) {
			continue
		}
		// Per-topic walk; a source repeated within one chain stops it
		// (identity-style policies can produce such loops).
		seen := map[string]bool{}
		for range maxOriginalHops {
			source, ok := p.TopicSource(t)
			if !ok || seen[source] {
				break
			}
			seen[source] = true
			set[source] = true
			if t, ok = p.UpstreamTopic(t); !ok {
				break
			}
		}
	}
	return sortedKeys(set)
}

// HeartbeatTopics returns the sorted, de-duplicated topics for which
// p.IsHeartbeatsTopic holds (MirrorClient.heartbeatTopics). Returns nil if
// there are none. A nil p is treated as the zero [Default].
func HeartbeatTopics(p ReplicationPolicy, topics []string) []string {
	p = orDefault(p)
	return filterSorted(topics, p.IsHeartbeatsTopic)
}

// CheckpointTopics returns the sorted, de-duplicated topics for which
// p.IsCheckpointsTopic holds (MirrorClient.checkpointTopics):
// "source1.checkpoints.internal" yes, "checkpoints.internal" no. Returns nil
// if there are none. A nil p is treated as the zero [Default].
func CheckpointTopics(p ReplicationPolicy, topics []string) []string {
	p = orDefault(p)
	return filterSorted(topics, p.IsCheckpointsTopic)
}

// RemoteTopics returns the sorted, de-duplicated topics that are not internal
// and have a source (MirrorClient.remoteTopics). Like Java this includes
// remote heartbeats topics such as "A.heartbeats"; under [Identity] with a
// source alias it includes every non-internal topic. Returns nil if there are
// none. A nil p is treated as the zero [Default].
func RemoteTopics(p ReplicationPolicy, topics []string) []string {
	p = orDefault(p)
	return filterSorted(topics, func(t string) bool { return isRemote(p, t) })
}

// RemoteTopicsFor returns the sorted, de-duplicated remote topics (as in
// [RemoteTopics]) replicated directly from the cluster source, i.e. whose
// TopicSource is source (MirrorClient.remoteTopics(source)). Returns nil if
// there are none. A nil p is treated as the zero [Default].
func RemoteTopicsFor(p ReplicationPolicy, topics []string, source string) []string {
	p = orDefault(p)
	return filterSorted(topics, func(t string) bool {
		if p.IsInternalTopic(t) {
			return false
		}
		s, ok := p.TopicSource(t)
		return ok && s == source
	})
}

func isRemote(p ReplicationPolicy, t string) bool {
	if p.IsInternalTopic(t) {
		return false
	}
	_, ok := p.TopicSource(t)
	return ok
}

func filterSorted(topics []string, keep func(string) bool) []string {
	set := map[string]bool{}
	for _, t := range topics {
		if keep(t) {
			set[t] = true
		}
	}
	return sortedKeys(set)
}

func sortedKeys(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
