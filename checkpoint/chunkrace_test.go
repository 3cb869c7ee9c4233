package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// hookSide is a side of the in-memory model whose checkpoint writes run
// a hook first: what the syncs tailer adds under storeMu between two
// chunks of an emission (writeChecked releases it while a chunk is
// written).
type hookSide struct {
	*side
	calls   int
	onWrite func(call int)
}

func (h *hookSide) write(ctx context.Context, ts time.Time, cps []Checkpoint) []Checkpoint {
	h.calls++
	if h.onWrite != nil {
		h.onWrite(h.calls)
	}
	return h.side.write(ctx, ts, cps)
}

// smallChunks sets writeChunk to n for the test.
func smallChunks(t *testing.T, n int) {
	t.Helper()
	old := writeChunk
	writeChunk = n
	t.Cleanup(func() { writeChunk = old })
}

// TestTaggedRefillArrivingBetweenChunks is
// TestTaggedRefillArrivingWhileListingAfterUntaggedSyncs with the refill's
// first syncs (recording the new topic ID) arriving while the emission
// writes an earlier chunk (group a's checkpoint), after checkTarget judged
// g's translation (10, from the old log's untagged syncs) and before g's
// chunk is queued. The translation was made before the record that first
// records an ID, so it is held as at the listing: no checkpoint of g this
// emission, and none recording the new ID for source offset 10 at 10
// (exact offset 5); group offset sync commits 5, never 10.
func TestTaggedRefillArrivingBetweenChunks(t *testing.T) {
	smallChunks(t, 1)
	m, old, refill := untaggedThenTaggedRefill(t)
	k1 := tpKey{"t1", 0}
	m.produce(k1, 10, 0)
	m.replicate(k1, 10)
	other := m.feed
	m.feed = nil
	m.commits["a"] = map[tpKey]int64{k1: 10}

	s := newSide(t, m, false)
	s.read(old)
	s.read(other)
	h := &hookSide{side: s}
	h.onWrite = func(call int) {
		if call == 1 {
			s.read(refill)
		}
	}
	cpA := Checkpoint{Group: "a", Topic: "src.t1", Partition: 0, UpstreamOffset: 10, DownstreamOffset: 10, Metadata: "m"}
	s.e.forceSweep = true
	s.e.emit(t.Context(), h)
	if d := cmp.Diff([]Checkpoint{cpA}, s.emitted, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("first emission's checkpoints (-want +got):\n%s", d)
	}
	for _, w := range s.written {
		if w.cp.Group == "g" && w.target.topic != ([16]byte{}) && w.cp.DownstreamOffset != 5 {
			t.Fatalf("checkpoint %+v of the old log's translation records the new topic ID %x", w.cp, w.target.topic)
		}
	}
	syncRound(t, s, []string{"a src.t1-0=10"})
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
	syncRound(t, s, []string{"g src.t0-0=5"})
	if len(s.skips) > 0 {
		t.Fatalf("group offset sync skips records: %v", s.skips)
	}
}

// TestFailedChunkKeepsGroupWriteError: a group whose partitions span two
// chunks, the first chunk's write failing and the second's succeeding,
// still says its checkpoints could not be written, as when one write
// holds both (wrote's rule: a write of the group that failed keeps the
// reason; the next emission writes the failed partition again and clears
// it). Before, the second chunk's success cleared the reason of the
// first's failure in the same emission, with one partition unwritten.
func TestFailedChunkKeepsGroupWriteError(t *testing.T) {
	smallChunks(t, 1)
	m, _ := scaleWorld(1, 2, 1, 1)
	s := &chunkSide{side: readSide(t, m)}
	s.e.cfg.SyncGroupOffsets = false // the status's reason is the write's
	s.failAt = 1
	s.e.emit(t.Context(), s)
	if want := []int{1, 1}; !slices.Equal(s.calls, want) {
		t.Fatalf("write calls %v, want %v", s.calls, want)
	}
	want := "writing checkpoints to " + s.e.cpTopic + ": failed"
	st := s.e.Status()
	if len(st) != 1 || st[0].Reason != want {
		t.Fatalf("status %+v, want one group with reason %q", st, want)
	}
	if st[0].Partitions[0].Checkpointed != -1 || st[0].Partitions[1].Checkpointed != 10 {
		t.Fatalf("partitions %+v, want partition 0 not checkpointed, 1 at 10", st[0].Partitions)
	}
	s.calls, s.failAt = nil, 0
	s.e.emit(t.Context(), s)
	if want := []int{1}; !slices.Equal(s.calls, want) {
		t.Fatalf("next emission: write calls %v, want %v (the failed partition)", s.calls, want)
	}
	if st := s.e.Status(); st[0].Reason != "" || st[0].Partitions[0].Checkpointed != 10 {
		t.Fatalf("after the rewrite: status %+v, want no reason and partition 0 at 10", st[0])
	}
}

// TestStoppedEmissionThenGroupDeletedAndBack (an attack that held): an
// emission stopped after its second chunk of 2 leaves the 4 group
// partitions of g00001 pending; g00001 is deleted on the source before
// the next emission, which writes nothing and keeps nothing pending; it
// commits again and the next emission writes its 4 checkpoints, each
// once, in order.
func TestStoppedEmissionThenGroupDeletedAndBack(t *testing.T) {
	smallChunks(t, 2)
	m, _ := scaleWorld(1, 4, 2, 1)
	s := &chunkSide{side: readSide(t, m)}
	ctx, cancel := context.WithCancel(t.Context())
	s.cancel, s.stopAt = cancel, 2
	s.e.emit(ctx, s)
	if want := []int{2, 2}; !slices.Equal(s.calls, want) {
		t.Fatalf("write calls %v, want %v", s.calls, want)
	}
	if len(s.e.pending) != 4 {
		t.Fatalf("%d pending, want 4 (g00001's)", len(s.e.pending))
	}
	for pe := range s.e.pending {
		if pe.g.name != "g00001" {
			t.Fatalf("pending %s, want only g00001's", pe.g.name)
		}
	}
	saved := m.commits["g00001"]
	delete(m.commits, "g00001")
	s.calls = nil
	s.e.emit(t.Context(), s)
	if len(s.calls) != 0 || len(s.e.pending) != 0 {
		t.Fatalf("after the deletion: write calls %v, %d pending; want none", s.calls, len(s.e.pending))
	}
	m.commits["g00001"] = saved
	s.e.emit(t.Context(), s)
	if want := []int{2, 2}; !slices.Equal(s.calls, want) {
		t.Fatalf("after the group came back: write calls %v, want %v", s.calls, want)
	}
	var got []string
	for _, cp := range s.ok {
		got = append(got, fmt.Sprintf("%s/%d=%d", cp.Group, cp.Partition, cp.DownstreamOffset))
	}
	want := []string{"g00000/0=10", "g00000/1=10", "g00000/2=10", "g00000/3=10", "g00001/0=10", "g00001/1=10", "g00001/2=10", "g00001/3=10"}
	if !slices.Equal(got, want) {
		t.Fatalf("written %v, want %v", got, want)
	}
}
