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

// TestBrkHungSourceNotReportedAsTarget: only the source hangs; the target
// answers every request. The probe pings the source and then the target
// within one 5 s context: the source's ping uses it up, and the target's
// ping fails at once on the expired context, so the flow's error says
// "target cluster dst unreachable: context deadline exceeded" about a
// target that is fine (srcDown is right; the reason is not).
func TestBrkHungSourceNotReportedAsTarget(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs an embedded kfake source cluster to freeze")
	}
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceN(t, &p.Source, topic, 0, 10)
	fc := fastFlow(p)
	fc.AdminTimeout = DefaultAdminTimeout
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 10)

	arm, _ := hang(t, p.Source.Fake)
	arm()
	testcluster.Eventually(t, 40*time.Second, "RETRYING: source cluster src unreachable", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRetrying && strings.Contains(fs.Error, "source cluster "+p.Source.Alias+" unreachable"), fmt.Sprintf("%s: %s", fs.State, fs.Error)
	})
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
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs an embedded kfake target cluster to freeze")
	}
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceN(t, &p.Source, topic, 0, 10)
	fc := fastFlow(p)
	fc.AdminTimeout = DefaultAdminTimeout
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 10)

	arm, release := hang(t, p.Target.Fake)
	arm()
	testcluster.Eventually(t, 40*time.Second, "RETRYING: target cluster dst unreachable", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRetrying && strings.Contains(fs.Error, "target cluster "+p.Target.Alias+" unreachable"), fmt.Sprintf("%s: %s", fs.State, fs.Error)
	})
	time.Sleep(3 * time.Second)
	release()
	start := time.Now()
	testcluster.Eventually(t, 45*time.Second, "RUNNING again after the target answers", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRunning && fs.Error == "", fmt.Sprintf("%s: %s", fs.State, fs.Error)
	})
	t.Logf("RUNNING %v after the target came back", time.Since(start).Round(time.Millisecond))
	produceN(t, &p.Source, topic, 1, 10)
	waitReplicated(t, m, 20)
}

// TestBrkHungSourceRecovers: as TestBrkHungTargetRecovers, the source.
func TestBrkHungSourceRecovers(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs an embedded kfake source cluster to freeze")
	}
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceN(t, &p.Source, topic, 0, 10)
	fc := fastFlow(p)
	fc.AdminTimeout = DefaultAdminTimeout
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 10)

	arm, release := hang(t, p.Source.Fake)
	arm()
	testcluster.Eventually(t, 40*time.Second, "RETRYING: source cluster src unreachable", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRetrying && strings.Contains(fs.Error, "source cluster "+p.Source.Alias+" unreachable") && fs.LagUnknown, fmt.Sprintf("%s: %s", fs.State, fs.Error)
	})
	time.Sleep(3 * time.Second)
	release()
	start := time.Now()
	testcluster.Eventually(t, 45*time.Second, "RUNNING again after the source answers", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StateRunning && fs.Error == "" && !fs.LagUnknown, fmt.Sprintf("%s: %s (lag unknown %v)", fs.State, fs.Error, fs.LagUnknown)
	})
	t.Logf("RUNNING %v after the source came back", time.Since(start).Round(time.Millisecond))
	produceN(t, &p.Source, topic, 1, 10)
	waitReplicated(t, m, 20)
}
