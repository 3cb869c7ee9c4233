package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestFirstResumePointsAfterRebalance (a breaker's attack, held): with
// tasks.max 2 and offset.flush.interval.ms 10 minutes, a member that
// joins long after the first one started takes a slot over: the
// partitions of that slot, resumed from the first member's stored points,
// have the resume points of the records they replicate next stored
// within about a second, not 10 minutes later, and each record is copied
// once.
func TestFirstResumePointsAfterRebalance(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	topic := p.Topic("rebalfirst")
	remote := p.Source.Alias + "." + topic
	const parts = 4
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	for part := int32(0); part < parts; part++ {
		testcluster.Produce(t, &p.Source, partRecords(topic, fmt.Sprintf("a%d-", part), part, 0, 5)...)
	}
	fc := recoveryFlow(p, topic)
	fc.Tasks = 2
	fc.OffsetFlushInterval = 10 * time.Minute
	fc.SessionTimeout, fc.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
	a, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("a"), WithStatusInterval(200*time.Millisecond))...)
	waitReplicated(t, a, 4*5)
	testcluster.Eventually(t, 10*time.Second, "the first member's resume points stored", func() (bool, string) {
		stored := storedResumePoints(t, p, topic)
		for part := int32(0); part < parts; part++ {
			if !stored[part][4] {
				return false, fmt.Sprintf("stored %v", stored)
			}
		}
		return true, ""
	})
	time.Sleep(2 * time.Second) // its early stores stopped

	b, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("b"), WithStatusInterval(200*time.Millisecond))...)
	var taken []int32
	testcluster.Eventually(t, 20*time.Second, "the second member took a slot", func() (bool, string) {
		taken = taken[:0]
		for _, ps := range b.Status().Flows[0].Partitions {
			if ps.State == StateRunning {
				taken = append(taken, ps.Partition)
			}
		}
		return len(taken) > 0 && len(taken) < parts, fmt.Sprintf("%+v", b.Status().Flows[0].Partitions)
	})
	for part := int32(0); part < parts; part++ {
		testcluster.Produce(t, &p.Source, partRecords(topic, fmt.Sprintf("b%d-", part), part, 0, 5)...)
	}
	testcluster.Eventually(t, 20*time.Second, "every record copied", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) >= 4*10, fmt.Sprint(targetEnd(t, &p.Target, remote))
	})
	caught := time.Now()
	testcluster.Eventually(t, 30*time.Second, "the taken partitions' resume points stored", func() (bool, string) {
		stored := storedResumePoints(t, p, topic)
		for _, part := range taken {
			if !stored[part][9] {
				return false, fmt.Sprintf("partitions %v, stored %v", taken, stored)
			}
		}
		return true, ""
	})
	t.Logf("partitions %v of the second member stored %v after the copy", taken, time.Since(caught))
	for part := int32(0); part < parts; part++ {
		got := targetValues(t, p, remote, part)
		want := wantValues(partRecords(topic, fmt.Sprintf("a%d-", part), part, 0, 5), partRecords(topic, fmt.Sprintf("b%d-", part), part, 0, 5))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("target partition %d:\n got %v\nwant %v", part, got, want)
		}
	}
}
