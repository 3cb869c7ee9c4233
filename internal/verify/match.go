package verify

// The matcher is the pure core of a partition comparison: it is fed source
// records (in log order, read_committed) and target records (in log order)
// and classifies every target record against the model of a correct copy:
// the target partition is a concatenation of runs of the source partition,
// each run starting at or before the end of what was copied so far.
//
// State is bounded: source records are kept in a buffer that reaches at most
// maxSkip records ahead of the newest source record matched so far (the
// frontier, h) and maxReplay records behind it; older records are finalized
// (matched, missing or deleted on the target) and dropped.

// zones of a source entry.
const (
	zoneWindow   uint8 = iota // compared: expected on the target
	zoneContext               // before the window: read so that replays reaching back into it are recognized
	zoneTrailing              // after the window's end (produced after the run started): only recognized
)

// maxChainWalk bounds the candidates examined for one target record.
const maxChainWalk = 1024

type srcEntry struct {
	off  int64
	f    fields
	fp   uint64
	prev int64  // seq of the previous buffered entry with the same fp, or -1
	hits uint32 // target records matched to this entry
	zone uint8
}

type tgtRec struct {
	off int64
	f   fields
	fp  uint64
	// stamp is the source offset the record's provenance header carries
	// (kmirror-provenance ending with "#<offset>"), when stamped.
	stamp   int64
	stamped bool
}

type matchOpts struct {
	maxReplay, maxSkip int64
	compareTS          bool
	maxDetails         int
	// leadIn: the source had records before the first one read, so target
	// records before the first match may be copies of them and are
	// counted as lead-in instead of unexpected.
	leadIn bool
	// truncated: the target was read from its log start and that log start
	// is above 0, so window records before the first match may have been
	// copied and deleted by retention on the target.
	truncated bool
	// compacted: the source topic is compacted, so the target may hold
	// copies of records compaction removed from it since (compactedCopy).
	compacted bool
	// from is the first source offset read.
	from int64
}

// ring is a growable ring buffer of source entries.
type ring struct {
	a       []srcEntry // len is a power of two (or 0)
	head, n int
}

func (q *ring) len() int { return q.n }

func (q *ring) at(i int) *srcEntry { return &q.a[(q.head+i)&(len(q.a)-1)] }

func (q *ring) push(e srcEntry) {
	if q.n == len(q.a) {
		a := make([]srcEntry, max(64, 2*len(q.a)))
		for i := range q.n {
			a[i] = *q.at(i)
		}
		q.a, q.head = a, 0
	}
	q.a[(q.head+q.n)&(len(q.a)-1)] = e
	q.n++
}

func (q *ring) pop() {
	q.a[q.head] = srcEntry{}
	q.head = (q.head + 1) & (len(q.a) - 1)
	q.n--
}

type matcher struct {
	o    matchOpts
	r    *PartitionReport
	buf  ring
	base int64 // seq of the oldest buffered entry
	idx  map[uint64]int64

	c            int64 // seq matched by the previous target record, -1 none
	h            int64 // highest seq matched, -1 none
	firstMatch   int64 // seq of the first match, -1 none
	windowCopied bool  // a target record matched a window record
	inReplay     bool
	openReplay   int // index in r.Replays of the replay the previous record extended, -1 none

	lastMissingSeq, lastDeletedSeq int64
	windowSeqEnd                   int64 // one past the last window entry added

	// stamps is the offset mapping the target records' provenance offsets
	// give (set on the report by finishStamps when any was stamped);
	// runOpen: the previous target record extended stamps.Runs' last run.
	stamps  StampMap
	runOpen bool

	// altRun is the run of alterations the latest target records were
	// classified as, and altSaved the state before its first one: when the
	// next target record is the exact copy of the run's first source record,
	// the run was records written into the remote topic between two copies
	// (by an application), not alterations (undoAlterations).
	altRun   []pendingAlter
	altSaved alterSaved
}

// pendingAlter is one alteration of a run (matcher.altRun).
type pendingAlter struct {
	seq    int64
	off    int64 // target offset
	listed bool  // appended to the report's Alterations
}

// alterSaved is the matcher state before a run of alterations.
type alterSaved struct {
	c, h, firstMatch, targetFirstMatch int64
	windowCopied                       bool
}

// maxAltRun bounds a run of alterations that a later exact copy can turn
// into unexpected records.
const maxAltRun = 1024

