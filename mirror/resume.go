package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/kread"
)

// Resume points live where MM2's dedicated mode keeps its source offsets:
// mm2-offsets.<source>.internal on the target (Connect's offset storage
// topic), key ["MirrorSourceConnector",{"cluster":S,"partition":p,"topic":t}],
// value {"offset":<last replicated offset>}, in the partition Connect's
// producer picks (murmur2 of the key modulo the partition count). kmirror
// therefore resumes where an MM2 deployment stopped, and the reverse. Units
// write them (unit.commit); this file reads them.
//
// kmirror adds two record headers, which Connect ignores:
//   - kmirror-remote-topic-id, the ID of the remote topic the resume
//     point's records were written to. A unit starting on a resume point
//     whose remote topic has another ID now (deleted and re-created on the
//     target while no unit replicated the partition) refills the new remote
//     topic from the source's log start instead of resuming after records
//     it no longer holds.
//   - kmirror-source-topic-id, the ID of the source topic whose log the
//     offset belongs to. A unit starting on a resume point whose source
//     topic has another ID now (deleted and re-created on the source while
//     no unit replicated it) replicates the new topic from its log start:
//     resuming at the old log's offset would skip the new log's records
//     before it, silently. MM2 resumes there.

// resumeIDs are the topic IDs a resume point records (zero: none, e.g.
// written by MM2 or an older kmirror).
type resumeIDs struct {
	remote, source kadm.TopicID
}

// headers returns the headers recording ids (none for an unknown ID).
func (ids resumeIDs) headers() []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	for _, h := range []struct {
		key string
		id  kadm.TopicID
	}{{connectoffsets.RemoteTopicIDHeader, ids.remote}, {connectoffsets.SourceTopicIDHeader, ids.source}} {
		if h.id != (kadm.TopicID{}) {
			hs = append(hs, kgo.RecordHeader{Key: h.key, Value: append([]byte(nil), h.id[:]...)})
		}
	}
	return hs
}

// readResumePoints reads the resume-point topic to its end offsets and
// returns the last replicated offset of every source partition of source
// (the last record per key wins; a tombstone deletes). It reads
// read_committed, so a resume point written in an aborted transaction (an
// exactly-once writer that was fenced or crashed) is never taken as
// progress, and it waits for the transactions open at the call to end.
//
// ids holds, per source partition, the topic IDs its last resume point
// records (absent: none recorded).
func readResumePoints(ctx context.Context, opts []kgo.Opt, topic, source string, log *slog.Logger) (out map[tp]int64, ids map[tp]resumeIDs, err error) {
	recs, err := kread.ReadToEnd(ctx, opts, topic, kread.Options{ReadCommitted: true})
	if err != nil {
		return nil, nil, err
	}
	points := connectoffsets.ResumePoints(recs, source, func(r *kgo.Record, err error) {
		log.Warn("skipping malformed resume point", "topic", topic, "offset", r.Offset, "err", err)
	})
	out, ids = make(map[tp]int64, len(points)), map[tp]resumeIDs{}
	for k, rp := range points {
		out[tp{k.Topic, k.Partition}] = rp.Offset
		if id := (resumeIDs{kadm.TopicID(rp.RemoteTopicID), kadm.TopicID(rp.SourceTopicID)}); id != (resumeIDs{}) {
			ids[tp{k.Topic, k.Partition}] = id
		}
	}
	return out, ids, nil
}

// resumeTopicPartitions creates the resume-point topic if needed (compacted,
// Connect's default 25 partitions), or accepts one created in advance, and
// returns its partition count.
func (f *flow) resumeTopicPartitions(ctx context.Context) (int32, error) {
	r, err := f.ensureTopic(ctx, f.dstAdm, f.resumeTopicSpec())
	if err != nil {
		return 0, err
	}
	return r.Partitions, nil
}

// loadResume reads the resume points of this slot's partitions from the
// resume-point topic (read_committed, so that an aborted exactly-once
// write is never taken as progress).
func (u *unit) loadResume(ctx context.Context) error {
	e := u.env
	all, ids, err := readResumePoints(ctx, e.clientOpts(e.dst, e.dst.Consumer), e.resumeTopic, e.cfg.Source, u.log)
	if err != nil {
		return err
	}
	u.resume, u.resumeIDs = map[tp]int64{}, map[tp]resumeIDs{}
	for k, off := range all {
		if slotOf(k.topic, k.partition, e.tasks) == u.slot {
			u.resume[k] = off
			if id, ok := ids[k]; ok {
				u.resumeIDs[k] = id
			}
		}
	}
	return nil
}

