package mirror

import (
	"encoding/binary"
	"hash/crc32"
)

// Record batch v2 layout (Kafka's DefaultRecordBatch), byte offsets of the
// fields shallow copy reads or rewrites.
const (
	rbBaseOffset      = 0  // int64
	rbLength          = 8  // int32: bytes after this field
	rbLeaderEpoch     = 12 // int32 partitionLeaderEpoch
	rbMagic           = 16 // int8
	rbCRC             = 17 // uint32 CRC-32C of bytes [rbAttributes, end)
	rbAttributes      = 21 // int16
	rbLastOffsetDelta = 23 // int32
	rbBaseTimestamp   = 27 // int64
	rbMaxTimestamp    = 35 // int64
	rbProducerID      = 43 // int64
	rbProducerEpoch   = 51 // int16
	rbBaseSequence    = 53 // int32
	rbNumRecords      = 57 // int32
	rbHeaderLen       = 61

	attrCodec         = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeader is the decoded v2 header of one fetched record batch.
type batchHeader struct {
	base       int64
	length     int // whole batch, in bytes
	magic      int8
	attrs      int16
	lastDelta  int32
	maxTs      int64
	producerID int64
	numRecords int32
}

func (h batchHeader) last() int64 { return h.base + int64(h.lastDelta) }

// readBatchHeader reads the header of the batch at the start of b; ok is
// false when b does not hold a whole batch (a fetch response may end with
// a partial one). A batch of magic 0 or 1 (a message set) returns its base
// and length only.
func readBatchHeader(b []byte) (h batchHeader, ok bool) {
	if len(b) < rbMagic+1 {
		return h, false
	}
	h.base = int64(binary.BigEndian.Uint64(b[rbBaseOffset:]))
	n := int64(int32(binary.BigEndian.Uint32(b[rbLength:]))) + 12
	if n < rbMagic+1 || n > int64(len(b)) {
		return h, false
	}
	h.length = int(n)
	h.magic = int8(b[rbMagic])
	if h.magic != 2 {
		return h, true
	}
	if h.length < rbHeaderLen {
		return h, false
	}
	h.attrs = int16(binary.BigEndian.Uint16(b[rbAttributes:]))
	h.lastDelta = int32(binary.BigEndian.Uint32(b[rbLastOffsetDelta:]))
	h.maxTs = int64(binary.BigEndian.Uint64(b[rbMaxTimestamp:]))
	h.producerID = int64(binary.BigEndian.Uint64(b[rbProducerID:]))
	h.numRecords = int32(binary.BigEndian.Uint32(b[rbNumRecords:]))
	return h, true
}

// copyable reports whether a v2 batch can be written to the target as it
// is, and if not, why (for the logs). pos is the next source offset the
// partition needs.
func (h batchHeader) copyable(pos int64) (bool, string) {
	switch {
	case h.magic != 2:
		return false, "message format v0/v1"
	case h.attrs&attrControl != 0:
		return false, "control batch"
	case h.base < pos:
		return false, "batch starts before the resume position"
	case h.numRecords <= 0 || int64(h.numRecords) != int64(h.lastDelta)+1:
		return false, "offsets not contiguous (compacted)"
	case h.attrs&attrLogAppendTime != 0:
		return false, "LogAppendTime timestamps"
	case h.attrs&attrDeleteHorizon != 0:
		return false, "delete horizon set"
	}
	return true, ""
}

// rewriteForProduce turns a fetched v2 batch into one a client may
// produce, in place: base offset 0, partition leader epoch -1, no producer
// id, epoch or sequence (a non-idempotent produce), the transactional bit
// cleared, and the CRC-32C recomputed. Codec, timestamps, the record count
// and the records' bytes are kept. orig receives the header as fetched,
// to restore it with restoreHeader.
func rewriteForProduce(b []byte, orig *[rbHeaderLen]byte) {
	copy(orig[:], b[:rbHeaderLen])
	binary.BigEndian.PutUint64(b[rbBaseOffset:], 0)
	binary.BigEndian.PutUint32(b[rbLeaderEpoch:], 0xffffffff)
	attrs := binary.BigEndian.Uint16(b[rbAttributes:]) &^ attrTransactional
	binary.BigEndian.PutUint16(b[rbAttributes:], attrs)
	binary.BigEndian.PutUint64(b[rbProducerID:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[rbProducerEpoch:], 0xffff)
	binary.BigEndian.PutUint32(b[rbBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[rbCRC:], crc32.Checksum(b[rbAttributes:], castagnoli))
}

// restoreHeader undoes rewriteForProduce (the batch as fetched, CRC valid).
func restoreHeader(b []byte, orig *[rbHeaderLen]byte) { copy(b, orig[:]) }
