package mirror

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kickDelay is how long after a partition was added to a running session's
// consumer the poll loop first moves its new cursor (pollKicks); each
// further try waits twice as long, kickTries tries in all (0.1, 0.3, 0.7,
// 1.5 and 3.1 s after the add): kgo assigns an added partition when its
// metadata update returns, a round trip that a source in another region
// makes longer than the first delay.
const (
	kickDelay = 100 * time.Millisecond
	kickTries = 5
)

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
// the poll loop, after handing on the records of each poll, moves the
// cursors of those due that still have polled nothing and are still their
// partition's feed (kickOffsets), and tries again later (again) in case
// kgo had not assigned them yet (SetOffsets ignores a partition it holds
// no cursor of): a partition that polls, stops or is replaced is dropped.
//
// mu guards the fields; the control goroutine adds, the poll loop takes,
// requeues and sets wake around each poll.
type pollKicks struct {
	mu    sync.Mutex
	kicks []kick
	due   time.Time          // the earliest kick's; zero: none
	wake  context.CancelFunc // ends the poll loop's wait in PollRecords; nil while it does not wait
}

// kick is a partition added at exact offset off, with its feed; due is
// its next try, wait the delay before it, tries the tries made.
type kick struct {
	f     *feed
	off   int64
	due   time.Time
	wait  time.Duration
	tries int
}

// add queues ks (added at now, first due kickDelay later) and wakes the
// poll loop to wait for them.
func (k *pollKicks) add(now time.Time, ks []kick) {
	if len(ks) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range ks {
		n.due, n.wait, n.tries = now.Add(kickDelay), kickDelay, 0
		k.push(n)
	}
	if k.wake != nil {
		k.wake()
	}
}

// push queues n; k.mu held.
func (k *pollKicks) push(n kick) {
	k.kicks = append(k.kicks, n)
	if k.due.IsZero() || n.due.Before(k.due) {
		k.due = n.due
	}
}

// again requeues the kicks tried at now that have tries left, each
// waiting twice its last delay.
func (k *pollKicks) again(now time.Time, ks []kick) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range ks {
		if n.tries++; n.tries >= kickTries {
			continue
		}
		n.wait *= 2
		n.due = now.Add(n.wait)
		k.push(n)
	}
}

// waiting records the poll loop's wake function for its next poll (nil
// after it) and returns when the first queued kick is due (zero: none).
func (k *pollKicks) waiting(wake context.CancelFunc) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.wake = wake
	return k.due
}

// take removes and returns the queued kicks due at now.
func (k *pollKicks) take(now time.Time) []kick {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.kicks) == 0 || now.Before(k.due) {
		return nil
	}
	var due []kick
	left := k.kicks[:0]
	k.due = time.Time{}
	for _, n := range k.kicks {
		if now.Before(n.due) {
			left = append(left, n)
			if k.due.IsZero() || n.due.Before(k.due) {
				k.due = n.due
			}
			continue
		}
		due = append(due, n)
	}
	clear(k.kicks[len(left):])
	k.kicks = left
	return due
}

// reset drops the queued kicks (a new session's consumer).
func (k *pollKicks) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kicks, k.due, k.wake = nil, time.Time{}, nil
}

// kickOffsets returns the cursor moves of the kicks due (nil: none) and
// the kicks moved, to try again: those whose feed is still live, still
// its partition's feed in feeds (a re-created topic's partition gets a new
// feed at its new log's start, and the old feed, never stopped, would move
// the new cursor to the old log's offset) and has polled nothing (the only
// ones safe to move).
func kickOffsets(ks []kick, feeds map[tp]*feed) (map[string]map[int32]kgo.EpochOffset, []kick) {
	var set map[string]map[int32]kgo.EpochOffset
	var moved []kick
	for _, k := range ks {
		if k.off < 0 || feeds[k.f.k] != k.f || k.f.cursor.Load() || !k.f.live() {
			continue
		}
		if set == nil {
			set = map[string]map[int32]kgo.EpochOffset{}
		}
		if set[k.f.k.topic] == nil {
			set[k.f.k.topic] = map[int32]kgo.EpochOffset{}
		}
		set[k.f.k.topic][k.f.partition] = kgo.EpochOffset{Epoch: -1, Offset: k.off}
		moved = append(moved, k)
	}
	return set, moved
}
