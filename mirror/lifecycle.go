package mirror

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
)

// The partition lifecycle of a unit as a state machine (DESIGN.md,
// "Partition lifecycle"). lifecycle holds the state of the unit's source
// partitions and takes events (apply); what the unit must do about them
// comes out as actions. It does no I/O, reads no clock (time arrives with
// evTick) and starts no goroutine: the unit's control goroutine is its
// only caller, and the only writer of partition state. The other
// goroutines post events to the control goroutine's inbox (inbox.go).

// evKind is the kind of an event.
type evKind uint8

const (
	// evTick carries the time (a: Unix nanoseconds); the control
	// goroutine posts one before every batch of events it applies.
	evTick evKind = iota
	// evStart: a partition starts (an offer, or a failed partition
	// carried from an earlier session). Its start position is an input:
	// x.start (the stored resume point, or the log start for a refill).
	evStart
	// evFetched: the poll (or shallow) loop hands records of f to the
	// producer: x.recs (or the inbox's arena), a: the polled position
	// after them, b: the source high watermark (-1 unknown).
	evFetched
	// evResult: the produce result of one record (rec) of f: err nil is
	// its acknowledgement at rec.Offset.
	evResult
	// evBatchAck: shallow copy: a copied batch of f acknowledged; a: its
	// first source offset, b: its first target offset, c: its record
	// count, d: its stored bytes; x.ts: its max timestamp.
	evBatchAck
	// evUnpush: shallow copy: the target did not take the batch of f
	// whose first source offset is a (resent, or decoded for the record
	// path).
	evUnpush
	// evFetchErr: a fetch of f failed (err).
	evFetchErr
	// evFailed: the poll or shallow loop stopped f (err: a gap with
	// GapStop, a batch the target refused for good); a: 1 when the cause
	// can go away (automatic retry).
	evFailed
	// evStopped: f's produces are stopped and no fetched records of it
	// can follow (posted after actStop was carried out).
	evStopped
	// evFlushed: resume points stored (x.ups).
	evFlushed
	// evTxnCommitted and evTxnAborted: exactly once, the open transaction
	// ended (x.ups: the resume points it committed; a: 1 to promote the
	// offset syncs).
	evTxnCommitted
	evTxnAborted
	// evRestart: Mirror.RestartFailed asks for the restart of the failed
	// partitions of x.topic ("" every topic) and partition a (-1 every
	// partition).
	evRestart
	// evLimitRaised: the remote topic x.remote now accepts records up to
	// a bytes.
	evLimitRaised
	// evSourceRecreated: an offer found source topic x.topic re-created
	// with ID x.id.
	evSourceRecreated
	// evRemoteID: the target answered the ID of the remote topic of
	// source topic x.topic: x.id (zero with err: not found).
	evRemoteID
	// evSession: a new session of the unit starts: the partitions move
	// to carry (failed ones stay failed when offered again).
	evSession
	// evTxnPrepare: exactly once, the poll loop asks which resume points
	// the open transaction commits (txnPrepare; answered on x.verdict
	// once every event posted before it was applied). It changes nothing.
	evTxnPrepare
)

// event is what a goroutine posts to the control goroutine. The hot
// events (evFetched, evResult) use the inline fields only.
type event struct {
	kind       evKind
	f          *feed
	rec        *kgo.Record
	err        error
	a, b, c, d int64
	x          *evExtra
	res        int // in the inbox: the results posted before it
}

// evExtra is the payload of the rarer events.
type evExtra struct {
	recs   []inflight // evFetched, when not in the inbox's arena
	start  startPos   // evStart
	topic  string
	remote string
	id     kadm.TopicID
	ups    []resumeUp
	ts     time.Time
	k      tp
	// reply and verdict carry the answers of evRestart and evTxnPrepare.
	reply   chan int
	verdict chan txnVerdict
}

// startPos is where a partition starts: the input of evStart. committed
// is the last source offset replicated (the stored resume point, -1
// none); fromStart reads from the source's log start whatever committed
// says (a refill); ids are the source topic's (offset runs) and the
// remote topic's (resume points).
type startPos struct {
	remote    string
	committed int64
	fromStart bool
	topicID   kadm.TopicID
	remoteID  kadm.TopicID
	// byTail: the target's tail proves records up to tail (source
	// offset) replicated, at target offset tailDown, later than committed
	// (issue 23, tail.go): the partition resumes after it, and its first
	// flush stores it.
	byTail         bool
	tail, tailDown int64
	// limit is the record limit (bytes) the session's producer applies
	// to the remote topic (0: unknown): a partition carried over FAILED
	// on a record refused at a smaller one restarts (staleLimit).
	limit int64
}

// resumeUp is a resume point of p: off, the last source offset
// replicated.
type resumeUp struct {
	p   *partState
	off int64
	// srcID is the ID of the source topic whose log off is an offset of
	// (partState.resumeID, read by the control goroutine: the exactly-once
	// commit builds its records on another).
	srcID kadm.TopicID
}

// Start offsets of actions other than an offset.
const (
	atEnd   = -1
	atStart = -2
	atNone  = -3 // not consumed (a failed partition carried over)
)

// actKind is the kind of an action.
type actKind uint8

const (
	// actStart: p was created; consume it at off unless atNone.
	actStart actKind = iota
	// actStop: stop producing to p's feed, then post evStopped.
	actStop
	// actPause: pause the fetches of p (failed).
	actPause
	// actFailed: p stopped on err (log, metric).
	actFailed
	// actEndSession: a transient produce failure (err): the unit's
	// session ends without storing resume points past it.
	actEndSession
	// actCheckRemote: ask the target for the ID of remote topic remote
	// of source topic topic, then post evRemoteID.
	actCheckRemote
	// actRefreshLimits: read the max.message.bytes of remote topic
	// remote before p restarts (it stopped on a record too large).
	actRefreshLimits
	// actRestart: p replaces old; consume it at off (its fetches were
	// paused: resume them; purge: the producer drops the remote topic's
	// cached ID first).
	actRestart
	// actRefill: the remote topic of topic was re-created (log).
	actRefill
	// actGap: report gap.
	actGap
	// actRecreate: source topic topic was re-created: purge it from the
	// consumer and consume parts (new feeds) at the log start.
	actRecreate
)

// action is what the control goroutine carries out.
type action struct {
	kind   actKind
	p, old *partState
	off    int64
	purge  bool
	err    error
	gap    *GapError
	topic  string
	remote string
	id     kadm.TopicID // actRefill: the re-created remote topic's ID
	was    kadm.TopicID // actRefill: its ID before
	parts  []*partState
}

// lifeConfig is what the lifecycle knows of the flow's configuration.
type lifeConfig struct {
	flow         string // the flow's name
	eos          bool
	syncs        bool  // offset syncs on
	lagMax       int64 // offset.lag.max
	retryFirst   time.Duration
	startLatest  bool
	gapStop      bool
	openTxnAfter time.Duration
	// advise adds what to do to a record's own produce error of remote
	// topic remote (the unit's limits; nil: the error as is). span and
	// keyless describe the records the refused batch may hold
	// (partState.inflightTimes, partState.firstKeyless).
	advise func(remote string, in inflight, r *kgo.Record, span timeSpan, keyless int64, err error) error
	// acked counts a record acknowledged, of size bytes and timestamp ts,
	// of p (the metrics; nil: none).
	acked func(p *partState, size int64, ts time.Time)
}

