package policy

import (
	"fmt"
	"strings"
)

// FromConfig builds a policy from the values of MM2's replication policy
// keys (MirrorConnectorConfig):
//
//   - class is replication.policy.class: "" or "DefaultReplicationPolicy" or
//     [DefaultPolicyClass] select [Default]; "IdentityReplicationPolicy" or
//     [IdentityPolicyClass] select [Identity]. Surrounding whitespace is
//     ignored (Java's ConfigDef trims class values). Any other class returns
//     an error wrapping [ErrUnknownPolicyClass] that names the class.
//   - separator is replication.policy.separator; "" means "not set" and
//     selects [DefaultSeparator]. Callers that must reject an explicitly
//     empty value do so before calling.
//   - internalSepEnabled is
//     replication.policy.internal.topic.separator.enabled (MM2 default true).
//   - sourceAlias is source.cluster.alias, used only by the identity policy
//     ("" = not configured).
//
// Separator errors wrap [ErrInvalidSeparator]. The returned value is a
// *[Default] or *[Identity].
func FromConfig(class, separator string, internalSepEnabled bool, sourceAlias string) (ReplicationPolicy, error) {
	opts := []Opt{WithInternalTopicSeparator(internalSepEnabled)}
	if separator != "" {
		opts = append(opts, WithSeparator(separator))
	}
	switch strings.TrimSpace(class) {
	case "", "DefaultReplicationPolicy", DefaultPolicyClass:
		return NewDefault(opts...)
	case "IdentityReplicationPolicy", IdentityPolicyClass:
		return NewIdentity(sourceAlias, opts...)
	default:
		return nil, fmt.Errorf("%w %q: kmirror implements only %s and %s",
			ErrUnknownPolicyClass, class, DefaultPolicyClass, IdentityPolicyClass)
	}
}
