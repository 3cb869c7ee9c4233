package connectoffsets

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The record headers kmirror adds to the resume points it writes, each the
// 16-byte ID of a topic (Connect and MM2 ignore them):
//   - RemoteTopicIDHeader names the remote topic on the target the resume
//     point's records were written to;
//   - SourceTopicIDHeader names the source topic whose log the offset
//     belongs to.
const (
	RemoteTopicIDHeader = "kmirror-remote-topic-id"
	SourceTopicIDHeader = "kmirror-source-topic-id"
)

// SourcePartition is the source partition a resume point is kept for.
type SourcePartition struct {
	Topic     string
	Partition int32
}

// ResumePoint is the newest resume point of one source partition: Offset,
// the last source offset replicated (MirrorSourceConnector's {"offset":o}),
// and the topic IDs its headers record (zero when not recorded: written by
// Apache MM2 or an older kmirror).
type ResumePoint struct {
	Offset        int64
	RemoteTopicID [16]byte
	SourceTopicID [16]byte
}

// ResumePoints folds recs, records of a Connect offsets topic
// ("mm2-offsets.<source>.internal") in offset order, into the newest
// resume point of each partition of sourceAlias's MirrorSourceConnector,
// as Connect's offset store reads them: a later record of a key replaces
// the earlier one, and a tombstone (a nil value or the JSON null) deletes
// it. Other connectors' and other source aliases' keys, and keys that do
// not parse, are skipped. A value that does not parse is skipped too,
// keeping the earlier point, and reported to malformed (nil: not
// reported).
func ResumePoints(recs []*kgo.Record, sourceAlias string, malformed func(r *kgo.Record, err error)) map[SourcePartition]ResumePoint {
	out := map[SourcePartition]ResumePoint{}
	for _, r := range recs {
		conn, alias, t, p, err := ParseSourceKey(r.Key)
		if err != nil || conn != SourceConnector || alias != sourceAlias {
			continue
		}
		k := SourcePartition{t, p}
		off, err := ParseSourceValue(r.Value)
		switch {
		case errors.Is(err, ErrTombstone):
			delete(out, k)
			continue
		case err != nil:
			if malformed != nil {
				malformed(r, err)
			}
			continue
		}
		rp := ResumePoint{Offset: off}
		for _, h := range r.Headers {
			switch {
			case len(h.Value) != 16:
			case h.Key == RemoteTopicIDHeader:
				copy(rp.RemoteTopicID[:], h.Value)
			case h.Key == SourceTopicIDHeader:
				copy(rp.SourceTopicID[:], h.Value)
			}
		}
		out[k] = rp
	}
	return out
}
