package remoteclusterutils

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
)

func rec(t testing.TB, topic string, c checkpoint.Checkpoint) *kgo.Record {
	t.Helper()
	k, err := c.Key()
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Value()
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: topic, Key: k, Value: v}
}

// TestReadManySmallFetches forces one batch per fetch and checks that
// every batch is read exactly once, up to the end offset.
func TestReadManySmallFetches(t *testing.T) {
	old := fetchPartitionMax
	fetchPartitionMax = 1
	t.Cleanup(func() { fetchPartitionMax = old })

	p := testcluster.New(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopic(t, &p.Target, topic)
	// Separate produce calls give separate batches. Later records have
	// lower downstream offsets: the last one per partition must win.
	want := Offsets{"src.t": {}}
	for i := range 20 {
		c := checkpoint.Checkpoint{Group: "g", Topic: "src.t", Partition: int32(i % 4), UpstreamOffset: int64(i), DownstreamOffset: int64(100 - i), Metadata: fmt.Sprint(i)}
		testcluster.Produce(t, &p.Target, rec(t, topic, c))
		want["src.t"][c.Partition] = offsetOf(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newFolder("g", false, nil)
	if err := NewClient(testcluster.Client(t, &p.Target)).readCheckpoints(ctx, p.Source.Alias, topic, f); err != nil {
		t.Fatal(err)
	}
	if f.stats.Records != 20 || f.stats.Checkpoints != 20 || f.stats.EndOffset != 20 {
		t.Errorf("stats %+v, want 20 records", f.stats)
	}
	if diff := cmp.Diff(want, f.offsets()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestReadTransactional: checkpoints in aborted transactions are ignored
// (read_committed), and a log ending in a transaction marker is read to
// its end without waiting.
func TestReadTransactional(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopic(t, &p.Target, topic)
	cl := testcluster.Client(t, &p.Target, kgo.TransactionalID(p.Topic("mm2-checkpoints-tx")),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tx := range []struct {
		down   int64
		commit kgo.TransactionEndTry
	}{{10, kgo.TryCommit}, {20, kgo.TryAbort}, {15, kgo.TryCommit}, {99, kgo.TryAbort}} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		c := checkpoint.Checkpoint{Group: "g", Topic: "src.t", UpstreamOffset: tx.down, DownstreamOffset: tx.down}
		if err := cl.ProduceSync(ctx, rec(t, topic, c)).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, tx.commit); err != nil {
			t.Fatal(err)
		}
	}
	// A real broker writes the transaction markers after EndTransaction
	// returns: wait until the last one is in the log (end offset and last
	// stable offset 8), which kfake does at once.
	adm := testcluster.Admin(t, &p.Target)
	testcluster.Eventually(t, 30*time.Second, "every transaction marker written", func() (bool, string) {
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
		defer lcancel()
		ends, err := adm.ListEndOffsets(lctx, topic)
		if err != nil {
			return false, err.Error()
		}
		stable, err := adm.ListCommittedOffsets(lctx, topic)
		if err != nil {
			return false, err.Error()
		}
		e, _ := ends.Lookup(topic, 0)
		s, _ := stable.Lookup(topic, 0)
		return e.Offset == 8 && s.Offset == 8, fmt.Sprintf("end offset %d, last stable offset %d", e.Offset, s.Offset)
	})
	rc := NewClient(testcluster.Client(t, &p.Target))
	got, err := rc.Checkpoints(ctx, p.Source.Alias)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]checkpoint.Checkpoint{"g": {{Group: "g", Topic: "src.t", UpstreamOffset: 15, DownstreamOffset: 15}}}
	if diff := cmp.Diff(want, got.Groups); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// 4 records + 4 markers.
	if got.Stats.EndOffset != 8 || got.Stats.Records != 2 {
		t.Errorf("stats %+v, want end offset 8 and 2 committed records", got.Stats)
	}
}

func createTopic(t testing.TB, c *testcluster.Cluster, topic string) {
	t.Helper()
	testcluster.CreateTopic(t, c, topic, 1, nil)
	adm := testcluster.Admin(t, c)
	testcluster.Eventually(t, 30*time.Second, "topic visible", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil || tds[topic].Err != nil {
			return false, fmt.Sprint(err, tds[topic].Err)
		}
		return true, ""
	})
}

// TestReadCheckpointsTopicRecreatedMidRead: a checkpoints topic deleted
// and re-created while it is read (a target rebuilt, a topic cleaned up by
// hand) is read again from the new log's start: the result is the new
// log's, never old records mixed with new ones. The reader took the new
// topic ID when a fetch failed with the old one and went on at the same
// offset, in the new log: the old log's checkpoint of partition 1 (which
// the new log no longer has: the downstream offset 50 may be past the
// rebuilt target's end) came out beside the new log's partition 0, and the
// old log's end offset cut the new log's reading short.
func TestReadCheckpointsTopicRecreatedMidRead(t *testing.T) {
	old := fetchPartitionMax
	fetchPartitionMax = 1 // one batch per fetch
	t.Cleanup(func() { fetchPartitionMax = old })
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("re-creates the topic from a kfake control function")
	}
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopic(t, &p.Target, topic)
	// Separate produce calls give separate batches: the old log holds the
	// group's partition 1 at offset 0, partition 0 at 1-9.
	testcluster.Produce(t, &p.Target, rec(t, topic, checkpoint.Checkpoint{Group: "g", Topic: "src.t", Partition: 1, UpstreamOffset: 50, DownstreamOffset: 50, Metadata: "old"}))
	for i := range 9 {
		testcluster.Produce(t, &p.Target, rec(t, topic, checkpoint.Checkpoint{Group: "g", Topic: "src.t", UpstreamOffset: int64(100 + i), DownstreamOffset: int64(100 + i), Metadata: "old"}))
	}
	f := p.Target.Fake
	var fetches atomic.Int32
	f.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		f.KeepControl()
		if fetches.Add(1) != 3 { // after the old log's first two batches
			return nil, nil, false
		}
		f.SleepControl(func() {
			if err := f.DeleteTopic(topic); err != nil {
				t.Error(err)
			}
			if err := f.CreateTopic(topic, 1, nil); err != nil {
				t.Error(err)
			}
			var recs []*kgo.Record
			for i := range 20 { // the newest (upstream 19 -> 3) wins
				recs = append(recs, rec(t, topic, checkpoint.Checkpoint{Group: "g", Topic: "src.t", UpstreamOffset: int64(i), DownstreamOffset: int64(40 - i), Metadata: "new"}))
			}
			testcluster.Produce(t, &p.Target, recs...)
		})
		return nil, nil, false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := NewClient(testcluster.Client(t, &p.Target)).Checkpoints(ctx, p.Source.Alias)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]checkpoint.Checkpoint{"g": {{Group: "g", Topic: "src.t", Partition: 0, UpstreamOffset: 19, DownstreamOffset: 21, Metadata: "new"}}}
	if diff := cmp.Diff(want, got.Groups); diff != "" {
		t.Errorf("checkpoints read across the re-creation (-want +got):\n%s", diff)
	}
	if got.Stats.StartOffset != 0 || got.Stats.EndOffset != 20 || got.Stats.Records != 20 || got.Stats.Checkpoints != 20 {
		t.Errorf("stats %+v, want the new log's 20 records", got.Stats)
	}
}
