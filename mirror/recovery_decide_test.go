package mirror

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDecideRestart: the restart rule of a failed partition as a table,
// without a cluster or a clock.
func TestDecideRestart(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	soon, past := now.Add(3*time.Second), now.Add(-time.Millisecond)
	cases := []struct {
		name string
		v    partView
		step restartStep
		wake time.Duration
	}{
		{"running", partView{}, stepNone, -1},
		{"running with records in flight", partView{inFlight: 7}, stepNone, -1},
		{"record error, nobody asked", partView{failed: true}, stepWait, -1},
		{"automatic retry not due", partView{failed: true, auto: true, nextRetry: soon}, stepWait, 3 * time.Second},
		{"automatic retry due, drained", partView{failed: true, auto: true, nextRetry: past}, stepRestart, -1},
		{"automatic retry due at this instant", partView{failed: true, auto: true, nextRetry: now}, stepRestart, -1},
		{"automatic retry due, in flight", partView{failed: true, auto: true, nextRetry: past, inFlight: 2}, stepDrain, -1},
		{"asked, drained", partView{failed: true, asked: true}, stepRestart, -1},
		{"asked before the automatic retry time", partView{failed: true, auto: true, nextRetry: soon, asked: true}, stepRestart, -1},
		{"asked, in flight", partView{failed: true, asked: true, inFlight: 1}, stepDrain, -1},
		{"asked, exactly once, transaction not aborted", partView{failed: true, asked: true, txnOpen: true}, stepDrain, -1},
		{"refill asked, drained", partView{refill: true, asked: true}, stepRestart, -1},
		{"refill asked, in flight", partView{refill: true, asked: true, inFlight: 100}, stepDrain, -1},
	}
	for _, c := range cases {
		step, wake := decideRestart(c.v, now)
		if step != c.step || wake != c.wake {
			t.Errorf("%s: decideRestart(%+v) = %d, %v; want %d, %v", c.name, c.v, step, wake, c.step, c.wake)
		}
	}
}

// TestLastResultKicksRestart: a partition due for a restart while records
// are in flight used to be looked at again every 50 ms (and 50 ms after
// any failure, a timing guard for the pause of its fetches, which ran on
// the producer's goroutine). The lifecycle pauses its fetches itself, and
// the last result of a failed or held partition restarts it: nothing
// polls.
func TestLastResultKicksRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, lifeConfig{flow: "a->b", retryFirst: time.Hour})
	f := h.start(tp{"t", 0}, startPos{remote: "a.t", committed: -1})
	h.took()
	recs := h.fetch(f, 0, 1, 2)
	h.fail(f, recs[0], kerr.TopicAuthorizationFailed) // fails at record 0; 1 and 2 still in flight
	if got, want := h.took(), "failed t/0; stop t/0; pause t/0"; got != want {
		t.Fatalf("after the failure: %s, want %s", got, want)
	}
	h.post(event{kind: evRestart, a: -1, x: &evExtra{}})
	if step, _ := decideRestart(f.p.view(), h.now); step != stepDrain {
		t.Fatalf("asked, with records in flight: step %d, want stepDrain", step)
	}
	h.ack(f, recs[1], 5)
	if got := h.took(); got != "" {
		t.Fatalf("restarted with a record still in flight: %s", got)
	}
	h.ack(f, recs[2], 6)
	if got, want := h.took(), "restart t/0 at start"; got != want {
		t.Fatalf("after the last result: %s, want %s (records 1 and 2 came after the failure)", got, want)
	}
}
