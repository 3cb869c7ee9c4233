package mirror

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kmirror/kmirror/checkpoint"
)

// runShape is an offset run without its session id and topic.
type runShape struct {
	Fresh                                    bool
	SessUp, SessDown, PrevUp, PrevDown       int64
	FirstUp, FirstDown, Count, End, ReadFrom int64
	Committed                                int64
}

func shapes(rs []checkpoint.OffsetRun) []runShape {
	var out []runShape
	for _, r := range rs {
		out = append(out, runShape{r.Fresh, r.SessionUpstreamOffset, r.SessionOffset, r.PrevUpstreamOffset, r.PrevOffset,
			r.FirstUpstreamOffset, r.FirstOffset, r.Count, r.EndUpstreamOffset, r.ReadFrom, r.Committed})
	}
	return out
}

// TestRunWriter feeds the offset-run writer a partition's acknowledgements
// and checks the runs it writes: a new session announces its first run at
// once; runs grow while both sides are consecutive; an upstream gap
// (transaction marker) starts a linked run, a target offset the session did
// not write an unlinked one, a replay a new session.
func TestRunWriter(t *testing.T) {
	t.Parallel()
	w := newSyncWriter(-1, [16]byte{7})
	if !w.ack(0, 0, 100) {
		t.Fatal("first acknowledgement: nothing due, want the first sync and the session's first run")
	}
	got := w.takeRuns(false)
	want := []runShape{{Fresh: true, SessUp: 0, SessDown: 0, PrevUp: -1, PrevDown: -1, FirstUp: 0, FirstDown: 0, Count: 1, End: -1, ReadFrom: 0, Committed: -1}}
	if d := cmp.Diff(want, shapes(got)); d != "" {
		t.Fatalf("announcement (-want +got):\n%s", d)
	}
	if got[0].TopicID != ([16]byte{7}) || got[0].Session == 0 {
		t.Errorf("topic ID %v session %d, want [7 0 ...] and a random session", got[0].TopicID, got[0].Session)
	}
	session := got[0].Session
	for u := int64(1); u < 10; u++ {
		w.ack(u, u, 100)
	}
	if rs := w.takeRuns(false); len(rs) != 0 {
		t.Errorf("runs due between flushes: %+v, want none", rs)
	}
	w.ack(11, 10, 100) // marker at 10
	w.ack(12, 11, 100)
	w.ack(13, 13, 100) // target offset 12 written by someone else
	w.promote(15, 13)  // polled to 15 (marker at 14), nothing in flight; resume point 13 stored
	got = w.takeRuns(true)
	want = []runShape{
		{Fresh: true, SessUp: 0, SessDown: 0, PrevUp: -1, PrevDown: -1, FirstUp: 0, FirstDown: 0, Count: 10, End: -1, ReadFrom: 0, Committed: -1},
		{Fresh: true, SessUp: 0, SessDown: 0, PrevUp: 9, PrevDown: 9, FirstUp: 11, FirstDown: 10, Count: 2, End: -1, ReadFrom: 0, Committed: -1},
		{Fresh: true, SessUp: 0, SessDown: 0, PrevUp: -1, PrevDown: -1, FirstUp: 13, FirstDown: 13, Count: 1, End: 15, ReadFrom: 0, Committed: 13},
	}
	if d := cmp.Diff(want, shapes(got)); d != "" {
		t.Errorf("runs at the flush (-want +got):\n%s", d)
	}
	for _, r := range got {
		r.Topic = "orders"
		if _, err := r.Value(); err != nil {
			t.Errorf("run %+v does not encode: %v", r, err)
		}
		if r.Session != session {
			t.Errorf("session changed to %d without a rewind", r.Session)
		}
	}
	if rs := w.takeRuns(true); len(rs) != 0 {
		t.Errorf("second flush without acknowledgements: %+v, want nothing", rs)
	}

	// A replay from an earlier offset (the target partition re-created
	// at the same time: its offsets go back too) starts a new session.
	if !w.ack(12, 0, 100) {
		t.Error("replay: nothing due, want the new session's first run")
	}
	got = w.takeRuns(false)
	want = []runShape{{Fresh: false, SessUp: 12, SessDown: 0, PrevUp: -1, PrevDown: -1, FirstUp: 12, FirstDown: 0, Count: 1, End: -1, ReadFrom: 12, Committed: 13}}
	if d := cmp.Diff(want, shapes(got)); d != "" {
		t.Errorf("replay (-want +got):\n%s", d)
	}
	if got[0].Session == session {
		t.Error("replay kept the session")
	}
}

