package mirror

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// inbox carries events from the unit's other goroutines (the poll or
// shallow loop, the producer's promise goroutine, RestartFailed callers)
// to its control goroutine, in the order they were posted; one per unit,
// closed when the unit stops. Posting never blocks: a mutex and an append, and a wake-up
// only when the inbox was empty (acknowledgements arrive once per record
// from the promise goroutine; the control goroutine takes them in
// batches).
type inbox struct {
	mu sync.Mutex
	// evs are the events in the order they were posted, except the
	// results (evResult, one per record: the hot event), which are in
	// res, compact; each event's res field is the number of results
	// posted before it, which restores the order.
	evs    []event
	res    results
	arena  [][]inflight // the records of evFetched events, in chunks of arenaChunk
	closed bool
	wake   chan struct{}
	done   chan struct{} // closed with the inbox: the unit stopped

	// The slices of the last drain, reused: written by the control
	// goroutine only; freeRes (chunks of results) under mu.
	spareEvs  []event
	freeRes   [][]result
	freeArena [][]inflight
}

// arenaChunk is the size of a chunk of the inbox's arena: a poll's
// batch of a partition (at most 10000 records) fits in one.
const arenaChunk = 1 << 14

// result is an evResult in the inbox.
type result struct {
	f   *feed
	rec *kgo.Record
	err error
}

// results are results in chunks of resChunk: they grow without copying,
// and the chunks of a drain are reused (inbox.freeRes).
type results struct {
	chunks [][]result
	n      int
}

const resChunk = 1024

// add appends r, taking a new chunk from free when the last one is full.
func (rs *results) add(r result, free *[][]result) {
	if k := len(rs.chunks); k == 0 || len(rs.chunks[k-1]) == resChunk {
		var c []result
		if f := *free; len(f) > 0 {
			c, *free = f[len(f)-1], f[:len(f)-1]
		} else {
			c = make([]result, 0, resChunk)
		}
		rs.chunks = append(rs.chunks, c)
	}
	last := &rs.chunks[len(rs.chunks)-1]
	*last = append(*last, r)
	rs.n++
}

// resCursor applies results in order.
type resCursor struct {
	rs       *results
	ci, i, n int
}

// applyTo applies the results up to the n-th (excluded) to m.
func (c *resCursor) applyTo(n int, m *lifecycle) {
	for c.n < n {
		r := &c.rs.chunks[c.ci][c.i]
		m.result(r.f, r.rec, r.err)
		c.n++
		if c.i++; c.i == len(c.rs.chunks[c.ci]) {
			c.ci, c.i = c.ci+1, 0
		}
	}
}

func newInbox() *inbox {
	return &inbox{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (b *inbox) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// post posts ev; false when the unit stopped.
func (b *inbox) post(ev event) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	ev.res = b.res.n
	b.evs = append(b.evs, ev)
	first := len(b.evs) == 1 && b.res.n == 0
	b.mu.Unlock()
	if first {
		b.signal()
	}
	return true
}

// postFetched posts the records of f about to be produced (in produce
// order), the position polled after them and the source's high
// watermark (-1 unknown), and reports whether they may be produced:
// false once f is stopped (or its produce gate closed), checked under the
// inbox's lock, so that the control goroutine's evStopped, posted after
// it stopped f, follows every record of f it let through.
func (b *inbox) postFetched(f *feed, recs []inflight, polledTo, hw int64) bool {
	b.mu.Lock()
	if b.closed || !f.live() {
		b.mu.Unlock()
		return false
	}
	ci, lo, hi := b.addRecs(recs)
	b.evs = append(b.evs, event{kind: evFetched, f: f, a: polledTo, b: hw, c: int64(ci), d: lo<<32 | hi, res: b.res.n})
	first := len(b.evs) == 1 && b.res.n == 0
	b.mu.Unlock()
	if first {
		b.signal()
	}
	return true
}

// addRecs copies recs into the arena, all in one chunk (a new one when
// the last has no room), and returns the chunk (-1 for no records) and
// their range in it. b.mu is held.
func (b *inbox) addRecs(recs []inflight) (ci int, lo, hi int64) {
	if len(recs) == 0 {
		return -1, 0, 0
	}
	k := len(b.arena)
	if k == 0 || len(b.arena[k-1])+len(recs) > cap(b.arena[k-1]) {
		var c []inflight
		switch {
		case len(recs) > arenaChunk:
			c = make([]inflight, 0, len(recs)) // not expected (a poll returns at most 10000 records)
		case len(b.freeArena) > 0:
			c = b.freeArena[len(b.freeArena)-1]
			b.freeArena = b.freeArena[:len(b.freeArena)-1]
		default:
			c = make([]inflight, 0, arenaChunk)
		}
		b.arena = append(b.arena, c)
		k++
	}
	c := &b.arena[k-1]
	lo = int64(len(*c))
	*c = append(*c, recs...)
	return k - 1, lo, int64(len(*c))
}

// postResult posts the produce result of record r of f (the producer's
// promise).
func (b *inbox) postResult(f *feed, r *kgo.Record, err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.res.add(result{f, r, err}, &b.freeRes)
	first := b.res.n == 1 && len(b.evs) == 0
	b.mu.Unlock()
	if first {
		b.signal()
	}
}

// close ends the inbox with its unit: posts are refused, and callers
// waiting for an answer are released.
func (b *inbox) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.done)
	}
	b.evs, b.res, b.arena, b.freeRes, b.freeArena = nil, results{}, nil, nil, nil
	b.mu.Unlock()
}

