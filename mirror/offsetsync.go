package mirror

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
)

// syncWriter decides when an offset sync (upstream offset ↔ downstream
// offset) of one source partition is written, following MM2's
// OffsetSyncWriter (docs/mm2-compat.md §5.5, KAFKA-14797, KAFKA-15906), and
// keeps the offset runs (checkpoint.OffsetRun) that let the checkpoint
// emitter translate exactly. It is owned by the partition state and guarded
// by its mutex; it does no I/O.
//
// The engine calls, for one source partition:
//   - ack(u, d, lagMax) for every record the target acknowledged, in
//     produce order (kgo's promise order per partition); a true result
//     means a sync or run is due now: call take() and takeRuns(false)
//     soon and produce what they return. Runs are due whenever a sync is
//     (so the emitter knows as much as from the syncs: within
//     offset.lag.max records of the newest record on a busy partition),
//     and a new replication session announces itself at once, so that the
//     emitter knows of it even if it stops before its first flush;
//   - promote(idle, committed) at every offset flush, after the resume
//     points were stored: idle is the partition's polled position (next
//     source offset to read, past transaction markers) when nothing is in
//     flight, else -1; committed is the partition's stored resume point
//     (-1 none); then take() and takeRuns(true), and produce what they
//     return;
//   - marker() after each transaction the engine committed on the target
//     (exactly-once mode): the next target offset is that transaction's
//     marker, not a gap;
//   - reincarnate(id, inflight) when the engine starts replicating a
//     re-created source topic (new topic ID id) from its log start, with
//     inflight records of the old topic still unacknowledged: the
//     acknowledgement after those starts the new topic's first session.
type syncWriter struct {
	prevUp, prevDown int64 // last acknowledged record (-1 before any)
	lastSyncDown     int64 // downstream offset of the last sync queued (-1 before any)
	// due are the syncs to send, in order; delayed is the newest position not
	// synced yet, queued at every offset flush so the end of a quiet
	// partition is always translatable (docs/field-failures.md case B03). Due
	// syncs are never replaced by later ones: the first sync of a run and the
	// syncs forced by gaps and rewinds are what translation of older group
	// offsets needs (docs/field-failures.md cases B10, B32). At most maxDue
	// are kept; past that the newest replaces the last.
	due                    [][2]int64
	delayed                bool
	delayedUp, delayedDown int64

	runs runWriter
}

// newSyncWriter returns the writer of a partition whose replication
// resumes after resume point committed (the last source offset stored as
// replicated), or, with committed < 0, starts fresh at the log start
// (nothing of this source-topic incarnation is on the target yet), for the
// source topic with ID topicID (all zero when unknown).
func newSyncWriter(committed int64, topicID [16]byte) syncWriter {
	return syncWriter{prevUp: -1, prevDown: -1, lastSyncDown: -1, runs: newRunWriter(committed, topicID)}
}

// ack records that upstream offset u was written at downstream offset d and
// reports whether a sync is due now. lagMax is offset.lag.max (0: every
// record).
func (w *syncWriter) ack(u, d, lagMax int64) bool {
	announce := w.runs.ack(u, d)
	now := w.lastSyncDown == -1 || // first record of this run
		d-(w.lastSyncDown+1) >= lagMax || // a caught-up group would lag by lagMax
		u-w.prevUp != 1 || // gap or rewind upstream (compaction, markers, restart)
		d <= w.prevDown // target truncated or re-created (MM2: d < prev; an equal offset cannot be a new record either)
	w.prevUp, w.prevDown = u, d
	if now {
		w.lastSyncDown = d
		w.queue(u, d)
		w.delayed = false
		w.runs.due = true
		return true
	}
	w.delayed, w.delayedUp, w.delayedDown = true, u, d
	return announce
}

// maxDue bounds the syncs queued per partition between two sends.
const maxDue = 1024

func (w *syncWriter) queue(u, d int64) {
	if len(w.due) == maxDue {
		w.due[maxDue-1] = [2]int64{u, d}
		return
	}
	w.due = append(w.due, [2]int64{u, d})
}

// promote queues the delayed position (MM2's commit()) and records idle,
// the partition's polled position when nothing is in flight (-1
// otherwise), and committed, its stored resume point (-1 none). It makes
// every run that changed due: in exactly-once mode the flush is a
// committed transaction (lifecycle.txnCommitted promotes), and the runs
// are taken afterwards with takeRuns(false). Without this they were
// written only when a sync fell due on its own, which the flushes'
// promoted syncs kept from happening: the offset runs stopped a few
// hundred records into the stream, and the checkpoints with them (a
// helper trying to break exactly-once mode, stop 38).
func (w *syncWriter) promote(idle, committed int64) {
	if w.delayed {
		w.delayed = false
		w.lastSyncDown = w.delayedDown
		w.queue(w.delayedUp, w.delayedDown)
	}
	w.runs.idle(idle, committed)
	w.runs.due = true
}

