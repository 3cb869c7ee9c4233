package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/policy"
)

type tp struct {
	topic     string
	partition int32
}

// flow is the runtime of one replication flow source->target. Its
// goroutines are started by run and all end before run returns:
//   - the poll loop (fetch from source, produce to target),
//   - the flusher (resume points and offset syncs, every OffsetFlushInterval
//     and whenever a sync is due),
//   - the topic refresher (new topics/partitions, configs, ACLs),
//   - checkpoint, group-offset-sync and heartbeat tasks (see tasks.go).
type flow struct {
	cfg     FlowConfig // with defaults
	name    string
	src     ClusterConfig
	dst     ClusterConfig
	pol     policy.ReplicationPolicy
	topics  Filter
	groups  Filter
	configs Filter
	log     *slog.Logger
	metrics *metrics

	// Clients, created in run and closed before it returns.
	srcCl, dstCl, syncCl *kgo.Client // consumer on source; data producer on target; offset-sync producer
	srcAdm, dstAdm       *kadm.Client
	admCls               []*kgo.Client

	offsetSyncsTopic string
	resume           *resumeStore

	parts   atomic.Pointer[map[tp]*partState] // copy on write; writers hold partsMu
	partsMu sync.Mutex

	syncWake chan struct{}
	aclOff   atomic.Bool // the source has no authorizer: ACL sync is skipped
	// topicsPending: some selected source partitions are not replicated yet
	// (remote partition not usable): the topic refresh retries quickly.
	topicsPending atomic.Bool

	mu         sync.Mutex // guards the status fields below
	state      State
	stateErr   string
	since      time.Time
	gaps       []GapError
	topicIDs   map[string]kadm.TopicID
	setConfigs map[string]map[string]string // remote topic -> config keys kmirror set and their values
	nTopics    int
	groupStat  func() []GroupStatus
	lastHB     time.Time
	probeErr   error // last cluster probe failure, nil when both answer
	commitErr  error // last resume-point commit failure
}

func newFlow(fc FlowConfig, src, dst ClusterConfig, log *slog.Logger, m *metrics) (*flow, error) {
	fc = fc.withDefaults()
	f := &flow{cfg: fc, name: fc.Name(), src: src, dst: dst, pol: fc.Policy,
		log: log.With("flow", fc.Name()), metrics: m, syncWake: make(chan struct{}, 1),
		state: StateUnassigned, since: time.Now(), topicIDs: map[string]kadm.TopicID{},
		setConfigs: map[string]map[string]string{}}
	var err error
	prefix := fc.Name() + "."
	if f.topics, err = NewFilter(prefix+"topics", fc.Topics, prefix+"topics.exclude", fc.TopicsExclude); err != nil {
		return nil, err
	}
	if f.groups, err = NewFilter(prefix+"groups", fc.Groups, prefix+"groups.exclude", fc.GroupsExclude); err != nil {
		return nil, err
	}
	if f.configs, err = NewFilter(prefix+"config.properties.exclude", []string{".*"}, prefix+"config.properties.exclude", fc.ConfigPropertiesExclude); err != nil {
		return nil, err
	}
	if fc.OffsetSyncsTopicLocationTarget {
		f.offsetSyncsTopic = f.pol.OffsetSyncsTopic(fc.Source)
	} else {
		f.offsetSyncsTopic = f.pol.OffsetSyncsTopic(fc.Target)
	}
	empty := map[tp]*partState{}
	f.parts.Store(&empty)
	return f, nil
}

// shouldReplicate is MM2's shouldReplicateTopic (docs/mm2-compat.md §4.2).
func (f *flow) shouldReplicate(topic string) bool {
	if f.pol.IsInternalTopic(topic) || policy.IsCycle(f.pol, f.cfg.Target, topic) {
		return false
	}
	if f.topics.Match(topic) {
		return true
	}
	return !f.cfg.DisableHeartbeatsReplication && f.pol.IsHeartbeatsTopic(topic)
}

// health records the latest result of one health source (the cluster
// probe or the resume-point commit) and moves a running flow between
// RUNNING and RETRYING accordingly.
func (f *flow) health(slot *error, err error) {
	f.mu.Lock()
	*slot = err
	cur := errors.Join(f.probeErr, f.commitErr)
	st := f.state
	f.mu.Unlock()
	switch {
	case st != StateRunning && st != StateRetrying:
	case cur != nil:
		f.setState(StateRetrying, cur)
	case st == StateRetrying:
		f.setState(StateRunning, nil)
	}
}

