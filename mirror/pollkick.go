package mirror

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kickDelay is how long after a partition was added to a running session's
// consumer the poll loop moves its new cursor (pollKicks).
const kickDelay = 100 * time.Millisecond

// pollKicks gets partitions added to a running consumer fetched at once.
//
// kgo names a partition added to a direct consumer (AddConsumePartitions)
// in a fetch only after the fetch in flight to its leader returns, and an
// idle unit's fetches wait up to fetchMaxWait (5 s) for records: a
// partition restarted or discovered while its unit is idle waited that
// long before its first records moved. Moving the new cursor to the
// offset it was added at (SetOffsets) ends the fetches in flight and the
// next one names it. That is safe only from the poll loop, before any
// record of the partition was polled: a record already handed on would be
// fetched again. The control goroutine queues the added partitions (add);
// the poll loop moves the cursors of those that have polled nothing
// kickDelay later (take), time for kgo to assign them after its metadata
// update (a partition not assigned yet is left to the next fetch, as
// before).
//
// mu guards the fields; the control goroutine adds, the poll loop takes
// and sets wake around each poll.
type pollKicks struct {
	mu    sync.Mutex
	kicks []kick
	due   time.Time          // of the oldest kick; zero: none
	wake  context.CancelFunc // ends the poll loop's wait in PollRecords; nil while it does not wait
}

// kick is a partition added at exact offset off, with its feed.
type kick struct {
	f   *feed
	off int64
}

// add queues ks (added at now) and wakes the poll loop to wait for them.
func (k *pollKicks) add(now time.Time, ks []kick) {
	if len(ks) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.kicks) == 0 {
		k.due = now.Add(kickDelay)
	}
	k.kicks = append(k.kicks, ks...)
	if k.wake != nil {
		k.wake()
	}
}

// waiting records the poll loop's wake function for its next poll (nil
// after it) and returns when the queued kicks are due (zero: none).
func (k *pollKicks) waiting(wake context.CancelFunc) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.wake = wake
	return k.due
}

// take returns the queued kicks if they are due at now.
func (k *pollKicks) take(now time.Time) []kick {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.kicks) == 0 || now.Before(k.due) {
		return nil
	}
	ks := k.kicks
	k.kicks, k.due = nil, time.Time{}
	return ks
}

// reset drops the queued kicks (a new session's consumer).
func (k *pollKicks) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kicks, k.due, k.wake = nil, time.Time{}, nil
}

// kickOffsets returns the cursor moves of the kicks due: the partitions
// still live whose feed has polled nothing (the only ones safe to move).
func kickOffsets(ks []kick) map[string]map[int32]kgo.EpochOffset {
	var set map[string]map[int32]kgo.EpochOffset
	for _, k := range ks {
		if k.off < 0 || k.f.cursor.Load() || !k.f.live() {
			continue
		}
		if set == nil {
			set = map[string]map[int32]kgo.EpochOffset{}
		}
		if set[k.f.k.topic] == nil {
			set[k.f.k.topic] = map[int32]kgo.EpochOffset{}
		}
		set[k.f.k.topic][k.f.partition] = kgo.EpochOffset{Epoch: -1, Offset: k.off}
	}
	return set
}
