package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/verify"
)

// TestDecideEpoch: the group leader's decision, case by case.
func TestDecideEpoch(t *testing.T) {
	e := func(tasks int32, enabled bool, started int64) epochMeta {
		return epochMeta{Tasks: tasks, Enabled: enabled, Started: started}
	}
	tests := []struct {
		name    string
		members []epochMember
		want    epochDecision
	}{
		{"no member", nil, epochDecision{}},
		{"cold start: one epoch, nobody owns a slot", []epochMember{{ID: "a", Epoch: e(6, true, 1)}, {ID: "b", Epoch: e(6, true, 2)}},
			epochDecision{Newest: e(6, true, 2), Slots: 6, Members: []string{"a", "b"}, Fresh: true}},
		{"steady: the owners are of the newest epoch", []epochMember{{ID: "a", Epoch: e(6, true, 1), Owned: []int32{0, 2, 4}}, {ID: "b", Epoch: e(6, true, 2), Owned: []int32{1, 3, 5}}},
			epochDecision{Newest: e(6, true, 2), Slots: 6, Members: []string{"a", "b"}}},
		{"a member with tasks.max 8 started last: drain", []epochMember{{ID: "a", Epoch: e(6, true, 1), Owned: []int32{0, 1, 2}}, {ID: "b", Epoch: e(6, true, 2), Owned: []int32{3, 4, 5}}, {ID: "c", Epoch: e(8, true, 3)}},
			epochDecision{Newest: e(8, true, 3), Slots: 8, Members: []string{"c"}, Drain: true}},
		{"drained: the new epoch starts fresh, the old members wait", []epochMember{{ID: "a", Epoch: e(6, true, 1)}, {ID: "b", Epoch: e(6, true, 2)}, {ID: "c", Epoch: e(8, true, 3)}},
			epochDecision{Newest: e(8, true, 3), Slots: 8, Members: []string{"c"}, Fresh: true}},
		{"an old member restarted later takes the flow back (safe: drain, fence)", []epochMember{{ID: "a", Epoch: e(6, true, 4)}, {ID: "c", Epoch: e(8, true, 3), Owned: []int32{0, 7}}},
			epochDecision{Newest: e(6, true, 4), Slots: 6, Members: []string{"a"}, Drain: true}},
		{"a slot beyond the newest epoch's tasks.max is drained", []epochMember{{ID: "a", Epoch: e(4, true, 3), Owned: []int32{5}}},
			epochDecision{Newest: e(4, true, 3), Slots: 4, Members: []string{"a"}, Drain: true}},
		{"heartbeats only: slot 0, whatever tasks.max", []epochMember{{ID: "a", Epoch: e(8, false, 1), Owned: []int32{0}}, {ID: "b", Epoch: e(6, false, 2)}},
			epochDecision{Newest: e(6, false, 2), Slots: 1, Members: []string{"a", "b"}}},
		{"same start: the larger tasks.max, then enabled", []epochMember{{ID: "a", Epoch: e(6, false, 5)}, {ID: "b", Epoch: e(6, true, 5)}, {ID: "c", Epoch: e(4, true, 5)}},
			epochDecision{Newest: e(6, true, 5), Slots: 6, Members: []string{"b"}, Fresh: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, decideEpoch(tc.members)); d != "" {
				t.Errorf("decideEpoch (-want +got):\n%s", d)
			}
		})
	}
	// The epoch rides in cooperative-sticky's UserData: the metadata stays
	// a valid ConsumerMemberMetadata (Kafka's coordinator parses its V0
	// prefix: version, topics, user data), and splitting restores
	// cooperative-sticky's own bytes.
	inner := kgo.CooperativeStickyBalancer().JoinGroupMetadata([]string{"units"}, map[string][]int32{"units": {1, 3}}, 7)
	meta := withEpoch(inner, e(8, true, 42))
	var v0 kmsg.ConsumerMemberMetadata
	v0.Default()
	if err := v0.ReadFrom(meta); err != nil || !slices.Equal(v0.Topics, []string{"units"}) || v0.Generation != 7 {
		t.Fatalf("metadata with the epoch does not read as consumer metadata: %+v, %v", v0, err)
	}
	got, restored, _, err := splitEpoch(meta)
	if err != nil || got != e(8, true, 42) || string(restored) != string(inner) {
		t.Fatalf("round trip: %+v, %v; restored %x, want %x", got, err, restored, inner)
	}
	if _, _, _, err := splitEpoch(inner); err == nil {
		t.Fatal("cooperative-sticky metadata decoded as kmirror's")
	}
}