// lifecycle is the partition lifecycle of one unit (see above).
type lifecycle struct {
	cfg lifeConfig
	now time.Time
	// snapAt is the time of the last snapshot (aging compares with it).
	snapAt time.Time
	parts  map[tp]*partState
	carry  map[tp]*partState // partitions of earlier sessions
	// topicIDs are the source topics' IDs and remoteIDs the remote
	// topics' IDs on the target (by source topic), as offers and checks
	// found them.
	topicIDs  map[string]kadm.TopicID
	remoteIDs map[string]kadm.TopicID
	// limits are the record limits (bytes) of remote topics the unit's
	// next producer applies, as the session's last evLimitRaised said: a
	// record refused at a smaller limit was refused by the producer the
	// session ends to replace (limitRaised). A new session forgets them:
	// its producer applies them, or newer ones.
	limits map[string]int64

	out      []action
	added    bool // a partition state was created (or reset for a re-created source topic) since the session last looked: it has no resume point stored yet
	syncsDue bool // an offset sync or run is due
	redecide bool // a restart decision may have changed (decide)
	wake     time.Duration
}

func newLifecycle(cfg lifeConfig) *lifecycle {
	return &lifecycle{cfg: cfg, parts: map[tp]*partState{}, carry: map[tp]*partState{},
		topicIDs: map[string]kadm.TopicID{}, remoteIDs: map[string]kadm.TopicID{}, limits: map[string]int64{}, wake: -1}
}

// take returns the actions of the events applied since the last take,
// in order, and forgets them (the slice is reused by the next events).
func (m *lifecycle) take() []action {
	out := m.out
	m.out = m.out[:0]
	return out
}

func (m *lifecycle) emit(a action) { m.out = append(m.out, a) }

// cur returns the current state f feeds, nil when f's state was
// replaced (a restart) or dropped (a new session): its events are stale.
func (m *lifecycle) cur(f *feed) *partState {
	if f == nil || f.p == nil || f.p.retired {
		return nil
	}
	return f.p
}

// apply applies one event. arena holds the records of evFetched events
// posted through the inbox (c: their chunk, d: their range in it, start in
// the high 32 bits, end in the low ones).
func (m *lifecycle) apply(ev event, arena [][]inflight) {
	switch ev.kind {
	case evTick:
		m.now = time.Unix(0, ev.a)
	case evStart:
		m.start(ev.x.k, ev.x.start)
	case evFetched:
		var recs []inflight
		switch {
		case ev.x != nil:
			recs = ev.x.recs
		case ev.c >= 0:
			lo, hi := ev.d>>32, ev.d&(1<<32-1)
			recs = arena[ev.c][lo:hi:hi]
		}
		m.fetched(ev.f, recs, ev.a, ev.b)
	case evResult:
		m.result(ev.f, ev.rec, ev.err)
	case evBatchAck:
		m.batchAck(ev.f, ev.a, int32(ev.c), ev.b, ev.d, ev.x.ts)
	case evUnpush:
		m.unpush(ev.f, ev.a)
	case evFetchErr:
		if p := m.cur(ev.f); p != nil {
			p.fetchErr, p.fetchErrAt = ev.err.Error(), m.now
		}
	case evFailed:
		// Only from the state's current feed: after a re-creation the old
		// log's feed shares the state until its stop is seen, and a gap it
		// finds was reported by the re-creation (recreatedGap).
		if p := m.cur(ev.f); p != nil && ev.f == p.f {
			var gap *GapError
			m.fail(p, ev.err, ev.a == 1, !errors.As(ev.err, &gap)) // a gap was reported as such
		}
	case evStopped:
		if p := m.cur(ev.f); p != nil && ev.f == p.f {
			p.stopAcked = true
			m.redecide = true
		}
	case evFlushed:
		for _, up := range ev.x.ups {
			up.p.committed, up.p.committedID, up.p.flushed = up.off, up.srcID, true
		}
	case evTxnCommitted:
		m.txnCommitted(ev.x.ups, ev.a == 1)
	case evTxnAborted:
		m.txnAborted()
	case evRestart:
		m.requestRestart(ev.x.topic, int32(ev.a))
	case evLimitRaised:
		m.limitRaised(ev.x.remote, ev.a)
	case evSourceRecreated:
		m.sourceRecreated(ev.x.topic, ev.x.id)
	case evRemoteID:
		m.remoteID(ev.x.topic, ev.x.remote, ev.x.id, ev.err)
	case evSession:
		if ev.a != 0 {
			m.now = time.Unix(0, ev.a)
		}
		m.newSession()
	}
}

// start creates the state of partition k starting at st (evStart): a
// failed partition of an earlier session keeps its failure and restart
// schedule, and is not consumed until it restarts.
func (m *lifecycle) start(k tp, st startPos) {
	from := st.committed
	old := m.carry[k]
	if old != nil && old.ackedOld && old.err == nil {
		// The source topic was re-created in an earlier session, and
		// nothing of the new log was stored yet: the stored resume point
		// is the old log's (found by the property test).
		st.fromStart = true
	}
	if st.fromStart {
		from = -1 // the remote topic is a new, empty one (or the source's): from its start
	}
	p := newPartState(k.topic, st.remote, k.partition, from, st.topicID, m.cfg.eos, m.now)
	p.remoteID, p.fromStart = st.remoteID, st.fromStart
	if st.byTail && !st.fromStart && !m.cfg.eos && st.tail > from {
		// Acknowledged on the target by an earlier owner: the resume point
		// (committed) stays the stored one until the first flush.
		p.acked, p.ackedDown = st.tail, st.tailDown
		p.sw = newSyncWriter(st.tail, st.topicID)
	}
	if old != nil {
		delete(m.carry, k)
		p.records, p.bytes, p.pm = old.records, old.bytes, old.pm
		// A failed partition stays failed across sessions, with its
		// restart schedule (decide restarts it).
		p.err, p.failedAt, p.autoRetry, p.nextRetry = old.err, old.failedAt, old.autoRetry, old.nextRetry
		p.retries, p.retryDelay, p.restartAsked, p.refill = old.retries, old.retryDelay, old.restartAsked, old.refill
		p.quiet, p.unknownTries = old.quiet, old.unknownTries // a quiet retry stays quiet (exactly once, its aborted transaction ended the session)
		p.recreated, p.newID = old.recreated, old.newID
		if p.newID != (kadm.TopicID{}) && st.topicID != (kadm.TopicID{}) && p.newID != st.topicID {
			p.newID = st.topicID // re-created again since: the log it reads now
		}
		var tl *RecordTooLargeError
		if errors.As(old.err, &tl) && st.limit > 0 && tl.Limit < st.limit {
			// The limit was raised between sessions (the new
			// producer applies it): the record may fit now.
			p.restartAsked = true
		}
		if old.err != nil && old.ackedOld {
			p.ackedOld, p.newLog = true, true // its restart starts at the new log's start
			p.ackedID = old.ackedID           // acked is still the old log's
			p.committedID = old.committedID
		}
	}
	if cur := m.parts[k]; cur != nil {
		cur.retired = true // not expected: a partition starts once per session
	}
	m.parts[k] = p
	m.added = true
	off := int64(atStart)
	switch {
	case p.err != nil || p.refill:
		// Stopped in an earlier session of this unit: it stays stopped
		// at its resume point until it restarts. Its feed is created
		// stopped.
		off, p.hold, p.stopAcked = atNone, true, true
		m.redecide = true
	case p.fromStart:
	case p.acked >= 0:
		off = p.acked + 1 // the resume point, or the target's tail
	case m.cfg.startLatest:
		off = atEnd
		p.sw.runs.readFromFirstAck()
	}
	m.emit(action{kind: actStart, p: p, off: off})
}

