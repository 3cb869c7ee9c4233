package mirror

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestBrkHealthConcurrentWriters (a breaker's finding): the probe (its own
// goroutine) and discovery (the refresh loop) write health concurrently.
// health read the joined errors under f.mu, unlocked, and only then set the
// state: a writer that read an older set of errors could set its state
// after one that read the newer set. Here discovery's listing recovers
// (listErr cleared) while the probe finds the target down (probeErr set):
// the errors say RETRYING, but the flow could end RUNNING with probeErr
// set, until the next health call (the next probe). It failed within 300
// to 6 300 tries; it now tries for 5 s.
func TestBrkHealthConcurrentWriters(t *testing.T) {
	t.Parallel()
	fc := FlowConfig{Source: "src", Target: "dst"}
	errProbe := errors.New("target cluster dst unreachable: i/o timeout")
	errList := errors.New("listing topics on dst: i/o timeout")
	ctx := context.Background()
	wrong, tries := 0, 0
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && wrong == 0 {
		tries++
		f, err := newFlow(fc, ClusterConfig{Alias: "src"}, ClusterConfig{Alias: "dst"}, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		f.listErr = errList
		f.setState(StateRetrying, errList)
		var start, wg sync.WaitGroup
		start.Add(1)
		wg.Add(2)
		go func() { defer wg.Done(); start.Wait(); f.listFailed(ctx, nil) }()
		go func() { defer wg.Done(); start.Wait(); runtime.Gosched(); f.health(func() { f.probeErr = errProbe }) }()
		start.Done()
		wg.Wait()
		f.mu.Lock()
		st, msg, pe, le := f.state, f.stateErr, f.probeErr, f.listErr
		f.mu.Unlock()
		if pe == nil || le != nil {
			t.Fatalf("health sources: probe %v, list %v", pe, le)
		}
		if st != StateRetrying || msg != errProbe.Error() {
			wrong++
			t.Errorf("try %d: the probe's error is recorded (%v) but the flow is %s %q", tries, pe, st, msg)
		}
	}
	t.Logf("%d tries, %d wrong", tries, wrong)
}
