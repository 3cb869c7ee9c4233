package mirror

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// metrics is the engine's Prometheus instrumentation. A nil *metrics
// records nothing, so the hot path costs one nil check without a
// Registerer. The metric table, with the MM2 JMX metric each follows, is in
// METRICS.md.
type metrics struct {
	records  *prometheus.CounterVec   // source, target, topic (remote), partition
	bytes    *prometheus.CounterVec   // value bytes, as MM2's byte-count
	age      *prometheus.GaugeVec     // record age at poll
	latency  *prometheus.HistogramVec // source, target, topic
	gaps     *prometheus.CounterVec   // source, target, topic (source), partition
	flowErrs *prometheus.CounterVec   // source, target, kind
	syncs    *prometheus.CounterVec   // source, target
	commits  *prometheus.HistogramVec // source, target
	// rebalances and rebalanceSecs count the flow's group rebalances and
	// the seconds spent in them (source, target).
	rebalances, rebalanceSecs *prometheus.CounterVec
	provSkipped               *prometheus.CounterVec // source, target
	tasks                     *taskMetricVecs        // checkpoint task series (tasks.go)
	mirror                    *Mirror
}

// partMetrics are one partition's resolved series.
type partMetrics struct {
	records, bytes prometheus.Counter
	age            prometheus.Gauge
	latency        prometheus.Observer
}

func newMetrics(r prometheus.Registerer) *metrics {
	if r == nil {
		return nil
	}
	pl := []string{"source", "target", "topic", "partition"}
	m := &metrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_replication_records_total",
			Help: "Records replicated and acknowledged by the target, per remote topic-partition (MM2 record-count)."}, pl),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_replication_bytes_total",
			Help: "Bytes of replicated records (key, value, header keys and values) per remote topic-partition (MM2 byte-count counts values only; rate() gives byte-rate)."}, pl),
		age: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kmirror_record_age_seconds",
			Help: "Age of the last record fetched from the source (now - record timestamp) (MM2 record-age-ms)."}, pl),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kmirror_replication_latency_seconds",
			Help:    "Time from the source record timestamp to its acknowledgement by the target, per remote topic (MM2 replication-latency-ms).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}, []string{"source", "target", "topic"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_source_gap_records_total",
			Help: "Records lost on the source before they were replicated (retention, DeleteRecords, topic re-created), per source topic-partition."}, pl),
		flowErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_errors_total",
			Help: "Errors per flow and kind (fetch, resume_commit, offset_sync, partition_failed)."}, []string{"source", "target", "kind"}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_offset_syncs_total",
			Help: "Offset syncs written."}, []string{"source", "target"}),
		commits: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kmirror_resume_commit_seconds",
			Help:    "Duration of storing resume points on the target.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, []string{"source", "target"}),
		provSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_provenance_skipped_records_total",
			Help: "Source records not replicated because their kmirror-provenance header (or the Redpanda migrator's) shows they were already on the target's cluster or came back from it."}, []string{"source", "target"}),
		rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_rebalances_total",
			Help: "Rebalances of the flow's group of members seen by this member (slots assigned after a join or a revocation)."}, []string{"source", "target"}),
		rebalanceSecs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_rebalance_seconds_total",
			Help: "Seconds this member spent in rebalances of the flow's group (from the revocation or join to the assignment)."}, []string{"source", "target"}),
	}
	r.MustRegister(m.records, m.bytes, m.age, m.latency, m.gaps, m.flowErrs, m.syncs, m.commits, m.rebalances, m.rebalanceSecs, m.provSkipped, (*stateCollector)(m))
	m.tasks = newTaskMetricVecs(r)
	return m
}

// flowLabels are the source and target aliases that label a flow's series.
type flowLabels struct{ src, dst string }

func (m *metrics) forPartition(l flowLabels, remote string, partition int32) *partMetrics {
	if m == nil {
		return nil
	}
	part := strconv.Itoa(int(partition))
	return &partMetrics{
		records: m.records.WithLabelValues(l.src, l.dst, remote, part),
		bytes:   m.bytes.WithLabelValues(l.src, l.dst, remote, part),
		age:     m.age.WithLabelValues(l.src, l.dst, remote, part),
		latency: m.latency.WithLabelValues(l.src, l.dst, remote),
	}
}

// acked counts one replicated record of size bytes (key, value, header
// keys and values) acknowledged by the target.
func (m *metrics) acked(pm *partMetrics, size int64, ts time.Time) {
	if m == nil || pm == nil {
		return
	}
	pm.records.Inc()
	pm.bytes.Add(float64(size))
	if !ts.IsZero() {
		pm.latency.Observe(time.Since(ts).Seconds())
	}
}

func (m *metrics) polled(pm *partMetrics, r *kgo.Record) {
	if m == nil || pm == nil || r.Timestamp.IsZero() {
		return
	}
	pm.age.Set(time.Since(r.Timestamp).Seconds())
}

func (m *metrics) gap(l flowLabels, topic string, partition int32, lost int64) {
	if m == nil {
		return
	}
	m.gaps.WithLabelValues(l.src, l.dst, topic, strconv.Itoa(int(partition))).Add(float64(lost))
}

// flowErr counts an error of a flow by kind (fetch, resume_commit,
// offset_sync, partition_failed, heartbeat, checkpoint_*).
func (m *metrics) flowErr(l flowLabels, kind string) {
	if m == nil {
		return
	}
	m.flowErrs.WithLabelValues(l.src, l.dst, kind).Inc()
}

