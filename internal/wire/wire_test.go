package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAppendPrimitives(t *testing.T) {
	var b []byte
	b = AppendInt16(b, 0)
	b = AppendInt16(b, -1)
	b = AppendInt32(b, 3)
	b = AppendInt32(b, -2)
	b = AppendInt64(b, 1700000000000)
	b = AppendInt64(b, -1)
	b, err := AppendString(b, "s", "é")
	if err != nil {
		t.Fatal(err)
	}
	b, err = AppendString(b, "empty", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x00, 0x00,
		0xff, 0xff,
		0x00, 0x00, 0x00, 0x03,
		0xff, 0xff, 0xff, 0xfe,
		0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x00, 0x02, 0xc3, 0xa9,
		0x00, 0x00,
	}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Fatalf("bytes (-want +got):\n%s", diff)
	}

	r := NewReader(b)
	got := []any{r.Int16("a"), r.Int16("b"), r.Int32("c"), r.Int32("d"), r.Int64("e"), r.Int64("f"), r.String("s"), r.String("empty")}
	if diff := cmp.Diff([]any{int16(0), int16(-1), int32(3), int32(-2), int64(1700000000000), int64(-1), "é", ""}, got); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
	if r.Err() != nil || r.Remaining() != 0 || r.Offset() != len(b) {
		t.Errorf("Err=%v Remaining=%d Offset=%d", r.Err(), r.Remaining(), r.Offset())
	}
}

func TestAppendStringLimit(t *testing.T) {
	ok := strings.Repeat("x", MaxStringLen)
	b, err := AppendString([]byte{9}, "metadata", ok)
	if err != nil || len(b) != 1+2+MaxStringLen || b[1] != 0x7f || b[2] != 0xff {
		t.Fatalf("32767-byte string: len=%d err=%v", len(b), err)
	}
	b, err = AppendString([]byte{9}, "metadata", ok+"x")
	var fe *FieldError
	if !errors.As(err, &fe) || !errors.Is(err, ErrStringTooLong) || fe.Field != "metadata" || fe.Offset != 1 {
		t.Fatalf("32768-byte string: err=%v", err)
	}
	if diff := cmp.Diff([]byte{9}, b); diff != "" {
		t.Errorf("buffer changed on error (-want +got):\n%s", diff)
	}
	if got := err.Error(); got != `wire: field "metadata" at offset 1: string longer than 32767 bytes (length 32768)` {
		t.Errorf("Error() = %s", got)
	}
	if StringSize("ab") != 4 {
		t.Errorf("StringSize = %d", StringSize("ab"))
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       []byte
		read     func(*Reader)
		wantErr  error
		wantText string
	}{
		{"short int16", []byte{0x01}, func(r *Reader) { r.Int16("version") }, ErrShortBuffer,
			`wire: field "version" at offset 0: buffer too short (need 2 bytes, 1 available)`},
		{"short int32 after string", []byte{0, 1, 'a', 0, 0}, func(r *Reader) { r.String("topic"); r.Int32("partition") }, ErrShortBuffer,
			`wire: field "partition" at offset 3: buffer too short (need 4 bytes, 2 available)`},
		{"short int64", []byte{0, 0, 0, 0, 0, 0, 0}, func(r *Reader) { r.Int64("offset") }, ErrShortBuffer,
			`wire: field "offset" at offset 0: buffer too short (need 8 bytes, 7 available)`},
		{"negative string length", []byte{0xff, 0xfe, 'a'}, func(r *Reader) { r.String("group") }, ErrNegativeLength,
			`wire: field "group" at offset 0: negative string length (length -2)`},
		{"string past end", []byte{0, 0, 0, 5, 'a', 'b'}, func(r *Reader) { r.Int16("version"); r.String("metadata") }, ErrShortBuffer,
			`wire: field "metadata" at offset 2: buffer too short (string length 5, 2 bytes available)`},
		{"string length prefix short", []byte{0}, func(r *Reader) { r.String("group") }, ErrShortBuffer,
			`wire: field "group" at offset 0: buffer too short (need 2 bytes, 1 available)`},
		{"nil input", nil, func(r *Reader) { r.Int32("partition") }, ErrShortBuffer,
			`wire: field "partition" at offset 0: buffer too short (need 4 bytes, 0 available)`},
		{"first error sticks", []byte{0}, func(r *Reader) { r.Int16("a"); r.Int64("b"); r.String("c") }, ErrShortBuffer,
			`wire: field "a" at offset 0: buffer too short (need 2 bytes, 1 available)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(tt.in)
			tt.read(r)
			if !errors.Is(r.Err(), tt.wantErr) || r.Err().Error() != tt.wantText {
				t.Errorf("Err() = %v, want %q", r.Err(), tt.wantText)
			}
			// Reads after an error return zero values.
			if r.Int16("x") != 0 || r.Int32("x") != 0 || r.Int64("x") != 0 || r.String("x") != "" {
				t.Error("read after error returned a non-zero value")
			}
		})
	}
}

func TestReaderTrailingBytes(t *testing.T) {
	r := NewReader([]byte{0, 1, 'a', 0xde, 0xad})
	if s := r.String("s"); s != "a" || r.Err() != nil || r.Remaining() != 2 || r.Offset() != 3 {
		t.Errorf("String=%q Err=%v Remaining=%d Offset=%d", s, r.Err(), r.Remaining(), r.Offset())
	}
	var zero Reader
	if zero.Remaining() != 0 || zero.Int16("v") != 0 || !errors.Is(zero.Err(), ErrShortBuffer) {
		t.Errorf("zero Reader: Remaining=%d Err=%v", zero.Remaining(), zero.Err())
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 2, 'g', '1', 0, 0, 0, 7, 0, 0})
	f.Add([]byte{0xff, 0xff})
	f.Add([]byte{0x7f, 0xff, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(in)
		s := r.String("a")
		_ = r.Int16("b")
		_ = r.Int32("c")
		_ = r.Int64("d")
		if r.Offset() > len(in) || r.Remaining() < 0 {
			t.Fatalf("Offset %d Remaining %d for %d bytes", r.Offset(), r.Remaining(), len(in))
		}
		if r.Err() == nil {
			b, err := AppendString(nil, "a", s)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(in[:len(b)]) {
				t.Fatalf("re-encoded string %x differs from input prefix %x", b, in[:len(b)])
			}
		}
	})
}
