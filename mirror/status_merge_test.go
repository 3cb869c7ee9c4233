package mirror

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// fullMerge is what statusOf computed before mergedPartitions reused its
// result: every unit's stored snapshot, concatenated and sorted, with the
// sums of their counters.
func fullMerge(units []*unit) ([]PartitionStatus, int64, int64) {
	var parts []PartitionStatus
	for _, u := range units {
		parts = u.snapshot(parts)
	}
	slices.SortStableFunc(parts, comparePartitions)
	var recs, bytes int64
	for _, p := range parts {
		recs += p.Records
		bytes += p.Bytes
	}
	return parts, recs, bytes
}

// fullBySlot is partitionsBySlot computed afresh.
func fullBySlot(parts []PartitionStatus, tasks int32) map[int32][]statustopic.PartitionRecord {
	by := map[int32][]statustopic.PartitionRecord{}
	for _, p := range parts {
		k := slotOf(p.Topic, p.Partition, tasks)
		by[k] = append(by[k], partitionRecord(p))
	}
	return by
}

// TestMergedPartitionsMatchFullMerge (issue 22: an idle member sorted all
// its partitions every status interval): over random sequences of units
// storing new snapshots, joining and leaving, the merged status that
// statusOf reuses is always the one a full merge gives, with the same
// counters; the status-topic records by slot and the change signature
// are those computed afresh; and an unchanged member gets the very same
// merge back (no partition visited).
func TestMergedPartitionsMatchFullMerge(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(22, 6000))
	f := &flow{tasks: 4}
	units := []*unit{{slot: 0}, {slot: 1}, {slot: 2}}
	snap := func(u *unit) {
		var st []PartitionStatus
		for i := range rng.IntN(6) {
			st = append(st, PartitionStatus{Topic: fmt.Sprintf("t%d", rng.IntN(4)), Partition: int32(u.slot)*100 + int32(i),
				State: []State{StateRunning, StateRetrying, StateFailed}[rng.IntN(3)], Records: rng.Int64N(1000), Bytes: rng.Int64N(1 << 20), Lag: rng.Int64N(50)})
		}
		u.status.Store(&st)
	}
	var sigs changeSigs
	var last *mergedUnits
	for step := range 500 {
		r := rng.IntN(10)
		switch {
		case r < 4:
			snap(units[rng.IntN(len(units))])
		case r == 4 && len(units) > 1:
			units = slices.Delete(units, 0, 1) // a slot released
		case r == 5:
			u := &unit{slot: int32(len(units) + step)}
			snap(u)
			units = append(units, u)
		}
		m := f.mergedPartitions(units)
		want, recs, bytes := fullMerge(units)
		if diff := cmp.Diff(want, m.parts, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("step %d: merged partitions differ from a full merge (-want +got):\n%s", step, diff)
		}
		if m.records != recs || m.bytes != bytes {
			t.Fatalf("step %d: merged counters %d records, %d bytes; a full merge gives %d, %d", step, m.records, m.bytes, recs, bytes)
		}
		if again := f.mergedPartitions(slices.Clone(units)); again != m {
			t.Fatalf("step %d: an unchanged member's merge was built again", step)
		}
		if last != nil && r >= 6 && m != last {
			t.Fatalf("step %d: nothing changed but the merge was built again", step)
		}
		last = m
		fs := FlowStatus{State: StateRunning, Member: MemberStatus{Slots: []int32{0}}, Partitions: m.parts}
		if got, want := sigs.of(fs), changeSig(fs); got != want {
			t.Fatalf("step %d: change signature %q, want %q", step, got, want)
		}
		if diff := cmp.Diff(fullBySlot(m.parts, f.tasks), f.partitionsBySlot(m.parts), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("step %d: partitions by slot differ from a fresh grouping (-want +got):\n%s", step, diff)
		}
	}
}

// TestBufferedRecords: a slot's producer holds at most its buffer's bytes
// / 2 KiB records, at least 512 (issue 22: small records filled a buffer
// counted by payload alone with several times its budget in memory).
func TestBufferedRecords(t *testing.T) {
	for _, c := range []struct {
		buf  int64
		want int
	}{
		{32 << 20, 16384}, // one slot, MM2's buffer.memory
		{16 << 20, 8192},  // two slots
		{4 << 20, 2048},   // eight slots (kmirror's default tasks.max)
		{1 << 20, 512},    // the floor of a slot's buffer
		{100 << 10, 512},  // below it: still 512
		{64 << 20, 32768}, // a record limit of 64 MiB raised the buffer
	} {
		if got := bufferedRecords(c.buf); got != c.want {
			t.Errorf("bufferedRecords(%d) = %d, want %d", c.buf, got, c.want)
		}
	}
}

// TestReplicationConsumerFetchWait: a unit's consumer waits fetchMaxWait
// (5 s) for records unless the source consumer's properties set
// fetch.max.wait.ms, which wins (found by the break-it review: kmirror's
// option came after the user's and overrode it).
func TestReplicationConsumerFetchWait(t *testing.T) {
	for _, c := range []struct {
		name string
		user []kgo.Opt
		want time.Duration
	}{
		{"default", nil, 5 * time.Second},
		{"user's fetch.max.wait.ms", []kgo.Opt{kgo.FetchMaxWait(100 * time.Millisecond)}, 100 * time.Millisecond},
	} {
		cl, err := kgo.NewClient(append(replicationConsumerRole(c.user, nil), kgo.SeedBrokers("127.0.0.1:1"))...)
		if err != nil {
			t.Fatal(err)
		}
		if got := cl.OptValue(kgo.FetchMaxWait); got != c.want {
			t.Errorf("%s: fetch max wait %v, want %v", c.name, got, c.want)
		}
		cl.Close()
	}
}
