package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/cpwatch"
)

// This file holds the checkpoint emission: the emitter's state of the
// source groups and the incremental update of it, one emission at a time.
//
// An emission does work in proportion to what changed since the previous
// one, not to what exists (issue 22). Its inputs are:
//   - the committed offsets of every known group, fetched in one batched
//     OffsetFetch per group coordinator (no Kafka API says which groups
//     committed): a group partition whose offset and metadata are
//     unchanged costs a map lookup;
//   - the source partitions whose offset syncs, runs or their tags changed
//     (Emitter.changed, filled by the syncs tailer): only their group
//     partitions are translated again;
//   - the group partitions left pending by an earlier emission (a log end
//     unknown, a failed write or listing);
//   - the target's identity and log ends, listed for the remote topics of
//     the group partitions to check, and every targetSweepInterval for every
//     remote topic (a sweep), which finds the remote topics re-created or
//     truncated, and the target rebuilt, under idle partitions.
//
// A group partition is translated when its source offset changed or its
// source partition's translation state did; it is checked against the
// target (checkTarget) and queued when its offset changed, its translation
// changed, its syncs are tagged for another target cluster, it is pending,
// or the listing shows its remote partition changed (a new topic ID, a
// lower log end, another cluster). Everything else is left as it is, and
// so is the status of a group none of whose partitions changed. With
// Emitter.full every emission recomputes everything, the way the emitter
// worked before issue 22: the tests compare the two
// (incremental_test.go).

// targetSweepInterval is how often an emission lists every remote topic's
// identity and log ends, and every source topic's ID, to find changes under
// idle partitions; never more often than the emission interval.
const targetSweepInterval = time.Minute

// groupEntry is the Run goroutine's state of one source group.
type groupEntry struct {
	name    string
	parts   partList // by source topic and partition
	skipped []string // committed topics that are not replicated
	fetched time.Time
	err     string // last fetch error
	active  bool   // active on the target at the last sync
	syncErr string // last group-level sync failure
	cpErr   string // why the last write of a checkpoint of the group failed; "" once one succeeded

	// Group offset sync's change detection (groupsync.go).
	tstate      string // target group state at the last sync round
	tlisted     bool   // listed on the target at the last sync round
	tknown      bool   // tstate and tlisted are known
	nTarget     int    // partitions with seenTarget >= 0
	syncDirty   bool   // a translation, source offset or checkpoint moved since the last plan
	syncPending bool   // the last plan left something to retry

	// stamp is the emission that last saw the group (listing).
	stamp   uint32
	status  GroupStatus // cached, valid unless touched
	touched bool        // its status must be recomputed
}

type cpKeyTP struct {
	remote    string
	partition int32
}

// partEntry is one replicated partition the group committed on the source.
// There is one per group partition (80 000 at 6 000 partitions and 2 000
// groups, issue 22): keep it small (96 bytes, a size class of Go's
// allocator: 104 with the metadata as a string took 112).
type partEntry struct {
	g         *groupEntry
	*topicRef // source and remote topic names, shared by the topic's group partitions
	partition int32
	exact     bool  // translated is exact
	waiting   bool  // counted in Emitter.waiting
	force     bool  // checked even if its translation is unchanged
	kind      uint8 // with reread, how a non-exact translation was found (info)
	srcOffset int64
	md        *string // srcOffset's commit metadata, nil for "" (mdRef)
	// translated is the translation of srcOffset, -1 none.
	translated   int64
	reread       int64
	targetOffset int64 // target group offset last seen/committed, -1 unknown
	seenTarget   int64 // target group offset as last fetched or committed, -1 none
	// why holds the reasons, the zero handle when all are empty (an
	// exact, synced group partition's): read and set them with notes and
	// setNotes. Canonical (unique.Make): the reasons come from a handful
	// of values, so thousands of group partitions waiting for the same
	// thing share one copy (issue 22: one each was 3.8 MB at 80 000).
	why unique.Handle[partNotes]

	epoch        uint32 // emission whose fetch last saw it
	tmark, cmark uint32 // emission that queued it for translation, for checking
}

// partNotes are a group partition's reasons.
type partNotes struct {
	reason      string // why there is no translation
	exactReason string // why the translation is not exact
	syncReason  string // why group offset sync did not commit the translation
}

// notes returns pe's reasons.
func (pe *partEntry) notes() partNotes {
	if pe.why == (unique.Handle[partNotes]{}) {
		return partNotes{}
	}
	return pe.why.Value()
}

// setNotes sets pe's reasons.
func (pe *partEntry) setNotes(n partNotes) {
	if n == (partNotes{}) {
		pe.why = unique.Handle[partNotes]{}
		return
	}
	if pe.notes() != n {
		pe.why = unique.Make(n)
	}
}

// setSyncReason sets pe's sync reason alone.
func (pe *partEntry) setSyncReason(r string) {
	n := pe.notes()
	n.syncReason = r
	pe.setNotes(n)
}

// kinds are the values of partEntry.kind: the index of a non-exact
// translation's [TranslationInfo] kind ("" none, [KindRun], [KindSync]).
var kinds = [...]string{"", KindRun, KindSync}

// info returns how pe's translation was found (its [TranslationHeader]).
func (pe *partEntry) info() TranslationInfo {
	if pe.exact {
		return TranslationInfo{Exact: true}
	}
	return TranslationInfo{Kind: kinds[pe.kind], Reread: pe.reread}
}

// setInfo records info (of a translation that is exact or not, as pe.exact).
func (pe *partEntry) setInfo(info TranslationInfo) {
	pe.kind, pe.reread = 0, info.Reread
	if i := slices.Index(kinds[:], info.Kind); i > 0 {
		pe.kind = uint8(i)
	}
}

// topicRef is a replicated source topic and its remote topic: one per
// topic, pointed to by each of its group partitions (issue 22: 80 000
// group partitions carried two string headers each).
type topicRef struct {
	topic, remote string
}

func (pe *partEntry) key() tpKey { return tpKey{topic: pe.topic, partition: pe.partition} }

func (pe *partEntry) cpKey() cpKeyTP { return cpKeyTP{remote: pe.remote, partition: pe.partition} }

// workCounters count the per-group-partition work of the emitter: the
// tests check that an idle emission does none. Atomic: tests read them
// while Run works.
type workCounters struct {
	translations atomic.Int64 // Translator calls
	checks       atomic.Int64 // group partitions checked against the target view
	statuses     atomic.Int64 // group statuses recomputed
	written      atomic.Int64 // checkpoint records handed to the producer
	planned      atomic.Int64 // groups planned by group offset sync
	emissions    atomic.Int64
	syncs        atomic.Int64
}

