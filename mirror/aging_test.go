package mirror

import (
	"errors"
	"testing"
	"time"
)

// TestAgingAfterAMissedTick: an idle unit publishes a new snapshot only
// when a part of its status ages (lifecycle.aging, checked every second).
// A check that comes late (the control goroutine busy for more than a
// second across the moment a fetch error stops being shown, or an open
// transaction starts being shown: a slow flush, an open-transaction
// check waiting on the source) must still see that the status changed
// since the last snapshot; else the partition stays RETRYING with a fetch
// error long gone (read_uncommitted: no open-transaction check marks it
// changed), or its open transaction unreported, until something else
// moves.
func TestAgingAfterAMissedTick(t *testing.T) {
	t.Parallel()
	k := tp{"t", 0}
	t.Run("fetch error", func(t *testing.T) {
		h := newHarness(t, lifeConfig{flow: "a->b", openTxnAfter: 10 * time.Second})
		f := h.start(k, startPos{remote: "a.t", committed: 9})
		h.post(event{kind: evFetchErr, f: f, err: errors.New("NOT_LEADER_OR_FOLLOWER")})
		h.m.snapshot(nil) // published RETRYING
		if st := h.status(k); st.State != StateRetrying {
			t.Fatalf("after the fetch error: %s, want RETRYING", st.State)
		}
		late := h.now.Add(fetchErrStale + 3*time.Second)
		if !h.m.aging(late) {
			t.Errorf("%v after the fetch error, its snapshot still RETRYING: aging false, want true (the error is no longer shown)", late.Sub(h.now))
		}
		h.now = late
		h.m.apply(event{kind: evTick, a: late.UnixNano()}, nil)
		h.m.snapshot(nil) // published RUNNING
		if h.m.aging(late.Add(time.Minute)) {
			t.Error("aging after the snapshot that no longer shows the fetch error, want false (idle)")
		}
	})
	t.Run("open transaction", func(t *testing.T) {
		h := newHarness(t, lifeConfig{flow: "a->b", openTxnAfter: 10 * time.Second})
		h.start(k, startPos{remote: "a.t", committed: 9})
		h.m.openTxn(k, 20, 15) // held at 15 below the high watermark 20
		h.m.parts[k].polledTo = 15
		h.m.openTxn(k, 20, 15)
		h.m.snapshot(nil)
		late := h.now.Add(10*time.Second + 3*time.Second)
		if !h.m.aging(late) {
			t.Errorf("%v after the partition was held, its open transaction not shown yet: aging false, want true", late.Sub(h.now))
		}
	})
}
