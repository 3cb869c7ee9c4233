// Package policy implements MirrorMaker 2's replication policies: how a
// replicated ("remote") topic is named on the target cluster, how a topic
// name is parsed back into its source cluster alias and upstream name, and
// the names of MM2's internal topics (heartbeats, checkpoints, offset syncs).
//
// The package is pure: no I/O, no goroutines, standard library only. Every
// function is deterministic and every policy value is immutable, so all types
// here are safe for concurrent use.
//
// Start with [NewDefault] (MM2's DefaultReplicationPolicy, remote topics are
// named "<alias><sep><topic>") or [NewIdentity] (IdentityReplicationPolicy,
// remote topics keep their name), or build either from MM2 configuration
// values with [FromConfig]. Engines use the [ReplicationPolicy] interface,
// plus [IsCycle] (MirrorSourceConnector's cycle detection) and
// [ValidateAlias] (the alias rules kmirror adds). The topic-list rules of
// MirrorClient (upstream clusters, replication hops, heartbeats and
// checkpoints topics of a cluster) are the methods of
// remoteclusterutils.Client.
//
// The behaviour follows the Java classes of
// org.apache.kafka.connect.mirror, MM2's edge cases included: Java
// String.split semantics in topicSource (".hidden" comes from the empty
// alias, "a." is not remote), the identity policy's "name ends with
// heartbeats" rule, and the internal topic names of each Kafka version
// (replication.policy.internal.topic.separator.enabled, KIP-949; Kafka
// 4.0's isInternalTopic, KAFKA-17200).
package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kmirror/kmirror/internal/topicname"
)

// ReplicationPolicy is MM2's ReplicationPolicy contract
// (org.apache.kafka.connect.mirror.ReplicationPolicy).
//
// Wherever the Java method returns null, the Go method returns ok == false
// (and an empty string). Implementations must be safe for concurrent use and
// must not panic on any input string.
//
// Custom implementations can reuse the Java interface's default method bodies
// through [DefaultOriginalTopic], [DefaultIsHeartbeatsTopic] and
// [DefaultIsInternalTopic].
type ReplicationPolicy interface {
	// FormatRemoteTopic returns the name that topic (a source-cluster
	// name) gets on a target cluster when replicated from the cluster with
	// alias sourceAlias (Java formatRemoteTopic).
	FormatRemoteTopic(sourceAlias, topic string) string
	// TopicSource returns the alias of the cluster topic was replicated
	// from, or ok == false if topic is not a remote topic (Java topicSource).
	// The alias may be the empty string (e.g. ".hidden" under the default
	// policy).
	TopicSource(topic string) (alias string, ok bool)
	// UpstreamTopic returns the name of topic on the cluster it was
	// replicated from, or ok == false if topic is not a remote topic (Java
	// upstreamTopic). After several hops the result may itself be remote.
	UpstreamTopic(topic string) (upstream string, ok bool)
	// OriginalTopic follows UpstreamTopic until it fails or returns the same
	// name and returns the last name (Java originalTopic); a topic that is
	// not remote is its own original.
	OriginalTopic(topic string) string
	// HeartbeatsTopic returns the heartbeats topic name, "heartbeats".
	HeartbeatsTopic() string
	// OffsetSyncsTopic returns the offset-syncs topic name for the given
	// cluster alias, "mm2-offset-syncs.<alias>.internal" by default.
	OffsetSyncsTopic(clusterAlias string) string
	// CheckpointsTopic returns the checkpoints topic name for the given
	// (source) cluster alias, "<alias>.checkpoints.internal" by default.
	CheckpointsTopic(clusterAlias string) string
	// IsHeartbeatsTopic reports whether topic is a heartbeats topic, local
	// ("heartbeats") or replicated ("A.heartbeats", "B.A.heartbeats").
	IsHeartbeatsTopic(topic string) bool
	// IsCheckpointsTopic reports whether topic is a checkpoints topic.
	IsCheckpointsTopic(topic string) bool
	// IsMM2InternalTopic reports whether topic is one of MM2's own internal
	// topics (checkpoints, offset syncs, Connect's mm2-* topics).
	IsMM2InternalTopic(topic string) bool
	// IsInternalTopic reports whether topic must never be replicated: MM2's
	// own internal topics and Kafka-internal names starting with "__" or "."
	// (Kafka 4.0's rule, KAFKA-17200; user topics such as
	// "billing.internal" are not internal).
	IsInternalTopic(topic string) bool
	// Separator returns the remote-topic separator
	// (replication.policy.separator). Policies that do not use one return
	// [DefaultSeparator].
	Separator() string
}

