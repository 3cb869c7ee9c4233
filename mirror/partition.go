package mirror

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// inflight is a record handed to the target producer and not acknowledged yet.
//
// rec is the record handed to the producer: a promise is matched to its
// entry by it, never by position, since kgo fails some records (too
// large, or refused before they were buffered) ahead of the promises of
// records produced before them.
type inflight struct {
	up   int64       // upstream (source) offset
	size int64       // key + value + header keys and values, in bytes
	rec  *kgo.Record // nil for a shallow-copy batch (evBatchAck)
	ts   int64       // the record's timestamp, Unix milliseconds, as fetched (0: a shallow-copy batch); rec's fields are the producer's while in flight
	n    int32       // shallow-copy batch: its record count (0: one record)
	// nokey: the record has no key (null), as fetched: a compacted remote
	// topic refuses it with INVALID_RECORD (firstKeyless).
	nokey bool
}

// timeSpan is the oldest and newest record timestamps of a set of
// records (both zero when none is known).
type timeSpan struct{ oldest, newest time.Time }

// add widens s to ts (a zero ts, unknown, is ignored).
func (s *timeSpan) add(ts time.Time) {
	if ts.IsZero() {
		return
	}
	if s.oldest.IsZero() || ts.Before(s.oldest) {
		s.oldest = ts
	}
	if s.newest.IsZero() || ts.After(s.newest) {
		s.newest = ts
	}
}

// inflightTimes returns the span of the timestamps of in (the oldest
// record without a result, failed) and of p's records in flight after it:
// the target refuses a batch as a whole, and the record that broke its
// timestamp rule may be any of them. The timestamps are the ones kept as
// fetched (inflight.ts), not q.rec.Timestamp: the poll loop may be
// producing that record.
func (p *partState) inflightTimes(in inflight) timeSpan {
	var s timeSpan
	add := func(ms int64) {
		if ms != 0 {
			s.add(time.UnixMilli(ms))
		}
	}
	add(in.ts)
	for _, q := range p.queue[p.head:] {
		add(q.ts)
	}
	return s
}

// firstKeyless returns the source offset of the first record without a
// key among in (the oldest record without a result, failed) and p's
// records in flight after it, or -1: the target refuses a batch as a
// whole, and the record that broke a rule may be any of them.
func (p *partState) firstKeyless(in inflight) int64 {
	if in.nokey {
		return in.up
	}
	for _, q := range p.queue[p.head:] {
		if q.nokey {
			return q.up
		}
	}
	return -1
}

// feed is the poll loop's handle of one incarnation of a source
// partition: what the poll (or shallow) loop needs to fetch and produce
// it, and the two signals that stop its produces. The control goroutine
// creates it (with the partition state it feeds) and publishes it in
// unit.feeds; it never changes what the poll loop reads of it except
// through stopped and gate.
type feed struct {
	k         tp
	remote    string
	partition int32
	// remoteID is the remote topic's ID the incarnation writes to (zero:
	// unknown): shallow copy pins its produce requests to it.
	remoteID kadm.TopicID
	// srcID is the ID of the source topic whose log the incarnation reads
	// (zero: unknown): shallow copy fetches it only under that ID, as
	// kgo's consumer keeps a topic's ID until the topic is purged. A
	// source topic re-created under the name is read by the successor
	// feed the lifecycle starts at the new log's start (actRecreate).
	srcID kadm.TopicID
	// gate is the context of every record produced for it: closed when
	// franz-go failed a batch of it (producegate.go).
	gate *produceGate
	// stopped: the control goroutine (or the loop itself, on a gap it
	// stops at or a record too large) stopped its produces. The inbox
	// refuses its fetched records once it is set (see inbox.postFetched).
	stopped atomic.Bool
	// cursor: the unit's consumer holds a cursor of the partition in use
	// for this feed: records of it were polled (the poll loop sets it), or
	// it restarted by moving that cursor (restartInPlace).
	cursor atomic.Bool
	// ack is the producer's promise for its records (posts the result).
	ack func(*kgo.Record, error)
	pm  *partMetrics // nil without a Registerer

	// Poll (or shallow) loop only.
	next           int64     // next upstream offset expected, -1 unknown
	fetchErrLogged time.Time // a fetch error of it was last logged

	p *partState // control goroutine only: the state it feeds
}

// live reports whether records may still be produced for f.
func (f *feed) live() bool { return !f.stopped.Load() && !f.gate.closed() }

