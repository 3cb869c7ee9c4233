package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/mm2keys"
	"github.com/kmirror/kmirror/policy"
)

// Defaults of [EmitterConfig] fields left zero, the MM2 key registry's
// (internal/mm2keys), shared with package mirror.
const (
	// DefaultInterval is emit.heartbeats.interval.seconds: 1 s, as in MM2.
	DefaultInterval = mm2keys.EmitHeartbeatsInterval
	// DefaultAdminTimeout bounds topic creation and each heartbeat write
	// (MM2 admin.timeout.ms: 60000 ms).
	DefaultAdminTimeout = mm2keys.AdminTimeout
)

// EmitterConfig configures an [Emitter]: MM2's MirrorHeartbeatConnector and
// MirrorHeartbeatTask for the cluster pair SourceAlias->TargetAlias, with
// the MirrorHeartbeatConfig settings named on each field.
type EmitterConfig struct {
	// SourceAlias and TargetAlias form the record key. Required.
	SourceAlias, TargetAlias string
	// TargetOpts reach the target cluster, where the emitter creates and
	// writes the heartbeats topic with one client it creates and closes.
	TargetOpts []kgo.Opt
	// Topic is the heartbeats topic; "" means "heartbeats"
	// ([policy.HeartbeatsTopicName]; the separator never applies).
	Topic string
	// Interval is emit.heartbeats.interval.seconds; 0 means
	// [DefaultInterval]; negative is refused (MM2 emits nothing then: run
	// no emitter). The first heartbeat is written at start (MM2 waits one
	// interval).
	Interval time.Duration
	// ReplicationFactor is heartbeats.topic.replication.factor; 0 means -1,
	// the broker default (MM2: 3). Below -1 is refused.
	ReplicationFactor int16
	// AdminTimeout bounds topic creation and each write; 0 means
	// [DefaultAdminTimeout]; negative is refused.
	AdminTimeout time.Duration
	// Logger receives the emitter's logs; nil discards them.
	Logger *slog.Logger
	// OnEmit, if set, is called with the heartbeat's timestamp after the
	// target acknowledged it.
	OnEmit func(at time.Time)
	// OnError, if set, is called for every failed topic creation or write.
	OnError func(err error)
}

// Emitter writes one heartbeat record (key {SourceAlias, TargetAlias},
// value {version 0, now in ms}, record timestamp = now) to partition 0 of
// the heartbeats topic on the target every Interval, after creating the
// topic (1 partition, cleanup.policy=compact) if absent. Create it with
// [NewEmitter]; its methods are safe for concurrent use.
//
// MM2 runs a heartbeat emitter for every ordered pair of clusters, also for
// pairs whose replication is disabled, unless emit.heartbeats.enabled=false
// (KAFKA-10710): for a one-way flow A->B, the B->A heartbeats written into A
// are what makes A.heartbeats appear on B and lets MirrorClient discover
// the topology. Callers decide which pairs get an emitter; a read-only
// source cluster, where nothing may be written, gets none.
type Emitter struct {
	cfg   EmitterConfig
	log   *slog.Logger
	once  sync.Once
	mu    sync.Mutex
	last  time.Time
	count int64
}

