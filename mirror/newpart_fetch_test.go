package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestNewPartitionDoesNotWaitForIdleFetch (regression): a partition
// discovered while its unit is idle starts at the source's log start, an
// offset kgo resolves itself (ListOffsets), and only a partition added at
// an exact offset was kicked (pollKicks): the new partition waited for the
// idle unit's fetch in flight, up to fetch.max.wait.ms (here
// longFetchWait, 60 s; 5 s by default), before its first records moved.
// Its log start is now listed when it is added to a running session, so it
// is added at an exact offset and kicked like a restarted partition.
func TestNewPartitionDoesNotWaitForIdleFetch(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("newpart")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	a0 := partRecords(topic, "a", 0, 0, 10)
	testcluster.Produce(t, &p.Source, a0...)
	fc := recoveryFlow(p, topic)
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
		Consumer: []kgo.Opt{kgo.FetchMaxWait(longFetchWait)}}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
		WithFlow(fc))
	waitReplicated(t, m, 10)
	// Partition 0's fetch is in flight and idle; partition 1 appears with
	// records.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := testcluster.Admin(t, &p.Source).CreatePartitions(ctx, 2, topic); err != nil {
		t.Fatal(err)
	}
	b1 := partRecords(topic, "b", 1, 0, 10)
	testcluster.Produce(t, &p.Source, b1...)
	testcluster.Eventually(t, longFetchWait/3, "new partition 1 replicated while partition 0 is idle", func() (bool, string) {
		ps := partStatus(m, 1)
		return ps.State == StateRunning && ps.Replicated == 10 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	for part, want := range map[int32][]string{0: wantValues(a0), 1: wantValues(b1)} {
		if got := targetValues(t, p, remote, part); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("target partition %d:\n got %v\nwant %v", part, got, want)
		}
	}
}
