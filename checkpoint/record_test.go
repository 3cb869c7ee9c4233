package checkpoint_test

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/wire"
)

// unhex decodes the space-separated hex dumps of docs/mm2-compat.md.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// docs/mm2-compat.md §2.3 worked example.
const (
	specCheckpointKey = `00 02 67 31
		00 10 75 73 2d 65 61 73 74 2d 31 2e 6f 72 64 65 72 73
		00 00 00 00`
	specCheckpointValue = `00 00
		00 00 00 00 00 00 00 64
		00 00 00 00 00 00 00 5f
		00 00`
	// docs/mm2-compat.md §2.4 worked example.
	specOffsetSyncKey   = `00 06 6f 72 64 65 72 73  00 00 00 03`
	specOffsetSyncValue = `00 00 00 00 00 00 00 64  00 00 00 00 00 00 00 5f`
)

func TestCheckpointGolden(t *testing.T) {
	tests := []struct {
		name       string
		cp         checkpoint.Checkpoint
		key, value string
	}{
		{"docs example 2.3", checkpoint.Checkpoint{Group: "g1", Topic: "us-east-1.orders", Partition: 0, UpstreamOffset: 100, DownstreamOffset: 95},
			specCheckpointKey, specCheckpointValue},
		{"non-ASCII metadata", checkpoint.Checkpoint{Group: "g1", Topic: "us-east-1.orders", Partition: 0, UpstreamOffset: 100, DownstreamOffset: 95, Metadata: "é"},
			specCheckpointKey, `00 00  00 00 00 00 00 00 00 64  00 00 00 00 00 00 00 5f  00 02 c3 a9`},
		{"large values", checkpoint.Checkpoint{Group: "", Topic: "t", Partition: 2147483647, UpstreamOffset: 1 << 62, DownstreamOffset: 0, Metadata: "m"},
			`00 00  00 01 74  7f ff ff ff`, `00 00  40 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  00 01 6d`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := tt.cp.Key()
			if err != nil {
				t.Fatal(err)
			}
			value, err := tt.cp.Value()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(unhex(t, tt.key), key); diff != "" {
				t.Errorf("key (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(unhex(t, tt.value), value); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
			if cap(key) != len(key) || cap(value) != len(value) {
				t.Errorf("not exactly sized: key len %d cap %d, value len %d cap %d", len(key), cap(key), len(value), cap(value))
			}
			got, err := checkpoint.DecodeCheckpoint(key, value)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.cp, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOffsetSyncGolden(t *testing.T) {
	s := checkpoint.OffsetSync{Topic: "orders", Partition: 3, UpstreamOffset: 100, DownstreamOffset: 95}
	key, err := s.Key()
	if err != nil {
		t.Fatal(err)
	}
	value, err := s.Value()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(unhex(t, specOffsetSyncKey), key); diff != "" {
		t.Errorf("key (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(unhex(t, specOffsetSyncValue), value); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}
	got, err := checkpoint.DecodeOffsetSync(key, value)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

func TestCheckpointWriteErrors(t *testing.T) {
	long := strings.Repeat("x", wire.MaxStringLen+1)
	ok := checkpoint.Checkpoint{Group: "g", Topic: "t", Partition: 1, UpstreamOffset: 5, DownstreamOffset: 4}
	tests := []struct {
		name     string
		mutate   func(*checkpoint.Checkpoint)
		keyErr   error
		valueErr error
	}{
		{"negative partition", func(c *checkpoint.Checkpoint) { c.Partition = -1 }, checkpoint.ErrNegativePartition, nil},
		{"negative downstream", func(c *checkpoint.Checkpoint) { c.DownstreamOffset = -1 }, nil, checkpoint.ErrNegativeOffset},
		{"negative upstream", func(c *checkpoint.Checkpoint) { c.UpstreamOffset = -5 }, nil, checkpoint.ErrNegativeOffset},
		{"long group", func(c *checkpoint.Checkpoint) { c.Group = long }, checkpoint.ErrStringTooLong, nil},
		{"long topic", func(c *checkpoint.Checkpoint) { c.Topic = long }, checkpoint.ErrStringTooLong, nil},
		{"long metadata", func(c *checkpoint.Checkpoint) { c.Metadata = long }, nil, checkpoint.ErrStringTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			key, kerr := c.Key()
			value, verr := c.Value()
			check := func(what string, b []byte, err, want error) {
				if want == nil {
					if err != nil || len(b) == 0 {
						t.Errorf("%s: %d bytes, err %v; want success", what, len(b), err)
					}
					return
				}
				if !errors.Is(err, want) || b != nil {
					t.Errorf("%s: %d bytes, err %v; want nil bytes and %v", what, len(b), err, want)
				}
				if !strings.HasPrefix(err.Error(), "checkpoint: ") {
					t.Errorf("%s: error %q lacks the package prefix", what, err)
				}
			}
			check("Key", key, kerr, tt.keyErr)
			check("Value", value, verr, tt.valueErr)
		})
	}
}

func TestOffsetSyncWriteErrors(t *testing.T) {
	for _, s := range []checkpoint.OffsetSync{
		{Topic: "t", Partition: 0, UpstreamOffset: -1, DownstreamOffset: 0},
		{Topic: "t", Partition: 0, UpstreamOffset: 0, DownstreamOffset: -1},
	} {
		if b, err := s.Value(); !errors.Is(err, checkpoint.ErrNegativeOffset) || b != nil {
			t.Errorf("%+v Value() = %x, %v; want ErrNegativeOffset", s, b, err)
		}
	}
	if b, err := (checkpoint.OffsetSync{Topic: "t", Partition: -2}).Key(); !errors.Is(err, checkpoint.ErrNegativePartition) || b != nil {
		t.Errorf("Key() = %x, %v; want ErrNegativePartition", b, err)
	}
	if _, err := (checkpoint.OffsetSync{Topic: strings.Repeat("x", 40000)}).Key(); !errors.Is(err, checkpoint.ErrStringTooLong) {
		t.Errorf("Key() long topic: %v", err)
	}
	// Zero offsets are legal.
	if b, err := (checkpoint.OffsetSync{Topic: "t"}).Value(); err != nil || len(b) != 16 {
		t.Errorf("zero OffsetSync Value() = %x, %v", b, err)
	}
}

func TestDecodeCheckpointErrors(t *testing.T) {
	key := unhex(t, specCheckpointKey)
	value := unhex(t, specCheckpointValue)
	spec := checkpoint.Checkpoint{Group: "g1", Topic: "us-east-1.orders", Partition: 0, UpstreamOffset: 100, DownstreamOffset: 95}
	tests := []struct {
		name      string
		key       []byte
		value     []byte
		want      checkpoint.Checkpoint
		wantErrs  []error
		wantInMsg string
	}{
		{"tombstone", key, nil, checkpoint.Checkpoint{}, []error{checkpoint.ErrTombstone}, "tombstone"},
		{"nil key", nil, value, checkpoint.Checkpoint{}, []error{checkpoint.ErrNullKey}, "nil key"},
		{"empty value", key, []byte{}, checkpoint.Checkpoint{}, []error{checkpoint.ErrMalformed, wire.ErrShortBuffer},
			`checkpoint: malformed record: value: wire: field "version" at offset 0: buffer too short`},
		{"truncated metadata", key, value[:19], checkpoint.Checkpoint{}, []error{checkpoint.ErrMalformed, wire.ErrShortBuffer},
			`value: wire: field "metadata" at offset 18: buffer too short (need 2 bytes, 1 available)`},
		{"truncated key", key[:len(key)-1], value, checkpoint.Checkpoint{}, []error{checkpoint.ErrMalformed, wire.ErrShortBuffer},
			`key: wire: field "partition" at offset 22`},
		{"negative group length", append([]byte{0xff, 0xff}, key[2:]...), value, checkpoint.Checkpoint{}, []error{checkpoint.ErrMalformed, wire.ErrNegativeLength},
			`field "group" at offset 0: negative string length (length -1)`},
		{"trailing bytes ignored", append(append([]byte{}, key...), 0xde, 0xad), append(append([]byte{}, value...), 1, 2, 3), spec, nil, ""},
		{"version 1 with appended field", key, append(append([]byte{0, 1}, value[2:]...), 0, 0, 0, 7), spec,
			[]error{checkpoint.ErrUnknownVersion}, `checkpoint: unknown record version 1 (group "g1", us-east-1.orders-0; parsed with the v0 layout)`},
		{"version -1", key, append([]byte{0xff, 0xff}, value[2:]...), spec, []error{checkpoint.ErrUnknownVersion}, "version -1"},
		{"negative downstream", key, unhex(t, `00 00  00 00 00 00 00 00 00 64  ff ff ff ff ff ff ff ff  00 00`),
			checkpoint.Checkpoint{Group: "g1", Topic: "us-east-1.orders", UpstreamOffset: 100, DownstreamOffset: -1},
			[]error{checkpoint.ErrNegativeOffset}, "downstream offset -1"},
		{"negative upstream accepted", key, unhex(t, `00 00  ff ff ff ff ff ff ff ff  00 00 00 00 00 00 00 5f  00 00`),
			checkpoint.Checkpoint{Group: "g1", Topic: "us-east-1.orders", UpstreamOffset: -1, DownstreamOffset: 95}, nil, ""},
		{"version 2 and negative downstream", key, unhex(t, `00 02  00 00 00 00 00 00 00 64  ff ff ff ff ff ff ff fe  00 00`),
			checkpoint.Checkpoint{Group: "g1", Topic: "us-east-1.orders", UpstreamOffset: 100, DownstreamOffset: -2},
			[]error{checkpoint.ErrUnknownVersion, checkpoint.ErrNegativeOffset}, "version 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkpoint.DecodeCheckpoint(tt.key, tt.value)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if len(tt.wantErrs) == 0 && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			for _, w := range tt.wantErrs {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want it to wrap %v", err, w)
				}
			}
			if tt.wantInMsg != "" && (err == nil || !strings.Contains(err.Error(), tt.wantInMsg)) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantInMsg)
			}
		})
	}
}

func TestDecodeOffsetSyncErrors(t *testing.T) {
	key := unhex(t, specOffsetSyncKey)
	value := unhex(t, specOffsetSyncValue)
	tests := []struct {
		name      string
		key       []byte
		value     []byte
		want      checkpoint.OffsetSync
		wantErrs  []error
		wantInMsg string
	}{
		{"tombstone", key, nil, checkpoint.OffsetSync{}, []error{checkpoint.ErrTombstone}, "tombstone"},
		{"nil key", nil, value, checkpoint.OffsetSync{}, []error{checkpoint.ErrNullKey}, ""},
		{"short value", key, value[:15], checkpoint.OffsetSync{}, []error{checkpoint.ErrMalformed, wire.ErrShortBuffer},
			`offset sync value: wire: field "offset" at offset 8: buffer too short (need 8 bytes, 7 available)`},
		{"short key", key[:3], value, checkpoint.OffsetSync{}, []error{checkpoint.ErrMalformed, wire.ErrShortBuffer}, `field "topic" at offset 0`},
		{"trailing bytes ignored", append(append([]byte{}, key...), 9), append(append([]byte{}, value...), 9, 9),
			checkpoint.OffsetSync{Topic: "orders", Partition: 3, UpstreamOffset: 100, DownstreamOffset: 95}, nil, ""},
		{"negative offsets passed through", key, unhex(t, `ff ff ff ff ff ff ff ff  ff ff ff ff ff ff ff fe`),
			checkpoint.OffsetSync{Topic: "orders", Partition: 3, UpstreamOffset: -1, DownstreamOffset: -2}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkpoint.DecodeOffsetSync(tt.key, tt.value)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if len(tt.wantErrs) == 0 && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			for _, w := range tt.wantErrs {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want it to wrap %v", err, w)
				}
			}
			if tt.wantInMsg != "" && (err == nil || !strings.Contains(err.Error(), tt.wantInMsg)) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantInMsg)
			}
		})
	}
}