// TestRunWriterMarkers: in exactly-once mode the engine's own transaction
// markers take target offsets; marker() keeps the runs linked across them.
func TestRunWriterMarkers(t *testing.T) {
	t.Parallel()
	w := newSyncWriter(4, [16]byte{})
	w.ack(5, 100, 0)
	w.ack(6, 101, 0)
	w.marker() // the commit marker at 102
	w.ack(7, 103, 0)
	w.promote(-1, 6)
	want := []runShape{
		{SessUp: 5, SessDown: 100, PrevUp: -1, PrevDown: -1, FirstUp: 5, FirstDown: 100, Count: 2, End: -1, ReadFrom: 5, Committed: 4},
		{SessUp: 5, SessDown: 100, PrevUp: 6, PrevDown: 101, FirstUp: 7, FirstDown: 103, Count: 1, End: -1, ReadFrom: 5, Committed: 6},
	}
	if d := cmp.Diff(want, shapes(w.takeRuns(true)), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("runs (-want +got):\n%s", d)
	}
}

// TestRunsDueAtATransactionFlush: in exactly-once mode an offset flush is
// a committed transaction, after which the runs are taken with
// takeRuns(false); promote makes them due. Before, they were written only
// when a sync fell due by itself, which the flushes' promoted syncs
// prevented: the runs stopped early in the stream and the checkpoints
// stayed there (a helper trying to break exactly-once mode, stop 38).
func TestRunsDueAtATransactionFlush(t *testing.T) {
	t.Parallel()
	w := newSyncWriter(-1, [16]byte{})
	w.ack(0, 0, 100)
	w.takeRuns(false) // the session's announcement
	var up, down int64 = 1, 1
	for txn := range 30 { // 30 transactions of 8 records, a flush every 10th
		for range 8 {
			w.ack(up, down, 100)
			up, down = up+1, down+1
		}
		w.marker()
		down++ // the marker's offset
		if txn%10 == 9 {
			w.promote(-1, up-1)
			_ = w.take()
			rs := w.takeRuns(false)
			if len(rs) == 0 || rs[len(rs)-1].FirstUpstreamOffset+rs[len(rs)-1].Count != up {
				t.Fatalf("flush after transaction %d: runs %+v, want them up to upstream offset %d", txn, shapes(rs), up-1)
			}
		}
	}
}

// TestRunWriterReincarnate: the source topic is re-created while two
// records of the old topic are in flight; their acknowledgements stay in
// the old session, the next one starts the new topic's fresh session.
func TestRunWriterReincarnate(t *testing.T) {
	t.Parallel()
	w := newSyncWriter(9, [16]byte{1})
	w.ack(10, 10, 100)
	w.reincarnate([16]byte{2}, 2)
	w.ack(11, 11, 100)
	w.ack(12, 12, 100)
	w.ack(0, 13, 100) // the new topic's first record (offset 0)
	w.ack(1, 14, 100)
	w.promote(-1, -1)
	got := w.takeRuns(true)
	want := []runShape{
		{SessUp: 10, SessDown: 10, PrevUp: -1, PrevDown: -1, FirstUp: 10, FirstDown: 10, Count: 3, End: -1, ReadFrom: 10, Committed: 9},
		{Fresh: true, SessUp: 0, SessDown: 13, PrevUp: -1, PrevDown: -1, FirstUp: 0, FirstDown: 13, Count: 2, End: -1, ReadFrom: 0, Committed: -1},
	}
	if d := cmp.Diff(want, shapes(got)); d != "" {
		t.Fatalf("runs (-want +got):\n%s", d)
	}
	if got[0].TopicID != ([16]byte{1}) || got[1].TopicID != ([16]byte{2}) {
		t.Errorf("topic IDs %v, %v, want [1 ...] then [2 ...]", got[0].TopicID, got[1].TopicID)
	}
}