// emitIO is the I/O one emission needs; run implements it with the
// emitter's clients, tests with an in-memory model.
type emitIO interface {
	// listGroups returns the sorted source consumer groups passing the
	// group filter.
	listGroups(ctx context.Context) ([]string, error)
	// fetchOffsets returns the committed offsets of groups (one batched
	// OffsetFetch per coordinator); errs holds the groups whose fetch
	// failed as a whole.
	fetchOffsets(ctx context.Context, groups []string) (resp []kmsg.OffsetFetchResponseGroup, errs map[string]error)
	// topicIDs lists the current IDs of source topics.
	topicIDs(ctx context.Context, topics []string) (map[string][16]byte, error)
	// listTarget lists the target's cluster ID, and the IDs and log ends
	// of the remote topics.
	listTarget(ctx context.Context, topics []string) (*targetView, error)
	// createTopic creates the checkpoints topic (again: the target was
	// rebuilt).
	createTopic(ctx context.Context) error
	// write writes the checkpoints, forgets those that failed in e.cps and
	// returns them.
	write(ctx context.Context, ts time.Time, cps []Checkpoint) []Checkpoint
}

// emit runs one checkpoint emission with the run's clients.
func (r *run) emit(ctx context.Context) bool {
	r.checkCheckpointsTopic(ctx)
	return r.e.emit(ctx, r)
}

// emit runs one checkpoint emission (docs/mm2-compat.md §6.4) on the
// changes since the previous one (see the top of this file). It reports
// false when listing the groups or fetching some group's offsets failed.
func (e *Emitter) emit(ctx context.Context, io emitIO) bool {
	c := e.cfg
	ts := time.Now()
	e.stamp++
	st := e.stamp
	e.work.emissions.Add(1)
	ok := true
	sweep := e.full || e.forceSweep || e.nextSweep.IsZero() || !ts.Before(e.nextSweep)
	e.forceSweep = false
	if !e.listedOnce || c.RefreshGroupsInterval > 0 {
		groups, err := io.listGroups(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			e.log.Warn("listing source groups", "cluster", c.SourceAlias, "err", err)
			e.fail("list_groups", err)
			if !e.listedOnce {
				return false
			}
			ok = false
		} else {
			e.setKnownGroups(groups, st)
		}
	}
	fetched, ferrs := io.fetchOffsets(ctx, e.knownGroups)
	if ctx.Err() != nil {
		return false
	}
	clear(e.replicated) // the topic filter may change its mind (topics skipped at run time)

	var translate, check []*partEntry
	queueT := func(pe *partEntry, force bool) {
		if force {
			pe.force = true
		}
		if pe.tmark != st {
			pe.tmark = st
			translate = append(translate, pe)
		}
	}
	queueC := func(pe *partEntry) {
		if pe.cmark != st {
			pe.cmark = st
			check = append(check, pe)
		}
	}

	// The fetched offsets: new, moved and removed group partitions.
	fetchErrs := 0
	seen := make(map[string]bool, len(fetched))
	for i := range fetched {
		rg := &fetched[i]
		seen[rg.Group] = true
		if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
			fetchErrs++
			e.groupFetchFailed(rg.Group, err)
			continue
		}
		e.absorbGroup(rg, ts, st, queueT)
	}
	for _, name := range e.knownGroups {
		if seen[name] {
			continue
		}
		err := ferrs[name]
		if err == nil {
			err = errors.New("no response for group")
		}
		fetchErrs++
		e.groupFetchFailed(name, err)
	}
	if fetchErrs > 0 {
		err := fmt.Errorf("fetching offsets of %d of %d groups failed", fetchErrs, len(e.knownGroups))
		e.log.Warn("fetching source group offsets", "cluster", c.SourceAlias, "err", err)
		e.fail("fetch_offsets", err)
		ok = false
	}

	// Source partitions whose translation state changed.
	e.storeMu.Lock()
	changed := e.changed
	e.changed = map[tpKey]struct{}{}
	clear(e.retagged)
	e.storeMu.Unlock()
	for k := range changed {
		for _, pe := range e.byPart[k] {
			queueT(pe, false)
		}
	}
	if e.full {
		for _, g := range e.groups {
			for _, pe := range g.parts {
				queueT(pe, true)
			}
		}
	}

	// Source topic IDs (offset runs only): of the topics to translate, and
	// of every topic at a sweep, where a re-created topic's partitions are
	// translated again.
	if c.OffsetRunsTopic != "" {
		e.refreshSourceIDs(ctx, io, sweep, translate, queueT)
	}

	// Translate.
	e.storeMu.Lock()
	for _, pe := range translate {
		before := pe.translation()
		e.translate(pe, e.srcIDs[pe.topic])
		moved := pe.translation() != before
		if moved {
			pe.setSyncReason("") // decided for the old translation
			pe.g.syncDirty = true
			e.touch(pe.g)
		}
		if pe.force || moved || e.tagStale(pe) {
			queueC(pe)
		}
		pe.force = false
	}
	e.storeMu.Unlock()
	for pe := range e.pending {
		queueC(pe)
	}
	clear(e.pending)
	if e.full {
		for _, g := range e.groups {
			for _, pe := range g.parts {
				queueC(pe)
			}
		}
	}
	if len(check) == 0 && !sweep {
		e.publish()
		return ok
	}

	// The target's identity and log ends, listed after the translations:
	// checkpoints are never past the target log end, and syncs of a
	// previous target log are discarded (checkTarget).
	view, err := e.listFor(ctx, io, sweep, check)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("listing the target's remote topics; no checkpoints this round", "cluster", c.TargetAlias, "err", err)
			e.fail("list_target", err)
		}
		for _, pe := range check {
			e.pending[pe] = struct{}{}
		}
		e.publish()
		return false
	}
	if sweep {
		e.nextSweep = ts.Add(max(e.sweepEvery, c.Interval))
	}
	if view == nil { // nothing to list
		e.publish()
		return ok
	}
	if e.dstCluster != "" && view.cluster != "" && view.cluster != e.dstCluster {
		e.log.Warn("target cluster ID changed (target rebuilt under the same alias): checkpoints topic created again, stale offset syncs discarded",
			"cluster", c.TargetAlias, "was", e.dstCluster, "now", view.cluster)
		if err := io.createTopic(ctx); err != nil {
			e.log.Warn("creating checkpoints topic", "err", err)
		}
		for _, g := range e.groups {
			for _, pe := range g.parts {
				queueC(pe)
			}
		}
	}
	// Remote partitions that changed under idle group partitions.
	e.viewChanges(view, queueC)

	e.storeMu.Lock()
	stale := e.checkTarget(view, check)
	e.discardStale(stale)
	e.markStale(stale)
	e.storeMu.Unlock()
	e.writeChecked(ctx, io, ts, view, stale, check)
	e.publish()
	return ok
}

