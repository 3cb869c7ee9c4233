package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// SlotsPerPartition is the number of exponentially spaced offset-sync slots the
// [OffsetSyncStore] keeps per upstream topic-partition: 64, one per bit of an
// int64 offset, as in MM2's OffsetSyncStore (SYNCS_PER_PARTITION = Long.SIZE).
const SlotsPerPartition = 64

// MaxRecentHistory is the largest value accepted by [WithRecentHistory]
// (syncs per partition, 16 bytes each). Larger values are clamped to it.
const MaxRecentHistory = 1 << 20

// StoreOpt configures an [OffsetSyncStore]. Options are created by the
// With* functions of this package; check them with [ValidateStoreOpts].
type StoreOpt interface {
	apply(*storeCfg)
}

type storeOptFunc func(*storeCfg)

func (f storeOptFunc) apply(c *storeCfg) { f(c) }

// storeCfg holds every store setting; defaultStoreCfg lists the defaults.
type storeCfg struct {
	mustReadToEnd           bool
	resetOnDownstreamRewind bool
	recentHistory           int
}

func defaultStoreCfg() storeCfg {
	return storeCfg{
		mustReadToEnd:           true,
		resetOnDownstreamRewind: true,
		recentHistory:           0,
	}
}

func (c *storeCfg) validate() error {
	if c.recentHistory < 0 {
		return fmt.Errorf("checkpoint: recent history %d syncs is negative", c.recentHistory)
	}
	if c.recentHistory > MaxRecentHistory {
		return fmt.Errorf("checkpoint: recent history %d syncs exceeds the maximum %d", c.recentHistory, MaxRecentHistory)
	}
	return nil
}

// WithMustReadToEnd selects MM2's start-up variant: the
// initializationMustReadToEnd argument of OffsetSyncStore.start in MM2 3.8+
// (KAFKA-15905), which MirrorCheckpointTask sets when it could not load the
// checkpoints topic.
//
// true (the default, and the only behaviour of MM2 3.5.2-3.7): while the
// initial read of the offset-syncs topic is running, every sync replaces the
// whole history of its partition, so after [OffsetSyncStore.MarkReadToEnd]
// only the last sync per partition from the initial read is known. Groups
// older than it get no translation until they pass it. This guarantees that a
// restarted checkpoint engine never translates a group to an offset lower
// than what it emitted before the restart, even without knowing those
// checkpoints. MM2 uses it when it could not load the checkpoints topic.
//
// false: the initial read builds the full history (MM2 3.8+ after a
// successful load of the checkpoints topic). Use it only when the
// checkpoints already written are known (read back from the checkpoints
// topic) and a new checkpoint is written only when it is more recent than
// the last one, which keeps emitted checkpoints monotonic; the [Emitter]
// does so.
func WithMustReadToEnd(must bool) StoreOpt {
	return storeOptFunc(func(c *storeCfg) { c.mustReadToEnd = must })
}

// WithResetOnDownstreamRewind controls what happens when a sync reports a
// downstream offset lower than the newest sync of its partition, or equal to
// it for a later upstream record, while the upstream offset did not go back
// (the target partition was truncated, deleted or recreated; MM2's
// OffsetSyncWriter forces a sync whenever the downstream offset goes back).
//
// true (the default, a deliberate improvement over MM2): the history of the
// partition is discarded and restarts with that sync, like MM2 does for an
// upstream rewind. Older syncs name downstream offsets of the previous
// incarnation of the target partition; using them could translate a group
// past the end of the new target partition, which a translation must never
// be.
//
// false: MM2's exact behaviour (only upstream rewinds reset the history).
// The detection needs a sync of the new target partition to reach the store
// before that partition grows past the downstream offset of the newest sync
// of the old one.
func WithResetOnDownstreamRewind(reset bool) StoreOpt {
	return storeOptFunc(func(c *storeCfg) { c.resetOnDownstreamRewind = reset })
}

// WithRecentHistory keeps, in addition to MM2's 64 exponentially spaced
// slots, the last n syncs of every partition (n records of history, 16 bytes
// per sync, allocated as syncs arrive). A group whose offset lies within that
// window is translated from the newest sync at or before it, so its re-read
// distance after failover is at most the spacing of the syncs
// (offset.lag.max) instead of growing with its lag (with MM2's slots alone
// a group far behind is translated coarsely, or not at all). Translation
// is never worse than MM2's: the answer always comes from the newest
// retained sync at or before the group offset, and both structures only hold
// syncs received since the last history reset.
//
// The store's default is 0: MM2's 64 slots only, exactly. The checkpoint
// [Emitter] (and so the engine in package mirror) instead uses
// [EmitterConfig.RecentHistory], whose default is [DefaultRecentHistory]
// (1024). Negative values are treated as 0 and values above
// [MaxRecentHistory] as [MaxRecentHistory]; [ValidateStoreOpts] reports
// both.
func WithRecentHistory(n int) StoreOpt {
	return storeOptFunc(func(c *storeCfg) { c.recentHistory = n })
}

