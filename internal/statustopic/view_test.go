package statustopic

import (
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

// TestViewRestartRequest: the View keeps the last restart request and its
// offset; a tombstone or a record it cannot read moves the offset and asks
// nothing (Partition -2), so an older request is never taken for new.
func TestViewRestartRequest(t *testing.T) {
	at := time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC)
	req := func(topic string, p int32) *kgo.Record {
		r, err := RestartRecordOf("a", RestartRecord{Flow: "a->b", Topic: topic, Partition: p, At: at, By: "w1", FromMember: "w1-1"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := RestartRecordOf("a", RestartRecord{Flow: "a->b", Partition: -3}); err == nil || !strings.Contains(err.Error(), "partition -3") {
		t.Errorf("RestartRecordOf partition -3: err %v, want one naming it", err)
	}
	tomb := &kgo.Record{Key: []byte(RestartKey)}
	bad := &kgo.Record{Key: []byte(RestartKey), Value: []byte("{not json")}
	for _, c := range []struct {
		name      string
		recs      []*kgo.Record
		wantOff   int64
		wantTopic string
		wantPart  int32
		wantBad   int
	}{
		{"none", nil, -1, "", -2, 0},
		{"one", []*kgo.Record{req("orders", 3)}, 0, "orders", 3, 0},
		{"the last of two", []*kgo.Record{req("orders", 3), req("", -1)}, 1, "", -1, 0},
		{"tombstone after", []*kgo.Record{req("orders", 3), tomb}, 1, "", -2, 0},
		{"unreadable after", []*kgo.Record{req("orders", 3), bad}, 1, "", -2, 1},
		{"after a tombstone", []*kgo.Record{tomb, req("orders", 0)}, 1, "orders", 0, 0},
	} {
		v := feed(c.recs...)
		rec, off := v.Restart()
		if off != c.wantOff || rec.Topic != c.wantTopic || rec.Partition != c.wantPart || v.Bad != c.wantBad {
			t.Errorf("%s: Restart() = %+v at %d (bad %d), want topic %q partition %d at %d (bad %d)", c.name, rec, off, v.Bad, c.wantTopic, c.wantPart, c.wantOff, c.wantBad)
		}
		if c.wantPart >= 0 && (rec.Flow != "a->b" || rec.FromMember != "w1-1" || !rec.At.Equal(at)) {
			t.Errorf("%s: Restart() = %+v: want flow a->b from w1-1 at %v", c.name, rec, at)
		}
	}
}
