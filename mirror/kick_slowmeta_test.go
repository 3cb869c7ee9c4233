package mirror

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestKickRetriedUntilAssigned (regression, found in review): exactly once, a failed
// partition is carried into the next session and added back to the
// running consumer at its retry (AddConsumePartitions, which only
// triggers a metadata update: kgo assigns it when the update returns).
// The poll loop's kick comes kickDelay (100 ms) after the add, whatever
// the source's metadata round trip: with a source whose Metadata answer
// takes 300 ms (a remote data centre, a loaded controller) kgo holds no
// cursor yet, SetOffsets ignored the partition, and the restart waited for
// the idle neighbour's long poll again (here fetch.max.wait.ms = 60 s).
// A kick is now tried again, at doubling delays, until its partition
// polls.
func TestKickRetriedUntilAssigned(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake")
	}
	topic := p.Topic("kickslow")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	a0, b1 := partRecords(topic, "a", 0, 0, 10), partRecords(topic, "b", 1, 0, 10)
	testcluster.Produce(t, &p.Source, append(a0, b1...)...)
	var slow atomic.Bool
	p.Source.Fake.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
		if slow.Load() {
			p.Source.Fake.SleepControl(func() { time.Sleep(200 * time.Millisecond) })
		}
		return nil, nil, false
	})
	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = true
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
		Consumer: []kgo.Opt{kgo.FetchMaxWait(longFetchWait)}}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
		WithFlow(fc), withPartRetryFirst(1500*time.Millisecond))
	waitReplicatedCommitted(t, m, 20)

	slow.Store(true)
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: 1})
	c0 := partRecords(topic, "c", 0, 0, 10)
	testcluster.Produce(t, &p.Source, c0...)
	testcluster.Eventually(t, longFetchWait/3, "partition 0 restarted and caught up while partition 1 is idle", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 20 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	got := valuesOnly(targetValues(t, p, remote, 0))
	if want := valuesOnly(wantValues(a0, c0)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 0:\n got %v\nwant %v", got, want)
	}
}