// fetched queues records of f handed to the producer (evFetched). The
// inbox accepts them only while f is live, so every record it passes on
// is produced: each is in flight until its result comes.
func (m *lifecycle) fetched(f *feed, recs []inflight, polledTo, hw int64) {
	p := m.cur(f)
	if p == nil {
		return
	}
	if p.reincarnate && f == p.f {
		// The first records of the re-created source topic: its first
		// offset-run session starts after the old topic's records not
		// fed to the sync writer yet (in flight, and exactly once
		// acknowledged in the open transaction).
		p.reincarnate = false
		p.sw.reincarnate(p.newID, p.inFlightRecords()+len(p.pending)) // acknowledged to it record by record
		p.oldLeft = p.inFlight()                                      // popped entry by entry (pop)
		p.hw, p.logStart = -1, 0                                      // the new log's
	}
	if hw > p.hw {
		p.hw = hw
	}
	p.fetchErr = ""
	p.queue = append(p.queue, recs...)
	if polledTo >= 0 {
		p.polledTo = polledTo
	}
}

// result applies the produce result of record r of f (evResult). kgo
// calls promises in produce order per partition for the records it
// buffered; a record it refuses before buffering (too large, say) is
// failed at once, ahead of the records produced before it. So a result is
// matched to its own record (the queue entry holding r), and results are
// applied in produce order: one that arrives early waits in early until
// the records before it have theirs. An early failure stops the feed at
// once, so nothing produced after a failed record reaches the target.
func (m *lifecycle) result(f *feed, r *kgo.Record, err error) {
	p := m.cur(f)
	if p == nil || p.head == len(p.queue) {
		return
	}
	if p.queue[p.head].rec != r {
		if !p.queued(r) {
			return // not this state's record (not expected)
		}
		if p.early == nil {
			p.early = map[*kgo.Record]error{}
		}
		p.early[r] = err
		if err != nil {
			m.stop(p)
		}
		return
	}
	m.applyResult(p, m.pop(p), r, err)
	m.applyEarly(p)
	if (p.err != nil || p.hold) && p.head == len(p.queue) {
		m.redecide = true // the last result of a failed or held partition
	}
}

// applyEarly applies the results that arrived early and are next now.
func (m *lifecycle) applyEarly(p *partState) {
	for len(p.early) > 0 && p.head < len(p.queue) {
		in := p.queue[p.head]
		if in.rec == nil {
			break // a shallow-copy batch: its own ack (batchAck)
		}
		e, ok := p.early[in.rec]
		if !ok {
			break
		}
		delete(p.early, in.rec)
		m.pop(p)
		m.applyResult(p, in, in.rec, e)
	}
}

// unpush removes the shallow-copy batch of f whose first source offset is
// up from the in-flight queue (evUnpush): the target did not take it. A
// re-created source topic's new records can be queued behind the old
// log's batch (both feeds share the state): the entry is found by its
// offset, and if it was of the old log, the counts of the old log's
// records still expected (oldLeft, the sync writer's) drop with it.
func (m *lifecycle) unpush(f *feed, up int64) {
	p := m.cur(f)
	if p == nil || len(p.queue) == p.head {
		return
	}
	// The old log's entries are the first oldLeft (a new log's offsets
	// can equal an old batch's): the old feed's batch is looked for among
	// them, the current feed's after them.
	lo, hi := p.head, len(p.queue)
	if p.ackedOld && !p.reincarnate && p.oldLeft > 0 {
		if f == p.f {
			lo = min(p.head+p.oldLeft, hi)
		} else {
			hi = min(p.head+p.oldLeft, hi)
		}
	}
	i := -1
	for j := hi - 1; j >= lo; j-- {
		if p.queue[j].rec == nil && p.queue[j].up == up {
			i = j
			break
		}
	}
	if i < 0 {
		return // not this state's batch (not expected)
	}
	in := p.queue[i]
	if p.ackedOld && !p.reincarnate && i-p.head < p.oldLeft {
		p.oldLeft--
		if w := &p.sw.runs; w.pending {
			w.pendAcks = max(w.pendAcks-max(int(in.n), 1), 0)
		}
	}
	copy(p.queue[i:], p.queue[i+1:])
	p.queue[len(p.queue)-1] = inflight{}
	p.queue = p.queue[:len(p.queue)-1]
	m.applyEarly(p)
	if (p.err != nil || p.hold) && p.head == len(p.queue) {
		m.redecide = true // drained: a held or failed partition may restart
	}
}

// pop removes p's oldest in-flight entry, counting the re-created source
// topic's old records.
func (m *lifecycle) pop(p *partState) inflight {
	in := p.pop()
	if p.ackedOld && !p.reincarnate {
		if p.oldLeft > 0 {
			p.oldLeft--
		} else {
			p.newLog = true // the result of a record of the new log
		}
	}
	return in
}

