package statustopic

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

func TestParseTargetState(t *testing.T) {
	for in, want := range map[string]TargetState{"running": Running, " PAUSED ": Paused, "Stopped": Stopped} {
		if got, err := ParseTargetState(in); err != nil || got != want {
			t.Errorf("ParseTargetState(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseTargetState("halted"); err == nil || err.Error() != `target state "halted": write RUNNING, PAUSED or STOPPED` {
		t.Errorf("ParseTargetState(halted) error = %v", err)
	}
}

func TestLatestTakesLastAndDropsTombstones(t *testing.T) {
	recs := []*kgo.Record{
		{Key: []byte("a"), Value: []byte("1")},
		{Key: []byte("b"), Value: []byte("2")},
		{Key: []byte("a"), Value: []byte("3")},
		{Key: []byte("b"), Value: nil},
		{Key: []byte("c"), Value: []byte{}},
	}
	want := map[string][]byte{"a": []byte("3"), "c": {}}
	if diff := cmp.Diff(want, Latest(recs)); diff != "" {
		t.Errorf("Latest (-want +got):\n%s", diff)
	}
}

// TestMembersOfDecodesMemberRecordsOnly: MembersOf keeps the member
// records of a read, keyed and MemberID'd by their key, and leaves out
// other keys and values it cannot decode.
func TestMembersOfDecodesMemberRecordsOnly(t *testing.T) {
	all := map[string][]byte{
		MemberKey("w1-a"): []byte(`{"flow":"A->B","worker_id":"10.0.0.1:8083","group_member_id":"g-1","generation":3,"slots":[0]}`),
		MemberKey("w2-b"): []byte(`{not json`),
		SlotKey(0, 0):     []byte(`{"owner":"w1-a"}`),
		TargetStateKey:    []byte(`{"flow":"A->B","state":"STOPPED"}`),
		MemberKey("w3-c"): []byte(`{"flow":"A->B","worker_id":"10.0.0.3:8083"}`),
	}
	want := map[string]MemberRecord{
		"w1-a": {Flow: "A->B", MemberID: "w1-a", WorkerID: "10.0.0.1:8083", GroupMemberID: "g-1", Generation: 3, Slots: []int32{0}},
		"w3-c": {Flow: "A->B", MemberID: "w3-c", WorkerID: "10.0.0.3:8083"},
	}
	if diff := cmp.Diff(want, MembersOf(all)); diff != "" {
		t.Errorf("MembersOf (-want +got):\n%s", diff)
	}
}

func TestTargetStateRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	in := TargetStateRecord{Flow: "east->west", State: Stopped, At: at, By: "kmirror failover", Reason: "east is down"}
	r, err := TargetStateRecordOf("east", in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Topic != "mm2-kmirror-status.east.internal" || string(r.Key) != "target-state" {
		t.Fatalf("record topic %q key %q", r.Topic, r.Key)
	}
	want := `{"flow":"east->west","state":"STOPPED","at":"2026-12-02T10:00:00Z","by":"kmirror failover","reason":"east is down"}`
	if string(r.Value) != want {
		t.Fatalf("value %s, want %s", r.Value, want)
	}
	out, err := DecodeTargetState(r.Value)
	if err != nil || !cmp.Equal(in, out) {
		t.Fatalf("decoded %+v, %v; want %+v", out, err, in)
	}
	if _, err := TargetStateRecordOf("east", TargetStateRecord{State: "HALTED"}); err == nil {
		t.Fatal("a bad state was encoded")
	}
	if _, err := DecodeTargetState([]byte(`{"state":"HALTED"}`)); err == nil {
		t.Fatal("a bad state was decoded")
	}
}

func TestReadAndWriteTargetState(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	ctx := context.Background()
	// No topic yet: RUNNING, not found.
	rec, found, err := ReadTargetState(ctx, p.Target.Opts(), p.Source.Alias)
	if err != nil || found || rec.State != Running {
		t.Fatalf("before any record: %+v, found %v, %v; want RUNNING, not found", rec, found, err)
	}
	if _, err := ensuretopic.Ensure(ctx, kadm.NewClient(testcluster.Client(t, &p.Target)), Spec(p.Source.Alias, p.Target.Alias, -1)); err != nil {
		t.Fatal(err)
	}
	cl := testcluster.Client(t, &p.Target)
	flow := p.Source.Alias + "->" + p.Target.Alias
	for _, st := range []TargetState{Paused, Stopped} {
		if err := WriteTargetState(ctx, cl, p.Source.Alias, TargetStateRecord{Flow: flow, State: st, At: time.Now().UTC(), By: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	// Another key in the same topic is not the target state.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: Topic(p.Source.Alias), Key: []byte("member:x"), Value: []byte(`{}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	rec, found, err = ReadTargetState(ctx, p.Target.Opts(), p.Source.Alias)
	if err != nil || !found || rec.State != Stopped || rec.Flow != flow || rec.By != "test" {
		t.Fatalf("after PAUSED then STOPPED: %+v, found %v, %v; want STOPPED by test", rec, found, err)
	}
}

// TestReadAndWriteDR: the DR record kmirror failover and failback write
// once they committed reads back; none, or one that does not decode, is
// not found (it says nothing of what was committed).
func TestReadAndWriteDR(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	ctx := context.Background()
	if _, found, err := ReadDR(ctx, p.Target.Opts(), p.Source.Alias); err != nil || found {
		t.Fatalf("before any record: found %v, %v", found, err)
	}
	if _, err := ensuretopic.Ensure(ctx, kadm.NewClient(testcluster.Client(t, &p.Target)), Spec(p.Source.Alias, p.Target.Alias, -1)); err != nil {
		t.Fatal(err)
	}
	cl := testcluster.Client(t, &p.Target)
	want := DRRecord{Flow: p.Source.Alias + "->" + p.Target.Alias, At: time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC), Groups: map[string]string{"a": "failover", "b": "failback"}}
	if err := WriteDR(ctx, cl, p.Source.Alias, want); err != nil {
		t.Fatal(err)
	}
	got, found, err := ReadDR(ctx, p.Target.Opts(), p.Source.Alias)
	if err != nil || !found || got.Flow != want.Flow || !got.At.Equal(want.At) || fmt.Sprint(got.Groups) != "map[a:failover b:failback]" {
		t.Fatalf("read back %+v, found %v, %v; want %+v", got, found, err, want)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: Topic(p.Source.Alias), Key: []byte(DRKey), Value: []byte(`{"groups":`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ReadDR(ctx, p.Target.Opts(), p.Source.Alias); err != nil || found {
		t.Errorf("after an undecodable record: found %v, %v; want not found", found, err)
	}
}
