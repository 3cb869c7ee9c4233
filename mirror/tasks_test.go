package mirror

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/checkpoint"
)

// TestGroupOffsetsCache: Status's group Offsets are built from the
// emitter's partitions once per Partitions slice, reused while the emitter
// reports the same slice, rebuilt when it reports another, and dropped
// with the group.
func TestGroupOffsetsCache(t *testing.T) {
	partsA := []checkpoint.PartitionStatus{
		{Topic: "orders", RemoteTopic: "src.orders", Partition: 0, Translated: 40},
		{Topic: "orders", RemoteTopic: "src.orders", Partition: 1, Translated: -1},
		{Topic: "pay", RemoteTopic: "src.pay", Partition: 2, Translated: 7},
	}
	partsB := []checkpoint.PartitionStatus{{Topic: "x", RemoteTopic: "src.x", Partition: 0, Translated: -1}}
	var c groupOffsetsCache

	first := c.statuses([]checkpoint.GroupStatus{{Group: "a", Partitions: partsA}, {Group: "b", Partitions: partsB}, {Group: "c"}})
	wantA := map[string]map[int32]int64{"src.orders": {0: 40}, "src.pay": {2: 7}}
	if diff := cmp.Diff(wantA, first[0].Offsets); diff != "" {
		t.Fatalf("group a's offsets (-want +got):\n%s", diff)
	}
	if first[1].Offsets != nil || first[2].Offsets != nil {
		t.Fatalf("groups without a translation: offsets %v and %v, want nil", first[1].Offsets, first[2].Offsets)
	}
	if len(c.by) != 2 {
		t.Fatalf("cached %d groups, want 2 (a and b; c has no partitions)", len(c.by))
	}

	again := c.statuses([]checkpoint.GroupStatus{{Group: "a", Partitions: partsA}, {Group: "b", Partitions: partsB}})
	if reflect.ValueOf(again[0].Offsets).Pointer() != reflect.ValueOf(first[0].Offsets).Pointer() {
		t.Fatal("same Partitions slice: group a's Offsets were built again, want the cached map")
	}

	moved := append([]checkpoint.PartitionStatus(nil), partsA...)
	moved[0].Translated = 55
	third := c.statuses([]checkpoint.GroupStatus{{Group: "a", Partitions: moved}})
	if reflect.ValueOf(third[0].Offsets).Pointer() == reflect.ValueOf(first[0].Offsets).Pointer() {
		t.Fatal("new Partitions slice: group a's Offsets are the old map")
	}
	if got := third[0].Offsets["src.orders"][0]; got != 55 {
		t.Fatalf("group a's src.orders-0 after the move = %d, want 55", got)
	}
	if first[0].Offsets["src.orders"][0] != 40 {
		t.Fatalf("the earlier snapshot changed: src.orders-0 = %d, want 40", first[0].Offsets["src.orders"][0])
	}
	if _, ok := c.by["b"]; ok || len(c.by) != 1 {
		t.Fatalf("cache holds %d groups after b left, want only a", len(c.by))
	}

	if out := c.statuses(nil); out != nil || c.by != nil {
		t.Fatalf("no groups: statuses %v, cache %v, want both nil", out, c.by)
	}
}
