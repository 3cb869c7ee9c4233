package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// TestBrk1206FailoverDryRunInterruptedWhileWaiting: a failover -dry-run
// waiting for a catch-up that cannot come (the runner is down) is
// interrupted (SIGINT cancels the command's context): it returns at once
// with exit 3 and a report that says interrupted, and has changed
// nothing.
func TestBrk1206FailoverDryRunInterruptedWhileWaiting(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 20)
	commitAt := map[int32]int64{0: 10, 1: 10, 2: 10}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stop, wait := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	w.waitCheckpointed(60)
	stop()
	if err := wait(); err != nil {
		t.Fatalf("runner: %v\n%s", err, runnerLog)
	}
	w.produce(w.aAddrs, "A", w.topic, 5) // not replicated: the runner is down

	for _, tc := range []struct {
		name string
		main func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) int
	}{
		{"failover", func(ctx context.Context, args []string, out, errOut *bytes.Buffer) int {
			return failoverMain(ctx, args, out, errOut)
		}},
	} {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(1500*time.Millisecond, cancel)
		start := time.Now()
		code := tc.main(ctx, []string{"-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "60s", "-dry-run", "-json"}, &out, &errOut)
		took := time.Since(start)
		cancel()
		if took > 15*time.Second {
			t.Errorf("%s -dry-run took %v after the interrupt at 1.5s", tc.name, took)
		}
		rep := decodeFailover(t, out.String())
		if code != drUnreachable || rep.Result != "interrupted" || !rep.DryRun || !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.Contains(p, "context canceled") }) {
			t.Errorf("%s -dry-run interrupted while waiting: exit %d, result %q, dry run %t, problems %q; want %d, interrupted\n%s", tc.name, code, rep.Result, rep.DryRun, rep.Problems, drUnreachable, errOut.String())
		}
		// The interrupt came 1.5 s after the start, during the catch-up
		// wait: the wait is timed, and within the total. How much of the
		// 1.5 s the setup before it took depends on the machine's load
		// (CatchUp >= 1000 assumed under 0.5 s of setup).
		if rep.TimingsMs.CatchUp <= 0 || rep.TimingsMs.Total < rep.TimingsMs.CatchUp || rep.TimingsMs.Total < 1000 {
			t.Errorf("%s timings %+v: want the catch-up wait timed, within a total of about 1.5s", tc.name, rep.TimingsMs)
		}
	}
	st, found, err := statustopic.ReadTargetState(context.Background(), []kgo.Opt{kgo.SeedBrokers(w.bAddrs...)}, "A")
	if err != nil || found {
		t.Fatalf("after -dry-run the target state is %+v (found %t, %v), want none", st, found, err)
	}
	if got := w.committed(w.bAddrs); len(got) != 0 {
		t.Fatalf("-dry-run committed %v on B", got)
	}
}
