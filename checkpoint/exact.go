package checkpoint

import (
	"math"
	"sort"
)

// Reasons a translation is missing or not exact, reported in
// [Translation.Reason], [PartitionStatus.Reason] and [GroupStatus.Reason].
const (
	// ReasonNewIncarnation: the source topic was deleted and re-created
	// (new topic ID) and no record of the new topic has been replicated
	// yet; the group's offsets, which belong to the new topic, are not
	// translated with the old topic's offset syncs.
	ReasonNewIncarnation = "waiting for the first offset sync of the re-created source topic"
	// ReasonBeyondReplicated: the group's offset is past what the
	// replicator had copied and recorded at its last offset flush; the
	// translation is the target position the next copied record takes.
	ReasonBeyondReplicated = "group offset beyond what was replicated"
	// ReasonNotExact: the translation is safe (never past replicated data)
	// but not provably exact: only MM2 offset syncs are known for the
	// partition (no kmirror offset runs), or the runs have a hole there
	// (a crash, a compacted offset-runs topic).
	ReasonNotExact = "translation not provably exact"
)

// DefaultRunsPerPartition is the number of offset runs a [RunStore] keeps
// per source partition by default ([WithRunsPerPartition]): 1024 runs of
// 40 bytes, allocated as runs arrive. A replication session has one run
// per upstream gap (transaction marker, compaction hole), so this covers
// the last 1024 transactions of a transactional topic, and any number of
// records of a topic without gaps. The oldest runs are dropped first, but
// never the newest run of a session; group offsets in a dropped part are
// translated from the offset syncs (safe, not exact).
const DefaultRunsPerPartition = 1024

// maxSessions and maxIncarnations bound the sessions kept per source
// topic incarnation and the incarnations kept per partition; the oldest
// (lowest target offsets) are dropped first.
const (
	maxSessions     = 256
	maxIncarnations = 4
)

// Translation is the answer of [Translator.Translate] for one group offset.
type Translation struct {
	// Offset is the target offset to resume at; valid when OK.
	Offset int64
	// OK is false when there is no answer (see Reason).
	OK bool
	// Exact reports that Offset is the exact translation (see the package
	// documentation): a consumer starting there re-reads nothing the
	// group had consumed on the source and skips nothing. Exact implies
	// that the group offset is within what was replicated.
	Exact bool
	// Reason says why there is no answer or why it is not exact: one of
	// the Reason* constants; empty when Exact.
	Reason string
	// Kind is the record kind the answer came from when OK: [KindRun]
	// (offset runs) or [KindSync] (offset syncs alone, MM2's rule).
	Kind string
	// Reread bounds, when OK, the records at target offsets from Offset on
	// that the group consumed on the source before offset g (a consumer
	// resuming at Offset reads at most Reread records again): 0 when
	// Exact, -1 when no bound is known. With offset syncs it is the
	// distance from the sync used to g (MM2's re-read); with offset runs,
	// the distance from Offset to the first target offset known to hold a
	// record the group had not consumed.
	Reread int64
}

// RunStore keeps the offset runs ([OffsetRun]) read from kmirror's
// offset-runs topic, per source topic-partition, source-topic incarnation
// and replication session. With an [OffsetSyncStore] it gives the exact
// translations of [Translator]. It is pure and NOT safe for concurrent
// use; the zero value is not usable, use [NewRunStore].
type RunStore struct {
	parts      map[tpKey]*runPart
	limit      int // runs per partition
	added, bad uint64
}

// RunStoreOpt configures a [RunStore]; see [WithRunsPerPartition].
type RunStoreOpt interface{ apply(*RunStore) }

type runStoreOptFunc func(*RunStore)

func (f runStoreOptFunc) apply(s *RunStore) { f(s) }

// WithRunsPerPartition sets how many runs are kept per source partition
// (default [DefaultRunsPerPartition]; the newest run of every session is
// kept in any case).
func WithRunsPerPartition(n int) RunStoreOpt {
	return runStoreOptFunc(func(s *RunStore) { s.limit = max(n, 1) })
}