// writeChecked queues and writes the checkpoints of the checked group
// partitions in checkpoint order (group, remote topic, partition),
// writeChunk group partitions at a time: an emission holds one chunk's
// checkpoints and records, not those of every group partition (issue 22:
// the first emission at 80 000 group partitions held 6 MB of checkpoints
// besides the records of the chunk in flight, at the start-up peak of the
// live heap). As before chunks, the failed checkpoints of a chunk are
// pending (wrote) and the chunks after it are written; a stop leaves the
// group partitions not yet queued pending, for the next run's emission.
func (e *Emitter) writeChecked(ctx context.Context, io emitIO, ts time.Time, view *targetView, stale staleness, check []*partEntry) {
	slices.SortFunc(check, func(a, b *partEntry) int {
		return cmp.Or(strings.Compare(a.g.name, b.g.name), strings.Compare(a.remote, b.remote), cmp.Compare(a.partition, b.partition))
	})
	per := max(writeChunk, 1)
	var bad map[string]bool // groups with a checkpoint failed in an earlier chunk
	for i := 0; i < len(check); i += per {
		if ctx.Err() != nil {
			for _, pe := range check[i:] {
				e.pending[pe] = struct{}{}
			}
			return
		}
		var out []Checkpoint
		e.storeMu.Lock()
		e.queue(view, stale, check[i:min(i+per, len(check))], &out)
		e.storeMu.Unlock()
		e.work.written.Add(int64(len(out)))
		bad = e.wrote(out, io.write(ctx, ts, out), bad)
	}
}

// wrote records the outcome of writing out, of which failed failed: the
// failed group partitions are checked again at the next emission, and
// their groups' statuses say the write failed until one succeeds. bad
// holds the groups whose checkpoints failed in an earlier chunk of the
// same emission (nil: none), whose reason a later chunk's success must
// not clear (a group's partitions may span chunks); wrote returns it with
// this write's failed groups added.
func (e *Emitter) wrote(out, failed []Checkpoint, bad map[string]bool) map[string]bool {
	if len(out) == 0 {
		return bad
	}
	why := "failed"
	switch {
	case e.cpTopicErr != nil: // the topic is missing: why it is not created again says more
		why = e.cpTopicErr.Error()
	case e.writeErr != nil:
		why = e.writeErr.Error()
	}
	if bad == nil && len(failed) > 0 {
		bad = map[string]bool{}
	}
	for _, cp := range failed {
		bad[cp.Group] = true
		if pe := e.entryOf(cp.Group, cp.Topic, cp.Partition); pe != nil {
			e.pending[pe] = struct{}{}
			pe.g.cpErr = why
			e.touch(pe.g)
		}
	}
	for _, cp := range out {
		if g := e.groups[cp.Group]; g != nil && !bad[cp.Group] && g.cpErr != "" {
			g.cpErr = ""
			e.touch(g)
		}
	}
	return bad
}

// translation is the part of a partEntry a translation sets.
type translation struct {
	translated       int64
	exact            bool
	reason, exactWhy string
	kind             uint8
	reread           int64
}

func (pe *partEntry) translation() translation {
	n := pe.notes()
	return translation{pe.translated, pe.exact, n.reason, n.exactReason, pe.kind, pe.reread}
}

// cpCompare orders checkpoints by group, remote topic and partition: the
// order an emission writes them in (writeChecked sorts its group
// partitions the same way).
func cpCompare(a, b Checkpoint) int {
	return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// setKnownGroups records a successful listing: groups gone from it (deleted
// on the source, or filtered out) are forgotten.
func (e *Emitter) setKnownGroups(groups []string, st uint32) {
	e.knownGroups, e.listedOnce = groups, true
	for _, name := range groups {
		if g := e.groups[name]; g != nil {
			g.stamp = st
		}
	}
	for _, g := range e.groups {
		if g.stamp != st {
			e.removeGroup(g)
		}
	}
}

// groupFetchFailed records a failed fetch of a group's offsets; its state
// is kept.
func (e *Emitter) groupFetchFailed(name string, err error) {
	if g := e.groups[name]; g != nil && g.err != err.Error() {
		g.err = err.Error()
		e.touch(g)
	}
}

// absorbGroup compares one group's fetched offsets with its state: new
// and moved partitions are queued for translation (and checking), removed
// ones dropped, a group without any commit forgotten. An unchanged group
// costs a lookup in its sorted list per partition (one comparison when the
// response lists them in the list's order).
func (e *Emitter) absorbGroup(rg *kmsg.OffsetFetchResponseGroup, ts time.Time, st uint32, queueT func(*partEntry, bool)) {
	g := e.groups[rg.Group]
	if g != nil {
		g.fetched = ts
		if g.err != "" {
			g.err = ""
			e.touch(g)
		}
	}
	commits, seen := 0, 0
	var skipped []string
	var added partList                // new partitions, merged into g.parts after the loop (which looks up the old ones)
	var addedIdx map[tpKey]*partEntry // added by key, once it is long (find)
	next := 0                         // where the next partition of the response is likely to be in g.parts
	for ti := range rg.Topics {
		rt := &rg.Topics[ti]
		replicated := e.isReplicated(rt.Topic)
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if rp.ErrorCode != 0 || rp.Offset < 0 {
				continue // no commit, or a null offset entry (MM2 skips both)
			}
			commits++
			if g == nil {
				g = &groupEntry{name: rg.Group, fetched: ts, stamp: st}
				e.groups[rg.Group] = g
				e.names = nil
				e.touch(g)
			}
			if !replicated {
				if len(skipped) == 0 || skipped[len(skipped)-1] != rt.Topic {
					skipped = append(skipped, rt.Topic)
				}
				continue
			}
			md := ""
			if rp.Metadata != nil {
				md = *rp.Metadata
			}
			k := tpKey{topic: rt.Topic, partition: rp.Partition}
			var pe *partEntry
			pe, next = g.parts.getAt(k, next)
			if pe != nil {
				next++
			} else {
				pe = added.find(k, &addedIdx)
			}
			// dup: listed twice by this response (not expected of a
			// broker): the last offset wins, the partition counts once.
			dup := pe != nil && pe.epoch == st
			switch {
			case pe == nil:
				pe = e.addPart(g, rt.Topic, rp.Partition)
				added = append(added, pe)
				if addedIdx != nil {
					addedIdx[k] = pe
				}
			case pe.srcOffset == rp.Offset && mdOf(pe.md) == md:
				if !dup {
					pe.epoch = st
					seen++
				}
				continue
			}
			pe.srcOffset, pe.md, pe.epoch = rp.Offset, mdRef(pe.md, md), st
			if !dup {
				seen++
			}
			g.syncDirty = true
			e.touch(g)
			queueT(pe, true)
		}
	}
	if g == nil {
		return
	}
	if commits == 0 {
		e.removeGroup(g) // nothing was added: every new partition is a commit
		return
	}
	if len(added) > 0 {
		g.parts = append(g.parts, added...)
		slices.SortFunc(g.parts, func(a, b *partEntry) int { return cmpKey(a.key(), b.key()) })
	}
	if seen != len(g.parts) {
		kept := g.parts[:0]
		for _, pe := range g.parts {
			if pe.epoch != st {
				e.removePart(pe)
				continue
			}
			kept = append(kept, pe)
		}
		clear(g.parts[len(kept):])
		g.parts = kept
		g.syncDirty = true
		e.touch(g)
	}
	sort.Strings(skipped)
	skipped = compactStrings(skipped)
	if !equalStrings(skipped, g.skipped) {
		g.skipped = skipped
		e.touch(g)
	}
}

