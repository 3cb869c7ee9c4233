package mirror

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// recMetrics is a Metrics that records every call, for tests.
type recMetrics struct {
	initErr error

	mu    sync.Mutex
	inits []*Mirror
	flows map[string]*recFlow // by "source->target"
}

func (r *recMetrics) Init(m *Mirror) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inits = append(r.inits, m)
	return r.initErr
}

func (r *recMetrics) Flow(source, target string) FlowMetrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flows == nil {
		r.flows = map[string]*recFlow{}
	}
	f := &recFlow{parts: map[string]*recPart{}, errs: map[string]int{}}
	r.flows[source+"->"+target] = f
	return f
}

func (r *recMetrics) flow(name string) *recFlow {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flows[name]
}

type recFlow struct {
	syncs, stores, provSkipped atomic.Int64

	mu          sync.Mutex
	parts       map[string]*recPart // by "remote/partition"
	partCalls   int
	cps         []*recCheckpoints
	errs        map[string]int
	gaps        map[string]int64
	rebalances  int
	rebalanceAt time.Duration
}

func (f *recFlow) Partition(remote string, partition int32) PartitionMetrics {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partCalls++
	k := remote + "/" + strconv.Itoa(int(partition))
	if f.parts[k] == nil {
		f.parts[k] = &recPart{}
	}
	return f.parts[k]
}

func (f *recFlow) Checkpoints() CheckpointMetrics {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &recCheckpoints{}
	f.cps = append(f.cps, c)
	return c
}

func (f *recFlow) SourceGap(topic string, partition int32, lost int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gaps == nil {
		f.gaps = map[string]int64{}
	}
	f.gaps[topic+"/"+strconv.Itoa(int(partition))] += lost
}

func (f *recFlow) Error(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[kind]++
}

func (f *recFlow) OffsetSyncWritten()                 { f.syncs.Add(1) }
func (f *recFlow) ResumePointsStored(d time.Duration) { f.stores.Add(1) }
func (f *recFlow) ProvenanceSkipped(n int)            { f.provSkipped.Add(int64(n)) }

func (f *recFlow) Rebalanced(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rebalances++
	f.rebalanceAt += d
}

// snapshot returns per remote topic-partition the records and bytes
// acknowledged and the records fetched.
func (f *recFlow) snapshot() map[string][3]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][3]int64{}
	for k, p := range f.parts {
		out[k] = [3]int64{p.acked.Load(), p.bytes.Load(), p.fetched.Load()}
	}
	return out
}

type recPart struct {
	acked, bytes, fetched, noTimestamp atomic.Int64
}

func (p *recPart) Fetched(ts time.Time) {
	p.fetched.Add(1)
	if ts.IsZero() {
		p.noTimestamp.Add(1)
	}
}

func (p *recPart) Acked(n int64, ts time.Time) {
	p.acked.Add(1)
	p.bytes.Add(n)
}

type recCheckpoints struct {
	latencies, checkpoints, commits atomic.Int64
}

func (c *recCheckpoints) CheckpointLatency(time.Duration) { c.latencies.Add(1) }
func (c *recCheckpoints) CheckpointsWritten(n int)        { c.checkpoints.Add(int64(n)) }
func (c *recCheckpoints) GroupOffsetsSynced(n int)        { c.commits.Add(int64(n)) }

func (c *recFlow) checkpointTotals() (latencies, checkpoints, commits int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cp := range c.cps {
		latencies += cp.latencies.Load()
		checkpoints += cp.checkpoints.Load()
		commits += cp.commits.Load()
	}
	return
}