// NewRunStore returns an empty store.
func NewRunStore(opts ...RunStoreOpt) *RunStore {
	s := &RunStore{parts: map[tpKey]*runPart{}, limit: DefaultRunsPerPartition}
	for _, o := range opts {
		if o != nil {
			o.apply(s)
		}
	}
	return s
}

type runPart struct {
	incs    []*incarnation // sorted by the target offset of their first session
	total   int            // runs held
	version uint64         // changes with every run added: invalidates tailAt
}

type incarnation struct {
	id       [16]byte
	sessions []*runSession // sorted by startDown
}

func (inc *incarnation) startDown() int64 { return inc.sessions[0].startDown }

func (inc *incarnation) lastDown() int64 {
	m := int64(-1)
	for _, s := range inc.sessions {
		m = max(m, s.lastDown())
	}
	return m
}

type runSession struct {
	id                 uint64
	fresh              bool
	startUp, startDown int64
	readFrom           int64     // the session passed [readFrom, frontUp]
	tailAt             uint64    // runPart.version+1 when tailOK was computed, 0 never
	tailOK             bool      // tailCopiedAgain with the sessions after it
	committed          int64     // highest resume point its runs report, -1 none
	runs               []segment // sorted by firstDown (and so by firstUp)
	endUp              int64     // -1, or the position read when idle after the last run
}

type segment struct {
	prevUp, prevDown, firstUp, firstDown, count int64
}

func (r segment) lastUp() int64   { return r.firstUp + r.count - 1 }
func (r segment) lastDown() int64 { return r.firstDown + r.count - 1 }

func (s *runSession) frontUp() int64  { return s.runs[len(s.runs)-1].lastUp() }
func (s *runSession) lastDown() int64 { return s.runs[len(s.runs)-1].lastDown() }

// Add records one offset run read from the offset-runs topic, in log
// order. A run that repeats or extends a known one replaces it. A run
// breaking the rules of [OffsetRun] is counted and ignored.
func (s *RunStore) Add(r OffsetRun) {
	if r.validate() != nil {
		s.bad++
		return
	}
	s.added++
	key := tpKey{topic: r.Topic, partition: r.Partition}
	p := s.parts[key]
	if p == nil {
		p = &runPart{}
		s.parts[key] = p
	}
	var inc *incarnation
	for _, c := range p.incs {
		if c.id == r.TopicID {
			inc = c
		}
	}
	var sess *runSession
	if inc != nil {
		for _, x := range inc.sessions {
			if x.id == r.Session {
				sess = x
			}
		}
	}
	if sess == nil {
		sess = &runSession{id: r.Session, fresh: r.Fresh, startUp: r.SessionUpstreamOffset, readFrom: r.ReadFrom, committed: -1,
			startDown: r.SessionOffset, endUp: -1}
		if r.Fresh {
			// A fresh session starts the incarnation on the target:
			// nothing of it was there before, so older sessions of the
			// same topic ID at or above its first target offset belong to
			// a target partition that was deleted or truncated since.
			for _, c := range p.incs {
				if c.id == r.TopicID {
					c.sessions = keepSessions(c.sessions, func(x *runSession) bool { return x.startDown < sess.startDown })
				}
			}
		}
		if inc == nil || len(inc.sessions) == 0 {
			inc = &incarnation{id: r.TopicID}
			p.incs = append(p.incs, inc)
		}
		inc.sessions = append(inc.sessions, sess)
		sort.Slice(inc.sessions, func(i, j int) bool { return inc.sessions[i].startDown < inc.sessions[j].startDown })
		if len(inc.sessions) > maxSessions {
			inc.sessions = inc.sessions[len(inc.sessions)-maxSessions:]
		}
		p.incs = keepIncs(p.incs)
		sort.Slice(p.incs, func(i, j int) bool { return p.incs[i].startDown() < p.incs[j].startDown() })
		if len(p.incs) > maxIncarnations {
			p.incs = p.incs[len(p.incs)-maxIncarnations:]
		}
	}
	sess.committed = max(sess.committed, r.Committed)
	sess.add(segment{prevUp: r.PrevUpstreamOffset, prevDown: r.PrevOffset, firstUp: r.FirstUpstreamOffset,
		firstDown: r.FirstOffset, count: r.Count}, r.EndUpstreamOffset)
	p.trim(s.limit)
	p.version++
}

