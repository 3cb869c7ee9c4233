// Package mirrorprom exports the measurements of a [mirror.Mirror] as
// Prometheus metrics (github.com/prometheus/client_golang). It is the only
// kmirror package that imports Prometheus: a program that uses package
// mirror without it does not link Prometheus or protobuf.
//
//	reg := prometheus.NewRegistry()
//	m, err := mirror.New(
//		mirror.WithCluster(...), mirror.WithFlow(...),
//		mirrorprom.WithRegisterer(reg),
//	)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// The metrics, all prefixed kmirror_ and labelled with the flow's source
// and target cluster aliases, follow MM2's MirrorSourceConnector,
// MirrorCheckpointConnector and Connect task metrics where MM2 has an
// equivalent (record-count, byte-rate, record-age-ms,
// replication-latency-ms, checkpoint-latency-ms):
//
//   - counters and histograms, updated as the engine works:
//     kmirror_replication_records_total, kmirror_replication_bytes_total
//     and kmirror_record_age_seconds (gauge) per remote topic-partition;
//     kmirror_replication_latency_seconds per remote topic;
//     kmirror_source_gap_records_total per source topic-partition;
//     kmirror_errors_total per kind; kmirror_offset_syncs_total,
//     kmirror_resume_commit_seconds, kmirror_rebalances_total,
//     kmirror_rebalance_seconds_total,
//     kmirror_provenance_skipped_records_total,
//     kmirror_checkpoint_latency_seconds, kmirror_checkpoints_total and
//     kmirror_group_offsets_synced_total per flow (never per consumer
//     group, so the series do not grow with the number of groups);
//   - gauges computed from [mirror.Mirror.Status] when Prometheus
//     collects them (nothing on the replication path):
//     kmirror_replication_lag_records, kmirror_source_end_offset,
//     kmirror_replicated_offset, kmirror_partition_failed and
//     kmirror_source_open_transaction_seconds per source topic-partition;
//     kmirror_flow_state, kmirror_flow_failed_partitions,
//     kmirror_member_slots, kmirror_member_singleton,
//     kmirror_heartbeat_age_seconds and kmirror_group_sync_groups per flow;
//     kmirror_topic_errors per flow and operation (topics a per-topic
//     operation fails for: [mirror.FlowStatus].TopicErrors);
//     kmirror_flow_lag_records and kmirror_flow_lag_unknown per flow (the
//     lag series are absent while the lag is unknown, never 0);
//   - gauges computed from [mirror.Mirror.ClusterStatus] (the flow's
//     status topic, every member): kmirror_cluster_members,
//     kmirror_cluster_slots per state and kmirror_config_mismatch_keys
//     per flow.
//
// Bytes are the source records' payload: keys, values, header keys and
// header values (MM2's byte-count counts values only).
//
// The series of a partition the Mirror no longer replicates (its slot
// moved to another member) are dropped once it has been out of
// [mirror.Mirror.Status] and idle for 5 minutes: records, bytes, record
// age, source gaps, and its remote topic's latency histogram with the
// topic's last partition.
package mirrorprom

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmirror/kmirror/mirror"
)

// WithRegisterer registers kmirror's metrics on r when [mirror.New]
// succeeds: mirror.WithMetrics(New(r)). A nil r registers nothing and
// records nothing. Registering two Mirrors on one Registerer fails New
// with the Registerer's error (the metric names are the same): give each
// Mirror its own registry, or wrap r with prometheus.WrapRegistererWith
// and a distinguishing label. A Mirror's metrics stay registered until
// its Close (or Shutdown) returns, which unregisters them: a service that
// builds a new Mirror in the same process (after a fatal error, or to
// apply a new configuration) closes the old one first and registers the
// new one on the same r.
func WithRegisterer(r prometheus.Registerer) mirror.Opt {
	return mirror.WithMetrics(New(r))
}

