package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestFirstResumePointAfterLateRestart (a breaker's attack, held): a
// partition that fails after the session's early resume-point stores
// stopped (here a produce refusal 2 s in, offset.flush.interval.ms 10
// minutes) restarts by itself as a new partition state: the records it
// replicates after the restart have their resume point stored within
// about a second (lifecycle.added arms the early stores again), not at
// the next regular store 10 minutes later, and its neighbour, which
// stored its own long before, is not held up.
func TestFirstResumePointAfterLateRestart(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's faults")
	}
	topic := p.Topic("laterestart")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	testcluster.Produce(t, &p.Source, append(partRecords(topic, "a", 0, 0, 5), partRecords(topic, "b", 1, 0, 5)...)...)
	fc := recoveryFlow(p, topic)
	fc.OffsetFlushInterval = 10 * time.Minute
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 10)
	testcluster.Eventually(t, 10*time.Second, "the first resume points stored", func() (bool, string) {
		stored := storedResumePoints(t, p, topic)
		return stored[0][4] && stored[1][4], fmt.Sprintf("stored %v", stored)
	})
	time.Sleep(2 * time.Second) // the early stores stopped: each partition stored one
	h := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: 1})
	testcluster.Produce(t, &p.Source, partRecords(topic, "c", 0, 0, 10)...)
	testcluster.Eventually(t, 10*time.Second, "partition 0 restarted and caught up", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 15 && ps.Lag == 0 && h.Hits() == 1, fmt.Sprintf("%d refusals, %+v", h.Hits(), ps)
	})
	caught := time.Now()
	testcluster.Eventually(t, 30*time.Second, "the restarted partition's resume point stored", func() (bool, string) {
		stored := storedResumePoints(t, p, topic)
		return stored[0][14], fmt.Sprintf("stored %v", stored)
	})
	t.Logf("stored %v after catching up", time.Since(caught))
}
