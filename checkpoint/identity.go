package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Record headers in which kmirror records which target log a record
// describes. MM2's readers (MirrorClient, RemoteClusterUtils, the
// checkpoint task) read only the key and value of checkpoints and offset
// syncs, so the headers leave the MM2 formats unchanged.
const (
	// TargetClusterHeader is the record header kmirror puts on the offset
	// syncs and offset runs it writes and on its checkpoints: the cluster
	// ID of the target cluster the described downstream offsets belong to.
	// The checkpoint emitter ignores syncs, runs and checkpoints recorded
	// for another cluster ID than the target's current one (a target
	// rebuilt empty under the same alias).
	TargetClusterHeader = "kmirror-target-cluster"
	// TargetTopicIDHeader is the record header kmirror puts on its offset
	// syncs and offset runs: the topic ID of the remote topic the
	// described downstream offsets belong to, as its raw 16 bytes (not the
	// base64 text kafka-topics.sh prints; a value of another length is
	// ignored). The checkpoint emitter discards the syncs and runs
	// recorded for an older ID than the remote topic's current one (it was
	// deleted and re-created) while keeping those of the current one (the
	// re-created topic's refill). Checkpoints carry it too, with the value
	// of [TranslatedFromHeader] when they carry that one (earlier releases
	// put the listed ID on every checkpoint); the emitter reads
	// [TranslatedFromHeader] on checkpoints, never this header.
	TargetTopicIDHeader = "kmirror-target-topic-id"
	// TranslatedFromHeader is the record header kmirror puts on a
	// checkpoint whose translation was made while the source partition's
	// newest offset sync and run recorded the listed remote topic ID (a
	// change of log restarts their history, so the translation is of that
	// log): that ID, as its raw 16 bytes (a value of another length is
	// ignored), the same value as [TargetTopicIDHeader] then. kmirror
	// releases without this header recorded the listed topic ID on every
	// checkpoint, also on one translated from syncs recording none, which
	// may be of a log the topic had before it was re-created. Loading
	// checkpoints, the emitter takes a checkpoint's topic ID from this
	// header only and treats one without it as MM2's: its group offset
	// sync does not fall back on it, and it is rewritten lower when it is
	// above what the translation of a later source offset allows.
	TranslatedFromHeader = "kmirror-translated-from"
)

// Reasons of the target-identity checks. Both appear in the
// [PartitionStatus.Reason] of the group's partition they concern (in
// [GroupStatus.Partitions]).
const (
	// ReasonStaleTarget: the offset syncs (or offset runs) of the source
	// partition describe a previous target log: the target cluster was
	// rebuilt, or the remote topic re-created or truncated. They were
	// discarded; the partition is translated again from the first offset
	// sync of the current target log.
	ReasonStaleTarget = "offset syncs describe a previous target log"
	// ReasonTargetPastLogEnd: the target group's committed offset is past
	// the remote partition's log end (the target was rebuilt, or the
	// remote topic re-created or truncated). Group offset sync reports it
	// and does not move the offset: a consumer of the group resumes at the
	// log end by its auto.offset.reset policy or by an operator's reset.
	ReasonTargetPastLogEnd = "target group offset past target log end"
	// ReasonTargetUnchecked: group offset sync found the remote topic
	// under another topic ID than the last successful target listing of a
	// checkpoint emission showed (the topic was re-created since that
	// listing; a listing that failed does not count). The offset is not
	// committed this round: a translation of the previous log could skip
	// records of the new one, and a target group offset is never moved
	// back. The next emission lists the target and translates the
	// partition again.
	ReasonTargetUnchecked = "remote topic changed since its translation was checked"
)

// targetID identifies a target log: the target cluster and the remote
// topic's ID. Empty fields are unknown.
type targetID struct {
	cluster string
	topic   [16]byte
}