// probe checks that both clusters answer (a broker-only metadata request
// each), so that a dead cluster shows as RETRYING within one probe
// interval even while nothing is fetched or produced.
func (f *flow) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, min(f.cfg.AdminTimeout, 5*time.Second))
	defer cancel()
	var errs []error
	if err := f.srcCl.Ping(pctx); err != nil && ctx.Err() == nil {
		errs = append(errs, fmt.Errorf("source cluster %s unreachable: %w", f.src.Alias, err))
	}
	if err := f.dstCl.Ping(pctx); err != nil && ctx.Err() == nil {
		errs = append(errs, fmt.Errorf("target cluster %s unreachable: %w", f.dst.Alias, err))
	}
	if ctx.Err() == nil {
		f.health(&f.probeErr, errors.Join(errs...))
	}
	return nil
}

func (f *flow) setState(s State, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if f.state != s || f.stateErr != msg {
		if s != f.state {
			f.since = time.Now()
		}
		f.state, f.stateErr = s, msg
		if err != nil {
			f.log.Warn("flow state", "state", s, "err", err)
		} else {
			f.log.Info("flow state", "state", s)
		}
	}
}

func (f *flow) clientOpts(c ClusterConfig, role []kgo.Opt, extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{kgo.ClientID("kmirror|" + f.name), kgo.MetadataMinAge(time.Second), kgo.MetadataMaxAge(30 * time.Second)}
	if f.log.Enabled(context.Background(), slog.LevelError) {
		// franz-go's info messages (connections, metadata) are debug detail
		// for a replicator: they reach the logger only when it logs debug.
		l := f.log.With("cluster", c.Alias)
		if !f.log.Enabled(context.Background(), slog.LevelDebug) {
			l = slog.New(minLevel{l.Handler(), slog.LevelWarn})
		}
		opts = append(opts, kgo.WithLogger(kslog.New(l)))
	}
	opts = append(opts, c.Client...)
	opts = append(opts, role...)
	return append(opts, extra...)
}

