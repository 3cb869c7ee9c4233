package remoteclusterutils

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrk1207CheckpointsTopicDeletedMidRead: a checkpoints topic deleted
// (and not re-created) while it is read is a missing topic: the call
// fails with a *NoCheckpointsTopicError naming it. It retried the leader
// lookup of the vanished partition until the call's deadline (30 s by
// default) and then failed with "context deadline exceeded", which says
// neither that the topic is gone nor what to do.
func TestBrk1207CheckpointsTopicDeletedMidRead(t *testing.T) {
	old := fetchPartitionMax
	fetchPartitionMax = 1 // one batch per fetch
	t.Cleanup(func() { fetchPartitionMax = old })
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("deletes the topic from a kfake control function")
	}
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopic(t, &p.Target, topic)
	for i := range 5 {
		testcluster.Produce(t, &p.Target, rec(t, topic, checkpoint.Checkpoint{Group: "g", Topic: "src.t", UpstreamOffset: int64(i), DownstreamOffset: int64(i)}))
	}
	f := p.Target.Fake
	var fetches atomic.Int32
	f.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		f.KeepControl()
		if fetches.Add(1) != 2 { // after the first batch
			return nil, nil, false
		}
		f.SleepControl(func() {
			if err := f.DeleteTopic(topic); err != nil {
				t.Error(err)
			}
		})
		return nil, nil, false
	})
	// The deadline is a generous bound only: the answer must not depend on
	// it (it used to be reached).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got, err := NewClient(testcluster.Client(t, &p.Target)).TranslateOffsets(ctx, p.Source.Alias, "g")
	var nt *NoCheckpointsTopicError
	if !errors.As(err, &nt) || nt.Topic != topic || got != nil {
		t.Fatalf("TranslateOffsets with the topic deleted mid-read = %v, %v; want nil and a *NoCheckpointsTopicError for %s", got, err, topic)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v waited for the deadline", err)
	}
}