// differs reports whether a and b provably name different target logs:
// both know the cluster and the clusters differ, or both know the topic
// and the topics differ.
func (a targetID) differs(b targetID) bool {
	if a.cluster != "" && b.cluster != "" && a.cluster != b.cluster {
		return true
	}
	var zero [16]byte
	return a.topic != zero && b.topic != zero && a.topic != b.topic
}

// headers returns the record headers recording id (none for unknown
// fields).
func (id targetID) headers() []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	if id.cluster != "" {
		hs = append(hs, kgo.RecordHeader{Key: TargetClusterHeader, Value: []byte(id.cluster)})
	}
	if id.topic != ([16]byte{}) {
		hs = append(hs, kgo.RecordHeader{Key: TargetTopicIDHeader, Value: append([]byte(nil), id.topic[:]...)})
	}
	return hs
}

// checkpointHeaders returns a checkpoint record's headers: id's (the
// target cluster, the remote topic ID), [TranslatedFromHeader] when id has
// a topic ID (a checkpoint records one only when its translation was made
// from syncs and runs recording it: translatedFrom), and translation.
func checkpointHeaders(id targetID, translation kgo.RecordHeader) []kgo.RecordHeader {
	hs := id.headers()
	if id.topic != ([16]byte{}) {
		hs = append(hs, kgo.RecordHeader{Key: TranslatedFromHeader, Value: append([]byte(nil), id.topic[:]...)})
	}
	return append(hs, translation)
}

// checkpointTargetOf reads the target identity recorded on a checkpoint
// record: its cluster, and the remote topic ID its translation was made
// from ([TranslatedFromHeader]; zero without it, whatever
// [TargetTopicIDHeader] says).
func checkpointTargetOf(hs []kgo.RecordHeader) targetID {
	id := targetIDOf(hs)
	id.topic = [16]byte{}
	for _, h := range hs {
		if h.Key == TranslatedFromHeader && len(h.Value) == 16 {
			copy(id.topic[:], h.Value)
		}
	}
	return id
}

// RecordedTarget reads the target identity kmirror records on an offset
// sync or offset run (hs are its record headers): the target cluster ID
// ([TargetClusterHeader], empty when absent) and the remote topic ID
// ([TargetTopicIDHeader] as 16 raw bytes, zero when absent or of another
// length). Records MM2 wrote carry neither.
func RecordedTarget(hs []kgo.RecordHeader) (cluster string, topicID [16]byte) {
	id := targetIDOf(hs)
	return id.cluster, id.topic
}

// targetIDOf reads the target identity recorded in a record's headers; a
// topic ID header of another length than 16 bytes is ignored.
func targetIDOf(hs []kgo.RecordHeader) targetID {
	var id targetID
	for _, h := range hs {
		switch h.Key {
		case TargetClusterHeader:
			id.cluster = string(h.Value)
		case TargetTopicIDHeader:
			if len(h.Value) == 16 {
				copy(id.topic[:], h.Value)
			}
		}
	}
	return id
}

// targetView is the target's state listed by one emission after its
// translations: cluster ID, remote topic IDs and log end offsets.
type targetView struct {
	cluster string
	ids     map[string][16]byte // remote topic -> ID, for topics that exist
	missing map[string]bool     // remote topics the target does not have
	ends    kadm.ListedOffsets
}

// end returns the log end offset of a remote partition; ok is false when
// it is unknown: a listing error, a partition the remote topic does not
// have (yet: partition mismatch), or a remote topic that does not exist
// (gone).
func (v *targetView) end(topic string, partition int32) (end int64, gone, ok bool) {
	if v.missing[topic] {
		return 0, true, false
	}
	o, found := v.ends.Lookup(topic, partition)
	switch {
	case !found:
		return 0, false, false
	case errors.Is(o.Err, kerr.UnknownTopicOrPartition):
		return 0, true, false
	case o.Err != nil:
		return 0, false, false
	}
	return o.Offset, false, true
}

