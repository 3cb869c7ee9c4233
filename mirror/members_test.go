package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/heartbeat"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// envMemberChild holds the JSON memberSpec of a member child process (the
// test binary re-executed, see TestMain).
const envMemberChild = "KMIRROR_MEMBER_CHILD"

// memberSpec configures one member child: an engine running one flow.
type memberSpec struct {
	Source, Target   []string // bootstrap addresses
	SrcAlias         string
	DstAlias         string
	Topics           []string
	Tasks            int
	Session          time.Duration
	Heartbeat        time.Duration
	Flush            time.Duration
	Checkpoints      time.Duration
	StatusFile       string // where the child writes its Status as JSON, every 50 ms
	DisableHeartbeat bool
	ExactlyOnce      bool
	WorkerID         string        // WithWorkerID (issue 20)
	StatusInterval   time.Duration // WithStatusInterval (0: the default)
}

// memberChild runs the engine until SIGTERM (graceful stop) or SIGKILL.
func memberChild(specJSON string) int {
	var s memberSpec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		fmt.Fprintln(os.Stderr, "member child:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	m, err := New(
		WithCluster(ClusterConfig{Alias: s.SrcAlias, Client: []kgo.Opt{kgo.SeedBrokers(s.Source...)}}),
		WithCluster(ClusterConfig{Alias: s.DstAlias, Client: []kgo.Opt{kgo.SeedBrokers(s.Target...)}}),
		WithFlow(FlowConfig{Source: s.SrcAlias, Target: s.DstAlias, Topics: s.Topics, DisableHeartbeatsReplication: true,
			Tasks: s.Tasks, SessionTimeout: s.Session, HeartbeatInterval: s.Heartbeat, RebalanceTimeout: 20 * time.Second,
			OffsetFlushInterval: s.Flush, RefreshTopicsInterval: 500 * time.Millisecond,
			EmitCheckpointsInterval: s.Checkpoints, EmitHeartbeatsInterval: 200 * time.Millisecond, DisableHeartbeats: s.DisableHeartbeat,
			ExactlyOnce: s.ExactlyOnce, AdminTimeout: 10 * time.Second}),
		WithWorkerID(s.WorkerID), WithStatusInterval(s.StatusInterval),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "member child:", err)
		return 2
	}
	go func() {
		for ctx.Err() == nil {
			b, _ := json.Marshal(m.Status())
			_ = os.WriteFile(s.StatusFile+".tmp", b, 0o644)
			_ = os.Rename(s.StatusFile+".tmp", s.StatusFile)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "member child:", err)
		return 1
	}
	b, _ := json.Marshal(m.Status())
	_ = os.WriteFile(s.StatusFile, b, 0o644)
	return 0
}

// member is a running member child.
type member struct {
	name   string
	cmd    *exec.Cmd
	status string
	waited chan error
}

func startMember(t *testing.T, name string, spec memberSpec) *member {
	t.Helper()
	spec.StatusFile = t.TempDir() + "/status.json"
	b, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envMemberChild+"="+string(b))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &member{name: name, cmd: cmd, status: spec.StatusFile, waited: make(chan error, 1)}
	go func() { m.waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-m.waited; m.waited <- nil })
	return m
}

// flowStatus reads the member's last reported status of its flow.
func (m *member) flowStatus() (FlowStatus, bool) {
	b, err := os.ReadFile(m.status)
	if err != nil {
		return FlowStatus{}, false
	}
	var s Status
	if json.Unmarshal(b, &s) != nil || len(s.Flows) == 0 {
		return FlowStatus{}, false
	}
	return s.Flows[0], true
}

func (m *member) signal(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if err := m.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-m.waited:
		m.waited <- err
		return err
	case <-time.After(90 * time.Second):
		t.Fatalf("member %s did not exit after %v", m.name, sig)
		return nil
	}
}

// steadyProducer writes records to every partition of topic, each value
// "<partition>-<sequence>", at about rate records per second in total,
// until n records are written.
type steadyProducer struct {
	done     chan struct{}
	produced func() int
}

func produceSteadily(t *testing.T, c *testcluster.Cluster, topic string, parts int32, n, rate int) *steadyProducer {
	t.Helper()
	return produceSteadilyFrom(t, c, topic, parts, n, rate, 0)
}

