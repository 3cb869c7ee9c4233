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
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/cpwatch"
	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/mm2filter"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/policy"
)

type tp struct {
	topic     string
	partition int32
}

// flow is the runtime of one replication flow source->target in this
// process (a member of the flow). run starts, and joins before returning:
//   - the refresh loop: discovery of the source partitions ready to
//     replicate (every member), topic creation, config and ACL sync (the
//     member holding slot 0);
//   - the cluster probe (probeLoop), on its own so that a job waiting on a
//     hung cluster does not hold it;
//   - the group member (member.go), whose callbacks start and stop the
//     units of the slots assigned to this member (unit.go) and the
//     singleton duties (checkpoints, heartbeats: tasks.go).
type flow struct {
	cfg     FlowConfig // with defaults
	name    string
	src     ClusterConfig
	dst     ClusterConfig
	pol     policy.ReplicationPolicy
	topics  mm2filter.Filter
	rules   topicRules                 // which topics are replicated, and why not (skip.go); static part
	live    atomic.Pointer[topicRules] // rules with the cluster IDs known at run time (currentRules)
	skips   *skipSet                   // topics selected but not replicated: Status, once-per-topic log
	topo    *topology                  // shared with the Mirror's other flows (topology.go)
	groups  mm2filter.Filter
	configs mm2filter.Filter
	log     *slog.Logger
	metrics *metrics
	labels  flowLabels

	tasks            int32  // N slots
	groupID          string // the members' group
	unitsTopic       string // coordination topic on the target (N partitions)
	resumeTopic      string // mm2-offsets.<source>.internal on the target
	offsetSyncsTopic string
	syncFailing      atomic.Bool // syncErr is set: a write that succeeds clears it (offsetSyncFailed)

	// Clients, created in run and closed before it returns.
	srcAdmCl, dstAdmCl *kgo.Client // admin clients (also the probe's)
	srcAdm, dstAdm     *kadm.Client
	// syncCl is the offset-sync producer (nil when off), replaced when
	// the offset-syncs or offset-runs topic was re-created (synctopics.go);
	// syncsLost is set by a write that found either topic missing or
	// under a new ID.
	syncCl    atomic.Pointer[kgo.Client]
	syncsLost atomic.Bool
	// syncsCheck is set by a write that failed otherwise: the refresh
	// loop checks whether the producer's id failed to load for good.
	syncsCheck  atomic.Bool
	group       *kgo.Client        // the member (nil until joined)
	groupCancel context.CancelFunc // ends group's context (kgo.WithContext): fails its requests in flight (leave)

	env *unitEnv // what units receive; set by run
	// partRetryFirst is the first automatic restart delay of a failed
	// partition (0: partRetryFirst); set by New.
	partRetryFirst time.Duration
	// cpWatch is given to the checkpoint emitter's Run (cpwatch.With;
	// tests only, nil in production); set by New.
	cpWatch cpwatch.Hook
	hooks   *unitHooks // the units' test hooks (nil in production); set by New

	srcID, dstID string      // cluster IDs, learned at start
	prov         *provenance // the provenance check and stamp; nil when off
	provSkipped  atomic.Int64
	tailCounts   [tailOutcomes]atomic.Int64 // partition starts by tail-resume outcome (tail.go)
	runCtx       context.Context
	hard         context.Context
	catalog      atomic.Pointer[catalog] // latest discovery
	// limits: the max.message.bytes of remote topics on the target
	// (limits.go), written by discovery and by units restarting a
	// partition stopped on a record too large; policies: their
	// cleanup.policy, written by discovery; limitsAt is discovery's
	// last full read (refresh goroutine only).
	limitsMu sync.Mutex
	limits   map[string]int32
	policies map[string]string
	limitsAt time.Time

	refreshWake chan struct{}
	// rediscoverWake: a unit found a source topic deleted or re-created
	// (rediscover).
	rediscoverWake chan struct{}
	isSingleton    atomic.Bool // this member holds slot 0
	aclOff         atomic.Bool // the source has no authorizer: ACL sync is skipped
	// topicsPending: some selected source partitions are not replicated yet
	// (remote partition not usable): the topic refresh retries quickly.
	topicsPending atomic.Bool
	// createdOnce: this member ran a round of topic creation holding slot
	// 0 (with refresh.topics.enabled=false, the only one).
	createdOnce atomic.Bool
	// Epochs (epoch.go): when this member's flow started (its epoch's
	// age), the coordination topic's partition count, and whether the
	// group balances with the older releases' cooperative-sticky.
	startedAt   atomic.Int64 // Unix milliseconds (0 before run)
	unitsParts  atomic.Int32
	legacyGroup atomic.Bool

	// The status topic (statuspub.go): statusCl tails it and writes this
	// member's records; the view holds what it read (viewMu, a leaf).
	statusTopic    string
	statusInterval time.Duration
	statusCl       *kgo.Client
	// statusTopicID is the ID of the status topic statusCl reads (tail
	// goroutine; openStatus before it), statusLost set once a read or
	// write of it failed as if it were deleted or re-created
	// (restoreStatus).
	statusTopicID kadm.TopicID
	statusLost    atomic.Bool
	selfID        string // this member's id in the status topic
	workerID      string // the worker id it advertises (WithWorkerID)
	fingerprint   string // hash of fpConfig
	fpConfig      map[string]string
	viewMu        sync.Mutex
	view          *statustopic.View
	// restartSeen is the offset of the last restart request read (viewMu):
	// one at or below it read again is not applied again.
	restartSeen int64
	targetWake  chan struct{} // the target state changed in the view
	pubWake     chan struct{} // something to publish now
	// pubMu serialises the writes of this member's records (publish,
	// tombstoneSlots, closeStatus) and guards pubChunks and pubDone; it is
	// taken before unitsMu, never under it.
	pubMu     sync.Mutex
	pubChunks map[int32]int // slot -> chunks of its last record written
	// pubSlots: slot -> its last record written (owned slots), which an
	// unchanged status does not write again for slotRewriteEvery.
	pubSlots map[int32]statustopic.SlotRecord
	pubDone  bool

	unitsMu   sync.Mutex     // guards the member fields below; taken before unit or partition locks, never after
	owned     map[int32]bool // slots the group assigned to this member
	slotSince map[int32]time.Time
	applied   TargetState // the target state this member applies: what the group's callbacks let start
	appliedAt time.Time
	// appliedOffset and reportedOffset are the offsets of the target-state
	// records applied and reported come from (-1: none): the member record
	// says which record it applied (kmirror failover waits for its own).
	appliedOffset  int64
	reportedOffset int64
	// reported is the target state this member reports applied
	// (FlowStatus.AppliedState, its member record): applied, once what
	// applying it stops has stopped (units flushed, resume points stored,
	// singleton duties ended), so that a STOPPED read there means nothing
	// more is written (kmirror failover waits for it).
	reported    TargetState
	pausedParts map[int32][]PartitionStatus // owned slots' partitions as their units stopped for PAUSED or STOPPED, or as fillPausedParts found them
	// pausedUnread lists, per slot, the partitions fillPausedParts added
	// to pausedParts without their stored resume point (unreadable then):
	// their lag stays unknown until a later fill reads it.
	pausedUnread   map[int32]map[tp]bool
	retiredRecords int64 // counters of the units stopped so far (FlowStatus.Records never goes down)
	retiredBytes   int64
	units          map[int32]*unit
	statusSeq      atomic.Uint64 // bumped at each store of a unit's status (publishLoop's change check)
	syncEpoch      atomic.Uint64 // bumped when the offset-syncs topics were created again (synctopics.go)
	// mergeMu guards merged, the last merge of the units' snapshots
	// (statusOf); taken after unitsMu is released, nothing under it.
	mergeMu        sync.Mutex
	merged         *mergedUnits
	bySlot         *bySlot // partitionsBySlot's last result, under mergeMu
	single         *singleton
	stopping       map[int32]*unit // units a release is stopping, by slot
	stoppingSingle *singleton      // singleton duties a release is stopping
	leaving        bool
	legacyWaiting  string            // why this member ignores its assignment (older releases in the group), "" when it does not
	final          []PartitionStatus // the partitions of the units stopped when the member left
	memberID       string
	generation     int32
	rebalances     int64
	rebalanceTime  time.Duration
	rebalanceStart time.Time // a rebalance began (revocation or loss), zero when none is running

	mu       sync.Mutex // guards the status fields below
	state    State
	stateErr string
	since    time.Time
	gaps     []GapError
	synced   map[string]*syncedConfigs // remote topic -> what config sync last saw of it (topics.go)
	// lacking holds the topic config keys the target refused as unknown
	// ("Unknown topic config name"): never copied there again (topics.go,
	// targetLacks). In memory only: learned again after a restart.
	lacking      map[string]bool
	nTopics      int
	groupStat    func() []GroupStatus
	lastHB       time.Time
	hbErr        string                      // the heartbeat emitter's last failure, "" once a heartbeat is written
	hbErrSince   time.Time                   // the first failure since the last heartbeat written
	aclErr       string                      // the ACL sync's last failure to describe the source's ACLs, "" once described (topics.go)
	aclErrSince  time.Time                   // the first such failure since the last describe that succeeded
	syncErr      string                      // the last failure to write an offset sync or run, "" once one is written (offsetsync.go)
	syncErrSince time.Time                   // the first such failure since the last write that succeeded
	probeErr     error                       // last cluster probe failure, nil when both answer
	listErr      error                       // last discovery's failure to list a cluster's topics, nil when both listed
	groupErr     error                       // the member's last failure to join the flow's group while it held no slot, nil once assigned
	topicErrs    map[topicErrKey]*TopicError // per-topic errors of the refresh jobs (topicerrors.go)
	// heldIncrease: the topics whose partitions topic error reports a
	// source partition increase that refresh.topics.enabled=false does not
	// follow (holdIncrease), not a failure to retry.
	heldIncrease map[string]bool
	commitErrs   map[int32]error // last resume-point load or commit failure per unit
	srcDown      bool            // the last probe found the source unreachable: lag unknown
	startLag     *startLag       // lag while retrying the start-up (nil once started)
	started      bool            // start succeeded (units may run)
	// unassigned are the partitions of the slots no live member owns, with
	// their lag, as the member holding slot 0 last computed them (lag.go).
	unassigned []PartitionStatus
	// What the flow's live members disagree on (checkDisagreements): the
	// warnings, their signature (logged once per change), and why this
	// member waits.
	warnings []string
	warnSig  string
	waiting  string
}

