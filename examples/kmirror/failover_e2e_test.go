package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// drWorld is two embedded clusters for the DR tests: A (the source, on a
// fixed port with its log on disk, so that it can die and come back with
// its data) and B (the target), and the MM2 file of the flows A->B and
// B->A.
type drWorld struct {
	t        *testing.T
	aOpts    []kfake.Opt
	a, b     *kfake.Cluster
	aAddrs   []string
	bAddrs   []string
	props    string
	topic    string // "orders" on A (and B's own during the outage)
	remote   string // "A.orders" on B
	back     string // "B.orders" on A
	group    string
	parts    int32
	mu       sync.Mutex
	produced map[string][]int // id lists by "cluster/topic/partition"
	// killA stops A keeping its data (kfake: Close; real Kafka: kafka.sh
	// kill source KILL); restartA starts it again on the same address.
	killA, restartA func()
}

// realKafka points the world at the real clusters of the environment
// (KMIRROR_SOURCE_BROKERS is A, KMIRROR_TARGET_BROKERS is B, started by
// internal/realkafka/kafka.sh with its KMIRROR_* variables, which the kill
// and start of A reuse). The clusters must be fresh: the test uses fixed
// topic and group names.
func (w *drWorld) realKafka(t *testing.T) {
	src, dst, ok := testcluster.RealBrokers()
	if !ok {
		t.Skip("KMIRROR_DR_REAL=1 needs KMIRROR_SOURCE_BROKERS and KMIRROR_TARGET_BROKERS")
	}
	w.aAddrs, w.bAddrs = src, dst
	sh := func(args ...string) {
		out, err := exec.Command("bash", append([]string{"../../internal/realkafka/kafka.sh"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kafka.sh %v: %v\n%s", args, err, out)
		}
	}
	w.killA = func() { sh("kill", "source", "KILL") }
	w.restartA = func() { sh("start", "source") }
}

// createTopic creates topic with w.parts partitions on the cluster at addrs.
func (w *drWorld) createTopic(addrs []string, topic string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(w.client(addrs)).CreateTopic(ctx, w.parts, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		w.t.Fatalf("creating %s: %v", topic, err)
	}
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func newDRWorld(t *testing.T, extra string) *drWorld {
	t.Helper()
	w := &drWorld{t: t, topic: "orders", remote: "A.orders", back: "B.orders", group: "orders-consumer", parts: 3,
		produced: map[string][]int{}}
	if os.Getenv("KMIRROR_DR_REAL") == "1" {
		w.realKafka(t)
	} else {
		w.aOpts = []kfake.Opt{kfake.ClusterID("A"), kfake.NumBrokers(1), kfake.Ports(freeLoopbackPort(t)),
			kfake.DataDir(filepath.Join(t.TempDir(), "A")), kfake.GroupMinSessionTimeout(time.Second)}
		var err error
		if w.a, err = kfake.NewCluster(w.aOpts...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.a.Close() })
		if w.b, err = kfake.NewCluster(kfake.ClusterID("B"), kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.b.Close)
		w.aAddrs, w.bAddrs = w.a.ListenAddrs(), w.b.ListenAddrs()
		w.killA = func() { w.a.Close() }
		w.restartA = func() {
			if w.a, err = kfake.NewCluster(w.aOpts...); err != nil {
				t.Fatalf("restarting A: %v", err)
			}
		}
	}
	w.createTopic(w.aAddrs, w.topic)
	w.createTopic(w.bAddrs, w.topic)
	w.props = filepath.Join(t.TempDir(), "mm2.properties")
	body := fmt.Sprintf(`clusters = A, B
A.bootstrap.servers = %s
B.bootstrap.servers = %s
A->B.enabled = true
A->B.topics = orders
B->A.enabled = true
B->A.topics = orders
tasks.max = 1
replication.factor = 1
emit.checkpoints.interval.seconds = 1
refresh.groups.interval.seconds = 1
refresh.topics.interval.seconds = 1
emit.heartbeats.interval.seconds = 1
B.offset.flush.interval.ms = 200
%s`, strings.Join(w.aAddrs, ","), strings.Join(w.bAddrs, ","), extra)
	if err := os.WriteFile(w.props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// client returns a client of addrs closed at the end of the test.
func (w *drWorld) client(addrs []string, opts ...kgo.Opt) *kgo.Client {
	w.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(cl.Close)
	return cl
}

// produce writes n records numbered from the next id to each partition
// of topic on the cluster at addrs; their values are "<id>".
func (w *drWorld) produce(addrs []string, cluster, topic string, n int) {
	w.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		w.t.Fatal(err)
	}
	defer cl.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	var recs []*kgo.Record
	for p := range w.parts {
		key := fmt.Sprintf("%s/%s/%d", cluster, topic, p)
		for range n {
			id := 0
			for _, ids := range w.produced {
				id += len(ids)
			}
			w.produced[key] = append(w.produced[key], id)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(strconv.Itoa(id))})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		w.t.Fatalf("producing to %s on %s: %v", topic, cluster, err)
	}
}

// allProduced returns every id produced.
func (w *drWorld) allProduced() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int
	for _, ids := range w.produced {
		out = append(out, ids...)
	}
	slices.Sort(out)
	return out
}

// read is one record a consumer processed.
type read struct {
	cluster, topic string
	partition      int32
	offset         int64
	id             int
}

// consumeManual reads partitions of topic on A from the group's committed
// offsets (or the start) without joining the group, processes (records)
// every record below upTo[p], and commits commitAt[p] for the group: a
// consumer that processed more than it committed, and never touched the
// other partitions.
func (w *drWorld) consumeManual(addrs []string, cluster, topic string, upTo, commitAt map[int32]int64) []read {
	w.t.Helper()
	parts := map[int32]kgo.Offset{}
	for p := range upTo {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl := w.client(addrs, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []read
	done := map[int32]bool{}
	for len(done) < len(upTo) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			w.t.Fatalf("reading %s on %s: %v (done %v)", topic, cluster, ctx.Err(), done)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= upTo[r.Partition] {
				done[r.Partition] = true
				return
			}
			id, _ := strconv.Atoi(string(r.Value))
			out = append(out, read{cluster, topic, r.Partition, r.Offset, id})
			if r.Offset == upTo[r.Partition]-1 {
				done[r.Partition] = true
			}
		})
	}
	offs := kadm.Offsets{}
	for p, at := range commitAt {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, w.group, offs); err != nil {
		w.t.Fatalf("committing %v for %s on %s: %v", commitAt, w.group, cluster, err)
	}
	return out
}