// Names and limits used by MM2 and its DefaultReplicationPolicy.
const (
	// DefaultSeparator is the default of replication.policy.separator.
	DefaultSeparator = "."
	// HeartbeatsTopicName is the heartbeats topic name; the separator
	// never applies to it.
	HeartbeatsTopicName = "heartbeats"
	// MaxTopicNameLength is Kafka's limit on topic name length, in bytes.
	MaxTopicNameLength = 249
	// DefaultPolicyClass is the default of replication.policy.class.
	DefaultPolicyClass = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
	// IdentityPolicyClass is the fully qualified IdentityReplicationPolicy
	// class name.
	IdentityPolicyClass = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
)

// Sentinel errors; the errors returned by this package wrap one of them and
// name the offending value.
var (
	// ErrInvalidSeparator is wrapped by errors about a bad
	// replication.policy.separator.
	ErrInvalidSeparator = errors.New("policy: invalid replication.policy.separator")
	// ErrUnknownPolicyClass is wrapped by [FromConfig] errors about an
	// unsupported replication.policy.class.
	ErrUnknownPolicyClass = errors.New("policy: unsupported replication.policy.class")
	// ErrInvalidAlias is wrapped by [ValidateAlias] errors.
	ErrInvalidAlias = errors.New("policy: invalid cluster alias")
)

// Opt configures [NewDefault] and [NewIdentity].
type Opt interface{ apply(*cfg) }

type cfg struct {
	separator   string
	internalSep bool
}

func defaultCfg() cfg {
	return cfg{
		separator:   DefaultSeparator,
		internalSep: true,
	}
}

func (c *cfg) validate() error {
	if c.separator == "" {
		return fmt.Errorf("%w: the separator must not be empty; for remote topics that keep their source names use "+
			"IdentityReplicationPolicy instead of an empty separator (Go: policy.NewIdentity; properties: "+
			"replication.policy.class=%s and replication.policy.separator=%s)", ErrInvalidSeparator, IdentityPolicyClass, DefaultSeparator)
	}
	if i, r := indexIllegalTopicChar(c.separator); i >= 0 {
		return fmt.Errorf("%w %q: character %q at index %d is not allowed in topic names (legal: [a-zA-Z0-9._-])",
			ErrInvalidSeparator, c.separator, r, i)
	}
	return nil
}

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

// WithSeparator sets the remote-topic separator (MM2
// replication.policy.separator); the default is [DefaultSeparator] ".".
// The separator must be non-empty and consist of characters legal in topic
// names ([a-zA-Z0-9._-]), otherwise the constructor returns an error wrapping
// [ErrInvalidSeparator].
func WithSeparator(sep string) Opt {
	return optFunc(func(c *cfg) { c.separator = sep })
}

// WithInternalTopicSeparator sets whether the separator is also used in the
// checkpoints and offset-syncs topic names (MM2
// replication.policy.internal.topic.separator.enabled, KIP-949, 3.6+); the
// default is true. With false those names use "." as in MM2 3.0 and older:
// with separator "__", "us-west.checkpoints.internal" instead of
// "us-west__checkpoints__internal". A deployment with a custom separator
// that upgrades past 3.0 keeps its old internal topics only with false;
// the readers (checkpoint translation, remoteclusterutils) must use the
// writer's setting.
func WithInternalTopicSeparator(enabled bool) Opt {
	return optFunc(func(c *cfg) { c.internalSep = enabled })
}

// ValidateOpts reports whether opts form a valid policy configuration,
// returning the same error [NewDefault] would.
func ValidateOpts(opts ...Opt) error {
	_, err := buildCfg(opts)
	return err
}

func buildCfg(opts []Opt) (cfg, error) {
	c := defaultCfg()
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c, c.validate()
}

// Default is MM2's DefaultReplicationPolicy
// (org.apache.kafka.connect.mirror.DefaultReplicationPolicy): remote
// topics are named
// "<sourceAlias><sep><topic>", and topic names are parsed back with Java
// String.split semantics.
//
// The zero value is the policy with separator "." and the internal-topic
// separator enabled. A Default is immutable and safe for concurrent use.
type Default struct {
	sep                 string // "" means DefaultSeparator
	internalSepDisabled bool
}

