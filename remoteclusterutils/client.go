package remoteclusterutils

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/policy"
)

// ErrNoCheckpointsTopic is wrapped by the error returned when the
// checkpoints topic of the requested alias does not exist on the cluster;
// the error is a *[NoCheckpointsTopicError] with the details. Right after
// a mirror starts this is transient (the flow creates the topic as it
// starts, within a second or so): retry, as for [ErrNoCheckpointYet].
// When it lasts, the client reaches the wrong cluster or the alias or the
// policy's separators differ from the writer's.
var ErrNoCheckpointsTopic = errors.New("remoteclusterutils: checkpoints topic not found")

// ErrNoCheckpointYet is wrapped by the error [TranslateOffsets] and
// [Client.TranslateOffsets] return when the checkpoints topic exists but
// holds no checkpoint at all, of any group: the checkpoint emitter has not
// finished its first emission (right after the replication started; kmirror
// emits as soon as its offset syncs are loaded, Apache MM2 after
// emit.checkpoints.interval.seconds, 60 s by default). Retry later. It also
// lasts, emission after emission, while no group has a commit the emitter
// can translate: every group committed only on topics the flow does not
// replicate or past what it replicated (kmirror's mirror.GroupStatus says
// so per group, State "skipped" with its Reason). The error is a
// *[NoCheckpointYetError].
//
// A group that has no checkpoint in a topic holding checkpoints of other
// groups is unknown to the emitter instead (no commit on a replicated
// topic, excluded by the group filter, or committed after the emitter's
// last emission): TranslateOffsets returns empty Offsets and no error, as
// MM2 does.
var ErrNoCheckpointYet = errors.New("remoteclusterutils: no checkpoint yet")

// NoCheckpointYetError reports that the checkpoints topic of Alias holds
// no checkpoint yet (see [ErrNoCheckpointYet]).
type NoCheckpointYetError struct {
	// Alias is the remote (source) cluster alias asked for.
	Alias string
	// Topic is the checkpoints topic that was read.
	Topic string
	// Records is the number of records read (all unusable when not 0).
	Records int
}

// Error names the topic and what to do.
func (e *NoCheckpointYetError) Error() string {
	return fmt.Sprintf("remoteclusterutils: checkpoints topic %q of remote cluster alias %q holds no checkpoint yet "+
		"(%d records read): the checkpoint emitter has not written its first checkpoints; retry after its first emission "+
		"(emit.checkpoints.interval.seconds); if it lasts, no group has a commit the emitter can translate yet "+
		"(commits only on topics the flow does not replicate, or past what it replicated): the mirror's GroupStatus "+
		"(Status().Flows[].Groups, or the runner's /status) gives each group's reason", e.Topic, e.Alias, e.Records)
}

// Unwrap returns [ErrNoCheckpointYet].
func (e *NoCheckpointYetError) Unwrap() error { return ErrNoCheckpointYet }

// ErrNilClient is returned by every method of a [Client] built from a nil
// *kgo.Client, and of a nil or zero Client (one not made by [NewClient]).
var ErrNilClient = errors.New("remoteclusterutils: nil *kgo.Client")

// NoCheckpointsTopicError reports that the checkpoints topic for Alias is
// absent from the cluster the client reaches. Typical causes: the client
// reaches the source instead of the target cluster, the alias is wrong, no
// checkpoint connector/flow ran yet, or the policy's separator settings
// differ from the writer's: replication.policy.separator, and
// replication.policy.internal.topic.separator.enabled (since MM2 3.1 a
// custom separator also appears in internal topic names, KIP-690; the
// setting false, KIP-949, keeps the older names).
type NoCheckpointsTopicError struct {
	// Alias is the remote (source) cluster alias asked for.
	Alias string
	// Topic is the checkpoints topic name the policy gives for Alias.
	Topic string
	// KnownAliases are the aliases whose checkpoints topics exist on the
	// cluster under the configured policy, sorted.
	KnownAliases []string
	// OtherCandidates are existing topics that look like checkpoints topics
	// written with other separator settings (they end with "internal" and
	// contain "checkpoints" but the policy does not recognise them), sorted.
	OtherCandidates []string
}

