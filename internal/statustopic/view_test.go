package statustopic

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// feed applies recs to a new View with consecutive offsets.
func feed(recs ...*kgo.Record) *View {
	v := NewView()
	for i, r := range recs {
		r.Offset = int64(i)
		v.Apply(r)
	}
	return v
}

func TestSlotRecordsChunkAndReassemble(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var parts []PartitionRecord
	for i := range 9000 { // ~120 bytes each: more than one chunk
		parts = append(parts, PartitionRecord{Topic: "orders-with-a-long-name", Partition: int32(i), State: "RUNNING", SourceEnd: 123456789, Replicated: 123456789, Committed: 123456788})
	}
	s := SlotRecord{Flow: "a->b", Slot: 3, Owner: "w1-1", State: "RUNNING", Partitions: parts, IntervalMS: 5000, At: at}
	recs, err := SlotRecords("a", s, 5)
	if err != nil {
		t.Fatal(err)
	}
	var chunks, tombs int
	for _, r := range recs {
		if r.Value == nil {
			tombs++
			continue
		}
		chunks++
		if len(r.Value) > MaxChunkBytes {
			t.Fatalf("chunk %s is %d bytes", r.Key, len(r.Value))
		}
	}
	if chunks < 2 || tombs != 5-chunks || string(recs[chunks-1].Key) != "slot:3" {
		t.Fatalf("%d chunks, %d tombstones, chunk 0 at %d (%s)", chunks, tombs, chunks-1, recs[chunks-1].Key)
	}
	v := feed(recs...)
	got, complete, ok := v.Slot(3)
	if !ok || !complete || len(got.Partitions) != 9000 || got.Partitions[8999].Partition != 8999 || v.SlotChunks(3) != chunks {
		t.Fatalf("reassembled: ok %v complete %v, %d partitions, %d chunks", ok, complete, len(got.Partitions), v.SlotChunks(3))
	}
	if owner, ok := v.SlotOwner(3); !ok || owner != "w1-1" {
		t.Fatalf("SlotOwner(3) = %q, %v; want w1-1, true", owner, ok)
	}
	if owner, ok := v.SlotOwner(4); ok || owner != "" {
		t.Fatalf("SlotOwner(4) of a slot never written = %q, %v; want \"\", false", owner, ok)
	}
	// A newer chunk 0 whose other chunks are missing is incomplete.
	s.At = at.Add(time.Second)
	s.Partitions = parts[:10]
	first, _ := SlotRecords("a", SlotRecord{Flow: "a->b", Slot: 3, Owner: "w1-1", At: s.At, Partitions: parts}, 0)
	v.Apply(first[len(first)-1])
	if _, complete, _ := v.Slot(3); complete {
		t.Fatal("a chunk 0 without its other chunks reads complete")
	}
	// Tombstones: the slot is gone, with the time.
	for _, r := range SlotTombstones("a", 3, chunks) {
		r.Timestamp = at.Add(time.Minute)
		v.Apply(r)
	}
	if _, _, ok := v.Slot(3); ok || !v.SlotGoneAt(3).Equal(at.Add(time.Minute)) {
		t.Fatalf("after tombstones: slot present %v, gone at %v", ok, v.SlotGoneAt(3))
	}
	if owner, ok := v.SlotOwner(3); ok {
		t.Fatalf("after tombstones: SlotOwner(3) = %q, true; want none", owner)
	}
}

func TestViewMembersAndTargetState(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	m1, _ := MemberRecordOf("a", MemberRecord{Flow: "a->b", MemberID: "w1-1", WorkerID: "w1:8083", Applied: Paused, IntervalMS: 1000, At: now.Add(-2 * time.Second)})
	m2, _ := MemberRecordOf("a", MemberRecord{Flow: "a->b", MemberID: "w2-1", WorkerID: "w2:8083", Applied: Running, IntervalMS: 1000, At: now.Add(-4 * time.Second)})
	m3, _ := MemberRecordOf("a", MemberRecord{Flow: "a->b", MemberID: "w3-1", WorkerID: "w3:8083", Applied: Paused, At: now})
	ts, _ := TargetStateRecordOf("a", TargetStateRecord{Flow: "a->b", State: Paused, At: now})
	v := feed(m1, m2, m3, ts, MemberTombstone("a", "w3-1"), &kgo.Record{Key: []byte("member:w4-1"), Value: []byte("{not json")})
	live := v.LiveMembers(now)
	// w2 is 4 s old with a 1 s interval: stale; w3 left; w4 undecodable.
	if len(live) != 1 || live[0].MemberID != "w1-1" || live[0].Applied != Paused || live[0].Age != 2*time.Second || live[0].WorkerID != "w1:8083" {
		t.Fatalf("live members %+v", live)
	}
	if v.Bad != 1 {
		t.Fatalf("Bad = %d, want 1", v.Bad)
	}
	if rec, found := v.TargetState(); !found || rec.State != Paused {
		t.Fatalf("target state %+v %v", rec, found)
	}
	if _, err := MemberRecordOf("a", MemberRecord{}); err == nil || !strings.Contains(err.Error(), "member id") {
		t.Fatalf("a member record without id: %v", err)
	}
	// A tombstoned target state is RUNNING again, and a change.
	if !v.Apply(&kgo.Record{Key: []byte(TargetStateKey), Offset: 9}) {
		t.Fatal("a tombstoned target state is not a change")
	}
	if rec, found := v.TargetState(); found || rec.State != Running || v.Next != 10 {
		t.Fatalf("after the tombstone: %+v %v, next %d", rec, found, v.Next)
	}
}

