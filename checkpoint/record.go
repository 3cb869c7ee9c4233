package checkpoint

import (
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/wire"
)

// Record codec errors. Encode and decode functions return errors wrapping
// them, with a message naming the field and its byte offset where there is
// one; test with errors.Is.
var (
	// ErrTombstone: the record value is nil (a Kafka tombstone). Java's
	// MirrorClient throws on such records; kmirror never writes them.
	ErrTombstone = errors.New("checkpoint: tombstone record (nil value)")
	// ErrNullKey: the record key is nil.
	ErrNullKey = errors.New("checkpoint: record has a nil key")
	// ErrMalformed: the key or value does not parse with the v0 layout
	// (Java: SchemaException; readers skip such records).
	ErrMalformed = errors.New("checkpoint: malformed record")
	// ErrUnknownVersion: a checkpoint value's version is not 0. The v0 prefix
	// was parsed and the record returned with this error is usable (Java
	// readers parse any version with the v0 layout and ignore trailing
	// bytes).
	ErrUnknownVersion = errors.New("checkpoint: unknown record version")
	// ErrNegativeOffset: an offset is negative. Writers refuse such
	// records; DecodeCheckpoint reports a negative downstream offset
	// (which makes Java's MirrorClient throw) but still returns the record.
	ErrNegativeOffset = errors.New("checkpoint: negative offset")
	// ErrNegativePartition: a writer was given a negative partition.
	ErrNegativePartition = errors.New("checkpoint: negative partition")
	// ErrStringTooLong: a writer was given a string (group, topic or
	// metadata) longer than 32767 bytes, the most a Kafka protocol STRING
	// holds.
	ErrStringTooLong = wire.ErrStringTooLong
)

// RecordVersion is the only version of the checkpoint value ever written
// (Checkpoint.VERSION = 0 since Kafka 2.4.0). OffsetSync records have no
// version field.
const RecordVersion int16 = 0

// Field names of the Java schemas, used in error messages.
const (
	fieldGroup          = "group"
	fieldTopic          = "topic"
	fieldPartition      = "partition"
	fieldVersion        = "version"
	fieldUpstreamOffset = "upstreamOffset"
	fieldOffset         = "offset"
	fieldMetadata       = "metadata"
)

// Checkpoint is one record of the "<source>.checkpoints.internal" topic on
// the target cluster (org.apache.kafka.connect.mirror.Checkpoint): consumer
// group Group's committed offset
// UpstreamOffset on the source cluster translated to DownstreamOffset on the
// target cluster.
//
// Topic is the downstream (target-local) name, already renamed by the
// replication policy (e.g. "us-east-1.orders"); Partition is the same on
// both clusters. Offsets are Kafka record offsets. Metadata is the commit
// metadata copied from the source group ("" when none).
type Checkpoint struct {
	Group            string
	Topic            string
	Partition        int32
	UpstreamOffset   int64
	DownstreamOffset int64
	Metadata         string
}

// Key returns the record key: STRING group, STRING topic, INT32 partition
// (exactly 2+len(Group)+2+len(Topic)+4 bytes). It fails, without a partial
// result, on a negative partition ([ErrNegativePartition]) or a string longer
// than 32767 bytes ([ErrStringTooLong]; the message names the field).
func (c Checkpoint) Key() ([]byte, error) {
	if c.Partition < 0 {
		return nil, fmt.Errorf("%w: %d (group %q, topic %q)", ErrNegativePartition, c.Partition, c.Group, c.Topic)
	}
	b := make([]byte, 0, wire.StringSize(c.Group)+wire.StringSize(c.Topic)+4)
	b, err := wire.AppendString(b, fieldGroup, c.Group)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: key: %w", err)
	}
	if b, err = wire.AppendString(b, fieldTopic, c.Topic); err != nil {
		return nil, fmt.Errorf("checkpoint: key: %w", err)
	}
	return wire.AppendInt32(b, c.Partition), nil
}

// Value returns the record value: INT16 version 0, INT64 upstreamOffset,
// INT64 offset (downstream), STRING metadata (exactly 20+len(Metadata)
// bytes, never nil). It fails on a negative offset ([ErrNegativeOffset]) or
// metadata longer than 32767 bytes ([ErrStringTooLong]).
func (c Checkpoint) Value() ([]byte, error) {
	if c.UpstreamOffset < 0 || c.DownstreamOffset < 0 {
		return nil, fmt.Errorf("%w: upstream %d, downstream %d (group %q, %s-%d)",
			ErrNegativeOffset, c.UpstreamOffset, c.DownstreamOffset, c.Group, c.Topic, c.Partition)
	}
	b := make([]byte, 0, 2+8+8+wire.StringSize(c.Metadata))
	b = wire.AppendInt16(b, RecordVersion)
	b = wire.AppendInt64(b, c.UpstreamOffset)
	b = wire.AppendInt64(b, c.DownstreamOffset)
	b, err := wire.AppendString(b, fieldMetadata, c.Metadata)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: value: %w", err)
	}
	return b, nil
}

// DecodeCheckpointKey parses a checkpoint record's key alone: the returned
// Checkpoint holds its Group, Topic and Partition, nothing else. It reads
// the key of a tombstone (nil value), which removes the earlier checkpoint
// of its key for every reader of the topic (MirrorClient keeps the last
// record of each key; compaction keeps none).
//
// Errors: nil key [ErrNullKey]; unparsable key [ErrMalformed], naming the
// field and its byte offset.
func DecodeCheckpointKey(key []byte) (Checkpoint, error) {
	var zero [2 + 8 + 8 + 2]byte // a version-0 value: offsets 0, empty metadata
	c, err := DecodeCheckpoint(key, zero[:])
	if err != nil {
		return Checkpoint{}, err
	}
	return Checkpoint{Group: c.Group, Topic: c.Topic, Partition: c.Partition}, nil
}