// produceSteadilyFrom is produceSteadily with each partition's values
// numbered from from on (a second call goes on where the first stopped).
func produceSteadilyFrom(t *testing.T, c *testcluster.Cluster, topic string, parts int32, n, rate, from int) *steadyProducer {
	t.Helper()
	cl := testcluster.Client(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(2*time.Millisecond))
	var mu sync.Mutex
	count := 0
	sp := &steadyProducer{done: make(chan struct{}), produced: func() int { mu.Lock(); defer mu.Unlock(); return count }}
	go func() {
		defer close(sp.done)
		ctx := context.Background()
		seq := make([]int, parts)
		for i := range seq {
			seq[i] = from
		}
		const tick = 10 * time.Millisecond
		perTick := max(1, rate/int(time.Second/tick))
		next := time.Now()
		for i := 0; i < n; {
			for j := 0; j < perTick && i < n; j, i = j+1, i+1 {
				part := int32(i) % parts
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: part, Key: fmt.Appendf(nil, "k%d", seq[part]),
					Value: fmt.Appendf(nil, "%d-%d", part, seq[part])}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("producing: %v", err)
					}
				})
				seq[part]++
			}
			mu.Lock()
			count = i
			mu.Unlock()
			next = next.Add(tick)
			time.Sleep(time.Until(next))
		}
		if err := cl.Flush(ctx); err != nil {
			t.Errorf("flush: %v", err)
		}
	}()
	return sp
}

// writerRun is a run of consecutive target records of one partition
// written by the same producer id.
type writerRun struct {
	pid        int64
	first, end int64 // target offsets [first, end)
}

// writerRuns splits a target partition into runs by producer id.
func writerRuns(recs []*kgo.Record) []writerRun {
	var runs []writerRun
	for _, r := range recs {
		if n := len(runs); n > 0 && runs[n-1].pid == r.ProducerID {
			runs[n-1].end = r.Offset + 1
			continue
		}
		runs = append(runs, writerRun{pid: r.ProducerID, first: r.Offset, end: r.Offset + 1})
	}
	return runs
}

