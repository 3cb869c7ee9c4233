package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTombstonedCheckpointWrittenAgainAfterRestart (regression): a
// tombstone written for a group's checkpoint (an operator or a clean-up
// tool deleting it) removes the key for every reader of the topic
// (MirrorClient keeps the last record of a key, compaction keeps none).
// The emitter loading the topic at start skipped it as an unusable record
// and kept the deleted checkpoint as written, and never wrote an unchanged
// checkpoint again: the group had no checkpoint for that partition until
// it committed again on the source, and a consumer failing over fell back
// to auto.offset.reset. The loader now applies the tombstone and the next
// emission writes the checkpoint again.
func TestTombstonedCheckpointWrittenAgainAfterRestart(t *testing.T) {
	f := newFixture(t, 1, 300)
	var pairs [][2]int64
	for u := int64(0); u <= 200; u += 10 {
		pairs = append(pairs, [2]int64{u, u})
	}
	f.syncs(0, pairs...)
	g := f.p.Group("g")
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 55})
	_, stop := f.start()
	key := g + "/" + f.remote + "/0"
	testcluster.Eventually(t, 20*time.Second, "the first checkpoint", func() (bool, string) {
		cp := latest(f.checkpoints())[key]
		return cp.DownstreamOffset == 51, fmt.Sprintf("%+v", cp)
	})
	stop()

	k, err := Checkpoint{Group: g, Topic: f.remote, Partition: 0}.Key()
	if err != nil {
		t.Fatal(err)
	}
	cpTopic := f.pol.CheckpointsTopic(f.p.Source.Alias)
	testcluster.Produce(t, &f.p.Target, &kgo.Record{Topic: cpTopic, Partition: 0, Key: k})

	f.start() // the group is still at 55 on the source
	last := func() (string, error) {
		recs, err := testcluster.ReadTopic(context.Background(), f.p.Target.Opts(), cpTopic, false)
		if err != nil {
			return "", err
		}
		state := "none"
		for _, r := range recs[0] {
			kc, err := DecodeCheckpointKey(r.Key)
			if err != nil || kc.Group != g || kc.Topic != f.remote || kc.Partition != 0 {
				continue
			}
			if r.Value == nil {
				state = "tombstone"
				continue
			}
			cp, err := DecodeCheckpoint(r.Key, r.Value)
			if err != nil {
				return "", err
			}
			state = fmt.Sprintf("checkpoint %d->%d", cp.UpstreamOffset, cp.DownstreamOffset)
		}
		return state, nil
	}
	testcluster.Eventually(t, 20*time.Second, "the checkpoint written again after the tombstone", func() (bool, string) {
		st, err := last()
		if err != nil {
			return false, err.Error()
		}
		return st == "checkpoint 55->51", "last record of " + key + ": " + st
	})
}

// TestDecodeCheckpointKey: the key alone decodes to its group, topic and
// partition (a tombstone's); a nil or unparsable key is an error.
func TestDecodeCheckpointKey(t *testing.T) {
	k, err := Checkpoint{Group: "g1", Topic: "src.orders", Partition: 7, UpstreamOffset: 5, DownstreamOffset: 4}.Key()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCheckpointKey(k)
	if err != nil || got != (Checkpoint{Group: "g1", Topic: "src.orders", Partition: 7}) {
		t.Errorf("DecodeCheckpointKey = %+v, %v; want g1 src.orders 7 and no offsets", got, err)
	}
	if _, err := DecodeCheckpointKey(nil); !errors.Is(err, ErrNullKey) {
		t.Errorf("nil key: %v, want ErrNullKey", err)
	}
	if _, err := DecodeCheckpointKey([]byte{0, 9, 'x'}); !errors.Is(err, ErrMalformed) {
		t.Errorf("short key: %v, want ErrMalformed", err)
	}
}
