package mirror

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodeTestBatch encodes an uncompressed v2 record batch at offset base
// with one record per value, without a producer id (as copied batches).
func encodeTestBatch(base int64, vals ...string) []byte {
	var recs []byte
	for i, v := range vals {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // the varint 0 written for Length
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{FirstOffset: base, Magic: 2, LastOffsetDelta: int32(len(vals) - 1), ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: int32(len(vals)), Records: recs}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[rbLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[rbCRC:], crc32.Checksum(out[rbAttributes:], castagnoli))
	return out
}

// TestShallowStalePartitionKeepsNothingQueued: a batch in flight when its
// partition was replaced by a successor state (a restarted or refilled
// partition) or stopped (its topic purged) came back refused: a batch the
// target takes only re-encoded (INVALID_TIMESTAMP) queued its decoded
// records on the old state again, and a retriable error (NOT_LEADER) kept
// the batch there. Nothing sends or drops an old state's items, so they
// stayed counted in the unit's buffer for good (enough of them stop every
// fetch of the unit). Now the batch is released, as when the unit stops.
func TestShallowStalePartitionKeepsNothingQueued(t *testing.T) {
	t.Parallel()
	k := tp{"orders", 0}
	for _, c := range []struct {
		name     string
		replaced bool // else stopped
		code     int16
	}{
		{"replaced, refused as it is", true, kerr.InvalidTimestamp.Code},
		{"replaced, retriable", true, kerr.NotLeaderForPartition.Code},
		{"stopped, refused as it is", false, kerr.InvalidTimestamp.Code},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := &unit{env: &unitEnv{}, box: newInbox(), codec: &followCodec{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			s := &shallow{u: u, parts: map[tp]*shPart{}, producing: map[int32]bool{1: true}}
			raw := encodeTestBatch(10, "a", "b", "c")
			it := &shItem{raw: raw, base: 10, n: 3, end: 13}
			copy(it.orig[:], raw) // the header as fetched, restored before a fallback
			old := &shPart{f: &feed{remote: "src.orders", gate: newProduceGate()}, k: k, items: []*shItem{it}, bytes: it.size(), inflight: true}
			s.buffered = it.size()
			s.parts[k] = old
			if c.replaced {
				s.dropItems(old) // as applyInbox does for a successor state
				s.parts[k] = &shPart{f: &feed{remote: "src.orders", gate: newProduceGate()}, k: k, gen: 1}
			} else {
				s.dropItems(old) // as applyInbox does for a purged topic
				old.gen++
				old.stopped = true
			}
			resp := kmsg.NewPtrProduceResponse()
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = "src.orders"
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.ErrorCode = c.code
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			s.produced(shProduced{broker: 1, parts: []*shPart{old}, resp: resp})
			if s.buffered != 0 || len(old.items) != 0 || old.bytes != 0 {
				t.Errorf("after the refused batch: the unit's buffer holds %d bytes, the old state %d items (%d bytes); want 0, 0, 0", s.buffered, len(old.items), old.bytes)
			}
			if s.fellBack != 0 {
				t.Errorf("%d batches of a stale state fell back to the normal path, want 0", s.fellBack)
			}
		})
	}
}