// ValidateStoreOpts applies opts to the defaults and reports the first
// invalid setting ("checkpoint: recent history -1 syncs is negative", ...).
// [NewOffsetSyncStore] never fails; it clamps such values instead.
func ValidateStoreOpts(opts ...StoreOpt) error {
	cfg := defaultStoreCfg()
	for _, o := range opts {
		if o == nil {
			return errors.New("checkpoint: nil StoreOpt")
		}
		o.apply(&cfg)
	}
	return cfg.validate()
}

// syncRef is one received offset sync as held in a slot. id gives each
// received sync an identity: MM2's invariants compare slots by object
// identity, not by value, so two syncs with equal offsets stay distinct.
type syncRef struct {
	up, down int64
	id       uint64
}

// syncPair is one entry of the recent-history ring.
type syncPair struct {
	up, down int64
}

type tpKey struct {
	topic     string
	partition int32
}

// partState is the history of one upstream topic-partition.
type partState struct {
	// slots are MM2's 64 slots without their tail of repeats: slot i is
	// slots[min(i, len(slots)-1)] (see all). Slot 0 is the newest sync,
	// slot 63 the oldest usable one; equal ids mark repeated entries
	// (docs/mm2-compat.md §6.3 invariants B and C hold). Most partitions
	// hold a few distinct syncs: 64 slots of 24 bytes each were 1.5 KiB
	// per partition (issue 22).
	slots []syncRef
	// recent holds the last len(recent) syncs (at most the configured
	// history) in arrival order, oldest at recent[head] once full.
	recent []syncPair
	head   int
}

// OffsetSyncStore keeps per upstream topic-partition a history of offset
// syncs and translates consumer-group offsets of the source cluster into
// offsets of the target cluster. It is MM2's OffsetSyncStore (KAFKA-14666,
// KAFKA-15202, KAFKA-15905, Kafka 3.5.2 and later): 64 slots
// per partition whose spacing grows exponentially with age, updated with
// MM2's exact algorithm, plus the optional improvements selected by its
// options ([StoreOpt]).
//
// Feed it with [OffsetSyncStore.Add] in the log order of partition 0 of the
// offset-syncs topic, call [OffsetSyncStore.MarkReadToEnd] once the initial
// read reached the end offset observed at start, then call
// [OffsetSyncStore.Translate] for group offsets.
//
// The store is pure (no I/O, no clock, no goroutines) and deterministic. It
// is NOT safe for concurrent use: one goroutine must own it, or the caller
// must serialise every method call. The zero value is not usable; use
// [NewOffsetSyncStore].
type OffsetSyncStore struct {
	cfg       storeCfg
	parts     map[tpKey]*partState
	readToEnd bool
	nextID    uint64

	added, rejected, resets uint64
	recentCap               int64 // sum of cap(recent) over partitions
	slotCap                 int64 // sum of cap(slots) over partitions
}

// NewOffsetSyncStore returns an empty store that has not been read to end.
// Defaults: [WithMustReadToEnd](true), [WithResetOnDownstreamRewind](true),
// [WithRecentHistory](0). Nil options are ignored; out-of-range values are
// clamped (see [ValidateStoreOpts]).
func NewOffsetSyncStore(opts ...StoreOpt) *OffsetSyncStore {
	cfg := defaultStoreCfg()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	cfg.recentHistory = min(max(cfg.recentHistory, 0), MaxRecentHistory)
	return &OffsetSyncStore{cfg: cfg, parts: make(map[tpKey]*partState)}
}