// trim drops the oldest runs past limit: the first run of the oldest session
// that has more than one, else the oldest session.
func (p *runPart) trim(limit int) {
	p.total = 0
	for _, c := range p.incs {
		for _, x := range c.sessions {
			p.total += len(x.runs)
		}
	}
	for p.total > limit {
		var oldest *runSession
		for _, c := range p.incs {
			for _, x := range c.sessions {
				if len(x.runs) > 1 && (oldest == nil || x.startDown < oldest.startDown) {
					oldest = x
				}
			}
		}
		if oldest == nil {
			return // one run per session: sessions are bounded by maxSessions
		}
		n := min(len(oldest.runs)-1, p.total-limit)
		oldest.runs = append(oldest.runs[:0], oldest.runs[n:]...)
		p.total -= n
	}
}

func keepSessions(ss []*runSession, keep func(*runSession) bool) []*runSession {
	out := ss[:0]
	for _, x := range ss {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

func keepIncs(incs []*incarnation) []*incarnation {
	out := incs[:0]
	for _, c := range incs {
		if len(c.sessions) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// add merges r into the session's runs: the same first target offset means
// the same run (a longer count extends it).
func (s *runSession) add(r segment, endUp int64) {
	i := sort.Search(len(s.runs), func(i int) bool { return s.runs[i].firstDown >= r.firstDown })
	switch {
	case i < len(s.runs) && s.runs[i].firstDown == r.firstDown:
		if r.count > s.runs[i].count {
			s.runs[i] = r
		}
	default:
		s.runs = append(s.runs, segment{})
		copy(s.runs[i+1:], s.runs[i:])
		s.runs[i] = r
	}
	if i == len(s.runs)-1 {
		s.endUp = endUp // describes the position after the newest run only
	}
}

// discard forgets every run of source topic-partition k: they describe a
// previous target log (the checkpoint emitter's target-identity checks).
func (s *RunStore) discard(k tpKey) { delete(s.parts, k) }

// Partitions returns the number of source topic-partitions with runs.
func (s *RunStore) Partitions() int { return len(s.parts) }

// Has reports whether any run is known for source topic-partition (topic,
// partition).
func (s *RunStore) Has(topic string, partition int32) bool {
	return s.parts[tpKey{topic: topic, partition: partition}] != nil
}

// Translator combines the offset runs and the offset syncs of one flow
// into the translation of group offsets. It changes neither store's
// content (it caches per-session results in the RunStore); the caller
// serialises access as for the stores.
type Translator struct {
	Syncs *OffsetSyncStore
	Runs  *RunStore // nil: offset syncs only (MM2's rule)
}

// Translate translates group offset g (the next record the group reads) of
// source topic-partition (topic, partition), whose current topic ID is
// topicID (all zero when unknown).
//
// With offset runs for the partition, the answer follows the package
// documentation's definition of the exact translation: exact where the runs
// prove it, else the highest offset that is provably not past replicated
// data; runs of another topic ID than topicID are never used (the group is
// waiting, [ReasonNewIncarnation], until the re-created topic's first run).
// Without runs it is MM2's rule on the offset syncs ([OffsetSyncStore]),
// never exact.
func (t Translator) Translate(topic string, partition int32, topicID [16]byte, g int64) Translation {
	if t.Syncs != nil && !t.Syncs.ReadToEnd() {
		return Translation{Reason: ReasonSyncsLoading}
	}
	if g < 0 {
		return Translation{Reason: ReasonOlderThanSyncs}
	}
	if t.Runs != nil {
		if p := t.Runs.parts[tpKey{topic: topic, partition: partition}]; p != nil {
			return t.exact(topic, partition, p, topicID, g)
		}
	}
	if t.Syncs == nil {
		return Translation{Reason: ReasonNoOffsetSync}
	}
	d, ok := t.Syncs.Translate(topic, partition, g)
	if !ok {
		if _, any := t.Syncs.Latest(topic, partition); any {
			return Translation{Reason: ReasonOlderThanSyncs}
		}
		return Translation{Reason: ReasonNoOffsetSync}
	}
	reread := int64(0)
	if up, _, found := t.Syncs.parts[tpKey{topic: topic, partition: partition}].lookup(g); found && up < g {
		reread = g - up - 1 // the records between the sync and g
	}
	return Translation{Offset: d, OK: true, Reason: ReasonNotExact, Kind: KindSync, Reread: reread}
}

// pick chooses the incarnation whose sessions translate offsets of the
// topic with ID topicID.
func (p *runPart) pick(topicID [16]byte) (*incarnation, bool) {
	newest := p.incs[len(p.incs)-1]
	if topicID == ([16]byte{}) {
		return newest, true
	}
	for _, c := range p.incs {
		if c.id == topicID {
			return c, true
		}
	}
	if newest.id == ([16]byte{}) {
		return newest, true // written without topic IDs: cannot tell
	}
	return nil, false
}

// exact computes the translation from the runs of one incarnation.
//
// For every session X, newest first: let s be the first offset >= g that
// no newer session passed (its first to its last recorded record); X
// contributes the target offset of its first copy of a record >= s: known
// from a run, a lower bound in a hole of X's runs, the next position for
// the newest session, or, for an older session, a lower bound for its
// unrecorded tail unless newer sessions provably copied it again. The
// answer is the minimum; it is exact when a contribution reaching it is.
// Target offsets below the oldest known session (history from before
// kmirror wrote runs, sessions dropped from memory, a session that
// stopped before it wrote a run) are bounded with the offset syncs there.
// A contribution is not exact when the target offsets after its session
// have a gap a session unknown to the runs may have written.
func (t Translator) exact(topic string, partition int32, p *runPart, topicID [16]byte, g int64) Translation {
	inc, ok := p.pick(topicID)
	if !ok {
		return Translation{Reason: ReasonNewIncarnation}
	}
	ss := inc.sessions
	floor := int64(0) // first target offset of this incarnation
	for _, c := range p.incs {
		if c != inc && c.startDown() < inc.startDown() {
			floor = max(floor, c.lastDown()+1)
		}
	}
	// upper bounds the exact answer: the minimum, over the sessions, of an
	// upper bound of each one's true contribution (c itself when exact).
	best, exact, reason, upper := int64(math.MaxInt64), false, "", int64(math.MaxInt64)
	offer := func(c int64, ex bool, why string, up int64) {
		if ex {
			up = c
		}
		upper = min(upper, up)
		switch {
		case c < best:
			best, exact, reason = c, ex, why
		case c == best && ex && !exact:
			exact, reason = true, ""
		}
	}
	// A session that stopped before it wrote any run may have copied, in
	// the target offsets between two known sessions, records that older
	// sessions copied before: their copies of records it may have passed
	// (after the last resume point the session before the gap reported:
	// resume points never go back) are then not provably the last.
	// Likewise the newest known session may have copied records after its
	// last run (it runs on, or stopped with unrecorded copies): older
	// sessions' copies of records after its last run are not provably the
	// last either. The gap may also hold the unrecorded copies of the
	// session before it, when the next one started from the target's
	// tail (mirror: resume from the target's tail) instead of from the
	// stored resume point. Such copies bound neither exact nor safe
	// contributions.
	taintFrom := ss[len(ss)-1].frontUp() + 1
	for i := len(ss) - 1; i >= 0; i-- {
		x := ss[i]
		newer := ss[i+1:]
		if len(newer) > 0 && newer[0].startDown != x.lastDown()+1 {
			taintFrom = min(taintFrom, max(x.readFrom, x.committed+1))
		}
		s := firstUncovered(g, newer)
		if c, ex, why, rec, up, upRec, has := t.contribution(topic, partition, p, x, s, newer); has {
			switch {
			case ex && len(newer) > 0 && rec >= taintFrom:
				ex, why, up = false, ReasonNotExact, math.MaxInt64 // a later copy may exist
			case !ex && len(newer) > 0 && up != math.MaxInt64 && upRec >= taintFrom:
				// The copy that bounds a safe contribution may have been
				// made again later too: no bound. Without unknown sessions
				// this happens after a start from the target's tail, which
				// reads from past the previous session's last run while its
				// unrecorded copies lie before the new session (regression:
				// TestExactTranslationPropertyTailResume).
				up = math.MaxInt64
			}
			offer(c, ex, why, up)
		}
	}
	if first := ss[0]; floor < first.startDown {
		// Target offsets [floor, first.startDown): copies made before the
		// oldest known session, known only through offset syncs.
		s := firstUncovered(g, ss)
		c, has, ok := t.prefix(topic, partition, s, floor, first, ss)
		switch {
		case !ok:
			return Translation{Reason: ReasonOlderThanSyncs}
		case has:
			offer(c, false, ReasonNotExact, math.MaxInt64)
		}
	}
	if best == math.MaxInt64 {
		return Translation{Reason: ReasonOlderThanSyncs}
	}
	reread := int64(-1)
	switch {
	case exact:
		reason, reread = "", 0
	case upper < math.MaxInt64 && upper >= best:
		reread = upper - best
	}
	return Translation{Offset: best, OK: true, Exact: exact, Reason: reason, Kind: KindRun, Reread: reread}
}

// firstUncovered returns the first offset >= g outside every session's
// passed range [readFrom, frontUp].
func firstUncovered(g int64, sessions []*runSession) int64 {
	for changed := true; changed; {
		changed = false
		for _, x := range sessions {
			if x.readFrom <= g && g <= x.frontUp() {
				g = x.frontUp() + 1
				changed = true
			}
		}
	}
	return g
}

// contribution returns the target offset of session x's first copy of a
// record at or after source offset s that is still the last copy of its
// record (no newer session passed it), or a lower bound of it
// (exact=false), and has=false when x holds no such copy. newer are the
// sessions after x, oldest first.
//
// up is an upper bound of the true contribution when c is a lower bound
// (math.MaxInt64 when none is known), upRec the source offset of x's copy
// at up (-1 when unknown).
func (t Translator) contribution(topic string, partition int32, p *runPart, x *runSession, s int64, newer []*runSession) (c int64, exact bool, why string, rec, up, upRec int64, has bool) {
	for {
		// rec: source offset of the copy at c when exact, -1 when none
		c, exact, why, has, rec, up, upRec = t.firstCopy(topic, partition, p, x, s, newer)
		if !has || !exact || rec < 0 {
			return c, exact, why, rec, up, upRec, has
		}
		next := firstUncovered(rec, newer)
		if next == rec {
			return c, exact, why, rec, up, upRec, has
		}
		s = next // that copy was made again by a newer session
	}
}

// firstCopy returns the target offset of session x's first copy of a
// record at or after s (rec: that record's source offset, -1 when c is a
// bound or a future position), see contribution.
func (t Translator) firstCopy(topic string, partition int32, p *runPart, x *runSession, s int64, newer []*runSession) (c int64, exact bool, why string, has bool, rec, up, upRec int64) {
	const unknown = math.MaxInt64
	if s <= x.startUp {
		return x.startDown, true, "", true, x.startUp, x.startDown, x.startUp
	}
	j := sort.Search(len(x.runs), func(j int) bool { return x.runs[j].lastUp() >= s })
	if j == len(x.runs) { // past x's last recorded record
		if len(newer) == 0 {
			if s <= x.frontUp()+1 || (x.endUp >= 0 && s <= x.endUp) {
				return x.lastDown() + 1, true, "", true, -1, x.lastDown() + 1, -1
			}
			// Copies made since the last run lie from here on, one per
			// record after the run's last one: at most s-frontUp-1 of
			// them are of records before s.
			if s-x.frontUp() > math.MaxInt64-x.lastDown() {
				return x.lastDown() + 1, false, ReasonBeyondReplicated, true, -1, unknown, -1
			}
			return x.lastDown() + 1, false, ReasonBeyondReplicated, true, -1, x.lastDown() + (s - x.frontUp()), -1
		}
		if tailCopiedAgain(p, x, newer) {
			return 0, false, "", false, -1, unknown, -1
		}
		return x.lastDown() + 1, false, ReasonNotExact, true, -1, unknown, -1
	}
	r := x.runs[j]
	if s >= r.firstUp {
		return r.firstDown + (s - r.firstUp), true, "", true, s, r.firstDown + (s - r.firstUp), s
	}
	// s < r.firstUp. A linked run proves that x copied nothing in
	// (r.prevUp, r.firstUp); runs before j end before s.
	if r.prevUp >= 0 && s > r.prevUp {
		return r.firstDown, true, "", true, r.firstUp, r.firstDown, r.firstUp
	}
	// A hole in what is known of x: its copies of records in
	// [s, r.firstUp) lie between the previous known record and r.
	lo := x.startDown
	if j > 0 {
		lo = x.runs[j-1].lastDown()
	}
	c = lo + 1
	if t.Syncs != nil {
		if u, d, ok := t.Syncs.newestWithin(topic, partition, s, lo+1, r.firstDown); ok {
			if u == s {
				return d, true, "", true, s, d, s
			}
			c = max(c, d+1)
		}
	}
	// r's first record is at or after s: x's first copy of such a record
	// is at r.firstDown at the latest.
	return c, false, ReasonNotExact, true, -1, r.firstDown, r.firstUp
}

// tailCopiedAgain reports whether the records session x may have copied
// after its last recorded one (its tail: the target offsets up to the next
// session's first record) were all copied again by newer sessions: the
// newer sessions passed, without interruption from x's last recorded
// source offset on, at least as many distinct records as the tail has
// target offsets. Each tail record then has a later copy, or was gone from
// the source when a newer session passed it.
//
// The answer depends on the runs only, not on the group offset: it is
// cached until the next run is added to the partition.
func tailCopiedAgain(p *runPart, x *runSession, newer []*runSession) bool {
	if x.tailAt != p.version+1 {
		m := newer[0].startDown - x.lastDown() - 1
		x.tailOK, x.tailAt = copiedAgain(x.frontUp(), m, newer), p.version+1
	}
	return x.tailOK
}

// copiedAgain reports whether the sessions passed every offset after
// front without interruption and copied at least m distinct records there.
func copiedAgain(front, m int64, sessions []*runSession) bool {
	if m == 0 {
		return true
	}
	if m < 0 {
		return false // interleaved writers: no proof
	}
	end := firstUncovered(front+1, sessions) - 1
	if end <= front {
		return false
	}
	var iv [][2]int64
	for _, x := range sessions {
		for _, r := range x.runs {
			lo, hi := max(r.firstUp, front+1), min(r.lastUp(), end)
			if lo <= hi {
				iv = append(iv, [2]int64{lo, hi})
			}
		}
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
	var n, reach int64 = 0, front
	for _, v := range iv {
		lo := max(v[0], reach+1)
		if lo <= v[1] {
			n += v[1] - lo + 1
			reach = v[1]
		}
		if n >= m {
			return true
		}
	}
	return false
}

// prefix bounds the copies in target offsets [floor, first.startDown),
// made before the oldest known session first (replication before offset
// runs were written, runs deleted by the topic's retention or dropped from
// memory), of records at or after s. has is false when that range holds
// no last copy of such a record; ok is false when nothing can be said (no
// answer).
//
// Records before first.readFrom have their last copies there: MM2's rule
// on the offset syncs of the range gives a safe offset. Of the records from
// first.readFrom on, the range holds at most one copy per target offset
// after the newest sync there of an older record; the known sessions copy
// them again once they passed as many records. Without such a sync, the
// range is taken to hold no last copy of them: the sessions that wrote it
// stopped before the oldest known one started, which read from after their
// resume point and has long passed what they copied after it (a fresh
// session read the whole partition, and nothing of its source-topic
// incarnation was on the target before it).
func (t Translator) prefix(topic string, partition int32, s, floor int64, first *runSession, sessions []*runSession) (c int64, has, ok bool) {
	x, hi := first.readFrom-1, first.startDown
	if s <= x {
		if t.Syncs == nil {
			return 0, false, false
		}
		u, d, found := t.Syncs.newestWithin(topic, partition, s, floor, hi)
		if !found {
			return 0, false, false
		}
		if u == s {
			return d, true, true
		}
		return d + 1, true, true
	}
	if x < 0 || t.Syncs == nil {
		return 0, false, true
	}
	_, d, found := t.Syncs.newestWithin(topic, partition, x, floor, hi)
	if !found || copiedAgain(x, hi-d-1, sessions) {
		return 0, false, true
	}
	return d + 1, true, true
}
