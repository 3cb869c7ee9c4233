package heartbeat_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/heartbeat"
	"github.com/kmirror/kmirror/internal/wire"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// docs/mm2-compat.md §2.2 worked example.
const (
	specKey   = `00 07 75 73 2d 77 65 73 74  00 07 75 73 2d 65 61 73 74`
	specValue = `00 00  00 00 01 8b cf e5 68 00`
)

func TestRecordGolden(t *testing.T) {
	tests := []struct {
		name       string
		hb         heartbeat.Heartbeat
		key, value string
	}{
		{"docs example 2.2", heartbeat.Heartbeat{SourceClusterAlias: "us-west", TargetClusterAlias: "us-east", Timestamp: 1700000000000}, specKey, specValue},
		{"empty aliases, zero time", heartbeat.Heartbeat{}, `00 00 00 00`, `00 00 00 00 00 00 00 00 00 00`},
		{"non-ASCII alias, max time", heartbeat.Heartbeat{SourceClusterAlias: "é", TargetClusterAlias: "b", Timestamp: 1<<63 - 1},
			`00 02 c3 a9 00 01 62`, `00 00 7f ff ff ff ff ff ff ff`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := tt.hb.Key()
			if err != nil {
				t.Fatal(err)
			}
			value, err := tt.hb.Value()
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
				t.Errorf("not exactly sized: key %d/%d value %d/%d", len(key), cap(key), len(value), cap(value))
			}
			got, err := heartbeat.Decode(key, value)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.hb, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	long := strings.Repeat("a", wire.MaxStringLen+1)
	for _, h := range []heartbeat.Heartbeat{{SourceClusterAlias: long}, {TargetClusterAlias: long}} {
		b, err := h.Key()
		var fe *wire.FieldError
		if !errors.Is(err, heartbeat.ErrStringTooLong) || !errors.As(err, &fe) || b != nil || !strings.HasPrefix(err.Error(), "heartbeat: key: ") {
			t.Errorf("Key() long alias: %d bytes, %v", len(b), err)
		}
	}
	b, err := heartbeat.Heartbeat{SourceClusterAlias: "a", TargetClusterAlias: "b", Timestamp: -1}.Value()
	if !errors.Is(err, heartbeat.ErrNegativeTimestamp) || b != nil || err.Error() != "heartbeat: negative timestamp: -1 ms (heartbeat a->b)" {
		t.Errorf("Value() negative timestamp: %x, %v", b, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	key, value := unhex(t, specKey), unhex(t, specValue)
	spec := heartbeat.Heartbeat{SourceClusterAlias: "us-west", TargetClusterAlias: "us-east", Timestamp: 1700000000000}
	tests := []struct {
		name      string
		key       []byte
		value     []byte
		want      heartbeat.Heartbeat
		wantErrs  []error
		wantInMsg string
	}{
		{"tombstone", key, nil, heartbeat.Heartbeat{}, []error{heartbeat.ErrTombstone}, "tombstone"},
		{"nil key", nil, value, heartbeat.Heartbeat{}, []error{heartbeat.ErrNullKey}, "nil key"},
		{"empty value", key, []byte{}, heartbeat.Heartbeat{}, []error{heartbeat.ErrMalformed, wire.ErrShortBuffer}, `value: wire: field "version" at offset 0`},
		{"short timestamp", key, value[:9], heartbeat.Heartbeat{}, []error{heartbeat.ErrMalformed, wire.ErrShortBuffer},
			`heartbeat: malformed record: value: wire: field "timestamp" at offset 2: buffer too short (need 8 bytes, 7 available)`},
		{"short key", key[:10], value, heartbeat.Heartbeat{}, []error{heartbeat.ErrMalformed, wire.ErrShortBuffer}, `key: wire: field "targetClusterAlias" at offset 9`},
		{"negative alias length", []byte{0x80, 0x00}, value, heartbeat.Heartbeat{}, []error{heartbeat.ErrMalformed, wire.ErrNegativeLength}, "length -32768"},
		{"trailing bytes ignored", append(bytes.Clone(key), 1), append(bytes.Clone(value), 1, 2), spec, nil, ""},
		{"version 3", key, append([]byte{0, 3}, value[2:]...), spec, []error{heartbeat.ErrUnknownVersion},
			"heartbeat: unknown record version 3 (heartbeat us-west->us-east; parsed with the v0 layout)"},
		{"negative timestamp accepted", key, unhex(t, `00 00 ff ff ff ff ff ff ff ff`),
			heartbeat.Heartbeat{SourceClusterAlias: "us-west", TargetClusterAlias: "us-east", Timestamp: -1}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := heartbeat.Decode(tt.key, tt.value)
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

// FuzzDecode: never panics; fatal errors return the zero value; a decoded
// record re-encodes to a prefix of the input (exactly the input for v0
// records without trailing bytes).
func FuzzDecode(f *testing.F) {
	f.Add(unhex(f, specKey), unhex(f, specValue))
	f.Add([]byte{0, 0, 0, 0}, []byte{0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0xff})
	f.Add([]byte{0xff}, []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		h, err := heartbeat.Decode(key, value)
		if err != nil && !errors.Is(err, heartbeat.ErrUnknownVersion) {
			if h != (heartbeat.Heartbeat{}) {
				t.Fatalf("fatal error %v with non-zero record %+v", err, h)
			}
			return
		}
		if h.Timestamp < 0 {
			return
		}
		k, kerr := h.Key()
		v, verr := h.Value()
		if kerr != nil || verr != nil {
			t.Fatalf("re-encode %+v: %v / %v", h, kerr, verr)
		}
		if !bytes.HasPrefix(key, k) || !bytes.HasPrefix(value[2:], v[2:]) {
			t.Fatalf("re-encoded %x/%x is not a prefix of %x/%x", k, v, key, value)
		}
		if err == nil && len(key) == len(k) && len(value) == len(v) && !bytes.Equal(value, v) {
			t.Fatalf("v0 round trip: value %x, re-encoded %x", value, v)
		}
	})
}

// FuzzRoundTrip: every writable Heartbeat decodes back to itself.
func FuzzRoundTrip(f *testing.F) {
	f.Add("us-west", "us-east", int64(1700000000000))
	f.Add("", "\xff\x00", int64(0))
	f.Fuzz(func(t *testing.T, source, target string, ts int64) {
		in := heartbeat.Heartbeat{SourceClusterAlias: source, TargetClusterAlias: target, Timestamp: ts}
		k, kerr := in.Key()
		v, verr := in.Value()
		if kerr != nil || verr != nil {
			if ts >= 0 && len(source) <= wire.MaxStringLen && len(target) <= wire.MaxStringLen {
				t.Fatalf("valid %+v failed: %v / %v", in, kerr, verr)
			}
			return
		}
		if out, err := heartbeat.Decode(k, v); err != nil || out != in {
			t.Fatalf("round trip %+v -> %+v, %v", in, out, err)
		}
	})
}
