package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestFirstPartitionListedApartNextToBusyBroker (found by a breaker, not
// fixed): a session's first partitions get idle kicks, tried only after a
// poll that returned nothing, on the view that while records flow the
// fetches in flight return at once. kgo fetches per broker: records
// flowing from one broker say nothing of the fetch in flight to another.
// Here partition 0 (broker 0) has a backlog of 100 000 records that the
// target takes a while to accept, so every poll has some of them;
// partition 1 (broker 1) has 10 records, but its log start cannot be
// listed for the first 1.5 s, so kgo resolves it after partition 2
// (broker 1, empty) was fetched and went idle: partition 1 waits for that
// idle fetch (fetch.max.wait.ms, here longFetchWait; 5 s by default) or
// for the first idle poll, 11 s in the run that found it, while its
// kicks are requeued at every busy poll. A kick tried regardless of
// busy polls (as a partition added to a running session gets) moves it
// within the kicks' 3.1 s try.
func TestFirstPartitionListedApartNextToBusyBroker(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.NumBrokers(2))
	if p.Source.Fake == nil {
		t.Skip("needs kfake's faults")
	}
	topic := p.Topic("busybroker")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 3, nil)
	for part, node := range []int32{0, 1, 1} {
		if err := p.Source.Fake.MoveTopicPartition(topic, int32(part), node); err != nil {
			t.Fatal(err)
		}
	}
	b1 := partRecords(topic, "b", 1, 0, 10)
	testcluster.Produce(t, &p.Source, b1...)
	for i := 0; i < 4; i++ {
		testcluster.Produce(t, &p.Source, partRecords(topic, fmt.Sprintf("a%d-", i), 0, 0, 25000)...)
	}
	// The target takes each produce request 5 ms, in batches of at most
	// 2 000 bytes: partition 0's backlog takes a while to copy, and every
	// poll meanwhile has its records.
	p.Target.Fake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.Target.Fake.KeepControl()
		p.Target.Fake.SleepControl(func() { time.Sleep(5 * time.Millisecond) })
		return nil, nil, false
	})
	h := p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: topic, Partitions: []int32{1},
		Err: kerr.NotLeaderForPartition, Count: -1})
	time.AfterFunc(1500*time.Millisecond, h.Remove)
	fc := recoveryFlow(p, topic)
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
		Consumer: []kgo.Opt{kgo.FetchMaxWait(longFetchWait)}}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.ProducerBatchMaxBytes(2000)}}),
		WithFlow(fc))
	start := time.Now()
	testcluster.Eventually(t, longFetchWait/3, "partition 1 replicated", func() (bool, string) {
		ps := partStatus(m, 1)
		return ps.Replicated == 10, fmt.Sprintf("%+v; partition 0 %+v", ps, partStatus(m, 0))
	})
	took, lag0 := time.Since(start), partStatus(m, 0).Lag
	t.Logf("partition 1 replicated %v after the start (%d listings refused), partition 0's lag then %d", took, h.Hits(), lag0)
	if took > 6*time.Second {
		t.Errorf("partition 1 replicated %v after the start, want within 6 s (its listing refused for 1.5 s): it waited for broker 1's idle fetch while partition 0 kept every poll busy (lag %d then)", took, lag0)
	}
	if got, want := targetValues(t, p, remote, 1), wantValues(b1); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 1:\n got %v\nwant %v", got, want)
	}
}