// applyResult applies the produce result of in (record r, error err): in
// is the oldest entry without a result.
func (m *lifecycle) applyResult(p *partState, in inflight, r *kgo.Record, err error) {
	if p.err != nil && err != nil && p.acksAfterStop() {
		// A record in flight at a gap stop failed: the acks after it
		// must not move the resume point past it; exactly once, the
		// transaction holding it aborts (a transaction-level error is
		// the transaction's, as for a running partition below).
		p.ackFrozen = true
		switch {
		case errors.Is(err, kgo.ErrAborting) || errors.Is(err, kgo.ErrClientClosed):
			p.dropped = true
		case p.eos && txnLevel(err):
			p.txnErr, p.dropped = err, true
		default:
			p.txnFailed = p.eos
		}
		return
	}
	if p.transientErr != nil || p.err != nil && !p.acksAfterStop() {
		// Stopped, or waiting for the session restart a transient failure
		// asked for: later acks must not move the resume point past the
		// record that failed. A partition stopped at a gap in its log
		// (GapStop, acksAfterStop) has no failed record: its records in
		// flight are all before the gap, and their acks count (exactly
		// once, they commit with the transaction: a resume point left
		// before them would copy them again after RestartFailed).
		return
	}
	if err != nil && (errors.Is(err, kgo.ErrAborting) || errors.Is(err, kgo.ErrClientClosed)) {
		// The unit aborted its transaction or is stopping: not an error of
		// the partition (the next session replays from the resume point).
		p.dropped = true
		return
	}
	if err != nil && errors.Is(err, errPartitionStopped) {
		// franz-go failed it unsent after failing an earlier record of
		// the partition, whose result came first and decided (so this is
		// not reached unless franz-go changed: then the partition is
		// restarted rather than left without produces).
		p.dropped = true
		if p.txnErr == nil {
			m.fail(p, &PartitionError{Flow: m.cfg.flow, Topic: p.topic, Partition: p.partition, Err: err}, true, true)
		}
		return
	}
	if err != nil && p.eos && txnLevel(err) {
		// The transaction failed as a whole (fenced, or ended by the
		// coordinator): commitTxn aborts it and the next session resumes
		// from the committed resume points. The partition is healthy.
		p.txnErr, p.dropped = err, true
		return
	}
	if err != nil && transientProduceErr(err) {
		// The target did not take the record in time (an outage longer
		// than the producer's delivery.timeout.ms or retries): not the
		// partition's fault. The unit's session restarts from its stored
		// resume points; the target may be back by then.
		p.transientErr = err
		m.emit(action{kind: actEndSession, p: p, err: fmt.Errorf("%s[%d]: %w", p.topic, p.partition, err)})
		return
	}
	if err != nil && unknownTopic(err) && !p.refill && p.unknownTries < unknownQuietTries {
		// Most often a remote topic just created, which the partition's
		// leader on the target does not know yet (KRaft metadata reaches
		// the brokers a moment apart); else deleted or re-created, which
		// the check of its ID on restart tells.
		m.failQuiet(p, &PartitionError{Flow: m.cfg.flow, Topic: p.topic, Partition: p.partition, Err: err})
		p.txnFailed = p.eos // exactly once: restarted after its transaction aborted
		return
	}
	if err != nil {
		if m.cfg.advise != nil {
			err = m.cfg.advise(p.remote, in, r, p.inflightTimes(in), p.firstKeyless(in), err)
		}
		m.fail(p, &PartitionError{Flow: m.cfg.flow, Topic: p.topic, Partition: p.partition, Err: err},
			!recordError(err) || assumedLimit(err) || batchRefused(err), true)
		p.txnFailed = p.eos
		return
	}
	p.acked, p.ackedDown = in.up, r.Offset
	if p.newLog && p.ackedOld && !p.eos {
		p.ackedOld, p.ackedID = false, p.logID()
	}
	if !p.eos {
		// Replicating again: the next failure starts the backoff anew.
		// Exactly once, only a committed transaction says so
		// (txnCommitted): the acks of one that aborts reset nothing (a
		// review, stop 38: a retry whose batch after a few acked records
		// was refused kept the first retry delay forever, restarting the
		// slot's session every few seconds).
		p.retries, p.retryDelay = 0, 0
		p.unknownTries = 0
	}
	p.records++
	p.bytes += in.size
	if m.cfg.acked != nil {
		m.cfg.acked(p, in.size, r.Timestamp)
	}
	switch {
	case p.eos:
		// Not visible to read_committed consumers before the
		// transaction commits: no offset sync may name it yet.
		p.pending = append(p.pending, [2]int64{in.up, r.Offset})
	case m.cfg.syncs:
		if p.sw.ack(in.up, r.Offset, m.cfg.lagMax) {
			m.syncsDue = true
		}
	}
}

// batchAck acknowledges a copied batch of n records of f whose first
// source offset is up and first target offset down (evBatchAck): the
// records' offsets are consecutive on both sides, so record i maps up+i to
// down+i, fed to the sync writer record by record as a result is. size is
// the batch's stored bytes, ts its max timestamp.
func (m *lifecycle) batchAck(f *feed, up int64, n int32, down, size int64, ts time.Time) {
	p := m.cur(f)
	if p == nil || p.head == len(p.queue) {
		return
	}
	if in := p.queue[p.head]; in.rec != nil || in.up != up {
		// Not expected: shallow copy sends a partition's batch only when
		// nothing else of it is in flight, so its ack is for the head.
		// Popping another entry would count its records as copied.
		return
	}
	m.pop(p)
	if p.err == nil || p.acksAfterStop() {
		if m.cfg.syncs {
			for i := int64(0); i < int64(n); i++ {
				if p.sw.ack(up+i, down+i, m.cfg.lagMax) {
					m.syncsDue = true
				}
			}
		}
		p.acked, p.ackedDown = up+int64(n)-1, down+int64(n)-1
		if p.newLog && p.ackedOld && !p.eos {
			p.ackedOld, p.ackedID = false, p.logID() // as applyResult
		}
		if !p.eos {
			p.unknownTries = 0 // acknowledged: the next unknown remote topic is retried quietly anew (exactly once: committed, txnCommitted)
		}
		p.records += int64(n)
		p.bytes += size
		if m.cfg.acked != nil {
			m.cfg.acked(p, size, ts)
			for i := int32(1); i < n; i++ {
				m.cfg.acked(p, 0, ts)
			}
		}
	}
	m.applyEarly(p) // a re-created topic's new records queued behind the old log's batch
	if (p.err != nil || p.hold) && p.head == len(p.queue) {
		m.redecide = true
	}
}

// Automatic restarts of a failed partition: the first after
// partRetryFirst (shorter in tests: withPartRetryFirst), then doubling up
// to partRetryMax.
const (
	partRetryFirst = 5 * time.Second
	partRetryMax   = 5 * time.Minute
)

// Quiet retries of a partition whose remote topic the target did not know
// (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID on produce): up to
// unknownQuietTries in a row, the first after unknownQuietFirst, doubling
// (6.2 s of backoff in all), before the failure is reported as any
// other.
const (
	unknownQuietTries = 5
	unknownQuietFirst = 200 * time.Millisecond
)

// failQuiet stops p on err, an unknown remote topic, without reporting
// it: the partition is RETRYING, its automatic restart is due after a
// short delay (unknownQuietFirst, doubling with p.unknownTries), and the
// restart first asks the target for the remote topic's ID (decide). On a
// cluster of several brokers a remote topic just created is unknown to
// some of them for a moment (measured: 727 of 20 000 partitions on two
// brokers per cluster); the same ID means it was that, and the
// partition restarts after its last acknowledged record. A missing topic
// or a new ID is reported as before (remoteID), and so is the failure
// after unknownQuietTries quiet restarts in a row.
func (m *lifecycle) failQuiet(p *partState, err error) {
	if p.err != nil {
		return
	}
	p.err, p.failedAt, p.autoRetry, p.quiet = err, m.now, true, true
	p.nextRetry = m.now.Add(unknownQuietFirst << p.unknownTries)
	p.unknownTries++
	m.stop(p)
	m.redecide = true
}