// New returns a [mirror.Metrics] that registers kmirror's metrics on r
// when the Mirror it is given to is created, for use with
// [mirror.WithMetrics] (or wrapped by another mirror.Metrics that also
// forwards the measurements elsewhere). It returns nil for a nil r.
func New(r prometheus.Registerer) mirror.Metrics {
	if r == nil {
		return nil
	}
	return newVecs(r)
}

// vecs are the metric vectors of one Mirror.
type vecs struct {
	reg prometheus.Registerer
	// parts holds the per-partition series: records and payload bytes
	// replicated, record age at fetch (source, target, topic (remote),
	// partition).
	parts    *partCollector
	latency  *prometheus.HistogramVec // source, target, topic
	gaps     *prometheus.CounterVec   // source, target, topic (source), partition
	flowErrs *prometheus.CounterVec   // source, target, kind
	syncs    *prometheus.CounterVec   // source, target
	commits  *prometheus.HistogramVec // source, target
	// rebalances and rebalanceSecs count the flow's group rebalances and
	// the seconds spent in them (source, target).
	rebalances, rebalanceSecs *prometheus.CounterVec
	provSkipped               *prometheus.CounterVec // source, target
	// Checkpoint emitter series, per flow (source, target).
	cpLatency   *prometheus.HistogramVec
	checkpoints *prometheus.CounterVec
	groupCommit *prometheus.CounterVec
	state       *stateCollector
}

var (
	partLabels = []string{"source", "target", "topic", "partition"}
	flowLabels = []string{"source", "target"}
)

func newVecs(r prometheus.Registerer) *vecs {
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kmirror_replication_latency_seconds",
		Help:    "Time from the source record timestamp to its acknowledgement by the target, per remote topic (MM2 replication-latency-ms).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}, []string{"source", "target", "topic"})
	gaps := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_source_gap_records_total",
		Help: "Records lost on the source before they were replicated (retention, DeleteRecords, topic re-created), per source topic-partition."}, partLabels)
	parts := &partCollector{
		m:       map[partKey]*partSeries{},
		gapSeen: map[partKey]time.Time{},
		latency: latency,
		gaps:    gaps,
		records: prometheus.NewDesc("kmirror_replication_records_total",
			"Records replicated and acknowledged by the target, per remote topic-partition (MM2 record-count).", partLabels, nil),
		bytes: prometheus.NewDesc("kmirror_replication_bytes_total",
			"Bytes of replicated records (key, value, header keys and values) per remote topic-partition (MM2 byte-count counts values only; rate() gives byte-rate).", partLabels, nil),
		age: prometheus.NewDesc("kmirror_record_age_seconds",
			"Age of the last record fetched from the source (now - record timestamp) (MM2 record-age-ms).", partLabels, nil),
	}
	return &vecs{
		reg:     r,
		parts:   parts,
		latency: latency,
		gaps:    gaps,
		flowErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_errors_total",
			Help: "Errors per flow and kind (fetch, resume_commit, offset_sync, partition_failed)."}, []string{"source", "target", "kind"}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_offset_syncs_total",
			Help: "Offset syncs written."}, flowLabels),
		commits: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kmirror_resume_commit_seconds",
			Help:    "Duration of storing resume points on the target.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, flowLabels),
		provSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_provenance_skipped_records_total",
			Help: "Source records not replicated because their kmirror-provenance header (or the Redpanda migrator's) shows they were already on the target's cluster or came back from it."}, flowLabels),
		rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_rebalances_total",
			Help: "Rebalances of the flow's group of members seen by this member (slots assigned after a join or a revocation)."}, flowLabels),
		rebalanceSecs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_rebalance_seconds_total",
			Help: "Seconds this member spent in rebalances of the flow's group (from the revocation or join to the assignment)."}, flowLabels),
		cpLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kmirror_checkpoint_latency_seconds",
			Help:    "Time from taking a checkpoint (before fetching the source group offsets) to its acknowledgement by the target, per flow (MM2 checkpoint-latency-ms).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}, flowLabels),
		checkpoints: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_checkpoints_total",
			Help: "Checkpoint records written to <source>.checkpoints.internal and acknowledged, per flow."}, flowLabels),
		groupCommit: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_group_offsets_synced_total",
			Help: "Partition offsets committed into target consumer groups by group-offset sync, per flow."}, flowLabels),
		state: &stateCollector{parts: parts},
	}
}

