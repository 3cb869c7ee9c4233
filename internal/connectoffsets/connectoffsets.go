// Package connectoffsets reads and writes the Kafka Connect source offsets
// that MM2's dedicated mode (connect-mirror-maker) stores for its
// connectors in "mm2-offsets.<source>.internal" on the target cluster
// (kmirror MM2 compatibility spec sections 1.1 and 2.6). kmirror needs them
// only to take over from, or hand back to, a Java MM2 deployment.
//
// Connect stores each offset under a JSON key
// [connectorName, sourcePartitionMap] and looks it up by the exact key
// bytes, so the writers here reproduce what Connect's schemaless
// JsonConverter (Jackson) produces: compact JSON, the map keys in Java
// HashMap iteration order, strings escaped as Jackson does (only '"', '\\'
// and control characters; non-ASCII written as raw UTF-8, no HTML escaping).
// The parsers accept any key order and whitespace.
package connectoffsets

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Connector names in dedicated mode (the connector class simple names).
const (
	SourceConnector     = "MirrorSourceConnector"
	CheckpointConnector = "MirrorCheckpointConnector"
	HeartbeatConnector  = "MirrorHeartbeatConnector"
)

// DefaultPartitions is the partition count of the Connect offsets topic
// (offset.storage.partitions default, DistributedConfig).
const DefaultPartitions = 25

// Errors returned by the parsers.
var (
	// ErrTombstone: the offset value is nil or the JSON literal null (the
	// offset was deleted).
	ErrTombstone = errors.New("connectoffsets: tombstone (offset deleted)")
	// ErrMalformed: the key or value is not the JSON shape MM2 writes.
	ErrMalformed = errors.New("connectoffsets: malformed offset record")
)

// TopicName returns the Connect offsets topic of the dedicated-mode herder
// for flows from sourceAlias: "mm2-offsets.<sourceAlias>.internal" (not
// affected by replication.policy.separator; MirrorMakerConfig.workerConfig).
func TopicName(sourceAlias string) string { return "mm2-offsets." + sourceAlias + ".internal" }

// Partition returns the partition of a topic with numPartitions partitions
// (e.g. [DefaultPartitions]) that Connect's producer writes key to: Kafka's
// default keyed partitioning, murmur2(key) with the sign bit cleared, modulo
// numPartitions (Utils.murmur2 / Utils.toPositive). A writer must use it so
// that its record lands in the same partition as Java's records for the same
// key, otherwise Connect's last-write-wins across partitions is undefined.
// It returns 0 if numPartitions < 1.
func Partition(key []byte, numPartitions int32) int32 {
	if numPartitions < 1 {
		return 0
	}
	return int32(murmur2(key)&0x7fffffff) % numPartitions
}

// Hash is Kafka's murmur2 of b with the sign bit cleared (Utils.murmur2
// followed by Utils.toPositive): the hash Kafka's default partitioner
// reduces modulo the partition count.
func Hash(b []byte) int32 { return int32(murmur2(b) & 0x7fffffff) }

// murmur2 is Kafka's 32-bit MurmurHash2 variant (seed 0x9747b28c,
// little-endian 4-byte blocks).
func murmur2(data []byte) uint32 {
	const (
		seed = uint32(0x9747b28c)
		mul  = uint32(0x5bd1e995)
		rot  = 24
	)
	h := seed ^ uint32(len(data))
	n := len(data) &^ 3
	for i := 0; i < n; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= mul
		k ^= k >> rot
		k *= mul
		h = h*mul ^ k
	}
	tail := data[n:]
	if len(tail) > 0 {
		for i := len(tail) - 1; i >= 0; i-- {
			h ^= uint32(tail[i]) << (8 * i)
		}
		h *= mul
	}
	h ^= h >> 13
	h *= mul
	h ^= h >> 15
	return h
}