// catalog is what discovery found: the source partitions ready to
// replicate (their remote partition exists), by slot.
type catalog struct {
	bySlot map[int32]map[tp]offered
	topics []string // source topics with at least one ready partition, sorted
}

// slot returns the ready partitions of slot k (nil for a nil catalog).
func (c *catalog) slot(k int32) map[tp]offered {
	if c == nil {
		return nil
	}
	return c.bySlot[k]
}

func newFlow(fc FlowConfig, src, dst ClusterConfig, log *slog.Logger, m *metrics) (*flow, error) {
	fc = fc.withDefaults()
	f := &flow{cfg: fc, name: fc.Name(), src: src, dst: dst, pol: fc.Policy,
		log: log.With("flow", fc.Name()), metrics: m, labels: m.labelsOf(fc.Source, fc.Target),
		refreshWake: make(chan struct{}, 1), rediscoverWake: make(chan struct{}, 1), units: map[int32]*unit{}, stopping: map[int32]*unit{},
		state: StateUnassigned, since: time.Now(),
		synced: map[string]*syncedConfigs{}, commitErrs: map[int32]error{}, topicErrs: map[topicErrKey]*TopicError{}, heldIncrease: map[string]bool{},
		tasks: int32(fc.Tasks), groupID: fc.GroupID, unitsTopic: unitsTopicName(fc.Source),
		resumeTopic: connectoffsets.TopicName(fc.Source),
		statusTopic: statustopic.Topic(fc.Source), statusInterval: statustopic.DefaultInterval, view: statustopic.NewView(),
		targetWake: make(chan struct{}, 1), pubWake: make(chan struct{}, 1), pubChunks: map[int32]int{}, pubSlots: map[int32]statustopic.SlotRecord{},
		owned: map[int32]bool{}, slotSince: map[int32]time.Time{}, applied: TargetRunning, reported: TargetRunning, appliedOffset: -1, reportedOffset: -1, pausedParts: map[int32][]PartitionStatus{},
		pausedUnread: map[int32]map[tp]bool{}}
	if f.groupID == "" {
		f.groupID = defaultGroupID(fc.Source, fc.Target)
	}
	var errs []*ConfigError
	if f.topics, f.groups, f.configs, errs = flowFilters(fc); len(errs) > 0 {
		return nil, errs[0]
	}
	f.rules = newTopicRules(fc, f.topics, nil)
	f.skips = newSkipSet(f.log)
	if fc.OffsetSyncsTopicLocationTarget {
		f.offsetSyncsTopic = f.pol.OffsetSyncsTopic(fc.Source)
	} else {
		f.offsetSyncsTopic = f.pol.OffsetSyncsTopic(fc.Target)
	}
	return f, nil
}