// id returns the current identity of a remote topic.
func (v *targetView) id(topic string) targetID {
	return targetID{cluster: v.cluster, topic: v.ids[topic]}
}

// listTarget lists the target's cluster ID, the IDs of topics and the end
// offsets of their partitions, in this order: the end offsets are listed
// after everything translated before the call was read, so a translation
// of offset syncs that are not stale is never past them.
func (r *run) listTarget(ctx context.Context, topics []string) (*targetView, error) {
	e := r.e
	v := &targetView{ids: map[string][16]byte{}, missing: map[string]bool{}}
	mctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	md, err := r.dst.Metadata(mctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describing %d remote topics on %s: %w", len(topics), e.cfg.TargetAlias, err)
	}
	v.cluster = md.Cluster
	var present []string
	for _, t := range topics {
		td, ok := md.Topics[t]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			v.missing[t] = true
		case td.Err == nil:
			v.ids[t] = td.ID
			present = append(present, t)
		}
	}
	if len(present) == 0 {
		return v, nil
	}
	ends, err := r.dst.ListEndOffsets(mctx, present...)
	var shardErr *kadm.ShardErrors
	if err != nil && !errors.As(err, &shardErr) {
		return nil, fmt.Errorf("listing end offsets of %d remote topics on %s: %w", len(present), e.cfg.TargetAlias, err)
	}
	v.ends = ends
	return v, nil
}

// staleness is the outcome of the target-identity checks of one emission.
type staleness struct {
	// parts holds the source partitions whose syncs or runs (stores) are
	// stale: they are discarded.
	parts map[tpKey]staleStores
	// held holds the source partitions found stale on the evidence of a
	// translation made before their syncs or runs changed (they arrived,
	// or their history restarted, while the target was listed): their
	// translations are cleared like stale ones, but nothing is discarded,
	// and the next emission translates them again from the syncs as they
	// are then.
	held map[tpKey]bool
	// wait holds the source partitions whose syncs or runs name a remote
	// topic ID this emitter has not listed, or whose remote topic's
	// listing is behind (it shows a retired ID): their translations are
	// cleared (group offset sync must not commit them either) and their
	// syncs kept; the next emission translates and checks them again.
	wait map[tpKey]bool
}

// staleStores says which of a source partition's histories are stale, and
// why.
type staleStores struct {
	syncs, runs bool
	why         string
}