// TestMetricsReportsEvents replicates a known workload with a recording
// Metrics: Init receives the Mirror once, after Flow for each flow; every
// remote partition's recorder sees exactly the records and payload bytes
// of its source partition, fetched and acknowledged; offset syncs and
// resume-point stores are reported; the checkpoint recorder sees one
// latency per checkpoint written and the offsets group sync committed.
func TestMetricsReportsEvents(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 3, nil)
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	in := workload(orders, 3, 40, base)
	testcluster.Produce(t, &p.Source, in...)
	want := map[string][3]int64{}
	remote := p.Source.Alias + "." + orders
	for _, r := range in {
		k := remote + "/" + strconv.Itoa(int(r.Partition))
		w := want[k]
		size := int64(len(r.Key) + len(r.Value))
		for _, h := range r.Headers {
			size += int64(len(h.Key) + len(h.Value))
		}
		want[k] = [3]int64{w[0] + 1, w[1] + size, w[2] + 1}
	}
	groups := []string{p.Group("m1"), p.Group("m2"), p.Group("m3")}
	for _, g := range groups {
		trCommit(t, &p.Source, g, orders, map[int32]int64{0: 40, 1: 40, 2: 40})
	}

	rec := &recMetrics{}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(trFlow(p)), WithMetrics(rec))...)
	rec.mu.Lock()
	if len(rec.inits) != 1 || rec.inits[0] != m {
		t.Fatalf("Init calls %v, want one with the Mirror New returned (%p)", rec.inits, m)
	}
	rec.mu.Unlock()
	f := rec.flow(p.Source.Alias + "->" + p.Target.Alias)
	if f == nil {
		t.Fatalf("Flow was not called for the flow; flows %v", rec.flows)
	}
	waitReplicated(t, m, int64(len(in)))
	testcluster.Eventually(t, 30*time.Second, "records, bytes and checkpoints reported", func() (bool, string) {
		got := f.snapshot()
		lat, cps, commits := f.checkpointTotals()
		ok := fmt.Sprint(got) == fmt.Sprint(want) && cps >= int64(len(groups)) && commits >= int64(3*len(groups)) &&
			lat == cps && f.syncs.Load() > 0 && f.stores.Load() > 0
		return ok, fmt.Sprintf("partitions %v (want %v), checkpoint latencies %d, checkpoints %d, group offsets synced %d, offset syncs %d, resume stores %d",
			got, want, lat, cps, commits, f.syncs.Load(), f.stores.Load())
	})
	st := m.Status().Flows[0]
	var records, bytes int64
	for _, s := range f.snapshot() {
		records += s[0]
		bytes += s[1]
	}
	if records != st.Records || bytes != st.Bytes {
		t.Errorf("metrics count %d records / %d bytes, Status %d / %d", records, bytes, st.Records, st.Bytes)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cps) != 1 {
		t.Errorf("Checkpoints called %d times, want once (one emitter start)", len(f.cps))
	}
	if f.partCalls != 3 {
		t.Errorf("Partition called %d times, want 3 (one per partition started)", f.partCalls)
	}
	for k, p := range f.parts {
		if n := p.noTimestamp.Load(); n != 0 {
			t.Errorf("%s: Fetched got %d zero timestamps", k, n)
		}
	}
}

// TestMetricsInitError: an error from Init fails New, wrapped.
func TestMetricsInitError(t *testing.T) {
	t.Parallel()
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	boom := errors.New("already registered")
	rec := &recMetrics{initErr: boom}
	_, err := newMirror(t, WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithCluster(ClusterConfig{Alias: "b", Client: seeds}),
		WithFlow(FlowConfig{Source: "a", Target: "b"}), WithMetrics(rec))
	if !errors.Is(err, boom) {
		t.Fatalf("New: %v, want an error wrapping %v", err, boom)
	}
	// A configuration error is reported before Init is called.
	rec = &recMetrics{}
	if _, err := newMirror(t, WithCluster(ClusterConfig{Alias: "a", Client: seeds}), WithFlow(FlowConfig{Source: "a", Target: "b"}),
		WithMetrics(rec)); err == nil {
		t.Fatal("New accepted a flow to an unknown cluster")
	}
	if len(rec.inits) != 0 {
		t.Errorf("Init called %d times for a failed New", len(rec.inits))
	}
}