// DecodeCheckpoint parses a checkpoint record's key and value the way Java's
// Checkpoint.deserializeRecord does: the v0 layout, trailing bytes ignored.
//
// Errors:
//   - nil key: [ErrNullKey]; nil value: [ErrTombstone]; unparsable key or
//     value: [ErrMalformed], with a message naming the field and its byte
//     offset. The returned Checkpoint is then the zero value.
//   - version != 0: [ErrUnknownVersion]; downstream offset < 0:
//     [ErrNegativeOffset]. The returned Checkpoint is fully decoded and the
//     caller may use it (both may be reported at once, see errors.Join).
func DecodeCheckpoint(key, value []byte) (Checkpoint, error) {
	if key == nil {
		return Checkpoint{}, ErrNullKey
	}
	if value == nil {
		return Checkpoint{}, ErrTombstone
	}
	kr := wire.NewReader(key)
	c := Checkpoint{
		Group:     kr.String(fieldGroup),
		Topic:     kr.String(fieldTopic),
		Partition: kr.Int32(fieldPartition),
	}
	if err := kr.Err(); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: key: %w", ErrMalformed, err)
	}
	vr := wire.NewReader(value)
	version := vr.Int16(fieldVersion)
	c.UpstreamOffset = vr.Int64(fieldUpstreamOffset)
	c.DownstreamOffset = vr.Int64(fieldOffset)
	c.Metadata = vr.String(fieldMetadata)
	if err := vr.Err(); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: value: %w", ErrMalformed, err)
	}
	var errs []error
	if version != RecordVersion {
		errs = append(errs, fmt.Errorf("%w %d (group %q, %s-%d; parsed with the v0 layout)",
			ErrUnknownVersion, version, c.Group, c.Topic, c.Partition))
	}
	if c.DownstreamOffset < 0 {
		errs = append(errs, fmt.Errorf("%w: downstream offset %d (group %q, %s-%d)",
			ErrNegativeOffset, c.DownstreamOffset, c.Group, c.Topic, c.Partition))
	}
	return c, errors.Join(errs...)
}

// OffsetSync is one record of the offset-syncs topic
// (org.apache.kafka.connect.mirror.OffsetSync): the
// record at UpstreamOffset in partition Partition of the upstream
// (source-cluster, not renamed) topic Topic was written at DownstreamOffset
// in the same partition of the remote topic. Offsets are Kafka record
// offsets.
type OffsetSync struct {
	Topic            string
	Partition        int32
	UpstreamOffset   int64
	DownstreamOffset int64
}

// Key returns the record key: STRING topic, INT32 partition (no version;
// exactly 2+len(Topic)+4 bytes). It fails on a negative partition
// ([ErrNegativePartition]) or a topic longer than 32767 bytes
// ([ErrStringTooLong]).
func (s OffsetSync) Key() ([]byte, error) {
	if s.Partition < 0 {
		return nil, fmt.Errorf("%w: %d (offset sync for topic %q)", ErrNegativePartition, s.Partition, s.Topic)
	}
	b := make([]byte, 0, wire.StringSize(s.Topic)+4)
	b, err := wire.AppendString(b, fieldTopic, s.Topic)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: offset sync key: %w", err)
	}
	return wire.AppendInt32(b, s.Partition), nil
}

// Value returns the record value: INT64 upstreamOffset, INT64 offset
// (downstream); no version; exactly 16 bytes. It fails on a negative offset
// ([ErrNegativeOffset]).
func (s OffsetSync) Value() ([]byte, error) {
	if s.UpstreamOffset < 0 || s.DownstreamOffset < 0 {
		return nil, fmt.Errorf("%w: upstream %d, downstream %d (offset sync %s-%d)",
			ErrNegativeOffset, s.UpstreamOffset, s.DownstreamOffset, s.Topic, s.Partition)
	}
	b := make([]byte, 0, 16)
	b = wire.AppendInt64(b, s.UpstreamOffset)
	return wire.AppendInt64(b, s.DownstreamOffset), nil
}

// DecodeOffsetSync parses an offset-sync record's key and value like Java's
// OffsetSync.deserializeRecord: trailing bytes are ignored and offsets are
// not range-checked (callers decide what to do with negative ones).
//
// Errors: nil key [ErrNullKey]; nil value [ErrTombstone]; unparsable key or
// value [ErrMalformed], with a message naming the field and its byte offset.
// On error the returned OffsetSync is the zero value.
func DecodeOffsetSync(key, value []byte) (OffsetSync, error) {
	if key == nil {
		return OffsetSync{}, ErrNullKey
	}
	if value == nil {
		return OffsetSync{}, ErrTombstone
	}
	kr := wire.NewReader(key)
	s := OffsetSync{Topic: kr.String(fieldTopic), Partition: kr.Int32(fieldPartition)}
	if err := kr.Err(); err != nil {
		return OffsetSync{}, fmt.Errorf("%w: offset sync key: %w", ErrMalformed, err)
	}
	vr := wire.NewReader(value)
	s.UpstreamOffset = vr.Int64(fieldUpstreamOffset)
	s.DownstreamOffset = vr.Int64(fieldOffset)
	if err := vr.Err(); err != nil {
		return OffsetSync{}, fmt.Errorf("%w: offset sync value: %w", ErrMalformed, err)
	}
	return s, nil
}