// take returns the events and results posted since the last take and
// the arena their evFetched records are in (control goroutine; giveBack
// returns them).
func (b *inbox) take() ([]event, results, [][]inflight) {
	b.mu.Lock()
	evs, res, arena := b.evs, b.res, b.arena
	b.evs, b.res, b.arena = b.spareEvs[:0], results{}, nil
	b.mu.Unlock()
	return evs, res, arena
}

// giveBack keeps the slices of a take for reuse, cleared so that they
// keep no record alive.
func (b *inbox) giveBack(evs []event, res results, arena [][]inflight) {
	clear(evs)
	// A burst's memory goes back (the control goroutine was busy with a
	// request for long).
	if cap(evs) > maxSpare {
		evs = nil
	}
	b.spareEvs = evs[:0]
	if len(res.chunks)+len(arena) == 0 {
		return
	}
	for _, c := range res.chunks {
		clear(c)
	}
	for _, c := range arena {
		clear(c)
	}
	b.mu.Lock()
	for _, c := range res.chunks {
		if len(b.freeRes) >= maxSpare/resChunk {
			break
		}
		b.freeRes = append(b.freeRes, c[:0])
	}
	for _, c := range arena {
		if len(b.freeArena) < maxSpare/arenaChunk && cap(c) == arenaChunk {
			b.freeArena = append(b.freeArena, c[:0])
		}
	}
	b.mu.Unlock()
}

// maxSpare is the capacity of an inbox's slices kept for reuse.
const maxSpare = 1 << 18

// call posts ev (evRestart) and waits for the control goroutine's
// answer; 0 when the unit stopped first.
func (b *inbox) call(ev event, reply chan int) int {
	if !b.post(ev) {
		return 0
	}
	select {
	case n := <-reply:
		return n
	case <-b.done:
		return 0
	}
}

// The control goroutine's side: drain applies the inbox's events to the
// lifecycle and carries out the actions (execute); it is the only writer
// of partition state.

// drain applies the events posted so far and carries out their actions.
func (u *unit) drain(ctx context.Context) {
	b := u.box
	evs, res, arena := b.take()
	m := u.life
	m.apply(event{kind: evTick, a: time.Now().UnixNano()}, nil)
	rc := resCursor{rs: &res}
	for _, ev := range evs {
		rc.applyTo(ev.res, m)
		switch ev.kind {
		case evRestart:
			n := m.requestRestart(ev.x.topic, int32(ev.a))
			ev.x.reply <- n
		case evTxnPrepare:
			ups, err := m.txnPrepare()
			ev.x.verdict <- txnVerdict{ups, err}
		default:
			m.apply(ev, arena)
		}
	}
	rc.applyTo(res.n, m)
	if len(evs)+res.n > 0 {
		u.dirty = true
	}
	b.giveBack(evs, res, arena)
	u.execute(ctx)
}