// Init registers the metrics, and the collector of the gauges read from
// m's Status, on the Registerer; on an error it unregisters what it had
// registered. It implements [mirror.Metrics]; mirror.New calls it.
func (v *vecs) Init(m *mirror.Mirror) error {
	v.state.m = m
	cs := v.collectors()
	for i, c := range cs {
		if err := v.reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				v.reg.Unregister(done)
			}
			if errors.As(err, new(prometheus.AlreadyRegisteredError)) {
				// Prometheus's message alone ("duplicate metrics collector
				// registration attempted") did not say whose metrics, nor
				// that a stopped Mirror's still count.
				err = fmt.Errorf("%w: kmirror's metrics are already registered on this Registerer by another Mirror "+
					"(one not closed yet: a stopped Mirror's stay registered until its Close returns): close it first, or give each Mirror a registry of its own", err)
			}
			return err
		}
	}
	return nil
}

// collectors returns every collector Init registers.
func (v *vecs) collectors() []prometheus.Collector {
	return []prometheus.Collector{v.parts, v.latency, v.gaps, v.flowErrs, v.syncs,
		v.commits, v.rebalances, v.rebalanceSecs, v.provSkipped, v.state, v.cpLatency, v.checkpoints, v.groupCommit}
}

// Release unregisters the collectors Init registered; mirror.Mirror's
// Close and Shutdown call it once the Mirror stopped, so that a Mirror
// built again in the same process registers on the same Registerer.
func (v *vecs) Release() {
	for _, c := range v.collectors() {
		v.reg.Unregister(c)
	}
}

// Flow returns the recorder of one flow; its series are created when
// they first count something.
func (v *vecs) Flow(source, target string) mirror.FlowMetrics {
	return &flowRec{v: v, src: source, dst: target}
}

// flowRec records one flow's events. Flow-level events are rare (errors,
// offset syncs, resume-point stores): each resolves its series by label
// values when it happens.
type flowRec struct {
	v        *vecs
	src, dst string
}

func (f *flowRec) Partition(remoteTopic string, partition int32) mirror.PartitionMetrics {
	return &partRec{c: f.v.parts, s: f.v.parts.series(f.src, f.dst, remoteTopic, partition)}
}

func (f *flowRec) Checkpoints() mirror.CheckpointMetrics {
	return &checkpointRec{
		latency:     f.v.cpLatency.WithLabelValues(f.src, f.dst),
		checkpoints: f.v.checkpoints.WithLabelValues(f.src, f.dst),
		commits:     f.v.groupCommit.WithLabelValues(f.src, f.dst),
	}
}

func (f *flowRec) SourceGap(topic string, partition int32, lost int64) {
	f.v.parts.gap(partKey{src: f.src, dst: f.dst, topic: topic, partition: partition}, lost)
}

func (f *flowRec) Error(kind string) { f.v.flowErrs.WithLabelValues(f.src, f.dst, kind).Inc() }

func (f *flowRec) OffsetSyncWritten() { f.v.syncs.WithLabelValues(f.src, f.dst).Inc() }

func (f *flowRec) ResumePointsStored(d time.Duration) {
	f.v.commits.WithLabelValues(f.src, f.dst).Observe(d.Seconds())
}

func (f *flowRec) Rebalanced(d time.Duration) {
	f.v.rebalances.WithLabelValues(f.src, f.dst).Inc()
	f.v.rebalanceSecs.WithLabelValues(f.src, f.dst).Add(d.Seconds())
}

func (f *flowRec) ProvenanceSkipped(records int) {
	f.v.provSkipped.WithLabelValues(f.src, f.dst).Add(float64(records))
}