// checkTarget compares what the stores and the known checkpoints describe
// with the target view of one emission, for the group partitions to check
// (Run goroutine; callers hold storeMu; the emission chooses them, see
// emit.go). It forgets the checkpoints that are stale, so that the next one
// is written even when it is lower, and returns the source partitions whose
// offset syncs or runs describe a previous target log:
//
//   - syncs or runs recorded (TargetClusterHeader) for another target
//     cluster than the current one, or (TargetTopicIDHeader) for an older
//     ID of the remote topic (one an earlier listing showed replaced): that
//     history is dropped; one recorded for another ID the emitter has not
//     seen replaced (the previous listing's, or its checkpoint's, after a
//     restart) waits, since only listings order two IDs, and is dropped
//     once a listing has replaced it;
//   - a remote topic whose ID changed since its previous listing, or
//     since a checkpoint of the partition was written: its checkpoints
//     are forgotten, and its syncs and runs dropped unless they record
//     their topic ID (those of the current ID are the replicator's refill
//     of the re-created topic, which an idle partition never repeats;
//     those of another one wait, then are dropped, by the rule above);
//   - a translation past the remote partition's log end listed after it
//     (a sync names a record the target acknowledged, so a translation of
//     syncs of the current log is at most the end: this also catches
//     offset syncs written by MM2, which record no identity) (a remote
//     partition missing from the listing only waits: a metadata blip must
//     not drop the syncs of an idle partition);
//   - a checkpoint past that log end is forgotten, and so is one that
//     records no remote topic ID above the upper bound of the
//     translation of a source offset at or past its own (no kmirror
//     checkpoint of the current log can be).
//
// A source partition whose syncs or runs changed after this emission took
// the changed set is not judged on a translation that may predate them
// (held); one whose history restarted then (retagged) is held even when
// nothing looks stale, since its translation may be the previous log's.
// One whose syncs name a topic ID not listed yet, or whose topic's listing
// shows a retired ID (behind, unless the previous listing showed it too),
// waits. The checkpoints of held and waiting partitions are forgotten, so
// that group offset sync does not fall back on one of another log.
func (e *Emitter) checkTarget(v *targetView, check []*partEntry) staleness {
	st := staleness{parts: map[tpKey]staleStores{}, held: map[tpKey]bool{}, wait: map[tpKey]bool{}}
	mark := func(k tpKey, syncs, runs bool, why string) {
		if st.held[k] {
			return
		}
		if _, moved := e.changed[k]; moved {
			delete(st.wait, k)
			delete(st.parts, k)
			st.held[k] = true
			return
		}
		delete(st.wait, k)
		old, ok := st.parts[k]
		if !ok {
			old.why = why
		}
		old.syncs, old.runs = old.syncs || syncs, old.runs || runs
		st.parts[k] = old
	}
	wait := func(k tpKey) {
		if _, stale := st.parts[k]; !stale && !st.held[k] {
			st.wait[k] = true
		}
	}
	var zero [16]byte
	// A listing that shows a retired ID is behind (Kafka never gives an
	// ID twice): the topic's partitions wait. Two listings in a row
	// showing it bring it back (the order of two IDs is only known from
	// the listings: a lagging broker's answer may have retired the
	// current one).
	changed := map[string]bool{} // remote topics re-created since their previous listing
	unsure := map[string]bool{}  // remote topics listed with a retired ID
	for remote, id := range v.ids {
		switch old, ok := e.remoteIDs[remote]; {
		case id == zero: // a broker that does not know topic IDs: unknown
		case e.retired[remote][id] && e.candidate[remote] != id:
			unsure[remote] = true
		case ok && old != id:
			changed[remote] = true
		}
	}
	clusterChanged := e.dstCluster != "" && v.cluster != "" && e.dstCluster != v.cluster
	for _, pe := range check {
		e.work.checks.Add(1)
		name := pe.g.name
		k := pe.key()
		if unsure[pe.remote] {
			wait(k)
			continue
		}
		if _, restarted := e.retagged[k]; restarted {
			st.held[k] = true
			continue
		}
		cur := v.id(pe.remote)
		syncTag, hasSyncs := e.syncTags[k]
		runTag, hasRuns := e.runTags[k]
		if t := syncTag.cluster; t != "" && v.cluster != "" && t != v.cluster {
			mark(k, true, false, fmt.Sprintf("offset syncs recorded for target cluster %q, target is %q", t, v.cluster))
		}
		if t := runTag.cluster; t != "" && v.cluster != "" && t != v.cluster {
			mark(k, false, true, fmt.Sprintf("offset runs recorded for target cluster %q, target is %q", t, v.cluster))
		}
		var was targetID
		last, hasLast := e.cps.Last(name, pe.remote, pe.partition)
		if hasLast {
			was = e.cps.Target(name, pe.remote, pe.partition)
		}
		for _, h := range []struct {
			tag         targetID
			has         bool
			syncs, runs bool
			what        string
		}{{syncTag, hasSyncs, true, false, "offset syncs"}, {runTag, hasRuns, false, true, "offset runs"}} {
			switch {
			case !h.has || h.tag.topic == zero || cur.topic == zero || h.tag.topic == cur.topic:
			case e.retired[pe.remote][h.tag.topic]: // an ID an earlier listing replaced
				mark(k, h.syncs, h.runs, fmt.Sprintf("%s recorded for remote topic %s ID %x, now ID %x", h.what, pe.remote, h.tag.topic, cur.topic))
			default:
				wait(k) // an ID not listed yet: most likely newer than this listing
			}
		}
		// tagged: the partition has syncs, and they and its runs say
		// which remote topic they describe (MM2's and older kmirror
		// releases' do not).
		tagged := hasSyncs && syncTag.topic != zero && (!hasRuns || runTag.topic != zero)
		if changed[pe.remote] || clusterChanged {
			if !tagged {
				mark(k, true, true, fmt.Sprintf("remote topic %s re-created (topic ID %x)", pe.remote, cur.topic))
			}
			e.cps.Forget(name, pe.remote, pe.partition)
			hasLast = false
		}
		if hasLast && was.differs(cur) {
			if !tagged {
				mark(k, true, true, fmt.Sprintf("checkpoint of %s-%d written for target cluster %q topic ID %x, now cluster %q topic ID %x",
					pe.remote, pe.partition, was.cluster, was.topic, cur.cluster, cur.topic))
			}
			e.cps.Forget(name, pe.remote, pe.partition)
			hasLast = false
		}
		// A last checkpoint that records no remote topic ID (MM2's, an
		// older release's, loaded at start) may be of a log the remote
		// topic had before it was re-created: this emitter's first
		// listing has nothing to compare with. Within one log, the exact
		// translation of a source offset at or past the checkpoint's
		// upstream offset is at least its downstream offset (a kmirror
		// checkpoint is an exact translation or a lower bound), so a
		// checkpoint above that translation's upper bound (the exact
		// translation itself, or the safe one plus its re-read bound) is
		// forgotten and the lower one written: one of a previous log, or
		// one an MM2 release that overshot across transaction markers
		// wrote. A checkpoint recording the listed ID was translated from
		// syncs recording it (translatedFrom), so is of this log (a lower
		// translation then comes from a source topic ID listed behind,
		// and is refused as MM2 does). Group offset sync never falls back
		// on a checkpoint recording no ID ([Emitter.best]).
		upper := int64(-1) // an upper bound of the exact translation, -1 none
		switch {
		case pe.translated < 0:
		case pe.exact:
			upper = pe.translated
		case pe.reread >= 0:
			upper = pe.translated + pe.reread
		}
		if hasLast && was.topic == zero && upper >= 0 && pe.srcOffset >= last.UpstreamOffset && upper < last.DownstreamOffset {
			e.log.Warn("checkpoint recording no remote topic ID above what the current log allows; it will be rewritten lower (written for a previous remote log, or by an MM2 release that overshot)",
				"group", name, "topic", pe.remote, "partition", pe.partition, "checkpoint_upstream", last.UpstreamOffset,
				"checkpoint_downstream", last.DownstreamOffset, "source_offset", pe.srcOffset, "translated", pe.translated, "exact", pe.exact)
			e.cps.Forget(name, pe.remote, pe.partition)
			hasLast = false
		}
		// A remote topic missing from one metadata answer (a broker
		// restarting, a metadata blip) is not a reason to drop its
		// syncs: an idle partition would get no new sync, and its
		// checkpoints would stop. Its checkpoint waits for the next
		// emission; a re-created topic shows as a new ID then.
		end, _, ok := v.end(pe.remote, pe.partition)
		switch {
		case !ok:
		case pe.translated > end:
			mark(k, true, true, fmt.Sprintf("translation %d of %s-%d past the remote log end %d", pe.translated, pe.topic, pe.partition, end))
		}
		if ok && hasLast && last.DownstreamOffset > end {
			e.log.Warn("checkpoint past the target log end; it will be rewritten lower (target rebuilt, remote topic re-created or truncated)",
				"group", name, "topic", pe.remote, "partition", pe.partition, "checkpoint", last.DownstreamOffset, "log_end", end)
			e.cps.Forget(name, pe.remote, pe.partition)
		}
	}
	if v.cluster != "" {
		e.dstCluster = v.cluster
	}
	for remote, id := range v.ids {
		switch {
		case id == zero:
		case changed[remote]:
			if e.retired[remote] == nil {
				e.retired[remote] = map[[16]byte]bool{}
			}
			e.retired[remote][e.remoteIDs[remote]] = true
			delete(e.retired[remote], id) // listed twice in a row: current after all
			e.remoteIDs[remote] = id
			delete(e.candidate, remote)
		case unsure[remote]:
			e.candidate[remote] = id
		default:
			e.remoteIDs[remote] = id
			delete(e.candidate, remote)
		}
	}
	// Held and waiting: their checkpoints may be another log's, so they
	// are forgotten: group offset sync must not fall back on them (the
	// next emission writes them again if they still hold).
	for _, set := range []map[tpKey]bool{st.held, st.wait} {
		for k := range set {
			for _, pe := range e.byPart[k] {
				e.cps.Forget(pe.g.name, pe.remote, pe.partition)
			}
		}
	}
	return st
}