// fail stops p on err (the first error wins) and, when auto, schedules
// its automatic restart with backoff; report emits actFailed.
func (m *lifecycle) fail(p *partState, err error, auto, report bool) {
	if p.err != nil {
		return
	}
	p.err, p.failedAt, p.autoRetry, p.quiet = err, m.now, auto, false
	p.nextRetry = time.Time{}
	var tl *RecordTooLargeError
	switch {
	case m.staleLimit(p, err):
		// Refused at a limit already raised: the record fits the next
		// producer, so the partition restarts there without the
		// operator (an operator's restart that ran before the unit
		// reopened its producer fails again at the old limit).
		p.restartAsked = true
	case errors.As(err, &tl) && !tl.Assumed:
		// Refused at the limit the unit read last, which the remote
		// topic may have raised since (discovery reads it again only
		// every refresh interval): read it now. A raised limit
		// restarts the partition by itself (evLimitRaised); an
		// unchanged one leaves it waiting for the operator
		// (TestRaisedLimitReadAtTheFailure).
		m.emit(action{kind: actRefreshLimits, p: p, remote: p.remote})
	}
	if auto {
		switch {
		case p.retryDelay <= 0:
			p.retryDelay = partRetryFirst
			if d := m.cfg.retryFirst; d > 0 {
				p.retryDelay = d
			}
		default:
			p.retryDelay = min(p.retryDelay*2, partRetryMax)
		}
		p.nextRetry = p.failedAt.Add(p.retryDelay)
	}
	if report {
		m.emit(action{kind: actFailed, p: p, err: err})
	}
	m.stop(p)
	m.redecide = true
}

// stop holds p: its feed is stopped (actStop) and it takes no more
// records; evStopped confirms no fetched records of it can follow.
func (m *lifecycle) stop(p *partState) {
	if p.hold {
		return
	}
	p.hold = true
	m.emit(action{kind: actStop, p: p})
}

// requestRestart asks for the restart of the failed partitions of topic
// ("" every topic) and partition (-1 every partition) and returns how
// many it asked for (evRestart).
func (m *lifecycle) requestRestart(topic string, partition int32) int {
	n := 0
	for k, p := range m.parts {
		if (topic != "" && k.topic != topic) || (partition >= 0 && k.partition != partition) {
			continue
		}
		if p.err != nil {
			p.restartAsked = true
			n++
		}
	}
	if n > 0 {
		m.redecide = true
	}
	return n
}

// limitRaised asks for the restart of the partitions of remote topic
// remote stopped on a record too large for a limit below lim, the limit
// the unit's next producer applies (evLimitRaised): raising
// max.message.bytes is the fix their error asks for, and an operator who
// raised it and restarted them at once may have been answered the old
// limit (a broker applies a config change a moment after it acknowledges
// it). The limit is remembered: a partition that fails later at a smaller
// one (restarted before the producer was reopened) is restarted too
// (staleLimit). A lowered limit is remembered the same way, so that a
// record refused at it is not restarted.
func (m *lifecycle) limitRaised(remote string, lim int64) {
	m.limits[remote] = lim
	for _, p := range m.parts {
		if m.staleLimit(p, p.err) {
			p.restartAsked = true
			m.redecide = true
		}
	}
	for _, p := range m.carry {
		if m.staleLimit(p, p.err) {
			p.restartAsked = true // when it starts (a session that ends at once to reopen its producer)
		}
	}
}

// staleLimit reports whether err, p's failure, is a record refused at a
// limit smaller than the one the unit's next producer applies to p's
// remote topic: the record may fit there.
func (m *lifecycle) staleLimit(p *partState, err error) bool {
	var tl *RecordTooLargeError
	lim, ok := m.limits[p.remote]
	return ok && errors.As(err, &tl) && tl.Limit < lim
}

// sourceRecreated handles source topic topic deleted and re-created
// under the same name (new ID id, evSourceRecreated): the records of the
// old topic not yet replicated are lost, which is reported as a gap per
// partition (with GapStop, a lost range stops the partition); the others
// are replicated from the new topic's log start (actRecreate), and a
// failed one restarts there.
func (m *lifecycle) sourceRecreated(topic string, id kadm.TopicID) {
	old := m.topicIDs[topic]
	m.topicIDs[topic] = id
	var reset []*partState
	for _, p := range m.sortedParts() {
		if p.topic != topic {
			continue
		}
		gap := m.recreatedGap(p, id, old)
		if m.cfg.gapStop && gap.To > gap.From {
			m.fail(p, gap, false, false) // the loss is the operator's to accept: Mirror.RestartFailed
		}
		if p.err != nil || p.hold {
			p.recreated = true // stays stopped; its restart starts at the new topic's log start
			if m.oldRecordOnly(p, gap) {
				p.restartAsked = true
				m.redecide = true
			}
			continue
		}
		p.reincarnate, p.ackedOld, p.newLog = true, true, false
		// A new log under the old name: its first resume point is stored
		// within a second too (the session's early stores, armed again
		// by added), not a whole interval later: until then the stored
		// one names the old topic ID, and a crash replays the new log
		// from its start (TestFirstResumePointOfRecreatedTopic).
		p.flushed = false
		m.added = true
		reset = append(reset, p)
	}
	// Partitions of an earlier session not started yet (the re-creation
	// fell between sessions): the same gap, and their start or restart
	// is at the new topic's log start (lifecycle.start).
	for k, p := range m.carry {
		if k.topic != topic {
			continue
		}
		gap := m.recreatedGap(p, id, old)
		if m.cfg.gapStop && gap.To > gap.From && p.err == nil {
			p.err, p.failedAt, p.autoRetry = gap, m.now, false
		}
		if p.err != nil {
			p.recreated = true
			p.restartAsked = p.restartAsked || m.oldRecordOnly(p, gap)
			continue
		}
		p.ackedOld = true
	}
	m.emit(action{kind: actRecreate, topic: topic, parts: reset})
}

// oldRecordOnly reports whether p, stopped when its source topic was
// re-created (gap: what the re-creation lost of it), waits for the
// operator only because of a record of the old log (a record's own error,
// recordError): that record is gone with the old topic, so the partition
// restarts at the new log's start by itself, unless GapStop leaves the
// loss to the operator. Before, it stayed FAILED for good with an error
// about a record the source no longer held, and the new topic's records
// were not replicated (TestBrkARecreatedWhileFailedOnTooLarge).
func (m *lifecycle) oldRecordOnly(p *partState, gap *GapError) bool {
	return recordError(p.err) && !(m.cfg.gapStop && gap.To > gap.From)
}

// forget drops what the lifecycle keeps of source topic topic, deleted
// on the source while the unit replicated it (applyOffer's settleDeleted;
// called at the start of the session that no longer runs it): its carried
// partitions and its topic IDs. Deleted topics left nothing behind, so a
// cluster whose topics come and go does not grow the unit's memory; a
// topic re-created under the name later starts as a new one (its stored
// resume points checked against its new ID by applyOffer).
func (m *lifecycle) forget(topic string) {
	for k := range m.carry {
		if k.topic == topic {
			delete(m.carry, k)
		}
	}
	delete(m.topicIDs, topic)
	delete(m.remoteIDs, topic)
}

