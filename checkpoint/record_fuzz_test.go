package checkpoint_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kmirror/kmirror/checkpoint"
)

// FuzzDecodeCheckpoint: decoding never panics; a record that decodes
// without error re-encodes to the exact input when the input is a v0 record
// without trailing bytes, and to a prefix of it otherwise.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(unhex(f, specCheckpointKey), unhex(f, specCheckpointValue))
	f.Add(unhex(f, specCheckpointKey), unhex(f, `00 01 00 00 00 00 00 00 00 64 00 00 00 00 00 00 00 5f 00 02 c3 a9 ff`))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, []byte{0xff, 0xff})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, err := checkpoint.DecodeCheckpoint(key, value)
		if err != nil && !errors.Is(err, checkpoint.ErrUnknownVersion) && !errors.Is(err, checkpoint.ErrNegativeOffset) {
			if c != (checkpoint.Checkpoint{}) {
				t.Fatalf("fatal error %v with non-zero record %+v", err, c)
			}
			return
		}
		if c.Partition < 0 || c.UpstreamOffset < 0 || c.DownstreamOffset < 0 {
			return // not writable by design
		}
		k, kerr := c.Key()
		v, verr := c.Value()
		if kerr != nil || verr != nil {
			t.Fatalf("re-encode %+v: %v / %v", c, kerr, verr)
		}
		if !bytes.HasPrefix(key, k) {
			t.Fatalf("key %x does not start with re-encoded %x", key, k)
		}
		// The version bytes may differ (writers always write 0).
		if !bytes.HasPrefix(value[2:], v[2:]) {
			t.Fatalf("value %x does not continue with re-encoded %x", value, v)
		}
		if err == nil && len(key) == len(k) && len(value) == len(v) && (!bytes.Equal(key, k) || !bytes.Equal(value, v)) {
			t.Fatalf("v0 round trip: got %x/%x want %x/%x", k, v, key, value)
		}
	})
}

// FuzzDecodeOffsetSync: as FuzzDecodeCheckpoint for offset syncs.
func FuzzDecodeOffsetSync(f *testing.F) {
	f.Add(unhex(f, specOffsetSyncKey), unhex(f, specOffsetSyncValue))
	f.Add([]byte{0x80, 0}, []byte{1})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s, err := checkpoint.DecodeOffsetSync(key, value)
		if err != nil {
			if s != (checkpoint.OffsetSync{}) {
				t.Fatalf("error %v with non-zero record %+v", err, s)
			}
			return
		}
		if s.Partition < 0 || s.UpstreamOffset < 0 || s.DownstreamOffset < 0 {
			return
		}
		k, kerr := s.Key()
		v, verr := s.Value()
		if kerr != nil || verr != nil {
			t.Fatalf("re-encode %+v: %v / %v", s, kerr, verr)
		}
		if !bytes.HasPrefix(key, k) || !bytes.HasPrefix(value, v) {
			t.Fatalf("re-encoded %x/%x is not a prefix of %x/%x", k, v, key, value)
		}
	})
}

// FuzzCheckpointRoundTrip: every writable Checkpoint decodes back to itself.
func FuzzCheckpointRoundTrip(f *testing.F) {
	f.Add("g1", "us-east-1.orders", int32(0), int64(100), int64(95), "")
	f.Add("", "", int32(1<<31-1), int64(1<<63-1), int64(0), "é\x00\xff")
	f.Fuzz(func(t *testing.T, group, topic string, partition int32, up, down int64, metadata string) {
		in := checkpoint.Checkpoint{Group: group, Topic: topic, Partition: partition, UpstreamOffset: up, DownstreamOffset: down, Metadata: metadata}
		k, kerr := in.Key()
		v, verr := in.Value()
		if kerr != nil || verr != nil {
			if partition >= 0 && up >= 0 && down >= 0 && len(group) <= 32767 && len(topic) <= 32767 && len(metadata) <= 32767 {
				t.Fatalf("valid %+v failed: %v / %v", in, kerr, verr)
			}
			return
		}
		out, err := checkpoint.DecodeCheckpoint(k, v)
		if err != nil || out != in {
			t.Fatalf("round trip %+v -> %+v, %v", in, out, err)
		}
		s := checkpoint.OffsetSync{Topic: topic, Partition: partition, UpstreamOffset: up, DownstreamOffset: down}
		sk, _ := s.Key()
		sv, _ := s.Value()
		if got, err := checkpoint.DecodeOffsetSync(sk, sv); err != nil || got != s {
			t.Fatalf("offset sync round trip %+v -> %+v, %v", s, got, err)
		}
	})
}