// drainIdle applies the events posted while the unit runs no session
// (between sessions, in a backoff): RestartFailed is answered, a late
// result of the last session still counts; actions wait for the next
// session (its start carries the partitions over: evSession).
func (u *unit) drainIdle() {
	evs, res, arena := u.box.take()
	m := u.life
	m.apply(event{kind: evTick, a: time.Now().UnixNano()}, nil)
	rc := resCursor{rs: &res}
	for _, ev := range evs {
		rc.applyTo(ev.res, m)
		switch ev.kind {
		case evRestart:
			ev.x.reply <- m.requestRestart(ev.x.topic, int32(ev.a))
		case evTxnPrepare:
			ev.x.verdict <- txnVerdict{err: errSessionEnded}
		default:
			m.apply(ev, arena)
		}
	}
	rc.applyTo(res.n, m)
	n := len(evs) + res.n
	u.box.giveBack(evs, res, arena)
	m.take()
	u.pubTimer = nil
	if n > 0 || u.dirty {
		u.dirty = true
		u.publish()
	}
}

// execute carries out the lifecycle's actions, then its restart
// decisions, until none are left; it sends the offset syncs that became
// due, counts the acknowledged records and publishes the status.
func (u *unit) execute(ctx context.Context) {
	m := u.life
	for range 8 { // decisions that need answers (IDs, limits) take a round each
		if m.decide() {
			u.retryAt = time.Time{}
			if m.wake >= 0 {
				u.retryAt = time.Now().Add(m.wake)
			}
		}
		acts := m.take()
		if len(acts) == 0 {
			break
		}
		u.dirty = true
		u.carryOut(ctx, acts)
		if u.rebuild {
			break
		}
	}
	if m.syncsDue {
		u.sendSyncs(false)
	}
	u.publishSoon()
}

