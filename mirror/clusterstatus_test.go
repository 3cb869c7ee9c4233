package mirror

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// produceEach produces n records ("<partition>-<i>") to every partition of
// topic.
func produceEach(t *testing.T, c *testcluster.Cluster, topic string, parts int32, from, n int) {
	t.Helper()
	var rs []*kgo.Record
	for p := range parts {
		for i := from; i < from+n; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	testcluster.Produce(t, c, rs...)
}

// ownersOf returns slot -> worker id from each Mirror's own Status.
func ownersOf(ms map[string]*Mirror) map[int32]string {
	out := map[int32]string{}
	for w, m := range ms {
		for _, k := range m.Status().Flows[0].Member.Slots {
			out[k] = w
		}
	}
	return out
}

// checkCluster compares a member's cluster view with the owners the
// members report themselves and the partitions of topic: every slot with
// its owner, every partition once in its slot; it returns "" when they
// agree.
func checkCluster(cf ClusterFlowStatus, tasks int32, owners map[int32]string, topic string, parts int32, wantState State) string {
	if len(cf.Slots) != int(tasks) {
		return fmt.Sprintf("%d slots, want %d", len(cf.Slots), tasks)
	}
	seen := map[int32]bool{}
	for i, s := range cf.Slots {
		if s.Slot != int32(i) {
			return fmt.Sprintf("slot %d at index %d", s.Slot, i)
		}
		if w, ok := owners[s.Slot]; !ok || s.WorkerID != w || s.State != wantState {
			return fmt.Sprintf("slot %d: %s on %q, want %s on %q", s.Slot, s.State, s.WorkerID, wantState, w)
		}
		for _, p := range s.Partitions {
			if p.Topic != topic || SlotOf(p.Topic, p.Partition, tasks) != s.Slot || seen[p.Partition] {
				return fmt.Sprintf("slot %d lists %s[%d]", s.Slot, p.Topic, p.Partition)
			}
			seen[p.Partition] = true
		}
	}
	if len(seen) != int(parts) {
		return fmt.Sprintf("%d partitions listed, want %d", len(seen), parts)
	}
	return ""
}

// TestClusterStatusFromEveryMember (issue 20 parts 1 and 2): three members
// share a flow of 12 partitions over 6 slots; each member's ClusterStatus
// lists the 6 slots with the worker id of the member that owns each (as
// the members' own Status say) and all 12 partitions, the 3 members, 120
// records and lag 0. A member (not the singleton) is killed and 5 more
// records arrive on every partition: until its session expires, its slots
// are UNASSIGNED on the survivors' view, their partitions listed with the
// exact lag the singleton computes from the source's end offsets and the
// stored resume points (5 each), counted in the flow's lag and in the
// singleton's FlowStatus; then the survivors take the slots over and the
// lag returns to 0 with every record on the target.
func TestClusterStatusFromEveryMember(t *testing.T) {
	testcluster.ParallelOnFake(t) // a child process: alone on shared real brokers
	if testing.Short() {
		t.Skip("spawns a child process; skipped in -short mode")
	}
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	const parts, tasks = 12, 6
	testcluster.CreateTopic(t, &p.Source, orders, parts, nil)
	produceEach(t, &p.Source, orders, parts, 0, 10)
	spec := memberSpec{Source: p.Source.Brokers, Target: p.Target.Brokers, SrcAlias: p.Source.Alias, DstAlias: p.Target.Alias,
		Topics: []string{orders}, Tasks: tasks, Session: 16 * time.Second, Heartbeat: 500 * time.Millisecond,
		Flush: 100 * time.Millisecond, Checkpoints: time.Second, StatusInterval: 300 * time.Millisecond}
	fc := FlowConfig{Source: p.Source.Alias, Target: p.Target.Alias, Topics: spec.Topics, DisableHeartbeatsReplication: true,
		Tasks: tasks, SessionTimeout: spec.Session, HeartbeatInterval: spec.Heartbeat, RebalanceTimeout: 20 * time.Second,
		OffsetFlushInterval: spec.Flush, RefreshTopicsInterval: 500 * time.Millisecond, EmitCheckpointsInterval: spec.Checkpoints,
		EmitHeartbeatsInterval: 200 * time.Millisecond, AdminTimeout: 10 * time.Second}
	ms := map[string]*Mirror{}
	start := func(w string) {
		ms[w], _ = runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID(w), WithStatusInterval(spec.StatusInterval))...)
	}
	// w1 first, so that it keeps slot 0 (the singleton) when the others
	// join; w3, the member killed later, runs in a child process.
	start("w1:8083")
	testcluster.Eventually(t, 30*time.Second, "w1 holds the singleton duties", func() (bool, string) {
		return ms["w1:8083"].Status().Flows[0].Member.Singleton, ""
	})
	start("w2:8083")
	spec.WorkerID = "w3:8083"
	child := startMember(t, "w3", spec)
	childSlots := func() []int32 {
		if fs, ok := child.flowStatus(); ok {
			return fs.Member.Slots
		}
		return nil
	}
	testcluster.Eventually(t, 60*time.Second, "every member answers for the 6 slots, 12 partitions, 3 members", func() (bool, string) {
		owners := ownersOf(ms)
		for _, k := range childSlots() {
			owners[k] = "w3:8083"
		}
		if len(owners) != tasks || targetEnd(t, &p.Target, remote) != 120 || len(childSlots()) != 2 {
			return false, fmt.Sprintf("owners %v", owners)
		}
		// The child's resume points stored (the lag of its slots, once it
		// is killed, is computed from them).
		if fs, ok := child.flowStatus(); !ok || len(fs.Partitions) == 0 {
			return false, "child status"
		} else {
			for _, ps := range fs.Partitions {
				if ps.Committed != 9 {
					return false, fmt.Sprintf("child %s[%d] committed %d", ps.Topic, ps.Partition, ps.Committed)
				}
			}
		}
		for _, m := range ms {
			if len(m.Status().Flows[0].Member.Slots) != 2 {
				return false, fmt.Sprintf("owners %v", owners)
			}
		}
		for w, m := range ms {
			cf := m.ClusterStatus().Flows[0]
			if msg := checkCluster(cf, tasks, owners, orders, parts, StateRunning); msg != "" {
				return false, w + ": " + msg
			}
			if len(cf.Members) != 3 || cf.Records != 120 || cf.Lag != 0 || cf.LagUnknown || cf.State != StateRunning || cf.Tasks != tasks {
				return false, fmt.Sprintf("%s: %d members, %d records, lag %d unknown %v, state %s", w, len(cf.Members), cf.Records, cf.Lag, cf.LagUnknown, cf.State)
			}
			var workers []string
			for _, mm := range cf.Members {
				workers = append(workers, mm.WorkerID)
				if mm.Self != (mm.WorkerID == w) {
					return false, fmt.Sprintf("%s: member %s self %v", w, mm.WorkerID, mm.Self)
				}
			}
			if !slices.Equal(workers, []string{"w1:8083", "w2:8083", "w3:8083"}) {
				return false, fmt.Sprintf("%s: members %v", w, workers)
			}
		}
		return true, ""
	})

	// SIGKILL w3 (not the singleton); 5 more records on every partition.
	lostSlots := childSlots()
	_ = child.signal(t, syscall.SIGKILL)
	killedAt := time.Now()
	produceEach(t, &p.Source, orders, parts, 10, 5)
	var lostParts int
	for pt := range int32(parts) {
		if slices.Contains(lostSlots, SlotOf(orders, pt, tasks)) {
			lostParts++
		}
	}
	t.Logf("killed w3 (slots %v, %d partitions)", lostSlots, lostParts)
	// Seen before the session (16 s) expires and the survivors take the
	// slots over (both views update within seconds; load slows them).
	testcluster.Eventually(t, 14*time.Second, "the killed member's slots UNASSIGNED with their lag counted", func() (bool, string) {
		for w, m := range ms {
			cf := m.ClusterStatus().Flows[0]
			if len(cf.Members) != 2 {
				return false, fmt.Sprintf("%s: %d members", w, len(cf.Members))
			}
			var lag int64
			for _, s := range cf.Slots {
				if !slices.Contains(lostSlots, s.Slot) {
					continue
				}
				if s.State != StateUnassigned || s.WorkerID != "" || s.Since.IsZero() || s.Since.After(killedAt) || s.LagUnknown {
					return false, fmt.Sprintf("%s: slot %d: %s on %q since %v, lag unknown %v", w, s.Slot, s.State, s.WorkerID, s.Since, s.LagUnknown)
				}
				for _, ps := range s.Partitions {
					if ps.Lag != 5 || ps.SourceEnd != 15 || ps.Committed != 9 || ps.State != StateUnassigned {
						return false, fmt.Sprintf("%s: slot %d %s[%d]: lag %d end %d committed %d %s", w, s.Slot, ps.Topic, ps.Partition, ps.Lag, ps.SourceEnd, ps.Committed, ps.State)
					}
					lag += ps.Lag
				}
			}
			if lag != int64(5*lostParts) || cf.Lag != lag || cf.LagUnknown {
				return false, fmt.Sprintf("%s: unassigned lag %d, flow lag %d (unknown %v), want %d", w, lag, cf.Lag, cf.LagUnknown, 5*lostParts)
			}
			if fs := m.Status().Flows[0]; fs.Member.Singleton && (len(fs.UnassignedPartitions) != lostParts || fs.Lag != lag) {
				return false, fmt.Sprintf("%s (singleton): %d unassigned partitions, lag %d", w, len(fs.UnassignedPartitions), fs.Lag)
			}
		}
		return true, ""
	})
	t.Logf("UNASSIGNED with the lag counted %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	testcluster.Eventually(t, 60*time.Second, "the survivors own the 6 slots, every record replicated", func() (bool, string) {
		owners := ownersOf(ms)
		if targetEnd(t, &p.Target, remote) < 180 || len(owners) != tasks {
			return false, fmt.Sprintf("owners %v", owners)
		}
		for w, m := range ms {
			cf := m.ClusterStatus().Flows[0]
			if msg := checkCluster(cf, tasks, owners, orders, parts, StateRunning); msg != "" {
				return false, w + ": " + msg
			}
			if cf.Lag != 0 || cf.LagUnknown {
				return false, fmt.Sprintf("%s: lag %d unknown %v", w, cf.Lag, cf.LagUnknown)
			}
		}
		return true, ""
	})
}