// Error names the topic, the alias and what does exist.
func (e *NoCheckpointsTopicError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remoteclusterutils: checkpoints topic %q for remote cluster alias %q does not exist on this cluster", e.Topic, e.Alias)
	switch {
	case len(e.KnownAliases) > 0:
		fmt.Fprintf(&b, "; checkpoints topics exist for aliases %q", e.KnownAliases)
	case len(e.OtherCandidates) > 0:
		// Not "no alias has a checkpoints topic on this cluster" followed
		// by the topics that look like some (a new user's finding).
		b.WriteString("; no alias has a checkpoints topic named with these separator settings")
	default:
		b.WriteString("; no alias has a checkpoints topic on this cluster: the mirror creates it when its flow starts, so " +
			"retry if it has just started; otherwise check that the client reaches the target cluster")
	}
	if len(e.OtherCandidates) > 0 {
		// The MM2 keys too: kmirror translate's user has a properties
		// file, not WithPolicy.
		fmt.Fprintf(&b, "; topics %q look like checkpoints topics written with other separator settings "+
			"(MM2's replication.policy.separator and replication.policy.internal.topic.separator.enabled; "+
			"WithPolicy: policy.WithSeparator, policy.WithInternalTopicSeparator)", e.OtherCandidates)
	}
	return b.String()
}

// Unwrap returns [ErrNoCheckpointsTopic].
func (e *NoCheckpointsTopicError) Unwrap() error { return ErrNoCheckpointsTopic }

// Client is MM2's MirrorClient (org.apache.kafka.connect.mirror.MirrorClient)
// on top of a caller-owned *kgo.Client that reaches
// the TARGET cluster. It is safe for concurrent use; it holds no state
// besides its configuration.
type Client struct {
	cl  *kgo.Client
	cfg cfg
	err error // configuration error, returned by every method
}

// NewClient returns a Client that uses cl for every request. cl must reach
// the target cluster; it is never closed by the Client and its consumer
// state (group, assignments, positions) is never touched: checkpoints are
// read with raw ListOffsets and Fetch requests. NewClient does no I/O.
//
// Invalid options (see [ValidateOpts]) and [WithClientOpts] (NewClient
// uses cl) are reported by every method call.
func NewClient(cl *kgo.Client, opts ...Opt) *Client {
	c, err := buildCfg(opts)
	if err == nil && len(c.clientOpts) > 0 {
		err = errors.New("remoteclusterutils: WithClientOpts has no effect on NewClient, which uses the client it is given")
	}
	if err == nil && cl == nil {
		err = ErrNilClient
	}
	return &Client{cl: cl, cfg: c, err: err}
}

// Policy returns the replication policy in use (Java replicationPolicy()),
// nil if the options were invalid or c was not made by [NewClient].
func (c *Client) Policy() policy.ReplicationPolicy {
	if c == nil {
		return nil
	}
	return c.cfg.policy
}

// usable is the error every method returns before any request: the
// configuration's, or [ErrNilClient] for a nil or zero Client, whose
// methods panicked on a nil policy or client (a new user's misuse:
// var rc remoteclusterutils.Client).
func (c *Client) usable() error {
	switch {
	case c == nil:
		return fmt.Errorf("%w: nil *remoteclusterutils.Client: make it with NewClient", ErrNilClient)
	case c.err != nil:
		return c.err
	case c.cl == nil || c.cfg.policy == nil:
		return fmt.Errorf("%w: zero remoteclusterutils.Client: make it with NewClient", ErrNilClient)
	}
	return nil
}

// withTimeout applies the default bound to a context without a deadline.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return boundedBy(ctx, c.cfg.timeout)
}

