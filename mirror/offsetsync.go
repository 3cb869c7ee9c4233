package mirror

// syncWriter decides when an offset sync (upstream offset ↔ downstream
// offset) of one source partition is written, following MM2's
// OffsetSyncWriter (spec 5.5, KAFKA-14797, KAFKA-15906). It is owned by the
// partition state and guarded by its mutex.
type syncWriter struct {
	prevUp, prevDown int64 // last acknowledged record (-1 before any)
	lastSyncDown     int64 // downstream offset of the last sync queued (-1 before any)
	// pending is a sync due now; delayed is the newest position not synced
	// yet, promoted to pending at every offset flush so the end of a quiet
	// partition is always translatable (case B03).
	pending, delayed       bool
	pendUp, pendDown       int64
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
		w.pending, w.pendUp, w.pendDown = true, u, d
		w.delayed = false
		return true
	}
	w.delayed, w.delayedUp, w.delayedDown = true, u, d
	return false
}

// promote moves the delayed position to pending (MM2's commit()).
func (w *syncWriter) promote() {
	if w.delayed {
		w.delayed = false
		w.lastSyncDown = w.delayedDown
		w.pending, w.pendUp, w.pendDown = true, w.delayedUp, w.delayedDown
	}
}

// take returns the pending sync and clears it.
func (w *syncWriter) take() (up, down int64, ok bool) {
	if !w.pending {
		return 0, 0, false
	}
	w.pending = false
	return w.pendUp, w.pendDown, true
}