// discardStale drops the offset syncs and runs of the stale source
// partitions (callers hold storeMu); they are translated again once the
// replicator's syncs of the current target log arrive.
func (e *Emitter) discardStale(st staleness) {
	keys := make([]tpKey, 0, len(st.parts))
	for k := range st.parts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
	for _, k := range keys {
		ss := st.parts[k]
		e.log.Warn("offset syncs describe a previous target log; discarded, waiting for new ones",
			"topic", k.topic, "partition", k.partition, "why", ss.why, "syncs", ss.syncs, "runs", ss.runs)
		if ss.syncs {
			e.store.discard(k)
			delete(e.syncTags, k)
		}
		if ss.runs {
			if e.runs != nil {
				e.runs.discard(k)
			}
			delete(e.runTags, k)
		}
		e.discarded[k] = true
		// Translated again at the next emission, from the history as it
		// is now: markStale set the reason but kept how the stale
		// translation was found (found by the property test: the full
		// emitter's next translation differed, and reset the sync reason).
		e.changed[k] = struct{}{}
	}
}

// tagged applies the target log recorded on one sync or run record of
// source partition k (its target cluster and remote topic ID) to tags
// (callers hold storeMu): a record recorded for another cluster or remote
// topic ID than the previous record of k starts a new target log, so the
// history of k is discarded before the record is added. After a record
// recording no remote topic ID (MM2's, an older release's), one recording
// an ID may start a new log too (the refill of a re-created topic): a
// translation made before it is held (retagged), not checkpointed with
// the new ID, though nothing is discarded. k is marked changed: the next
// emission translates its group partitions.
func (e *Emitter) tagged(tags map[tpKey]targetID, k tpKey, hs []kgo.RecordHeader, discard func(tpKey)) {
	id := targetIDOf(hs)
	if old, ok := tags[k]; ok && old.differs(id) {
		discard(k)
		e.retagged[k] = struct{}{}
	} else if ok && old.topic == ([16]byte{}) && id.topic != ([16]byte{}) {
		e.retagged[k] = struct{}{}
	}
	tags[k] = id
	delete(e.discarded, k)
	e.changed[k] = struct{}{}
}

// addSync adds one offset sync read from the offset-syncs topic, with its
// record headers, to the store (callers hold storeMu): the syncs tailer's
// step, which marks its source partition changed for the next emission.
func (e *Emitter) addSync(s OffsetSync, hs []kgo.RecordHeader) {
	e.tagged(e.syncTags, tpKey{topic: s.Topic, partition: s.Partition}, hs, e.store.discard)
	e.store.Add(s)
}

// addRun adds one offset run read from the offset-runs topic, with its
// record headers, to the run store (callers hold storeMu).
func (e *Emitter) addRun(run OffsetRun, hs []kgo.RecordHeader) {
	e.tagged(e.runTags, tpKey{topic: run.Topic, partition: run.Partition}, hs, e.runs.discard)
	e.runs.Add(run)
}
