package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestFailoverNoMatchingGroupSaidAtOnce (an operator's find): failover
// with a -groups that matches no group (a typo) first waited its whole
// -wait for a catch-up the stopped flow could not reach, then said "no
// group matching". It says so at once now: no catch-up problem in the
// report. A->B ran once (its checkpoints topic holds the real group's),
// then stopped while the source received more records.
func TestFailoverNoMatchingGroupSaidAtOnce(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 100)
	commitAt := map[int32]int64{0: 50, 1: 50, 2: 50}
	w.consumeManual(w.aAddrs, "A", w.topic, commitAt, commitAt)
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	eventually(t, "the group checkpointed on B", func() string {
		code, out, errOut, _ := runDR(t, translateMain, "-config", w.props, "-flow", "A->B", "-groups", w.group)
		if code != drOK {
			return fmt.Sprintf("translate: exit %d: %s %s", code, out, errOut)
		}
		return ""
	})
	stopRunner()
	if err := waitRunner(); err != nil {
		t.Errorf("runner: %v\n%s", err, runnerLog)
	}
	w.produce(w.aAddrs, "A", w.topic, 10) // never replicated: the catch-up cannot be reached
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", "nope", "-wait", "20s", "-json")
	rep := decodeFailover(t, out)
	if code != drRefused || len(rep.Problems) != 1 || !strings.HasPrefix(rep.Problems[0], `no group matching -groups "nope" has a checkpoint`) ||
		!strings.Contains(rep.Problems[0], w.group) {
		t.Errorf("failover -groups nope: exit %d, problems %q; want %d and only the no-group problem, naming %s\n%s", code, rep.Problems, drRefused, w.group, errOut)
	}
}