func (f *flow) newAdmin(c ClusterConfig) (*kadm.Client, error) {
	// A short metadata age: kgo answers metadata requests from a cache of
	// this age, which would hide topics just created.
	cl, err := kgo.NewClient(f.clientOpts(c, c.Admin, kgo.RequestTimeoutOverhead(5*time.Second), kgo.MetadataMinAge(100*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	f.admCls = append(f.admCls, cl)
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(f.cfg.AdminTimeout / time.Millisecond))
	return adm, nil
}

// openClients creates the flow's clients (kgo does not connect until used).
func (f *flow) openClients() error {
	var err error
	if f.srcAdm, err = f.newAdmin(f.src); err != nil {
		return fmt.Errorf("source %s admin client: %w", f.src.Alias, err)
	}
	if f.dstAdm, err = f.newAdmin(f.dst); err != nil {
		return fmt.Errorf("target %s admin client: %w", f.dst.Alias, err)
	}
	iso := kgo.ReadUncommitted()
	if f.cfg.ReadCommitted {
		iso = kgo.ReadCommitted()
	}
	if f.srcCl, err = kgo.NewClient(f.clientOpts(f.src, f.src.Consumer,
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxBytes(f.cfg.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(f.cfg.FetchMaxPartitionBytes),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords(), // transaction markers move the position (lag reaches 0)
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}),
	)...); err != nil {
		return fmt.Errorf("source %s consumer: %w", f.src.Alias, err)
	}
	if f.dstCl, err = kgo.NewClient(f.clientOpts(f.dst, f.dst.Producer,
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedBytes(f.cfg.MaxBufferedBytes),
		kgo.MaxBufferedRecords(1<<20),
		kgo.ProducerLinger(5*time.Millisecond),
	)...); err != nil {
		return fmt.Errorf("target %s producer: %w", f.dst.Alias, err)
	}
	syncCluster := f.src
	if f.cfg.OffsetSyncsTopicLocationTarget {
		syncCluster = f.dst
	}
	if !f.cfg.DisableOffsetSyncs {
		if f.syncCl, err = kgo.NewClient(f.clientOpts(syncCluster, syncCluster.Producer,
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.DefaultProduceTopic(f.offsetSyncsTopic),
		)...); err != nil {
			return fmt.Errorf("offset-syncs producer on %s: %w", syncCluster.Alias, err)
		}
	}
	f.resume = newResumeStore(f)
	return nil
}

func (f *flow) closeClients() {
	for _, cl := range []*kgo.Client{f.srcCl, f.dstCl, f.syncCl} {
		if cl != nil {
			cl.Close()
		}
	}
	for _, cl := range f.admCls {
		cl.Close()
	}
}

// run replicates until ctx is done (graceful stop: nil) or a fatal error.
// hard is canceled only to abandon in-flight work without flushing.
func (f *flow) run(ctx, hard context.Context) error {
	if f.cfg.Disabled {
		f.setState(StateDisabled, nil)
		return f.runTasks(ctx, nil)
	}
	f.setState(StateStarting, nil)
	if err := f.openClients(); err != nil {
		f.setState(StateFailed, err)
		return err
	}
	defer f.closeClients()

	// Start-up: preflight, internal topics, resume points, first topic
	// sync; retried with backoff while clusters are unreachable.
	var delay time.Duration
	for {
		err := f.start(ctx)
		if err == nil {
			break
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			f.setState(StateFailed, fatal.err)
			return fatal.err
		}
		if ctx.Err() != nil {
			f.setState(StateStopped, nil)
			return nil
		}
		f.setState(StateRetrying, err)
		delay = backoff(delay)
		select {
		case <-ctx.Done():
			f.setState(StateStopped, nil)
			return nil
		case <-time.After(delay):
		}
	}
	f.setState(StateRunning, nil)

	var wg sync.WaitGroup
	errc := make(chan error, 4)
	loopCtx, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	wg.Add(3)
	go func() { defer wg.Done(); f.pollLoop(loopCtx) }()
	go func() { defer wg.Done(); f.refreshLoop(loopCtx) }()
	go func() {
		defer wg.Done()
		if err := f.runTasks(loopCtx, errc); err != nil {
			errc <- err
		}
	}()
	flushDone := make(chan struct{})
	go func() { defer close(flushDone); f.flushLoop(loopCtx) }()

	var fatal error
	select {
	case <-ctx.Done():
	case fatal = <-errc:
		stopLoops()
	}
	// The poll loop may be blocked in Produce on a full buffer (records go
	// with context.Background: a cancelable context costs kgo per record):
	// closing the producer unblocks it on abort or after shutdownTimeout.
	loopsDone := make(chan struct{})
	go func() { wg.Wait(); close(loopsDone) }()
	select {
	case <-loopsDone:
	case <-hard.Done():
		f.dstCl.Close()
	case <-time.After(shutdownTimeout):
		f.log.Warn("poll loop did not stop in time: closing the target producer")
		f.dstCl.Close()
	}
	<-loopsDone
	<-flushDone
	if hard.Err() == nil {
		f.shutdown(hard)
	}
	if fatal != nil {
		f.setState(StateFailed, fatal)
		return fatal
	}
	f.setState(StateStopped, nil)
	return nil
}

// shutdown flushes in-flight records and stores the final resume points and
// offset syncs, bounded by shutdownTimeout.
func (f *flow) shutdown(hard context.Context) {
	ctx, cancel := context.WithTimeout(hard, shutdownTimeout)
	defer cancel()
	if err := f.dstCl.Flush(ctx); err != nil {
		f.log.Warn("flush on shutdown", "err", err)
	}
	f.flush(ctx, true)
}

// shutdownTimeout bounds a graceful stop: flushing in-flight records and
// storing resume points.
const shutdownTimeout = 30 * time.Second

// fatalError wraps errors that must not be retried (bad configuration
// detected against the cluster, e.g. replication factor > brokers).
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

func (f *flow) start(ctx context.Context) error {
	if err := f.preflight(ctx); err != nil {
		return err
	}
	if err := f.ensureInternalTopics(ctx); err != nil {
		return err
	}
	if err := f.resume.load(ctx); err != nil {
		return fmt.Errorf("loading resume points from %s on %s: %w", f.resume.topic, f.dst.Alias, err)
	}
	return f.syncTopics(ctx, true)
}

// preflight checks replication factors against the broker counts
// (docs/field-failures.md case B18).
func (f *flow) preflight(ctx context.Context) error {
	check := func(adm *kadm.Client, alias string, rfs map[string]int16) error {
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return fmt.Errorf("cluster %s unreachable: %w", alias, err)
		}
		n := len(md.Brokers)
		keys := make([]string, 0, len(rfs))
		for k := range rfs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if rf := rfs[k]; int(rf) > n {
				return &fatalError{&ConfigError{Key: f.name + "." + k, Value: fmt.Sprint(rf),
					Reason: fmt.Sprintf("replication factor %d is larger than the %d broker(s) of cluster %s; set it to at most %d, or -1 for the broker default", rf, n, alias, n)}}
			}
		}
		return nil
	}
	dstRF := map[string]int16{"replication.factor": f.cfg.ReplicationFactor,
		"offset.storage.replication.factor": f.cfg.OffsetStorageReplicationFactor}
	if !f.cfg.DisableCheckpoints {
		dstRF["checkpoints.topic.replication.factor"] = f.cfg.CheckpointsTopicReplicationFactor
	}
	if !f.cfg.DisableHeartbeats {
		dstRF["heartbeats.topic.replication.factor"] = f.cfg.HeartbeatsTopicReplicationFactor
	}
	srcRF := map[string]int16{}
	if !f.cfg.DisableOffsetSyncs {
		if f.cfg.OffsetSyncsTopicLocationTarget {
			dstRF["offset-syncs.topic.replication.factor"] = f.cfg.OffsetSyncsTopicReplicationFactor
		} else {
			srcRF["offset-syncs.topic.replication.factor"] = f.cfg.OffsetSyncsTopicReplicationFactor
		}
	}
	if err := check(f.dstAdm, f.dst.Alias, dstRF); err != nil {
		return err
	}
	return check(f.srcAdm, f.src.Alias, srcRF)
}