// TestCountersMonotonicAcrossRebalance (issue 20 part 2): a member's
// FlowStatus.Records and Bytes never go down when a second member joins
// and slots are revoked from it, and its partitions' counts stay in its
// totals after the hand-over.
func TestCountersMonotonicAcrossRebalance(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	orders := p.Topic("orders")
	const parts = 8
	testcluster.CreateTopic(t, &p.Source, orders, parts, nil)
	produceEach(t, &p.Source, orders, parts, 0, 50)
	fc := fastFlow(p)
	fc.Tasks = 4
	fc.SessionTimeout, fc.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
	m1, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w1"), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 30*time.Second, "400 records replicated by one member", func() (bool, string) {
		fs := m1.Status().Flows[0]
		return fs.Records == 400 && len(fs.Member.Slots) == 4, fmt.Sprintf("%d records, slots %v", fs.Records, fs.Member.Slots)
	})
	before := m1.Status().Flows[0]
	stop := make(chan struct{})
	done := make(chan string, 1)
	go func() {
		last, lastBytes := before.Records, before.Bytes
		for {
			select {
			case <-stop:
				done <- ""
				return
			case <-time.After(5 * time.Millisecond):
			}
			fs := m1.Status().Flows[0]
			if fs.Records < last || fs.Bytes < lastBytes {
				done <- fmt.Sprintf("records %d -> %d, bytes %d -> %d (slots %v)", last, fs.Records, lastBytes, fs.Bytes, fs.Member.Slots)
				return
			}
			last, lastBytes = fs.Records, fs.Bytes
		}
	}()
	m2, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w2"), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 30*time.Second, "slots shared by the two members", func() (bool, string) {
		a, b := m1.Status().Flows[0].Member.Slots, m2.Status().Flows[0].Member.Slots
		return len(a) > 0 && len(b) > 0 && len(a)+len(b) == 4, fmt.Sprintf("%v %v", a, b)
	})
	produceEach(t, &p.Source, orders, parts, 50, 10)
	testcluster.Eventually(t, 30*time.Second, "480 records replicated", func() (bool, string) {
		return targetEnd(t, &p.Target, p.Source.Alias+"."+orders) == 480, ""
	})
	close(stop)
	if msg := <-done; msg != "" {
		t.Fatalf("m1's counters went down across the rebalance: %s", msg)
	}
	after := m1.Status().Flows[0]
	if after.Records < 400 || after.Bytes < before.Bytes {
		t.Fatalf("m1 after the rebalance: %d records, %d bytes; want at least 400 and %d", after.Records, after.Bytes, before.Bytes)
	}
	// The members' counts add up to what was replicated (graceful
	// hand-over: nothing twice).
	testcluster.Eventually(t, 10*time.Second, "the cluster's records add up to 480", func() (bool, string) {
		cf := m2.ClusterStatus().Flows[0]
		return cf.Records == 480, fmt.Sprintf("%d (m1 %d, m2 %d)", cf.Records, m1.Status().Flows[0].Records, m2.Status().Flows[0].Records)
	})
}