func compactStrings(s []string) []string {
	if len(s) < 2 {
		return s
	}
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// isReplicated returns the topic filter's verdict on a source topic,
// asked once per topic and emission (it is a regular expression, and the
// engine's skips it consults change at run time).
func (e *Emitter) isReplicated(topic string) bool {
	ok, known := e.replicated[topic]
	if !known {
		ok = e.cfg.TopicFilter(topic)
		if ok {
			// A policy that names two source topics alike (many to one)
			// gives them one remote topic, whose offsets translate for
			// only one of them (their group partitions would share
			// checkpoint keys). The one with group partitions keeps it
			// until it has none at the start of an emission (one judged
			// replicated in an emission keeps it to its end, so that one
			// emission never gives it to both) or is not replicated any
			// more (discovery refused it after this emitter saw it).
			remote := e.remoteName(topic)
			if other, taken := e.sourceOf[remote]; taken && other != topic && (e.remoteRefs[remote] > 0 || e.replicated[other]) && e.isReplicated(other) {
				ok = false
			}
		}
		e.replicated[string([]byte(topic))] = ok // the response's string stays unreferenced
	}
	return ok
}

// remoteName returns the remote topic of source topic topic, without
// interning it.
func (e *Emitter) remoteName(topic string) string {
	if remote, ok := e.remotes[topic]; ok {
		return remote
	}
	return e.remoteTopic(topic)
}

// addPart adds a group partition: indexed by source partition, counted
// under its remote topic. Topic names are interned (one string per topic).
func (e *Emitter) addPart(g *groupEntry, topic string, partition int32) *partEntry {
	ref := e.topicRefs[topic]
	if ref == nil {
		remote, ok := e.remotes[topic]
		if !ok {
			topic = string([]byte(topic))
			remote = e.remoteTopic(topic)
			e.remotes[topic] = remote
			e.sourceOf[remote] = topic
		} else if s := e.sourceOf[remote]; s == topic {
			topic = s // interned
		} else {
			topic = string([]byte(topic))
		}
		ref = &topicRef{topic: topic, remote: remote}
		e.topicRefs[topic] = ref
	}
	e.sourceOf[ref.remote] = ref.topic // the source topic the remote topic's group partitions are of now (isReplicated)
	pe := &partEntry{g: g, topicRef: ref, partition: partition, translated: -1, targetOffset: -1, seenTarget: -1}
	k := pe.key()
	e.byPart[k] = append(e.byPart[k], pe)
	e.remoteRefs[ref.remote]++
	return pe
}

// partList is a group's partitions sorted by source topic and partition:
// a lookup is a binary search. A pointer per group partition, where a map
// took about 56 bytes (issue 22: 4.5 MB at 80 000 group partitions).
type partList []*partEntry

func cmpKey(a, b tpKey) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return cmp.Compare(a.partition, b.partition)
}

// get returns the partition of key k, nil when none.
func (l partList) get(k tpKey) *partEntry {
	pe, _ := l.getAt(k, -1)
	return pe
}

// getAt is get trying index hint first (a response listing a group's
// partitions in the same order as the list finds each at the index after
// the previous one); it returns the index found, or where k would go.
func (l partList) getAt(k tpKey, hint int) (*partEntry, int) {
	if hint >= 0 && hint < len(l) && l[hint].partition == k.partition && l[hint].topic == k.topic {
		return l[hint], hint
	}
	i, ok := slices.BinarySearchFunc(l, k, func(pe *partEntry, k tpKey) int { return cmpKey(pe.key(), k) })
	if !ok {
		return nil, i
	}
	return l[i], i
}

// find returns the partition of key k in l, an unsorted list (absorbGroup's
// new partitions), nil when none: a scan while l is short, else a lookup in
// *idx, built at the first call that needs it (the caller adds to it).
func (l partList) find(k tpKey, idx *map[tpKey]*partEntry) *partEntry {
	if *idx == nil && len(l) <= 64 {
		for i := len(l) - 1; i >= 0; i-- {
			if pe := l[i]; pe.partition == k.partition && pe.topic == k.topic {
				return pe
			}
		}
		return nil
	}
	if *idx == nil {
		*idx = make(map[tpKey]*partEntry, 2*len(l))
		for _, pe := range l {
			(*idx)[pe.key()] = pe
		}
	}
	return (*idx)[k]
}

// removePart drops a group partition from the indexes (not from its
// group's list).
func (e *Emitter) removePart(pe *partEntry) {
	k := pe.key()
	if l := e.byPart[k]; len(l) > 0 {
		if i := slices.Index(l, pe); i >= 0 {
			l[i] = l[len(l)-1]
			l[len(l)-1] = nil
			l = l[:len(l)-1]
		}
		if len(l) == 0 {
			delete(e.byPart, k)
		} else {
			e.byPart[k] = l
		}
	}
	if e.remoteRefs[pe.remote]--; e.remoteRefs[pe.remote] <= 0 {
		delete(e.remoteRefs, pe.remote)
		// No group partition left to show it missing: a remote topic
		// that stays gone is not remembered for ever (a later group
		// partition of it learns it again from the next listing).
		delete(e.remoteGone, pe.remote)
	}
	delete(e.pending, pe)
	if pe.waiting {
		e.waiting--
	}
	if pe.seenTarget >= 0 {
		pe.g.nTarget--
	}
}

// removeGroup forgets a group (deleted on the source, filtered out, or
// without commits). Its checkpoints stay known.
func (e *Emitter) removeGroup(g *groupEntry) {
	for _, pe := range g.parts {
		e.removePart(pe)
	}
	delete(e.groups, g.name)
	e.names = nil
	e.statusDirty = true
}

// entryOf returns the group partition of a checkpoint's key, nil when gone.
func (e *Emitter) entryOf(group, remote string, partition int32) *partEntry {
	g := e.groups[group]
	src, ok := e.sourceOf[remote]
	if g == nil || !ok {
		return nil
	}
	return g.parts.get(tpKey{topic: src, partition: partition})
}

// touch marks a group's status for recomputation at the next publish.
func (e *Emitter) touch(g *groupEntry) {
	g.touched = true
	e.statusDirty = true
}

// setWaiting keeps Emitter.waiting: the group partitions waiting for
// their first offset sync (or run, or a sync of the current target log).
func (e *Emitter) setWaiting(pe *partEntry) {
	r := pe.notes().reason
	w := r == ReasonNoOffsetSync || r == ReasonNewIncarnation || r == ReasonStaleTarget
	if w != pe.waiting {
		pe.waiting = w
		if w {
			e.waiting++
		} else {
			e.waiting--
		}
	}
}

// tagStale reports whether the newest syncs or runs of pe's source
// partition are recorded for another target cluster or remote topic ID
// than those of the last listing: checkTarget decides on them. Callers
// hold storeMu.
func (e *Emitter) tagStale(pe *partEntry) bool {
	cur := targetID{cluster: e.dstCluster, topic: e.remoteIDs[pe.remote]}
	k := pe.key()
	return e.syncTags[k].differs(cur) || e.runTags[k].differs(cur)
}

