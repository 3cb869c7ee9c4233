package main

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// clientMetrics exports franz-go client metrics (plugin/kprom) per cluster
// alias: kmirror_client_*{cluster="<alias>",node_id="..."}.
//
// kprom.Metrics is built for one client: each OnNewClient creates (and
// registers) a fresh set of series. The engine creates several clients per
// cluster (admin, consumer, producers of each flow) from the same
// ClusterConfig options, and kgo hooks are not told which client calls
// them, so one kprom.Metrics per alias is shared by all its clients
// through [clusterHook]: the series are created once, on the first
// client, and every client of the cluster adds to them. The result is a
// per-cluster aggregate (connections, bytes, requests per broker). kprom's
// buffered_* gauges read one client's buffer and would be wrong for the
// aggregate, so they are not exported; the engine's own metrics cover
// buffering per flow.
type clientMetrics struct {
	reg   prometheus.Registerer
	mu    sync.Mutex
	hooks map[string]*clusterHook
}

func newClientMetrics(reg prometheus.Registerer) *clientMetrics {
	return &clientMetrics{reg: reg, hooks: map[string]*clusterHook{}}
}

// hook returns the hook of alias, registering its collector on first use.
func (c *clientMetrics) hook(alias string) *clusterHook {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.hooks[alias]; ok {
		return h
	}
	h := &clusterHook{m: kprom.NewMetrics("kmirror", kprom.Subsystem("client"), kprom.Registry(nil),
		kprom.WithStaticLabel(prometheus.Labels{"cluster": alias}),
		// Per broker, not per topic: per-topic throughput is in the
		// engine's kmirror_replication_* series, and topic × broker
		// series would grow with the topic count.
		kprom.FetchAndProduceDetail(kprom.ByNode, kprom.UncompressedBytes, kprom.CompressedBytes, kprom.Records, kprom.Batches, kprom.ConsistentNaming),
		kprom.Histograms(kprom.RequestDurationE2E, kprom.RequestThrottled))}
	c.hooks[alias] = h
	c.reg.MustRegister((*clusterCollector)(h))
	return h
}

// kpromNotExported are the kprom metrics /metrics never shows: the
// buffered_* gauges, filtered out by clusterCollector (see clientMetrics),
// and the histograms kprom creates but records into only when enabled.
var kpromNotExported = []string{
	"kmirror_client_buffered_produce_records_total", "kmirror_client_buffered_produce_bytes",
	"kmirror_client_buffered_fetch_records_total", "kmirror_client_buffered_fetch_bytes",
	"kmirror_client_read_wait_seconds", "kmirror_client_read_time_seconds",
	"kmirror_client_write_wait_seconds", "kmirror_client_write_time_seconds",
}

// clusterHook forwards kgo hooks of every client of one cluster to one
// kprom.Metrics, initialized by the first client.
type clusterHook struct {
	once  sync.Once
	ready atomic.Bool // the series exist (set after the first OnNewClient)
	m     *kprom.Metrics
}

var (
	_ kgo.HookNewClient           = (*clusterHook)(nil)
	_ kgo.HookClientClosed        = (*clusterHook)(nil)
	_ kgo.HookBrokerConnect       = (*clusterHook)(nil)
	_ kgo.HookBrokerDisconnect    = (*clusterHook)(nil)
	_ kgo.HookBrokerWrite         = (*clusterHook)(nil)
	_ kgo.HookBrokerRead          = (*clusterHook)(nil)
	_ kgo.HookBrokerE2E           = (*clusterHook)(nil)
	_ kgo.HookBrokerThrottle      = (*clusterHook)(nil)
	_ kgo.HookProduceBatchWritten = (*clusterHook)(nil)
	_ kgo.HookFetchBatchRead      = (*clusterHook)(nil)
)

// OnNewClient creates the series on the first client. kgo calls it before
// the client does any I/O, and later clients wait in once.Do until the
// series exist, so no other hook runs before.
func (h *clusterHook) OnNewClient(cl *kgo.Client) {
	h.once.Do(func() {
		h.m.OnNewClient(cl)
		h.ready.Store(true)
	})
}

// OnClientClosed keeps the series: other clients of the cluster still use
// them (kprom would drop them all).
func (h *clusterHook) OnClientClosed(*kgo.Client) {}

func (h *clusterHook) OnBrokerConnect(meta kgo.BrokerMetadata, d time.Duration, c net.Conn, err error) {
	h.m.OnBrokerConnect(meta, d, c, err)
}

func (h *clusterHook) OnBrokerDisconnect(meta kgo.BrokerMetadata, c net.Conn) {
	h.m.OnBrokerDisconnect(meta, c)
}

func (h *clusterHook) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, n int, wait, write time.Duration, err error) {
	h.m.OnBrokerWrite(meta, key, n, wait, write, err)
}

func (h *clusterHook) OnBrokerRead(meta kgo.BrokerMetadata, key int16, n int, wait, read time.Duration, err error) {
	h.m.OnBrokerRead(meta, key, n, wait, read, err)
}

func (h *clusterHook) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	h.m.OnBrokerE2E(meta, key, e2e)
}

func (h *clusterHook) OnBrokerThrottle(meta kgo.BrokerMetadata, d time.Duration, after bool) {
	h.m.OnBrokerThrottle(meta, d, after)
}

func (h *clusterHook) OnProduceBatchWritten(meta kgo.BrokerMetadata, topic string, partition int32, pm kgo.ProduceBatchMetrics) {
	h.m.OnProduceBatchWritten(meta, topic, partition, pm)
}

func (h *clusterHook) OnFetchBatchRead(meta kgo.BrokerMetadata, topic string, partition int32, fm kgo.FetchBatchMetrics) {
	h.m.OnFetchBatchRead(meta, topic, partition, fm)
}

// clusterCollector exports a clusterHook's series without kprom's
// buffered_* gauges. It describes nothing (an unchecked collector): the
// series exist only once a client was created.
type clusterCollector clusterHook

func (c *clusterCollector) Describe(chan<- *prometheus.Desc) {}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.ready.Load() {
		return
	}
	all := make(chan prometheus.Metric)
	go func() {
		c.m.Collect(all)
		close(all)
	}()
	for m := range all {
		if strings.Contains(m.Desc().String(), `"kmirror_client_buffered_`) {
			continue
		}
		ch <- m
	}
}