// TestRetryingFlowReportsLag (issue 20 part 2): a flow that cannot start
// (the source refuses to create its offset-syncs topic) is RETRYING with
// the lag of the 300 source records waiting, computed from the source's end
// offsets and the stored resume points, not 0; with the target unreachable
// too the lag cannot be computed and is unknown, never 0.
func TestRetryingFlowReportsLag(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("refusing CreateTopics needs kfake faults")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 3, nil)
	produceEach(t, &p.Source, orders, 3, 0, 100)
	h := p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Err: kerr.TopicAuthorizationFailed, Count: -1})
	fc := fastFlow(p)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "RETRYING with lag 300", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRetrying && fs.Lag == 300 && !fs.LagUnknown, fmt.Sprintf("%s lag %d unknown %v: %s", fs.State, fs.Lag, fs.LagUnknown, fs.Error)
	})
	cf := m.ClusterStatus().Flows[0]
	if cf.Lag != 300 || cf.LagUnknown || cf.State != StateRetrying {
		t.Fatalf("cluster view while retrying: %s, lag %d unknown %v; want RETRYING, 300", cf.State, cf.Lag, cf.LagUnknown)
	}
	h.Remove()
	testcluster.Eventually(t, 60*time.Second, "300 records replicated once the topic can be created", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRunning && fs.Records == 300 && fs.Lag == 0 && !fs.LagUnknown, fmt.Sprintf("%s %d records lag %d", fs.State, fs.Records, fs.Lag)
	})

	// Target unreachable from the start: unknown.
	fc2 := fastFlow(p)
	dead := []Opt{WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}})}
	m2, _ := runMirror(t, append(dead, WithFlow(fc2))...)
	testcluster.Eventually(t, 30*time.Second, "RETRYING with the lag unknown", func() (bool, string) {
		fs := m2.Status().Flows[0]
		return fs.State == StateRetrying && fs.Lag == 0 && fs.LagUnknown, fmt.Sprintf("%s lag %d unknown %v", fs.State, fs.Lag, fs.LagUnknown)
	})
	if cf := m2.ClusterStatus().Flows[0]; !cf.LagUnknown {
		t.Fatalf("cluster view with the target unreachable: lag %d, unknown %v; want unknown", cf.Lag, cf.LagUnknown)
	}
}
