package checkpoint

import (
	"context"
	"slices"
	"testing"
	"time"
)

// chunkSide is a side of the in-memory model (incremental_test.go) that
// records the size of each write an emission makes and can fail one of
// them as a whole (the target refusing every record of a chunk) or
// cancel the emission's context in one.
type chunkSide struct {
	*side
	calls  []int
	failAt int // the call (1-based) that fails as a whole; 0: none
	cancel func()
	stopAt int // the call (1-based) during which cancel is called
	ok     []Checkpoint
}

func (c *chunkSide) write(ctx context.Context, ts time.Time, cps []Checkpoint) []Checkpoint {
	c.calls = append(c.calls, len(cps))
	n := len(c.calls)
	if n == c.stopAt {
		c.cancel()
	}
	if n == c.failAt {
		for _, cp := range cps {
			c.e.cps.Forget(cp.Group, cp.Topic, cp.Partition)
		}
		return append([]Checkpoint(nil), cps...)
	}
	c.ok = append(c.ok, cps...)
	return nil
}

// TestEmissionWritesChunks (issue 22): an emission queues and writes its
// checkpoints writeChunk group partitions at a time, in checkpoint order
// across chunks. A chunk whose write fails leaves its group partitions
// pending and the later chunks are written; a stop ends the emission with
// the group partitions not yet queued pending. The next emission writes
// exactly those, so that every group partition has its checkpoint once,
// as without chunks. TestIncrementalEqualsFullSmallChunks compares whole
// histories with chunks of 3.
func TestEmissionWritesChunks(t *testing.T) {
	old := writeChunk
	writeChunk = 25
	t.Cleanup(func() { writeChunk = old })
	const gps = 4 * 3 * 10 // groups x topics each x partitions
	world := func() *chunkSide {
		m, _ := scaleWorld(6, 10, 4, 3)
		return &chunkSide{side: readSide(t, m)}
	}
	ordered := func(t *testing.T, cps []Checkpoint) {
		t.Helper()
		if !slices.IsSortedFunc(cps, cpCompare) {
			t.Errorf("checkpoints not written in (group, topic, partition) order: %v", cps)
		}
	}

	all := world()
	all.e.emit(t.Context(), all)
	if want := []int{25, 25, 25, 25, 20}; !slices.Equal(all.calls, want) {
		t.Fatalf("write calls of %d checkpoints, want %v", all.calls, want)
	}
	ordered(t, all.ok)
	if len(all.ok) != gps {
		t.Fatalf("%d checkpoints written, want %d", len(all.ok), gps)
	}
	for i, cp := range all.ok {
		if cp.UpstreamOffset != 10 || cp.DownstreamOffset != 10 {
			t.Fatalf("checkpoint %d = %+v, want upstream and downstream offset 10", i, cp)
		}
	}

	t.Run("failed chunk", func(t *testing.T) {
		s := world()
		s.failAt = 2
		s.e.emit(t.Context(), s)
		if want := []int{25, 25, 25, 25, 20}; !slices.Equal(s.calls, want) {
			t.Fatalf("write calls %v, want %v: the chunks after the failed one are written", s.calls, want)
		}
		if len(s.e.pending) != 25 {
			t.Fatalf("%d group partitions pending, want 25 (the failed chunk's)", len(s.e.pending))
		}
		failed := slices.Clone(all.ok[25:50])
		s.calls, s.failAt = nil, 0
		s.e.emit(t.Context(), s)
		if want := []int{25}; !slices.Equal(s.calls, want) {
			t.Fatalf("next emission: write calls %v, want %v", s.calls, want)
		}
		if got := s.ok[len(s.ok)-25:]; !slices.Equal(got, failed) {
			t.Fatalf("next emission wrote %v, want the failed chunk's %v", got, failed)
		}
		if !slices.Equal(sortedCps(s.ok), all.ok) {
			t.Fatalf("written over two emissions %v, want %v", sortedCps(s.ok), all.ok)
		}
	})

	t.Run("stop", func(t *testing.T) {
		s := world()
		ctx, cancel := context.WithCancel(t.Context())
		s.cancel, s.stopAt = cancel, 3
		s.e.emit(ctx, s)
		if want := []int{25, 25, 25}; !slices.Equal(s.calls, want) {
			t.Fatalf("write calls %v, want %v: chunks were written after the stop", s.calls, want)
		}
		if len(s.e.pending) != gps-75 {
			t.Fatalf("%d group partitions pending, want %d", len(s.e.pending), gps-75)
		}
		s.calls = nil
		s.e.emit(t.Context(), s)
		if want := []int{25, 20}; !slices.Equal(s.calls, want) {
			t.Fatalf("next emission: write calls %v, want %v", s.calls, want)
		}
		if !slices.Equal(s.ok, all.ok) {
			t.Fatalf("written over two emissions %v, want %v", s.ok, all.ok)
		}
	})
}

func sortedCps(cps []Checkpoint) []Checkpoint {
	out := slices.Clone(cps)
	slices.SortFunc(out, cpCompare)
	return out
}