// carryOut carries out acts (see actKind).
func (u *unit) carryOut(ctx context.Context, acts []action) {
	m := u.life
	var (
		feeds     map[tp]*feed // copy on write of u.feeds
		add       = map[string]map[int32]kgo.Offset{}
		remove    = map[string][]int32{}
		set       = map[string]map[int32]kgo.EpochOffset{}
		resume    = map[string][]int32{}
		pause     = map[string][]int32{}
		purge     = map[string]bool{}
		tooLarge  = map[string]bool{}
		refused   = map[string]bool{} // of tooLarge: a batch refused within the limit (batchRefused)
		stops     []*feed
		checks    []action
		recreated []string
	)
	setFeed := func(p *partState, next int64) *feed {
		if feeds == nil {
			old := *u.feeds.Load()
			feeds = make(map[tp]*feed, len(old)+1)
			for k, f := range old {
				feeds[k] = f
			}
		}
		f := u.newFeed(p, next)
		feeds[f.k] = f
		return f
	}
	var kicks []kick
	var fromStart []*partState // added to a running session at the log start
	consume := func(p *partState, off int64) {
		if add[p.topic] == nil {
			add[p.topic] = map[int32]kgo.Offset{}
		}
		add[p.topic][p.partition] = kgoOffset(off)
		switch {
		case !u.kickAdds:
			// The session's first partitions: kicked only when a poll
			// finds nothing (one whose offset kgo listed apart from the
			// others waits for their idle fetch otherwise).
			if off >= 0 || off == atStart {
				kicks = append(kicks, kick{f: p.f, off: off, idle: true})
			}
		case off >= 0:
			kicks = append(kicks, kick{f: p.f, off: off})
		case off == atStart && u.sh == nil:
			fromStart = append(fromStart, p)
		}
	}
	for _, a := range acts {
		switch a.kind {
		case actStart:
			if a.p.pm == nil {
				a.p.pm = u.env.metrics.forPartition(u.env.labels, a.p.remote, a.p.partition)
			}
			next := int64(-1)
			if a.off >= 0 {
				next = a.off
			}
			f := setFeed(a.p, next)
			if a.off == atNone {
				f.stopped.Store(true) // stopped in an earlier session: not consumed until it restarts
				continue
			}
			consume(a.p, a.off)
		case actStop:
			stops = append(stops, a.p.f)
		case actPause:
			pause[a.p.topic] = append(pause[a.p.topic], a.p.partition)
		case actFailed:
			u.partitionFailed(a.p, a.err)
		case actEndSession:
			if u.endSession == nil {
				u.endSession = a.err
			}
		case actCheckRemote:
			checks = append(checks, a)
		case actRefreshLimits:
			tooLarge[a.remote] = true
			if batchRefused(a.p.err) {
				refused[a.remote] = true
			}
		case actRestart:
			next := int64(-1)
			switch {
			case a.p.reincarnate && (a.gap == nil || a.old.recreated):
				// The re-created source topic's log starts at 0: records
				// deleted before they were fetched are a gap. A gap the
				// operator accepted is the new log's only when the state
				// read the new log (not recreated: then it was the old
				// log's, and the new log's start is checked).
				next = 0
			case a.off >= 0 && a.gap == nil:
				next = a.off // an accepted gap resumes without a gap check
			}
			f := setFeed(a.p, next)
			if a.purge {
				purge[a.p.remote] = true
			}
			if restartInPlace(u.sh != nil, a.off, a.old.f) {
				// The consumer's cursor of the partition moves to the
				// restart offset: kgo ends the fetch in flight and the
				// next one names it at once, where a removed and added
				// partition would wait for the end of an idle unit's
				// long poll (fetchMaxWait).
				if set[a.p.topic] == nil {
					set[a.p.topic] = map[int32]kgo.EpochOffset{}
				}
				set[a.p.topic][a.p.partition] = kgo.EpochOffset{Epoch: -1, Offset: a.off}
				f.cursor.Store(true)
			} else {
				remove[a.p.topic] = append(remove[a.p.topic], a.p.partition)
				consume(a.p, a.off)
			}
			resume[a.p.topic] = append(resume[a.p.topic], a.p.partition)
			u.logRestart(a)
		case actRefill:
			u.log.Warn("the remote topic was deleted and re-created on the target: refilling it from the source's log start",
				"topic", a.topic, "remote_topic_id", a.id, "was", a.was, "partitions", len(a.parts))
		case actGap:
			u.reportGap(a.gap)
		case actRecreate:
			recreated = append(recreated, a.topic)
			for _, p := range a.parts {
				setFeed(p, 0) // the new topic's log starts at 0: no gap check against the old offsets
				if add[p.topic] == nil {
					add[p.topic] = map[int32]kgo.Offset{}
				}
				// Not listed exactly (startsExact): kgo still maps the name
				// to the old topic until the purge below.
				add[p.topic][p.partition] = kgoOffset(atStart)
			}
		}
	}
	if len(pause) > 0 {
		// Here, before any restart of it: a pause is by name, and
		// resuming the restarted partition undoes it.
		u.cons.PauseFetchPartitions(pause)
	}
	for _, f := range stops {
		f.stopped.Store(true)
		// Posted after the stop: it follows every record of f the inbox
		// let through (postFetched checks under the inbox's lock).
		u.box.post(event{kind: evStopped, f: f})
	}
	if feeds != nil {
		u.feeds.Store(&feeds)
	}
	for remote := range purge {
		// kgo's producer never adopts a re-created topic's new ID (it
		// fails it with UNKNOWN_TOPIC_ID) until the topic is purged from
		// it; it learns the new one at the next produce.
		u.prod.PurgeTopicsFromProducing(remote)
	}
	for _, topic := range recreated {
		// kgo keeps the old topic ID (and fails fetches with
		// UNKNOWN_TOPIC_ID) until the topic is purged from the
		// consumer: the whole topic is purged and its partitions added
		// back.
		u.purgeTopic(topic)
	}
	if len(remove) > 0 && u.sh == nil {
		// Drops what was fetched and not polled yet; the paused state is
		// per name and outlives the removal.
		u.cons.RemoveConsumePartitions(remove)
	}
	if len(fromStart) > 0 {
		kicks = append(kicks, u.startsExact(ctx, fromStart, add)...)
	}
	if len(add) > 0 {
		u.consume(add)
		if u.sh == nil {
			// The session's first partitions are in its first fetch
			// unless kgo resolves their offsets apart; later ones join a
			// running consumer (pollKicks).
			u.kicks.add(time.Now(), kicks)
			u.kickAdds = true
		}
	}
	if len(set) > 0 {
		// Drops what was fetched and not polled yet of every partition
		// (kgo fetches it again) and ends the fetches in flight.
		u.cons.SetOffsets(set)
	}
	if len(resume) > 0 {
		u.cons.ResumeFetchPartitions(resume)
	}
	if len(tooLarge) > 0 {
		u.refreshLimits(ctx, tooLarge, refused)
	}
	for _, c := range checks {
		id, err := u.remoteTopicID(ctx, c.remote)
		m.apply(event{kind: evRemoteID, err: err, x: &evExtra{topic: c.topic, remote: c.remote, id: id}}, nil)
	}
}