func newMatcher(o matchOpts, r *PartitionReport) *matcher {
	if o.maxDetails <= 0 {
		o.maxDetails = DefaultMaxDetails
	}
	return &matcher{o: o, r: r, idx: map[uint64]int64{}, c: -1, h: -1, firstMatch: -1, openReplay: -1, lastMissingSeq: -2, lastDeletedSeq: -2}
}

// next is the seq the next source entry gets.
func (m *matcher) next() int64 { return m.base + int64(m.buf.len()) }

func (m *matcher) at(seq int64) *srcEntry { return m.buf.at(int(seq - m.base)) }

func (m *matcher) addSource(e srcEntry) {
	seq := m.next()
	e.prev = -1
	if p, ok := m.idx[e.fp]; ok {
		e.prev = p
	}
	m.idx[e.fp] = seq
	m.buf.push(e)
	if e.zone == zoneWindow {
		m.r.Compared++
		m.windowSeqEnd = seq + 1
	}
}

// lookup returns the best buffered entry with fingerprint fp, or -1.
// Preference: the record right after the frontier (a run continuing), an
// unmatched record behind the frontier (it fills a hole: out of order), the
// nearest record ahead of the frontier (records skipped: a gap), the newest
// matched record behind the frontier (a replay).
func (m *matcher) lookup(fp uint64) int64 {
	s, ok := m.idx[fp]
	if !ok {
		return -1
	}
	if n := m.h + 1; n >= m.base && n < m.next() && m.at(n).fp == fp {
		return n
	}
	var fill, ahead, replay int64 = -1, -1, -1
	// Records with identical content chain up; the walk is bounded so that
	// a topic of identical records stays linear.
	for steps := 0; s >= m.base && steps < maxChainWalk; s, steps = m.at(s).prev, steps+1 {
		e := m.at(s)
		switch {
		case s == m.h+1:
			return s
		case s > m.h+1:
			ahead = s // walking backwards: the last one seen is the nearest
		case e.hits == 0:
			if fill < 0 {
				fill = s
			}
		default:
			if replay < 0 {
				replay = s
			}
		}
	}
	switch {
	case fill >= 0:
		return fill
	case ahead >= 0:
		return ahead
	}
	return replay
}

// wants reports whether more source records should be read before t is
// classified: the record expected next is not read yet, or t's content
// is not buffered and the buffer has room ahead of the frontier.
func (m *matcher) wants(t tgtRec) bool {
	if m.c >= 0 && m.c+1 >= m.next() {
		return true
	}
	if _, ok := m.idx[t.fp]; ok {
		return false
	}
	from := m.h + 1
	if m.h < 0 {
		from = m.base
	}
	return m.next()-from < m.o.maxSkip
}

// target classifies one target record.
func (m *matcher) target(t tgtRec) {
	m.r.TargetRecords++
	m.stamp(t)
	if len(m.altRun) > 0 {
		if s := m.altRun[0].seq; s >= m.base && m.at(s).fp == t.fp {
			m.undoAlterations()
		} else {
			defer func() {
				if len(m.altRun) > 0 && m.altRun[len(m.altRun)-1].off != t.off {
					m.altRun = m.altRun[:0] // t was no alteration: the run ended
				}
			}()
		}
	}
	if m.c >= 0 && m.c+1 < m.next() && m.at(m.c+1).fp == t.fp {
		m.match(m.c+1, t)
		return
	}
	if s := m.lookup(t.fp); s >= 0 {
		m.match(s, t)
		return
	}
	if !m.windowCopied && m.o.leadIn {
		// Before the first copy of a window record, a record that copies
		// nothing read is a copy of a source record before the records
		// read: the lead-in, or a replay (before the window) that reached
		// back further than the context read before the window.
		m.r.TargetLeadIn++
		return
	}
	if m.compactedCopy(t) {
		m.r.CompactedOnSource++
		return
	}
	exp := m.c + 1
	if m.c < 0 {
		exp = m.base
	}
	if exp >= m.base && exp < m.next() {
		e := m.at(exp)
		d := diff(e.f, t.f, m.o.compareTS)
		n := 3
		if m.o.compareTS {
			n = 4
		}
		if len(d) < n { // something still matches: the record at exp, altered
			m.alter(exp, t, d)
			return
		}
	}
	m.r.Unexpected++
	if len(m.r.UnexpectedOffsets) < m.o.maxDetails {
		m.r.UnexpectedOffsets = append(m.r.UnexpectedOffsets, t.off)
	} else {
		m.r.DetailsTruncated = true
	}
}