// Add records one offset sync read from the offset-syncs topic. Syncs must
// be added in log order. sync.Topic is the upstream (source) topic name, as
// in the record key.
//
// A sync with a negative upstream or downstream offset is not a valid MM2
// record; it is ignored and counted in [StoreStats.Rejected] (MM2 has no such
// check: such a record, or a tombstone, can stop its task's translation).
//
// The history of the partition restarts with sync (all older syncs are
// forgotten) when it is the first for its partition, when the upstream offset
// went back (MM2), when the downstream offset went back (or stayed while the
// upstream offset advanced) and [WithResetOnDownstreamRewind] is on, and for
// every sync added before [OffsetSyncStore.MarkReadToEnd] when
// [WithMustReadToEnd] is on. Otherwise the 64 slots are updated with MM2's
// algorithm: the new sync takes slot 0 and older syncs move to later slots
// only while the slots stay exponentially spaced.
func (s *OffsetSyncStore) Add(sync OffsetSync) {
	if sync.UpstreamOffset < 0 || sync.DownstreamOffset < 0 {
		s.rejected++
		return
	}
	s.added++
	s.nextID++
	ref := syncRef{up: sync.UpstreamOffset, down: sync.DownstreamOffset, id: s.nextID}
	key := tpKey{topic: sync.Topic, partition: sync.Partition}
	p := s.parts[key]
	if p == nil {
		p = new(partState)
		s.parts[key] = p
		s.reset(p, ref)
		return
	}
	newest := p.slots[0]
	if (!s.readToEnd && s.cfg.mustReadToEnd) ||
		ref.up < newest.up ||
		(s.cfg.resetOnDownstreamRewind && downstreamRewound(newest, ref)) {
		s.resets++
		s.reset(p, ref)
		return
	}
	all := p.all()
	update(&all, ref)
	s.setSlots(p, all[:])
	s.remember(p, ref)
}

// all returns the 64 slots of p.
func (p *partState) all() [SlotsPerPartition]syncRef {
	var a [SlotsPerPartition]syncRef
	n := copy(a[:], p.slots)
	for i := n; i < SlotsPerPartition; i++ {
		a[i] = p.slots[n-1]
	}
	return a
}

// setSlots stores slots (1 to 64 of them; missing ones repeat the last)
// in p without their tail of repeats, reusing p's array when it fits.
func (s *OffsetSyncStore) setSlots(p *partState, slots []syncRef) {
	n := len(slots)
	for n > 1 && slots[n-2].id == slots[n-1].id {
		n--
	}
	before := cap(p.slots)
	if n > before {
		p.slots = make([]syncRef, n, max(n, 2*before))
	}
	p.slots = p.slots[:n]
	copy(p.slots, slots[:n])
	s.slotCap += int64(cap(p.slots) - before)
}

// downstreamRewound reports whether sync next, which follows sync newest in
// the log and does not rewind upstream, proves that the target partition was
// truncated or recreated: its downstream offset is lower, or equal although
// it names a later upstream record (every record written after the one of
// newest lands at a higher downstream offset). An exact repeat of newest
// (a duplicated sync record) is not a rewind.
func downstreamRewound(newest, next syncRef) bool {
	return next.down < newest.down || (next.down == newest.down && next.up != newest.up)
}

// reset makes ref the only sync of p (MM2's clearSyncArray).
func (s *OffsetSyncStore) reset(p *partState, ref syncRef) {
	s.setSlots(p, []syncRef{ref})
	p.recent = p.recent[:0]
	p.head = 0
	s.remember(p, ref)
}

// remember appends ref to the recent-history ring of p.
func (s *OffsetSyncStore) remember(p *partState, ref syncRef) {
	n := s.cfg.recentHistory
	if n == 0 {
		return
	}
	e := syncPair{up: ref.up, down: ref.down}
	if len(p.recent) < n {
		before := cap(p.recent)
		p.recent = append(p.recent, e)
		s.recentCap += int64(cap(p.recent) - before)
		return
	}
	p.recent[p.head] = e
	p.head++
	if p.head == n {
		p.head = 0
	}
}

// update applies MM2's slot update (docs/mm2-compat.md §6.3 step 3) for a
// sync that is neither the first of its partition nor a rewind.
func update(syncs *[SlotsPerPartition]syncRef, ref syncRef) {
	orig := *syncs // copy: the algorithm reads the previous array while writing
	syncs[0] = ref
	replacement := ref
	r := 0 // cursor into orig
	for cur := 1; cur < SlotsPerPartition; cur++ {
		prev := cur - 1
		for {
			old := orig[r]
			recent := invariantB(syncs[prev], old, prev, cur)
			sepPrev := invariantC(syncs[prev], old, prev)
			sepNext := cur+1 == SlotsPerPartition || invariantC(old, syncs[cur+1], cur)
			dup := r+1 < SlotsPerPartition && orig[r+1].id == old.id
			promote := recent && sepPrev && sepNext
			if promote {
				replacement = old
			}
			skip := dup || !sepPrev
			if promote || skip {
				r++
			}
			if r >= cur || !skip {
				break
			}
		}
		if invariantB(syncs[prev], syncs[cur], prev, cur) {
			return
		}
		syncs[cur] = replacement
	}
}

