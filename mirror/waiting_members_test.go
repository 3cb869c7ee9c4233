package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestWaitingOnlyForGroupMembers (regression, found by a helper): m1 (tasks.max 4) owns every slot and
// replicates. m2, started later with tasks.max 6, never joins the group (the
// brokers refuse its session timeout: it is RETRYING) but publishes its
// member record. The group's leader sees only m1, so m1 keeps the slots and
// replicates; m1 said it waited for tasks.max 6 ("replicates nothing
// until restarted"), in its status, the status topic and /status, which
// would have sent an operator restarting healthy members. Members that
// never joined the group are left out of the epoch check, and a member
// that owns slots is not waiting.
func TestWaitingOnlyForGroupMembers(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(2*time.Second))
	if p.Real {
		t.Skip("kfake only")
	}
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	testcluster.CreateTopic(t, &p.Source, orders, 4, nil)
	produceEach(t, &p.Source, orders, 4, 0, 10)
	fc := fastFlow(p)
	fc.Tasks = 4
	fc.SessionTimeout, fc.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
	m1, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w1"), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 30*time.Second, "m1 replicates on 4 slots", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 40 && len(m1.Status().Flows[0].Member.Slots) == 4, memberStates(m1)
	})
	fc2 := fc
	fc2.Tasks = 6
	fc2.SessionTimeout = time.Second // refused by the brokers (min 2 s)
	m2, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc2), WithWorkerID("w2"), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 30*time.Second, "m1 sees m2's record", func() (bool, string) {
		return len(m1.ClusterStatus().Flows[0].Members) == 2, fmt.Sprintf("m2: %s %s", m2.Status().Flows[0].State, m2.Status().Flows[0].Error)
	})
	time.Sleep(2 * time.Second)
	produceEach(t, &p.Source, orders, 4, 10, 10)
	testcluster.Eventually(t, 30*time.Second, "m1 replicates the new records", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 80, ""
	})
	fs := m1.Status().Flows[0]
	if fs.Member.Waiting != "" || len(fs.Member.Slots) != 4 {
		t.Errorf("m1 owns slots %v and replicates, but says: waiting %q", fs.Member.Slots, fs.Member.Waiting)
	}
	for _, mm := range m1.ClusterStatus().Flows[0].Members {
		if mm.WorkerID == "w1" && mm.Waiting != "" {
			t.Errorf("cluster view: w1 waiting %q", mm.Waiting)
		}
	}
}

// TestEpochWaitingIgnoresMembersOutsideTheGroup: the epoch check counts
// only members whose records name a group membership (and this member).
func TestEpochWaitingIgnoresMembersOutsideTheGroup(t *testing.T) {
	t0 := time.Unix(1000, 0)
	self := epochMeta{Tasks: 4, Enabled: true, Started: t0.UnixMilli()}
	me := ClusterMember{WorkerID: "w1", Self: true, Tasks: 4, Started: t0}
	for _, c := range []struct {
		name  string
		other ClusterMember
		want  string
	}{
		{"newer member in the group", ClusterMember{WorkerID: "w2", Tasks: 6, Started: t0.Add(time.Minute), GroupMemberID: "g-2", Generation: 3},
			"waiting: tasks.max 6 in use by the newest member(s) (w2); this member has tasks.max 4 and replicates nothing until restarted with tasks.max=6"},
		{"newer member never joined", ClusterMember{WorkerID: "w2", Tasks: 6, Started: t0.Add(time.Minute)}, ""},
		{"newer member with generation 0", ClusterMember{WorkerID: "w2", Tasks: 6, Started: t0.Add(time.Minute), GroupMemberID: "g-2"}, ""},
		{"older member in the group", ClusterMember{WorkerID: "w2", Tasks: 6, Started: t0.Add(-time.Minute), GroupMemberID: "g-2", Generation: 3}, ""},
	} {
		if got := epochWaiting([]ClusterMember{me, c.other}, self); got != c.want {
			t.Errorf("%s: epochWaiting = %q, want %q", c.name, got, c.want)
		}
	}
}