// refreshSourceIDs lists the IDs of the source topics to translate (every
// committed topic at a sweep); the partitions of a topic whose ID changed
// are translated again. A failed listing keeps the IDs known.
func (e *Emitter) refreshSourceIDs(ctx context.Context, io emitIO, sweep bool, translate []*partEntry, queueT func(*partEntry, bool)) {
	seen := map[string]bool{}
	var topics []string
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			topics = append(topics, t)
		}
	}
	if sweep {
		for k := range e.byPart {
			add(k.topic)
		}
	} else {
		for _, pe := range translate {
			add(pe.topic)
		}
	}
	if len(topics) == 0 {
		return
	}
	sort.Strings(topics)
	ids, err := io.topicIDs(ctx, topics)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("listing source topic IDs", "cluster", e.cfg.SourceAlias, "err", err)
		}
		return
	}
	var moved map[string]bool
	for t, id := range ids {
		if old, ok := e.srcIDs[t]; ok && old != id {
			if moved == nil {
				moved = map[string]bool{}
			}
			moved[t] = true
		}
		e.srcIDs[t] = id
	}
	if moved == nil {
		return
	}
	for k, m := range e.byPart {
		if moved[k.topic] {
			for _, pe := range m {
				queueT(pe, true)
			}
		}
	}
}

// listFor lists the target view an emission needs: every remote topic at
// a sweep, else those of the group partitions to check. It returns nil
// when there is nothing to list.
func (e *Emitter) listFor(ctx context.Context, io emitIO, sweep bool, check []*partEntry) (*targetView, error) {
	var topics []string
	if sweep {
		topics = make([]string, 0, len(e.remoteRefs))
		for t := range e.remoteRefs {
			topics = append(topics, t)
		}
	} else {
		seen := map[string]bool{}
		for _, pe := range check {
			if !seen[pe.remote] {
				seen[pe.remote] = true
				topics = append(topics, pe.remote)
			}
		}
	}
	if len(topics) == 0 {
		return nil, nil
	}
	sort.Strings(topics)
	v, err := io.listTarget(ctx, topics)
	if err != nil {
		return nil, err
	}
	if !sweep && e.dstCluster != "" && v.cluster != "" && v.cluster != e.dstCluster && len(topics) < len(e.remoteRefs) {
		return e.listFor(ctx, io, true, nil) // the target was rebuilt: every remote topic
	}
	return v, nil
}

// viewChanges queues for checking the group partitions of remote
// partitions the view shows changed since their last listing: another
// topic ID (re-created), a lower log end (truncated), and records the
// view's log ends.
func (e *Emitter) viewChanges(v *targetView, queueC func(*partEntry)) {
	// Their groups are planned again by the next group offset sync too:
	// a target group may now be past the log end.
	all := func(remote string, partition int32) {
		src, ok := e.sourceOf[remote]
		if !ok {
			return
		}
		for k, m := range e.byPart {
			if k.topic == src && (partition < 0 || k.partition == partition) {
				for _, pe := range m {
					queueC(pe)
					pe.g.syncDirty = true
					e.touch(pe.g)
				}
			}
		}
	}
	// A remote topic missing from the listing keeps its syncs and
	// checkpoints (a metadata blip must not drop them), but its group
	// partitions' statuses say so while it is missing: a consumer failing
	// over has nothing to read (they said SafeToSwitch).
	for remote := range v.missing {
		if !e.remoteGone[remote] {
			e.remoteGone[remote] = true
			all(remote, -1)
		}
	}
	for remote := range v.ids {
		if e.remoteGone[remote] {
			delete(e.remoteGone, remote)
			all(remote, -1)
		}
	}
	for remote, id := range v.ids {
		// A zero ID (a broker that does not know topic IDs) is unknown,
		// and a retired one a listing behind unless the previous listing
		// showed it too (checkTarget): neither is a change.
		behind := e.retired[remote][id] && e.candidate[remote] != id
		if old, ok := e.remoteIDs[remote]; ok && old != id && id != ([16]byte{}) && !behind {
			all(remote, -1)
		}
	}
	for remote, ps := range v.ends {
		for p, o := range ps {
			if p < 0 || o.Err != nil {
				continue
			}
			k := cpKeyTP{remote: remote, partition: p}
			if old, ok := e.remoteEnds[k]; ok && o.Offset < old {
				all(remote, p)
			}
			e.remoteEnds[k] = o.Offset
		}
	}
}

// markStale clears the translation of every group partition of the stale,
// held and waiting source partitions (callers hold storeMu); a waiting one
// is translated again next emission.
func (e *Emitter) markStale(st staleness) {
	keys := make([]tpKey, 0, len(st.parts)+len(st.held)+len(st.wait))
	for k := range st.parts {
		keys = append(keys, k)
	}
	for k := range st.held {
		keys = append(keys, k) // in no other set (checkTarget)
	}
	for k := range st.wait {
		keys = append(keys, k) // in no other set
		e.changed[k] = struct{}{}
	}
	for _, k := range keys {
		for _, pe := range e.byPart[k] {
			e.untranslate(pe)
		}
	}
}

// untranslate clears pe's translation, held or stale ([ReasonStaleTarget])
// until the next emission translates it again, and marks its group for
// the next sync round and publish. Callers hold storeMu.
func (e *Emitter) untranslate(pe *partEntry) {
	pe.translated, pe.exact = -1, false
	pe.setNotes(partNotes{reason: ReasonStaleTarget})
	e.setWaiting(pe)
	pe.g.syncDirty = true
	e.touch(pe.g)
}

// queue appends to out the checkpoints of the checked group partitions
// after the target checks: per translated partition whose syncs are not
// stale, when more recent than the last checkpoint (MM2's
// checkpointIsMoreRecent; a stale last checkpoint was forgotten, so a lower
// one is written). A partition whose remote log end is unknown this round
// stays pending. A partition whose history restarted after checkTarget
// judged it (retagged: the syncs tailer adds under storeMu between the
// chunks of writeChecked) is held as checkTarget holds one: its
// translation may be of the previous log, and translatedFrom would record
// the new tags' topic ID on it. Callers hold storeMu.
func (e *Emitter) queue(v *targetView, st staleness, check []*partEntry, out *[]Checkpoint) {
	for _, pe := range check {
		if _, stale := st.parts[pe.key()]; stale {
			continue
		}
		if _, restarted := e.retagged[pe.key()]; restarted {
			e.hold(pe)
			continue
		}
		if pe.translated < 0 {
			continue
		}
		end, _, ok := v.end(pe.remote, pe.partition)
		if !ok {
			e.pending[pe] = struct{}{} // the remote partition's end is unknown this round
			continue
		}
		if pe.translated > end {
			continue
		}
		cp := Checkpoint{Group: pe.g.name, Topic: pe.remote, Partition: pe.partition,
			UpstreamOffset: pe.srcOffset, DownstreamOffset: pe.translated, Metadata: mdOf(pe.md)}
		if e.cps.NextExact(cp, pe.exact) {
			e.cps.SetTarget(cp.Group, pe.remote, pe.partition, e.translatedFrom(v, pe))
			*out = append(*out, cp)
			pe.setSyncReason("") // decided for the old checkpoint
			pe.g.syncDirty = true
			e.touch(pe.g)
		}
	}
}