// flowFilters compiles fc's topic, group and config-property filters
// (fc with its defaults), and returns every regex error among them: New
// lists them all, newFlow stops at the first.
func flowFilters(fc FlowConfig) (topics, groups, configs mm2filter.Filter, errs []*ConfigError) {
	prefix := fc.Name() + "."
	build := func(inKey string, in []string, exKey string, ex []string) mm2filter.Filter {
		f, ces := newFilter(inKey, in, exKey, ex)
		errs = append(errs, ces...)
		return f
	}
	topics = build(prefix+"topics", fc.Topics, prefix+"topics.exclude", fc.TopicsExclude)
	groups = build(prefix+"groups", fc.Groups, prefix+"groups.exclude", fc.GroupsExclude)
	configs = build(prefix+"config.properties.exclude", []string{".*"}, prefix+"config.properties.exclude", fc.ConfigPropertiesExclude)
	return topics, groups, configs, errs
}

// shouldReplicate is MM2's shouldReplicateTopic (internal topics and
// cycles never, the filter's topics and heartbeats topics yes), judged with
// the cluster IDs known so far. It records no skip: discovery does.
func (f *flow) shouldReplicate(topic string) bool {
	ok, _ := f.currentRules().decide(topic, nil)
	return ok
}

// checkpointTopic says whether checkpoints and group offset sync cover
// topic: replicated, and not skipped by discovery: an allowed collision
// (whose remote topic mixes the records of several sources, so no offset
// of it translates) or any topic discovery does not replicate, such as a
// refused collision, whose remote topic is another source topic's (its
// group partitions named that topic's remote partitions, and the emitter
// crashed on them: found by a review).
func (f *flow) checkpointTopic(topic string) bool {
	return f.shouldReplicate(topic) && !f.skips.skipped(topic)
}