// invariantB reports whether slot i (holding a) is not too far ahead of slot
// j (holding b): a.up <= b.up + 2^j - 2^i. An overflowing bound counts as
// satisfied, as in MM2 (the shifts and sums wrap exactly like Java longs).
func invariantB(a, b syncRef, i, j int) bool {
	bound := b.up + int64(1)<<uint(j) - int64(1)<<uint(i)
	return a.id == b.id || bound < 0 || a.up <= bound
}

// invariantC reports whether slot i (holding a) is separated from a later
// slot (holding b) by at least 2^max(i-2,0). An overflowing bound counts as
// violated, as in MM2.
func invariantC(a, b syncRef, i int) bool {
	bound := b.up + int64(1)<<uint(max(i-2, 0))
	return a.id == b.id || (bound >= 0 && a.up >= bound)
}

// MarkReadToEnd records that the initial read of the offset-syncs topic has
// reached the end offset observed at start (MM2: OffsetSyncStore.start
// returning). Before it, [OffsetSyncStore.Translate] answers nothing.
// Calling it again has no effect.
func (s *OffsetSyncStore) MarkReadToEnd() { s.readToEnd = true }

// ReadToEnd reports whether [OffsetSyncStore.MarkReadToEnd] was called.
func (s *OffsetSyncStore) ReadToEnd() bool { return s.readToEnd }

// Translate maps the committed offset upstreamOffset (the offset of the next
// record the group will read, a "group offset" G) of upstream topic-partition
// (topic, partition) to an offset of the corresponding target partition
// (MM2 3.5+ rule): with (u, d) the newest retained
// sync having u <= G, the answer is d when G == u and d+1 when G > u. It is
// never past the target position of the first record at or after G, nor past
// the target log end (at-least-once): a failed-over group may re-read
// records but never skips one.
//
// ok is false when there is no answer: the store is not read to end, the
// partition has no syncs, G is negative, or G is older than every retained
// sync (MM2 returns -1 there). ok=false means "emit no checkpoint"; a wrong
// answer is never given for inputs obeying MM2's OffsetSyncWriter rules (a
// sync on the first record, on every upstream gap or rewind and on every
// downstream rewind).
func (s *OffsetSyncStore) Translate(topic string, partition int32, upstreamOffset int64) (downstream int64, ok bool) {
	if !s.readToEnd || upstreamOffset < 0 {
		return 0, false
	}
	p := s.parts[tpKey{topic: topic, partition: partition}]
	if p == nil {
		return 0, false
	}
	up, down, found := p.lookup(upstreamOffset)
	if !found {
		return 0, false
	}
	if upstreamOffset == up {
		return down, true
	}
	if down == math.MaxInt64 {
		return 0, false // d+1 would overflow; no such offset exists
	}
	return down + 1, true
}

// lookup returns the newest retained sync with upstream offset <= g.
func (p *partState) lookup(g int64) (up, down int64, found bool) {
	if n := len(p.recent); n > 0 {
		// The ring holds every sync since its oldest entry, with upstream
		// offsets non-decreasing in arrival order (a rewind resets it), so
		// when its oldest entry qualifies its answer is the newest overall.
		at := func(i int) syncPair { return p.recent[(p.head+i)%n] }
		if at(0).up <= g {
			i := sort.Search(n, func(i int) bool { return at(i).up > g }) - 1
			e := at(i)
			return e.up, e.down, true
		}
	}
	for i := range p.slots {
		if p.slots[i].up <= g {
			return p.slots[i].up, p.slots[i].down, true
		}
	}
	return 0, 0, false
}

// Latest returns the newest sync added for upstream topic-partition
// (topic, partition), whether or not the store is read to end. ok is false
// when the partition has no syncs.
func (s *OffsetSyncStore) Latest(topic string, partition int32) (sync OffsetSync, ok bool) {
	p := s.parts[tpKey{topic: topic, partition: partition}]
	if p == nil {
		return OffsetSync{}, false
	}
	return OffsetSync{
		Topic:            topic,
		Partition:        partition,
		UpstreamOffset:   p.slots[0].up,
		DownstreamOffset: p.slots[0].down,
	}, true
}

// Partitions returns the number of upstream topic-partitions with at least
// one sync.
func (s *OffsetSyncStore) Partitions() int { return len(s.parts) }

// discard forgets every sync of upstream topic-partition k: they describe
// a previous target log (the checkpoint emitter's target-identity checks).
// The next sync of k starts its history again.
func (s *OffsetSyncStore) discard(k tpKey) {
	if p := s.parts[k]; p != nil {
		s.recentCap -= int64(cap(p.recent))
		s.slotCap -= int64(cap(p.slots))
		delete(s.parts, k)
		s.resets++
	}
}