// hold does for one group partition what checkTarget and markStale do
// for a held source partition (callers hold storeMu): its last
// checkpoint is forgotten, so that group offset sync does not fall back
// on one of another log, and its translation cleared; its source
// partition is in Emitter.changed (tagged), so the next emission
// translates it again and checks it.
func (e *Emitter) hold(pe *partEntry) {
	e.cps.Forget(pe.g.name, pe.remote, pe.partition)
	e.untranslate(pe)
}

// translatedFrom returns the target log pe's translation is known to come
// from, which its checkpoint records ([TargetTopicIDHeader],
// [TranslatedFromHeader]): the listed cluster, and the listed remote topic
// ID when the partition's newest offset sync and run record that same ID
// (checkTarget dropped or held the history when they record another, and
// tagged held a translation made before the first record recording an
// ID). Syncs recording none (Apache MM2's replication, an
// older release's) may be of a log the topic had before it was re-created
// (at a first listing nothing shows the change), so their checkpoints
// record no topic ID: checkTarget may rewrite them lower, and group offset
// sync does not fall back on them (checkedLast). Callers hold storeMu.
func (e *Emitter) translatedFrom(v *targetView, pe *partEntry) targetID {
	id := v.id(pe.remote)
	k := pe.key()
	st, hasSyncs := e.syncTags[k]
	rt, hasRuns := e.runTags[k]
	if (!hasSyncs && !hasRuns) || (hasSyncs && st.topic != id.topic) || (hasRuns && rt.topic != id.topic) {
		id.topic = [16]byte{}
	}
	return id
}

// translate computes pe's translation (docs/mm2-compat.md §6.4 steps 2-3);
// queue decides on its checkpoint after the target checks. Callers hold
// storeMu. topicID is the source topic's ID (zero: unknown).
func (e *Emitter) translate(pe *partEntry, topicID [16]byte) {
	e.work.translations.Add(1)
	tr := Translator{Syncs: e.store, Runs: e.runs}.Translate(pe.topic, pe.partition, topicID, pe.srcOffset)
	pe.translated, pe.exact = -1, false
	info := TranslationInfo{}
	n := pe.notes()
	n.reason, n.exactReason = "", ""
	if !tr.OK {
		n.reason = tr.Reason
		if e.discarded[pe.key()] {
			n.reason = ReasonStaleTarget
		}
	} else {
		n.exactReason = tr.Reason
		pe.translated, pe.exact, info = tr.Offset, tr.Exact, tr.info()
	}
	pe.setInfo(info)
	pe.setNotes(n)
	e.setWaiting(pe)
}

// best returns the best known no-skip target offset for pe's current
// source offset: its translation, or the last checkpoint of the partition
// when that one is for an offset not after the current one and higher
// (translations of older offsets never pass the current position) and
// records the remote topic's ID (checkedLast).
func (e *Emitter) best(group string, pe *partEntry) (int64, bool) {
	last, ok := e.checkedLast(group, pe)
	if !ok {
		return bestOffset(pe.srcOffset, pe.translated, nil)
	}
	return bestOffset(pe.srcOffset, pe.translated, &last)
}

// checkedLast returns the last checkpoint of group on pe's remote
// partition when it records a remote topic ID: the emitter translated it
// from syncs and runs recording the listed ID (translatedFrom), or loaded
// it with the ID it was written for, which checkTarget compared with the
// current one. One recording none (MM2's, an older release's, one
// translated from syncs recording none, or written while the target
// showed no topic IDs)
// may be of a log the remote topic had before it was re-created, within
// the new log's end: group offset sync and the statuses do not fall back
// on it (committing it would skip records for good), at the cost of
// re-reads when the translation is lower.
func (e *Emitter) checkedLast(group string, pe *partEntry) (Checkpoint, bool) {
	last, ok := e.cps.Last(group, pe.remote, pe.partition)
	if !ok || e.cps.Target(group, pe.remote, pe.partition).topic == ([16]byte{}) {
		return Checkpoint{}, false
	}
	return last, true
}