// forgetPartition drops what the lifecycle keeps of partition k, which the
// source topic, re-created with fewer partitions, no longer has (called at
// the start of the session that no longer runs it).
func (m *lifecycle) forgetPartition(k tp) {
	delete(m.carry, k)
}

// recreatedGap reports the gap of p, a partition of a source topic
// re-created with ID id (was old): what it had not replicated of the old
// log, up to its high watermark. p reads the new log from now on (newID).
func (m *lifecycle) recreatedGap(p *partState, id, old kadm.TopicID) *GapError {
	p.newID = id
	gap := &GapError{Flow: m.cfg.flow, Topic: p.topic, Partition: p.partition, From: p.acked + 1, To: max(p.hw, p.acked+1), At: m.now,
		Reason: fmt.Sprintf("the source topic was deleted and re-created (topic ID %s, was %s); replication restarts at the new topic's log start", id, old)}
	m.emit(action{kind: actGap, p: p, gap: gap})
	return gap
}

// remoteChanged handles the remote topic of source topic topic deleted
// on the target and re-created with ID id while the flow runs
// (KAFKA-10332): the target lost what it held, so every partition of the
// topic is replicated again from the source's log start, with a fresh
// resume point and offset-sync writer (no sync names the old remote
// topic's offsets). MM2 leaves such a partition broken; refilling is the
// only way the target holds the data again, and it adds no duplicates:
// the new remote topic is empty. decide refills each partition once its
// in-flight records came back.
func (m *lifecycle) remoteChanged(topic string, id kadm.TopicID) {
	old := m.remoteIDs[topic]
	m.remoteIDs[topic] = id
	var ps []*partState
	for _, p := range m.sortedParts() {
		if p.topic != topic || p.remoteID == id {
			continue // a state that writes to the new topic already (started since)
		}
		p.refill, p.restartAsked = true, true
		m.stop(p)
		if !p.paused {
			p.paused = true
			m.emit(action{kind: actPause, p: p})
		}
		ps = append(ps, p)
	}
	m.emit(action{kind: actRefill, topic: topic, id: id, was: old, parts: ps})
}

// remoteID applies the target's answer to actCheckRemote (evRemoteID):
// the remote topic of source topic topic has ID id (zero with err: not
// found). A new ID refills the topic; a missing topic keeps its failed
// partitions failed until their next retry, with backoff (discovery
// re-creates it); the same ID lets them restart.
func (m *lifecycle) remoteID(topic, remote string, id kadm.TopicID, err error) {
	switch known := m.remoteIDs[topic]; {
	case err != nil || id == (kadm.TopicID{}):
		for _, p := range m.parts {
			if p.topic != topic || !p.checked || p.refill {
				continue
			}
			since, quiet := p.failedAt, p.quiet
			p.err, p.restartAsked, p.checked = nil, false, false
			perr := &PartitionError{Flow: m.cfg.flow, Topic: p.topic, Partition: p.partition,
				Err: fmt.Errorf("remote topic %s not found on the target (deleted? discovery re-creates it): %w", remote, err)}
			switch {
			case quiet && p.unknownTries < unknownQuietTries:
				m.failQuiet(p, perr) // the broker asked may not know a topic just created either
			default:
				m.fail(p, perr, true, quiet) // a quiet failure was not reported yet
				p.retries++
			}
			p.failedAt = since
		}
	case known != (kadm.TopicID{}) && id != known:
		m.remoteChanged(topic, id)
	default:
		m.remoteIDs[topic] = id
	}
	m.redecide = true
}

// newSession starts a new session of the unit (evSession, at m.now): the
// partitions of the last one move to carry (counters, and failures with
// their restart schedule, carry over when they start again).
//
// Exactly once, a failed partition's automatic retry already due when the
// session starts comes its retry delay after that. A retry that fails again
// aborts the transaction it shares with the healthy partitions and ends
// the session; one due by the time the next session started (the unit's
// backoff is longer than the first retry delays) was restarted at once,
// and the healthy partitions of its unit committed nothing, session after
// session (a helper trying to break exactly-once mode, stop 38: a topic
// refused by an ACL stopped the other topic of its slot). Now they
// replicate for at least the retry delay, which doubles, between two
// such aborts. An operator's restart is not delayed.
func (m *lifecycle) newSession() {
	clear(m.limits)
	for k, p := range m.parts {
		p.retired = true
		if m.cfg.eos && p.err != nil && p.autoRetry && !p.restartAsked && !p.nextRetry.After(m.now) {
			// Only a retry already due is pushed: one pushed at every
			// session start could wait forever while sessions restart
			// more often than its delay (a review, stop 38).
			p.nextRetry = m.now.Add(p.retryDelay)
		}
		m.carry[k] = p
	}
	m.parts = map[tp]*partState{}
}

// restartStep is what decide does with one partition.
type restartStep int

const (
	stepNone    restartStep = iota // running: nothing to do
	stepWait                       // failed, not due: an automatic retry wakes it at its time, else a request
	stepDrain                      // due, results still to come: held until the last one comes back
	stepRestart                    // due and drained: replaced by its successor now
)

// partView is what the restart decision reads of a partition.
type partView struct {
	failed    bool // err set (FAILED)
	refill    bool // the remote topic was re-created: restart from the log start
	asked     bool // Mirror.RestartFailed (or a refill) asked for the restart
	auto      bool // the failure's cause can go away: retried at nextRetry
	nextRetry time.Time
	inFlight  int  // records produced whose results did not come back
	txnOpen   bool // exactly once: a record of the open transaction failed, not aborted yet, or acknowledged records of it (a gap stop) are not committed yet
	stopping  bool // its feed's stop is not confirmed yet: fetched records of it may still come
}

// view returns the partition's partView.
func (p *partState) view() partView {
	return partView{failed: p.err != nil, refill: p.refill, asked: p.restartAsked, auto: p.autoRetry, nextRetry: p.nextRetry,
		inFlight: p.inFlight(), txnOpen: p.eos && (p.txnFailed || len(p.pending) > 0), stopping: !p.stopAcked}
}

// decideRestart is the restart rule of a failed partition, a pure
// function of the partition's view and the time: a partition is restarted
// once it is due (an operator asked, or its automatic retry time passed)
// and drained (its feed stopped, every record produced has its result,
// and exactly once the failed transaction was aborted), so that its
// successor resumes after the last acknowledged record with nothing of it
// still in flight. wake is when to look again (-1: only on an event).
func decideRestart(v partView, now time.Time) (step restartStep, wake time.Duration) {
	switch {
	case !v.failed && !v.refill:
		return stepNone, -1
	case !v.asked && !(v.auto && !now.Before(v.nextRetry)):
		if v.auto {
			return stepWait, v.nextRetry.Sub(now)
		}
		return stepWait, -1
	case v.inFlight > 0 || v.txnOpen || v.stopping:
		return stepDrain, -1
	}
	return stepRestart, -1
}

