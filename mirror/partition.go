package mirror

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// inflight is a record handed to the target producer and not acknowledged yet.
type inflight struct {
	up   int64 // upstream (source) offset
	size int64 // key + value + header keys and values, in bytes
}

// partState is the replication state of one source partition, owned by one
// unit. The unit's poll goroutine owns next; mu guards everything else,
// shared with the target producer's promise (acknowledgement) goroutine,
// the unit's control goroutine and status readers.
type partState struct {
	u         *unit
	topic     string
	remote    string
	partition int32

	next int64 // poll goroutine only: next upstream offset expected, -1 unknown

	mu        sync.Mutex
	queue     []inflight // in produce order; kgo calls promises in that order per partition
	head      int
	acked     int64 // last upstream offset acknowledged, -1 none
	ackedDown int64 // its downstream offset
	committed int64 // resume point stored on the target, -1 none
	hw        int64 // source high watermark last seen, -1 unknown
	records   int64
	bytes     int64
	sw        syncWriter
	err       error // non-retriable error: the partition is stopped
	// Failure and recovery (see restartDue): failedAt is when err was set;
	// autoRetry says the cause can go away (retried at nextRetry, zero for
	// errors that wait for an operator); retries counts the automatic
	// restarts since the partition last replicated a record; restartAsked
	// is set by Mirror.RestartFailed (or a refill).
	failedAt     time.Time
	autoRetry    bool
	nextRetry    time.Time
	retries      int
	retryDelay   time.Duration
	restartAsked bool
	hold         bool // pushes refused: the partition failed, is replaced, or waits for a refill
	refill       bool // restart from the source's log start: the remote topic was re-created empty
	fromStart    bool // addPartitions: consume from the log start (a refill at a session's start)
	// remoteID is the remote topic's ID when the state was created (zero:
	// unknown), recorded with its resume points; set before the state is
	// published, then only read.
	remoteID       kadm.TopicID
	since          time.Time // when this state was created (the partition started or restarted)
	polledTo       int64     // next offset after the last record polled (data or marker), -1 none
	fetchErr       string    // last fetch error, cleared by the next records fetched
	fetchErrAt     time.Time // when it was last returned (kgo returns it on every failing fetch)
	fetchErrLogged time.Time
	// Exactly once: acknowledged records of the open transaction, fed to
	// the sync writer when it commits; txnFailed marks an error of a
	// record of the open transaction.
	// lsoHeld is the last stable offset the partition was found held at
	// (below the high watermark, replication caught up to it) since
	// lsoSince; -1 when not held.
	lsoHeld  int64
	lsoSince time.Time

	pending   [][2]int64
	txnFailed bool
	txnErr    error // a record of the open transaction failed with an error of the whole transaction
	// dropped: a record polled was never written (its transaction aborted,
	// or the producer closed): the polled position is not replicated, and
	// this partition state (of an ended session or a stopping unit) never
	// reports it as such.
	dropped bool
	eos     bool
	// transientErr: a produce of this partition failed for a transient
	// reason; the session restarts, and until then no ack counts.
	transientErr error
	restartCh    chan<- error             // the unit's session that created this state (unit.sessRestart)
	restart      atomic.Bool              // the topic was re-created: the poll loop forgets next
	newID        [16]byte                 // with restart: the re-created topic's ID (guarded by mu)
	pm           *partMetrics             // nil without a Registerer
	ack          func(*kgo.Record, error) // p.onAck, bound once (a method value allocates)
}

// newPartState returns the state of a source partition whose replication
// resumes after resume point committed (-1: from the start) of the source
// topic with ID topicID (the incarnation its offset runs name).
func newPartState(u *unit, topic, remote string, partition int32, committed int64, topicID [16]byte) *partState {
	p := &partState{u: u, topic: topic, remote: remote, partition: partition, eos: u.env.cfg.ExactlyOnce,
		next: -1, lsoHeld: -1, acked: committed, ackedDown: -1, committed: committed, hw: -1, polledTo: -1,
		sw: newSyncWriter(committed, topicID), restartCh: u.sessRestart, since: time.Now()}
	if committed >= 0 {
		p.next = committed + 1
	}
	p.ack = p.onAck
	return p
}

// push queues the records about to be produced, in produce order, and
// records the position the poll loop reached (past any transaction
// markers).
func (p *partState) push(recs []inflight, polledTo int64) {
	p.mu.Lock()
	p.queue = append(p.queue, recs...)
	p.polledTo = polledTo
	p.mu.Unlock()
}