// partState is the replication state of one source partition, owned by
// the unit's lifecycle (lifecycle.go) and so by the unit's control
// goroutine alone: no lock. The poll loop, the producer's promises, the
// shallow loop, Status and RestartFailed reach it only through events.
// There is one per partition a unit replicates: its flags are kept
// together, so that it takes 896 bytes, a size class of Go's allocator
// (issue 22: with each flag between two 8-byte fields it took 944, and
// 1 024 allocated).
type partState struct {
	topic     string
	remote    string
	partition int32
	f         *feed // the incarnation's feed (the poll loop's handle)

	queue []inflight // in produce order; results are applied in that order (result)
	head  int
	// early holds the results that arrived before the result of an
	// earlier record of the queue (kgo fails a record it refuses before
	// buffering it at once, ahead of the acks of records produced before
	// it); each is applied when its entry reaches the head. Rare: nil
	// until needed.
	early     map[*kgo.Record]error
	acked     int64 // last upstream offset acknowledged, -1 none
	ackedDown int64 // its downstream offset
	committed int64 // resume point stored on the target, -1 none
	hw        int64 // source high watermark last seen, -1 unknown
	// logStart is the source log start last listed for a partition that
	// had polled nothing (checkOpenTransactions): records below it can
	// never be copied, so the lag counts from it. 0 when not listed.
	logStart int64
	records  int64
	bytes    int64
	sw       syncWriter
	err      error // non-retriable error: the partition is stopped
	// Failure and recovery (see decideRestart): failedAt is when err was
	// set; autoRetry says the cause can go away (retried at nextRetry,
	// zero for errors that wait for an operator); retries counts the
	// automatic restarts since the partition last replicated a record;
	// restartAsked is set by Mirror.RestartFailed (or a refill, or a
	// raised limit).
	failedAt   time.Time
	nextRetry  time.Time
	retries    int
	retryDelay time.Duration
	// unknownTries counts the quiet restarts in a row after an unknown
	// remote topic (reset by an acknowledged record).
	unknownTries int
	autoRetry    bool
	restartAsked bool
	// quiet: err is an unknown remote topic not reported yet
	// (failQuiet): the partition shows RETRYING, not FAILED.
	quiet      bool
	flushed    bool // a resume point was stored since this state was created (evFlushed)
	hold       bool // failed, or held for a refill: its feed is stopped (actStop) before it restarts
	stopAcked  bool // the feed's stop reached the inbox: no fetched records of it can follow (evStopped)
	paused     bool // its fetches were paused (actPause)
	refill     bool // restart from the source's log start: the remote topic was re-created empty
	fromStart  bool // start at the source's log start (a refill at a session's start)
	checked    bool // the remote topic's ID was asked before this restart (actCheckRemote)
	limitsRead bool // the remote topic's limit was read before this restart (actRefreshLimits)
	// recreated: the source topic was re-created while the partition
	// was stopped: its successor starts at the new topic's log start.
	recreated bool
	// reincarnate: the source topic was re-created (newID): the first
	// records fetched by the next feed start the new topic's offset-run
	// session (syncWriter.reincarnate).
	reincarnate bool
	newID       [16]byte
	// ackedID is the ID of the source topic whose log acked (exactly
	// once: committed) is an offset of, recorded with the resume point
	// (resumeID): the old log's while ackedOld.
	ackedID kadm.TopicID
	// committedID is the source topic ID stored with the committed resume
	// point (as far as this process knows: at start, the ID it resumes
	// on). A resume point whose offset did not move but whose ID did (a
	// re-created topic's new log reached the old log's stored offset) is
	// stored again: flushable and txnPrepare compare both.
	committedID kadm.TopicID
	// ackFrozen: a record in flight at a gap stop failed; no later ack
	// counts (acksAfterStop).
	ackFrozen bool
	// ackedOld: acked (exactly once: committed) is still an offset of the
	// re-created source topic's old log; oldLeft counts the old log's
	// records in flight when the new log's first records were fetched
	// (their results come first). A restart then starts at the new log's
	// start, not after the old offset.
	ackedOld bool
	newLog   bool // a record of the new log was applied
	oldLeft  int
	// remoteID is the remote topic's ID when the state was created (zero:
	// unknown), recorded with its resume points.
	remoteID   kadm.TopicID
	topicID    [16]byte  // the source topic's ID (offset runs)
	since      time.Time // when this state was created (the partition started or restarted)
	polledTo   int64     // next offset after the last record polled (data or marker), -1 none
	fetchErr   string    // last fetch error, cleared by the next records fetched
	fetchErrAt time.Time // when it was last returned (kgo returns it on every failing fetch)
	// lsoHeld is the last stable offset the partition was found held at
	// (below the high watermark, replication caught up to it) since
	// lsoSince; -1 when not held.
	lsoHeld  int64
	lsoSince time.Time
	// Exactly once: acknowledged records of the open transaction, fed to
	// the sync writer when it commits; txnFailed marks an error of a
	// record of the open transaction, txnErr an error of the whole
	// transaction.
	pending [][2]int64
	txnErr  error
	// transientErr: a produce of this partition failed for a transient
	// reason; the session restarts, and until then no ack counts.
	transientErr error
	pm           *partMetrics // nil without a Registerer
	txnFailed    bool         // see pending
	// dropped: a record polled was never written (its transaction aborted,
	// or the producer closed): the polled position is not replicated, and
	// this partition state (of an ended session or a stopping unit) never
	// reports it as such.
	dropped bool
	eos     bool
	// retired: replaced by a restart's successor, or the session ended:
	// events of its feeds are stale.
	retired bool
}