// startsExact lists the log start of ps, partitions added to a running
// session at the log start (add holds them at atStart), and adds each one
// listed at that exact offset instead, with its kick: kgo resolves a
// partition added at the log start itself, and names it only in the
// fetch after the one in flight to its leader, which an idle unit's
// fetches hold up to fetchMaxWait (pollKicks). The same offset kgo would
// list (the log start only moves up; a start deleted before the fetch
// resets to the new start, ConsumeResetOffset AtStart); one ListOffsets
// per leader, bounded by startsExactTimeout: a partition not listed is
// added at the log start with an idle kick, which the poll loop lists
// when a poll finds nothing (pollKicks). The listing holds the
// control goroutine (status, restarts, exactly-once commits wait), hence
// a bound shorter than the long poll it saves.
//
// A start deleted right after it was listed costs the kicks: each moves
// kgo's cursor back to it, kgo's fetch is out of range and it lists the
// start again, and once the kicks ran out the partition waits for the
// fetch in flight as before (nothing lost or doubled; kgo does not say
// where it reset to, so a kick cannot follow it).
// startsExactTimeout bounds startsExact's listing.
const startsExactTimeout = 2 * time.Second

func (u *unit) startsExact(ctx context.Context, ps []*partState, add map[string]map[int32]kgo.Offset) []kick {
	keys := make([]tp, len(ps))
	for i, p := range ps {
		keys[i] = tp{p.topic, p.partition}
	}
	starts := u.listStarts(ctx, keys) // none listed: each is kicked as unlisted
	var kicks []kick
	for _, p := range ps {
		if off, ok := starts[tp{p.topic, p.partition}]; ok && off >= 0 {
			add[p.topic][p.partition] = kgo.NewOffset().At(off)
			kicks = append(kicks, kick{f: p.f, off: off})
		} else {
			kicks = append(kicks, kick{f: p.f, off: atStart, idle: true})
		}
	}
	return kicks
}

// listStarts lists the log starts of keys on the unit's consumer: one
// ListOffsets per leader, bounded by startsExactTimeout (the control
// goroutine's startsExact and the poll loop's kicks wait for it). A
// partition not listed is missing from the result.
func (u *unit) listStarts(ctx context.Context, keys []tp) map[tp]int64 {
	byTopic := map[string][]int32{}
	for _, k := range keys {
		byTopic[k.topic] = append(byTopic[k.topic], k.partition)
	}
	ctx, cancel := context.WithTimeout(ctx, min(u.env.cfg.AdminTimeout, startsExactTimeout))
	defer cancel()
	starts, _ := listOffsets(ctx, u.cons, byTopic, 0, -2)
	return starts
}

// restartInPlace reports whether a restart at offset off of a partition
// whose previous feed was old moves the consumer's cursor (kgo's
// SetOffsets) instead of removing the partition and adding it back. Only
// on the normal path (not shallow), at an exact offset, and when old's
// records were polled from the unit's consumer (old.cursor): kgo's
// SetOffsets ignores a partition it holds no cursor of (not assigned yet,
// or not consumed: a failed partition carried over from an earlier
// session), which would never resume.
func restartInPlace(shallow bool, off int64, old *feed) bool {
	return !shallow && off >= 0 && old != nil && old.cursor.Load()
}

// kgoOffset is the consumer offset of a lifecycle start offset.
func kgoOffset(off int64) kgo.Offset {
	switch off {
	case atEnd:
		return kgo.NewOffset().AtEnd()
	case atStart:
		return kgo.NewOffset().AtStart()
	}
	return kgo.NewOffset().At(off)
}