// ensureInternalTopics creates the offset-syncs topic (1 partition,
// compacted) on its location cluster; the resume-point topic is created by
// the resume store.
func (f *flow) ensureInternalTopics(ctx context.Context) error {
	if f.cfg.DisableOffsetSyncs {
		return nil
	}
	adm := f.srcAdm
	alias := f.src.Alias
	if f.cfg.OffsetSyncsTopicLocationTarget {
		adm, alias = f.dstAdm, f.dst.Alias
	}
	if err := createCompacted(ctx, adm, alias, f.offsetSyncsTopic, 1, f.cfg.OffsetSyncsTopicReplicationFactor); err != nil {
		return err
	}
	// [exact translation hook] kmirror's offset-runs topic, beside the offset syncs.
	runs := checkpoint.OffsetRunsTopic(f.offsetSyncsTopic)
	resp, err := adm.CreateTopic(ctx, 1, f.cfg.OffsetSyncsTopicReplicationFactor, checkpoint.OffsetRunsTopicConfig(), runs)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s on %s: %w", runs, alias, err)
	}
	return nil
}

// createCompacted creates a compacted internal topic, as MM2's
// MirrorUtils.createCompactedTopic: "already exists" is success.
func createCompacted(ctx context.Context, adm *kadm.Client, alias, topic string, partitions int32, rf int16) error {
	compact := "compact"
	resp, err := adm.CreateTopic(ctx, partitions, rf, map[string]*string{"cleanup.policy": &compact}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s on %s: %w", topic, alias, err)
	}
	return nil
}

func (f *flow) partition(topic string, partition int32) *partState {
	return (*f.parts.Load())[tp{topic, partition}]
}

// addPartitions registers new partition states and starts consuming them.
func (f *flow) addPartitions(ps []*partState) {
	if len(ps) == 0 {
		return
	}
	f.partsMu.Lock()
	old := *f.parts.Load()
	m := make(map[tp]*partState, len(old)+len(ps))
	for k, v := range old {
		m[k] = v
	}
	add := map[string]map[int32]kgo.Offset{}
	for _, p := range ps {
		p.pm = f.metrics.forPartition(p)
		m[tp{p.topic, p.partition}] = p
		if add[p.topic] == nil {
			add[p.topic] = map[int32]kgo.Offset{}
		}
		switch {
		case p.committed >= 0:
			add[p.topic][p.partition] = kgo.NewOffset().At(p.committed + 1)
		case f.cfg.StartOffset == StartLatest:
			add[p.topic][p.partition] = kgo.NewOffset().AtEnd()
		default:
			add[p.topic][p.partition] = kgo.NewOffset().AtStart()
		}
	}
	f.parts.Store(&m)
	f.partsMu.Unlock()
	f.srcCl.AddConsumePartitions(add)
}