// decide makes the restart decisions (when an event may have changed
// one): it pauses the fetches of failed partitions, holds the partitions
// due for a restart until they drained, asks what a restart needs to know
// first (the remote topic's ID after an unknown topic, its limit after a
// record too large), and restarts the drained ones (actRestart). It sets
// wake to when to decide again (-1: on an event). It reports whether it
// decided (something changed since the last time).
func (m *lifecycle) decide() bool {
	if !m.redecide {
		return false
	}
	m.redecide = false
	m.wake = -1
	soon := func(d time.Duration) {
		if m.wake < 0 || d < m.wake {
			m.wake = max(d, 0)
		}
	}
	check := map[string]string{} // source topic -> remote topic whose ID to ask
	for _, p := range m.sortedParts() {
		if p.err != nil && !p.paused {
			p.paused = true
			m.emit(action{kind: actPause, p: p})
		}
		step, wake := decideRestart(p.view(), m.now)
		switch step {
		case stepWait:
			if wake >= 0 {
				soon(wake)
			}
			continue
		case stepDrain:
			// In flight, or (exactly once) in the open transaction until
			// it aborts: held (a refill of a running partition takes no
			// more records); its last result, evStopped or the
			// transaction's end decides again.
			m.stop(p)
			continue
		case stepNone:
			continue
		}
		tooLarge := errors.Is(p.err, kerr.MessageTooLarge) || errors.Is(p.err, kerr.RecordListTooLarge)
		switch {
		case !p.refill && tooLarge && !p.limitsRead:
			// It restarts with the target's current limit: a changed one
			// reopens the producer first (limits.go), and the next
			// session restarts it.
			p.limitsRead = true
			m.emit(action{kind: actRefreshLimits, p: p, remote: p.remote})
			m.redecide = true
		case !p.refill && unknownTopic(p.err) && !p.checked:
			p.checked = true
			check[p.topic] = p.remote
		default:
			m.restart(p)
		}
	}
	topics := make([]string, 0, len(check))
	for t := range check {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		m.emit(action{kind: actCheckRemote, topic: t, remote: check[t]})
	}
	return true
}

// restart replaces the drained state o by a fresh one that resumes after
// the last acknowledged offset (exactly once: the last committed one), or
// at the source's log start for a refill (actRestart).
func (m *lifecycle) restart(o *partState) {
	from, committed := o.acked, o.committed
	if o.eos {
		from = o.committed
	}
	var gap *GapError
	accept := errors.As(o.err, &gap)
	if o.refill {
		from, committed = -1, -1
	}
	n := newPartState(o.topic, o.remote, o.partition, from, m.topicIDs[o.topic], o.eos, m.now)
	n.committed, n.committedID = committed, o.committedID
	n.remoteID = o.remoteID
	if id := m.remoteIDs[o.topic]; id != (kadm.TopicID{}) {
		n.remoteID = id // a refill writes to the re-created topic
	}
	n.records, n.bytes, n.pm, n.hw, n.logStart = o.records, o.bytes, o.pm, o.hw, o.logStart
	if !o.refill {
		n.ackedID = o.ackedID // it resumes after o's acked offset, of o's log (refilled: none yet)
	}
	n.retries, n.retryDelay = o.retries, o.retryDelay
	n.unknownTries = o.unknownTries
	if !o.restartAsked {
		n.retries++ // an automatic restart
	} else {
		n.retries, n.retryDelay = 0, 0
	}
	if !o.refill {
		// The same target topic: the offset-sync writer goes on where it
		// was (the refill's target topic is a new one: a new writer).
		n.sw = o.sw
		o.sw = syncWriter{}
	}
	off := from + 1
	switch {
	case from >= 0:
	case o.refill:
		off = atStart
	case m.cfg.startLatest:
		off = atEnd
		n.sw.runs.readFromFirstAck()
	default:
		off = atStart
	}
	switch {
	case o.recreated:
		// The source topic was re-created while the partition was
		// stopped: its offsets name the old topic, so the new one is
		// replicated from its log start.
		off = atStart
		n.reincarnate, n.newID = true, o.newID
		n.ackedOld, n.newLog = true, true
	case o.ackedOld && !o.refill:
		// It failed after the source topic was re-created, before a
		// record of the new log was acknowledged (committed, exactly
		// once): its offset is the old log's; the new one is
		// replicated from its start (found by the property test). Its
		// sync writer starts the new log's offset-run session at the
		// first ack (the old log's records it still expected failed).
		off = atStart
		n.ackedOld, n.oldLeft, n.newLog = true, 0, true
		if o.newID != (kadm.TopicID{}) {
			n.reincarnate, n.newID = true, o.newID
		}
	}
	o.retired = true
	m.parts[tp{o.topic, o.partition}] = n
	m.added = true
	m.emit(action{kind: actRestart, p: n, old: o, off: off, purge: o.refill || unknownTopic(o.err), gap: gapIf(accept, gap)})
}

// acksAfterStop reports whether p, stopped (err set), still takes the acks
// of its records in flight: when it stopped at a gap in its log (GapStop:
// every record in flight is before the gap) and none of them failed since
// (ackFrozen). Not after a re-creation (recreated): those records are of
// the old log, whose offsets the resume point must not name as the new
// log's (the restart starts at the new log's start anyway).
func (p *partState) acksAfterStop() bool {
	var gap *GapError
	return !p.ackFrozen && !p.recreated && errors.As(p.err, &gap)
}

func gapIf(ok bool, g *GapError) *GapError {
	if ok {
		return g
	}
	return nil
}

// txnPrepare returns the resume points the open transaction commits with
// its records (exactly once), or the error that aborts it: a record of it
// failed with an error of the whole transaction, a transient one, or its
// partition's own error.
func (m *lifecycle) txnPrepare() ([]resumeUp, error) {
	for _, p := range m.parts {
		if p.txnErr != nil {
			// Fenced, or the coordinator ended the transaction: first,
			// whichever partition holds it (fencing tells the unit it
			// lost the slot; a partition's own error must not hide it).
			return nil, p.txnErr
		}
	}
	var ups []resumeUp
	for _, p := range m.parts {
		switch {
		case p.transientErr != nil:
			return nil, p.transientErr // the target did not take a record in time
		case p.err != nil && p.txnFailed:
			// A record of this transaction was rejected: the whole
			// transaction aborts; the partition stays stopped.
			return nil, p.err
		case p.err != nil && len(p.pending) == 0, p.stored(p.resumeAt()), p.resumeAt() < 0:
			// (A partition stopped at a gap commits what it acknowledged
			// in the transaction before it stopped.)
			continue
		}
		ups = append(ups, resumeUp{p, p.resumeAt(), p.resumeID()})
	}
	return ups, nil
}

