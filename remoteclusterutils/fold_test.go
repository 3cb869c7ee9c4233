package remoteclusterutils

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/kmirror/kmirror/checkpoint"
)

// FuzzFold feeds arbitrary record sequences to the folder: it must never
// panic, every record is counted exactly once, and every kept checkpoint is
// usable (non-negative offset and partition, non-empty topic) and equal to
// the last valid record of its key.
//
// Input framing, repeated: flags byte (bit 0 nil key, bit 1 nil value),
// key length byte, key, value length byte, value.
func FuzzFold(f *testing.F) {
	frame := func(flags byte, key, value []byte) []byte {
		b := []byte{flags, byte(len(key))}
		b = append(b, key...)
		b = append(b, byte(len(value)))
		return append(b, value...)
	}
	k := func(g, t string, p int32) []byte {
		b, _ := checkpoint.Checkpoint{Group: g, Topic: t}.Key()
		return binary.BigEndian.AppendUint32(b[:len(b)-4], uint32(p))
	}
	v := func(up, down int64, md string) []byte {
		b := binary.BigEndian.AppendUint16(nil, 0)
		b = binary.BigEndian.AppendUint64(b, uint64(up))
		b = binary.BigEndian.AppendUint64(b, uint64(down))
		b = binary.BigEndian.AppendUint16(b, uint16(len(md)))
		return append(b, md...)
	}
	var seed []byte
	seed = append(seed, frame(0, k("g", "t", 0), v(1, 1, ""))...)
	seed = append(seed, frame(0, k("g", "t", 0), v(5, 3, "m"))...)
	seed = append(seed, frame(2, k("g", "t", 0), nil)...)
	seed = append(seed, frame(0, k("g", "t", 1), v(5, -3, ""))...)
	seed = append(seed, frame(1, nil, v(5, 3, ""))...)
	seed = append(seed, frame(0, []byte{0, 200}, []byte{1})...)
	f.Add(seed, "g")
	f.Add([]byte{}, "")

	f.Fuzz(func(t *testing.T, data []byte, group string) {
		for _, all := range []bool{false, true} {
			fo := newFolder(group, all, nil)
			want := map[ckey]checkpoint.Checkpoint{}
			n := 0
			for off := int64(0); len(data) >= 2; off++ {
				flags, kl := data[0], int(data[1])
				data = data[2:]
				key := data[:min(kl, len(data))]
				data = data[len(key):]
				var value []byte
				if len(data) > 0 {
					vl := int(data[0])
					data = data[1:]
					value = data[:min(vl, len(data))]
					data = data[len(value):]
				}
				if flags&1 != 0 {
					key = nil
				}
				if flags&2 != 0 {
					value = nil
				}
				fo.add(off, key, value)
				n++
				// Reference model.
				c, err := checkpoint.DecodeCheckpoint(key, value)
				if value == nil && key != nil {
					if kc, kerr := checkpoint.DecodeCheckpointKey(key); kerr == nil {
						delete(want, ckey{kc.Group, kc.Topic, kc.Partition})
					}
					continue
				}
				if (err == nil || errors.Is(err, checkpoint.ErrUnknownVersion)) && c.DownstreamOffset >= 0 && c.Partition >= 0 && c.Topic != "" && (all || c.Group == group) {
					want[ckey{c.Group, c.Topic, c.Partition}] = c
				}
			}
			s := fo.stats
			if s.Records != n || s.Checkpoints+s.Skipped() != n {
				t.Fatalf("stats %+v do not account for %d records", s, n)
			}
			if len(want) != len(fo.latest) {
				t.Fatalf("kept %d checkpoints, model %d", len(fo.latest), len(want))
			}
			for key, c := range fo.latest {
				if want[key] != c {
					t.Fatalf("kept %+v for %+v, model %+v", c, key, want[key])
				}
				if c.DownstreamOffset < 0 || c.Partition < 0 || c.Topic == "" {
					t.Fatalf("kept unusable checkpoint %+v", c)
				}
			}
			if !all {
				for _, ps := range fo.offsets() {
					for _, o := range ps {
						if o.At < 0 || o.LeaderEpoch != -1 {
							t.Fatalf("bad offset %+v", o)
						}
					}
				}
			}
		}
	})
}