// StoreStats is a snapshot of an [OffsetSyncStore]'s counters.
type StoreStats struct {
	// Partitions is the number of upstream topic-partitions with syncs.
	Partitions int
	// Added counts syncs accepted by Add; Rejected counts syncs ignored
	// because an offset was negative.
	Added, Rejected uint64
	// Resets counts history resets after the first sync of a partition
	// (upstream rewinds, downstream rewinds, must-read-to-end start-up).
	Resets uint64
	// Bytes approximates the memory held for sync history in bytes:
	// slots and recent-history rings; map overhead and topic-name strings
	// are not included.
	Bytes int64
}

// partBytes is the in-memory size of one partState without its slots and
// ring data: two slice headers and an int; a slot is 24 bytes, a ring
// entry 16.
const partBytes = 24 + 24 + 8

// Stats returns the store's counters; it costs O(1).
func (s *OffsetSyncStore) Stats() StoreStats {
	return StoreStats{
		Partitions: len(s.parts),
		Added:      s.added,
		Rejected:   s.rejected,
		Resets:     s.resets,
		Bytes:      int64(len(s.parts))*partBytes + s.slotCap*24 + s.recentCap*16,
	}
}

// cpKey identifies a checkpoint: group, downstream topic, partition. The
// names are indexes into checkpointState.names (12 bytes instead of 40 for
// two string headers: 80 000 group partitions held 13.6 MB of map entries
// before, issue 22).
type cpKey struct {
	group, topic uint32
	partition    int32
}

// checkpointState remembers the last emitted checkpoint per (group,
// downstream topic, partition), like MM2's in-memory CheckpointStore
// (docs/mm2-compat.md §6.2 step 2 and §6.4, KAFKA-15905), and decides whether
// a newly computed checkpoint must be written. It is pure and NOT safe for
// concurrent use. The zero value is not usable; use [newCheckpointState].
type checkpointState struct {
	// One entry per key holds the last checkpoint's offsets and metadata,
	// the target log it was written for and its exactness. An entry whose
	// has is false only records a target log or exactness set before any
	// checkpoint (never the case in the emitter, kept for the methods'
	// independent contracts). The entries of a group are a slice sorted
	// by topic index and partition but for a short tail (cpGroup),
	// indexed by the group's index: 48 bytes an entry, where a map of all
	// keys took about 107 (issue 22: 8.6 MB at 80 000 group partitions),
	// and a group's entries are found without a scan of every key (Group).
	groups map[uint32]cpGroup
	len    int // entries with has
	// names are the group and topic names the keys index, each once
	// (records read carry their own copies); index maps a name to its
	// index. Names are never dropped: there are as many as groups and
	// remote topics ever seen.
	names []string
	index map[string]uint32
	// targets interns the target logs of the entries (one per remote
	// topic, not one copy per group partition).
	targets map[targetID]*targetID
}

// cpVal is one key's state in checkpointState.
type cpVal struct {
	up, down int64
	md       *string   // the checkpoint's metadata, nil for "" (mdRef)
	id       *targetID // nil: unknown
	has      bool      // up, down and md hold a checkpoint
	exact    bool      // its translation header says "exact"
}

// cpEntry is one key's state in its group's sorted entries.
type cpEntry struct {
	topic     uint32
	partition int32
	v         cpVal
}

// mdRef returns a reference to commit metadata s: nil for "" (what
// consumers commit almost always), else old when it holds s already, else
// a new one. A reference is 8 bytes where a string is 16, in structures
// kept per group partition (issue 22).
func mdRef(old *string, s string) *string {
	switch {
	case s == "":
		return nil
	case old != nil && *old == s:
		return old
	}
	// Not &s: taking the parameter's address moves it to the heap on every
	// call, also for "" (an allocation per checkpoint accepted).
	r := new(string)
	*r = s
	return r
}

// mdOf returns the metadata r refers to ("" for nil).
func mdOf(r *string) string {
	if r == nil {
		return ""
	}
	return *r
}

// newCheckpointState returns an empty state.
func newCheckpointState() *checkpointState {
	return &checkpointState{groups: make(map[uint32]cpGroup), index: make(map[string]uint32), targets: make(map[targetID]*targetID)}
}

// cpGroup is one group's entries: es[:sorted] sorted by topic index and
// partition, es[sorted:] a short unsorted tail of keys added out of that
// order (merged into the sorted part once longer than about the square
// root of len(es)), and dead entries holding nothing (cpVal{}) left by
// remove until they are half of es. A sorted slice alone shifts its tail
// on every insert and delete: quadratic for a group with tens of
// thousands of partitions added out of order or forgotten one by one.
type cpGroup struct {
	es           []cpEntry
	sorted, dead int32
}