// NewEmitter validates cfg and returns an Emitter; it does no I/O. Errors
// name the missing field.
func NewEmitter(cfg EmitterConfig) (*Emitter, error) {
	if cfg.SourceAlias == "" || cfg.TargetAlias == "" {
		return nil, fmt.Errorf("heartbeat: emitter needs both cluster aliases (source %q, target %q)", cfg.SourceAlias, cfg.TargetAlias)
	}
	// An alias a Kafka STRING cannot hold would fail every heartbeat.
	if _, err := (Heartbeat{SourceClusterAlias: cfg.SourceAlias, TargetClusterAlias: cfg.TargetAlias}).Key(); err != nil {
		return nil, fmt.Errorf("heartbeat: emitter aliases: %w", err)
	}
	if len(cfg.TargetOpts) == 0 {
		return nil, errors.New("heartbeat: emitter needs TargetOpts (at least kgo.SeedBrokers)")
	}
	if cfg.ReplicationFactor < -1 {
		return nil, fmt.Errorf("heartbeat: ReplicationFactor (heartbeats.topic.replication.factor) is %d: it must be positive, or -1 (or 0) for the broker default", cfg.ReplicationFactor)
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("heartbeat: Interval (emit.heartbeats.interval.seconds) is %v: it must be positive, or 0 for the default %v; "+
			"to emit no heartbeats (MM2: a negative interval), run no emitter", cfg.Interval, DefaultInterval)
	}
	if cfg.AdminTimeout < 0 {
		return nil, fmt.Errorf("heartbeat: AdminTimeout (admin.timeout.ms) is %v: it must be positive, or 0 for the default %v", cfg.AdminTimeout, DefaultAdminTimeout)
	}
	if cfg.Topic == "" {
		cfg.Topic = policy.HeartbeatsTopicName
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.AdminTimeout == 0 {
		cfg.AdminTimeout = DefaultAdminTimeout
	}
	if cfg.ReplicationFactor == 0 {
		cfg.ReplicationFactor = -1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Emitter{cfg: cfg, log: cfg.Logger.With("task", "heartbeat")}, nil
}

// Last returns the timestamp of the last acknowledged heartbeat (zero if
// none) and the number written since start.
func (e *Emitter) Last() (time.Time, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last, e.count
}

// Run writes heartbeats until ctx is done, then closes its client and
// returns nil. Failures are logged and retried at the next interval; Run
// returns an error only when its client cannot be built or it is called
// twice.
func (e *Emitter) Run(ctx context.Context) error {
	first := false
	e.once.Do(func() { first = true })
	if !first {
		return errors.New("heartbeat: Emitter.Run called twice")
	}
	c := e.cfg
	newClient := func() (*kgo.Client, error) {
		cl, err := kclient.New(append(append([]kgo.Opt{}, c.TargetOpts...),
			kgo.DefaultProduceTopic(c.Topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RecordDeliveryTimeout(c.AdminTimeout),
		)...)
		if err != nil {
			return nil, fmt.Errorf("heartbeat: target %s client: %w", c.TargetAlias, err)
		}
		return cl, nil
	}
	cl, err := newClient()
	if err != nil {
		return err
	}
	defer func() { cl.Close() }()
	created := false
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for {
		if !created {
			created = e.createTopic(ctx, kadm.NewClient(cl))
		}
		if created {
			switch err := e.emit(ctx, cl); {
			case errors.Is(err, kerr.UnknownTopicID):
				// The topic was deleted and re-created: kgo keeps the
				// old ID for a name it holds and fails every record on
				// it; a new client learns the new one
				// (TestHeartbeatsTopicRecreated).
				if next, nerr := newClient(); nerr == nil {
					cl.Close()
					cl = next
				}
				created = false
			case errors.Is(err, kerr.UnknownTopicOrPartition):
				// Deleted: created again at the next tick, as at the
				// start (TestHeartbeatsTopicDeletedCreatedAgain).
				created = false
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// createTopic creates the heartbeats topic like MM2's
// createSinglePartitionCompactedTopic. Already exists counts as done, and
// so does an authorization failure when the topic was created in advance
// (KAFKA-15465); a refused creation of a missing topic is reported with the
// ACL to grant and how to create the topic (ensuretopic), and retried.
func (e *Emitter) createTopic(ctx context.Context, adm *kadm.Client) bool {
	c := e.cfg
	cctx, cancel := context.WithTimeout(ctx, c.AdminTimeout)
	defer cancel()
	compact := "compact"
	res, err := ensuretopic.Ensure(cctx, adm, ensuretopic.Spec{Topic: c.Topic, Cluster: c.TargetAlias, Partitions: 1,
		ReplicationFactor: c.ReplicationFactor, Configs: map[string]*string{"cleanup.policy": &compact}, Log: e.log})
	if err == nil {
		if res.Created {
			e.log.Info("created heartbeats topic", "topic", c.Topic, "cluster", c.TargetAlias)
		}
		return true
	}
	if ctx.Err() == nil {
		e.log.Warn("creating heartbeats topic", "topic", c.Topic, "cluster", c.TargetAlias, "err", err)
		e.fail(fmt.Errorf("heartbeat: %w", err))
	}
	return false
}

// emit writes one heartbeat and returns the write's error (nil: written
// or the context ended).
func (e *Emitter) emit(ctx context.Context, cl *kgo.Client) error {
	c := e.cfg
	now := time.Now()
	h := Heartbeat{SourceClusterAlias: c.SourceAlias, TargetClusterAlias: c.TargetAlias, Timestamp: now.UnixMilli()}
	k, err := h.Key()
	var v []byte
	if err == nil {
		v, err = h.Value()
	}
	if err != nil {
		e.fail(err)
		return nil
	}
	at := time.UnixMilli(h.Timestamp)
	pctx, cancel := context.WithTimeout(ctx, c.AdminTimeout)
	defer cancel()
	// Not ProduceSync: it waits for a record already sent to a target that
	// stopped answering up to the delivery timeout, however the context
	// ends, and a stop waits for this emitter.
	err = kclient.ProduceWait(pctx, cl, &kgo.Record{Topic: c.Topic, Partition: 0, Key: k, Value: v, Timestamp: at})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("writing heartbeat", "topic", c.Topic, "cluster", c.TargetAlias, "err", err)
			e.fail(fmt.Errorf("heartbeat: writing to %s on %s: %w", c.Topic, c.TargetAlias, err))
			return err
		}
		return nil
	}
	e.mu.Lock()
	e.last = at
	e.count++
	e.mu.Unlock()
	if c.OnEmit != nil {
		c.OnEmit(at)
	}
	return nil
}

func (e *Emitter) fail(err error) {
	if e.cfg.OnError != nil {
		e.cfg.OnError(err)
	}
}
