package remoteclusterutils

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/policy"
)

// DefaultTimeout bounds every call whose context has no deadline: 30 s.
// A context with a deadline is used as is (an earlier or later deadline
// wins over this default). Override it with [WithTimeout] for a
// [Client]'s calls; the package-level calls that take a *kgo.Client
// ([TranslateBack], [ReadBackIndex], [TranslateFromRecords],
// [RefineFromRecords]) always use this default.
//
// MM2's RemoteClusterUtils.translateOffsets takes an explicit timeout
// argument; Go callers express theirs through the context.
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

	pol    policy.ReplicationPolicy // WithPolicy
	polSet bool

	timeout time.Duration
	logger  *slog.Logger

	// built by finish
	policy policy.ReplicationPolicy
}

func defaultCfg() cfg {
	return cfg{
		timeout: DefaultTimeout,
		logger:  nil, // discard
	}
}

// finish validates the cross-option rules and sets the policy.
func (c *cfg) finish() error {
	if c.timeout <= 0 {
		return fmt.Errorf("remoteclusterutils: timeout %v must be positive", c.timeout)
	}
	switch {
	case c.polSet && c.pol == nil:
		return errors.New("remoteclusterutils: WithPolicy(nil): pass a policy value, or omit the option for the default policy")
	case c.polSet:
		c.policy = c.pol
	default:
		c.policy = policy.Default{}
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
// MirrorClientConfig (the only keys its clients keep).
//
// [NewClient] uses the client it is given: every method of a Client built
// with WithClientOpts returns an error instead of silently ignoring it.
func WithClientOpts(opts ...kgo.Opt) Opt {
	return optFunc(func(c *cfg) { c.clientOpts = append(c.clientOpts, opts...) })
}

// WithPolicy sets the replication policy that names the checkpoints topic
// and parses topic names (MM2 replication.policy.class,
// replication.policy.separator and
// replication.policy.internal.topic.separator.enabled). The default is
// MM2's DefaultReplicationPolicy with separator "." and the internal-topic
// separator enabled ([policy.Default]'s zero value).
//
// Pass the policy the mirroring process uses (the FlowConfig.Policy of a
// kmirror flow, or the policy.FromConfig of an MM2 file): the separator
// settings decide the checkpoints topic's name ("us-west.checkpoints.internal";
// with separator "__", "us-west__checkpoints__internal" unless the
// internal-topic separator is disabled, as in MM2 3.0 and older), and an
// IdentityReplicationPolicy writer's checkpoints name the source topics
// ("orders", not "us-west.orders"), which the identity policy's topic
// listing ([Client.RemoteTopics]) expects. A policy that differs from the
// writer's finds no checkpoints topic, or yields offsets for topics the
// target does not have. WithPolicy(nil) is an error.
func WithPolicy(p policy.ReplicationPolicy) Opt {
	return optFunc(func(c *cfg) { c.pol, c.polSet = p, true })
}

// WithTimeout sets the bound applied to calls whose context has no
// deadline (default [DefaultTimeout], 30 s). It must be positive. A cluster
// that cannot be reached (connection refused or timed out) is retried
// until the bound (or ctx's deadline) ends.
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

// callTimeout is the bound [DefaultTimeout] of the package-level calls
// that take a client (TranslateBack, ReadBackIndex, TranslateFromRecords,
// RefineFromRecords) when their context has no deadline; tests shorten it.
var callTimeout = DefaultTimeout

// bounded applies callTimeout to a context without a deadline, as the
// package documentation promises of every call.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return boundedBy(ctx, callTimeout)
}

// boundedBy applies d to a context without a deadline; a context with one
// is used as is.
func boundedBy(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