// partRec holds one partition's resolved series: the per-record calls
// look nothing up (one atomic load tells whether the series were dropped).
type partRec struct {
	c *partCollector
	s *partSeries
}

func (p *partRec) Fetched(ts time.Time) {
	if p.s.dropped.Load() {
		p.c.revive(p.s)
	}
	p.s.age.Store(math.Float64bits(time.Since(ts).Seconds()))
}

func (p *partRec) Acked(bytes int64, ts time.Time) {
	if p.s.dropped.Load() {
		p.c.revive(p.s)
	}
	p.s.records.Add(1)
	p.s.bytes.Add(uint64(bytes))
	if !ts.IsZero() {
		p.s.latency.Load().Observe(time.Since(ts).Seconds())
	}
}

// checkpointRec holds a flow's resolved checkpoint series.
type checkpointRec struct {
	latency              prometheus.Observer
	checkpoints, commits prometheus.Counter
}

func (c *checkpointRec) CheckpointLatency(d time.Duration) { c.latency.Observe(d.Seconds()) }
func (c *checkpointRec) CheckpointsWritten(n int)          { c.checkpoints.Add(float64(n)) }
func (c *checkpointRec) GroupOffsetsSynced(n int)          { c.commits.Add(float64(n)) }

// stateCollector derives gauges from Mirror.Status at scrape time:
// nothing on the replication path.
type stateCollector struct {
	m     *mirror.Mirror
	parts *partCollector // swept with each Status (staleAfter)
}

var (
	descLag = prometheus.NewDesc("kmirror_replication_lag_records",
		"Source high watermark minus the next offset to replicate, per source topic-partition.", partLabels, nil)
	descEnd = prometheus.NewDesc("kmirror_source_end_offset",
		"Source high watermark last seen, per source topic-partition.", partLabels, nil)
	descRep = prometheus.NewDesc("kmirror_replicated_offset",
		"Next source offset to replicate (one past the last acknowledged), per source topic-partition.", partLabels, nil)
	descPartFailed = prometheus.NewDesc("kmirror_partition_failed",
		"1 while a partition is stopped by a non-retriable error (see Status); 0 again once it restarts.", partLabels, nil)
	descOpenTxn = prometheus.NewDesc("kmirror_source_open_transaction_seconds",
		"Seconds a source partition has been held back by an open source transaction (read_committed replication reached its last stable offset, below the high watermark); absent when none.",
		partLabels, nil)
	descMemberSlots = prometheus.NewDesc("kmirror_member_slots",
		"Slots (units of work) of the flow this member owns.", flowLabels, nil)
	descMemberSingleton = prometheus.NewDesc("kmirror_member_singleton",
		"1 while this member holds the flow's singleton duties (topic creation, config and ACL sync, checkpoints, heartbeats).", flowLabels, nil)
	descFlowFailed = prometheus.NewDesc("kmirror_flow_failed_partitions",
		"Partitions of the flow this member replicates that are FAILED (restarted automatically when the cause can go away, else by Mirror.RestartFailed).", flowLabels, nil)
	descFlowState = prometheus.NewDesc("kmirror_flow_state",
		"1 for the flow's current state (RUNNING, RETRYING, FAILED, ...).", []string{"source", "target", "state"}, nil)
	descHBAge = prometheus.NewDesc("kmirror_heartbeat_age_seconds",
		"Seconds since the flow last wrote a heartbeat; with none written yet and heartbeats failing, since the first failure.", flowLabels, nil)
	descGroups = prometheus.NewDesc("kmirror_group_sync_groups",
		"Consumer groups per checkpoint/offset-sync state.", []string{"source", "target", "state"}, nil)
	descConfigMismatch = prometheus.NewDesc("kmirror_config_mismatch_keys",
		"Configuration keys whose values differ between the flow's live members (tasks.max, enabled, ...; see /status mismatches), as this member reads the flow's status topic; 0 when they agree.",
		flowLabels, nil)
	descFlowLag = prometheus.NewDesc("kmirror_flow_lag_records",
		"Records of the flow this member accounts for that wait to be replicated: its partitions' lag, plus on the member holding the singleton duties the partitions of unassigned slots and those topic errors keep back, or the whole flow's while it retries its start-up. Absent while unknown (kmirror_flow_lag_unknown 1); sum over members for the flow's total.",
		flowLabels, nil)
	descFlowLagUnknown = prometheus.NewDesc("kmirror_flow_lag_unknown",
		"1 while part of the flow's lag this member accounts for cannot be computed (a cluster does not answer, no resume point readable): the lag series are then absent, never 0.",
		flowLabels, nil)
	descClusterMembers = prometheus.NewDesc("kmirror_cluster_members",
		"Live members of the flow (their status records are younger than 3 status intervals), as this member reads the flow's status topic.",
		flowLabels, nil)
	descClusterSlots = prometheus.NewDesc("kmirror_cluster_slots",
		"Slots of the flow per state (RUNNING, PAUSED, UNASSIGNED, ...) across all members, as this member reads the flow's status topic.",
		[]string{"source", "target", "state"}, nil)
	descTopicErrors = prometheus.NewDesc("kmirror_topic_errors",
		"Topics a per-topic operation (create, partitions, describe, config, acl) currently fails for, the other topics replicating (reported by the member holding the singleton duties; see Status topic_errors).",
		[]string{"source", "target", "op"}, nil)
)

