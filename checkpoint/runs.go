package checkpoint

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/wire"
)

// RunRecordVersion is the version written in the key and value of an
// [OffsetRun] record. Readers parse any version with the version-0 layout
// and ignore trailing bytes, so a later version may only append fields.
const RunRecordVersion int16 = 0

// Field names of the offset-run record, used in error messages.
const (
	fieldSession     = "session"
	fieldTopicID     = "topicId"
	fieldFlags       = "flags"
	fieldSessionUp   = "sessionUpstreamOffset"
	fieldSessionDown = "sessionOffset"
	fieldPrevUp      = "prevUpstreamOffset"
	fieldPrevDown    = "prevOffset"
	fieldFirstUp     = "firstUpstreamOffset"
	fieldFirstDown   = "firstOffset"
	fieldCount       = "count"
	fieldEndUp       = "endUpstreamOffset"
	fieldReadFrom    = "readFromUpstreamOffset"
	fieldCommitted   = "committedUpstreamOffset"
)

// runFlagFresh marks a session that started with no resume point: the
// first replication of its source topic incarnation to the target.
const runFlagFresh = 1

// OffsetRun is one record of kmirror's offset-runs topic
// ([OffsetRunsTopic]): the proof, kept by the replicator from the target's
// acknowledgements, that a run of source records landed contiguously on the
// target. It is kmirror's own record (MM2 has no equivalent and never reads
// the topic); it lets the checkpoint emitter translate every group offset
// exactly instead of to one past the nearest [OffsetSync].
//
// A replication session (one replicator's uninterrupted copying of one
// source partition, identified by the random Session) acknowledged, in this
// order and with nothing between them:
//
//   - if PrevUpstreamOffset >= 0: the record at PrevUpstreamOffset, at
//     target offset PrevOffset; the target offsets between PrevOffset and
//     FirstOffset, if any, hold no copied record (they are the session's
//     own transaction markers), and the source offsets between
//     PrevUpstreamOffset and FirstUpstreamOffset held no record the session
//     copied (compaction holes, transaction markers, aborted or filtered
//     records);
//   - the Count records at source offsets FirstUpstreamOffset,
//     FirstUpstreamOffset+1, ... at target offsets FirstOffset,
//     FirstOffset+1, ...
//
// PrevUpstreamOffset and PrevOffset are -1 when the run is the first of its
// session or follows a target offset the session did not write (a gap in
// the target partition). SessionUpstreamOffset and SessionOffset name the
// session's first record. ReadFrom is the source offset the session
// started reading at (its resume point plus one; 0 when Fresh and read
// from the log start; the first record's offset when it started at the
// log end with no resume point, auto.offset.reset=latest): it passed
// every source offset from there on, so copies made by earlier sessions of
// records it passed are no longer last copies. Fresh says the session
// started with no resume point (the first replication of this source-topic
// incarnation, or one after a crash before any resume point was stored).
// Committed is the resume point the session had stored when it wrote the
// record (-1 none): a later session reads from after it at the earliest.
// TopicID is the source topic's ID (the incarnation; all zero if
// unknown). EndUpstreamOffset, when not -1, is the source position the
// session had read when it wrote the record while nothing was in flight:
// the source offsets after the run up to it held nothing to copy.
//
// Records are written to partition 0 as a session goes: the same run is
// written again as it grows, keyed by (Topic, Partition, Session,
// FirstOffset), so that compaction keeps the longest version of every run
// (the topic is created with cleanup.policy=compact,delete: runs older than
// its retention are deleted, and group offsets that old are translated
// from the offset syncs).
type OffsetRun struct {
	Topic     string
	Partition int32
	Session   uint64
	TopicID   [16]byte
	Fresh     bool

	SessionUpstreamOffset, SessionOffset int64
	PrevUpstreamOffset, PrevOffset       int64
	FirstUpstreamOffset, FirstOffset     int64
	Count                                int64
	EndUpstreamOffset                    int64
	ReadFrom                             int64
	Committed                            int64
}

// LastUpstreamOffset returns the source offset of the run's last record.
func (r OffsetRun) LastUpstreamOffset() int64 { return r.FirstUpstreamOffset + r.Count - 1 }

// LastOffset returns the target offset of the run's last record.
func (r OffsetRun) LastOffset() int64 { return r.FirstOffset + r.Count - 1 }