// resend queues the newest acknowledged position as a sync and makes the
// current run due again, changed or not: the offset-syncs or offset-runs
// topic was created again and lost what was written to it
// (flow.restoreSyncTopics). The session's earlier runs are not written
// again: group offsets before the current run translate safely, not
// exactly.
func (w *syncWriter) resend() {
	if w.prevUp >= 0 {
		w.delayed = false
		w.lastSyncDown = w.prevDown
		w.queue(w.prevUp, w.prevDown)
	}
	if w.runs.cur.Count > 0 {
		w.runs.curDirty = true
	}
	w.runs.due = true
}

// take returns the due syncs in order and clears them.
func (w *syncWriter) take() [][2]int64 {
	due := w.due
	w.due = nil
	return due
}

// takeRuns returns the offset runs to write, in order, and clears them:
// with all (at an offset flush) every run that changed, else those due
// (the runs completed and the current one when a sync was due, or a new
// session's first run). Their Topic and Partition are left for the
// caller to fill.
func (w *syncWriter) takeRuns(all bool) []checkpoint.OffsetRun { return w.runs.take(all) }

// marker records that the engine committed a transaction on the target:
// its marker takes the next target offset.
func (w *syncWriter) marker() { w.runs.marker() }

// reincarnate announces that the source topic was re-created with topic ID
// id; see runWriter.reincarnate.
func (w *syncWriter) reincarnate(id [16]byte, inflight int) { w.runs.reincarnate(id, inflight) }

// maxRunsDue bounds the completed runs kept between two flushes; past it
// the oldest are dropped (the emitter then sees a hole in the session,
// which it translates safely but not exactly).
const maxRunsDue = 4096

// runWriter keeps the offset runs of one source partition: maximal
// sequences of acknowledged records that are consecutive on both sides
// (checkpoint.OffsetRun). A run ends at an upstream gap (the next run is
// linked to it: nothing was copied in between) or at a target offset the
// writer did not write (the next run is not linked). A new session starts
// when the source or target offsets go back (crash replay, truncation,
// re-created topic).
type runWriter struct {
	session  uint64
	fresh    bool
	readFrom int64 // source offset the session started reading at
	commit   int64 // stored resume point, -1 none
	topicID  [16]byte
	pending  bool // a new incarnation starts after pendAcks more acknowledgements
	pendAcks int
	pendID   [16]byte
	started  bool
	sessUp   int64
	sessDown int64
	cur      checkpoint.OffsetRun // Count 0: none
	curDirty bool                 // cur changed since it was last taken
	lastUp   int64
	lastDown int64
	markers  int64 // own transaction markers expected before the next record
	endUp    int64 // idle position after lastUp, -1 unknown
	announce bool  // the session's first run is not written yet
	due      bool  // a sync was due since the runs were last taken
	done     []checkpoint.OffsetRun
}

func newRunWriter(committed int64, topicID [16]byte) runWriter {
	return runWriter{session: rand.Uint64(), fresh: committed < 0, readFrom: max(committed+1, 0), commit: max(committed, -1),
		topicID: topicID, lastUp: -1, lastDown: -1, endUp: -1}
}

// readFromFirstAck makes a session that has not started read from its
// first acknowledged record: one that starts at the source's log end
// (StartLatest with no resume point) passed none of the offsets before
// that record. With readFrom 0 it claimed them all, and the exact
// translator took an earlier session's copies of them for superseded: a
// group between them was checkpointed past records the target holds
// (found by a review: a member killed before its first resume point was
// stored, and the next one started at the end again).
func (w *runWriter) readFromFirstAck() {
	if !w.started {
		w.readFrom = -1
	}
}

// newSession closes the current run and starts a new session at the next
// acknowledgement, reading from readFrom (-1: from that record).
func (w *runWriter) newSession(fresh bool, readFrom int64) {
	w.close()
	w.session, w.fresh, w.readFrom, w.started = rand.Uint64(), fresh, readFrom, false
	w.markers, w.endUp, w.announce = 0, -1, false
}

// close moves the current run to the runs to write, if it changed.
func (w *runWriter) close() {
	if w.cur.Count > 0 && w.curDirty {
		w.cur.EndUpstreamOffset = -1
		if len(w.done) == maxRunsDue {
			w.done = w.done[1:]
		}
		w.done = append(w.done, w.cur)
	}
	w.cur, w.curDirty = checkpoint.OffsetRun{}, false
}

