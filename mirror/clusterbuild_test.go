package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// TestBuildCluster: the cluster-wide view of a flow from its status
// topic's records (pure), case by case.
func TestBuildCluster(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	member := func(id string, gen int32, at time.Time, state string, applied statustopic.TargetState, slots ...int32) statustopic.MemberRecord {
		return statustopic.MemberRecord{Flow: "a->b", MemberID: id, WorkerID: id + ":8083", Generation: gen, Slots: slots, State: state,
			Applied: applied, IntervalMS: 1000, At: at, Records: 100, Singleton: len(slots) > 0 && slots[0] == 0}
	}
	part := func(p int32, lag int64) statustopic.PartitionRecord {
		return statustopic.PartitionRecord{Topic: "orders", Partition: p, State: "RUNNING", Lag: lag}
	}
	slot := func(k int32, owner string, at time.Time, state string, parts ...statustopic.PartitionRecord) statustopic.SlotRecord {
		return statustopic.SlotRecord{Flow: "a->b", Slot: k, Owner: owner, State: state, Since: at.Add(-time.Minute), Partitions: parts, IntervalMS: 1000, At: at}
	}
	type slotWant struct {
		State   State
		Worker  string
		Since   time.Time
		Lag     int64
		Unknown bool
		Parts   int
	}
	sum := func(cf ClusterFlowStatus) (out []slotWant) {
		for _, s := range cf.Slots {
			out = append(out, slotWant{s.State, s.WorkerID, s.Since, s.Lag, s.LagUnknown, len(s.Partitions)})
		}
		return out
	}
	running := statustopic.Running
	tests := []struct {
		name      string
		in        clusterInput
		state     State
		lag       int64
		unknown   bool
		members   int
		slots     []slotWant
		partState State // of slot 1's first partition, when it has one
	}{
		{
			name: "two members, every slot owned",
			in: clusterInput{tasks: 2, selfID: "m1", members: map[string]statustopic.MemberRecord{
				"m1": member("m1", 3, now, "RUNNING", running, 0), "m2": member("m2", 3, ago(time.Second), "RUNNING", running, 1)},
				slots: map[int32]statustopic.SlotRecord{0: slot(0, "m1", now, "RUNNING", part(0, 2)), 1: slot(1, "m2", ago(time.Second), "RUNNING", part(1, 5), part(3, 1))}},
			state: StateRunning, lag: 8, members: 2, partState: StateRunning,
			slots: []slotWant{{StateRunning, "m1:8083", ago(time.Minute), 2, false, 1}, {StateRunning, "m2:8083", ago(time.Second + time.Minute), 6, false, 2}},
		},
		{
			name: "a stale member's slot is UNASSIGNED since its last record, its lag still counted",
			in: clusterInput{tasks: 2, selfID: "m1", members: map[string]statustopic.MemberRecord{
				"m1": member("m1", 3, now, "RUNNING", running, 0), "m2": member("m2", 3, ago(4*time.Second), "RUNNING", running, 1)},
				slots: map[int32]statustopic.SlotRecord{0: slot(0, "m1", now, "RUNNING"), 1: slot(1, "m2", ago(4*time.Second), "RUNNING", part(1, 5))}},
			state: StateRunning, lag: 5, members: 1, partState: StateUnassigned,
			slots: []slotWant{{StateRunning, "m1:8083", ago(time.Minute), 0, false, 0}, {StateUnassigned, "", ago(4 * time.Second), 5, false, 1}},
		},
		{
			// An idle owner does not write its unchanged slot record again
			// (slotRewriteEvery): its member record tells when it was last
			// seen, and the slot is UNASSIGNED since then.
			name: "a stale member's slot written long before it was last seen: UNASSIGNED since it was last seen, live owners' old slot records still current",
			in: clusterInput{tasks: 3, selfID: "m1", members: map[string]statustopic.MemberRecord{
				"m1": member("m1", 3, now, "RUNNING", running, 0, 2), "m2": member("m2", 3, ago(4*time.Second), "RUNNING", running, 1)},
				slots: map[int32]statustopic.SlotRecord{0: slot(0, "m1", ago(50*time.Second), "RUNNING", part(0, 2)),
					1: slot(1, "m2", ago(55*time.Second), "RUNNING", part(1, 5)), 2: slot(2, "m1", ago(58*time.Second), "RUNNING")}},
			state: StateRunning, lag: 7, members: 1, partState: StateUnassigned,
			slots: []slotWant{{StateRunning, "m1:8083", ago(50*time.Second + time.Minute), 2, false, 1}, {StateUnassigned, "", ago(4 * time.Second), 5, false, 1},
				{StateRunning, "m1:8083", ago(58*time.Second + time.Minute), 0, false, 0}},
		},
		{
			name: "the singleton's record of an unowned slot; a tombstoned slot without a record",
			in: clusterInput{tasks: 3, selfID: "m1", members: map[string]statustopic.MemberRecord{"m1": member("m1", 3, now, "RUNNING", running, 0)},
				slots: map[int32]statustopic.SlotRecord{0: slot(0, "m1", now, "RUNNING"), 1: slot(1, "", now, "UNASSIGNED", part(1, 7))},
				gone:  map[int32]time.Time{2: ago(30 * time.Second)}},
			state: StateRunning, lag: 7, unknown: true, members: 1, partState: StateRunning,
			slots: []slotWant{{StateRunning, "m1:8083", ago(time.Minute), 0, false, 0}, {StateUnassigned, "", ago(time.Minute), 7, false, 1}, {StateUnassigned, "", ago(30 * time.Second), 0, true, 0}},
		},
		{
			// The member holding the singleton duties was SIGKILLed and its
			// record is stale: nobody refreshes the lag of its slot or of
			// the slots it computed, which read 0 while records kept
			// coming (regression: a breaker saw lag 0 for 8 s).
			name: "the singleton gone: the lag of the slots nobody refreshes is unknown, their last lag still counted",
			in: clusterInput{tasks: 3, selfID: "m2", members: map[string]statustopic.MemberRecord{
				"m1": member("m1", 3, ago(4*time.Second), "RUNNING", running, 0), "m2": member("m2", 3, now, "RUNNING", running, 1)},
				slots: map[int32]statustopic.SlotRecord{0: slot(0, "m1", ago(4*time.Second), "RUNNING", part(0, 0)),
					1: slot(1, "m2", now, "RUNNING", part(1, 1)), 2: slot(2, "", ago(4*time.Second), "UNASSIGNED", part(2, 3))}},
			state: StateRunning, lag: 4, unknown: true, members: 1, partState: StateRunning,
			slots: []slotWant{{StateUnassigned, "", ago(4 * time.Second), 0, true, 1}, {StateRunning, "m2:8083", ago(time.Minute), 1, false, 1},
				{StateUnassigned, "", ago(4*time.Second + time.Minute), 3, true, 1}},
		},
		{
			name: "two members claim a slot during a rebalance: the newer generation owns it",
			in: clusterInput{tasks: 2, selfID: "m1", members: map[string]statustopic.MemberRecord{
				"m1": member("m1", 4, now, "RUNNING", running, 0, 1), "m2": member("m2", 3, now, "RUNNING", running, 1)},
				slots: map[int32]statustopic.SlotRecord{0: slot(0, "m1", now, "RUNNING"), 1: slot(1, "m2", now, "RUNNING", part(1, 5))}},
			state: StateRunning, lag: 0, members: 2,
			slots: []slotWant{{StateRunning, "m1:8083", ago(time.Minute), 0, false, 0}, {StateRunning, "m1:8083", time.Time{}, 0, false, 0}},
		},
		{
			name: "paused once every live member applied it",
			in: clusterInput{tasks: 1, selfID: "m1", targetRec: statustopic.TargetStateRecord{State: statustopic.Paused},
				members: map[string]statustopic.MemberRecord{"m1": member("m1", 3, now, "PAUSED", statustopic.Paused, 0), "m2": member("m2", 3, now, "PAUSED", statustopic.Paused)},
				slots:   map[int32]statustopic.SlotRecord{0: slot(0, "m1", now, "PAUSED", part(0, 3))}},
			state: StatePaused, lag: 3, members: 2,
			slots: []slotWant{{StatePaused, "m1:8083", ago(time.Minute), 3, false, 1}},
		},
		{
			name: "a member still applying a pause: RUNNING",
			in: clusterInput{tasks: 1, selfID: "m1", targetRec: statustopic.TargetStateRecord{State: statustopic.Paused},
				members: map[string]statustopic.MemberRecord{"m1": member("m1", 3, now, "PAUSED", statustopic.Paused, 0), "m2": member("m2", 3, now, "RUNNING", running)},
				slots:   map[int32]statustopic.SlotRecord{0: slot(0, "m1", now, "PAUSED")}},
			state: StateRunning, members: 2,
			slots: []slotWant{{StatePaused, "m1:8083", ago(time.Minute), 0, false, 0}},
		},
		{
			name: "nobody started: the largest lag a member computed",
			in: clusterInput{tasks: 1, selfID: "m1", members: map[string]statustopic.MemberRecord{
				"m1": {MemberID: "m1", WorkerID: "m1:8083", State: "RETRYING", Lag: 300, At: now},
				"m2": {MemberID: "m2", WorkerID: "m2:8083", State: "RETRYING", LagUnknown: true, At: now}}},
			state: StateRetrying, lag: 300, members: 2,
			slots: []slotWant{{StateUnassigned, "", time.Time{}, 0, true, 0}},
		},
		{
			name: "nobody started, nobody can count: unknown",
			in: clusterInput{tasks: 1, selfID: "m1", members: map[string]statustopic.MemberRecord{
				"m1": {MemberID: "m1", WorkerID: "m1:8083", State: "RETRYING", LagUnknown: true, At: now}}},
			state: StateRetrying, lag: 0, unknown: true, members: 1,
			slots: []slotWant{{StateUnassigned, "", time.Time{}, 0, true, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.name, tc.in.now = "a->b", now
			if tc.in.slots == nil {
				tc.in.slots = map[int32]statustopic.SlotRecord{}
			}
			cf := buildCluster(tc.in)
			if cf.State != tc.state || cf.Lag != tc.lag || cf.LagUnknown != tc.unknown || len(cf.Members) != tc.members {
				t.Errorf("state %s lag %d unknown %v members %d; want %s %d %v %d", cf.State, cf.Lag, cf.LagUnknown, len(cf.Members), tc.state, tc.lag, tc.unknown, tc.members)
			}
			if d := cmp.Diff(tc.slots, sum(cf)); d != "" {
				t.Errorf("slots (-want +got):\n%s", d)
			}
			if tc.partState != "" && len(cf.Slots) > 1 && len(cf.Slots[1].Partitions) > 0 && cf.Slots[1].Partitions[0].State != tc.partState {
				t.Errorf("slot 1's first partition is %s, want %s", cf.Slots[1].Partitions[0].State, tc.partState)
			}
		})
	}
}

// BenchmarkBuildCluster: the cluster view of a flow of 20 000 partitions
// over 64 slots and 4 members (what every /status, scrape and publisher
// tick computes).
func BenchmarkBuildCluster(b *testing.B) {
	now := time.Now()
	in := clusterInput{name: "a->b", tasks: 64, selfID: "m0", now: now, members: map[string]statustopic.MemberRecord{},
		slots: map[int32]statustopic.SlotRecord{}}
	for i := range 4 {
		id := fmt.Sprintf("m%d", i)
		var slots []int32
		for k := int32(i); k < 64; k += 4 {
			slots = append(slots, k)
		}
		in.members[id] = statustopic.MemberRecord{MemberID: id, WorkerID: id + ":8083", Slots: slots, State: "RUNNING", Applied: statustopic.Running, At: now}
		for _, k := range slots {
			s := statustopic.SlotRecord{Slot: k, Owner: id, State: "RUNNING", At: now}
			for p := range 20000 / 64 {
				s.Partitions = append(s.Partitions, statustopic.PartitionRecord{Topic: fmt.Sprintf("t%d", p%50), Partition: int32(p), State: "RUNNING", Lag: 3})
			}
			in.slots[k] = s
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		cf := buildCluster(in)
		if len(cf.Slots) != 64 {
			b.Fatal(len(cf.Slots))
		}
	}
}
