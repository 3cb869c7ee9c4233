package mirror

import (
	"math/rand/v2"

	"github.com/kmirror/kmirror/checkpoint"
)

// syncWriter decides when an offset sync (upstream offset ↔ downstream
// offset) of one source partition is written, following MM2's
// OffsetSyncWriter (docs/mm2-compat.md §5.5, KAFKA-14797, KAFKA-15906), and
// keeps the offset runs (checkpoint.OffsetRun) that let the checkpoint
// emitter translate exactly. It is owned by the partition state and guarded
// by its mutex; it does no I/O.
//
// The engine calls, for one source partition:
//   - ack(u, d, lagMax) for every record the target acknowledged, in
//     produce order (kgo's promise order per partition); a true result
//     means a sync is due now: call take() soon;
//   - promote(idle) at every offset flush, idle being the partition's
//     polled position (next source offset to read, past transaction
//     markers) when nothing is in flight, else -1; then take() and
//     takeRuns(), and produce what they return;
//   - marker() after each transaction the engine committed on the target
//     (exactly-once mode): the next target offset is that transaction's
//     marker, not a gap;
//   - reincarnate(id) when the source topic was re-created (new topic ID):
//     the first acknowledgement that goes back upstream starts the new
//     incarnation's first session.
type syncWriter struct {
	prevUp, prevDown int64 // last acknowledged record (-1 before any)
	lastSyncDown     int64 // downstream offset of the last sync queued (-1 before any)
	// due are the syncs to send, in order; delayed is the newest position not
	// synced yet, queued at every offset flush so the end of a quiet
	// partition is always translatable (docs/field-failures.md case B03). Due
	// syncs are never replaced by later ones: the first sync of a run and the
	// syncs forced by gaps and rewinds are what translation of older group
	// offsets needs (docs/field-failures.md cases B10, B32). At most maxDue
	// are kept; past that the newest replaces the last.
	due                    [][2]int64
	delayed                bool
	delayedUp, delayedDown int64

	runs runWriter
}

// newSyncWriter returns a writer whose first replication session is fresh
// (the partition had no resume point: nothing of this source-topic
// incarnation is on the target yet) or not, for the source topic with ID
// topicID (all zero when unknown).
func newSyncWriter(fresh bool, topicID [16]byte) syncWriter {
	return syncWriter{prevUp: -1, prevDown: -1, lastSyncDown: -1, runs: newRunWriter(fresh, topicID)}
}

// ack records that upstream offset u was written at downstream offset d and
// reports whether a sync is due now. lagMax is offset.lag.max (0: every
// record).
func (w *syncWriter) ack(u, d, lagMax int64) bool {
	w.runs.ack(u, d)
	now := w.lastSyncDown == -1 || // first record of this run
		d-(w.lastSyncDown+1) >= lagMax || // a caught-up group would lag by lagMax
		u-w.prevUp != 1 || // gap or rewind upstream (compaction, markers, restart)
		d <= w.prevDown // target truncated or re-created (MM2: d < prev; an equal offset cannot be a new record either)
	w.prevUp, w.prevDown = u, d
	if now {
		w.lastSyncDown = d
		w.queue(u, d)
		w.delayed = false
		return true
	}
	w.delayed, w.delayedUp, w.delayedDown = true, u, d
	return false
}

// maxDue bounds the syncs queued per partition between two sends.
const maxDue = 1024

func (w *syncWriter) queue(u, d int64) {
	if len(w.due) == maxDue {
		w.due[maxDue-1] = [2]int64{u, d}
		return
	}
	w.due = append(w.due, [2]int64{u, d})
}

// promote queues the delayed position (MM2's commit()) and records idle,
// the partition's polled position when nothing is in flight (-1 otherwise).
func (w *syncWriter) promote(idle int64) {
	if w.delayed {
		w.delayed = false
		w.lastSyncDown = w.delayedDown
		w.queue(w.delayedUp, w.delayedDown)
	}
	w.runs.idle(idle)
}

// take returns the due syncs in order and clears them.
func (w *syncWriter) take() [][2]int64 {
	due := w.due
	w.due = nil
	return due
}

// takeRuns returns the offset runs to write, in order, and clears them.
// Their Topic and Partition are left for the caller to fill.
func (w *syncWriter) takeRuns() []checkpoint.OffsetRun { return w.runs.take() }

// marker records that the engine committed a transaction on the target:
// its marker takes the next target offset.
func (w *syncWriter) marker() { w.runs.marker() }

// reincarnate announces that the source topic was re-created with topic ID
// id; see runWriter.reincarnate.
func (w *syncWriter) reincarnate(id [16]byte) { w.runs.reincarnate(id) }