var _ ReplicationPolicy = Default{}

// NewDefault returns a DefaultReplicationPolicy. It returns an error wrapping
// [ErrInvalidSeparator] if [WithSeparator] was given an empty separator or
// one with characters illegal in topic names.
func NewDefault(opts ...Opt) (*Default, error) {
	c, err := buildCfg(opts)
	if err != nil {
		return nil, err
	}
	return &Default{sep: c.separator, internalSepDisabled: !c.internalSep}, nil
}

// Separator returns the remote-topic separator.
func (d Default) Separator() string {
	if d.sep == "" {
		return DefaultSeparator
	}
	return d.sep
}

// InternalTopicSeparatorEnabled reports whether the separator is used in the
// checkpoints and offset-syncs topic names (see [WithInternalTopicSeparator]).
func (d Default) InternalTopicSeparatorEnabled() bool { return !d.internalSepDisabled }

func (d Default) internalSeparator() string {
	if d.internalSepDisabled {
		return "."
	}
	return d.Separator()
}

// FormatRemoteTopic returns sourceAlias + separator + topic. Nothing is
// validated (like Java); use [ValidateAlias] on aliases.
func (d Default) FormatRemoteTopic(sourceAlias, topic string) string {
	return sourceAlias + d.Separator() + topic
}

// TopicSource returns the text before the first separator, provided the text
// after it is not made only of separators (Java split drops trailing empty
// pieces and needs at least two). Examples with ".": "us-west.orders" ->
// "us-west"; ".hidden" -> "" (ok); "a..b" -> "a"; "orders", "a.", "a..", "."
// -> not remote.
func (d Default) TopicSource(topic string) (string, bool) {
	source, _, ok := d.split(topic)
	return source, ok
}

// UpstreamTopic returns the text after the first "<source><sep>" when
// [Default.TopicSource] succeeds, e.g. "a.b.c" -> "b.c", "a..b" -> ".b".
func (d Default) UpstreamTopic(topic string) (string, bool) {
	_, rest, ok := d.split(topic)
	return rest, ok
}

// split implements topicSource/upstreamTopic with Java String.split rules.
func (d Default) split(topic string) (source, rest string, ok bool) {
	sep := d.Separator()
	i := strings.Index(topic, sep)
	if i < 0 {
		return "", "", false
	}
	rest = topic[i+len(sep):]
	// All remaining pieces are empty iff rest is sep repeated k >= 0 times;
	// Java drops those trailing empty pieces, leaving fewer than two.
	r := rest
	for strings.HasPrefix(r, sep) {
		r = r[len(sep):]
	}
	if r == "" {
		return "", "", false
	}
	return topic[:i], rest, true
}

// OriginalTopic follows [Default.UpstreamTopic] to the first non-remote
// name, e.g. "B.A.orders" -> "orders".
func (d Default) OriginalTopic(topic string) string { return DefaultOriginalTopic(d, topic) }

// HeartbeatsTopic returns "heartbeats".
func (d Default) HeartbeatsTopic() string { return HeartbeatsTopicName }

// OffsetSyncsTopic returns "mm2-offset-syncs" + isep + clusterAlias + isep +
// "internal", where isep is the separator, or "." when the internal-topic
// separator is disabled.
func (d Default) OffsetSyncsTopic(clusterAlias string) string {
	isep := d.internalSeparator()
	return "mm2-offset-syncs" + isep + clusterAlias + isep + "internal"
}

// CheckpointsTopic returns clusterAlias + isep + "checkpoints" + isep +
// "internal" (isep as for [Default.OffsetSyncsTopic]).
func (d Default) CheckpointsTopic(clusterAlias string) string {
	return clusterAlias + d.checkpointsSuffix()
}

func (d Default) checkpointsSuffix() string {
	isep := d.internalSeparator()
	return isep + "checkpoints" + isep + "internal"
}

// IsHeartbeatsTopic reports whether the original topic of topic is
// "heartbeats" ("heartbeats", "A.heartbeats", ".heartbeats"; with separator
// "__", "A.heartbeats" is not one).
func (d Default) IsHeartbeatsTopic(topic string) bool { return DefaultIsHeartbeatsTopic(d, topic) }

// IsCheckpointsTopic reports whether topic ends with isep + "checkpoints" +
// isep + "internal".
func (d Default) IsCheckpointsTopic(topic string) bool {
	return strings.HasSuffix(topic, d.checkpointsSuffix())
}

