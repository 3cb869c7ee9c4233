package mirror

import (
	"fmt"
	"strings"

	"github.com/kmirror/kmirror/policy"
)

// maxAliasBytes is the longest alias a heartbeat key can carry: the key's
// aliases are Kafka protocol STRINGs (int16 length).
const maxAliasBytes = 1<<15 - 1

// identityAdvice tells users of the empty-alias/empty-separator trick what
// to write instead; prefix is the flow prefix of the keys ("" or "a->b.").
func identityAdvice(prefix string) string {
	return fmt.Sprintf("for remote topics that keep their source names use IdentityReplicationPolicy: write\n"+
		"  %sreplication.policy.class = %s\n  %sreplication.policy.separator = %s\n"+
		"(Go: FlowConfig.Policy from policy.NewIdentity with the flow's source alias); the provenance header keeps identity flows from looping",
		prefix, policy.IdentityPolicyClass, prefix, policy.DefaultSeparator)
}

// validateFlowAliases checks the flow's cluster aliases where the flow uses
// them (MM2 itself checks none of this):
//
//   - every alias: not empty, no "->" (flow names and keys "a->b.x" would
//     be ambiguous), at most 32767 bytes (a heartbeat key field);
//   - the source alias of an enabled flow prefixes topic names: remote
//     topics under the default policy ("us.orders"), remote heartbeats
//     under both policies ("us.heartbeats"), the checkpoints topic
//     "us.checkpoints.internal", the resume points topic
//     "mm2-offsets.us.internal"; it must pass [policy.ValidateAlias]
//     (legal topic characters, no separator inside, not starting with "__"
//     or ".", short enough);
//   - the target alias reaches a topic name only in the offset-syncs topic
//     "mm2-offset-syncs.<target>.internal" on the source (offset syncs on,
//     offset-syncs.topic.location=source, MM2's default); then it must be a
//     legal topic-name fragment ([policy.ValidateAliasInNames]). Otherwise it
//     appears only inside heartbeat records and may contain any character
//     MM2 accepts.
//
// fc.Policy nil means the default policy. The error names the alias, the
// rule and the topic the alias would appear in.
func validateFlowAliases(fc FlowConfig) *ConfigError {
	p := fc.Policy
	if p == nil {
		p, _ = policy.NewDefault()
	}
	name := fc.Name()
	for _, a := range []string{fc.Source, fc.Target} {
		switch {
		case a == "":
			return &ConfigError{Key: "clusters", Reason: fmt.Sprintf("flow %s: a cluster alias is empty: an empty alias does not make remote topics keep their names; %s",
				name, identityAdvice(""))}
		case strings.Contains(a, "->"):
			return &ConfigError{Key: "clusters", Value: a, Reason: fmt.Sprintf(`a cluster alias must not contain "->": the flow name %s and keys such as %s.topics would be ambiguous`, name, name)}
		case len(a) > maxAliasBytes:
			return &ConfigError{Key: "clusters", Value: a[:64] + "...", Reason: fmt.Sprintf("cluster alias too long (%d bytes): heartbeat records carry at most %d", len(a), maxAliasBytes)}
		}
	}
	if sa, ok := p.(interface{ SourceAlias() string }); ok && sa.SourceAlias() != "" && sa.SourceAlias() != fc.Source {
		// IdentityReplicationPolicy reads every topic as coming from its
		// source.cluster.alias: the target's alias there makes every topic a
		// cycle (nothing replicated), another alias holds back every empty
		// topic as of unknown origin (a new user's try, stop 38).
		return &ConfigError{Key: name + ".source.cluster.alias", Value: sa.SourceAlias(), Reason: fmt.Sprintf(
			"the flow's IdentityReplicationPolicy reads every topic as replicated from %q, but flow %s reads from %s: "+
				"write FlowConfig.Policy from policy.NewIdentity(%q) (MM2 sets source.cluster.alias to the flow's source alias), or policy.NewIdentity(\"\")",
			sa.SourceAlias(), name, fc.Source, fc.Source)}
	}
	if fc.Disabled {
		// Heartbeats only: the aliases appear in heartbeat records and, the
		// source alias, in the flow's coordination and status topics, which
		// topicname.WithAlias names legally for any alias.
		return nil
	}
	if err := policy.ValidateAlias(p, fc.Source); err != nil {
		return &ConfigError{Key: "clusters", Value: fc.Source, Reason: fmt.Sprintf(
			"%v; as the source of flow %s this alias starts topic names: remote topics %s, %s on %s and the resume points topic mm2-offsets.%s.internal: %s",
			err, name, p.FormatRemoteTopic(fc.Source, p.HeartbeatsTopic()), p.CheckpointsTopic(fc.Source), fc.Target, fc.Source,
			sourceAliasAdvice(p, fc.Source))}
	}
	if !fc.DisableOffsetSyncs && !fc.OffsetSyncsTopicLocationTarget {
		syncs := p.OffsetSyncsTopic(fc.Target)
		if err := policy.ValidateAliasInNames(fc.Target, syncs); err != nil {
			return &ConfigError{Key: "clusters", Value: fc.Target, Reason: fmt.Sprintf(
				"%v; as the target of flow %s this alias appears in the offset-syncs topic %s on %s (offset-syncs.topic.location=source): "+
					"rename the alias, or set %s.offset-syncs.topic.location=target (FlowConfig.OffsetSyncsTopicLocationTarget), with which a target alias never appears in a topic name",
				err, name, syncs, fc.Source, name)}
		}
	}
	return nil
}

// sourceAliasAdvice says what to write instead of a source alias
// [policy.ValidateAlias] refuses: another alias (one it accepts when
// replacing the offending characters makes one), or, for an alias holding
// the separator, another separator (both name the flow's topics anew,
// which the advice says: MM2 runs with such an alias).
func sourceAliasAdvice(p policy.ReplicationPolicy, alias string) string {
	advice := "rename the cluster in clusters and in its keys"
	if s := suggestAlias(p, alias); s != "" {
		advice += fmt.Sprintf(" (e.g. %s, with %s.bootstrap.servers)", s, s)
	}
	if sep := p.Separator(); sep != "" && strings.Index(alias+sep, sep) != len(alias) {
		// MM2 accepts such an alias: its remote topics exist.
		advice += fmt.Sprintf(", or set replication.policy.separator to a string the alias does not contain (not %q); "+
			"either names these topics anew, so remote topics an MM2 deployment wrote under this alias are not continued", sep)
	}
	return advice
}

// suggestAlias returns alias with its separator and the bytes illegal in
// topic names replaced by '-' (or '_') and the leading '_' and '.' dropped,
// if policy p accepts the result; "" otherwise.
func suggestAlias(p policy.ReplicationPolicy, alias string) string {
	for _, r := range []string{"-", "_"} {
		s := alias
		if sep := p.Separator(); sep != "" {
			s = strings.ReplaceAll(s, sep, r)
		}
		s = strings.Map(func(c rune) rune {
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
				return c
			}
			return rune(r[0])
		}, s)
		s = strings.TrimLeft(s, "_.")
		if s != "" && s != alias && policy.ValidateAlias(p, s) == nil {
			return s
		}
	}
	return ""
}