// skippedRecords is the units' callback for records the provenance check
// did not replicate.
func (f *flow) skippedRecords(n int) {
	f.provSkipped.Add(int64(n))
	f.metrics.provenanceSkipped(f.labels, n)
}

// health records the latest result of one health source (the cluster
// probe, discovery's topic listing, or a unit's resume-point load or
// commit) and moves a running flow between RUNNING and RETRYING
// accordingly. Per-topic errors are not health sources: they leave the
// flow RUNNING (FlowStatus.TopicErrors).
//
// The state is set in the same critical section as the sources are read:
// two writers (the probe on its own goroutine, discovery, a unit) must not
// set their states in the other order than they read the sources, which
// left a flow RUNNING with the probe's error recorded
// (TestBrkHealthConcurrentWriters).
func (f *flow) health(set func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	set()
	errs := []error{f.probeErr, f.listErr, f.groupErr}
	for _, k := range sortedSlots(f.commitErrs) {
		errs = append(errs, f.commitErrs[k])
	}
	cur := errors.Join(errs...)
	switch st := f.state; {
	case st != StateRunning && st != StateRetrying:
	case cur != nil:
		f.setStateLocked(StateRetrying, cur)
	case st == StateRetrying:
		f.setStateLocked(StateRunning, nil)
	}
}

// unitHealth is the units' health callback.
func (f *flow) unitHealth(slot int32, err error) {
	f.health(func() {
		if err == nil {
			delete(f.commitErrs, slot)
		} else {
			f.commitErrs[slot] = err
		}
	})
}

func sortedSlots[V any](m map[int32]V) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// probe checks that both clusters answer (a broker-only metadata request
// each), so that a dead cluster shows as RETRYING within one probe
// interval even while nothing is fetched or produced.
//
// The two pings run at once, each bounded on its own: in one shared
// context, a hung source's ping used it up and the target's then failed at
// once, "target cluster unreachable: context deadline exceeded" about a
// target that answered (TestBrkHungSourceNotReportedAsTarget).
func (f *flow) probe(ctx context.Context) {
	bound := min(f.cfg.AdminTimeout, 5*time.Second)
	ping := func(cl *kgo.Client) error {
		pctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		return cl.Ping(pctx)
	}
	var srcErr, dstErr error
	var wg sync.WaitGroup
	wg.Go(func() { srcErr = ping(f.srcAdmCl) })
	dstErr = ping(f.dstAdmCl)
	wg.Wait()
	var errs []error
	srcDown := false
	if err := srcErr; err != nil && ctx.Err() == nil {
		errs = append(errs, kclient.Unreachable("source cluster", f.src.Alias, err))
		srcDown = true
	}
	if err := dstErr; err != nil && ctx.Err() == nil {
		errs = append(errs, kclient.Unreachable("target cluster", f.dst.Alias, err))
	}
	if ctx.Err() == nil {
		err := errors.Join(errs...)
		f.health(func() { f.probeErr, f.srcDown = err, srcDown })
	}
}