// IsMM2InternalTopic reports whether topic is one of MM2's own internal
// topics, Kafka 4.0's rule (KAFKA-17200): it starts with "mm2" and ends with
// isep + "internal" ("mm2-offset-syncs.B.internal", "mm2-offsets.A.internal",
// "mm2-configs.A.internal"), or it is a checkpoints topic
// ("A.checkpoints.internal"). MM2 3.x counted every name ending with
// isep + "internal" ("billing.internal").
//
// Deliberate difference from MM2: both spellings of these names are
// recognised whatever replication.policy.internal.topic.separator.enabled
// says, the one with the separator and the one with "." (separator "__":
// "mm2-offset-syncs__B__internal" and "mm2-offset-syncs.B.internal",
// "A__checkpoints__internal" and "A.checkpoints.internal"). So the topics
// named under the other setting of the flag (left behind by an upgrade that
// changed it) and
// Connect's "mm2-offsets.A.internal", whose name never uses the separator,
// are never replicated; Java MM2 with separator "__" leaves them to the
// topics.exclude default.
func (d Default) IsMM2InternalTopic(topic string) bool {
	if isMM2Internal(topic, d.Separator()) {
		return true
	}
	return d.Separator() != "." && isMM2Internal(topic, ".")
}

// isMM2Internal is Kafka 4.0's isMM2InternalTopic for one internal-topic
// separator.
func isMM2Internal(topic, isep string) bool {
	suffix := isep + "internal"
	return strings.HasSuffix(topic, suffix) &&
		(strings.HasPrefix(topic, "mm2") || strings.HasSuffix(topic, isep+"checkpoints"+suffix))
}

// IsInternalTopic reports whether topic is an MM2 internal topic or a
// Kafka-internal name (see [DefaultIsInternalTopic]).
func (d Default) IsInternalTopic(topic string) bool { return DefaultIsInternalTopic(d, topic) }

// maxOriginalHops bounds the walks over upstream names so that a misbehaving
// custom policy cannot loop forever. Real chains are a handful of hops; the
// bound exceeds any chain a 249-byte topic name can encode.
const maxOriginalHops = 1 << 10

// DefaultOriginalTopic is the ReplicationPolicy interface's default
// originalTopic, for custom implementations: apply p.UpstreamTopic until it
// fails or returns its input, and return the last name. The walk also stops
// after 1024 steps.
func DefaultOriginalTopic(p ReplicationPolicy, topic string) string {
	for range maxOriginalHops {
		up, ok := p.UpstreamTopic(topic)
		if !ok || up == topic {
			return topic
		}
		topic = up
	}
	return topic
}

// DefaultIsHeartbeatsTopic is the interface default isHeartbeatsTopic:
// p.HeartbeatsTopic() == p.OriginalTopic(topic).
func DefaultIsHeartbeatsTopic(p ReplicationPolicy, topic string) bool {
	return p.HeartbeatsTopic() == p.OriginalTopic(topic)
}

// DefaultIsInternalTopic is the interface default isInternalTopic of Kafka
// 4.0 (KAFKA-17200): p.IsMM2InternalTopic(topic), or topic starts with "__"
// or "." (Kafka's own internal topics). Kafka 3.x also counted every name
// ending with "-internal" or ".internal", so user topics such as
// "billing.internal" were never replicated; Kafka 4.0 and kmirror
// replicate them when the topic filter selects them.
func DefaultIsInternalTopic(p ReplicationPolicy, topic string) bool {
	return p.IsMM2InternalTopic(topic) || IsKafkaInternalTopic(topic)
}

// IsKafkaInternalTopic reports whether topic is named like one of Kafka's own
// internal topics: it starts with "__" ("__consumer_offsets",
// "__transaction_state") or "." (MM2's ReplicationPolicy.isInternalTopic
// counts both). Such topics are never replicated, even when listed
// explicitly in topics.
func IsKafkaInternalTopic(topic string) bool {
	return strings.HasPrefix(topic, "__") || strings.HasPrefix(topic, ".")
}

// indexIllegalTopicChar returns the byte index and the character (U+FFFD
// for invalid UTF-8) of the first character of s outside [a-zA-Z0-9._-], or
// -1.
func indexIllegalTopicChar(s string) (int, rune) {
	for i := 0; i < len(s); i++ {
		if !topicname.LegalByte(s[i]) {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return i, r
		}
	}
	return -1, 0
}
