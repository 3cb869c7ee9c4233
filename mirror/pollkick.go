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
// 1.5, 3.1, 6.3 and 12.7 s after the add): kgo assigns an added partition
// when its metadata update returns, a round trip that a source in another
// region, or a loaded machine, makes longer than the first delays.
const (
	kickDelay = 100 * time.Millisecond
	kickTries = 7
	// idleBusySkips is how many of an idle kick's tries a busy poll
	// skips (0.1, 0.3 and 0.7 s after the add): from the fourth (1.5 s)
	// it is made whatever the poll returned (pollKicks).
	idleBusySkips = 3
)

// pollKicks gets partitions added to a running consumer fetched at once.
//
// kgo names a partition added to a direct consumer (AddConsumePartitions)
// in a fetch only after the fetch in flight to its leader returns, and an
// idle unit's fetches wait up to fetchMaxWait (5 s) for records: a
// partition restarted or discovered while its unit is idle waited that
// long before its first records moved. The same holds for a session's
// first partitions when kgo resolves their offsets apart (a listing that
// fails once for one of them): the others are fetched, go idle, and the
// late one waits for their fetch. Moving the new cursor to the offset it
// was added at (SetOffsets) ends the fetches in flight and the next one
// names it. That is safe only from the poll loop, before any record of
// the partition was polled: a record already handed on would be fetched
// again. The control goroutine queues the added partitions (add); the
// poll loop, after handing on the records of each poll, moves the cursors
// of those due that still have polled nothing and are still their
// partition's feed (kickOffsets), and tries again later (again) in case
// kgo had not assigned them yet (SetOffsets ignores a partition it holds
// no cursor or offset load of): a partition that polls, stops or is
// replaced is dropped.
//
// A kick marked idle (a session's first partitions, and a partition added
// at its log start whose start was not listed) is made early only after a
// poll that returned nothing: while records flow, the fetches in flight
// mostly return at once and a move would only drop what kgo buffered. Its
// first idleBusySkips tries are skipped after a busy poll; later ones are
// made anyway, since the records may come from other brokers while the
// partition's own broker holds an idle fetch
// (TestFirstPartitionListedApartNextToBusyBroker). One added at its log
// start has no offset to move to: the poll loop lists the start first
// (the offset kgo would list: a log start only moves up).
//
// mu guards the fields; the control goroutine adds, the poll loop takes,
// requeues and sets wake around each poll.
type pollKicks struct {
	mu    sync.Mutex
	kicks []kick
	due   time.Time          // the earliest kick's; zero: none
	wake  context.CancelFunc // ends the poll loop's wait in PollRecords; nil while it does not wait
}

// kick is a partition added at exact offset off (atStart: at its log
// start, not listed), with its feed; idle: tried only after a poll that
// returned nothing; due is its next try, wait the delay before it, tries
// the tries made.
type kick struct {
	f     *feed
	off   int64
	idle  bool
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
		if n.tried(now); n.tries < kickTries {
			k.push(n)
		}
	}
}

// tried counts a try of n made (or skipped) at now, and sets its next
// one twice its last delay later.
func (n *kick) tried(now time.Time) {
	n.tries++
	n.wait *= 2
	n.due = now.Add(n.wait)
}

// waiting records the poll loop's wake function for its next poll (nil
// after it) and returns when the first queued kick is due (zero: none).
func (k *pollKicks) waiting(wake context.CancelFunc) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.wake = wake
	return k.due
}

// take removes and returns the queued kicks due at now, after a poll that
// returned records (busy) or nothing; an idle kick due after a busy poll
// with fewer than idleBusySkips tries is requeued as if tried.
func (k *pollKicks) take(now time.Time, busy bool) []kick {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.kicks) == 0 || now.Before(k.due) {
		return nil
	}
	var due []kick
	left := k.kicks[:0]
	var later []kick
	for _, n := range k.kicks {
		switch {
		case n.f.cursor.Load():
			// Polled: nothing to kick (kickOffsets would skip it).
		case now.Before(n.due):
			left = append(left, n)
		case n.idle && busy && n.tries < idleBusySkips:
			// Counted as a try, and not made: its fetch may well end
			// soon. Past idleBusySkips it is made after a busy poll
			// too: the poll's records may all come from other brokers
			// while the one it waits on holds an idle fetch.
			n.tried(now)
			later = append(later, n)
		default:
			due = append(due, n)
		}
	}
	clear(k.kicks[len(left):])
	k.kicks = append(left, later...)
	k.due = time.Time{}
	for _, n := range k.kicks {
		if k.due.IsZero() || n.due.Before(k.due) {
			k.due = n.due
		}
	}
	return due
}

// reset drops the queued kicks (a new session's consumer).
func (k *pollKicks) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kicks, k.due, k.wake = nil, time.Time{}, nil
}

// kickOffsets returns the cursor moves of the kicks due (nil: none), the
// kicks moved, to try again, and those to list first (added at the log
// start): the kicks whose feed is still live, still its partition's feed
// in feeds (a re-created topic's partition gets a new feed at its new
// log's start, and the old feed, never stopped, would move the new cursor
// to the old log's offset) and has polled nothing (the only ones safe to
// move).
func kickOffsets(ks []kick, feeds map[tp]*feed) (set map[string]map[int32]kgo.EpochOffset, moved, unlisted []kick) {
	for _, k := range ks {
		if feeds[k.f.k] != k.f || k.f.cursor.Load() || !k.f.live() {
			continue
		}
		if k.off < 0 {
			if k.off == atStart {
				unlisted = append(unlisted, k)
			}
			continue
		}
		set = addMove(set, k.f, k.off)
		moved = append(moved, k)
	}
	return set, moved, unlisted
}

// addMove adds f's cursor move to off to set, made if nil.
func addMove(set map[string]map[int32]kgo.EpochOffset, f *feed, off int64) map[string]map[int32]kgo.EpochOffset {
	if set == nil {
		set = map[string]map[int32]kgo.EpochOffset{}
	}
	if set[f.k.topic] == nil {
		set[f.k.topic] = map[int32]kgo.EpochOffset{}
	}
	set[f.k.topic][f.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	return set
}

// listedMoves adds to set the moves of the kicks in unlisted whose log
// start starts holds, and returns set and the kicks tried (every one of
// unlisted: one not listed is listed again at its next try).
func listedMoves(set map[string]map[int32]kgo.EpochOffset, unlisted []kick, starts map[tp]int64) (map[string]map[int32]kgo.EpochOffset, []kick) {
	for _, k := range unlisted {
		if off, ok := starts[k.f.k]; ok && off >= 0 {
			set = addMove(set, k.f, off)
		}
	}
	return set, unlisted
}
