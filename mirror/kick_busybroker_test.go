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

// TestFirstPartitionListedApartNextToBusyBroker (regression, found by a
// breaker): a session's first partitions got idle kicks tried only after
// a poll that returned nothing, on the view that while records flow the
// fetches in flight return at once. kgo fetches per broker: records
// flowing from one broker say nothing of the fetch in flight to another.
// Here partition 0 (broker 0) has a backlog of 100 000 records that the
// target takes a while to accept, so every poll has some of them;
// partition 1 (broker 1) has 10 records, but its log start cannot be
// listed for the first 1.5 s, so kgo resolves it after partition 2
// (broker 1, empty) was fetched and went idle: partition 1 waited for that
// idle fetch (fetch.max.wait.ms, here longFetchWait; 5 s by default) or
// for the first idle poll, 11 s in the run that found it, while its kicks
// were requeued at every busy poll. A busy poll now skips only an idle
// kick's first idleBusySkips tries (to 1.5 s after the add): partition 1
// is replicated while partition 0 still lags.
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
	// poll meanwhile has its records. The sleep holds the target
	// cluster's loop, not kfake's SleepControl: thousands of slept
	// controls raced inside kfake (its bsleep queue, a CI race run).
	p.Target.Fake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.Target.Fake.KeepControl()
		time.Sleep(5 * time.Millisecond)
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
	took, rep0 := time.Since(start), partStatus(m, 0).Replicated
	t.Logf("partition 1 replicated %v after the start (%d listings refused), partition 0 replicated %d of 100000 then", took, h.Hits(), rep0)
	if rep0 >= 100000 {
		// Not a time bound (the machine's speed sets the backlog's drain),
		// nor partition 0's lag (0 too while its end is not known yet):
		// the first poll that returns nothing comes only once partition
		// 0's backlog is copied, so a partition 1 that waited for it is
		// replicated after all of partition 0's records.
		t.Errorf("partition 1 replicated %v after the start, once partition 0's backlog was copied (%d records): its kicks waited for a poll that returned nothing while broker 1 held an idle fetch", took, rep0)
	}
	if got, want := targetValues(t, p, remote, 1), wantValues(b1); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target partition 1:\n got %v\nwant %v", got, want)
	}
}