// heartbeatGaps returns the largest gap between consecutive heartbeats
// (by their own timestamps) of the flow on the target, between from and to.
func heartbeatGaps(t *testing.T, c *testcluster.Cluster, src, dst string, from, to time.Time) time.Duration {
	t.Helper()
	recs := testcluster.ReadAll(t, c, "heartbeats")
	var ts []time.Time
	for _, part := range recs {
		for _, r := range part {
			hb, err := heartbeat.Decode(r.Key, r.Value)
			if err != nil || hb.SourceClusterAlias != src || hb.TargetClusterAlias != dst {
				continue
			}
			at := time.UnixMilli(hb.Timestamp)
			if at.After(from) && at.Before(to) {
				ts = append(ts, at)
			}
		}
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	for i := 1; i < len(ts); i++ {
		gap = max(gap, ts[i].Sub(ts[i-1]))
	}
	if len(ts) < 2 {
		t.Fatalf("only %d heartbeats of %s->%s between %v and %v", len(ts), src, dst, from, to)
	}
	return gap
}

// readSettled reads topic on c from the log start to its end offsets
// (read_committed when committed), retrying a read that gives up until
// timeout: with nothing polled for kread.IdleStop, a read stops with an
// error, which happens when a killed member's transaction holds the last
// stable offset until it is fenced or times out, or when a loaded machine
// (-race, child processes) starves the reader. The result is the whole
// topic, as one read gives it.
func readSettled(t *testing.T, c *testcluster.Cluster, topic string, committed bool, timeout time.Duration) map[int32][]*kgo.Record {
	t.Helper()
	var recs map[int32][]*kgo.Record
	testcluster.Eventually(t, timeout, "reading "+topic, func() (bool, string) {
		var err error
		recs, err = testcluster.ReadTopic(context.Background(), c.Opts(), topic, committed)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return recs
}

// endsReach reports whether every partition p of topic on c has an end
// offset of at least n[p], a condition of holding n[p] records (each takes
// an offset): checked first in a wait that reads the whole topic, which
// costs seconds of CPU under -race, while the mirror is still catching up.
func endsReach(t *testing.T, c *testcluster.Cluster, topic string, n map[int32]int) (bool, string) {
	t.Helper()
	adm, done := testcluster.ShortAdmin(t, c)
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return false, err.Error()
	}
	for part, want := range n {
		if o, ok := ends.Lookup(topic, part); !ok || o.Offset < int64(want) {
			return false, fmt.Sprintf("partition %d: end offset %d, %d records to hold", part, o.Offset, want)
		}
	}
	return true, ""
}

// TestMembersShareAndHandOver runs a flow in three member processes over a
// 12-partition topic while a steady stream of records arrives; the member
// holding the singleton duties is SIGKILLed, later another member is
// SIGTERMed, and a new member joins. At the end every source record is on
// the target in order per partition (0 lost); duplicates exist only on
// partitions the killed member owned and each replay starts one past a
// resume point that member had stored (with tail resume, the default, its
// successors resume after what it wrote: 0 measured, not asserted, since a
// live member starved past its 1.5 s session may write as a zombie); the
// graceful leave adds none;
// writers (producer ids) of a partition never interleave; heartbeats never
// stop for longer than the hand-over time (session timeout plus one
// interval, plus the start of the new owner's emitter).
func TestMembersShareAndHandOver(t *testing.T) {
	testcluster.ParallelOnFake(t) // child processes: alone on shared real brokers
	if testing.Short() {
		t.Skip("spawns child processes; skipped in -short mode")
	}
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	orders := p.Topic("orders")
	const parts, total, rate = 12, 200_004, 5000
	testcluster.CreateTopic(t, &p.Source, orders, parts, nil)
	remote := p.Source.Alias + "." + orders
	spec := memberSpec{Source: p.Source.Brokers, Target: p.Target.Brokers, SrcAlias: p.Source.Alias, DstAlias: p.Target.Alias,
		Topics: []string{orders}, Tasks: 6, Session: 1500 * time.Millisecond, Heartbeat: 300 * time.Millisecond,
		Flush: time.Second, Checkpoints: time.Second}
	members := map[string]*member{}
	for _, n := range []string{"m1", "m2", "m3"} {
		members[n] = startMember(t, n, spec)
	}
	start := time.Now()
	prod := produceSteadily(t, &p.Source, orders, parts, total, rate)

	// Every slot owned, each member with some.
	owners := func() (map[string][]int32, string) {
		out := map[string][]int32{}
		for n, m := range members {
			if fs, ok := m.flowStatus(); ok {
				out[n] = fs.Member.Slots
			}
		}
		return out, fmt.Sprint(out)
	}
	testcluster.Eventually(t, 60*time.Second, "6 slots shared by 3 members", func() (bool, string) {
		o, s := owners()
		n := 0
		for _, sl := range o {
			if len(sl) == 0 {
				return false, s
			}
			n += len(sl)
		}
		return n == 6 && len(o) == 3, s
	})
	waitProduced := func(n int) {
		testcluster.Eventually(t, 120*time.Second, fmt.Sprintf("%d records produced", n), func() (bool, string) {
			return prod.produced() >= n, fmt.Sprint(prod.produced())
		})
	}

	// SIGKILL the member holding the singleton duties, mid-stream.
	waitProduced(total / 4)
	var victim string
	var victimStatus FlowStatus
	for n, m := range members {
		if fs, ok := m.flowStatus(); ok && fs.Member.Singleton {
			victim, victimStatus = n, fs
		}
	}
	if victim == "" {
		t.Fatal("no member holds the singleton duties")
	}
	killedAt := time.Now()
	_ = members[victim].signal(t, syscall.SIGKILL)
	killedParts := map[int32]int64{} // partition -> resume point the victim had reported
	for _, ps := range victimStatus.Partitions {
		killedParts[ps.Partition] = ps.Committed
	}
	t.Logf("SIGKILLed %s (singleton, slots %v, partitions %v)", victim, victimStatus.Member.Slots, killedParts)
	delete(members, victim)
	testcluster.Eventually(t, 30*time.Second, "survivors own every slot", func() (bool, string) {
		o, s := owners()
		n, single := 0, false
		for name, sl := range o {
			n += len(sl)
			if fs, _ := members[name].flowStatus(); fs.Member.Singleton {
				single = true
			}
		}
		return n == 6 && single, s
	})
	t.Logf("slots taken over %v after the SIGKILL", time.Since(killedAt).Round(time.Millisecond))
	// Measured, not asserted: the time until every partition of the killed
	// member grows again on the target.
	adm := testcluster.Admin(t, &p.Target)
	endsAt := func() map[int32]int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out := map[int32]int64{}
		if ends, err := adm.ListEndOffsets(ctx, remote); err == nil {
			ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		}
		return out
	}
	base := endsAt()
	testcluster.Eventually(t, 60*time.Second, "the killed member's partitions flow again", func() (bool, string) {
		now := endsAt()
		for part := range killedParts {
			if now[part] <= base[part] {
				return false, fmt.Sprintf("partition %d at %d", part, now[part])
			}
		}
		return true, ""
	})
	t.Logf("partitions of the killed member flowing again %v after the SIGKILL (session timeout %v)", time.Since(killedAt).Round(time.Millisecond), spec.Session)

	// SIGTERM another member: a graceful hand-over.
	waitProduced(total / 2)
	var leaver string
	for n := range members {
		leaver = n
		break
	}
	leaverStatus, _ := members[leaver].flowStatus()
	if err := members[leaver].signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("member %s after SIGTERM: %v", leaver, err)
	}
	leftParts := map[int32]bool{}
	for _, ps := range leaverStatus.Partitions {
		leftParts[ps.Partition] = true
	}
	t.Logf("SIGTERMed %s (slots %v)", leaver, leaverStatus.Member.Slots)
	delete(members, leaver)

	// A new member joins.
	waitProduced(3 * total / 4)
	members["m4"] = startMember(t, "m4", spec)
	testcluster.Eventually(t, 60*time.Second, "the new member owns slots", func() (bool, string) {
		o, s := owners()
		return len(o["m4"]) > 0, s
	})
	<-prod.done
	end := time.Now()

	src := testcluster.ReadAll(t, &p.Source, orders)
	counts := map[int32]int{}
	for part, rs := range src {
		counts[part] = len(rs)
	}
	testcluster.Eventually(t, 120*time.Second, "everything replicated", func() (bool, string) {
		if ok, why := endsReach(t, &p.Target, remote, counts); !ok {
			return false, why
		}
		dst, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), remote, false)
		if err != nil {
			return false, err.Error() // a stalled read (see readSettled): not yet
		}
		for part := int32(0); part < parts; part++ {
			if len(dst[part]) < len(src[part]) || !slices.ContainsFunc(dst[part], func(r *kgo.Record) bool {
				return string(r.Value) == string(src[part][len(src[part])-1].Value)
			}) {
				return false, fmt.Sprintf("partition %d: %d of %d", part, len(dst[part]), len(src[part]))
			}
		}
		return true, ""
	})
	for _, m := range members {
		if err := m.signal(t, syscall.SIGTERM); err != nil {
			t.Errorf("member %s after SIGTERM: %v", m.name, err)
		}
	}
	dst := readSettled(t, &p.Target, remote, false, 60*time.Second)
	stored := storedResumePoints(t, p, orders)
	totalDups := 0
	for part := int32(0); part < parts; part++ {
		dups := checkReplays(t, part, src[part], dst[part], stored[part])
		totalDups += dups
		if _, killed := killedParts[part]; dups > 0 && !killed {
			t.Errorf("partition %d: %d duplicates, but the killed member did not own it", part, dups)
		}
		runs := writerRuns(dst[part])
		seen := map[int64]bool{}
		for _, r := range runs {
			if seen[r.pid] {
				t.Errorf("partition %d: producer %d wrote again after another writer: writers interleave: %+v", part, r.pid, runs)
			}
			seen[r.pid] = true
		}
		if len(src[part]) != total/parts {
			t.Errorf("partition %d: %d source records, want %d", part, len(src[part]), total/parts)
		}
	}
	t.Logf("%d records, %d duplicates after 1 SIGKILL, 1 SIGTERM, 1 join", total, totalDups)

	gap := heartbeatGaps(t, &p.Target, p.Source.Alias, p.Target.Alias, start, end)
	// The session, an interval, and slack for the rebalance and the new
	// singleton's start on a loaded machine: well under the rebalance
	// timeout (20 s) a stalled hand-over would wait out.
	bound := spec.Session + 200*time.Millisecond + 6*time.Second
	t.Logf("largest heartbeat gap %v (bound %v)", gap, bound)
	if gap > bound {
		t.Errorf("heartbeats stopped for %v, longer than the hand-over bound %v", gap, bound)
	}
}