// compactedCopy reports whether t, on a compacted source, copies a record
// compaction removed from the source: it stands where the source has a
// hole in its offsets (between the record matched last and the next one
// read), and carries a source offset in that hole or, without one, the
// key of a later record read (compaction removes a record only for a
// newer one of its key; one whose key a tombstone deleted altogether is
// not recognized unstamped). Checked before an alteration: with equal
// headers, such a copy resembled the record after the hole.
func (m *matcher) compactedCopy(t tgtRec) bool {
	if !m.o.compacted {
		return false
	}
	prev, exp := m.o.from-1, m.base
	if m.c >= 0 {
		if m.c < m.base {
			return false
		}
		prev, exp = m.at(m.c).off, m.c+1
	}
	if exp >= m.next() || m.at(exp).off <= prev+1 {
		return false
	}
	if t.stamped {
		return t.stamp > prev && t.stamp < m.at(exp).off
	}
	for s, steps := exp, 0; s < m.next() && steps < maxChainWalk; s, steps = s+1, steps+1 {
		if m.at(s).f.key == t.f.key {
			return true
		}
	}
	return false
}

func (m *matcher) advance(s int64, t tgtRec) {
	if m.firstMatch < 0 {
		m.firstMatch = s
		m.r.TargetFirstMatch = t.off
	}
	if m.at(s).zone == zoneWindow {
		m.windowCopied = true
	}
	m.c = s
	if s > m.h {
		m.h = s
	}
	m.evict()
}

func (m *matcher) match(s int64, t tgtRec) {
	e := m.at(s)
	m.checkStamp(e, t)
	switch {
	case e.zone != zoneWindow:
		m.r.TargetOutsideWindow++
		m.inReplay = false
	case e.hits > 0:
		m.r.Duplicated++
		switch {
		case m.inReplay && m.c == s-1:
			if m.openReplay >= 0 {
				m.r.Replays[m.openReplay].Records++
			}
		case len(m.r.Replays) < m.o.maxDetails:
			m.r.Replays = append(m.r.Replays, Replay{TargetOffset: t.off, SourceOffset: e.off, Records: 1})
			m.openReplay = len(m.r.Replays) - 1
		default:
			m.r.DetailsTruncated = true
			m.openReplay = -1
		}
		m.inReplay = true
	case s < m.h:
		m.r.OutOfOrder++
		if len(m.r.OutOfOrderRecords) < m.o.maxDetails {
			m.r.OutOfOrderRecords = append(m.r.OutOfOrderRecords, Displaced{SourceOffset: e.off, TargetOffset: t.off})
		} else {
			m.r.DetailsTruncated = true
		}
		m.inReplay = false
	default:
		m.inReplay = false
	}
	e.hits++
	m.advance(s, t)
}

func (m *matcher) alter(s int64, t tgtRec, fieldsDiffer []string) {
	e := m.at(s)
	m.checkStamp(e, t)
	if len(m.altRun) == 0 {
		m.altSaved = alterSaved{c: m.c, h: m.h, firstMatch: m.firstMatch, targetFirstMatch: m.r.TargetFirstMatch, windowCopied: m.windowCopied}
	}
	pa := pendingAlter{seq: s, off: t.off}
	if e.zone != zoneWindow {
		m.r.TargetOutsideWindow++
	} else {
		m.r.Altered++
		if len(m.r.Alterations) < m.o.maxDetails {
			m.r.Alterations = append(m.r.Alterations, Alteration{SourceOffset: e.off, TargetOffset: t.off, Fields: fieldsDiffer})
			pa.listed = true
		} else {
			m.r.DetailsTruncated = true
		}
	}
	if len(m.altRun) < maxAltRun {
		m.altRun = append(m.altRun, pa)
	} else {
		m.altRun = m.altRun[:0]
	}
	m.inReplay = false
	e.hits++
	m.advance(s, t)
}

// undoAlterations reclassifies the run of alterations m.altRun as
// unexpected records: the target record now read is the exact copy of the
// run's first source record, so the run's records stood between two
// copies without copying anything (records an application wrote into the
// remote topic, without headers and so resembling the copy expected
// next). The matcher is put back as before the run, and the copy is then
// classified as the first copy it is (not a duplicate of an alteration).
func (m *matcher) undoAlterations() {
	for i := len(m.altRun) - 1; i >= 0; i-- {
		pa := m.altRun[i]
		if pa.seq < m.base {
			continue // finalized already (evicted)
		}
		e := m.at(pa.seq)
		e.hits--
		if e.zone != zoneWindow {
			m.r.TargetOutsideWindow--
			continue
		}
		m.r.Altered--
		if pa.listed {
			m.r.Alterations = m.r.Alterations[:len(m.r.Alterations)-1]
		}
	}
	for _, pa := range m.altRun {
		m.r.Unexpected++
		if len(m.r.UnexpectedOffsets) < m.o.maxDetails {
			m.r.UnexpectedOffsets = append(m.r.UnexpectedOffsets, pa.off)
		} else {
			m.r.DetailsTruncated = true
		}
	}
	sv := m.altSaved
	m.c, m.h, m.firstMatch, m.r.TargetFirstMatch, m.windowCopied = sv.c, sv.h, sv.firstMatch, sv.targetFirstMatch, sv.windowCopied
	m.altRun = m.altRun[:0]
}