// newFeed returns the feed of p starting with next expected offset next
// (-1: no gap check until the first record), and makes it p's.
func (u *unit) newFeed(p *partState, next int64) *feed {
	f := &feed{k: tp{p.topic, p.partition}, remote: p.remote, partition: p.partition, remoteID: p.remoteID, srcID: p.logID(),
		gate: newProduceGate(), next: next, pm: p.pm, p: p}
	b := u.box
	f.ack = func(r *kgo.Record, err error) { b.postResult(f, r, err) }
	if h := u.env.hooks; h != nil && h.ack != nil {
		f.ack = func(r *kgo.Record, err error) {
			h.ack(r, err)
			b.postResult(f, r, err)
		}
	}
	p.f = f
	return f
}

// logRestart logs a restart (actRestart).
func (u *unit) logRestart(a action) {
	o, n := a.old, a.p
	if o.refill {
		u.log.Warn("partition refilled from the source's log start: the remote topic was deleted and re-created on the target",
			"topic", o.topic, "remote", o.remote, "partition", o.partition)
		return
	}
	cause := "restart requested"
	if !o.restartAsked {
		cause = "automatic retry"
	}
	from := o.acked
	if o.eos {
		from = o.committed
	}
	if o.quiet {
		// Not reported as failed (failQuiet): a remote topic some target
		// broker did not know yet, most often just created.
		u.log.Debug("partition restarted: the target did not know its remote topic yet", "topic", o.topic, "partition", o.partition,
			"remote", o.remote, "resume_after", from, "quiet_retries", n.unknownTries, "err", o.err)
		return
	}
	u.log.Warn("failed partition restarted", "topic", o.topic, "partition", o.partition, "cause", cause,
		"resume_after", from, "retries", n.retries, "err", o.err)
}

// remoteTopicID asks the target for the ID of remote topic remote (zero
// and an error: not found).
func (u *unit) remoteTopicID(ctx context.Context, remote string) (kadm.TopicID, error) {
	ctx, cancel := context.WithTimeout(ctx, min(u.env.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	listed, err := kadm.NewClient(u.prod).ListTopics(ctx, remote)
	td, ok := listed[remote]
	switch {
	case err != nil:
		return kadm.TopicID{}, err
	case !ok:
		return kadm.TopicID{}, errors.New("not listed")
	case td.Err != nil:
		return kadm.TopicID{}, td.Err
	}
	return td.ID, nil
}

// Status: the control goroutine publishes the partitions' status after a
// batch of events, at most every publishEvery (and every second, for the
// parts of it that age: a fetch error shown for 30 s, an open
// transaction); Status reads the last one, without I/O or a lock the
// hot path takes.
const publishEvery = 50 * time.Millisecond

// publishGap is how long after the last publication the next may come
// while records move: publishEvery for up to 250 partitions, longer in
// proportion above that, at most a second. A publication is a new status
// per partition (208 bytes each): at 3 000 partitions a unit every 50 ms
// allocated 12 MB a second while replicating, much of which a concurrent
// collection counts as live (issue 22: 16 MB of the peak live heap at
// 6 000 partitions); scaled, it is about 1 MB a second whatever the count.
func publishGap(parts int) time.Duration {
	return min(max(publishEvery*time.Duration(parts)/250, publishEvery), time.Second)
}

// publishSoon publishes the status now if the last one is older than
// publishGap, else arms the timer that will.
func (u *unit) publishSoon() {
	if !u.dirty {
		return
	}
	gap := publishGap(len(u.life.parts))
	if d := time.Since(u.published); d >= gap {
		u.publish()
	} else if u.pubTimer == nil {
		u.pubTimer = time.After(gap - d)
	}
}

// publish publishes the partitions' status (control goroutine).
func (u *unit) publish() {
	u.dirty = false
	u.published = time.Now()
	u.life.apply(event{kind: evTick, a: u.published.UnixNano()}, nil)
	st := u.life.snapshot(nil)
	if h := u.env.hooks; h != nil && h.snapshot != nil {
		h.snapshot()
	}
	if old := u.status.Load(); old != nil && slices.Equal(*old, st) {
		return // unchanged (an idle unit's periodic flush): the flow's publish loop has nothing new to gather
	}
	u.status.Store(&st)
	if c := u.env.statusSeq; c != nil {
		c.Add(1)
	}
}

// txnVerdict is the answer to evTxnPrepare.
type txnVerdict struct {
	ups []resumeUp
	err error
}

var errSessionEnded = errors.New("the unit's session ended")
