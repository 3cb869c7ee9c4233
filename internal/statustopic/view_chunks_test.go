package statustopic

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSlotForeignChunkCountDoesNotWedge shows that a slot record whose
// "chunks" count is absurd (a foreign or corrupt record, or a newer writer's
// bug) does not wedge View.Slot: Slot used to loop from 1 to the record's
// Chunks, so "chunks": MaxInt held the flow's view lock forever (the
// publisher's slotsOverwritten, Mirror.ClusterStatus and the unassigned
// slots' lag all call it under that lock). The slot reads incomplete, with
// the partitions of the chunks that are there.
func TestSlotForeignChunkCountDoesNotWedge(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, n := range []int{math.MaxInt, 1 << 40} {
		v := NewView()
		c1, _ := Marshal(SlotRecord{Slot: 1, Owner: "w", Chunk: 1, Chunks: n, At: at, Partitions: []PartitionRecord{{Topic: "t", Partition: 1}}})
		c0, _ := Marshal(SlotRecord{Slot: 1, Owner: "w", Chunks: n, At: at, Partitions: []PartitionRecord{{Topic: "t", Partition: 0}}})
		v.Apply(&kgo.Record{Key: []byte("slot:1:1"), Value: c1, Offset: 0})
		v.Apply(&kgo.Record{Key: []byte("slot:1"), Value: c0, Offset: 1})
		type res struct {
			s        SlotRecord
			complete bool
			ok       bool
		}
		done := make(chan res, 1)
		go func() {
			s, complete, ok := v.Slot(1)
			done <- res{s, complete, ok}
		}()
		select {
		case r := <-done:
			if !r.ok || r.complete || len(r.s.Partitions) != 2 || r.s.Partitions[1].Partition != 1 {
				t.Fatalf("chunks=%d: ok %v complete %v partitions %+v", n, r.ok, r.complete, r.s.Partitions)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("chunks=%d: View.Slot still running after 5 s (it loops up to the record's chunk count)", n)
		}
	}
}