// listGroups returns the sorted consumer groups on the source passing the
// group filter. Connect and share groups are not consumer groups.
func (r *run) listGroups(ctx context.Context) ([]string, error) {
	e := r.e
	lctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	listed, err := r.src.ListGroups(lctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(listed))
	for name, g := range listed {
		if g.GroupType == "share" || g.GroupType == "streams" || (g.ProtocolType != "consumer" && g.ProtocolType != "") {
			continue
		}
		if e.cfg.GroupFilter(name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// fetchOffsets fetches the source groups' committed offsets.
func (r *run) fetchOffsets(ctx context.Context, groups []string) ([]kmsg.OffsetFetchResponseGroup, map[string]error) {
	return r.e.fetchGroupOffsets(ctx, r.srcCl, groups)
}

// fetchGroupOffsets fetches the committed offsets of groups with cl: all
// of them in one OffsetFetch request (v8+, KIP-709), which the client
// splits into one request per group coordinator; with FetchBatch, in
// requests of at most FetchBatch groups, 4 at a time. A broker too old
// for batched requests gets one request per group (the client's
// fallback). Groups whose request failed are in errs; group-level errors
// are in each response group's ErrorCode.
func (e *Emitter) fetchGroupOffsets(ctx context.Context, cl *kgo.Client, groups []string) ([]kmsg.OffsetFetchResponseGroup, map[string]error) {
	if len(groups) == 0 {
		return nil, nil
	}
	batch := len(groups)
	if e.cfg.FetchBatch > 0 {
		batch = e.cfg.FetchBatch
	}
	var mu sync.Mutex
	var out []kmsg.OffsetFetchResponseGroup
	errs := map[string]error{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := 0; i < len(groups); i += batch {
		part := groups[i:min(i+batch, len(groups))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
			defer cancel()
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Groups = make([]kmsg.OffsetFetchRequestGroup, len(part))
			for j, g := range part {
				rg := kmsg.NewOffsetFetchRequestGroup()
				rg.Group = g
				req.Groups[j] = rg
			}
			shards := cl.RequestSharded(fctx, req)
			mu.Lock()
			defer mu.Unlock()
			for _, sh := range shards {
				if sh.Err != nil {
					if sreq, ok := sh.Req.(*kmsg.OffsetFetchRequest); ok {
						for _, g := range sreq.Groups {
							errs[g.Group] = sh.Err
						}
						if sreq.Group != "" && len(sreq.Groups) == 0 {
							errs[sreq.Group] = sh.Err
						}
					}
					continue
				}
				resp := sh.Resp.(*kmsg.OffsetFetchResponse)
				out = append(out, resp.Groups...)
			}
		})
	}
	wg.Wait()
	return out, errs
}

// topicIDs lists the current IDs of source topics, after the offsets were
// fetched: a re-created topic's new offsets are never translated with the
// old topic's offset runs. The IDs come from a Metadata request of their
// own, not from franz-go's metadata cache (kadm's listings answer from it
// for up to the client's MetadataMinAge, 1 s in a flow): a group that
// committed on the new topic within that second had its commit translated
// with the old topic's runs, into the old log's copies (a race run in CI:
// 5 committed for source offset 5, the old log's copy of offset 5, where
// the new log's copies began at 100).
func (r *run) topicIDs(ctx context.Context, topics []string) (map[string][16]byte, error) {
	lctx, cancel := context.WithTimeout(ctx, r.e.cfg.AdminTimeout)
	defer cancel()
	out := make(map[string][16]byte, len(topics))
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(lctx, r.srcCl) // kgo answers a Metadata request from the brokers, never its cache
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 {
			out[*t.Topic] = t.TopicID
		}
	}
	return out, nil
}

// checkpointRecord is the one place a checkpoint record is built: key,
// value and the headers recording the target log it describes and how its
// translation was found.
func (e *Emitter) checkpointRecord(cp Checkpoint, ts time.Time) (*kgo.Record, error) {
	k, err := cp.Key()
	if err != nil {
		return nil, err
	}
	v, err := cp.Value()
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: e.cpTopic, Partition: 0, Key: k, Value: v, Timestamp: ts,
		Headers: checkpointHeaders(e.cps.Target(cp.Group, cp.Topic, cp.Partition), e.translationHeader(cp))}, nil
}

// translationHeader returns cp's [TranslationHeader]: how the translation
// it carries was found (the group's partition entry translated it).
func (e *Emitter) translationHeader(cp Checkpoint) kgo.RecordHeader {
	info := TranslationInfo{Kind: KindSync, Reread: -1}
	if pe := e.entryOf(cp.Group, cp.Topic, cp.Partition); pe != nil && pe.translated == cp.DownstreamOffset {
		info = pe.info()
	} else if last, ok := e.cps.Last(cp.Group, cp.Topic, cp.Partition); ok && last == cp && e.cps.Exact(cp.Group, cp.Topic, cp.Partition) {
		info = TranslationInfo{Exact: true} // the last checkpoint written again as it was (rewriteAll)
	}
	return kgo.RecordHeader{Key: TranslationHeader, Value: []byte(info.String())}
}

// writeChunk is the most checkpoint records one emission has in flight:
// write waits for a chunk's acknowledgements before it builds the next.
// The first emission at thousands of groups writes a checkpoint per group
// partition (80 000 at 2 000 groups x 40 partitions); building them all
// before the first was acknowledged put tens of MB of records and headers
// into the start-up peak of the live heap (issue 22). A chunk costs one
// round trip to the target, about 20 for that first emission (the
// latency reported to OnLatency includes those of the chunks before). A
// variable for tests.
var writeChunk = 4096

// write produces the checkpoints of one emission to partition 0, in
// chunks of writeChunk, and waits for their acknowledgement. Checkpoints
// that failed are forgotten, so that the next emission writes them again,
// and returned.
//
// failed and firstErr are shared with the produce callbacks, which kgo
// runs on its own goroutines: every access holds mu. write waits for every
// callback (pending), not only for Flush: kgo calls the callback of a
// record it refuses before buffering it (over the client's
// MaxBufferedBytes, say) on a goroutine of its own, possibly after Flush
// returned.
func (r *run) write(ctx context.Context, ts time.Time, cps []Checkpoint) []Checkpoint {
	e := r.e
	if len(cps) == 0 {
		return nil
	}
	if e.cpTopicErr != nil {
		// The topic is missing and not created again, or refused (its
		// records expire): nothing is written until checkCheckpointsTopic
		// finds it usable, and rewrites everything.
		e.forgetUnwritten(cps)
		return append([]Checkpoint(nil), cps...)
	}
	var mu sync.Mutex
	var failed []Checkpoint
	var firstErr error
	var encErr error // the first checkpoint that could not be encoded
	var pending sync.WaitGroup
	drain := func() {
		if err := r.dstCl.Flush(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("flushing checkpoints", "err", err)
		}
		waitDone(ctx, &pending)
	}
	for i, cp := range cps {
		if i > 0 && i%writeChunk == 0 {
			drain()
			if ctx.Err() != nil {
				// Stopping: drain did not wait for the chunk's callbacks,
				// and pending must not be added to before its Wait
				// returned. The rest are failed, and forgotten below.
				mu.Lock()
				failed = append(failed, cps[i:]...)
				mu.Unlock()
				break
			}
		}
		rec, err := e.checkpointRecord(cp, ts)
		if err != nil { // an over-long group id or metadata: cannot be written
			e.log.Warn("checkpoint not encodable", "group", cp.Group, "topic", cp.Topic, "partition", cp.Partition, "err", err)
			mu.Lock()
			failed = append(failed, cp)
			mu.Unlock()
			if encErr == nil {
				encErr = fmt.Errorf("checkpoint of %s-%d not encodable: %w", cp.Topic, cp.Partition, err)
			}
			continue
		}
		pending.Add(1)
		r.dstCl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			defer pending.Done()
			if err != nil {
				mu.Lock()
				failed = append(failed, cp)
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			if e.cfg.OnLatency != nil {
				e.cfg.OnLatency(time.Since(ts))
			}
		})
	}
	drain()
	mu.Lock()
	defer mu.Unlock()
	if firstErr == nil {
		// Nothing the target refused: the failed group's status says why
		// it has no checkpoint (it said "failed" alone).
		firstErr = encErr
	}
	e.forgetUnwritten(failed)
	bad := make(map[Checkpoint]bool, len(failed))
	for _, cp := range failed {
		bad[cp] = true
	}
	for _, cp := range cps {
		if !bad[cp] {
			e.cpAt[cp.Group] = ts
		}
	}
	e.writeErr = firstErr
	if firstErr != nil && ctx.Err() == nil {
		e.log.Warn("writing checkpoints", "topic", e.cpTopic, "failed", len(failed), "of", len(cps), "err", firstErr)
		e.fail("write_checkpoints", firstErr)
		if errors.Is(firstErr, kerr.UnknownTopicOrPartition) || errors.Is(firstErr, kerr.UnknownTopicID) {
			r.cpLost = true // deleted, or re-created: restored before the next emission (cptopic.go)
		}
	}
	if e.cfg.OnCheckpoints != nil {
		e.cfg.OnCheckpoints(len(cps) - len(failed))
	}
	if cpwatch.Active(ctx) {
		var ws []cpwatch.Written
		for _, cp := range cps {
			if !bad[cp] {
				ws = append(ws, cpwatch.Written{Group: cp.Group, Topic: cp.Topic, Partition: cp.Partition, Offset: cp.DownstreamOffset})
			}
		}
		cpwatch.Call(ctx, r.dst, ws)
	}
	return append([]Checkpoint(nil), failed...)
}