// newPartState returns the state of a source partition whose replication
// resumes after resume point committed (-1: from the start) of the source
// topic with ID topicID (the incarnation its offset runs name), created at
// now.
func newPartState(topic, remote string, partition int32, committed int64, topicID [16]byte, eos bool, now time.Time) *partState {
	return &partState{topic: topic, remote: remote, partition: partition, eos: eos, topicID: topicID, ackedID: topicID, committedID: topicID,
		lsoHeld: -1, acked: committed, ackedDown: -1, committed: committed, hw: -1, polledTo: -1,
		sw: newSyncWriter(committed, topicID), since: now}
}

// inFlight is the number of records produced whose results were not
// applied yet.
func (p *partState) inFlight() int { return len(p.queue) - p.head }

// inFlightRecords is the number of records in flight: a shallow-copy
// batch counts its records, each acknowledged to the sync writer one by
// one (batchAck).
func (p *partState) inFlightRecords() int {
	n := 0
	for _, in := range p.queue[p.head:] {
		n += max(int(in.n), 1)
	}
	return n
}

// pop removes the oldest in-flight entry (the one the next result is
// for) and returns it, compacting the queue once most of it is consumed.
func (p *partState) pop() inflight {
	in := p.queue[p.head]
	p.queue[p.head] = inflight{}
	p.head++
	if p.head == len(p.queue) {
		// Drained: released, not kept for the next fetch (issue 22: at
		// thousands of mostly idle partitions the kept arrays were a
		// large share of the heap; a busy partition rarely drains).
		p.queue, p.head = nil, 0
	} else if p.head > 1024 && p.head*2 > len(p.queue) {
		n := copy(p.queue, p.queue[p.head:])
		// The moved entries' old places must not keep their records (and
		// the fetch buffers their keys and values point into) alive.
		clear(p.queue[n:])
		p.queue, p.head = p.queue[:n], 0
	}
	return in
}

// queued reports whether r is in the in-flight queue.
func (p *partState) queued(r *kgo.Record) bool {
	for i := p.head; i < len(p.queue); i++ {
		if p.queue[i].rec == r {
			return true
		}
	}
	return false
}

// fetchErrStale is how long a partition's last fetch error is shown as
// RETRYING without repeating.
const fetchErrStale = 30 * time.Second

// idleUp returns the polled position when nothing is in flight, else -1
// (the offset-run writer's idle position). Exactly once, records
// acknowledged in a transaction not committed yet are in flight: the
// sync writer knows only committed ones.
func (p *partState) idleUp() int64 {
	if p.err != nil || p.transientErr != nil || p.dropped || p.head != len(p.queue) || (p.eos && p.committed < p.acked) {
		return -1
	}
	return p.polledTo
}