func (u *unit) resumePoint(k tp) int64 {
	if off, ok := u.resume[k]; ok {
		return off
	}
	return -1
}

// firstFlushAfter is when a unit session stores its first resume points
// (then every offset flush interval).
const firstFlushAfter = time.Second

// flush stores resume points and queues the newest offset sync of every
// partition. Exactly once, resume points are stored by the transactions
// (commitTxn): flush queues the newest committed position of every
// partition and sends the syncs and runs due. (It used to send only what
// was due: the last transaction of a stream, committed within an offset
// flush interval of the one before, left its sync and run unwritten until
// the next transaction, and the group checkpointed short of the copies.)
func (u *unit) flush(ctx context.Context) {
	if h := u.env.hooks; h != nil && h.flushed != nil {
		defer h.flushed()
	}
	u.drain(ctx) // every result posted so far counts
	if time.Since(u.lastLSOCheck) >= openTxnCheckEvery(&u.env.cfg) {
		u.lastLSOCheck = time.Now()
		u.checkOpenTransactions(ctx)
	}
	if u.env.cfg.ExactlyOnce {
		u.sendSyncs(true)
		if u.dirty {
			u.publish() // the open-transaction check changed a status (the transactions store the resume points)
		}
		return
	}
	stored, err := u.commit(ctx)
	if ctx.Err() != nil && err != nil {
		return
	}
	if stored > 0 {
		u.progressed.Store(true)
	}
	if err != nil {
		u.env.metrics.flowErr(u.env.labels, "resume_commit")
		err = fmt.Errorf("storing resume points on %s: %w", u.env.dst.Alias, err)
	}
	u.env.health(u.slot, err)
	u.sendSyncs(true)
	if stored > 0 || u.dirty {
		// The resume points stored (PartitionStatus.Committed), or the
		// open-transaction check changed a status. An idle unit stores
		// none and takes no snapshot of its partitions: at thousands of
		// partitions one every flush was a tenth of an idle member's CPU
		// (issue 22).
		u.dirty = true
		u.publish()
	}
}

// commit stores the resume point of every partition that advanced, after
// the records it covers were acknowledged, and waits for the writes. Its
// records go where MM2's dedicated mode keeps its source offsets:
// mm2-offsets.<source>.internal on the target, key
// ["MirrorSourceConnector",{"cluster":S,"partition":p,"topic":t}], value
// {"offset":<last replicated offset>}, in the partition Connect's producer
// picks (murmur2 of the key modulo the partition count).
func (u *unit) commit(ctx context.Context) (int, error) {
	e := u.env
	ups := u.life.flushable()
	if len(ups) == 0 {
		return 0, nil
	}
	recs := make([]*kgo.Record, 0, len(ups))
	for _, up := range ups {
		recs = append(recs, u.resumeRecord(up))
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	start := time.Now()
	if err := u.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return 0, err
	}
	u.life.apply(event{kind: evFlushed, x: &evExtra{ups: ups}}, nil)
	e.metrics.committed(e.labels, time.Since(start))
	return len(ups), nil
}

// resumeRecord is the resume point "last replicated offset acked" of p's
// source partition, as MM2's dedicated mode stores its source offsets
// (Connect's JSON key and value, in the partition Connect's producer picks),
// with the remote and source topics' IDs in headers. It reads only what
// never changes in up.p (the exactly-once commit runs it on the poll
// goroutine).
func (u *unit) resumeRecord(up resumeUp) *kgo.Record {
	e := u.env
	p := up.p
	key := connectoffsets.SourceKey(e.cfg.Source, p.topic, p.partition)
	return &kgo.Record{Topic: e.resumeTopic, Key: key, Value: connectoffsets.SourceValue(up.off),
		Partition: connectoffsets.Partition(key, e.resumeParts), Headers: resumeIDs{p.remoteID, up.srcID}.headers()}
}