// forgetUnwritten forgets the checkpoints of cps that were not written
// (their keys' last checkpoints, recorded when queued), so that the next
// emission writes them again.
func (e *Emitter) forgetUnwritten(cps []Checkpoint) {
	for _, cp := range cps {
		if last, ok := e.cps.Last(cp.Group, cp.Topic, cp.Partition); ok && last == cp {
			e.cps.Forget(cp.Group, cp.Topic, cp.Partition)
		}
	}
}

// waitDone waits for wg, or until ctx is done (at shutdown the callbacks
// still to come run later, under their own lock).
func waitDone(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// publish recomputes the status of the groups touched since the last
// publish and rebuilds the snapshot when anything changed. Run goroutine.
func (e *Emitter) publish() {
	if !e.statusDirty && !e.full {
		e.mu.Lock()
		for i := range e.status {
			if g := e.groups[e.status[i].Group]; g != nil {
				e.status[i].Updated = g.fetched
			}
		}
		e.mu.Unlock()
		return
	}
	if e.names != nil && len(e.status) == len(e.names) {
		// The same groups as the snapshot (names is reset when a group
		// comes or goes, and the snapshot was built from it): replaced
		// group by group, so that a group's old partition statuses are
		// garbage once its new ones exist, instead of both generations
		// of every group being live at once (issue 22: 9 MB each at 80 000
		// group partitions, on the first sync round after the first
		// emission). Under mu throughout, so that Status never mixes two
		// publishes (SafeToSwitch of one group next to another's of a
		// later round): it waits for this loop instead, 75 ms when all
		// of 2 000 groups of 40 partitions changed, far less otherwise.
		e.mu.Lock()
		for i, n := range e.names {
			e.status[i] = e.currentStatus(e.groups[n])
		}
		e.mu.Unlock()
		e.statusDirty = false
		return
	}
	if e.names == nil {
		e.names = make([]string, 0, len(e.groups))
		for n := range e.groups {
			e.names = append(e.names, n)
		}
		sort.Strings(e.names)
	}
	out := make([]GroupStatus, 0, len(e.names))
	for _, n := range e.names {
		out = append(out, e.currentStatus(e.groups[n]))
	}
	e.statusDirty = false
	e.mu.Lock()
	e.status = out
	e.mu.Unlock()
}

// currentStatus returns g's status for the snapshot, computed again when
// g was touched since.
func (e *Emitter) currentStatus(g *groupEntry) GroupStatus {
	if g.touched || e.full {
		g.status = e.groupStatus(g)
		g.touched = false
	}
	gs := g.status
	gs.Updated = g.fetched
	return gs
}

// sortedParts returns a group's partitions sorted by remote topic and
// partition.
func sortedParts(g *groupEntry) []*partEntry {
	ps := make([]*partEntry, 0, len(g.parts))
	for _, pe := range g.parts {
		ps = append(ps, pe)
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].remote != ps[j].remote {
			return ps[i].remote < ps[j].remote
		}
		return ps[i].partition < ps[j].partition
	})
	return ps
}

func (e *Emitter) groupStatus(g *groupEntry) GroupStatus {
	e.work.statuses.Add(1)
	gs := GroupStatus{Group: g.name, Updated: g.fetched, LastCheckpoint: e.cpAt[g.name], SourceUnreachable: g.err != ""}
	cpExact := 0
	parts := sortedParts(g)
	if len(parts) > 0 {
		gs.Partitions = make([]PartitionStatus, 0, len(parts)) // exact: statuses are kept for every group
	}
	translated, done, exact := 0, 0, 0
	firstReason, exactReason := "", ""
	for _, pe := range parts {
		n := pe.notes()
		ps := PartitionStatus{Topic: pe.topic, RemoteTopic: pe.remote, Partition: pe.partition,
			SourceOffset: pe.srcOffset, Translated: -1, Checkpointed: -1, TargetOffset: pe.targetOffset, Reason: n.reason}
		if last, ok := e.cps.Last(g.name, pe.remote, pe.partition); ok {
			ps.Checkpointed = last.DownstreamOffset
			ps.CheckpointExact = pe.exact && last.UpstreamOffset == pe.srcOffset && last.DownstreamOffset == pe.translated &&
				e.cps.Exact(g.name, pe.remote, pe.partition)
			if ps.CheckpointExact {
				cpExact++
			}
		}
		gone := e.remoteGone[pe.remote]
		if b, ok := e.best(g.name, pe); ok {
			ps.Translated = b
			translated++
			if gone {
				ps.Reason = ReasonRemoteTopicMissing
			}
			have := ps.Checkpointed
			if e.cfg.SyncGroupOffsets {
				have = pe.targetOffset
				switch {
				case g.active:
					ps.Reason = ReasonActiveOnTarget
				case n.syncReason != "":
					ps.Reason = n.syncReason
				case have != b:
					ps.Reason = ReasonNotSyncedYet
				}
			}
			ps.Exact = pe.exact && b == pe.translated
			if !ps.Exact && ps.Reason == "" {
				ps.Reason = n.exactReason
				if ps.Reason == "" {
					ps.Reason = ReasonNotExact // an earlier checkpoint beats the translation
				}
				if exactReason == "" {
					exactReason = ps.Reason
				}
			}
			if have == b && !gone {
				done++
				if ps.Exact {
					exact++
				}
			}
		}
		if ps.Reason != "" && firstReason == "" && ps.Reason != ReasonNotExact && ps.Reason != ReasonBeyondReplicated {
			firstReason = ps.Reason
		}
		gs.Partitions = append(gs.Partitions, ps)
	}
	switch {
	case len(parts) == 0:
		gs.State, gs.Reason = StateSkipped, ReasonTopicNotReplicated
	case e.cfg.SyncGroupOffsets && g.active:
		gs.State, gs.Reason = StateSkipped, ReasonActiveOnTarget
	case translated == 0:
		gs.State, gs.Reason = StateSkipped, firstReason
	case e.cfg.SyncGroupOffsets && done == len(parts):
		gs.State = StateSynced
	default:
		gs.State, gs.Reason = StateCheckpointed, firstReason
	}
	if gs.Reason == "" && g.syncErr != "" {
		gs.Reason = g.syncErr
	}
	if gs.Reason == "" && g.err != "" {
		gs.Reason = "fetching source offsets: " + g.err
	}
	if gs.Reason == "" && g.cpErr != "" {
		gs.Reason = "writing checkpoints to " + e.cpTopic + ": " + g.cpErr
	}
	gs.SafeToSwitch = len(parts) > 0 && exact == len(parts) && g.err == "" && !(e.cfg.SyncGroupOffsets && g.active)
	gs.CheckpointExact = len(parts) > 0 && cpExact == len(parts)
	if gs.Reason == "" && !gs.SafeToSwitch {
		gs.Reason = exactReason
	}
	return gs
}