// soak replicates about 200 000 records over 12 partitions with three
// members while members are SIGKILLed at arbitrary instants (kills times)
// and replaced, and returns the duplicates a read_committed reader of the
// target sees. A lost record fails the test; exactly once, a reordered one
// too. At least once, a member whose 1.5 s session expired while it was
// alive (a loaded machine) can still land records it had in flight after
// its successor resumed before them: a replay interleaved with the
// successor's copies, which only the exactly-once fencing rules out
// (seen once in a -race run of the whole package, 2026-12-03).
func soak(t *testing.T, exactlyOnce bool, kills int) int {
	t.Helper()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	orders := p.Topic("orders")
	const parts, total, rate = 12, 200_004, 6000
	testcluster.CreateTopic(t, &p.Source, orders, parts, nil)
	remote := p.Source.Alias + "." + orders
	spec := memberSpec{Source: p.Source.Brokers, Target: p.Target.Brokers, SrcAlias: p.Source.Alias, DstAlias: p.Target.Alias,
		Topics: []string{orders}, Tasks: 6, Session: 1500 * time.Millisecond, Heartbeat: 300 * time.Millisecond,
		Flush: time.Second, Checkpoints: time.Second, ExactlyOnce: exactlyOnce}
	var live []*member
	for i := 0; i < 3; i++ {
		live = append(live, startMember(t, fmt.Sprintf("m%d", i), spec))
	}
	prod := produceSteadily(t, &p.Source, orders, parts, total, rate)
	rng := newRand(t)
	for k := 0; k < kills; k++ {
		// Somewhere in the stream, after the group settled a little.
		wait := time.Duration(1500+rng.IntN(2500)) * time.Millisecond
		select {
		case <-prod.done:
			t.Fatalf("the stream ended after %d of %d kills: raise the record count", k, kills)
		case <-time.After(wait):
		}
		i := rng.IntN(len(live))
		_ = live[i].signal(t, syscall.SIGKILL)
		t.Logf("SIGKILL %s at %d records produced", live[i].name, prod.produced())
		live[i] = startMember(t, fmt.Sprintf("m%d", 3+k), spec)
	}
	<-prod.done
	src := testcluster.ReadAll(t, &p.Source, orders)
	ctx := context.Background()
	readTarget := func() (map[int32][]*kgo.Record, error) {
		return testcluster.ReadTopic(ctx, p.Target.Opts(), remote, true)
	}
	testcluster.Eventually(t, 180*time.Second, "everything replicated", func() (bool, string) {
		// A read that stalls (a killed member's transaction holds the
		// last stable offset until it is fenced or times out; a loaded
		// machine) is "not yet", not a failure: the wait bounds it.
		dst, err := readTarget()
		if err != nil {
			return false, err.Error()
		}
		for part := int32(0); part < parts; part++ {
			last := src[part][len(src[part])-1].Value
			if !slices.ContainsFunc(dst[part], func(r *kgo.Record) bool { return string(r.Value) == string(last) }) {
				return false, fmt.Sprintf("partition %d: %d of %d", part, len(dst[part]), len(src[part]))
			}
		}
		return true, ""
	})
	for _, m := range live {
		if err := m.signal(t, syscall.SIGTERM); err != nil {
			t.Errorf("member %s after SIGTERM: %v", m.name, err)
		}
	}
	dst := readSettled(t, &p.Target, remote, true, 180*time.Second)
	dups := 0
	for part := int32(0); part < parts; part++ {
		if exactlyOnce {
			dups += exactCopy(t, part, src[part], dst[part])
		} else {
			dups += everyRecordCopied(t, part, src[part], dst[part])
		}
	}
	return dups
}