// setState sets the flow's state and logs a change ("flow state", with
// attrs after the state).
func (f *flow) setState(s State, err error, attrs ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setStateLocked(s, err, attrs...)
}

// setStateLocked is setState with f.mu held.
func (f *flow) setStateLocked(s State, err error, attrs ...any) {
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
			f.log.Warn("flow state", append([]any{"state", s, "err", err}, attrs...)...)
		} else {
			f.log.Info("flow state", append([]any{"state", s}, attrs...)...)
		}
	}
}

// metadataMaxAge is how often each of a flow's clients refreshes, unasked,
// the metadata of every topic it uses, unless the cluster's or the role's
// metadata.max.age.ms says otherwise: 5 minutes, the default of Kafka's
// clients (and so of MM2's). Each refresh decodes and caches the metadata
// of every partition the client uses: at 6 000 partitions the 30 s used
// before issue 22 made refreshes 43 of the 305 MB an idle member allocated
// a minute. Nothing else relies on it: discovery lists topics and
// partitions itself (refresh.topics.interval.seconds);
// AddConsumePartitions and a first produce to a topic make franz-go load
// its metadata at once, and waitProducerMetadata forces a refresh for new
// partitions; a moved leader, a gone broker or a topic a broker does not
// know yet fails a request, which makes franz-go refresh at once (no
// sooner than MetadataMinAge, 1 s). The replication producers are the
// exception: replicationProducerMetadataMaxAge.
const metadataMaxAge = 5 * time.Minute

// replicationProducerMetadataMaxAge is metadataMaxAge for the units'
// producers, which write the remote topics: 30 s. A remote topic deleted
// and re-created on a target that names topics in produce requests
// (Produce below v13, before Kafka 4.1) takes the records of an idle
// partition into the new topic without an error; only a metadata refresh
// shows the new topic ID, which fails those records with UNKNOWN_TOPIC_ID
// and starts the refill. The refresh period bounds how many records were
// written into the new topic before the refill, and so appear twice there.
const replicationProducerMetadataMaxAge = 30 * time.Second

// clientOpts returns the options of a client of cluster c: kmirror's
// defaults (client id, metadata ages, no client telemetry, the logger),
// then the cluster's options, the role's, then extra (later ones win).
func (f *flow) clientOpts(c ClusterConfig, role []kgo.Opt, extra ...kgo.Opt) []kgo.Opt {
	return f.clientOptsAged(metadataMaxAge, c, role, extra...)
}

// replicationProducerOpts is clientOpts for a unit's producer, whose
// default metadata age is replicationProducerMetadataMaxAge.
func (f *flow) replicationProducerOpts(c ClusterConfig, role []kgo.Opt, extra ...kgo.Opt) []kgo.Opt {
	return f.clientOptsAged(replicationProducerMetadataMaxAge, c, role, extra...)
}

// maxClientID is the longest client id franz-go takes, in bytes.
const maxClientID = 256

// clientID is the client id of flow flow's clients, "kmirror|<flow>", cut
// to franz-go's maxClientID bytes (at a character's start): with aliases
// of 130 characters it was 270 bytes, and every client of the flow refused
// itself ("client id length 270 is larger than max allowed 256"), so
// nothing was replicated (TestBrkTLongAliasesReplicate).
func clientID(flow string) string {
	id := "kmirror|" + flow
	if len(id) <= maxClientID {
		return id
	}
	n := maxClientID
	for n > 0 && !utf8.RuneStart(id[n]) {
		n--
	}
	return id[:n]
}

