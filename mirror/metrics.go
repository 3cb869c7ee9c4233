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
	tasks    *taskMetricVecs          // checkpoint task series (tasks.go)
	mirror   *Mirror
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
			Help: "Value bytes of replicated records per remote topic-partition (MM2 byte-count; rate() gives byte-rate)."}, pl),
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
	}
	r.MustRegister(m.records, m.bytes, m.age, m.latency, m.gaps, m.flowErrs, m.syncs, m.commits, (*stateCollector)(m))
	m.tasks = newTaskMetricVecs(r)
	return m
}

func (m *metrics) forPartition(p *partState) *partMetrics {
	if m == nil {
		return nil
	}
	src, dst, part := p.f.cfg.Source, p.f.cfg.Target, strconv.Itoa(int(p.partition))
	return &partMetrics{
		records: m.records.WithLabelValues(src, dst, p.remote, part),
		bytes:   m.bytes.WithLabelValues(src, dst, p.remote, part),
		age:     m.age.WithLabelValues(src, dst, p.remote, part),
		latency: m.latency.WithLabelValues(src, dst, p.remote),
	}
}

func (m *metrics) acked(p *partState, valueBytes int, ts time.Time) {
	if m == nil || p.pm == nil {
		return
	}
	p.pm.records.Inc()
	p.pm.bytes.Add(float64(valueBytes))
	if !ts.IsZero() {
		p.pm.latency.Observe(time.Since(ts).Seconds())
	}
}

func (m *metrics) polled(p *partState, r *kgo.Record) {
	if m == nil || p.pm == nil || r.Timestamp.IsZero() {
		return
	}
	p.pm.age.Set(time.Since(r.Timestamp).Seconds())
}

func (m *metrics) gap(p *partState, lost int64) {
	if m == nil {
		return
	}
	m.gaps.WithLabelValues(p.f.cfg.Source, p.f.cfg.Target, p.topic, strconv.Itoa(int(p.partition))).Add(float64(lost))
}

func (m *metrics) flowErr(f *flow, kind string) {
	if m == nil {
		return
	}
	m.flowErrs.WithLabelValues(f.cfg.Source, f.cfg.Target, kind).Inc()
}

func (m *metrics) fetchError(f *flow)      { m.flowErr(f, "fetch") }
func (m *metrics) commitError(f *flow)     { m.flowErr(f, "resume_commit") }
func (m *metrics) offsetSyncError(f *flow) { m.flowErr(f, "offset_sync") }
func (m *metrics) partitionFailed(f *flow) { m.flowErr(f, "partition_failed") }

func (m *metrics) offsetSync(f *flow) {
	if m == nil {
		return
	}
	m.syncs.WithLabelValues(f.cfg.Source, f.cfg.Target).Inc()
}

func (m *metrics) committed(f *flow, _ int, d time.Duration) {
	if m == nil {
		return
	}
	m.commits.WithLabelValues(f.cfg.Source, f.cfg.Target).Observe(d.Seconds())
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
	descFlowState = prometheus.NewDesc("kmirror_flow_state",
		"1 for the flow's current state (RUNNING, RETRYING, FAILED, ...).", []string{"source", "target", "state"}, nil)
	descHBAge = prometheus.NewDesc("kmirror_heartbeat_age_seconds",
		"Seconds since the flow last wrote a heartbeat.", []string{"source", "target"}, nil)
	descGroups = prometheus.NewDesc("kmirror_group_sync_groups",
		"Consumer groups per checkpoint/offset-sync state.", []string{"source", "target", "state"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descEnd, descRep, descPartFailed, descFlowState, descHBAge, descGroups} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if c.mirror == nil {
		return
	}
	for _, fs := range c.mirror.Status().Flows {
		ch <- prometheus.MustNewConstMetric(descFlowState, prometheus.GaugeValue, 1, fs.Source, fs.Target, string(fs.State))
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