// groupConsumer is the group's consumer as an application runs it: a
// member of the group, auto.offset.reset=none, autocommit.
type groupConsumer struct {
	mu      sync.Mutex
	reads   []read
	first   time.Time
	err     error
	cancel  context.CancelFunc
	done    chan struct{}
	cluster string
}

func (w *drWorld) startGroupConsumer(addrs []string, cluster string, topics ...string) *groupConsumer {
	w.t.Helper()
	c := &groupConsumer{done: make(chan struct{}), cluster: cluster}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(w.group), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()), kgo.AutoCommitInterval(100*time.Millisecond),
		kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond))
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		defer cl.Close() // leaves the group, after the final autocommit
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(t string, p int32, err error) {
				if ctx.Err() == nil {
					c.mu.Lock()
					c.err = fmt.Errorf("%s[%d]: %w", t, p, err)
					c.mu.Unlock()
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				id, _ := strconv.Atoi(string(r.Value))
				c.mu.Lock()
				if c.first.IsZero() {
					c.first = time.Now()
				}
				c.reads = append(c.reads, read{cluster, r.Topic, r.Partition, r.Offset, id})
				c.mu.Unlock()
			})
		}
	}()
	w.t.Cleanup(c.stop)
	return c
}

func (c *groupConsumer) stop() {
	c.cancel()
	<-c.done
}

func (c *groupConsumer) snapshot() ([]read, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]read(nil), c.reads...), c.first, c.err
}

// runDR runs a DR subcommand in-process and returns its exit code, stdout,
// stderr and duration.
func runDR(t *testing.T, main func(context.Context, []string, io.Writer, io.Writer) int, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	code := main(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String(), time.Since(start)
}

// committed returns group's committed offsets on the cluster at addrs.
func (w *drWorld) committed(addrs []string) map[string]map[int32]int64 {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]map[int32]int64{}
	resp, err := kadm.NewClient(w.client(addrs)).FetchOffsets(ctx, w.group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return out // kfake: a group never committed; Kafka answers no offsets
	}
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			if out[o.Topic] == nil {
				out[o.Topic] = map[int32]int64{}
			}
			out[o.Topic][o.Partition] = o.At
		}
	})
	return out
}

func decodeFailover(t *testing.T, out string) failoverReport {
	t.Helper()
	var rep failoverReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("failover -json output does not parse: %v\n%s", err, out)
	}
	return rep
}

// statusGroup returns the group's status in /status of the runner at base.
func statusGroup(t *testing.T, base, flow, group string) (gs struct {
	SafeToSwitch      bool      `json:"safe_to_switch"`
	SourceUnreachable bool      `json:"source_unreachable"`
	LastCheckpoint    time.Time `json:"last_checkpoint"`
	CheckpointExact   bool      `json:"checkpoint_exact"`
	Reason            string    `json:"reason"`
}, ok bool) {
	t.Helper()
	var doc struct {
		Flows []struct {
			Name   string            `json:"name"`
			Groups []json.RawMessage `json:"groups"`
		} `json:"flows"`
	}
	code, body := get(t, base+"/status")
	if code != 200 || json.Unmarshal(body, &doc) != nil {
		return gs, false
	}
	for _, f := range doc.Flows {
		if f.Name != flow {
			continue
		}
		for _, raw := range f.Groups {
			var g struct {
				Group string `json:"group"`
			}
			if json.Unmarshal(raw, &g) == nil && g.Group == group {
				return gs, json.Unmarshal(raw, &gs) == nil
			}
		}
	}
	return gs, false
}