// maxRunsDue bounds the completed runs kept between two flushes; past it
// the oldest are dropped (the emitter then sees a hole in the session,
// which it translates safely but not exactly).
const maxRunsDue = 4096

// runWriter keeps the offset runs of one source partition: maximal
// sequences of acknowledged records that are consecutive on both sides
// (checkpoint.OffsetRun). A run ends at an upstream gap (the next run is
// linked to it: nothing was copied in between) or at a target offset the
// writer did not write (the next run is not linked). A new session starts
// when the source or target offsets go back (crash replay, truncation,
// re-created topic).
type runWriter struct {
	session  uint64
	fresh    bool
	topicID  [16]byte
	pending  bool // a new incarnation starts at the next upstream rewind
	pendID   [16]byte
	started  bool
	sessUp   int64
	sessDown int64
	cur      checkpoint.OffsetRun // Count 0: none
	curDirty bool                 // cur changed since it was last taken
	lastUp   int64
	lastDown int64
	markers  int64 // own transaction markers expected before the next record
	endUp    int64 // idle position after lastUp, -1 unknown
	done     []checkpoint.OffsetRun
}

func newRunWriter(fresh bool, topicID [16]byte) runWriter {
	return runWriter{session: rand.Uint64(), fresh: fresh, topicID: topicID, lastUp: -1, lastDown: -1, endUp: -1}
}

// newSession closes the current run and starts a new session at the next
// acknowledgement.
func (w *runWriter) newSession(fresh bool) {
	w.close()
	w.session, w.fresh, w.started = rand.Uint64(), fresh, false
	w.markers, w.endUp = 0, -1
}

// close moves the current run to the runs to write, if it changed.
func (w *runWriter) close() {
	if w.cur.Count > 0 && w.curDirty {
		w.cur.EndUpstreamOffset = -1
		if len(w.done) == maxRunsDue {
			w.done = w.done[1:]
		}
		w.done = append(w.done, w.cur)
	}
	w.cur, w.curDirty = checkpoint.OffsetRun{}, false
}

func (w *runWriter) ack(u, d int64) {
	switch {
	case w.pending && (w.lastUp < 0 || u <= w.lastUp):
		w.pending, w.topicID = false, w.pendID
		w.newSession(true)
	case w.started && (u <= w.lastUp || d <= w.lastDown):
		w.newSession(false) // replay after a restart, truncation, re-created target
	}
	link := w.started && u > w.lastUp && d > w.lastDown && d <= w.lastDown+1+w.markers
	switch {
	case !w.started:
		w.started, w.sessUp, w.sessDown = true, u, d
		w.start(-1, -1, u, d)
	case link && u == w.lastUp+1 && d == w.lastDown+1:
		w.cur.Count++
	case link:
		w.close()
		w.start(w.lastUp, w.lastDown, u, d)
	default: // a target offset this session did not write
		w.close()
		w.start(-1, -1, u, d)
	}
	w.curDirty = true
	w.lastUp, w.lastDown, w.markers, w.endUp = u, d, 0, -1
}

func (w *runWriter) start(prevUp, prevDown, u, d int64) {
	w.cur = checkpoint.OffsetRun{Session: w.session, TopicID: w.topicID, Fresh: w.fresh,
		SessionUpstreamOffset: w.sessUp, SessionOffset: w.sessDown,
		PrevUpstreamOffset: prevUp, PrevOffset: prevDown, FirstUpstreamOffset: u, FirstOffset: d, Count: 1,
		EndUpstreamOffset: -1}
}

// idle records the polled position p when nothing is in flight (-1: some
// record is); it is written with the current run.
func (w *runWriter) idle(p int64) {
	if p > w.lastUp+1 && w.started && p != w.endUp {
		w.endUp, w.curDirty = p, true
	}
}

func (w *runWriter) marker() { w.markers++ }

// reincarnate makes the next acknowledgement that goes back upstream (or
// the next one at all, before any) start a fresh session of the topic with
// ID id: acknowledgements of the old topic's records still in flight keep
// the old session.
func (w *runWriter) reincarnate(id [16]byte) { w.pending, w.pendID = true, id }

// take returns the completed runs and the current run if it changed, in
// order, and clears them.
func (w *runWriter) take() []checkpoint.OffsetRun {
	out := w.done
	w.done = nil
	if w.cur.Count > 0 && w.curDirty {
		r := w.cur
		r.EndUpstreamOffset = w.endUp
		out = append(out, r)
		w.curDirty = false
	}
	return out
}