// topicOps are the operations kmirror_topic_errors always has a series
// for (0 when none fails), so an alert on > 0 needs no absent().
var topicOps = []mirror.TopicOp{mirror.TopicOpCreate, mirror.TopicOpPartitions, mirror.TopicOpDescribe, mirror.TopicOpConfig, mirror.TopicOpACL}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descEnd, descRep, descPartFailed, descFlowFailed, descFlowState, descHBAge, descGroups,
		descOpenTxn, descMemberSlots, descMemberSingleton, descTopicErrors, descFlowLag, descFlowLagUnknown, descClusterMembers,
		descClusterSlots, descConfigMismatch} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if c.m == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, cf := range c.m.ClusterStatus().Flows {
		gauge(descClusterMembers, float64(len(cf.Members)), cf.Source, cf.Target)
		slots := map[mirror.State]int{mirror.StateRunning: 0, mirror.StateUnassigned: 0}
		for _, s := range cf.Slots {
			slots[s.State]++
		}
		for st, n := range slots {
			gauge(descClusterSlots, float64(n), cf.Source, cf.Target, string(st))
		}
		gauge(descConfigMismatch, float64(len(cf.Mismatches)), cf.Source, cf.Target)
	}
	st := c.m.Status()
	c.parts.sweep(st.Flows, time.Now())
	for _, fs := range st.Flows {
		gauge(descFlowState, 1, fs.Source, fs.Target, string(fs.State))
		gauge(descFlowLagUnknown, boolGauge(fs.LagUnknown), fs.Source, fs.Target)
		if !fs.LagUnknown {
			gauge(descFlowLag, float64(fs.Lag), fs.Source, fs.Target)
		}
		gauge(descFlowFailed, float64(fs.FailedPartitions), fs.Source, fs.Target)
		gauge(descMemberSlots, float64(len(fs.Member.Slots)), fs.Source, fs.Target)
		gauge(descMemberSingleton, boolGauge(fs.Member.Singleton), fs.Source, fs.Target)
		// None written yet and failing: the seconds since the first
		// failure, so that a target refusing every heartbeat from the
		// start is seen as stale too.
		if last := fs.LastHeartbeat; !last.IsZero() || !fs.HeartbeatErrorSince.IsZero() {
			if last.IsZero() {
				last = fs.HeartbeatErrorSince
			}
			gauge(descHBAge, time.Since(last).Seconds(), fs.Source, fs.Target)
		}
		// Per partition: label pairs built once for its samples, pointing
		// at the snapshot's strings (read only).
		for i := range fs.UnassignedPartitions {
			p := &fs.UnassignedPartitions[i]
			if !p.LagUnknown {
				lp := partPairs(&fs.Source, &fs.Target, &p.Topic, strconv.Itoa(int(p.Partition)))
				ch <- &sample{desc: descLag, labels: lp, v: float64(p.Lag), gauge: true}
			}
		}
		for i := range fs.Partitions {
			p := &fs.Partitions[i]
			lp := partPairs(&fs.Source, &fs.Target, &p.Topic, strconv.Itoa(int(p.Partition)))
			if !p.LagUnknown {
				ch <- &sample{desc: descLag, labels: lp, v: float64(p.Lag), gauge: true}
			}
			ch <- &sample{desc: descEnd, labels: lp, v: float64(p.SourceEnd), gauge: true}
			ch <- &sample{desc: descRep, labels: lp, v: float64(p.Replicated), gauge: true}
			ch <- &sample{desc: descPartFailed, labels: lp, v: boolGauge(p.State == mirror.StateFailed), gauge: true}
			if !p.OpenTransactionSince.IsZero() {
				ch <- &sample{desc: descOpenTxn, labels: lp, v: time.Since(p.OpenTransactionSince).Seconds(), gauge: true}
			}
		}
		byOp := map[mirror.TopicOp]int{}
		for _, te := range fs.TopicErrors {
			byOp[te.Op]++
		}
		for _, op := range topicOps {
			gauge(descTopicErrors, float64(byOp[op]), fs.Source, fs.Target, string(op))
		}
		counts := map[string]int{}
		for _, g := range fs.Groups {
			counts[string(g.State)]++
		}
		for st, n := range counts {
			gauge(descGroups, float64(n), fs.Source, fs.Target, st)
		}
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// partKey names one partition's series.
type partKey struct {
	src, dst, topic string
	partition       int32
}

// partSeries is one partition's three series: two whole-number counters
// and the age gauge (float64 bits), and its topic's latency histogram.
type partSeries struct {
	k              partKey
	part           string // the partition label
	records, bytes atomic.Uint64
	age            atomic.Uint64
	latency        atomic.Pointer[observer] // the remote topic's kmirror_replication_latency_seconds
	// dropped is set when sweep removed the series from the scrape; the
	// partition's next record puts them back (revive).
	dropped atomic.Bool
	// Under partCollector.mu (sweep): when the partition was last in
	// Status or counted something, and its counts then.
	seen                 time.Time
	seenRecords, seenAge uint64
}

// observer holds a histogram child for an atomic.Pointer.
type observer struct{ prometheus.Observer }

// staleAfter is how long the series of a partition this member no longer
// replicates (its slot moved to another member, or it otherwise left
// Status) stay scraped, counting nothing, before they are dropped: a
// member exports the partitions of its own slots, not every partition it
// ever replicated. A rebalance that gives the partition back within it
// keeps its counters.
var staleAfter = 5 * time.Minute

// partCollector exports the per-partition series. At thousands of
// partitions, three client_golang series per partition (each with its
// own label pairs and hash entries) held about 2 KiB per partition
// (issue 22); this keeps about 100 bytes and builds the samples when
// scraped. The output is the same as the vectors': counters and a
// gauge, one sample per partition from its first Partition call until
// sweep drops it (staleAfter).
type partCollector struct {
	mu sync.Mutex
	m  map[partKey]*partSeries
	// gapSeen: the source topic-partitions with a
	// kmirror_source_gap_records_total series, and when each was last in
	// Status or had a gap.
	gapSeen             map[partKey]time.Time
	latency             *prometheus.HistogramVec // source, target, topic (remote)
	gaps                *prometheus.CounterVec   // source, target, topic (source), partition
	records, bytes, age *prometheus.Desc
}

// series returns the series of a partition, created on first use.
func (c *partCollector) series(src, dst, topic string, partition int32) *partSeries {
	k := partKey{src: src, dst: dst, topic: topic, partition: partition}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.m[k]
	if s == nil {
		s = &partSeries{k: k, part: strconv.Itoa(int(partition)), seen: time.Now()}
		s.latency.Store(&observer{c.latency.WithLabelValues(src, dst, topic)})
		c.m[k] = s
	}
	return s
}

// revive puts back the series of s, which sweep dropped while a recorder
// of the partition still held them (the partition counts again). When a
// new recorder of the partition made other series since, those stay and s
// is left out of the scrape.
func (c *partCollector) revive(s *partSeries) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !s.dropped.Load() {
		return
	}
	if c.m[s.k] == nil {
		c.m[s.k] = s
		s.latency.Store(&observer{c.latency.WithLabelValues(s.k.src, s.k.dst, s.k.topic)})
	}
	s.seen = time.Now()
	s.dropped.Store(false)
}