// clientOptsAged is clientOpts with a default metadata max age of maxAge.
func (f *flow) clientOptsAged(maxAge time.Duration, c ClusterConfig, role []kgo.Opt, extra ...kgo.Opt) []kgo.Opt {
	// No KIP-714 client telemetry: a flow runs a consumer and a producer
	// per slot, and each would compress and push its metrics to the
	// brokers that ask for them; kmirror's own metrics cover its clients.
	opts := []kgo.Opt{kgo.ClientID(clientID(f.name)), kgo.MetadataMinAge(time.Second), kgo.MetadataMaxAge(maxAge),
		kgo.DisableClientMetrics()}
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

func (f *flow) newAdmin(c ClusterConfig) (*kgo.Client, *kadm.Client, error) {
	// A short metadata age: kgo answers metadata requests from a cache of
	// this age, which would hide topics just created.
	cl, err := kclient.New(f.clientOpts(c, c.Admin, kgo.RequestTimeoutOverhead(5*time.Second), kgo.MetadataMinAge(100*time.Millisecond))...)
	if err != nil {
		return nil, nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(f.cfg.AdminTimeout / time.Millisecond))
	return cl, adm, nil
}

// openClients creates the flow's own clients (kgo does not connect until
// used): admin clients of both clusters and the offset-sync producer. Units
// and the singleton duties create their own.
func (f *flow) openClients() error {
	var err error
	if f.srcAdmCl, f.srcAdm, err = f.newAdmin(f.src); err != nil {
		return fmt.Errorf("source %s admin client: %w", f.src.Alias, err)
	}
	if f.dstAdmCl, f.dstAdm, err = f.newAdmin(f.dst); err != nil {
		return fmt.Errorf("target %s admin client: %w", f.dst.Alias, err)
	}
	if !f.cfg.Disabled && !f.cfg.DisableOffsetSyncs {
		cl, err := f.newSyncClient()
		if err != nil {
			return err
		}
		f.syncCl.Store(cl)
	}
	return nil
}

// newSyncClient builds the offset-sync producer.
func (f *flow) newSyncClient() (*kgo.Client, error) {
	syncCluster := f.src
	if f.cfg.OffsetSyncsTopicLocationTarget {
		syncCluster = f.dst
	}
	cl, err := kclient.New(f.clientOpts(syncCluster, syncCluster.Producer,
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(f.offsetSyncsTopic),
	)...)
	if err != nil {
		return nil, fmt.Errorf("offset-syncs producer on %s: %w", syncCluster.Alias, err)
	}
	return cl, nil
}

func (f *flow) closeClients() {
	for _, cl := range []*kgo.Client{f.srcAdmCl, f.dstAdmCl, f.syncCl.Load(), f.statusCl} {
		if cl != nil {
			cl.Close()
		}
	}
}

// run runs this member of the flow until ctx is done (graceful stop: nil)
// or a fatal error. hard is canceled only to abandon in-flight work
// without flushing.
func (f *flow) run(ctx, hard context.Context) error {
	f.runCtx, f.hard = ctx, hard
	f.startedAt.Store(time.Now().UnixMilli())
	if f.cfg.Disabled && f.cfg.DisableHeartbeats {
		f.setState(StateDisabled, nil) // nothing to do: no client, no topic, no group
		<-ctx.Done()
		return nil
	}
	f.setState(StateStarting, nil)
	if err := f.openClients(); err != nil {
		f.setState(StateFailed, err)
		return err
	}
	defer f.closeClients()

	// Start-up: preflight, internal topics; retried with backoff while
	// clusters are unreachable.
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
		f.estimateStartLag(ctx)
		delay = backoff(delay)
		select {
		case <-ctx.Done():
			f.setState(StateStopped, nil)
			return nil
		case <-time.After(delay):
		}
	}
	f.mu.Lock()
	f.startLag, f.started = nil, true
	f.mu.Unlock()
	if f.cfg.Disabled {
		f.setState(StateDisabled, nil)
	} else {
		// A member started on a paused or stopped flow logged "flow state
		// RUNNING" right after "target state at start STOPPED", while its
		// status said STOPPED (an operator's find): the line says what it
		// holds. reported is read under unitsMu, released before setState
		// takes f.mu (the two are not nested).
		f.unitsMu.Lock()
		held := f.reported
		f.unitsMu.Unlock()
		var note []any
		if held == TargetPaused || held == TargetStopped {
			note = []any{"target_state", held, "note", "started; its partitions stay " + string(held) + " until resumed"}
		}
		f.setState(StateRunning, nil, note...)
	}

	var wg sync.WaitGroup
	loopCtx, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	// The status topic's goroutines run until the member left: its slots'
	// records are tombstoned by the release, its record by closeStatus.
	statusCtx, stopStatus := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStatus()
	var swg sync.WaitGroup
	swg.Go(func() { f.tailLoop(statusCtx) })
	swg.Go(func() { f.targetLoop(statusCtx) })
	// The publisher stops before the member leaves: a publication in
	// flight to an unreachable target must not hold pubMu, which the
	// release's slot tombstones take (bounded by leaveTimeout).
	pubCtx, stopPub := context.WithCancel(statusCtx)
	var pwg sync.WaitGroup
	pwg.Go(func() { f.publishLoop(pubCtx) })
	stopPublisher := func() {
		stopPub()
		pwg.Wait()
	}
	stopStatusLoops := func() {
		stopPublisher()
		stopStatus()
		swg.Wait()
		f.closeStatus(hard.Err() == nil)
	}
	wg.Go(func() { f.refreshLoop(loopCtx) })
	wg.Go(func() { f.probeLoop(loopCtx) })
	if err := f.join(); err != nil {
		stopLoops()
		wg.Wait()
		stopStatusLoops()
		f.setState(StateFailed, err)
		return err
	}
	wg.Go(func() { f.groupLoop(loopCtx) })
	<-ctx.Done()
	stopPublisher()
	f.leave(hard)
	stopLoops()
	wg.Wait()
	stopStatusLoops()
	f.setState(StateStopped, nil)
	return nil
}