// SourceKey returns the exact key bytes Connect writes for a
// MirrorSourceConnector source partition:
//
//	["MirrorSourceConnector",{"cluster":S,"partition":p,"topic":t}]
//
// with sourceAlias as S and the upstream (source-cluster) topic name as t.
// Strings are escaped like Jackson; invalid UTF-8 is written as U+FFFD.
func SourceKey(sourceAlias, topic string, partition int32) []byte {
	b := make([]byte, 0, 64+len(sourceAlias)+len(topic))
	b = append(b, '[')
	b = appendJSONString(b, SourceConnector)
	b = append(b, `,{"cluster":`...)
	b = appendJSONString(b, sourceAlias)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, `,"topic":`...)
	b = appendJSONString(b, topic)
	return append(b, "}]"...)
}

// SourceValue returns the offset value Connect writes for a
// MirrorSourceConnector partition: {"offset":o}, where o is the upstream
// offset of the last replicated record (a task resumes at o+1). Java never
// stores a negative offset; callers pass o >= 0.
func SourceValue(lastReplicatedOffset int64) []byte {
	b := make([]byte, 0, 32)
	b = append(b, `{"offset":`...)
	b = strconv.AppendInt(b, lastReplicatedOffset, 10)
	return append(b, '}')
}

// CheckpointKey returns the key Connect writes for a
// MirrorCheckpointConnector source partition:
//
//	["MirrorCheckpointConnector",{"partition":p,"topic":t,"group":g}]
//
// with t the downstream (target-local) topic name. Its value is always
// [ZeroValue].
func CheckpointKey(group, topic string, partition int32) []byte {
	b := make([]byte, 0, 64+len(group)+len(topic))
	b = append(b, '[')
	b = appendJSONString(b, CheckpointConnector)
	b = append(b, `,{"partition":`...)
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, `,"topic":`...)
	b = appendJSONString(b, topic)
	b = append(b, `,"group":`...)
	b = appendJSONString(b, group)
	return append(b, "}]"...)
}

// HeartbeatKey returns the key Connect writes for a
// MirrorHeartbeatConnector source partition:
//
//	["MirrorHeartbeatConnector",{"sourceClusterAlias":S,"targetClusterAlias":T}]
//
// Its value is always [ZeroValue].
func HeartbeatKey(sourceAlias, targetAlias string) []byte {
	b := make([]byte, 0, 80+len(sourceAlias)+len(targetAlias))
	b = append(b, '[')
	b = appendJSONString(b, HeartbeatConnector)
	b = append(b, `,{"sourceClusterAlias":`...)
	b = appendJSONString(b, sourceAlias)
	b = append(b, `,"targetClusterAlias":`...)
	b = appendJSONString(b, targetAlias)
	return append(b, "}]"...)
}

// ZeroValue returns {"offset":0}, the value the checkpoint and heartbeat
// connectors always store.
func ZeroValue() []byte { return SourceValue(0) }