// pushIfLive is push for the poll loop: it queues nothing and returns
// false when the partition failed or was replaced by a restart (the batch
// must not be produced: the restarted state fetches it again).
func (p *partState) pushIfLive(recs []inflight, polledTo int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil || p.hold {
		return false
	}
	p.queue = append(p.queue, recs...)
	p.polledTo = polledTo
	return true
}

// popLocked removes the oldest in-flight entry (the one the next
// acknowledgement is for) and returns it, compacting the queue once most of
// it is consumed. p.mu is held.
func (p *partState) popLocked() inflight {
	in := p.queue[p.head]
	p.queue[p.head] = inflight{}
	p.head++
	if p.head == len(p.queue) {
		p.queue, p.head = p.queue[:0], 0
	} else if p.head > 1024 && p.head*2 > len(p.queue) {
		n := copy(p.queue, p.queue[p.head:])
		p.queue, p.head = p.queue[:n], 0
	}
	return in
}

// onAck is the target producer's promise for every record of the
// partition. kgo calls promises serially and in produce order per partition.
func (p *partState) onAck(r *kgo.Record, err error) {
	p.mu.Lock()
	in := p.popLocked()
	if p.err != nil || p.transientErr != nil {
		// Stopped, or waiting for the session restart a transient failure
		// asked for: later acks must not move the resume point past the
		// record that failed.
		p.mu.Unlock()
		return
	}
	if err != nil && (errors.Is(err, kgo.ErrAborting) || errors.Is(err, kgo.ErrClientClosed)) {
		// The unit aborted its transaction or is stopping: not an error of
		// the partition (the next session replays from the resume point).
		p.dropped = true
		p.mu.Unlock()
		return
	}
	if err != nil && p.eos && txnLevel(err) {
		// The transaction failed as a whole (fenced, or ended by the
		// coordinator): commitTxn aborts it and the next session resumes
		// from the committed resume points. The partition is healthy.
		p.txnErr, p.dropped = err, true
		p.mu.Unlock()
		return
	}
	if err != nil && transientProduceErr(err) {
		// The target did not take the record in time (an outage longer
		// than the producer's delivery.timeout.ms or retries): not the
		// partition's fault. The unit's session restarts from its stored
		// resume points; the target may be back by then.
		p.transientErr = err
		p.mu.Unlock()
		// Ask the control goroutine to end the session (without storing
		// resume points past the failure); the next one starts from the
		// stored resume points.
		select {
		case p.restartCh <- fmt.Errorf("%s[%d]: %w", p.topic, p.partition, err):
		default:
		}
		return
	}
	if err != nil {
		p.failLocked(&PartitionError{Flow: p.u.env.name, Topic: p.topic, Partition: p.partition, Err: err}, !recordError(err))
		p.txnFailed = p.eos
		p.mu.Unlock()
		p.u.partitionFailed(p, err)
		return
	}
	p.acked, p.ackedDown = in.up, r.Offset
	p.retries, p.retryDelay = 0, 0 // replicating again: the next failure starts the backoff anew
	p.records++
	p.bytes += in.size
	cfg := &p.u.env.cfg
	due := false
	switch {
	case p.eos:
		// Not visible to read_committed consumers before the
		// transaction commits: no offset sync may name it yet.
		p.pending = append(p.pending, [2]int64{in.up, r.Offset})
	case !cfg.DisableOffsetSyncs:
		due = p.sw.ack(in.up, r.Offset, cfg.OffsetLagMax)
	}
	p.mu.Unlock()
	p.u.env.metrics.acked(p.pm, in.size, r.Timestamp)
	if due {
		p.u.wakeSyncer()
	}
}

// Automatic restarts of a failed partition: the first after
// partRetryFirst (shorter in tests: withPartRetryFirst), then doubling up
// to partRetryMax.
const (
	partRetryFirst = 5 * time.Second
	partRetryMax   = 5 * time.Minute
)

// failLocked stops the partition on err (the first error wins) and, when
// auto, schedules its automatic restart with backoff. p.mu is held.
func (p *partState) failLocked(err error, auto bool) {
	if p.err != nil {
		return
	}
	p.err, p.failedAt, p.autoRetry = err, time.Now(), auto
	p.nextRetry = time.Time{}
	if auto {
		switch {
		case p.retryDelay <= 0:
			p.retryDelay = partRetryFirst
			if d := p.u.env.partRetryFirst; d > 0 {
				p.retryDelay = d
			}
		default:
			p.retryDelay = min(p.retryDelay*2, partRetryMax)
		}
		p.nextRetry = p.failedAt.Add(p.retryDelay)
	}
}