func (m *metrics) offsetSync(l flowLabels) {
	if m == nil {
		return
	}
	m.syncs.WithLabelValues(l.src, l.dst).Inc()
}

func (m *metrics) committed(l flowLabels, d time.Duration) {
	if m == nil {
		return
	}
	m.commits.WithLabelValues(l.src, l.dst).Observe(d.Seconds())
}

// provenanceSkipped counts records the provenance check did not replicate.
func (m *metrics) provenanceSkipped(l flowLabels, n int) {
	if m == nil {
		return
	}
	m.provSkipped.WithLabelValues(l.src, l.dst).Add(float64(n))
}

// rebalanced counts one rebalance of a flow's group that took d (from the
// revocation or join to the assignment).
func (m *metrics) rebalanced(l flowLabels, d time.Duration) {
	if m == nil {
		return
	}
	m.rebalances.WithLabelValues(l.src, l.dst).Inc()
	m.rebalanceSecs.WithLabelValues(l.src, l.dst).Add(d.Seconds())
}

// stateCollector derives gauges from Status at scrape time: nothing on the
// hot path.
type stateCollector metrics

var (
	descLag = prometheus.NewDesc("kmirror_replication_lag_records",
		"Source high watermark minus the next offset to replicate, per source topic-partition.",
		[]string{"source", "target", "topic", "partition"}, nil)
	descEnd = prometheus.NewDesc("kmirror_source_end_offset",
		"Source high watermark last seen, per source topic-partition.", []string{"source", "target", "topic", "partition"}, nil)
	descRep = prometheus.NewDesc("kmirror_replicated_offset",
		"Next source offset to replicate (one past the last acknowledged), per source topic-partition.", []string{"source", "target", "topic", "partition"}, nil)
	descPartFailed = prometheus.NewDesc("kmirror_partition_failed",
		"1 when a partition is stopped by a non-retriable error (see Status).", []string{"source", "target", "topic", "partition"}, nil)
	descOpenTxn = prometheus.NewDesc("kmirror_source_open_transaction_seconds",
		"Seconds a source partition has been held back by an open source transaction (read_committed replication reached its last stable offset, below the high watermark); absent when none.",
		[]string{"source", "target", "topic", "partition"}, nil)
	descMemberSlots = prometheus.NewDesc("kmirror_member_slots",
		"Slots (units of work) of the flow this member owns.", []string{"source", "target"}, nil)
	descMemberSingleton = prometheus.NewDesc("kmirror_member_singleton",
		"1 while this member holds the flow's singleton duties (topic creation, config and ACL sync, checkpoints, heartbeats).", []string{"source", "target"}, nil)
	descFlowState = prometheus.NewDesc("kmirror_flow_state",
		"1 for the flow's current state (RUNNING, RETRYING, FAILED, ...).", []string{"source", "target", "state"}, nil)
	descHBAge = prometheus.NewDesc("kmirror_heartbeat_age_seconds",
		"Seconds since the flow last wrote a heartbeat.", []string{"source", "target"}, nil)
	descGroups = prometheus.NewDesc("kmirror_group_sync_groups",
		"Consumer groups per checkpoint/offset-sync state.", []string{"source", "target", "state"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descEnd, descRep, descPartFailed, descFlowState, descHBAge, descGroups,
		descOpenTxn, descMemberSlots, descMemberSingleton} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if c.mirror == nil {
		return
	}
	for _, fs := range c.mirror.Status().Flows {
		ch <- prometheus.MustNewConstMetric(descFlowState, prometheus.GaugeValue, 1, fs.Source, fs.Target, string(fs.State))
		ch <- prometheus.MustNewConstMetric(descMemberSlots, prometheus.GaugeValue, float64(len(fs.Member.Slots)), fs.Source, fs.Target)
		single := 0.0
		if fs.Member.Singleton {
			single = 1
		}
		ch <- prometheus.MustNewConstMetric(descMemberSingleton, prometheus.GaugeValue, single, fs.Source, fs.Target)
		if !fs.LastHeartbeat.IsZero() {
			ch <- prometheus.MustNewConstMetric(descHBAge, prometheus.GaugeValue, time.Since(fs.LastHeartbeat).Seconds(), fs.Source, fs.Target)
		}
		for _, p := range fs.Partitions {
			part := strconv.Itoa(int(p.Partition))
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(p.Lag), fs.Source, fs.Target, p.Topic, part)
			ch <- prometheus.MustNewConstMetric(descEnd, prometheus.GaugeValue, float64(p.SourceEnd), fs.Source, fs.Target, p.Topic, part)
			ch <- prometheus.MustNewConstMetric(descRep, prometheus.GaugeValue, float64(p.Replicated), fs.Source, fs.Target, p.Topic, part)
			failed := 0.0
			if p.State == StateFailed {
				failed = 1
			}
			ch <- prometheus.MustNewConstMetric(descPartFailed, prometheus.GaugeValue, failed, fs.Source, fs.Target, p.Topic, part)
			if !p.OpenTransactionSince.IsZero() {
				ch <- prometheus.MustNewConstMetric(descOpenTxn, prometheus.GaugeValue, time.Since(p.OpenTransactionSince).Seconds(), fs.Source, fs.Target, p.Topic, part)
			}
		}
		counts := map[string]int{}
		for _, g := range fs.Groups {
			counts[g.State]++
		}
		for st, n := range counts {
			ch <- prometheus.MustNewConstMetric(descGroups, prometheus.GaugeValue, float64(n), fs.Source, fs.Target, st)
		}
	}
}