// evict finalizes and drops entries more than maxReplay behind the
// frontier.
func (m *matcher) evict() {
	for m.h >= 0 && m.base < m.h-m.o.maxReplay && m.buf.len() > 0 {
		m.dropFront()
	}
}

// drain finalizes and drops every buffered entry (the target is read to
// its end).
func (m *matcher) drain() {
	for m.buf.len() > 0 {
		m.dropFront()
	}
}

func (m *matcher) dropFront() {
	seq := m.base
	e := m.buf.at(0)
	if m.idx[e.fp] == seq {
		delete(m.idx, e.fp)
	}
	if e.zone == zoneWindow {
		switch {
		case e.hits > 0:
			m.r.Matched++
		case m.o.truncated && m.firstMatch >= 0 && seq < m.firstMatch:
			m.r.DeletedOnTarget++
			m.r.DeletedOnTargetRanges = m.addRange(m.r.DeletedOnTargetRanges, &m.lastDeletedSeq, seq, e.off)
		default:
			m.r.Missing++
			if seq > m.h {
				m.r.MissingAfterLastCopied++
			}
			m.r.MissingRanges = m.addRange(m.r.MissingRanges, &m.lastMissingSeq, seq, e.off)
		}
	}
	m.buf.pop()
	m.base++
}

// addRange extends the last range when seq follows the previous one (in
// the read_committed log: markers and aborted records between them do not
// split a range), else starts a new one.
func (m *matcher) addRange(rs []Range, last *int64, seq, off int64) []Range {
	if n := len(rs); n > 0 && *last == seq-1 && rs[n-1].To < off {
		rs[n-1].To = off
		rs[n-1].Records++
		*last = seq
		return rs
	}
	*last = seq
	if len(rs) >= m.o.maxDetails {
		m.r.DetailsTruncated = true
		*last = -2
		return rs
	}
	return append(rs, Range{From: off, To: off, Records: 1})
}

// caughtUp reports whether every window record read so far is behind the
// frontier: with the source window read to its end, nothing more is
// expected on the target.
func (m *matcher) caughtUp() bool { return m.h >= m.windowSeqEnd-1 }

// stamp adds t to the offset mapping: a stamped record extends the open
// run when its source offset is above the run's last, else starts one; an
// unstamped record closes the run.
func (m *matcher) stamp(t tgtRec) {
	st := &m.stamps
	if !t.stamped {
		st.Unstamped++
		m.runOpen = false
		return
	}
	st.Stamped++
	if n := len(st.Runs); m.runOpen && n > 0 && t.stamp > st.Runs[n-1].SourceTo {
		r := &st.Runs[n-1]
		r.SourceTo, r.TargetTo = t.stamp, t.off
		r.Records++
		return
	}
	if len(st.Runs) >= m.o.maxDetails {
		m.r.DetailsTruncated = true
		m.runOpen = false
		return
	}
	st.Runs = append(st.Runs, StampRun{SourceFrom: t.stamp, SourceTo: t.stamp, TargetFrom: t.off, TargetTo: t.off, Records: 1})
	m.runOpen = true
}

// checkStamp flags a stamped target record whose content matched (or
// stood for, altered) a source record at another offset than its stamp.
func (m *matcher) checkStamp(e *srcEntry, t tgtRec) {
	if !t.stamped || t.stamp == e.off {
		return
	}
	m.stamps.Disagreements++
	if len(m.stamps.DisagreementRecords) < m.o.maxDetails {
		m.stamps.DisagreementRecords = append(m.stamps.DisagreementRecords,
			StampDisagreement{TargetOffset: t.off, Stamped: t.stamp, Matched: e.off})
	} else {
		m.r.DetailsTruncated = true
	}
}

// finishStamps puts the offset mapping on the report when some target
// record read was stamped.
func (m *matcher) finishStamps() {
	if m.stamps.Stamped > 0 {
		st := m.stamps
		m.r.Stamps = &st
	}
}