// resetPartition restarts consumption of a partition from offset from
// (topic re-created: the consumer must drop the old topic ID).
// restartTopic restarts consumption of a re-created topic's partitions at
// the new topic's log start. kgo keeps the old topic ID (and fails fetches
// with UNKNOWN_TOPIC_ID) until the topic is purged from the consumer, so the
// whole topic is purged and its partitions are added back.
func (f *flow) restartTopic(topic string, ps []*partState) {
	if len(ps) == 0 {
		return
	}
	f.srcCl.PurgeTopicsFromConsuming(topic)
	add := map[int32]kgo.Offset{}
	for _, p := range *f.parts.Load() {
		if p.topic != topic {
			continue
		}
		p.restart.Store(true)
		p.mu.Lock()
		failed := p.err != nil
		committed := p.committed
		p.mu.Unlock()
		switch {
		case failed: // GapStop or a non-retriable error: stays stopped
		case slices.Contains(ps, p):
			add[p.partition] = kgo.NewOffset().AtStart()
		case committed >= 0:
			add[p.partition] = kgo.NewOffset().At(committed + 1)
		default:
			add[p.partition] = kgo.NewOffset().AtStart()
		}
	}
	f.srcCl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: add})
}

func (f *flow) partitionFailed(p *partState, err error) {
	f.log.Error("partition stopped", "topic", p.topic, "partition", p.partition, "err", err)
	f.srcCl.PauseFetchPartitions(map[string][]int32{p.topic: {p.partition}})
	f.metrics.partitionFailed(f)
}

// pollLoop fetches from the source and hands each record to the target
// producer, same partition number, key, value, headers and timestamp kept.
func (f *flow) pollLoop(ctx context.Context) {
	var buf []inflight
	for {
		fs := f.srcCl.PollRecords(ctx, 10000)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		parts := *f.parts.Load()
		fs.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			f.metrics.fetchError(f)
			p := parts[tp{topic, partition}]
			if p == nil {
				f.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
				return
			}
			// Shown as RETRYING in the partition status; logged at most
			// every 10 s per partition (kgo may return one per fetch).
			p.mu.Lock()
			p.fetchErr = err.Error()
			logIt := time.Since(p.fetchErrLogged) > 10*time.Second
			if logIt {
				p.fetchErrLogged = time.Now()
			}
			p.mu.Unlock()
			if logIt {
				f.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
			}
		})
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			p := parts[tp{fp.Topic, fp.Partition}]
			if p == nil || len(fp.Records) == 0 {
				return
			}
			if p.restart.Swap(false) {
				p.next = -1 // the topic was re-created: no gap check against the old offsets
				f.mu.Lock()
				id := f.topicIDs[p.topic]
				f.mu.Unlock()
				p.mu.Lock()
				p.sw.reincarnate(id, len(p.queue)-p.head) // [exact translation hook] the new topic's first session
				p.mu.Unlock()
			}
			p.mu.Lock()
			failed := p.err != nil
			if fp.HighWatermark > p.hw {
				p.hw = fp.HighWatermark
			}
			p.fetchErr = ""
			p.mu.Unlock()
			if failed {
				return
			}
			// Queue the whole batch under one lock, then produce it.
			batch := buf[:0]
			n := 0
			for _, r := range fp.Records {
				if !f.checkGap(p, r, fp.LogStartOffset) {
					break
				}
				p.next = r.Offset + 1
				n++
				if r.Attrs.IsControl() {
					continue // a transaction marker: not replicated, but the position moves past it
				}
				f.metrics.polled(p, r)
				batch = append(batch, inflight{up: r.Offset, size: recordSize(r), value: len(r.Value)})
			}
			p.push(batch, p.next)
			buf = batch[:0]
			for _, r := range fp.Records[:n] {
				if r.Attrs.IsControl() {
					continue
				}
				// The fetched record is reused as the produced record.
				r.Topic = p.remote
				r.Attrs = kgo.RecordAttrs{}
				r.ProducerID, r.ProducerEpoch, r.LeaderEpoch, r.Offset = 0, 0, 0, 0
				r.Context = nil
				f.dstCl.Produce(context.Background(), r, p.ack)
			}
		})
	}
}

