package mirror

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/checkpoint"
)

// TestGroupOffsetsCache: Status's group Offsets are built from the
// emitter's partitions, reused while they hold the same translations (also
// from another slice: the cache holds no slice of the emitter's), rebuilt as
// a new map when a translation moved, appeared or went, and dropped with
// the group.
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

	copied := append([]checkpoint.PartitionStatus(nil), partsA...)
	copied[1].SourceOffset = 9 // not part of Offsets
	if got := c.statuses([]checkpoint.GroupStatus{{Group: "a", Partitions: copied}, {Group: "b", Partitions: partsB}}); reflect.ValueOf(got[0].Offsets).Pointer() != reflect.ValueOf(first[0].Offsets).Pointer() {
		t.Fatal("a new slice with the same translations: group a's Offsets were built again, want the cached map")
	}
	for _, tc := range []struct {
		name string
		edit func([]checkpoint.PartitionStatus) []checkpoint.PartitionStatus
		want map[string]map[int32]int64
	}{
		{"one appears", func(p []checkpoint.PartitionStatus) []checkpoint.PartitionStatus { p[1].Translated = 3; return p },
			map[string]map[int32]int64{"src.orders": {0: 40, 1: 3}, "src.pay": {2: 7}}},
		{"one goes", func(p []checkpoint.PartitionStatus) []checkpoint.PartitionStatus { p[2].Translated = -1; return p },
			map[string]map[int32]int64{"src.orders": {0: 40}}},
		{"a partition leaves", func(p []checkpoint.PartitionStatus) []checkpoint.PartitionStatus { return p[:2] },
			map[string]map[int32]int64{"src.orders": {0: 40}}},
		{"another partition, same offset", func(p []checkpoint.PartitionStatus) []checkpoint.PartitionStatus { p[2].Partition = 3; return p },
			map[string]map[int32]int64{"src.orders": {0: 40}, "src.pay": {3: 7}}},
	} {
		var d groupOffsetsCache
		d.statuses([]checkpoint.GroupStatus{{Group: "a", Partitions: partsA}})
		before := d.by["a"].offsets
		got := d.statuses([]checkpoint.GroupStatus{{Group: "a", Partitions: tc.edit(append([]checkpoint.PartitionStatus(nil), partsA...))}})
		if diff := cmp.Diff(tc.want, got[0].Offsets); diff != "" {
			t.Errorf("%s: offsets (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(wantA, before); diff != "" {
			t.Errorf("%s: the map handed out before changed (-want +got):\n%s", tc.name, diff)
		}
	}

	moved := append([]checkpoint.PartitionStatus(nil), partsA...)
	moved[0].Translated = 55
	third := c.statuses([]checkpoint.GroupStatus{{Group: "a", Partitions: moved}})
	if reflect.ValueOf(third[0].Offsets).Pointer() == reflect.ValueOf(first[0].Offsets).Pointer() {
		t.Fatal("a translation moved: group a's Offsets are the old map")
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