// status returns the status of the partition at now; openTxnAfter is
// FlowConfig.OpenTransactionAfter.
func (p *partState) status(now time.Time, openTxnAfter time.Duration) PartitionStatus {
	s := PartitionStatus{Topic: p.topic, RemoteTopic: p.remote, Partition: p.partition, State: StateRunning,
		SourceEnd: p.hw, Replicated: -1, Committed: p.committed, Records: p.records, Bytes: p.bytes, Since: p.since}
	switch {
	case p.eos && p.committed >= 0:
		s.Replicated = p.committed + 1 // what read_committed consumers of the target see
	case !p.eos && p.acked >= 0:
		s.Replicated = p.acked + 1
	}
	// With nothing in flight, everything polled is replicated: the
	// position may be past transaction markers and aborted records.
	if p.err == nil && p.transientErr == nil && !p.dropped && p.head == len(p.queue) && (!p.eos || p.committed >= p.acked) && p.polledTo > s.Replicated {
		s.Replicated = p.polledTo
	}
	if p.hw >= 0 {
		rep := max(s.Replicated, p.logStart, 0) // records deleted before they were copied cannot be: not lag
		if p.hw > rep {
			s.Lag = p.hw - rep
		}
	}
	if !p.lsoSince.IsZero() && now.Sub(p.lsoSince) >= openTxnAfter {
		s.OpenTransactionSince = p.lsoSince
	}
	switch {
	case p.err != nil && p.quiet:
		s.State, s.Error, s.Since = StateRetrying, p.err.Error(), p.failedAt
		s.NextRetry, s.Retries = p.nextRetry, p.retries
	case p.err != nil:
		s.State, s.Error, s.Since = StateFailed, p.err.Error(), p.failedAt
		s.NextRetry, s.Retries = p.nextRetry, p.retries
	case p.fetchErr != "" && now.Sub(p.fetchErrAt) < fetchErrStale:
		// Shown while fetches keep failing; an idle partition whose fetch
		// error stopped repeating has recovered (no record clears it).
		s.State, s.Error = StateRetrying, p.fetchErr
	}
	return s
}

// assumedLimit reports a record refused against a record limit that was
// never read from the target (RecordTooLargeError.Assumed): not the
// record's own error yet, so its partition is retried automatically.
func assumedLimit(err error) bool {
	var tl *RecordTooLargeError
	return errors.As(err, &tl) && tl.Assumed
}

// logID is the ID of the source topic log p reads: the re-created
// topic's once one was seen (newID), else the one p started with.
func (p *partState) logID() kadm.TopicID {
	if p.newID != (kadm.TopicID{}) {
		return p.newID
	}
	return p.topicID
}

// resumeAt returns the resume point to store: the last acknowledged
// offset or, with nothing in flight and no failure, the offset before the
// polled position when that is further. Records the flow polled but does
// not copy (the copies the provenance check skips in an identity
// active-active pair or ring, transaction markers, aborted records) then
// do not hold the resume point back: a restart does not read them again,
// a partition whose records all came from the target stores one at all
// (else a restart with auto.offset.reset=latest lost the records written
// meanwhile), and a failover's catch-up does not wait for them forever
// (TestBrkLResumePointPastSkippedCopies; exactly once, where the open
// transaction commits it: TestBrkLResumePointPastSkippedCopiesExactlyOnce).
// Connect commits the offsets of records a transform dropped the same
// way. Not after a re-creation of the source topic (the polled position
// is the new log's while acked may be the old one's).
func (p *partState) resumeAt() int64 {
	off := p.acked
	if p.polledTo-1 > off && p.err == nil && p.transientErr == nil && !p.dropped && p.head == len(p.queue) &&
		!p.reincarnate && !p.recreated && !p.ackedOld && p.newID == ([16]byte{}) && p.ackedID == kadm.TopicID(p.topicID) {
		off = p.polledTo - 1
	}
	return off
}

// stored reports whether the resume point to store (resumeAt) is the
// stored one.
func (p *partState) stored(off int64) bool {
	return off == p.committed && p.resumeID() == p.committedID
}

// resumeID is the ID of the source topic whose log p's acked offset, the
// resume point stored next, is an offset of (resumeUp, resumeRecord):
// ackedID, or exactly once, when the open transaction holds records of a
// re-created topic's new log, the new log's (ackedID turns to it when the
// transaction commits). A state restarted after a re-creation has newLog
// set before any record of the new log was acknowledged: its acked offset
// is still the old log's until the transaction holds one (pending).
// Control goroutine.
func (p *partState) resumeID() kadm.TopicID {
	if p.eos && p.ackedOld && p.newLog && len(p.pending) > 0 {
		return p.logID()
	}
	return p.ackedID
}

func recordSize(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}