// ack records the acknowledgement of u at d; it reports whether it started
// a session (whose first run is due at once).
func (w *runWriter) ack(u, d int64) bool {
	if w.pending && w.pendAcks > 0 {
		w.pendAcks-- // a record of the old topic
	} else if w.pending {
		w.pending, w.topicID, w.commit = false, w.pendID, -1
		w.newSession(true, 0) // the new topic is read from its log start
	}
	switch {
	case w.started && (u <= w.lastUp || d <= w.lastDown):
		w.newSession(false, -1) // replay after a truncation, re-created target
	}
	link := w.started && u > w.lastUp && d > w.lastDown && d <= w.lastDown+1+w.markers
	switch {
	case !w.started:
		w.started, w.sessUp, w.sessDown, w.announce = true, u, d, true
		if w.readFrom > u {
			w.commit = -1 // the resume point was of another log (a topic re-created while stopped)
		}
		if w.readFrom < 0 || w.readFrom > u {
			w.readFrom = u
		}
		w.start(-1, -1, u, d)
	case link && u == w.lastUp+1 && d == w.lastDown+1:
		w.cur.Count++
	case link:
		w.close()
		w.start(w.lastUp, w.lastDown, u, d)
	default: // a target offset this session did not write
		w.close()
		w.start(-1, -1, u, d)
	}
	w.curDirty = true
	w.lastUp, w.lastDown, w.markers, w.endUp = u, d, 0, -1
	return w.announce
}

func (w *runWriter) start(prevUp, prevDown, u, d int64) {
	w.cur = checkpoint.OffsetRun{Session: w.session, TopicID: w.topicID, Fresh: w.fresh,
		SessionUpstreamOffset: w.sessUp, SessionOffset: w.sessDown,
		PrevUpstreamOffset: prevUp, PrevOffset: prevDown, FirstUpstreamOffset: u, FirstOffset: d, Count: 1,
		EndUpstreamOffset: -1, ReadFrom: w.readFrom, Committed: w.commit}
}

// idle records the polled position p when nothing is in flight (-1: some
// record is) and the stored resume point committed; both are written with
// the current run.
func (w *runWriter) idle(p, committed int64) {
	if p > w.lastUp+1 && w.started && p != w.endUp {
		w.endUp, w.curDirty = p, true
	}
	// A resume point of this session's log lies between its start and its
	// last acknowledged record (the engine's may still be the old topic's
	// right after a re-creation).
	if committed > w.commit && committed >= w.readFrom-1 && committed <= w.lastUp && w.started {
		w.commit = committed
		w.cur.Committed = committed
		if w.cur.Count > 0 {
			w.curDirty = true
		}
	}
}

func (w *runWriter) marker() { w.markers++ }

// reincarnate makes the acknowledgement after the next inflight ones (the
// old topic's records still in flight) start a fresh session of the topic
// with ID id.
func (w *runWriter) reincarnate(id [16]byte, inflight int) {
	w.pending, w.pendID, w.pendAcks = true, id, max(inflight, 0)
}

// take returns the completed runs and the current run if it changed, in
// order, and clears them; without all, only when they are due (a sync was
// due, or a session's first run is not written yet).
func (w *runWriter) take(all bool) []checkpoint.OffsetRun {
	if !all && !w.announce && !w.due {
		return nil
	}
	w.announce, w.due = false, false
	out := w.done
	w.done = nil
	if w.cur.Count > 0 && w.curDirty {
		r := w.cur
		r.EndUpstreamOffset = w.endUp
		out = append(out, r)
		w.curDirty = false
	}
	return out
}

// sendSyncs produces the due offset syncs and runs (and with promote, the
// newest position of every partition: MM2's commit()). Control goroutine.
func (u *unit) sendSyncs(promote bool) {
	if u.env.sync == nil {
		u.life.syncsDue = false
		return
	}
	if ep := u.env.syncEpoch; ep != nil {
		if n := ep.Load(); n != u.syncEpoch {
			u.syncEpoch = n
			u.life.resendSyncs() // the topics were created again: what they held is gone
		}
	}
	for _, s := range u.life.syncs(promote) {
		for _, d := range s.due {
			u.env.sync(s.p.topic, s.p.partition, s.p.remoteID, d[0], d[1])
		}
		for _, r := range s.runs {
			u.env.run(s.p.topic, s.p.partition, s.p.remoteID, r)
		}
	}
}

// produceRun writes offset run r of source partition (topic, partition),
// whose downstream offsets are in the remote topic with ID remoteID (zero:
// unknown), to the offset-runs topic, partition 0. Send failures are
// logged and counted as offset-sync errors; a later version of the run
// supersedes it.
func (f *flow) produceRun(topic string, partition int32, remoteID [16]byte, r checkpoint.OffsetRun) {
	r.Topic, r.Partition = topic, partition
	f.produceOffsetRecord(checkpoint.OffsetRunsTopic(f.offsetSyncsTopic), "offset run", topic, partition, remoteID, r.Key, r.Value, false)
}