// TranslateOffsets returns the offsets on this (target) cluster that
// consumer group should resume from after failing over from the cluster
// remoteClusterAlias (MirrorClient.remoteConsumerOffsets and
// RemoteClusterUtils.translateOffsets).
//
// It reads partition 0 of the policy's CheckpointsTopic(remoteClusterAlias)
// (e.g. "us-west.checkpoints.internal") from the log start to the end
// offset observed at the call, and keeps, per (topic, partition), the last
// valid checkpoint of group in log order (not the largest offset). Topics
// are target-cluster names, ready for kadm's CommitAllOffsets (into a group
// with no active members on the target) or for seeking.
//
// A group without checkpoints in a topic that holds checkpoints of other
// groups yields an empty, non-nil Offsets and no error (as MM2 returns an
// empty map): the group is unknown to the checkpoint emitter. Undecodable
// records, tombstones and negative offsets are skipped and counted (see
// [ReadStats] and [WithLogger]) where Java would throw. Errors: an empty
// remoteClusterAlias or group, refused before any request; a
// *[NoCheckpointsTopicError] (wrapping [ErrNoCheckpointsTopic]) if the
// topic does not exist; a *[NoCheckpointYetError] (wrapping
// [ErrNoCheckpointYet]) if it holds no checkpoint of any group yet (Java
// returns an empty map); an error
// wrapping context.DeadlineExceeded or context.Canceled if ctx (or the
// default [DefaultTimeout]) ends first, with no partial result (Java returns
// what it read so far); Kafka errors such as authorization failures. A
// cluster that cannot be reached (a refused or timed-out connection: a
// broker restarting) is retried until then, as Java's consumer retries
// until its timeout; the error then wraps the last dial error too. An
// address that does not resolve fails at once.
func (c *Client) TranslateOffsets(ctx context.Context, remoteClusterAlias, group string) (Offsets, error) {
	f, err := c.read(ctx, remoteClusterAlias, group, false)
	if err != nil {
		return nil, err
	}
	if f.stats.Checkpoints == 0 {
		return nil, &NoCheckpointYetError{Alias: remoteClusterAlias, Topic: f.stats.Topic, Records: f.stats.Records}
	}
	return f.offsets(), nil
}

// Checkpoints reads the checkpoints topic of remoteClusterAlias once and
// returns the latest valid checkpoint of every group, with the read
// statistics; use it to fail over many groups with one read, or to inspect
// the topic. Rules and errors are those of [Client.TranslateOffsets],
// except that a topic without any checkpoint yet gives empty Groups and no
// error (Stats.Checkpoints is 0).
func (c *Client) Checkpoints(ctx context.Context, remoteClusterAlias string) (*Checkpoints, error) {
	f, err := c.read(ctx, remoteClusterAlias, "", true)
	if err != nil {
		return nil, err
	}
	return &Checkpoints{Alias: remoteClusterAlias, Stats: f.stats, Groups: f.byGroup()}, nil
}

func (c *Client) read(ctx context.Context, alias, group string, all bool) (*folder, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	switch {
	case alias == "":
		return nil, errors.New(`remoteclusterutils: the remote cluster alias is empty: name the cluster the group fails over from, as MM2's "clusters" lists it (e.g. "us-east-1" for us-east-1.checkpoints.internal)`)
	case !all && group == "":
		return nil, errors.New("remoteclusterutils: the group is empty: name the consumer group (its group.id) whose offsets to translate; Checkpoints reads every group's")
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	topic := c.cfg.policy.CheckpointsTopic(alias)
	var f *folder
	if err := retryUnreachable(ctx, c.cfg.logger, "remoteclusterutils: ", func() error {
		f = newFolder(group, all, c.cfg.logger)
		return c.readCheckpoints(ctx, alias, topic, f)
	}); err != nil {
		return nil, err
	}
	if l := c.cfg.logger; l != nil {
		s := f.stats
		if s.Skipped() > 0 || s.UnknownVersion > 0 {
			l.Warn("checkpoints topic has records kmirror skipped or parsed leniently (Java MirrorClient would fail or skip them)",
				"topic", s.Topic, "alias", alias, "records", s.Records, "undecodable", s.Undecodable,
				"tombstones", s.Tombstones, "invalid", s.Invalid, "unknown_version", s.UnknownVersion)
		}
		l.Debug("read checkpoints topic", "topic", s.Topic, "start_offset", s.StartOffset,
			"end_offset", s.EndOffset, "records", s.Records, "checkpoints", s.Checkpoints)
	}
	return f, nil
}

// missingTopicError builds the error for an absent checkpoints topic from
// the cluster's topic names.
func (c *Client) missingTopicError(alias, topic string, names []string) error {
	p := c.cfg.policy
	e := &NoCheckpointsTopicError{Alias: alias, Topic: topic}
	suffix := p.CheckpointsTopic("") // the name for the empty alias is the bare suffix
	known := map[string]bool{}
	for _, t := range names {
		if p.IsCheckpointsTopic(t) {
			if a, ok := strings.CutSuffix(t, suffix); ok && p.CheckpointsTopic(a) == t {
				known[a] = true
				continue
			}
		}
		if strings.Contains(t, "checkpoints") && strings.HasSuffix(t, "internal") {
			e.OtherCandidates = append(e.OtherCandidates, t)
		}
	}
	for a := range known {
		e.KnownAliases = append(e.KnownAliases, a)
	}
	slices.Sort(e.KnownAliases)
	slices.Sort(e.OtherCandidates)
	return e
}

// topicNames lists the cluster's topics, Kafka-internal ones hidden (as
// MirrorClient's Admin listTopics does), from the brokers
// ([uncachedMetadata]).
func (c *Client) topicNames(ctx context.Context) ([]string, error) {
	resp, err := uncachedMetadata(ctx, c.cl)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 && !t.IsInternal {
			names = append(names, *t.Topic)
		}
	}
	slices.Sort(names)
	return names, nil
}