// recordError reports produce errors that are the record's own: the
// target rejects this record whatever its state (too large for the remote
// topic's max.message.bytes, invalid or corrupt, a timestamp outside
// message.timestamp.*.difference.max.ms). Restarting would fail on the
// same record again, so the partition waits for an operator to change the
// target's configuration and call Mirror.RestartFailed. Every other
// non-retriable produce error (authorization while ACLs are rolled out,
// KAFKA-14250; an unknown topic, partition or topic ID while the remote
// topic is re-created, KAFKA-10332; a policy violation) can go away on its
// own, and the partition is restarted automatically with backoff.
func recordError(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage) ||
		errors.Is(err, kerr.InvalidTimestamp) || errors.Is(err, kerr.UnsupportedForMessageFormat)
}

// transientProduceErr reports produce failures that say nothing about the
// record or the partition: the target did not take it in time (kgo's
// delivery timeout or retry limit, or a retriable error once retries are
// exhausted).
//
// An unknown topic, partition or topic ID is not transient here: the
// remote topic was deleted on the target (and maybe re-created, which kgo's
// producer never adopts: KAFKA-10332). The partition fails, and its
// automatic restart first asks the target for the remote topic's ID
// (restartDue): a new ID refills it from the source's log start.
func transientProduceErr(err error) bool {
	if unknownTopic(err) {
		return false
	}
	return errors.Is(err, kgo.ErrRecordTimeout) || errors.Is(err, kgo.ErrRecordRetries) || kerr.IsRetriable(err)
}

// unknownTopic reports produce errors by which the target says the remote
// topic or partition does not exist (as the producer knows it).
func unknownTopic(err error) bool {
	return errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition)
}

// fetchErrStale is how long a partition's last fetch error is shown as
// RETRYING without repeating.
const fetchErrStale = 30 * time.Second

// idleUp returns the polled position when nothing is in flight, else -1
// (the offset-run writer's idle position). Callers hold p.mu.
func (p *partState) idleUp() int64 {
	if p.err != nil || p.transientErr != nil || p.dropped || p.head != len(p.queue) {
		return -1
	}
	return p.polledTo
}

// commitPending feeds the acknowledged records of a committed transaction
// to the sync writer. p.mu must be held.
func (p *partState) commitPending(lagMax int64, syncs bool) {
	if syncs && len(p.pending) > 0 {
		for _, s := range p.pending {
			p.sw.ack(s[0], s[1], lagMax)
		}
		// The transaction's marker takes the next target offset: not a
		// hole in the copy.
		p.sw.marker()
	}
	p.pending = p.pending[:0]
}

// snapshot returns the status of the partition.
func (p *partState) snapshot() PartitionStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	if p.err == nil && p.transientErr == nil && !p.dropped && p.head == len(p.queue) && (!p.eos || p.committed == p.acked) && p.polledTo > s.Replicated {
		s.Replicated = p.polledTo
	}
	if p.hw >= 0 {
		rep := s.Replicated
		if rep < 0 {
			rep = 0
		}
		if p.hw > rep {
			s.Lag = p.hw - rep
		}
	}
	if !p.lsoSince.IsZero() && time.Since(p.lsoSince) >= p.u.env.cfg.OpenTransactionAfter {
		s.OpenTransactionSince = p.lsoSince
	}
	switch {
	case p.err != nil:
		s.State, s.Error, s.Since = StateFailed, p.err.Error(), p.failedAt
		s.NextRetry, s.Retries = p.nextRetry, p.retries
	case p.fetchErr != "" && time.Since(p.fetchErrAt) < fetchErrStale:
		// Shown while fetches keep failing; an idle partition whose fetch
		// error stopped repeating has recovered (no record clears it).
		s.State, s.Error = StateRetrying, p.fetchErr
	}
	return s
}

// txnLevel reports record errors that belong to the record's transaction
// rather than to its partition: the producer was fenced or its transaction
// can no longer commit. The transaction aborts and the unit's session
// restarts; the partition does not stop.
func txnLevel(err error) bool {
	return isFenced(err) || errors.Is(err, kerr.TransactionAbortable) || errors.Is(err, kerr.InvalidTxnState) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.UnknownProducerID) ||
		errors.Is(err, kerr.ConcurrentTransactions)
}

func recordSize(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// backoff returns the next retry delay: doubling from 250 ms to 30 s.
func backoff(prev time.Duration) time.Duration {
	switch {
	case prev <= 0:
		return 250 * time.Millisecond
	case prev >= 15*time.Second:
		return 30 * time.Second
	}
	return prev * 2
}