// groupsLeftOut checks ?groups=false on the three documents that carry a
// flow's per-group detail: each names group without it and leaves the
// detail out with it (a breaker's find: /connectors?expand=status and
// /connectors/{flow}/status ignored it, and carried every group's
// partitions, large with thousands of groups).
func groupsLeftOut(t *testing.T, base, flow, group string) {
	t.Helper()
	esc := url.PathEscape(flow)
	for _, path := range []string{"/status", "/connectors?expand=status", "/connectors/" + esc + "/status"} {
		for _, off := range []bool{false, true} {
			u := base + path
			if off {
				u += map[bool]string{true: "&", false: "?"}[strings.Contains(path, "?")] + "groups=false"
			}
			code, body := get(t, u)
			if got := strings.Contains(string(body), `"group": "`+group+`"`); code != 200 || got == off {
				t.Errorf("GET %s: HTTP %d, names group %s: %t, want %t\n%s", u, code, group, got, !off, body)
			}
		}
	}
}

// TestFailoverAndFailbackEndToEnd is the runbook on embedded
// clusters with the runner: a consumer group committed partitions 0 and 1
// of orders on A (and processed 10 records of partition 0 after its last
// commit) and never partition 2; A dies; failover without -uncommitted
// refuses and commits nothing; with -uncommitted earliest it moves the
// group; the group's consumer resumes on B with auto.offset.reset=none and
// reads every record, re-reading exactly the 10 records processed after
// the checkpointed commit (the report predicts 0 re-reads from the
// translation: exact). Then A comes back with records written to it after
// replication stopped; failback moves the group home, the consumer reads
// the rest: 0 lost, and the outage records are reported per partition.
func TestFailoverAndFailbackEndToEnd(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 100) // ids 0-299, 100 per partition
	before := w.consumeManual(w.aAddrs, "A", w.topic, map[int32]int64{0: 60, 1: 100}, map[int32]int64{0: 50, 1: 100})

	base, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-clusters", "B", "-log-level", "info")
	flow := "A->B"
	var tr translateReport
	eventually(t, "exact checkpoints at the group's commits", func() string {
		code, out, errOut, _ := runDR(t, translateMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-json")
		if code != drRefused { // partition 2 is never committed: exit 1
			return fmt.Sprintf("exit %d: %s %s", code, out, errOut)
		}
		tr = translateReport{}
		if err := json.Unmarshal([]byte(out), &tr); err != nil {
			return err.Error()
		}
		if len(tr.Groups) != 1 || len(tr.Groups[0].Partitions) != 3 {
			return out
		}
		ps := tr.Groups[0].Partitions
		if ps[0].SourceOffset != 50 || ps[0].Offset != 50 || ps[0].Translation != "exact" ||
			ps[1].SourceOffset != 100 || ps[1].Offset != 100 || ps[1].Translation != "exact" || !ps[2].NeverCommitted {
			return out
		}
		return ""
	})
	if s := tr.Summary; s.Exact != 2 || s.NeverCommitted != 1 || s.Partitions != 3 {
		t.Errorf("translate summary %+v, want 2 exact and 1 never committed of 3", s)
	}
	gs, ok := statusGroup(t, base, flow, w.group)
	if !ok || !gs.CheckpointExact || gs.LastCheckpoint.IsZero() || gs.SourceUnreachable {
		t.Errorf("status before the failure: %+v (found %t), want checkpoint_exact, a last_checkpoint, source reachable", gs, ok)
	}
	groupsLeftOut(t, base, flow, w.group)

	// A dies.
	w.killA()
	failedAt := time.Now()
	eventually(t, "status: source unreachable", func() string {
		gs, ok := statusGroup(t, base, flow, w.group)
		if !ok || !gs.SourceUnreachable || !gs.CheckpointExact || gs.SafeToSwitch || gs.LastCheckpoint.IsZero() {
			return fmt.Sprintf("%+v (found %t)\nlog:\n%s", gs, ok, runnerLog)
		}
		return ""
	})
	t.Logf("status says the source is unreachable %v after the failure", time.Since(failedAt).Round(time.Millisecond))

	// Without -uncommitted: refused, nothing committed.
	code, out, errOut, took := runDR(t, failoverMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-source-timeout", "1s", "-json")
	if code != drRefused {
		t.Fatalf("failover without -uncommitted: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	rep := decodeFailover(t, out)
	if rep.Mode != modeUnplanned || rep.TargetState != "" || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "A.orders[2]") {
		t.Errorf("refused failover report: mode %s, state %q, problems %q", rep.Mode, rep.TargetState, rep.Problems)
	}
	if got := w.committed(w.bAddrs); len(got) != 0 {
		t.Fatalf("refused failover committed %v on B", got)
	}
	t.Logf("failover without -uncommitted refused in %v", took.Round(time.Millisecond))

	// With -uncommitted earliest.
	code, out, errOut, took = runDR(t, failoverMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-source-timeout", "1s",
		"-uncommitted", "earliest", "-json")
	if code != drOK {
		t.Fatalf("failover -uncommitted earliest: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	rep = decodeFailover(t, out)
	failoverTook := took
	if len(rep.Groups) != 1 || rep.Groups[0].Action != actionCommitted || rep.TargetState != "STOPPED" || rep.Groups[0].RPOMs <= 0 {
		t.Fatalf("failover report: %s", out)
	}
	wantParts := []struct {
		offset      int64
		from, trans string
	}{{50, "checkpoint", "exact"}, {100, "checkpoint", "exact"}, {0, "earliest", "none"}}
	predicted := int64(0)
	for i, p := range rep.Groups[0].Partitions {
		if w := wantParts[i]; p.Offset != w.offset || p.From != w.from || p.Translation != w.trans {
			t.Errorf("partition %d: %+v, want offset %d from %s, %s", i, p, w.offset, w.from, w.trans)
		}
		if p.From == "checkpoint" {
			predicted += p.RereadMax
		}
	}
	want := map[string]map[int32]int64{w.remote: {0: 50, 1: 100, 2: 0}}
	if got := w.committed(w.bAddrs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed on B: %v, want %v", got, want)
	}
	t.Logf("failover (unplanned, -source-timeout 1s) took %v: %+v", failoverTook.Round(time.Millisecond), rep.TimingsMs)

	// The runner stops promptly although A does not answer.
	stopAt := time.Now()
	stopRunner()
	if err := waitRunner(); err != nil {
		t.Errorf("runner: %v\n%s", err, runnerLog)
	}
	t.Logf("runner returned %v after SIGTERM with the source dead", time.Since(stopAt).Round(time.Millisecond))

	// The consumer on B, and the order service writing to B's own orders.
	// The group never committed on B's own orders (a topic the group has
	// no checkpoint on is invisible to failover): the operator commits its
	// start, else a consumer with auto.offset.reset=none never reads it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	start := kadm.Offsets{}
	for p := range w.parts {
		start.Add(kadm.Offset{Topic: w.topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(w.client(w.bAddrs)).CommitAllOffsets(ctx, w.group, start); err != nil {
		t.Fatal(err)
	}
	cancel()
	consumerStart := time.Now()
	onB := w.startGroupConsumer(w.bAddrs, "B", w.remote, w.topic)
	w.produce(w.bAddrs, "B", w.topic, 20)
	eventually(t, "the consumer on B read A.orders and orders", func() string {
		reads, _, err := onB.snapshot()
		if err != nil {
			t.Fatalf("consumer on B: %v", err)
		}
		seen := map[int]bool{}
		for _, r := range before {
			seen[r.id] = true
		}
		for _, r := range reads {
			seen[r.id] = true
		}
		if n := len(seen); n != len(w.allProduced()) {
			return fmt.Sprintf("%d of %d records read", n, len(w.allProduced()))
		}
		return ""
	})
	reads, first, _ := onB.snapshot()
	t.Logf("RTO: consumer's first record on B %v after it started (%v after the failure)", first.Sub(consumerStart).Round(time.Millisecond),
		first.Sub(failedAt).Round(time.Millisecond))
	processed := map[int]read{}
	for _, r := range before {
		processed[r.id] = r
	}
	var rereadTranslation, rereadLate int64
	for _, r := range reads {
		if b, ok := processed[r.id]; ok {
			if b.offset < map[int32]int64{0: 50, 1: 100}[b.partition] {
				rereadTranslation++ // before the checkpointed commit
			} else {
				rereadLate++ // processed after the last checkpointed commit
			}
		}
	}
	if rereadTranslation != predicted || rereadLate != 10 {
		t.Errorf("re-read %d records before the checkpointed commits (predicted %d) and %d after them (want 10)", rereadTranslation, predicted, rereadLate)
	}
	onB.stop()
	onBCommitted := w.committed(w.bAddrs)

	// A comes back with its data, and 15 records per partition written to
	// it after the replication stopped (never on B).
	w.restartA()
	w.produce(w.aAddrs, "A", w.topic, 15)

	// failback refuses while the reverse flow does not run.
	code, out, errOut, _ = runDR(t, failbackMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "0s", "-json")
	if code != drRefused || !strings.Contains(out, "no live member") {
		t.Fatalf("failback without the reverse flow running: exit %d, want 1 (no live member)\n%s\n%s", code, out, errOut)
	}
	// The reverse flow B->A alone (A->B stays stopped: -clusters A).
	_, revLog, stopRev, waitRev := started(t, "-config", w.props, "-clusters", "A", "-log-level", "warn")
	var fb failbackReport
	var failbackTook time.Duration
	eventually(t, "failback", func() string {
		code, out, errOut, took := runDR(t, failbackMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-json")
		if code != drOK {
			return fmt.Sprintf("exit %d\n%s\n%s", code, out, errOut)
		}
		failbackTook = took
		fb = failbackReport{}
		if err := json.Unmarshal([]byte(out), &fb); err != nil {
			t.Fatalf("failback -json: %v\n%s", err, out)
		}
		return ""
	})
	t.Logf("failback took %v: %+v", failbackTook.Round(time.Millisecond), fb.TimingsMs)
	wantOutage := []outageRange{{"orders", 0, 100, 115, 15}, {"orders", 1, 100, 115, 15}, {"orders", 2, 100, 115, 15}}
	if fmt.Sprint(fb.Outage) != fmt.Sprint(wantOutage) || fb.OutageTotal != 45 || fb.TargetState != "RUNNING" {
		t.Errorf("failback outage %+v (total %d), state %q; want %+v", fb.Outage, fb.OutageTotal, fb.TargetState, wantOutage)
	}
	// The group's positions on A's topic translate back from the copies
	// themselves: each carries its source offset (tail resume's offset
	// element in the provenance header).
	for _, g := range fb.Groups {
		for _, p := range g.Partitions {
			if p.Topic == w.topic && (p.From != remoteclusterutils.KindRecord || p.Translation != string(remoteclusterutils.TranslationExact)) {
				t.Errorf("failback of %s[%d]: from %q, %s; want from the record, exact", p.Topic, p.Partition, p.From, p.Translation)
			}
		}
	}
	wantHome := map[string]map[int32]int64{w.topic: {0: 100, 1: 100, 2: 100}, w.back: {0: onBCommitted[w.topic][0], 1: onBCommitted[w.topic][1], 2: onBCommitted[w.topic][2]}}
	if got := w.committed(w.aAddrs); fmt.Sprint(got) != fmt.Sprint(wantHome) {
		t.Errorf("committed on A after failback: %v, want %v (B: %v)", got, wantHome, onBCommitted)
	}
	stopRev()
	if err := waitRev(); err != nil {
		t.Errorf("reverse runner: %v\n%s", err, revLog)
	}

	// The consumer at home: every record read, the outage records once.
	homeStart := time.Now()
	home := w.startGroupConsumer(w.aAddrs, "A", w.topic, w.back)
	var homeReads []read
	eventually(t, "the consumer at home read everything", func() string {
		r, _, err := home.snapshot()
		if err != nil {
			t.Fatalf("consumer on A: %v", err)
		}
		homeReads = r
		seen := map[int]bool{}
		for _, set := range [][]read{before, reads, r} {
			for _, x := range set {
				seen[x.id] = true
			}
		}
		var lost []int
		for _, id := range w.allProduced() {
			if !seen[id] {
				lost = append(lost, id)
			}
		}
		if len(lost) > 0 {
			return fmt.Sprintf("%d records not read yet: %v", len(lost), lost)
		}
		return ""
	})
	_, firstHome, _ := home.snapshot()
	home.stop()
	onBids := map[int]bool{}
	for _, r := range reads {
		onBids[r.id] = true
	}
	var again, outage int
	for _, r := range homeReads {
		if onBids[r.id] {
			again++
		}
		if r.topic == w.topic {
			outage++
		}
	}
	if again != 0 || outage != 45 {
		t.Errorf("at home: %d records read again (want 0), %d outage records read (want 45)", again, outage)
	}
	t.Logf("failback RTO: consumer's first record on A %v after it started", firstHome.Sub(homeStart).Round(time.Millisecond))
}

// TestPlannedFailover: the source answers. A group with a member on the
// source is refused; -dry-run changes nothing; a caught-up group (it
// processed exactly what it committed) is moved once its commits are
// checkpointed exactly, the flow is persisted STOPPED, and its consumer on
// the target re-reads 0 records and misses none.
func TestPlannedFailover(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 100)
	commitAt := map[int32]int64{0: 80, 1: 80, 2: 80}
	before := w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	defer func() {
		stopRunner()
		if err := waitRunner(); err != nil {
			t.Errorf("runner: %v\n%s", err, runnerLog)
		}
	}()
	flow := "A->B"
	eventually(t, "checkpoints of the group's commits", func() string {
		code, out, errOut, _ := runDR(t, translateMain, "-config", w.props, "-flow", flow, "-groups", w.group)
		if code != drOK {
			return fmt.Sprintf("exit %d: %s %s", code, out, errOut)
		}
		return ""
	})

	// A member of the group on the source: refused, nothing changed.
	w.createTopic(w.aAddrs, "other") // not replicated: orders only
	member := w.startGroupConsumer(w.aAddrs, "A", "other")
	eventually(t, "the group has a member on A", func() string {
		n, err := groupMembers(context.Background(), kadm.NewClient(w.client(w.aAddrs)), []string{w.group})
		if err != nil || n[w.group] == 0 {
			return fmt.Sprint(n, err)
		}
		return ""
	})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-json")
	if rep := decodeFailover(t, out); code != drRefused || rep.Mode != modePlanned || len(rep.Problems) != 1 ||
		!strings.Contains(rep.Problems[0], "member(s) still on the source") || rep.TargetState != "" {
		t.Fatalf("failover with a member on the source: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	member.stop()
	eventually(t, "the group has no member on A", func() string {
		n, err := groupMembers(context.Background(), kadm.NewClient(w.client(w.aAddrs)), []string{w.group})
		if err != nil || n[w.group] != 0 {
			return fmt.Sprint(n, err)
		}
		return ""
	})

	// -dry-run: the plan, nothing written.
	eventually(t, "dry run with every partition checkpointed", func() string {
		code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-dry-run", "-json")
		if code != drOK {
			return fmt.Sprintf("exit %d\n%s\n%s", code, out, errOut)
		}
		return ""
	})
	st, found, err := statustopic.ReadTargetState(context.Background(), []kgo.Opt{kgo.SeedBrokers(w.bAddrs...)}, "A")
	if err != nil || found {
		t.Fatalf("after -dry-run the target state is %+v (found %t, %v), want none", st, found, err)
	}
	if got := w.committed(w.bAddrs); len(got) != 0 {
		t.Fatalf("-dry-run committed %v on B", got)
	}

	code, out, errOut, took := runDR(t, failoverMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-json")
	if code != drOK {
		t.Fatalf("planned failover: exit %d\n%s\n%s", code, out, errOut)
	}
	rep := decodeFailover(t, out)
	t.Logf("planned failover took %v: %+v", took.Round(time.Millisecond), rep.TimingsMs)
	if rep.Mode != modePlanned || rep.TargetState != "STOPPED" || rep.Summary.Exact != 3 || rep.Groups[0].Action != actionCommitted {
		t.Fatalf("planned failover report:\n%s", out)
	}
	// The runner replicating A->B is the flow's one live member: it
	// applied the persisted STOPPED before the commit (seam 2).
	if rep.Members == nil || rep.Members.Live != 1 || rep.Members.Stopped != 1 {
		t.Errorf("members at the commit: %+v, want 1 live, 1 stopped", rep.Members)
	}
	for _, p := range rep.Groups[0].Partitions {
		if p.RereadMax != 0 || p.Offset != 80 || p.SourceOffset != 80 {
			t.Errorf("partition %+v: want 80 -> 80, re-read 0", p)
		}
	}
	st, found, err = statustopic.ReadTargetState(context.Background(), []kgo.Opt{kgo.SeedBrokers(w.bAddrs...)}, "A")
	if err != nil || !found || st.State != statustopic.Stopped || st.Flow != flow {
		t.Fatalf("target state after the failover: %+v (found %t, %v), want STOPPED", st, found, err)
	}

	onB := w.startGroupConsumer(w.bAddrs, "B", w.remote)
	eventually(t, "the consumer on B read the rest", func() string {
		r, _, err := onB.snapshot()
		if err != nil {
			t.Fatalf("consumer on B: %v", err)
		}
		if len(r) < 60 {
			return fmt.Sprintf("%d of 60 records", len(r))
		}
		return ""
	})
	time.Sleep(300 * time.Millisecond) // nothing more may come
	reads, _, _ := onB.snapshot()
	seen := map[int]bool{}
	for _, r := range before {
		seen[r.id] = true
	}
	again := 0
	for _, r := range reads {
		if seen[r.id] {
			again++
		}
		seen[r.id] = true
	}
	if again != 0 || len(seen) != 300 || len(reads) != 60 {
		t.Errorf("consumer on B: %d reads, %d re-read (want 0), %d of 300 records seen", len(reads), again, len(seen))
	}

	// Run again while A still receives records (a new user's finding):
	// the STOPPED flow replicates none of them, so the catch-up cannot be
	// reached. It waited the whole -wait (2 minutes by default) and
	// refused with "catch-up not reached" alone; it now refuses at once
	// and says why and what to do.
	onB.stop()
	eventually(t, "the group has no member on B", func() string {
		n, err := groupMembers(context.Background(), kadm.NewClient(w.client(w.bAddrs)), []string{w.group})
		if err != nil || n[w.group] != 0 {
			return fmt.Sprint(n, err)
		}
		return ""
	})
	w.produce(w.aAddrs, "A", w.topic, 10)
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "10m", "-json")
	rep = decodeFailover(t, out)
	stoppedSaid := slices.ContainsFunc(rep.Problems, func(s string) bool {
		return strings.Contains(s, "A->B is STOPPED (by kmirror failover (planned) at ") &&
			strings.Contains(s, "stop the source's producers, resume the flow (PUT /connectors/A-%3EB/resume on a member)")
	})
	if code != drRefused || !stoppedSaid || rep.TimingsMs.CatchUp >= time.Minute.Milliseconds() {
		t.Errorf("failover again with records after the stop: exit %d, catch-up %d ms, problems %q; want 1 at once, saying the flow is STOPPED\n%s",
			code, rep.TimingsMs.CatchUp, rep.Problems, errOut)
	}
}

// TestPlannedFailoverTransactionalSource: the source topic is written by a
// transactional producer, so each partition's end offset counts a COMMIT
// marker, an aborted record and its ABORT marker past the last data record.
// The planned failover counts a partition caught up when only those lie
// between its resume point and the end (it waited the whole -wait and
// refused with "replicated up to 9 of 10"), and names the next record to
// replicate when a committed one does.
func TestPlannedFailoverTransactionalSource(t *testing.T) {
	w := newDRWorld(t, "")
	txn := w.client(w.aAddrs, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("failover-txn"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Per partition: offsets 0-9 committed, COMMIT 10, aborted 11, ABORT 12
	// (the first call); then 13 committed, COMMIT 14 (the second).
	inTxn := func(n int, end kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range w.parts {
			for range n {
				if err := txn.ProduceSync(ctx, &kgo.Record{Topic: w.topic, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	inTxn(10, kgo.TryCommit)
	inTxn(1, kgo.TryAbort)
	commitAt := map[int32]int64{0: 5, 1: 5, 2: 5}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	runner := func() func() {
		_, runnerLog, stop, wait := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
		return func() {
			stop()
			if err := wait(); err != nil {
				t.Errorf("runner: %v\n%s", err, runnerLog)
			}
		}
	}
	stop := runner()
	w.waitCheckpointed(30)
	stop() // graceful: resume points stored at offset 12, past the aborted record and the markers (partState.resumeAt)
	inTxn(1, kgo.TryCommit)
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "0s", "-dry-run", "-json")
	rep := decodeFailover(t, out)
	var want []string
	for p := range w.parts {
		want = append(want, fmt.Sprintf("catch-up not reached: orders[%d]: resume point stored at offset 12; the next record to replicate is at offset 13 (source end offset 15)", p))
	}
	if code != drRefused || !slices.Equal(rep.Problems, want) {
		t.Fatalf("dry run with one committed record to replicate per partition: exit %d, problems %q; want %d, %q\n%s", code, rep.Problems, drRefused, want, errOut)
	}
	defer runner()()
	eventually(t, "33 records on B", func() string {
		if n := len(w.consumeAll(w.bAddrs, w.remote)); n != 33 {
			return fmt.Sprintf("%d records", n)
		}
		return ""
	})
	code, out, errOut, took := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "15s", "-json")
	rep = decodeFailover(t, out)
	if code != drOK || rep.Result != "done" || len(rep.Problems) != 0 {
		t.Fatalf("planned failover of a fully replicated transactional topic: exit %d (%s) after %v, problems %q; want 0 (done)\n%s",
			code, rep.Result, took.Round(time.Second), rep.Problems, errOut)
	}
	if got, want := fmt.Sprint(w.committed(w.bAddrs)), fmt.Sprintf("map[%s:map[0:5 1:5 2:5]]", w.remote); got != want {
		t.Errorf("group on B: %s, want %s", got, want)
	}
}

// consumeAll reads every record of topic (read_committed) on addrs.
// waitCheckpointed waits until translate answers exit 0 for the world's
// group on A->B (every commit checkpointed) and the remote topic on B
// holds n records.
func (w *drWorld) waitCheckpointed(n int) {
	w.t.Helper()
	eventually(w.t, fmt.Sprintf("the group's commits checkpointed, %d records on B", n), func() string {
		if code, out, errOut, _ := runDR(w.t, translateMain, "-config", w.props, "-flow", "A->B", "-groups", w.group); code != drOK {
			return fmt.Sprintf("translate: exit %d: %s %s", code, out, errOut)
		}
		if got := len(w.consumeAll(w.bAddrs, w.remote)); got != n {
			return fmt.Sprintf("%d records", got)
		}
		return ""
	})
}

func (w *drWorld) consumeAll(addrs []string, topic string) []*kgo.Record {
	w.t.Helper()
	cl := w.client(addrs, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var out []*kgo.Record
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		out = append(out, fs.Records()...)
	}
	return out
}

// TestFailoverDryRunWaitsForCatchUp (a new user's finding, playing the
// README's runbook on a live demo feed): failover -dry-run checked the
// catch-up once and refused with "catch-up not reached" where the real
// run, waiting up to -wait, succeeded a second later. -dry-run now waits
// as the run does, changing nothing; -wait 0s still checks once.
func TestFailoverDryRunWaitsForCatchUp(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 20)
	commitAt := map[int32]int64{0: 10, 1: 10, 2: 10}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	runner := func() func() {
		_, runnerLog, stop, wait := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
		return func() {
			stop()
			if err := wait(); err != nil {
				t.Errorf("runner: %v\n%s", err, runnerLog)
			}
		}
	}
	stop := runner()
	w.waitCheckpointed(60)
	stop()
	w.produce(w.aAddrs, "A", w.topic, 5) // offsets 20-24, not replicated while the runner is down

	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "0s", "-dry-run", "-json")
	rep := decodeFailover(t, out)
	var want []string
	for p := range w.parts {
		want = append(want, fmt.Sprintf("catch-up not reached: orders[%d]: resume point stored at offset 19; the next record to replicate is at offset 20 (source end offset 25)", p))
	}
	if code != drRefused || !slices.Equal(rep.Problems, want) {
		t.Fatalf("-dry-run -wait 0s behind by 5 records a partition: exit %d, problems %q; want %d, %q\n%s", code, rep.Problems, drRefused, want, errOut)
	}

	// The dry run waits while the runner comes back and catches up.
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "60s", "-dry-run", "-json")
		done <- result{code, out, errOut}
	}()
	time.Sleep(time.Second) // the dry run has listed the source's end offsets (25) and waits
	defer runner()()
	r := <-done
	rep = decodeFailover(t, r.out)
	if r.code != drOK || rep.Result != "dry-run" || len(rep.Problems) != 0 || rep.TimingsMs.CatchUp < 500 {
		t.Fatalf("-dry-run -wait 60s while the flow catches up: exit %d (%s), catch-up %d ms, problems %q; want 0 (dry-run) after a wait\n%s",
			r.code, rep.Result, rep.TimingsMs.CatchUp, rep.Problems, r.err)
	}
	// The phases are disjoint parts of the total (a breaker's finding: the
	// translations read while waiting were counted in both catch_up and
	// translate; on kfake they take too little for this to tell).
	tm := rep.TimingsMs
	if sum := tm.SourceProbe + tm.CatchUp + tm.Stop + tm.Translate + tm.Commit; sum > tm.Total {
		t.Errorf("timings %+v: the phases add up to %d ms, more than the total", tm, sum)
	}
	var got []string
	for _, g := range rep.Groups {
		for _, p := range g.Partitions {
			got = append(got, fmt.Sprintf("%s %s[%d] %d->%d %s", g.Action, p.Topic, p.Partition, p.SourceOffset, p.Offset, p.Translation))
		}
	}
	if want := []string{"commit A.orders[0] 10->10 exact", "commit A.orders[1] 10->10 exact", "commit A.orders[2] 10->10 exact"}; !slices.Equal(got, want) {
		t.Errorf("dry-run plan %q, want %q", got, want)
	}
	st, found, err := statustopic.ReadTargetState(context.Background(), []kgo.Opt{kgo.SeedBrokers(w.bAddrs...)}, "A")
	if err != nil || found {
		t.Fatalf("after -dry-run the target state is %+v (found %t, %v), want none", st, found, err)
	}
	if got := w.committed(w.bAddrs); len(got) != 0 {
		t.Fatalf("-dry-run committed %v on B", got)
	}
	// The real run with -wait 0s, as the dry run's exit 0 promised: it
	// checks the catch-up once, and still waits (-stop-wait) for the live
	// runner to apply its STOPPED (a breaker's finding: -wait bounded that
	// wait too, so -wait 0s wrote STOPPED and refused at once).
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "0s", "-json")
	rep = decodeFailover(t, out)
	if code != drOK || rep.Members == nil || rep.Members.Live != 1 || rep.Members.Stopped != 1 || len(rep.Problems) != 0 {
		t.Fatalf("failover -wait 0s on the caught-up flow with its runner live: exit %d, members %+v, problems %q; want 0, 1 of 1 stopped\n%s", code, rep.Members, rep.Problems, errOut)
	}
	if got := w.committed(w.bAddrs); fmt.Sprint(got) != fmt.Sprint(map[string]map[int32]int64{w.remote: {0: 10, 1: 10, 2: 10}}) {
		t.Fatalf("failover -wait 0s committed %v on B, want 10 on each partition", got)
	}
}

// TestPlannedFailoverOnPausedFlowSaysSo (a second new user's finding): a
// planned failover of a flow an operator PAUSED, the source still
// receiving records, waited the whole -wait for a catch-up a paused flow
// never reaches and refused with "catch-up not reached" alone. It refuses
// at once, naming the pause, as for a STOPPED flow.
func TestPlannedFailoverOnPausedFlowSaysSo(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 20)
	commitAt := map[int32]int64{0: 10, 1: 10, 2: 10}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stop, wait := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	defer func() {
		stop()
		if err := wait(); err != nil {
			t.Errorf("runner: %v\n%s", err, runnerLog)
		}
	}()
	w.waitCheckpointed(60)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := statustopic.WriteTargetState(ctx, w.client(w.bAddrs), "A", statustopic.TargetStateRecord{Flow: "A->B", State: statustopic.Paused,
		At: time.Now().UTC(), By: "alice", Reason: "drill"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the runner applies PAUSED", func() string {
		ms, err := statustopic.ReadMembers(ctx, []kgo.Opt{kgo.SeedBrokers(w.bAddrs...)}, "A", time.Now())
		if err != nil || len(ms) != 1 || ms[0].Applied != statustopic.Paused {
			return fmt.Sprint(ms, err)
		}
		return ""
	})
	w.produce(w.aAddrs, "A", w.topic, 5) // not replicated while paused
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "10m", "-json")
	rep := decodeFailover(t, out)
	pausedSaid := slices.ContainsFunc(rep.Problems, func(s string) bool {
		return strings.HasPrefix(s, "A->B is PAUSED (by alice: drill at ") &&
			strings.HasSuffix(s, "resume it (PUT /connectors/A-%3EB/resume on a member) and run failover again")
	})
	if code != drRefused || !pausedSaid || rep.TargetState != "" || rep.TimingsMs.CatchUp >= time.Minute.Milliseconds() {
		t.Errorf("planned failover of a PAUSED flow behind the source: exit %d, catch-up %d ms, state written %q, problems %q; want 1 at once naming the pause, nothing written\n%s",
			code, rep.TimingsMs.CatchUp, rep.TargetState, rep.Problems, errOut)
	}
}