// TestTasksMaxRollingRestart (issue 20 part 5): three members replicate a
// 12-partition topic under a steady load with tasks.max 6; they are
// restarted one at a time with tasks.max 8, then again with 4. After the
// first restarted member joins, it owns every slot of the new layout and the
// members still configured with the old count own none and say they wait;
// once all are restarted they share the slots. At the end kmirror verify
// finds every source record on the target (0 lost); exactly once, none is
// duplicated; at least once the duplicates are counted (graceful
// hand-overs: none expected either).
func TestTasksMaxRollingRestart(t *testing.T) {
	testcluster.ParallelOnFake(t)
	if testing.Short() {
		t.Skip("rolling restarts under load; skipped in -short mode")
	}
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("exactly_once=%t", eos), func(t *testing.T) {
			testcluster.ParallelOnFake(t)
			rollTasksMax(t, eos)
		})
	}
}

func rollTasksMax(t *testing.T, eos bool) {
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	orders := p.Topic("orders")
	const parts, total, rate = 12, 30_000, 1500
	testcluster.CreateTopic(t, &p.Source, orders, parts, nil)
	flow := func(tasks int) FlowConfig {
		fc := fastFlow(p)
		fc.Topics = []string{orders}
		fc.Tasks, fc.ExactlyOnce = tasks, eos
		fc.SessionTimeout, fc.HeartbeatInterval = 6*time.Second, 300*time.Millisecond
		fc.OffsetFlushInterval = 200 * time.Millisecond
		return fc
	}
	type member struct {
		name  string
		tasks int
		m     *Mirror
		stop  func() error
	}
	var members []*member
	start := func(name string, tasks int) *member {
		m, stop := runMirror(t, append(clusterOpts(p), WithFlow(flow(tasks)), WithWorkerID(name), WithStatusInterval(300*time.Millisecond))...)
		mb := &member{name, tasks, m, stop}
		return mb
	}
	owners := func() (map[string][]int32, string) {
		out := map[string][]int32{}
		for _, mb := range members {
			out[mb.name] = mb.m.Status().Flows[0].Member.Slots
		}
		return out, fmt.Sprint(out)
	}
	// settled waits until the members configured with tasks own exactly
	// slots 0..tasks-1 between them, and the others none and wait.
	settled := func(tasks int, what string) {
		testcluster.Eventually(t, 90*time.Second, what, func() (bool, string) {
			o, s := owners()
			var all []int32
			for _, mb := range members {
				fs := mb.m.Status().Flows[0]
				if mb.tasks != tasks {
					if len(o[mb.name]) != 0 || !strings.HasPrefix(fs.Member.Waiting, fmt.Sprintf("waiting: tasks.max %d in use", tasks)) {
						return false, fmt.Sprintf("%s (tasks %d): slots %v, waiting %q; %s", mb.name, mb.tasks, o[mb.name], fs.Member.Waiting, s)
					}
					continue
				}
				if fs.Member.Waiting != "" {
					return false, fmt.Sprintf("%s waits: %q", mb.name, fs.Member.Waiting)
				}
				all = append(all, o[mb.name]...)
			}
			slices.Sort(all)
			want := make([]int32, tasks)
			for i := range want {
				want[i] = int32(i)
			}
			return slices.Equal(all, want), s
		})
	}
	for i := range 3 {
		members = append(members, start(fmt.Sprintf("m%d", i+1), 6))
	}
	settled(6, "6 slots shared by the 3 members")
	prod := produceSteadily(t, &p.Source, orders, parts, total, rate)
	roll := func(tasks int) {
		for i, mb := range members {
			if err := mb.stop(); err != nil {
				t.Fatalf("stopping %s: %v", mb.name, err)
			}
			members[i] = start(mb.name+"'", tasks)
			if i == 0 {
				// The first member of the new epoch holds every slot; the
				// two of the old epoch wait.
				settled(tasks, fmt.Sprintf("the first member with tasks.max %d owns its %d slots, the others wait", tasks, tasks))
				t.Logf("tasks.max %d: first member alone after %d records produced", tasks, prod.produced())
			}
		}
		settled(tasks, fmt.Sprintf("%d slots of the new layout owned", tasks))
		testcluster.Eventually(t, 60*time.Second, fmt.Sprintf("%d slots shared by the 3 members", tasks), func() (bool, string) {
			o, s := owners()
			for _, mb := range members {
				if len(o[mb.name]) == 0 {
					return false, s
				}
			}
			return true, s
		})
	}
	roll(8)
	roll(4)
	<-prod.done
	// Every record readable on the target (read_committed: exactly once,
	// the end offsets also count transaction markers and aborted records).
	testcluster.Eventually(t, 60*time.Second, "every record replicated", func() (bool, string) {
		recs, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), p.Source.Alias+"."+orders, true)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, rs := range recs {
			n += len(rs)
		}
		return n >= total, fmt.Sprintf("%d of %d", n, total)
	})
	for _, mb := range members {
		if err := mb.stop(); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := verify.Run(context.Background(), verify.Config{
		Source:      verify.Cluster{Alias: p.Source.Alias, Opts: p.Source.Opts()},
		Target:      verify.Cluster{Alias: p.Target.Alias, Opts: p.Target.Opts()},
		Topics:      []string{orders},
		ExactlyOnce: eos,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exactly once %v: kmirror verify: %s; totals %+v", eos, rep.Verdict(), rep.Totals)
	if rep.Totals.Compared != total || rep.Totals.Missing != 0 || rep.Totals.Altered != 0 || rep.Totals.OutOfOrder != 0 || rep.Incomplete() {
		t.Fatalf("after 6 -> 8 -> 4: %s; totals %+v", rep.Verdict(), rep.Totals)
	}
	if eos && (rep.Totals.Duplicated != 0 || rep.Mismatch()) {
		t.Fatalf("exactly once: %d duplicated: %s", rep.Totals.Duplicated, rep.Verdict())
	}
}

// TestTasksMaxRefusedWithOlderRelease (issue 20 part 5): a member of an
// older kmirror release (simulated: a group member that offers only
// cooperative-sticky) shares 2 slots; a member of this release with
// tasks.max 3 refuses to start with the exact commands, since
// cooperative-sticky cannot keep members of different slot counts apart;
// one with tasks.max 2 joins (a plain upgrade).
func TestTasksMaxRefusedWithOlderRelease(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	fc := fastFlow(p)
	fc.Tasks = 2
	group, units := defaultGroupID(fc.Source, fc.Target), unitsTopicName(fc.Source)
	testcluster.CreateTopic(t, &p.Target, units, 2, map[string]*string{"cleanup.policy": strp("compact")})
	old := testcluster.Client(t, &p.Target, kgo.ConsumerGroup(group), kgo.ConsumeTopics(units),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(), kgo.SessionTimeout(3*time.Second))
	go func() {
		for {
			if fs := old.PollFetches(context.Background()); fs.IsClientClosed() {
				return
			}
		}
	}()
	testcluster.Eventually(t, 30*time.Second, "the old member joined", func() (bool, string) {
		gs, err := testcluster.Admin(t, &p.Target).DescribeGroups(context.Background(), group)
		if err != nil {
			return false, err.Error()
		}
		g := gs[group]
		return len(g.Members) == 1 && g.Protocol == "cooperative-sticky", fmt.Sprintf("%+v", g)
	})
	fc3 := fc
	fc3.Tasks = 3
	m3, err := newMirror(t, append(clusterOpts(p), WithFlow(fc3))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m3.Run(ctx)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != fc.Name()+".tasks.max" || ce.Value != "3" ||
		!strings.Contains(ce.Reason, "share 2 slots") || !strings.Contains(ce.Reason, "older kmirror release (group protocol cooperative-sticky)") ||
		!strings.Contains(ce.Reason, "start this member with tasks.max=2") || !strings.Contains(ce.Reason, "kmirror units -config FILE -resize") {
		t.Fatalf("Run with tasks.max 3 beside an older release sharing 2 slots: %v", err)
	}
	m2, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "the upgraded member shares the 2 slots", func() (bool, string) {
		ms := m2.Status().Flows[0].Member
		return len(ms.Slots) == 1 && ms.Waiting == "", fmt.Sprintf("%+v", ms)
	})
}

// TestHeartbeatsOnlyIgnoresTasksMax (issue 20 part 5): a flow that
// replicates nothing (heartbeats only) whose coordination topic has 8
// partitions from an earlier run starts with tasks.max 6, holds slot 0 only
// (its singleton) and writes heartbeats: it never refuses over tasks.max.
func TestHeartbeatsOnlyIgnoresTasksMax(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	testcluster.CreateTopic(t, &p.Target, unitsTopicName(p.Source.Alias), 8, map[string]*string{"cleanup.policy": strp("compact")})
	fc := fastFlow(p)
	fc.Disabled, fc.Tasks = true, 6
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "DISABLED with slot 0 and heartbeats", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateDisabled && slices.Equal(fs.Member.Slots, []int32{0}) && fs.Member.Singleton && !fs.LastHeartbeat.IsZero(),
			fmt.Sprintf("%s %s %+v hb %v", fs.State, fs.Error, fs.Member, fs.LastHeartbeat)
	})
	// The cluster view (regression, fresh-user round): one slot, and a lag
	// of 0 that is known (it replicates nothing), as /metrics says; not
	// tasks.max slots UNASSIGNED with an unknown lag.
	cf := m.ClusterStatus().Flows[0]
	if len(cf.Slots) != 1 || cf.Lag != 0 || cf.LagUnknown {
		t.Errorf("cluster view of a heartbeats-only flow: %d slots, lag %d, unknown %v; want 1 slot, lag 0 known", len(cf.Slots), cf.Lag, cf.LagUnknown)
	}
}