func cpEntryCmp(a, b cpEntry) int {
	if d := cmp.Compare(a.topic, b.topic); d != 0 {
		return d
	}
	return cmp.Compare(a.partition, b.partition)
}

// empty reports whether v holds nothing (put drops such an entry).
func (v cpVal) empty() bool { return !v.has && !v.exact && v.id == nil }

// find returns k's group, the index of k in its entries (dead or not)
// and whether k is there.
func (c *checkpointState) find(k cpKey) (cpGroup, int, bool) {
	g := c.groups[k.group]
	key := cpEntry{topic: k.topic, partition: k.partition}
	if i, ok := slices.BinarySearchFunc(g.es[:g.sorted], key, cpEntryCmp); ok {
		return g, i, true
	}
	for i := int(g.sorted); i < len(g.es); i++ {
		if g.es[i].topic == k.topic && g.es[i].partition == k.partition {
			return g, i, true
		}
	}
	return g, -1, false
}

// val returns the state stored under k and whether there is one.
func (c *checkpointState) val(k cpKey) (cpVal, bool) {
	g, i, ok := c.find(k)
	if !ok || g.es[i].v.empty() {
		return cpVal{}, false
	}
	return g.es[i].v, true
}

// store stores v (not empty) under k. A group's entries grow by a
// quarter, not by append's doubling: they are kept for as long as the
// group.
func (c *checkpointState) store(k cpKey, v cpVal) {
	g, i, ok := c.find(k)
	if ok {
		if g.es[i].v.empty() {
			g.dead--
		}
		g.es[i].v = v
		c.groups[k.group] = g
		return
	}
	e := cpEntry{topic: k.topic, partition: k.partition, v: v}
	if len(g.es) == cap(g.es) {
		grown := make([]cpEntry, len(g.es), len(g.es)+len(g.es)/4+2)
		copy(grown, g.es)
		g.es = grown
	}
	inOrder := int(g.sorted) == len(g.es) && (g.sorted == 0 || cpEntryCmp(g.es[g.sorted-1], e) < 0)
	g.es = append(g.es, e)
	if inOrder {
		g.sorted++
	} else if tail := len(g.es) - int(g.sorted); tail*tail > len(g.es) && tail > 8 {
		g.merge()
	}
	c.groups[k.group] = g
}

// merge sorts g's tail into its sorted part.
func (g *cpGroup) merge() {
	tail := slices.Clone(g.es[g.sorted:])
	slices.SortFunc(tail, cpEntryCmp)
	i, j := int(g.sorted)-1, len(tail)-1
	for w := len(g.es) - 1; j >= 0; w-- {
		if i >= 0 && cpEntryCmp(g.es[i], tail[j]) > 0 {
			g.es[w] = g.es[i]
			i--
		} else {
			g.es[w] = tail[j]
			j--
		}
	}
	g.sorted = int32(len(g.es))
}

// remove drops the state stored under k, if any.
func (c *checkpointState) remove(k cpKey) {
	g, i, ok := c.find(k)
	if !ok || g.es[i].v.empty() {
		return
	}
	g.es[i].v = cpVal{}
	g.dead++
	switch {
	case int(g.dead) == len(g.es):
		delete(c.groups, k.group)
		return
	case int(g.dead)*2 > len(g.es):
		g.merge()
		g.es = slices.DeleteFunc(g.es, func(e cpEntry) bool { return e.v.empty() })
		g.sorted, g.dead = int32(len(g.es)), 0
		if cap(g.es) > 16 && len(g.es) < cap(g.es)/2 {
			g.es = slices.Clone(g.es) // a group that lost most of its partitions
		}
	}
	c.groups[k.group] = g
}

// all yields every key and its state, in no particular order. The state
// must not change while it runs.
func (c *checkpointState) all(yield func(cpKey, cpVal) bool) {
	for gi, g := range c.groups {
		for _, e := range g.es {
			if e.v.empty() {
				continue
			}
			if !yield(cpKey{group: gi, topic: e.topic, partition: e.partition}, e.v) {
				return
			}
		}
	}
}

// key returns the key of (group, topic, partition), adding the names.
func (c *checkpointState) key(group, topic string, partition int32) cpKey {
	return cpKey{group: c.intern(group), topic: c.intern(topic), partition: partition}
}

// lookup returns the key of (group, topic, partition) and false when a
// name was never seen (the state holds nothing for it).
func (c *checkpointState) lookup(group, topic string, partition int32) (cpKey, bool) {
	g, ok := c.index[group]
	if !ok {
		return cpKey{}, false
	}
	t, ok := c.index[topic]
	if !ok {
		return cpKey{}, false
	}
	return cpKey{group: g, topic: t, partition: partition}, true
}

