package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrk1207GarbageMemberTasksIgnored (a breaker's finding): a member
// record in the status topic whose tasks.max no member can have (3 000,
// above maxTasks; a garbage or hand-written record, live by its own
// interval) made every member's cluster view list 3 000 slots, 2 996 of
// them UNASSIGNED, and the flow's lag unknown; with 2 000 000 000 every
// member built that many slots at each publication (out of memory). Such
// a record does not set the view's slot count.
func TestBrk1207GarbageMemberTasksIgnored(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	junk := statustopic.MemberRecord{MemberID: "junk", WorkerID: "junk", GroupMemberID: "g", Generation: 5, Tasks: 2_000_000_000,
		Started: now.Add(time.Hour), IntervalMS: 3600_000, At: now}
	self := statustopic.MemberRecord{MemberID: "self", WorkerID: "w1", GroupMemberID: "s", Generation: 5, Tasks: 4, Started: now, At: now}
	if n := viewSlots(map[string]statustopic.MemberRecord{"junk": junk, "self": self}, "self", now, 4); n != 4 {
		t.Fatalf("viewSlots with a record of tasks.max 2000000000: %d slots, want 4", n)
	}
	if w := epochWaiting([]ClusterMember{{MemberID: "junk", WorkerID: "junk", GroupMemberID: "g", Generation: 5, Tasks: -3, Started: now.Add(time.Hour)},
		{MemberID: "self", WorkerID: "w1", Self: true, Tasks: 4, Started: now}}, epochMeta{Tasks: 4, Enabled: true, Started: now.UnixMilli()}); w != "" {
		t.Fatalf("waiting for a record of tasks.max -3: %q", w)
	}

	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 4, nil)
	fc := fastFlow(p)
	fc.Tasks = 4
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w1"), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 60*time.Second, "one live member, every slot owned", func() (bool, string) {
		cf := m.ClusterStatus().Flows[0]
		return len(cf.Members) == 1 && len(cf.Slots) == 4 && cf.Slots[3].State == StateRunning, fmt.Sprintf("%+v", cf.Slots)
	})
	junk.Flow, junk.Tasks = fc.Name(), 3000
	r, err := statustopic.MemberRecordOf(p.Source.Alias, junk)
	if err != nil {
		t.Fatal(err)
	}
	testcluster.Produce(t, &p.Target, r)
	testcluster.Eventually(t, 30*time.Second, "the junk member in the view", func() (bool, string) {
		return len(m.ClusterStatus().Flows[0].Members) == 2, ""
	})
	cf := m.ClusterStatus().Flows[0]
	if cf.Tasks != 4 || len(cf.Slots) != 4 || cf.LagUnknown {
		t.Fatalf("cluster view after a record of tasks.max 3000: tasks %d, %d slots, lag unknown %v; want 4, 4, false", cf.Tasks, len(cf.Slots), cf.LagUnknown)
	}
}