// shutdownTimeout bounds a graceful stop of a unit: flushing in-flight
// records and storing resume points.
const shutdownTimeout = 30 * time.Second

// fatalError wraps errors that must not be retried (bad configuration
// detected against the cluster, e.g. replication factor > brokers).
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

func (f *flow) start(ctx context.Context) error {
	if err := f.preflight(ctx); err != nil {
		return err
	}
	if err := f.learnClusterIDs(ctx); err != nil {
		return err
	}
	if err := f.ensureInternalTopics(ctx); err != nil {
		return err
	}
	if err := f.ensureUnitsTopic(ctx); err != nil {
		return err
	}
	if err := f.openStatus(ctx); err != nil {
		return err
	}
	if f.cfg.ShallowCopy {
		f.log.Info("shallow copy on: record batches that need no change are written to the target as fetched, the others record by record")
	}
	env := &unitEnv{cfg: f.cfg, name: f.name, src: f.src, dst: f.dst, log: f.log, metrics: f.metrics,
		labels: f.labels, tasks: f.tasks, resumeTopic: f.resumeTopic, clientOpts: f.clientOpts, producerOpts: f.replicationProducerOpts,
		gap: f.recordGap, health: f.unitHealth, rediscover: f.rediscover, owns: f.owns, prov: f.prov, skipped: f.skippedRecords,
		partRetryFirst: f.partRetryFirst, hooks: f.hooks, topicLimit: f.topicLimit, setTopicLimit: f.setTopicLimit,
		txnID: func(slot int32) string { return transactionalID(f.groupID, slot) }, tailNoted: f.tailNoted,
		merged: f.skips.noCheckpoints, cleanupPolicy: f.cleanupPolicy, statusSeq: &f.statusSeq, syncEpoch: &f.syncEpoch,
		limitSynced: !f.cfg.DisableTopicConfigSync && f.configs.Match("max.message.bytes")}
	env.stampOffset = f.prov != nil && !f.cfg.DisableTailResume
	env.tail = env.stampOffset && !f.cfg.ExactlyOnce && !f.cfg.ShallowCopy
	if f.syncCl.Load() != nil {
		env.sync = f.produceSync
		env.run = f.produceRun
		env.syncFlush = f.flushSyncs // syncflush.go: bounded, a dead cluster must not hold a stop
	}
	if !f.cfg.Disabled {
		n, err := f.resumeTopicPartitions(ctx)
		if err != nil {
			return fmt.Errorf("resume points topic %s on %s: %w", f.resumeTopic, f.dst.Alias, err)
		}
		env.resumeParts = n
		if err := f.discover(ctx); err != nil && !errors.Is(err, errTopicsFailed) {
			f.log.Warn("first topic discovery", "err", err) // retried by the refresh loop
		}
	}
	f.env = env
	return nil
}

// recordGap is the units' gap callback.
func (f *flow) recordGap(g *GapError) {
	f.mu.Lock()
	f.gaps = append(f.gaps, *g)
	if len(f.gaps) > 100 {
		f.gaps = f.gaps[len(f.gaps)-100:]
	}
	f.mu.Unlock()
}

func (f *flow) wakeRefresh() {
	select {
	case f.refreshWake <- struct{}{}:
	default:
	}
}

// rediscover wakes discovery for a unit that found a source topic deleted
// or re-created (unitEnv.rediscover). The refresh loop runs it at once,
// but not sooner than rediscoverEvery after its last run: the partitions
// of a deleted topic report it each, and a topic whose deletion the
// listing does not show yet would otherwise run discovery back to back.
func (f *flow) rediscover() {
	select {
	case f.rediscoverWake <- struct{}{}:
	default:
	}
}

// preflightBound bounds preflight's first request to each cluster.
const preflightBound = 15 * time.Second