// checkGap compares a fetched record's offset with the next offset expected
// and reports records lost before replication (docs/field-failures.md
// docs/field-failures.md case B12). It returns false when the partition must stop (GapStop).
func (f *flow) checkGap(p *partState, r *kgo.Record, logStart int64) bool {
	if p.next < 0 || r.Offset == p.next {
		return true
	}
	var gap *GapError
	switch {
	case r.Offset < p.next:
		gap = &GapError{Flow: f.name, Topic: p.topic, Partition: p.partition, From: r.Offset, To: r.Offset,
			Reason: fmt.Sprintf("source offsets went back from %d to %d: the topic was re-created or its log truncated; replicating the new records", p.next, r.Offset)}
	case logStart > p.next:
		// Records [next, logStart) were deleted before they were
		// replicated. A hole above the log start is compaction or
		// transaction markers: not a gap.
		to := min(logStart, r.Offset)
		gap = &GapError{Flow: f.name, Topic: p.topic, Partition: p.partition, From: p.next, To: to,
			Reason: fmt.Sprintf("the source log starts at %d (retention or DeleteRecords removed records kmirror had not replicated)", logStart)}
	default:
		return true
	}
	return f.reportGap(p, gap)
}

func (f *flow) reportGap(p *partState, gap *GapError) bool {
	gap.At = time.Now()
	f.mu.Lock()
	f.gaps = append(f.gaps, *gap)
	if len(f.gaps) > 100 {
		f.gaps = f.gaps[len(f.gaps)-100:]
	}
	f.mu.Unlock()
	f.metrics.gap(p, gap.To-gap.From)
	f.log.Error("source gap", "topic", gap.Topic, "partition", gap.Partition, "from", gap.From, "to", gap.To, "lost", gap.To-gap.From, "reason", gap.Reason, "on_gap", f.cfg.OnGap)
	if f.cfg.OnGap == GapStop && gap.To > gap.From {
		p.mu.Lock()
		if p.err == nil {
			p.err = gap
		}
		p.mu.Unlock()
		f.srcCl.PauseFetchPartitions(map[string][]int32{p.topic: {p.partition}})
		return false
	}
	return true
}

func (f *flow) wakeSyncer() {
	select {
	case f.syncWake <- struct{}{}:
	default:
	}
}

// flushLoop stores resume points and promotes offset syncs every
// OffsetFlushInterval, and sends due offset syncs as soon as they are due.
func (f *flow) flushLoop(ctx context.Context) {
	t := time.NewTicker(f.cfg.OffsetFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.syncWake:
			f.sendSyncs(false)
		case <-t.C:
			f.flush(ctx, false)
		}
	}
}

// flush stores resume points and writes the newest offset sync of every
// partition. final waits for the offset syncs to be acknowledged.
func (f *flow) flush(ctx context.Context, final bool) {
	err := f.resume.commit(ctx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		f.metrics.commitError(f)
		err = fmt.Errorf("storing resume points on %s: %w", f.dst.Alias, err)
	}
	f.health(&f.commitErr, err)
	f.sendSyncs(true)
	if final && f.syncCl != nil {
		if err := f.syncCl.Flush(ctx); err != nil {
			f.log.Warn("flushing offset syncs", "err", err)
		}
	}
}

// sendSyncs produces the due offset syncs (and with promote, the newest
// position of every partition: MM2's commit()).
func (f *flow) sendSyncs(promote bool) {
	if f.syncCl == nil {
		return
	}
	for _, p := range *f.parts.Load() {
		p.mu.Lock()
		if promote {
			p.sw.promote(p.idleUp(), p.committed)
		}
		runs := p.sw.takeRuns(promote) // [exact translation hook] offset runs: all at a flush, a new session's first at once
		due := p.sw.take()
		p.mu.Unlock()
		for _, s := range due {
			if err := f.produceSync(p.topic, p.partition, s[0], s[1]); err != nil {
				f.log.Warn("encoding offset sync", "err", err)
			}
		}
		for _, r := range runs { // [exact translation hook]
			if err := f.produceRun(p.topic, p.partition, r); err != nil {
				f.log.Warn("encoding offset run", "err", err)
			}
		}
	}
}

// minLevel drops records below level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}
