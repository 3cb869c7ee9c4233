package verify

import (
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fields holds what is compared of one record: a hash of the key, of the
// value and of the headers (ignored keys dropped, order kept), and the
// timestamp in Unix milliseconds. Full records are never kept.
type fields struct {
	key, val, hdr uint64
	ts            int64
}

// Field names used in reports (Alteration.Fields).
const (
	FieldKey       = "key"
	FieldValue     = "value"
	FieldHeaders   = "headers"
	FieldTimestamp = "timestamp"
)

// hasher computes fields and fingerprints. One per goroutine (maphash.Hash
// is not safe for concurrent use); every hasher of a run shares one seed so
// source and target hashes compare.
type hasher struct {
	seed    maphash.Seed
	h       maphash.Hash
	ignored []string // header keys dropped on both sides, sorted
	n       [8]byte
}

func newHasher(seed maphash.Seed, ignored []string) *hasher {
	h := &hasher{seed: seed, ignored: ignored}
	h.h.SetSeed(seed)
	return h
}

// bytes hashes b, telling nil (a Kafka null: a tombstone value, a record
// without key) from empty.
func (h *hasher) bytes(b []byte) uint64 {
	h.h.Reset()
	if b == nil {
		h.h.WriteByte(0)
	} else {
		h.h.WriteByte(1)
		h.h.Write(b)
	}
	return h.h.Sum64()
}

func (h *hasher) headers(hs []kgo.RecordHeader) uint64 {
	h.h.Reset()
	for _, rh := range hs {
		if _, skip := slices.BinarySearch(h.ignored, rh.Key); skip {
			continue
		}
		binary.BigEndian.PutUint32(h.n[:4], uint32(len(rh.Key)))
		h.h.Write(h.n[:4])
		h.h.WriteString(rh.Key)
		if rh.Value == nil {
			h.h.WriteByte(0)
		} else {
			h.h.WriteByte(1)
			binary.BigEndian.PutUint32(h.n[:4], uint32(len(rh.Value)))
			h.h.Write(h.n[:4])
			h.h.Write(rh.Value)
		}
	}
	return h.h.Sum64()
}

func (h *hasher) fields(r *kgo.Record) fields {
	return fields{key: h.bytes(r.Key), val: h.bytes(r.Value), hdr: h.headers(r.Headers), ts: r.Timestamp.UnixMilli()}
}

// fingerprint combines the compared fields into one hash; the timestamp
// takes part only when withTS is set.
func (h *hasher) fingerprint(f fields, withTS bool) uint64 {
	var b [32]byte
	binary.LittleEndian.PutUint64(b[0:], f.key)
	binary.LittleEndian.PutUint64(b[8:], f.val)
	binary.LittleEndian.PutUint64(b[16:], f.hdr)
	n := 24
	if withTS {
		binary.LittleEndian.PutUint64(b[24:], uint64(f.ts))
		n = 32
	}
	return maphash.Bytes(h.seed, b[:n])
}

// diff names the fields that differ between a (source) and b (target).
func diff(a, b fields, withTS bool) []string {
	var out []string
	if a.key != b.key {
		out = append(out, FieldKey)
	}
	if a.val != b.val {
		out = append(out, FieldValue)
	}
	if a.hdr != b.hdr {
		out = append(out, FieldHeaders)
	}
	if withTS && a.ts != b.ts {
		out = append(out, FieldTimestamp)
	}
	return out
}