// get returns the state of (group, topic, partition).
func (c *checkpointState) get(group, topic string, partition int32) cpVal {
	if k, ok := c.lookup(group, topic, partition); ok {
		v, _ := c.val(k)
		return v
	}
	return cpVal{}
}

// intern returns the index of name, adding it (a copy the state owns,
// not a slice of a record read) when new.
func (c *checkpointState) intern(name string) uint32 {
	if i, ok := c.index[name]; ok {
		return i
	}
	name = strings.Clone(name)
	i := uint32(len(c.names))
	c.names = append(c.names, name)
	c.index[name] = i
	return i
}

// put stores v under k, dropping an entry that holds nothing.
func (c *checkpointState) put(k cpKey, old, v cpVal) {
	switch {
	case old.has && !v.has:
		c.len--
	case !old.has && v.has:
		c.len++
	}
	if v.empty() {
		c.remove(k)
		return
	}
	c.store(k, v)
}

// SetExact records whether the last checkpoint of group and downstream
// topic-partition (topic, partition) was written with a translation header
// saying "exact" (read from its record, or written so by the emitter).
func (c *checkpointState) SetExact(group, topic string, partition int32, exact bool) {
	k := c.key(group, topic, partition)
	old, _ := c.val(k)
	v := old
	v.exact = exact
	c.put(k, old, v)
}

// NextExact is [checkpointState.Next] for a checkpoint whose translation
// is exact or not, plus [checkpointState.Upgrade] for an exact one: it
// reports whether cp should be written, and then records its exactness.
func (c *checkpointState) NextExact(cp Checkpoint, exact bool) bool {
	if c.Next(cp) {
		c.SetExact(cp.Group, cp.Topic, cp.Partition, exact)
		return true
	}
	return exact && c.Upgrade(cp)
}

// Exact reports whether the last checkpoint of group and downstream
// topic-partition (topic, partition) was written as an exact translation.
func (c *checkpointState) Exact(group, topic string, partition int32) bool {
	return c.get(group, topic, partition).exact
}

// Upgrade decides whether cp, translated exactly, should be written again
// although [checkpointState.Next] refused it: when its offsets equal the
// last checkpoint's and that one was written as a safe (not exact)
// translation. The record then only changes its translation header to
// "exact" (a consumer failing over from the target alone learns it re-reads
// nothing); MM2's checkpointIsMoreRecent has no such case, and MM2's
// readers see the same offsets twice. When Upgrade returns true it has
// recorded the last checkpoint as exact.
func (c *checkpointState) Upgrade(cp Checkpoint) bool {
	k, ok := c.lookup(cp.Group, cp.Topic, cp.Partition)
	if !ok {
		return false
	}
	v, ok := c.val(k)
	if !ok || !v.has || v.up != cp.UpstreamOffset || v.down != cp.DownstreamOffset || v.exact {
		return false
	}
	v.exact = true
	c.store(k, v)
	return true
}

// SetTarget records the target log the last checkpoint of group and
// downstream topic-partition (topic, partition) was written for (read from
// its record headers, or the emitter's view when it wrote it); a zero id
// means unknown.
func (c *checkpointState) SetTarget(group, topic string, partition int32, id targetID) {
	k := c.key(group, topic, partition)
	old, _ := c.val(k)
	v := old
	v.id = nil
	if id != (targetID{}) {
		if v.id = c.targets[id]; v.id == nil {
			v.id = &id
			c.targets[id] = v.id
		}
	}
	c.put(k, old, v)
}

// Target returns the target log the last checkpoint of the key was written
// for (zero when unknown).
func (c *checkpointState) Target(group, topic string, partition int32) targetID {
	if id := c.get(group, topic, partition).id; id != nil {
		return *id
	}
	return targetID{}
}

// Load records a checkpoint read from <source>.checkpoints.internal at start
// (partition 0, from the beginning to the end offset; docs/mm2-compat.md
// §13(a)). Call it in log order: the last record per key wins, also when it
// is lower. A checkpoint with a negative upstream or downstream offset is
// skipped (Java never writes one; docs/mm2-compat.md §2.5) and Load returns
// false; otherwise it returns true.
func (c *checkpointState) Load(cp Checkpoint) bool {
	if cp.UpstreamOffset < 0 || cp.DownstreamOffset < 0 {
		return false
	}
	c.set(cp)
	return true
}