// gap counts lost records of source topic-partition k.
func (c *partCollector) gap(k partKey, lost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gapSeen[k] = time.Now()
	c.gaps.WithLabelValues(k.src, k.dst, k.topic, strconv.Itoa(int(k.partition))).Add(float64(lost))
}

// sweep drops the series of the partitions that have been neither in
// flows (this member's Status) nor counting for longer than staleAfter:
// their records, bytes and age series, their remote topic's latency
// histogram once no partition of the topic is left, and their source gap
// series.
func (c *partCollector) sweep(flows []mirror.FlowStatus, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range flows {
		f := &flows[i]
		for j := range f.Partitions {
			p := &f.Partitions[j]
			if s := c.m[partKey{src: f.Source, dst: f.Target, topic: p.RemoteTopic, partition: p.Partition}]; s != nil {
				s.seen = now
			}
			gk := partKey{src: f.Source, dst: f.Target, topic: p.Topic, partition: p.Partition}
			if _, ok := c.gapSeen[gk]; ok {
				c.gapSeen[gk] = now
			}
		}
	}
	var topics map[partKey]bool // of dropped series, partition 0
	for k, s := range c.m {
		if r, a := s.records.Load(), s.age.Load(); r != s.seenRecords || a != s.seenAge {
			s.seen, s.seenRecords, s.seenAge = now, r, a
		}
		if now.Sub(s.seen) <= staleAfter {
			continue
		}
		delete(c.m, k)
		s.dropped.Store(true)
		if topics == nil {
			topics = map[partKey]bool{}
		}
		topics[partKey{src: k.src, dst: k.dst, topic: k.topic}] = true
	}
	if topics != nil {
		for k := range c.m {
			delete(topics, partKey{src: k.src, dst: k.dst, topic: k.topic})
		}
		for k := range topics {
			c.latency.DeleteLabelValues(k.src, k.dst, k.topic)
		}
	}
	for k, seen := range c.gapSeen {
		if now.Sub(seen) > staleAfter {
			delete(c.gapSeen, k)
			c.gaps.DeleteLabelValues(k.src, k.dst, k.topic, strconv.Itoa(int(k.partition)))
		}
	}
}

// Describe sends the three descriptors (prometheus.Collector).
func (c *partCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.records
	ch <- c.bytes
	ch <- c.age
}

// Collect sends one sample of each series of every partition
// (prometheus.Collector).
func (c *partCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	all := make([]*partSeries, 0, len(c.m))
	for _, s := range c.m {
		all = append(all, s)
	}
	c.mu.Unlock()
	for _, s := range all {
		lp := partPairs(&s.k.src, &s.k.dst, &s.k.topic, s.part)
		ch <- &sample{desc: c.records, labels: lp, v: float64(s.records.Load())}
		ch <- &sample{desc: c.bytes, labels: lp, v: float64(s.bytes.Load())}
		ch <- &sample{desc: c.age, labels: lp, v: math.Float64frombits(s.age.Load()), gauge: true}
	}
}