// produceSync writes one offset sync (docs/mm2-compat.md §2.4) to partition 0
// of the offset-syncs topic, with the target cluster ID and the remote
// topic's ID in headers (targetHeaders). Send failures are logged; a later
// sync supersedes it.
func (f *flow) produceSync(topic string, partition int32, remoteID [16]byte, up, down int64) {
	s := checkpoint.OffsetSync{Topic: topic, Partition: partition, UpstreamOffset: up, DownstreamOffset: down}
	f.produceOffsetRecord(f.offsetSyncsTopic, "offset sync", topic, partition, remoteID, s.Key, s.Value, true)
}

// produceOffsetRecord writes the record of source partition (topic,
// partition) that key and value encode (an offset sync or run, what) to
// partition 0 of dest with the target headers of remote topic remoteID.
// An encoding or send failure is logged (and a send failure counted as an
// offset-sync error); count says a success is counted as an offset sync.
func (f *flow) produceOffsetRecord(dest, what, topic string, partition int32, remoteID [16]byte, key, value func() ([]byte, error), count bool) {
	k, err := key()
	if err == nil {
		var v []byte
		if v, err = value(); err == nil {
			cl := f.syncCl.Load()
			cl.Produce(context.Background(), &kgo.Record{Topic: dest, Partition: 0, Key: k, Value: v, Headers: f.targetHeaders(remoteID)},
				func(_ *kgo.Record, err error) {
					switch {
					case err != nil:
						f.log.Warn(what+" not written", "topic", topic, "partition", partition, "err", err)
						f.metrics.flowErr(f.labels, "offset_sync")
						f.offsetSyncFailed(dest, err)
						if f.syncCl.Load() == cl {
							if unknownTopic(err) {
								f.syncsLost.Store(true) // restored by the refresh loop (synctopics.go); not again for a replaced producer's records
							} else {
								f.syncsCheck.Store(true) // the refresh loop checks the producer's id (synctopics.go)
							}
						}
					default:
						if count {
							f.metrics.offsetSync(f.labels)
						}
						if f.syncFailing.Load() {
							f.offsetSyncFailed(dest, nil)
						}
					}
				})
			return
		}
	}
	f.log.Warn("encoding "+what, "topic", topic, "partition", partition, "err", err)
}

// offsetSyncFailed records the failure err to write an offset sync or run
// to topic dest (FlowStatus.OffsetSyncError; nil: a write succeeded, which
// clears it), with the ACL to grant for an authorization error. A refused
// write (no WRITE on the offset-syncs topic in a least-privilege profile)
// used to be logged at WARN only: the flow said RUNNING without an error
// while no group offset was translated any more
// (TestBrkAOffsetSyncWriteRefusedShownInStatus).
func (f *flow) offsetSyncFailed(dest string, err error) {
	if err == nil {
		f.mu.Lock()
		f.syncErr, f.syncErrSince = "", time.Time{}
		f.syncFailing.Store(false)
		f.mu.Unlock()
		return
	}
	cluster := f.src.Alias
	if f.cfg.OffsetSyncsTopicLocationTarget {
		cluster = f.dst.Alias
	}
	msg := fmt.Sprintf("writing to %s on %s: %v", dest, cluster, err)
	switch {
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		msg += fmt.Sprintf("; grant kmirror WRITE on topics %s and %s on %s (ACLS.md)", f.offsetSyncsTopic, checkpoint.OffsetRunsTopic(f.offsetSyncsTopic), cluster)
	case errors.Is(err, kerr.ClusterAuthorizationFailed):
		msg += fmt.Sprintf("; grant kmirror WRITE on topics %s and %s on %s (the idempotent producer needs WRITE on a topic, or IDEMPOTENT_WRITE on the cluster before Kafka 3.0; ACLS.md)",
			f.offsetSyncsTopic, checkpoint.OffsetRunsTopic(f.offsetSyncsTopic), cluster)
	}
	f.mu.Lock()
	if f.syncErr == "" {
		f.syncErrSince = time.Now()
	}
	f.syncErr = msg
	f.syncFailing.Store(true)
	f.mu.Unlock()
}

// targetHeaders returns the headers that record, on an offset sync or run,
// the target log its downstream offsets belong to: the target cluster
// (checkpoint.TargetClusterHeader) and the remote topic's ID
// (checkpoint.TargetTopicIDHeader), each when known (MM2's readers see only
// key and value). The checkpoint emitter ignores syncs of a target rebuilt
// since, and keeps those of a remote topic re-created since it last listed
// the target.
func (f *flow) targetHeaders(remoteID [16]byte) []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	if f.dstID != "" {
		hs = append(hs, kgo.RecordHeader{Key: checkpoint.TargetClusterHeader, Value: []byte(f.dstID)})
	}
	if remoteID != ([16]byte{}) {
		hs = append(hs, kgo.RecordHeader{Key: checkpoint.TargetTopicIDHeader, Value: remoteID[:]})
	}
	return hs
}
