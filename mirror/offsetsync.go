package mirror

// syncWriter decides when an offset sync (upstream offset ↔ downstream
// offset) of one source partition is written, following MM2's
// OffsetSyncWriter (docs/mm2-compat.md §5.5, KAFKA-14797, KAFKA-15906). It is
// owned by the partition state and guarded by its mutex.
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
}

func newSyncWriter() syncWriter {
	return syncWriter{prevUp: -1, prevDown: -1, lastSyncDown: -1}
}

// ack records that upstream offset u was written at downstream offset d and
// reports whether a sync is due now. lagMax is offset.lag.max (0: every
// record).
func (w *syncWriter) ack(u, d, lagMax int64) bool {
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

// promote queues the delayed position (MM2's commit()).
func (w *syncWriter) promote() {
	if w.delayed {
		w.delayed = false
		w.lastSyncDown = w.delayedDown
		w.queue(w.delayedUp, w.delayedDown)
	}
}

// take returns the due syncs in order and clears them.
func (w *syncWriter) take() [][2]int64 {
	due := w.due
	w.due = nil
	return due
}
