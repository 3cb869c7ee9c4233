package remoteclusterutils

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/policy"
)

// DefaultTimeout bounds every call whose context has no deadline: 30 s.
// A context with a deadline is used as is (an earlier or later deadline
// wins over this default). Override it with [WithTimeout].
//
// MM2's RemoteClusterUtils.translateOffsets takes an explicit timeout
// argument (docs/mm2-compat.md §8.3); Go callers express theirs through the
// context.
const DefaultTimeout = 30 * time.Second

// Opt configures [NewClient] and the package-level functions
// ([TranslateOffsets], [ReplicationHops], ...). Options are created by the
// With* functions of this package; check a set with [ValidateOpts].
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

// cfg holds every setting; defaultCfg lists the defaults.
type cfg struct {
	clientOpts []kgo.Opt // package-level functions only

	pol         policy.ReplicationPolicy // WithPolicy
	polSet      bool                     // false: built from the fields below
	sep         string                   // "" = policy.DefaultSeparator
	sepSet      bool
	internalSep bool
	isepSet     bool
	identity    bool
	identitySrc string

	timeout time.Duration
	logger  *slog.Logger

	// built by finish
	policy policy.ReplicationPolicy
}

func defaultCfg() cfg {
	return cfg{
		internalSep: true,
		timeout:     DefaultTimeout,
		logger:      nil, // discard
	}
}

// finish validates the cross-option rules and builds the policy.
func (c *cfg) finish() error {
	if c.timeout <= 0 {
		return fmt.Errorf("remoteclusterutils: timeout %v must be positive", c.timeout)
	}
	if c.polSet {
		if c.pol == nil {
			return errors.New("remoteclusterutils: WithPolicy(nil): pass a policy value, or omit the option for the default policy")
		}
		if c.sepSet || c.isepSet || c.identity {
			return errors.New("remoteclusterutils: WithPolicy cannot be combined with WithSeparator, " +
				"WithInternalTopicSeparator or WithIdentityPolicy: configure the policy value itself")
		}
		c.policy = c.pol
		return nil
	}
	var popts []policy.Opt
	if c.sepSet {
		popts = append(popts, policy.WithSeparator(c.sep))
	}
	popts = append(popts, policy.WithInternalTopicSeparator(c.internalSep))
	var err error
	if c.identity {
		c.policy, err = policy.NewIdentity(c.identitySrc, popts...)
	} else {
		c.policy, err = policy.NewDefault(popts...)
	}
	if err != nil {
		return fmt.Errorf("remoteclusterutils: %w", err)
	}
	return nil
}

func buildCfg(opts []Opt) (cfg, error) {
	c := defaultCfg()
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c, c.finish()
}

// ValidateOpts reports whether opts form a valid configuration, returning
// the error the first call of a [Client] built with them would return
// (except the [WithClientOpts]-on-[NewClient] rule, which depends on the
// entry point).
func ValidateOpts(opts ...Opt) error {
	_, err := buildCfg(opts)
	return err
}

// WithClientOpts gives the package-level functions ([TranslateOffsets],
// [ReplicationHops], [UpstreamClusters], [HeartbeatTopics],
// [CheckpointTopics]) the kgo options that reach the TARGET cluster (the
// cluster that holds "<remoteAlias>.checkpoints.internal" and the replicated
// topics): seed brokers, TLS, SASL. Each call builds one client from them
// and closes it before returning. Pass connection settings only; consumer
// group options (kgo.ConsumerGroup, kgo.ConsumeTopics) would make that
// short-lived client join a group. Required by the package-level functions
// (no default: kgo would otherwise dial localhost:9092).
//
// MM2: the bootstrap.servers, security.protocol, ssl.* and sasl.* keys of
// MirrorClientConfig (docs/mm2-compat.md §8.1).
//
// [NewClient] uses the client it is given: every method of a Client built
// with WithClientOpts returns an error instead of silently ignoring it.
func WithClientOpts(opts ...kgo.Opt) Opt {
	return optFunc(func(c *cfg) { c.clientOpts = append(c.clientOpts, opts...) })
}

// WithPolicy sets the replication policy used to name the checkpoints topic
// and to parse topic names (MM2 replication.policy.class). The default is
// [policy.Default] with separator "." and the internal-topic separator
// enabled, MM2's DefaultReplicationPolicy. It must be the policy the
// mirroring process uses (docs/field-failures.md case B08: with another
// policy the offsets name topics that do not exist). WithPolicy(nil) is an
// error, and so is combining it with [WithSeparator],
// [WithInternalTopicSeparator] or [WithIdentityPolicy].
func WithPolicy(p policy.ReplicationPolicy) Opt {
	return optFunc(func(c *cfg) { c.pol, c.polSet = p, true })
}

// WithSeparator sets the separator of the built-in policy (MM2
// replication.policy.separator, default "."). With the internal-topic
// separator enabled (the default) it also applies to the checkpoints topic
// name: separator "__" reads "<alias>__checkpoints__internal"
// (docs/mm2-compat.md §1.2, docs/field-failures.md case B29). An empty
// separator or one with characters illegal in topic names is an error
// wrapping [policy.ErrInvalidSeparator].
func WithSeparator(sep string) Opt {
	return optFunc(func(c *cfg) { c.sep, c.sepSet = sep, true })
}

// WithInternalTopicSeparator sets whether the separator is used in internal
// topic names (MM2 replication.policy.internal.topic.separator.enabled,
// KIP-949, 3.6+; default true). Use false to read checkpoints written by MM2
// 3.0 or older, or by a deployment configured with false: the checkpoints
// topic is then "<alias>.checkpoints.internal" whatever the separator
// (docs/field-failures.md case B29).
func WithInternalTopicSeparator(enabled bool) Opt {
	return optFunc(func(c *cfg) { c.internalSep, c.isepSet = enabled, true })
}

// WithIdentityPolicy selects MM2's IdentityReplicationPolicy (KAFKA-9726,
// Kafka 3.0; docs/mm2-compat.md §3.2): replicated topics keep their source
// names, so the translated offsets name "orders", not "src.orders"
// (docs/field-failures.md case B08). The checkpoints topic name is the same
// as under the default policy, so translation itself works with either; the
// policy matters for [Client.RemoteTopics] and [Client.RemoteTopicsFor],
// which list every non-internal topic as coming from sourceAlias (MM2
// source.cluster.alias; "" = not configured, then only heartbeats-like topics
// are remote, as in a Java MirrorClient without that key). [WithSeparator]
// and [WithInternalTopicSeparator] still apply.
func WithIdentityPolicy(sourceAlias string) Opt {
	return optFunc(func(c *cfg) { c.identity, c.identitySrc = true, sourceAlias })
}

// WithTimeout sets the bound applied to calls whose context has no
// deadline (default [DefaultTimeout], 30 s). It must be positive.
func WithTimeout(d time.Duration) Opt {
	return optFunc(func(c *cfg) { c.timeout = d })
}

// WithLogger sets a structured logger (default: none, nothing is logged).
// Skipped checkpoint records are logged at debug level one by one (offset
// and reason, never their bytes) and summarised at warn level per read;
// records with an unknown version are summarised at warn level. For the
// package-level functions the logger is also bridged into the kgo client
// they build (kslog), unless WithClientOpts sets kgo.WithLogger itself.
func WithLogger(l *slog.Logger) Opt {
	return optFunc(func(c *cfg) { c.logger = l })
}