// ParseSourceKey parses a MirrorSourceConnector offset key (any key order,
// any JSON whitespace, extra map keys ignored). It returns an error wrapping
// [ErrMalformed] unless the key is a two-element array of a string and an
// object with string "cluster" and "topic" and an integer "partition" in
// [0, 2147483647]. The connector name is returned as found; callers check
// it against [SourceConnector].
func ParseSourceKey(key []byte) (connector, sourceAlias, topic string, partition int32, err error) {
	var arr []json.RawMessage
	if err := unmarshal(key, &arr); err != nil {
		return "", "", "", 0, fmt.Errorf("%w: key %q: %w", ErrMalformed, clip(key), err)
	}
	if len(arr) != 2 {
		return "", "", "", 0, fmt.Errorf("%w: key %q: want [connector, partition], got %d elements", ErrMalformed, clip(key), len(arr))
	}
	if err := unmarshal(arr[0], &connector); err != nil {
		return "", "", "", 0, fmt.Errorf("%w: key %q: connector name: %w", ErrMalformed, clip(key), err)
	}
	var m map[string]json.RawMessage
	if err := unmarshal(arr[1], &m); err != nil || m == nil {
		return "", "", "", 0, fmt.Errorf("%w: key %q: source partition is not a JSON object", ErrMalformed, clip(key))
	}
	for name, dst := range map[string]*string{"cluster": &sourceAlias, "topic": &topic} {
		raw, ok := m[name]
		if !ok {
			return "", "", "", 0, fmt.Errorf("%w: key %q: missing %q", ErrMalformed, clip(key), name)
		}
		if err := unmarshal(raw, dst); err != nil {
			return "", "", "", 0, fmt.Errorf("%w: key %q: %q is not a string", ErrMalformed, clip(key), name)
		}
	}
	raw, ok := m["partition"]
	if !ok {
		return "", "", "", 0, fmt.Errorf("%w: key %q: missing \"partition\"", ErrMalformed, clip(key))
	}
	p, err := parseInt(raw, 0, math.MaxInt32)
	if err != nil {
		return "", "", "", 0, fmt.Errorf("%w: key %q: \"partition\": %w", ErrMalformed, clip(key), err)
	}
	return connector, sourceAlias, topic, int32(p), nil
}

// ParseSourceValue parses an offset value {"offset":o} (any whitespace,
// extra keys ignored) and returns o, which must be an integer >= 0. A nil
// value or the JSON literal null returns [ErrTombstone]; anything else that
// does not fit returns an error wrapping [ErrMalformed].
func ParseSourceValue(value []byte) (offset int64, err error) {
	if value == nil || string(trimJSONSpace(value)) == "null" {
		return 0, ErrTombstone
	}
	var m map[string]json.RawMessage
	if err := unmarshal(value, &m); err != nil || m == nil {
		return 0, fmt.Errorf("%w: value %q is not a JSON object", ErrMalformed, clip(value))
	}
	raw, ok := m["offset"]
	if !ok {
		return 0, fmt.Errorf("%w: value %q: missing \"offset\"", ErrMalformed, clip(value))
	}
	o, err := parseInt(raw, 0, math.MaxInt64)
	if err != nil {
		return 0, fmt.Errorf("%w: value %q: \"offset\": %w", ErrMalformed, clip(value), err)
	}
	return o, nil
}

// unmarshal decodes exactly one JSON value (no trailing data).
func unmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if len(trimJSONSpace(b[d.InputOffset():])) != 0 {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// trimJSONSpace trims the four JSON whitespace bytes.
func trimJSONSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// parseInt accepts a JSON integer literal (optional '-', digits, no
// fraction or exponent, not quoted) in [lo, hi].
func parseInt(raw json.RawMessage, lo, hi int64) (int64, error) {
	lit := string(trimJSONSpace(raw))
	digits := strings.TrimPrefix(lit, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		if strings.ContainsAny(digits, ".eE") && strings.Trim(digits, "0123456789.eE+-") == "" {
			return 0, fmt.Errorf("%s is not an integer", clip([]byte(lit)))
		}
		return 0, fmt.Errorf("%s is not a number", clip([]byte(lit)))
	}
	v, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not an integer in range", clip([]byte(lit)))
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%d is outside [%d, %d]", v, lo, hi)
	}
	return v, nil
}

// clip shortens raw input quoted in error messages.
func clip(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

const hexUpper = "0123456789ABCDEF"

// appendJSONString appends s as a JSON string the way Jackson's
// UTF8JsonGenerator does by default: '"' and '\\' backslash-escaped; \b,
// \t, \n, \f, \r short escapes; other code points below 0x20 as \u00XX with
// upper-case hex; everything else (including '/', '<', '>', '&', DEL,
// U+2028, U+2029 and all non-ASCII) as raw UTF-8. Invalid UTF-8 bytes are
// written as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexUpper[c>>4], hexUpper[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, r) // RuneError for invalid input
		i += size
	}
	return append(b, '"')
}