// uncachedMetadata asks the brokers for the metadata of topics (of every
// topic when none is named) with a Metadata request of its own, never
// creating a topic. kadm's listings answer from franz-go's metadata cache
// for up to the client's MetadataMinAge (5 s by default): a long-lived
// Client said a checkpoints or heartbeats topic created meanwhile did not
// exist, and answered a call whose context was already cancelled without
// asking anything. The answer refreshes that cache too, so the ListOffsets
// requests that follow see the same topics.
func uncachedMetadata(ctx context.Context, cl *kgo.Client, topics ...string) (*kmsg.MetadataResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req := kmsg.NewPtrMetadataRequest() // Topics nil: every topic; AllowAutoTopicCreation false
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req.RequestWith(ctx, cl)
}

// listed lists the topics and applies fn to them.
func listed[T any](c *Client, ctx context.Context, fn func(policy.ReplicationPolicy, []string) T) (T, error) {
	var zero T
	if err := c.usable(); err != nil {
		return zero, err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	var names []string
	err := retryUnreachable(ctx, c.cfg.logger, "", func() (err error) { // wrapped below
		names, err = c.topicNames(ctx)
		return err
	})
	if err != nil {
		return zero, fmt.Errorf("remoteclusterutils: listing topics: %w", err)
	}
	return fn(c.cfg.policy, names), nil
}

// ReplicationHops returns the smallest number of replication hops from the
// cluster sourceAlias to this cluster, found from heartbeats topic names
// ("src.heartbeats" = 1 hop, "other.src.heartbeats" = 2 hops), or -1 if
// sourceAlias is not upstream (MirrorClient.replicationHops). Errors:
// listing topics failed, invalid options, or (with -1, before any request)
// a sourceAlias that topic names cannot carry under the policy: one holding
// the separator, whose heartbeats topic "us.west.heartbeats" parses as
// coming from "us". MirrorClient answers -1 ("not upstream") there, whether
// or not the cluster replicates into this one; kmirror says why instead.
func (c *Client) ReplicationHops(ctx context.Context, sourceAlias string) (int, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	p := c.cfg.policy
	if sep := p.Separator(); sep != "" && strings.Index(sourceAlias+sep, sep) != len(sourceAlias) {
		remote := p.FormatRemoteTopic(sourceAlias, p.HeartbeatsTopic())
		got, _ := p.TopicSource(remote)
		return -1, fmt.Errorf("remoteclusterutils: cluster alias %q cannot be found from topic names with replication separator %q: "+
			"its heartbeats topic %s parses as coming from %q, so no topic name ever counts its hops (MM2's MirrorClient answers -1): "+
			"rename the cluster to an alias that neither contains the separator nor ends with its start, or set "+
			"replication.policy.separator (policy.WithSeparator) to one that keeps the alias whole, on the mirror and here",
			sourceAlias, sep, remote, got)
	}
	return listed(c, ctx, func(p policy.ReplicationPolicy, ts []string) int {
		return replicationHops(p, ts, sourceAlias)
	})
}

// UpstreamClusters returns the sorted aliases of every cluster upstream of
// this one, from heartbeats topic names (MirrorClient.upstreamClusters);
// nil if none. Discovery needs heartbeats emitted into the upstream cluster
// and replicated to this one (MM2 emits them for every pair of clusters
// unless emit.heartbeats.enabled=false).
func (c *Client) UpstreamClusters(ctx context.Context) ([]string, error) {
	return listed(c, ctx, upstreamClusters)
}

// HeartbeatTopics returns the sorted heartbeats topics of this cluster,
// local and replicated (MirrorClient.heartbeatTopics); nil if none.
func (c *Client) HeartbeatTopics(ctx context.Context) ([]string, error) {
	return listed(c, ctx, heartbeatTopics)
}

// CheckpointTopics returns the sorted checkpoints topics of this cluster
// (MirrorClient.checkpointTopics); nil if none.
func (c *Client) CheckpointTopics(ctx context.Context) ([]string, error) {
	return listed(c, ctx, checkpointTopics)
}

// RemoteTopics returns the sorted non-internal topics of this cluster that
// the policy parses as replicated (MirrorClient.remoteTopics); like Java it
// includes replicated heartbeats topics. nil if none.
func (c *Client) RemoteTopics(ctx context.Context) ([]string, error) {
	return listed(c, ctx, remoteTopics)
}

// RemoteTopicsFor returns the sorted remote topics replicated directly from
// the cluster sourceAlias (MirrorClient.remoteTopics(source)); nil if none.
func (c *Client) RemoteTopicsFor(ctx context.Context, sourceAlias string) ([]string, error) {
	return listed(c, ctx, func(p policy.ReplicationPolicy, ts []string) []string {
		return remoteTopicsFor(p, ts, sourceAlias)
	})
}

// withOwnClient runs fn with a Client on a kgo client built from the
// WithClientOpts options and closed before returning
// (RemoteClusterUtils' build-call-close pattern).
func withOwnClient[T any](opts []Opt, fn func(*Client) (T, error)) (T, error) {
	var zero T
	c, err := buildCfg(opts)
	if err != nil {
		return zero, err
	}
	if len(c.clientOpts) == 0 {
		return zero, errors.New("remoteclusterutils: no client options: pass WithClientOpts(kgo.SeedBrokers(...), ...) reaching the target cluster")
	}
	kopts := c.clientOpts
	if c.logger != nil {
		kopts = append([]kgo.Opt{kgo.WithLogger(kslog.New(c.logger))}, kopts...)
	}
	cl, err := kclient.New(kopts...)
	if err != nil {
		return zero, fmt.Errorf("remoteclusterutils: building the client: %w", err)
	}
	defer cl.Close()
	c.clientOpts = nil
	return fn(&Client{cl: cl, cfg: c})
}

// TranslateOffsets is [Client.TranslateOffsets] on a client built from
// [WithClientOpts] (required) and closed before returning
// (RemoteClusterUtils.translateOffsets(props, remoteClusterAlias,
// consumerGroupId, timeout)). It returns
// group's offsets on the target cluster after failing over from
// remoteClusterAlias.
func TranslateOffsets(ctx context.Context, remoteClusterAlias, group string, opts ...Opt) (Offsets, error) {
	return withOwnClient(opts, func(c *Client) (Offsets, error) {
		return c.TranslateOffsets(ctx, remoteClusterAlias, group)
	})
}

// ReplicationHops is [Client.ReplicationHops] on a client built from
// [WithClientOpts] (RemoteClusterUtils.replicationHops).
func ReplicationHops(ctx context.Context, sourceAlias string, opts ...Opt) (int, error) {
	return withOwnClient(opts, func(c *Client) (int, error) { return c.ReplicationHops(ctx, sourceAlias) })
}

// UpstreamClusters is [Client.UpstreamClusters] on a client built from
// [WithClientOpts] (RemoteClusterUtils.upstreamClusters).
func UpstreamClusters(ctx context.Context, opts ...Opt) ([]string, error) {
	return withOwnClient(opts, func(c *Client) ([]string, error) { return c.UpstreamClusters(ctx) })
}

// HeartbeatTopics is [Client.HeartbeatTopics] on a client built from
// [WithClientOpts] (RemoteClusterUtils.heartbeatTopics).
func HeartbeatTopics(ctx context.Context, opts ...Opt) ([]string, error) {
	return withOwnClient(opts, func(c *Client) ([]string, error) { return c.HeartbeatTopics(ctx) })
}

// CheckpointTopics is [Client.CheckpointTopics] on a client built from
// [WithClientOpts] (RemoteClusterUtils.checkpointTopics).
func CheckpointTopics(ctx context.Context, opts ...Opt) ([]string, error) {
	return withOwnClient(opts, func(c *Client) ([]string, error) { return c.CheckpointTopics(ctx) })
}
