// Package heartbeat implements MM2's heartbeats: the record format of the
// "heartbeats" topic ([Heartbeat], [Decode]) and the [Emitter] that writes
// it.
//
// A heartbeat record is written by the flow source->target to the
// heartbeats topic on the target cluster and is itself replicated further
// ("<alias>.heartbeats", then "<alias2>.<alias>.heartbeats" one hop
// further), which is how MirrorClient discovers the replication topology
// from topic names alone.
package heartbeat

import (
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/wire"
)

// Record codec errors. Key, Value and Decode return errors wrapping them,
// with a message naming the field and its byte offset where there is one;
// test with errors.Is.
var (
	// ErrTombstone: the record value is nil (a Kafka tombstone).
	ErrTombstone = errors.New("heartbeat: tombstone record (nil value)")
	// ErrNullKey: the record key is nil.
	ErrNullKey = errors.New("heartbeat: record has a nil key")
	// ErrMalformed: the key or value does not parse with the v0 layout
	// (Java: SchemaException).
	ErrMalformed = errors.New("heartbeat: malformed record")
	// ErrUnknownVersion: the value's version is not 0. The v0 prefix was
	// parsed and the Heartbeat returned with this error is usable (Java
	// readers parse any version with the v0 layout and ignore trailing
	// bytes).
	ErrUnknownVersion = errors.New("heartbeat: unknown record version")
	// ErrNegativeTimestamp: a writer was given a timestamp before the epoch.
	ErrNegativeTimestamp = errors.New("heartbeat: negative timestamp")
	// ErrStringTooLong: a writer was given a cluster alias longer than 32767
	// bytes, the most a Kafka protocol STRING holds.
	ErrStringTooLong = wire.ErrStringTooLong
)

// RecordVersion is the only version of the heartbeat value ever written
// (Heartbeat.VERSION = 0 since Kafka 2.4.0).
const RecordVersion int16 = 0

// Heartbeat is one record of the heartbeats topic
// (org.apache.kafka.connect.mirror.Heartbeat). The
// aliases are those of the flow that emitted it and are not rewritten when
// the record is replicated to further clusters. Timestamp is the emission
// time in milliseconds since the Unix epoch (also used as the Kafka record
// timestamp).
type Heartbeat struct {
	SourceClusterAlias string
	TargetClusterAlias string
	Timestamp          int64 // epoch ms
}

// Key returns the record key: STRING sourceClusterAlias, STRING
// targetClusterAlias (exactly 4+len(source)+len(target) bytes). It fails,
// without a partial result, on an alias longer than 32767 bytes
// ([ErrStringTooLong]; the message names the field).
func (h Heartbeat) Key() ([]byte, error) {
	b := make([]byte, 0, wire.StringSize(h.SourceClusterAlias)+wire.StringSize(h.TargetClusterAlias))
	b, err := wire.AppendString(b, "sourceClusterAlias", h.SourceClusterAlias)
	if err != nil {
		return nil, fmt.Errorf("heartbeat: key: %w", err)
	}
	if b, err = wire.AppendString(b, "targetClusterAlias", h.TargetClusterAlias); err != nil {
		return nil, fmt.Errorf("heartbeat: key: %w", err)
	}
	return b, nil
}

// Value returns the record value: INT16 version 0, INT64 timestamp
// (exactly 10 bytes). It fails on a negative timestamp
// ([ErrNegativeTimestamp]).
func (h Heartbeat) Value() ([]byte, error) {
	if h.Timestamp < 0 {
		return nil, fmt.Errorf("%w: %d ms (heartbeat %s->%s)",
			ErrNegativeTimestamp, h.Timestamp, h.SourceClusterAlias, h.TargetClusterAlias)
	}
	b := make([]byte, 0, 10)
	b = wire.AppendInt16(b, RecordVersion)
	return wire.AppendInt64(b, h.Timestamp), nil
}

// Decode parses a heartbeat record's key and value the way Java's
// Heartbeat.deserializeRecord does: the v0 layout, trailing bytes ignored,
// the timestamp not range-checked.
//
// Errors: nil key [ErrNullKey]; nil value [ErrTombstone]; unparsable key or
// value [ErrMalformed] (the message names the field and its byte offset);
// in these cases the Heartbeat is the zero value. A version other than 0
// returns the decoded Heartbeat together with an error wrapping
// [ErrUnknownVersion]; the caller may use the record.
func Decode(key, value []byte) (Heartbeat, error) {
	if key == nil {
		return Heartbeat{}, ErrNullKey
	}
	if value == nil {
		return Heartbeat{}, ErrTombstone
	}
	kr := wire.NewReader(key)
	h := Heartbeat{
		SourceClusterAlias: kr.String("sourceClusterAlias"),
		TargetClusterAlias: kr.String("targetClusterAlias"),
	}
	if err := kr.Err(); err != nil {
		return Heartbeat{}, fmt.Errorf("%w: key: %w", ErrMalformed, err)
	}
	vr := wire.NewReader(value)
	version := vr.Int16("version")
	h.Timestamp = vr.Int64("timestamp")
	if err := vr.Err(); err != nil {
		return Heartbeat{}, fmt.Errorf("%w: value: %w", ErrMalformed, err)
	}
	if version != RecordVersion {
		return h, fmt.Errorf("%w %d (heartbeat %s->%s; parsed with the v0 layout)",
			ErrUnknownVersion, version, h.SourceClusterAlias, h.TargetClusterAlias)
	}
	return h, nil
}