// validate checks the invariants every writer keeps.
func (r OffsetRun) validate() error {
	switch {
	case r.Partition < 0:
		return fmt.Errorf("%w: %d (offset run for topic %q)", ErrNegativePartition, r.Partition, r.Topic)
	case r.Count < 1:
		return fmt.Errorf("%w: offset run %s-%d has %d records, want at least 1", ErrMalformed, r.Topic, r.Partition, r.Count)
	case r.FirstUpstreamOffset < 0 || r.FirstOffset < 0 || r.SessionUpstreamOffset < 0 || r.SessionOffset < 0:
		return fmt.Errorf("%w: offset run %s-%d: first %d->%d, session %d->%d", ErrNegativeOffset,
			r.Topic, r.Partition, r.FirstUpstreamOffset, r.FirstOffset, r.SessionUpstreamOffset, r.SessionOffset)
	case r.SessionUpstreamOffset > r.FirstUpstreamOffset || r.SessionOffset > r.FirstOffset:
		return fmt.Errorf("%w: offset run %s-%d starts at %d->%d, before its session's first record %d->%d", ErrMalformed,
			r.Topic, r.Partition, r.FirstUpstreamOffset, r.FirstOffset, r.SessionUpstreamOffset, r.SessionOffset)
	case (r.PrevUpstreamOffset < 0) != (r.PrevOffset < 0),
		r.PrevUpstreamOffset >= r.FirstUpstreamOffset, r.PrevOffset >= r.FirstOffset:
		return fmt.Errorf("%w: offset run %s-%d: previous record %d->%d does not precede the run's first %d->%d", ErrMalformed,
			r.Topic, r.Partition, r.PrevUpstreamOffset, r.PrevOffset, r.FirstUpstreamOffset, r.FirstOffset)
	case r.FirstUpstreamOffset > (1<<63-1)-r.Count || r.FirstOffset > (1<<63-1)-r.Count:
		return fmt.Errorf("%w: offset run %s-%d of %d records overflows int64", ErrMalformed, r.Topic, r.Partition, r.Count)
	case r.Committed < -1:
		return fmt.Errorf("%w: offset run %s-%d: resume point %d", ErrNegativeOffset, r.Topic, r.Partition, r.Committed)
	case r.ReadFrom < 0 || r.ReadFrom > r.SessionUpstreamOffset:
		return fmt.Errorf("%w: offset run %s-%d: session read from %d, after its first record %d", ErrMalformed,
			r.Topic, r.Partition, r.ReadFrom, r.SessionUpstreamOffset)
	case r.EndUpstreamOffset >= 0 && r.EndUpstreamOffset <= r.LastUpstreamOffset():
		return fmt.Errorf("%w: offset run %s-%d: end position %d is not after its last record %d", ErrMalformed,
			r.Topic, r.Partition, r.EndUpstreamOffset, r.LastUpstreamOffset())
	}
	return nil
}

// Key returns the record key: INT16 version, STRING topic, INT32 partition,
// INT64 session, INT64 FirstOffset. It fails on a negative partition or a
// topic longer than 32767 bytes.
func (r OffsetRun) Key() ([]byte, error) {
	if r.Partition < 0 {
		return nil, fmt.Errorf("%w: %d (offset run for topic %q)", ErrNegativePartition, r.Partition, r.Topic)
	}
	b := make([]byte, 0, 2+wire.StringSize(r.Topic)+4+8+8)
	b = wire.AppendInt16(b, RunRecordVersion)
	b, err := wire.AppendString(b, fieldTopic, r.Topic)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: offset run key: %w", err)
	}
	b = wire.AppendInt32(b, r.Partition)
	b = wire.AppendInt64(b, int64(r.Session))
	return wire.AppendInt64(b, r.FirstOffset), nil
}

// Value returns the record value: INT16 version, 16 bytes topic ID, INT8
// flags (bit 0: Fresh), then INT64 SessionUpstreamOffset, SessionOffset,
// PrevUpstreamOffset, PrevOffset, FirstUpstreamOffset, FirstOffset, Count
// EndUpstreamOffset, ReadFrom and Committed (99 bytes). It fails, naming the bad values, when
// the run breaks the rules documented on [OffsetRun].
func (r OffsetRun) Value() ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 2+16+1+10*8)
	b = wire.AppendInt16(b, RunRecordVersion)
	b = append(b, r.TopicID[:]...)
	var flags byte
	if r.Fresh {
		flags |= runFlagFresh
	}
	b = append(b, flags)
	for _, v := range []int64{r.SessionUpstreamOffset, r.SessionOffset, r.PrevUpstreamOffset, r.PrevOffset,
		r.FirstUpstreamOffset, r.FirstOffset, r.Count, r.EndUpstreamOffset, r.ReadFrom, r.Committed} {
		b = wire.AppendInt64(b, v)
	}
	return b, nil
}