// preflight checks replication factors against the broker counts
// (docs/field-failures.md case B18).
func (f *flow) preflight(ctx context.Context) error {
	check := func(adm *kadm.Client, alias string, rfs map[string]int16) error {
		// Bounded: a cluster that never answers (a TLS client on a
		// plaintext listener waits for ever) kept the flow STARTING with
		// no error; it is RETRYING, saying why, after the bound.
		mctx, cancel := context.WithTimeout(ctx, min(f.cfg.AdminTimeout, preflightBound))
		defer cancel()
		md, err := adm.BrokerMetadata(mctx)
		if err != nil {
			return kclient.Unreachable("cluster", alias, err)
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
	// offset.storage.replication.factor also applies to the flow's
	// coordination topic, which even a heartbeat-only flow has.
	dstRF := map[string]int16{"offset.storage.replication.factor": f.cfg.OffsetStorageReplicationFactor}
	if !f.cfg.Disabled {
		dstRF["replication.factor"] = f.cfg.ReplicationFactor
	}
	if !f.cfg.Disabled && !f.cfg.DisableCheckpoints {
		dstRF["checkpoints.topic.replication.factor"] = f.cfg.CheckpointsTopicReplicationFactor
	}
	if !f.cfg.DisableHeartbeats {
		dstRF["heartbeats.topic.replication.factor"] = f.cfg.HeartbeatsTopicReplicationFactor
	}
	srcRF := map[string]int16{}
	if !f.cfg.Disabled && !f.cfg.DisableOffsetSyncs {
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
// compacted) and the offset-runs topic beside it on their location
// cluster, or accepts them as created in advance (ensuretopic).
func (f *flow) ensureInternalTopics(ctx context.Context) error {
	if f.cfg.Disabled || f.cfg.DisableOffsetSyncs {
		return nil
	}
	adm := f.srcAdm
	alias := f.src.Alias
	if f.cfg.OffsetSyncsTopicLocationTarget {
		adm, alias = f.dstAdm, f.dst.Alias
	}
	for _, s := range f.offsetSyncTopicSpecs(alias) {
		if _, err := f.ensureTopic(ctx, adm, s); err != nil {
			return err
		}
	}
	return nil
}

// offsetSyncTopicSpecs returns the offset-syncs topic and kmirror's
// offset-runs topic beside it (exact translation, checkpoint.OffsetRun), on
// cluster alias.
func (f *flow) offsetSyncTopicSpecs(alias string) []ensuretopic.Spec {
	return []ensuretopic.Spec{
		{Topic: f.offsetSyncsTopic, Cluster: alias, Partitions: 1,
			ReplicationFactor: f.cfg.OffsetSyncsTopicReplicationFactor, Configs: compactConfig()},
		{Topic: checkpoint.OffsetRunsTopic(f.offsetSyncsTopic), Cluster: alias, Partitions: 1,
			ReplicationFactor: f.cfg.OffsetSyncsTopicReplicationFactor, Configs: checkpoint.OffsetRunsTopicConfig()},
	}
}

// unitsTopicSpec is the flow's coordination topic on the target: exactly
// tasks.max partitions, never written.
func (f *flow) unitsTopicSpec() ensuretopic.Spec {
	return ensuretopic.Spec{Topic: f.unitsTopic, Cluster: f.dst.Alias, Partitions: f.tasks, ExactPartitions: true,
		ReplicationFactor: f.cfg.OffsetStorageReplicationFactor, Configs: compactConfig()}
}

// resumeTopicSpec is the resume-point topic on the target: compacted (a
// resume point must not expire), Connect's default 25 partitions, any
// count accepted.
func (f *flow) resumeTopicSpec() ensuretopic.Spec {
	return ensuretopic.Spec{Topic: f.resumeTopic, Cluster: f.dst.Alias, Partitions: connectoffsets.DefaultPartitions,
		ReplicationFactor: f.cfg.OffsetStorageReplicationFactor, Configs: compactConfig(), RequireCompact: true}
}

// ensureTopic creates an internal topic, as MM2's
// MirrorUtils.createCompactedTopic, or accepts it as it exists: "already
// exists" is success, and so is a refused creation (no CREATE ACL) of a
// topic created in advance that fits s (ensuretopic.Ensure).
func (f *flow) ensureTopic(ctx context.Context, adm *kadm.Client, s ensuretopic.Spec) (ensuretopic.Result, error) {
	s.Log = f.log
	r, err := ensuretopic.Ensure(ctx, adm, s)
	if err == nil && r.Created {
		f.log.Info("internal topic created", "topic", s.Topic, "cluster", s.Cluster, "partitions", s.Partitions)
	}
	return r, err
}

// compactConfig is cleanup.policy=compact.
func compactConfig() map[string]*string {
	compact := "compact"
	return map[string]*string{"cleanup.policy": &compact}
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
