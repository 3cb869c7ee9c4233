package mirror

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// hang makes every request to c wait, once armed, until release (or the
// test's end). It returns arm and release.
func hang(t *testing.T, c *kfake.Cluster) (arm, release func()) {
	t.Helper()
	dead := make(chan struct{})
	var once sync.Once
	rel := func() { once.Do(func() { close(dead) }) }
	t.Cleanup(rel) // before the clusters close
	var armed atomic.Bool
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if armed.Load() {
			select {
			case <-dead:
			default:
				c.SleepControl(func() { <-dead })
			}
		}
		return nil, nil, false
	})
	return func() { armed.Store(true) }, func() { armed.Store(false); rel() }
}

// probeWorld runs a flow (fastFlow, with adminTimeout) whose source topic's
// 10 records are replicated, and returns the pair, the Mirror, the topic
// and the cluster on side ("source" or "target") for the test to freeze;
// it skips unless that cluster is an embedded kfake.
func probeWorld(t *testing.T, side string, adminTimeout time.Duration) (*testcluster.Pair, *Mirror, string, *kfake.Cluster) {
	t.Helper()
	p := testcluster.New(t, "src", "dst")
	frozen := p.Source.Fake
	if side == "target" {
		frozen = p.Target.Fake
	}
	if frozen == nil {
		t.Skip("needs an embedded kfake " + side + " cluster to freeze (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceN(t, &p.Source, topic, 0, 10)
	fc := fastFlow(p)
	fc.AdminTimeout = adminTimeout
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 10)
	return p, m, topic, frozen
}

// waitFlow waits up to d until the first flow of m satisfies ok.
func waitFlow(t *testing.T, m *Mirror, d time.Duration, what string, ok func(FlowStatus) bool) {
	t.Helper()
	testcluster.Eventually(t, d, what, func() (bool, string) {
		fs := m.Status().Flows[0]
		return ok(fs), fmt.Sprintf("%s: %s (lag unknown %v)", fs.State, fs.Error, fs.LagUnknown)
	})
}

// retryingUnreachable is true for a RETRYING flow whose error says the
// cluster alias (what: "source cluster" or "target cluster") is
// unreachable.
func retryingUnreachable(what, alias string) func(FlowStatus) bool {
	return func(fs FlowStatus) bool {
		return fs.State == StateRetrying && strings.Contains(fs.Error, what+" "+alias+" unreachable")
	}
}

// runningClean is true for a RUNNING flow with no error.
func runningClean(fs FlowStatus) bool { return fs.State == StateRunning && fs.Error == "" }

// TestBrkHungSourceNotReportedAsTarget (a breaker's finding): only the
// source hangs; the target answers every request. The probe pinged the
// source and then the target within one 5 s context: the source's ping
// used it up, and the target's failed at once on the expired context, so
// the flow's error said "target cluster dst unreachable: context deadline
// exceeded" about a target that was fine. The pings now run at once, each
// with its own bound.
func TestBrkHungSourceNotReportedAsTarget(t *testing.T) {
	t.Parallel()
	p, m, _, src := probeWorld(t, "source", DefaultAdminTimeout)
	arm, _ := hang(t, src)
	arm()
	waitFlow(t, m, 40*time.Second, "RETRYING: source cluster src unreachable", retryingUnreachable("source cluster", p.Source.Alias))
	// The target answers: nothing may call it unreachable. Watch a few
	// probe rounds.
	deadline := time.Now().Add(12 * time.Second)
	for time.Now().Before(deadline) {
		fs := m.Status().Flows[0]
		if strings.Contains(fs.Error, "target cluster "+p.Target.Alias+" unreachable") {
			t.Fatalf("the target answers every request, but the flow reports it unreachable: %s: %s", fs.State, fs.Error)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrkHungTargetRecovers: the target hangs (every request), the probe
// reports it; once it answers again, RUNNING comes back within a few probe
// intervals, with no error left over.
func TestBrkHungTargetRecovers(t *testing.T) {
	t.Parallel()
	p, m, topic, dst := probeWorld(t, "target", DefaultAdminTimeout)
	arm, release := hang(t, dst)
	arm()
	waitFlow(t, m, 40*time.Second, "RETRYING: target cluster dst unreachable", retryingUnreachable("target cluster", p.Target.Alias))
	time.Sleep(3 * time.Second)
	release()
	start := time.Now()
	waitFlow(t, m, 45*time.Second, "RUNNING again after the target answers", runningClean)
	t.Logf("RUNNING %v after the target came back", time.Since(start).Round(time.Millisecond))
	produceN(t, &p.Source, topic, 1, 10)
	waitReplicated(t, m, 20)
}

// TestBrkHungSourceRecovers: as TestBrkHungTargetRecovers, the source.
func TestBrkHungSourceRecovers(t *testing.T) {
	t.Parallel()
	p, m, topic, src := probeWorld(t, "source", DefaultAdminTimeout)
	arm, release := hang(t, src)
	arm()
	unreachable := retryingUnreachable("source cluster", p.Source.Alias)
	waitFlow(t, m, 40*time.Second, "RETRYING: source cluster src unreachable", func(fs FlowStatus) bool { return unreachable(fs) && fs.LagUnknown })
	time.Sleep(3 * time.Second)
	release()
	start := time.Now()
	waitFlow(t, m, 45*time.Second, "RUNNING again after the source answers", func(fs FlowStatus) bool { return runningClean(fs) && !fs.LagUnknown })
	t.Logf("RUNNING %v after the source came back", time.Since(start).Round(time.Millisecond))
	produceN(t, &p.Source, topic, 1, 10)
	waitReplicated(t, m, 20)
}

// TestBrkProbeNoLeakAfterStopWithHungTarget: an enabled flow and a
// heartbeats-only (disabled) reverse flow; the target hangs, the probe is
// mid-ping; after Run returns no goroutine of the package is left (the
// probe loops joined), and none writes a state after STOPPED.
func TestBrkProbeNoLeakAfterStopWithHungTarget(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs an embedded kfake target cluster to freeze")
	}
	base, _ := goroutinesIn(nil)
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceN(t, &p.Source, topic, 0, 10)
	fc := fastFlow(p)
	fc.AdminTimeout = 3 * time.Second
	rev := FlowConfig{Source: p.Target.Alias, Target: p.Source.Alias, Disabled: true, EmitHeartbeatsInterval: 200 * time.Millisecond,
		OffsetFlushInterval: 100 * time.Millisecond, AdminTimeout: 3 * time.Second}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithFlow(rev))...)
	waitReplicated(t, m, 10)
	arm, release := hang(t, p.Target.Fake)
	arm()
	waitFlow(t, m, 40*time.Second, "RETRYING: target cluster dst unreachable", retryingUnreachable("target cluster", p.Target.Alias))
	errc := make(chan error, 1)
	go func() { errc <- stop() }()
	select {
	case <-errc:
	case <-time.After(90 * time.Second):
		release()
		t.Fatal("Run did not return within 90 s of the stop with the target hung")
	}
	for _, fs := range m.Status().Flows {
		if fs.State != StateStopped {
			t.Errorf("flow %s after Run returned: %s %s", fs.Name, fs.State, fs.Error)
		}
	}
	time.Sleep(6 * time.Second) // longer than a probe's bound
	for _, fs := range m.Status().Flows {
		if fs.State != StateStopped {
			t.Errorf("flow %s 6 s after Run returned: %s %s", fs.Name, fs.State, fs.Error)
		}
	}
	var leaked []string
	testcluster.Eventually(t, 20*time.Second, "no goroutine of the package left after Run returned", func() (bool, string) {
		_, all := goroutinesIn(base)
		leaked = leaked[:0]
		for _, g := range all {
			if !strings.Contains(g, "mirror.hang.") {
				leaked = append(leaked, g)
			}
		}
		return len(leaked) == 0, fmt.Sprint(len(leaked), leaked)
	})
}

// TestBrkLongHungTargetRecovers: the target hangs past the admin timeout,
// so that discovery's listing fails too (two health sources); once it
// answers, RUNNING with no error comes back.
func TestBrkLongHungTargetRecovers(t *testing.T) {
	t.Parallel()
	p, m, topic, dst := probeWorld(t, "target", 4*time.Second)
	arm, release := hang(t, dst)
	arm()
	unreachable := retryingUnreachable("target cluster", p.Target.Alias)
	waitFlow(t, m, 60*time.Second, "RETRYING: target unreachable and its topics not listed", func(fs FlowStatus) bool {
		return unreachable(fs) && strings.Contains(fs.Error, "listing topics on "+p.Target.Alias)
	})
	release()
	start := time.Now()
	waitFlow(t, m, 45*time.Second, "RUNNING again after the target answers", runningClean)
	t.Logf("RUNNING %v after the target came back", time.Since(start).Round(time.Millisecond))
	// And it stays so.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if fs := m.Status().Flows[0]; fs.State != StateRunning {
			t.Fatalf("after recovery: %s: %s", fs.State, fs.Error)
		}
	}
	produceN(t, &p.Source, topic, 1, 10)
	waitReplicated(t, m, 20)
}
