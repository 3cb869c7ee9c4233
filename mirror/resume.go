package mirror

import (
	"context"
	"fmt"
	"log/slog"

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
// kmirror adds one record header, which Connect ignores:
// kmirror-remote-topic-id, the ID of the remote topic the resume point's
// records were written to. A unit starting on a resume point whose remote
// topic has another ID now (deleted and re-created on the target while no
// unit replicated the partition) refills the new remote topic from the
// source's log start instead of resuming after records it no longer holds.

// remoteTopicIDHeader is the resume points' header naming the remote
// topic's ID (16 bytes).
const remoteTopicIDHeader = "kmirror-remote-topic-id"

// remoteIDHeaders returns the header recording remote topic ID id (none
// when id is unknown).
func remoteIDHeaders(id kadm.TopicID) []kgo.RecordHeader {
	if id == (kadm.TopicID{}) {
		return nil
	}
	return []kgo.RecordHeader{{Key: remoteTopicIDHeader, Value: append([]byte(nil), id[:]...)}}
}

// remoteIDOf returns the remote topic ID a resume point records (zero:
// none, e.g. written by MM2 or an older kmirror).
func remoteIDOf(hs []kgo.RecordHeader) kadm.TopicID {
	var id kadm.TopicID
	for _, h := range hs {
		if h.Key == remoteTopicIDHeader && len(h.Value) == len(id) {
			copy(id[:], h.Value)
		}
	}
	return id
}

// readResumePoints reads the resume-point topic to its end offsets and
// returns the last replicated offset of every source partition of source
// (the last record per key wins; a tombstone deletes). It reads
// read_committed, so a resume point written in an aborted transaction (an
// exactly-once writer that was fenced or crashed) is never taken as
// progress, and it waits for the transactions open at the call to end.
//
// ids holds, per source partition, the remote topic ID its last resume
// point records (absent: none recorded).
func readResumePoints(ctx context.Context, opts []kgo.Opt, topic, source string, log *slog.Logger) (out map[tp]int64, ids map[tp]kadm.TopicID, err error) {
	recs, err := kread.ReadToEnd(ctx, opts, topic, kread.Options{ReadCommitted: true})
	if err != nil {
		return nil, nil, err
	}
	out, ids = map[tp]int64{}, map[tp]kadm.TopicID{}
	for _, r := range recs {
		conn, alias, t, part, err := connectoffsets.ParseSourceKey(r.Key)
		if err != nil || conn != "MirrorSourceConnector" || alias != source {
			continue // other connectors' or other flows' entries, or foreign data
		}
		if r.Value == nil {
			delete(out, tp{t, part})
			delete(ids, tp{t, part})
			continue
		}
		off, err := connectoffsets.ParseSourceValue(r.Value)
		if err != nil {
			log.Warn("skipping malformed resume point", "topic", topic, "offset", r.Offset, "err", err)
			continue
		}
		out[tp{t, part}] = off
		if id := remoteIDOf(r.Headers); id != (kadm.TopicID{}) {
			ids[tp{t, part}] = id
		} else {
			delete(ids, tp{t, part})
		}
	}
	return out, ids, nil
}

// resumeTopicPartitions creates the resume-point topic if needed (compacted,
// Connect's default 25 partitions) and returns its partition count.
func (f *flow) resumeTopicPartitions(ctx context.Context) (int32, error) {
	if err := createCompacted(ctx, f.dstAdm, f.dst.Alias, f.resumeTopic, connectoffsets.DefaultPartitions, f.cfg.OffsetStorageReplicationFactor); err != nil {
		return 0, err
	}
	td, err := f.dstAdm.ListTopics(ctx, f.resumeTopic)
	if err != nil {
		return 0, err
	}
	d, ok := td[f.resumeTopic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		if ok && d.Err != nil {
			return 0, d.Err
		}
		return 0, fmt.Errorf("topic %s not visible yet", f.resumeTopic)
	}
	return int32(len(d.Partitions)), nil
}