// DecodeOffsetRun parses an offset-run record. Any version is parsed with
// the version-0 layout and trailing bytes are ignored. Errors: nil key
// [ErrNullKey]; nil value [ErrTombstone]; unparsable key or value, or a run
// that breaks the rules of [OffsetRun], [ErrMalformed] (or
// [ErrNegativeOffset], [ErrNegativePartition]); the returned run is then
// the zero value.
func DecodeOffsetRun(key, value []byte) (OffsetRun, error) {
	if key == nil {
		return OffsetRun{}, ErrNullKey
	}
	if value == nil {
		return OffsetRun{}, ErrTombstone
	}
	kr := wire.NewReader(key)
	kr.Int16(fieldVersion)
	r := OffsetRun{Topic: kr.String(fieldTopic), Partition: kr.Int32(fieldPartition)}
	r.Session = uint64(kr.Int64(fieldSession))
	kr.Int64(fieldFirstDown) // repeated in the value
	if err := kr.Err(); err != nil {
		return OffsetRun{}, fmt.Errorf("%w: offset run key: %w", ErrMalformed, err)
	}
	if len(value) < 2+16+1 {
		return OffsetRun{}, fmt.Errorf("%w: offset run value of %d bytes, want at least 99", ErrMalformed, len(value))
	}
	copy(r.TopicID[:], value[2:18])
	r.Fresh = value[18]&runFlagFresh != 0
	vr := wire.NewReader(value[19:])
	r.SessionUpstreamOffset = vr.Int64(fieldSessionUp)
	r.SessionOffset = vr.Int64(fieldSessionDown)
	r.PrevUpstreamOffset = vr.Int64(fieldPrevUp)
	r.PrevOffset = vr.Int64(fieldPrevDown)
	r.FirstUpstreamOffset = vr.Int64(fieldFirstUp)
	r.FirstOffset = vr.Int64(fieldFirstDown)
	r.Count = vr.Int64(fieldCount)
	r.EndUpstreamOffset = vr.Int64(fieldEndUp)
	r.ReadFrom = vr.Int64(fieldReadFrom)
	r.Committed = vr.Int64(fieldCommitted)
	if err := vr.Err(); err != nil {
		return OffsetRun{}, fmt.Errorf("%w: offset run value: %w", ErrMalformed, err)
	}
	if err := r.validate(); err != nil {
		return OffsetRun{}, err
	}
	return r, nil
}

// OffsetRunsRetention is the retention.ms kmirror sets on the offset-runs
// topic: 7 days. Offset runs older than that are deleted; group offsets
// older than every remaining run are translated from the offset syncs.
const OffsetRunsRetention = 7 * 24 * time.Hour

// OffsetRunsTopicConfig returns the topic configs the offset-runs topic is
// created with (1 partition): cleanup.policy=compact,delete (the newest
// version of every run is kept, and runs are deleted after
// [OffsetRunsRetention]) and retention.ms.
func OffsetRunsTopicConfig() map[string]*string {
	policy, retention := "compact,delete", strconv.FormatInt(OffsetRunsRetention.Milliseconds(), 10)
	return map[string]*string{"cleanup.policy": &policy, "retention.ms": &retention}
}

// offsetSyncsPrefix is the name prefix of MM2's offset-syncs topic.
const offsetSyncsPrefix = "mm2-offset-syncs"

// offsetRunsPrefix replaces it in the name of the offset-runs topic.
const offsetRunsPrefix = "mm2-kmirror-runs"

// OffsetRunsTopic returns the name of kmirror's offset-runs topic that goes
// with the offset-syncs topic offsetSyncsTopic, on the same cluster:
// "mm2-offset-syncs.<alias>.internal" becomes
// "mm2-kmirror-runs.<alias>.internal" (the separator kept, so MM2's
// ReplicationPolicy.isInternalTopic holds for it and MM2 never replicates
// it); a name without that
// prefix (a custom replication policy) gets "mm2-kmirror-runs." in front.
// It returns "" for an empty name.
func OffsetRunsTopic(offsetSyncsTopic string) string {
	if offsetSyncsTopic == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(offsetSyncsTopic, offsetSyncsPrefix); ok {
		return offsetRunsPrefix + rest
	}
	return offsetRunsPrefix + "." + offsetSyncsTopic
}