// everyRecordCopied checks that target partition d holds every record of
// source partition s (by value), in any order, and nothing else, and
// returns how many of d's records are copies beyond the first.
func everyRecordCopied(t *testing.T, part int32, s, d []*kgo.Record) int {
	t.Helper()
	seen := make(map[string]int, len(s))
	for _, r := range s {
		seen[string(r.Value)] = 0
	}
	for i, r := range d {
		n, ok := seen[string(r.Value)]
		if !ok {
			t.Fatalf("partition %d: target record %d (%q) is not a record of the source partition", part, i, r.Value)
		}
		seen[string(r.Value)] = n + 1
	}
	dups := 0
	for i, r := range s {
		n := seen[string(r.Value)]
		if n == 0 {
			t.Fatalf("partition %d: source record %d (%q) never reached the target", part, i, r.Value)
		}
		dups += n - 1
	}
	return dups
}

// TestSoakExactlyOnceMembersKilled: three members in exactly-once mode,
// five SIGKILLs at random instants, members replaced: a read_committed
// reader of the target sees every one of ~200 000 records exactly once, in
// order per partition. The same soak at least once reports its duplicates
// (0 with tail resume when no member becomes a zombie).
func TestSoakExactlyOnceMembersKilled(t *testing.T) {
	testcluster.ParallelOnFake(t) // child processes: alone on shared real brokers
	if testing.Short() {
		t.Skip("spawns child processes; skipped in -short mode")
	}
	// The two soaks are independent (each its own clusters and members):
	// they run side by side.
	t.Run("exactly once", func(t *testing.T) {
		testcluster.ParallelOnFake(t)
		if dups := soak(t, true, 5); dups != 0 {
			t.Errorf("exactly once: %d duplicates, want 0", dups)
		}
	})
	t.Run("at least once", func(t *testing.T) {
		testcluster.ParallelOnFake(t)
		// Resume from the target's tail (issue 23): a killed member's
		// successor resumes after what it wrote, a hand-over included (0
		// measured). Not asserted: members with a 1.5 s session on a
		// loaded machine can expire while alive and write as zombies,
		// which at least once may duplicate (TestCrashSIGKILLNoDuplicates
		// asserts 0 where no member can be a zombie).
		t.Logf("at least once, same soak: %d duplicates", soak(t, false, 5))
	})
}