// TestAppliedStateOffset: the View names the offset of the target-state
// record it holds (a record of the same state written again is a change,
// so members report the new offset); a member record carries the offset of
// the record it applied as applied_state_offset (0 kept: a pointer), and a
// record of an older release without it reads as -1.
func TestAppliedStateOffset(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	v := NewView()
	if off := v.TargetOffset(); off != -1 {
		t.Fatalf("empty view: target offset %d, want -1", off)
	}
	stop := []byte(`{"flow":"a->b","state":"STOPPED"}`)
	if !v.Apply(&kgo.Record{Key: []byte(TargetStateKey), Value: stop, Offset: 3}) || v.TargetOffset() != 3 {
		t.Fatalf("first STOPPED: target offset %d, want 3 and a change", v.TargetOffset())
	}
	if !v.Apply(&kgo.Record{Key: []byte(TargetStateKey), Value: stop, Offset: 6}) || v.TargetOffset() != 6 {
		t.Fatalf("STOPPED written again: target offset %d, want 6 and a change", v.TargetOffset())
	}
	zero := int64(0)
	for i, m := range []MemberRecord{
		{Flow: "a->b", MemberID: "new-0", Applied: Stopped, AppliedOffset: &zero, IntervalMS: 5000, At: now},
		{Flow: "a->b", MemberID: "old", Applied: Stopped, IntervalMS: 5000, At: now},
	} {
		r, err := MemberRecordOf("a", m)
		if err != nil {
			t.Fatal(err)
		}
		if want := m.AppliedOffset != nil; strings.Contains(string(r.Value), `"applied_state_offset":0`) != want {
			t.Errorf("member %s: %s; applied_state_offset present: want %v", m.MemberID, r.Value, want)
		}
		r.Offset = int64(7 + i)
		v.Apply(r)
	}
	live := v.LiveMembers(now)
	if len(live) != 2 || live[0].MemberID != "new-0" || live[0].AppliedOffset != 0 || live[1].MemberID != "old" || live[1].AppliedOffset != -1 {
		t.Fatalf("live members %+v; want new-0 at offset 0, old at -1", live)
	}
}

// TestViewRestartRequest: the View hands out every restart request it
// read since the last TakeRestarts, in log order with its offset, once;
// tombstones ask nothing and records it cannot read (or a partition
// without a topic, which only a hand-written record has) are counted bad.
func TestViewRestartRequest(t *testing.T) {
	at := time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC)
	req := func(topic string, p int32) *kgo.Record {
		r, err := RestartRecordOf("a", RestartRecord{Flow: "a->b", Topic: topic, Partition: p, At: at, By: "w1", FromMember: "w1-1"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		rec  RestartRecord
		want string
	}{
		{RestartRecord{Flow: "a->b", Partition: -3}, "partition -3"},
		{RestartRecord{Flow: "a->b", Partition: 2}, "partition 2 without a topic"},
		{RestartRecord{Flow: "a->b", Partition: -1, Slot: new(int32(-1))}, "slot -1"},
	} {
		if _, err := RestartRecordOf("a", c.rec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RestartRecordOf %+v: err %v, want one saying %q", c.rec, err, c.want)
		}
	}
	tomb := &kgo.Record{Key: []byte(RestartKey)}
	bad := &kgo.Record{Key: []byte(RestartKey), Value: []byte("{not json")}
	noTopic := &kgo.Record{Key: []byte(RestartKey), Value: []byte(`{"flow":"a->b","partition":2}`)}
	type got struct {
		Topic     string
		Partition int32
		Offset    int64
	}
	for _, c := range []struct {
		name    string
		recs    []*kgo.Record
		want    []got
		wantBad int
	}{
		{"none", nil, nil, 0},
		{"one", []*kgo.Record{req("orders", 3)}, []got{{"orders", 3, 0}}, 0},
		{"two in one read, both in order", []*kgo.Record{req("orders", 3), req("", -1)}, []got{{"orders", 3, 0}, {"", -1, 1}}, 0},
		{"a tombstone asks nothing", []*kgo.Record{req("orders", 3), tomb}, []got{{"orders", 3, 0}}, 0},
		{"unreadable and topic-less records skipped", []*kgo.Record{bad, req("orders", 0), noTopic}, []got{{"orders", 0, 1}}, 2},
	} {
		v := feed(c.recs...)
		var out []got
		for _, e := range v.TakeRestarts() {
			out = append(out, got{e.Topic, e.Partition, e.Offset})
			if e.Flow != "a->b" || e.FromMember != "w1-1" || !e.At.Equal(at) {
				t.Errorf("%s: request %+v: want flow a->b from w1-1 at %v", c.name, e, at)
			}
		}
		if fmt.Sprint(out) != fmt.Sprint(c.want) || v.Bad != c.wantBad {
			t.Errorf("%s: TakeRestarts() = %v (bad %d), want %v (bad %d)", c.name, out, v.Bad, c.want, c.wantBad)
		}
		if again := v.TakeRestarts(); len(again) != 0 {
			t.Errorf("%s: TakeRestarts() again = %v, want none (each is handed out once)", c.name, again)
		}
	}
	// A reader that never takes them keeps the newest maxPendingRestarts.
	v := NewView()
	for i := range maxPendingRestarts + 10 {
		r := req("orders", 0)
		r.Offset = int64(i)
		v.Apply(r)
	}
	if rs := v.TakeRestarts(); len(rs) != maxPendingRestarts || rs[0].Offset != 10 {
		t.Errorf("after %d requests never taken: %d kept from offset %d, want %d from 10", maxPendingRestarts+10, len(rs), rs[0].Offset, maxPendingRestarts)
	}
}