// txnCommitted applies a committed transaction (evTxnCommitted): its
// resume points are stored, and the acknowledged records of its
// partitions are fed to the sync writers (with promote, the newest
// positions too).
func (m *lifecycle) txnCommitted(ups []resumeUp, promote bool) {
	for _, up := range ups {
		p := up.p
		p.committed, p.committedID = up.off, up.srcID
		if p.newLog && p.ackedOld {
			p.ackedOld, p.ackedID = false, p.logID() // the committed offset is the new log's
		}
		if len(p.pending) > 0 {
			// Records of the partition are committed: it replicates, and
			// its next failure starts the backoff anew.
			p.retries, p.retryDelay, p.unknownTries = 0, 0, 0
		}
		if m.cfg.syncs && len(p.pending) > 0 {
			for _, s := range p.pending {
				p.sw.ack(s[0], s[1], m.cfg.lagMax)
			}
			// The transaction's marker takes the next target offset:
			// not a hole in the copy.
			p.sw.marker()
		}
		p.pending = p.pending[:0]
		if promote {
			p.sw.promote(p.idleUp(), p.committed)
		}
	}
	for _, p := range m.parts {
		p.txnFailed, p.txnErr = false, nil
	}
	if len(ups) > 0 {
		m.syncsDue = true
	}
	m.redecide = true
}

// txnAborted applies an aborted transaction (evTxnAborted): its records
// are invisible; a partition failed in it may restart after its last
// committed resume point.
func (m *lifecycle) txnAborted() {
	for _, p := range m.parts {
		p.txnFailed, p.txnErr = false, nil
		if len(p.pending) > 0 {
			p.pending, p.dropped = p.pending[:0], true
		}
	}
	m.redecide = true
}

// flushable returns the resume points to store: every partition that
// advanced (not one waiting for its session's restart after a transient
// failure).
func (m *lifecycle) flushable() []resumeUp {
	var ups []resumeUp
	for _, p := range m.parts {
		// Store whatever the last replicated record is (or the polled
		// position past records not copied: resumeAt), also when it went
		// back (the source topic was re-created): as Connect does, with no
		// monotonic check, so a restart resumes on the new topic.
		off := p.resumeAt()
		if p.transientErr != nil || off < 0 || p.stored(off) {
			continue
		}
		ups = append(ups, resumeUp{p, off, p.resumeID()})
	}
	return ups
}

// syncOut is what sendSyncs produces for one partition.
type syncOut struct {
	p    *partState
	due  [][2]int64
	runs []checkpoint.OffsetRun
}

// resendSyncs makes every partition's newest position and current offset
// run due again (the offset-syncs or offset-runs topic was created again,
// empty: synctopics.go).
func (m *lifecycle) resendSyncs() {
	for _, p := range m.parts {
		p.sw.resend()
	}
}

// syncs returns the due offset syncs and runs of every partition (with
// promote, MM2's commit(): the newest position too, and every run that
// changed).
func (m *lifecycle) syncs(promote bool) []syncOut {
	m.syncsDue = false
	var out []syncOut
	for _, p := range m.parts {
		if promote {
			p.sw.promote(p.idleUp(), p.committed)
		}
		runs := p.sw.takeRuns(promote)
		due := p.sw.take()
		if len(runs)+len(due) > 0 {
			out = append(out, syncOut{p, due, runs})
		}
	}
	return out
}

// unpolled reports whether k has polled and replicated nothing (an empty
// partition, or one whose records were all deleted before its first copy;
// kgo returns no empty fetches, so only a listing tells its log start).
func (m *lifecycle) unpolled(k tp) bool {
	p := m.parts[k]
	return p != nil && p.polledTo < 0 && p.acked < 0 && p.head == len(p.queue)
}

// sawLogStart records the source log start listed for k (never lowered:
// a log start only moves up, and a stale one only over-reports the lag).
// It reports whether the log start moved (the partition's status may
// have changed).
func (m *lifecycle) sawLogStart(k tp, start int64) bool {
	if p := m.parts[k]; p != nil && start > p.logStart {
		p.logStart = start
		return true
	}
	return false
}

// openTxn records the high watermark and last stable offset found for k
// (checkOpenTransactions): a partition held at the same last stable
// offset below the high watermark, with replication caught up to it, has
// an open source transaction in its way.
//
// It reports whether the partition's status changed: its high watermark
// moved, or it became held at a new last stable offset, or no longer
// held; an idle unit publishes no new status otherwise (issue 22: the
// snapshot of every partition after each check was a tenth of an idle
// member's CPU). What changes with time alone (the open transaction shown
// once held for openTxnAfter, a fetch error no longer shown) is aging's.
func (m *lifecycle) openTxn(k tp, hw, lso int64) bool {
	p := m.parts[k]
	if p == nil {
		return false
	}
	changed := false
	if hw > p.hw {
		p.hw, changed = hw, true
	}
	pos := max(p.polledTo, p.acked+1)
	switch {
	case lso >= hw || pos < lso:
		// Nothing open, or replication has not reached it yet.
		changed = changed || !p.lsoSince.IsZero()
		p.lsoHeld, p.lsoSince = -1, time.Time{}
	case lso != p.lsoHeld:
		p.lsoHeld, p.lsoSince = lso, m.now
		changed = true
	}
	return changed
}

// aging reports whether a partition's status changed with time alone
// between the last snapshot and now: a fetch error no longer shown
// (fetchErrStale), or an open transaction now reported (openTxnAfter).
// The unit publishes a new snapshot every second only then: at thousands
// of idle partitions one every second was the largest part of an idle
// member's CPU (issue 22). It compares with the last snapshot's time, not
// a window after the change: a check that comes late (the control
// goroutine busy for more than a second) still sees the change.
func (m *lifecycle) aging(now time.Time) bool {
	at := m.snapAt
	for _, p := range m.parts {
		if p.fetchErr != "" && (at.Sub(p.fetchErrAt) < fetchErrStale) != (now.Sub(p.fetchErrAt) < fetchErrStale) {
			return true
		}
		if !p.lsoSince.IsZero() && (at.Sub(p.lsoSince) >= m.cfg.openTxnAfter) != (now.Sub(p.lsoSince) >= m.cfg.openTxnAfter) {
			return true
		}
	}
	return false
}

// snapshot appends the status of every partition at the lifecycle's
// time.
func (m *lifecycle) snapshot(out []PartitionStatus) []PartitionStatus {
	m.snapAt = m.now
	out = slices.Grow(out, len(m.parts)) // one allocation of the exact size: a snapshot is kept until the next one
	for _, p := range m.sortedParts() {
		out = append(out, p.status(m.now, m.cfg.openTxnAfter))
	}
	return out
}

// sortedParts returns the partitions in topic and partition order (the
// actions of one event come out in a stable order).
func (m *lifecycle) sortedParts() []*partState {
	ps := make([]*partState, 0, len(m.parts))
	for _, p := range m.parts {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].topic != ps[j].topic {
			return ps[i].topic < ps[j].topic
		}
		return ps[i].partition < ps[j].partition
	})
	return ps
}

// unflushed reports whether a running partition has stored no resume point
// since its state was created (this session or its restart): the session's
// first flushes repeat until none has (firstFlushAfter).
func (m *lifecycle) unflushed() bool {
	for _, p := range m.parts {
		if !p.flushed && p.err == nil && !p.retired {
			return true
		}
	}
	return false
}