// newRand returns a random source whose seed is logged, so that a failing
// run can be replayed with KMIRROR_TEST_SEED.
func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KMIRROR_TEST_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (KMIRROR_TEST_SEED)", seed)
	return rand.New(rand.NewPCG(seed, seed>>1))
}

// TestExactlyOnceZombieFenced pauses a member (SIGSTOP) until another
// member took its slots over and fenced its transactional producers, then
// resumes it (SIGCONT): nothing the paused member writes becomes visible to
// a read_committed reader (every record once, in order), and it rejoins
// the group.
func TestExactlyOnceZombieFenced(t *testing.T) {
	testcluster.ParallelOnFake(t) // child processes: alone on shared real brokers
	if testing.Short() {
		t.Skip("spawns child processes; skipped in -short mode")
	}
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	topic := p.Topic("payments")
	const parts, total, rate = 4, 40_000, 2000
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	remote := p.Source.Alias + "." + topic
	spec := memberSpec{Source: p.Source.Brokers, Target: p.Target.Brokers, SrcAlias: p.Source.Alias, DstAlias: p.Target.Alias,
		Topics: []string{topic}, Tasks: 2, Session: 1500 * time.Millisecond, Heartbeat: 300 * time.Millisecond,
		Flush: time.Second, Checkpoints: time.Second, ExactlyOnce: true}
	a := startMember(t, "a", spec)
	prod := produceSteadily(t, &p.Source, topic, parts, total, rate)
	testcluster.Eventually(t, 60*time.Second, "a replicates", func() (bool, string) {
		fs, ok := a.flowStatus()
		return ok && fs.Records > 2000, fmt.Sprint(fs.Records)
	})
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	b := startMember(t, "b", spec)
	testcluster.Eventually(t, 60*time.Second, "b owns both slots", func() (bool, string) {
		fs, ok := b.flowStatus()
		return ok && len(fs.Member.Slots) == 2 && fs.Records > 0, fmt.Sprint(fs.Member)
	})
	t.Logf("b took both slots over %v after a stopped", time.Since(stopped).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // b replicates and commits
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 60*time.Second, "a rejoined and owns a slot again", func() (bool, string) {
		fs, ok := a.flowStatus()
		return ok && len(fs.Member.Slots) == 1 && fs.Member.Generation > 0, fmt.Sprint(fs.Member)
	})
	<-prod.done
	src := testcluster.ReadAll(t, &p.Source, topic)
	ctx := context.Background()
	testcluster.Eventually(t, 60*time.Second, "everything replicated", func() (bool, string) {
		dst, err := testcluster.ReadTopic(ctx, p.Target.Opts(), remote, true)
		if err != nil {
			return false, err.Error()
		}
		for part := int32(0); part < parts; part++ {
			last := src[part][len(src[part])-1].Value
			if !slices.ContainsFunc(dst[part], func(r *kgo.Record) bool { return string(r.Value) == string(last) }) {
				return false, fmt.Sprintf("partition %d: %d of %d", part, len(dst[part]), len(src[part]))
			}
		}
		return true, ""
	})
	for _, m := range []*member{a, b} {
		if err := m.signal(t, syscall.SIGTERM); err != nil {
			t.Errorf("member %s after SIGTERM: %v", m.name, err)
		}
	}
	dst := readSettled(t, &p.Target, remote, true, 60*time.Second)
	for part := int32(0); part < parts; part++ {
		if dups := exactCopy(t, part, src[part], dst[part]); dups != 0 {
			t.Errorf("partition %d: %d duplicates visible to read_committed", part, dups)
		}
	}
	// What the log holds beyond what read_committed shows: aborted writes.
	all := readSettled(t, &p.Target, remote, false, 60*time.Second)
	n, vis := 0, 0
	for part := int32(0); part < parts; part++ {
		n += len(all[part])
		vis += len(dst[part])
	}
	t.Logf("target log: %d records, %d visible to read_committed (the rest aborted)", n, vis)
}