// set records cp as the last checkpoint of its key, keeping the key's
// target log and exactness.
func (c *checkpointState) set(cp Checkpoint) {
	k := c.key(cp.Group, cp.Topic, cp.Partition)
	old, _ := c.val(k)
	v := old
	v.up, v.down, v.md, v.has = cp.UpstreamOffset, cp.DownstreamOffset, mdRef(old.md, cp.Metadata), true
	c.put(k, old, v)
}

// checkpoint rebuilds the Checkpoint of k from its state.
func (c *checkpointState) checkpoint(k cpKey, v cpVal) Checkpoint {
	return Checkpoint{Group: c.names[k.group], Topic: c.names[k.topic], Partition: k.partition,
		UpstreamOffset: v.up, DownstreamOffset: v.down, Metadata: mdOf(v.md)}
}

// Last returns the last checkpoint loaded or emitted for group and
// downstream topic-partition (topic, partition).
func (c *checkpointState) Last(group, topic string, partition int32) (Checkpoint, bool) {
	k, ok := c.lookup(group, topic, partition)
	if !ok {
		return Checkpoint{}, false
	}
	v, ok := c.val(k)
	if !ok || !v.has {
		return Checkpoint{}, false
	}
	return c.checkpoint(k, v), true
}

// Next decides whether the freshly translated checkpoint cp (cp.Topic is the
// downstream topic) should be written (docs/mm2-compat.md §6.4 steps 4-6, MM2
// checkpointIsMoreRecent): never when cp.DownstreamOffset or
// cp.UpstreamOffset is negative; otherwise when no checkpoint is known for
// its key, when cp.UpstreamOffset is lower than the last one (the group was
// reset upstream), or when cp.DownstreamOffset is greater than the last one.
// An unchanged or lower downstream offset is not re-emitted, so emitted
// checkpoints are monotonic except after an upstream rewind. When Next
// returns true it has recorded cp as the last checkpoint of its key.
func (c *checkpointState) Next(cp Checkpoint) bool {
	if cp.UpstreamOffset < 0 || cp.DownstreamOffset < 0 {
		return false
	}
	v := c.get(cp.Group, cp.Topic, cp.Partition)
	if v.has && cp.UpstreamOffset >= v.up && cp.DownstreamOffset <= v.down {
		return false
	}
	c.set(cp)
	return true
}

// Forget drops the checkpoint known for group and downstream topic-partition
// (topic, partition), for example after the target partition was recreated;
// the next [checkpointState.Next] for that key then emits. MM2 has no
// equivalent.
func (c *checkpointState) Forget(group, topic string, partition int32) {
	k, ok := c.lookup(group, topic, partition)
	if !ok {
		return
	}
	if v, ok := c.val(k); ok {
		c.put(k, v, cpVal{})
	}
}

// Group returns the known checkpoints of group sorted by topic and
// partition (the input of group-offset sync, docs/mm2-compat.md §6.5), or nil.
func (c *checkpointState) Group(group string) []Checkpoint {
	g, ok := c.index[group]
	if !ok {
		return nil
	}
	var out []Checkpoint
	for _, e := range c.groups[g].es {
		if e.v.has {
			out = append(out, c.checkpoint(cpKey{group: g, topic: e.topic, partition: e.partition}, e.v))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Groups returns the sorted ids of the groups with at least one known
// checkpoint.
func (c *checkpointState) Groups() []string {
	var out []string
	for g, cg := range c.groups {
		if slices.ContainsFunc(cg.es, func(e cpEntry) bool { return e.v.has }) {
			out = append(out, c.names[g])
		}
	}
	sort.Strings(out)
	return out
}

// Len returns the number of known checkpoints.
func (c *checkpointState) Len() int { return c.len }

// newestWithin returns, among the retained syncs of upstream
// topic-partition (topic, partition) with upstream offset <= maxUp and
// downstream offset in [lo, hi), the one with the highest downstream
// offset. It scans the slots and the recent history (at most 64 +
// [MaxRecentHistory] entries); the exact translation uses it only where the
// offset runs have a hole.
func (s *OffsetSyncStore) newestWithin(topic string, partition int32, maxUp, lo, hi int64) (up, down int64, ok bool) {
	p := s.parts[tpKey{topic: topic, partition: partition}]
	if p == nil || lo >= hi {
		return 0, 0, false
	}
	down = -1
	consider := func(u, d int64) {
		if u <= maxUp && d >= lo && d < hi && d > down {
			up, down, ok = u, d, true
		}
	}
	for i := range p.slots {
		if i > 0 && p.slots[i].id == p.slots[i-1].id {
			continue
		}
		consider(p.slots[i].up, p.slots[i].down)
	}
	for _, e := range p.recent {
		consider(e.up, e.down)
	}
	return up, down, ok
}
