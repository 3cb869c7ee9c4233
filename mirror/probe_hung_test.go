package mirror

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestHungTargetReportedWhileDiscoveryWaits (regression): the cluster
// probe ran in the refresh loop, after whatever job was in flight. When
// the target hung (every request unanswered, as a frozen or blackholed
// cluster does) while discovery listed its topics, discovery waited out
// the admin timeout (60 s, admin.timeout.ms's default) and the probe with
// it: for 73 s the flow's error named at most the group's failed join
// ("unable to join group session: i/o timeout"), never the cluster that
// hung, and the runner's /readyz gave no "target cluster dst unreachable"
// (as TestReadyzTargetOutage saw with a slower listing). The probe has its
// own goroutine now: RETRYING with that reason within a probe interval
// and the probe's own 5 s bound.
func TestHungTargetReportedWhileDiscoveryWaits(t *testing.T) {
	t.Parallel()
	p, m, _, dst := probeWorld(t, "target", DefaultAdminTimeout)

	// The target hangs at discovery's next listing of all its topics:
	// that request and every later one wait until the test ends.
	dead := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(dead) }) }) // before the clusters close
	var armed, hung atomic.Bool
	var hungAt atomic.Int64
	dst.Control(func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		if req, ok := kreq.(*kmsg.MetadataRequest); ok && armed.Load() && req.Topics == nil && hung.CompareAndSwap(false, true) {
			hungAt.Store(time.Now().UnixNano())
		}
		if hung.Load() {
			dst.SleepControl(func() { <-dead })
		}
		return nil, nil, false
	})
	armed.Store(true)
	testcluster.Eventually(t, 30*time.Second, "discovery's listing of the target hung", func() (bool, string) {
		return hung.Load(), "no listing of all the target's topics yet"
	})
	// Well under the admin timeout (60 s) the probe waited out before.
	waitFlow(t, m, 30*time.Second, "RETRYING: target cluster dst unreachable", retryingUnreachable("target cluster", p.Target.Alias))
	t.Logf("reported %v after the target hung", time.Since(time.Unix(0, hungAt.Load())).Round(time.Millisecond))
}