// TestMembersRollingRestart restarts three members one by one (SIGTERM,
// then a new process) onto a changed configuration that adds a topic to
// the filter, while records keep arriving: replication never stops, every
// record of the old topic is on the target exactly once (graceful
// hand-overs replay nothing), and the new topic is replicated completely
// once the new configuration runs everywhere.
func TestMembersRollingRestart(t *testing.T) {
	testcluster.ParallelOnFake(t) // child processes: alone on shared real brokers
	if testing.Short() {
		t.Skip("spawns child processes; skipped in -short mode")
	}
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	orders, audit := p.Topic("orders"), p.Topic("audit")
	const parts, total, rate = 6, 60_000, 3000
	testcluster.CreateTopic(t, &p.Source, orders, parts, nil)
	testcluster.CreateTopic(t, &p.Source, audit, 3, nil)
	spec := memberSpec{Source: p.Source.Brokers, Target: p.Target.Brokers, SrcAlias: p.Source.Alias, DstAlias: p.Target.Alias,
		Topics: []string{orders}, Tasks: 6, Session: 1500 * time.Millisecond, Heartbeat: 300 * time.Millisecond,
		Flush: time.Second, Checkpoints: time.Second}
	members := []*member{startMember(t, "old0", spec), startMember(t, "old1", spec), startMember(t, "old2", spec)}
	prod := produceSteadily(t, &p.Source, orders, parts, total, rate)
	auditProd := produceSteadily(t, &p.Source, audit, 3, 3000, 300)
	newSpec := spec
	newSpec.Topics = []string{orders, audit}
	for i := range members {
		time.Sleep(2 * time.Second)
		if err := members[i].signal(t, syscall.SIGTERM); err != nil {
			t.Fatalf("member %s after SIGTERM: %v", members[i].name, err)
		}
		members[i] = startMember(t, fmt.Sprintf("new%d", i), newSpec)
		testcluster.Eventually(t, 60*time.Second, "the new member owns slots", func() (bool, string) {
			fs, ok := members[i].flowStatus()
			return ok && len(fs.Member.Slots) > 0, fmt.Sprint(fs.Member)
		})
	}
	<-prod.done
	<-auditProd.done
	ctx := context.Background()
	complete := func(topic string) (bool, string) {
		src := testcluster.ReadAll(t, &p.Source, topic)
		dst, err := testcluster.ReadTopic(ctx, p.Target.Opts(), p.Source.Alias+"."+topic, false)
		if err != nil {
			return false, err.Error()
		}
		for part, rs := range src {
			last := rs[len(rs)-1].Value
			if !slices.ContainsFunc(dst[part], func(r *kgo.Record) bool { return string(r.Value) == string(last) }) {
				return false, fmt.Sprintf("%s[%d]: %d of %d", topic, part, len(dst[part]), len(rs))
			}
		}
		return true, ""
	}
	testcluster.Eventually(t, 120*time.Second, "both topics replicated", func() (bool, string) {
		if ok, s := complete(orders); !ok {
			return false, s
		}
		return complete(audit)
	})
	for _, m := range members {
		if err := m.signal(t, syscall.SIGTERM); err != nil {
			t.Errorf("member %s after SIGTERM: %v", m.name, err)
		}
	}
	for _, topic := range []string{orders, audit} {
		src := testcluster.ReadAll(t, &p.Source, topic)
		dst := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+topic)
		for part := range src {
			if dups := exactCopy(t, part, src[part], dst[part]); dups != 0 {
				t.Errorf("%s[%d]: %d duplicates after graceful hand-overs", topic, part, dups)
			}
		}
	}
}
