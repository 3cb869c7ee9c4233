package mirror

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestCloseWhileKicksListStarts (a breaker's attack, held): a session's
// first partitions, added at the log start of an empty topic, get idle
// kicks whose starts the poll loop lists itself; here the source never
// answers a listing of the topic. Close, with the poll loop waiting for
// that listing, returns at once and leaves no goroutine of the package
// behind. Not parallel: it counts the package's goroutines.
func TestCloseWhileKicksListStarts(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic := p.Topic("closelist")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	base, _ := goroutinesIn(nil)
	release := make(chan struct{})
	defer close(release)
	var held atomic.Int32
	p.Source.Fake.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.Source.Fake.KeepControl()
		r := req.(*kmsg.ListOffsetsRequest)
		if len(r.Topics) == 1 && r.Topics[0].Topic == topic {
			held.Add(1)
			p.Source.Fake.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	fc := recoveryFlow(p, topic)
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 10*time.Second, "the partitions started", func() (bool, string) {
		ps := m.Status().Flows[0].Partitions
		return len(ps) == 2 && held.Load() >= 1, fmt.Sprintf("%d listings held, %+v", held.Load(), ps)
	})
	time.Sleep(time.Second) // the kicks are due: the poll loop lists (each try waits up to 2 s)
	start := time.Now()
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v with the listings unanswered, want at once", d)
	}
	var leaked []string
	testcluster.Eventually(t, 10*time.Second, "no goroutine of the package left after Close", func() (bool, string) {
		_, leaked = goroutinesIn(base)
		return len(leaked) == 0, fmt.Sprint(len(leaked), leaked)
	})
}
