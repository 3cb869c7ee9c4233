// Package wire encodes and decodes the primitive field types of Kafka's
// org.apache.kafka.common.protocol.types (Type.INT16, INT32, INT64 and the
// non-nullable STRING), which MM2 uses for its heartbeat, checkpoint and
// offset-sync records (kmirror MM2 compatibility docs/mm2-compat.md §2.1).
//
// A struct is the concatenation of its fields: no length prefix, tags or
// padding. Integers are big-endian two's complement; a STRING is an INT16
// byte length N followed by N bytes of UTF-8.
//
// [Reader] never panics: the first failure is recorded (naming the field and
// byte offset) and every later read returns a zero value, so callers can read
// a whole struct and check [Reader.Err] once.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// MaxStringLen is the largest STRING payload in bytes (Java Short.MAX_VALUE).
const MaxStringLen = math.MaxInt16

// Sentinel errors wrapped by [*FieldError].
var (
	// ErrShortBuffer: the field extends past the end of the input.
	ErrShortBuffer = errors.New("wire: buffer too short")
	// ErrNegativeLength: a STRING length prefix is negative.
	ErrNegativeLength = errors.New("wire: negative string length")
	// ErrStringTooLong: a STRING to write exceeds MaxStringLen bytes.
	ErrStringTooLong = errors.New("wire: string longer than 32767 bytes")
)

// FieldError describes a field that could not be read or written.
type FieldError struct {
	Field  string // schema field name, e.g. "topic"
	Offset int    // byte offset of the field's start in the buffer
	Err    error  // one of the sentinels above
	Detail string // extra facts (lengths), may be empty
}

// Error implements error, e.g.
// `wire: field "metadata" at offset 18: buffer too short (string length 5, 2 bytes available)`.
func (e *FieldError) Error() string {
	msg := fmt.Sprintf("wire: field %q at offset %d: %s", e.Field, e.Offset,
		strings.TrimPrefix(fmt.Sprint(e.Err), "wire: "))
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

// Unwrap returns the sentinel.
func (e *FieldError) Unwrap() error { return e.Err }

// AppendInt16 appends v as 2 bytes big-endian.
func AppendInt16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }

// AppendInt32 appends v as 4 bytes big-endian.
func AppendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// AppendInt64 appends v as 8 bytes big-endian.
func AppendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

// AppendString appends s as a STRING: INT16 byte length then the bytes of s
// as they are (a Go string is written without UTF-8 validation; Java decodes
// invalid sequences as U+FFFD). If s is longer than [MaxStringLen] bytes it
// returns b unchanged and a [*FieldError] wrapping [ErrStringTooLong] naming
// field, with Offset = len(b).
func AppendString(b []byte, field, s string) ([]byte, error) {
	if len(s) > MaxStringLen {
		return b, &FieldError{Field: field, Offset: len(b), Err: ErrStringTooLong,
			Detail: fmt.Sprintf("length %d", len(s))}
	}
	b = AppendInt16(b, int16(len(s)))
	return append(b, s...), nil
}

// StringSize returns the encoded size of s as a STRING: 2 + len(s) bytes.
func StringSize(s string) int { return 2 + len(s) }

// Reader reads fields from a byte slice. The zero value reads an empty
// input. A Reader is not safe for concurrent use.
type Reader struct {
	buf []byte
	off int
	err error
}

// NewReader returns a Reader over b (not copied).
func NewReader(b []byte) *Reader { return &Reader{buf: b} }

// Err returns the first read error (a [*FieldError]), or nil.
func (r *Reader) Err() error { return r.err }

// Offset returns the number of bytes consumed so far.
func (r *Reader) Offset() int { return r.off }

// Remaining returns the number of unread bytes (trailing bytes after the
// last field are legal and ignored by Java readers).
func (r *Reader) Remaining() int { return len(r.buf) - r.off }

func (r *Reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.Remaining() {
		r.err = &FieldError{Field: field, Offset: r.off, Err: ErrShortBuffer,
			Detail: fmt.Sprintf("need %d bytes, %d available", n, r.Remaining())}
		return nil
	}
	b := r.buf[r.off : r.off+n]
	r.off += n
	return b
}

// Int16 reads an INT16 field; 0 after an error.
func (r *Reader) Int16(field string) int16 {
	b := r.take(field, 2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

// Int32 reads an INT32 field; 0 after an error.
func (r *Reader) Int32(field string) int32 {
	b := r.take(field, 4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Int64 reads an INT64 field; 0 after an error.
func (r *Reader) Int64(field string) int64 {
	b := r.take(field, 8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// String reads a STRING field (copied out of the buffer, bytes unchanged);
// "" after an error. A negative length records [ErrNegativeLength], a length
// past the end [ErrShortBuffer]; the error's Offset is that of the length
// prefix.
func (r *Reader) String(field string) string {
	if r.err != nil {
		return ""
	}
	start := r.off
	n := r.Int16(field)
	if r.err != nil {
		return ""
	}
	if n < 0 {
		r.err = &FieldError{Field: field, Offset: start, Err: ErrNegativeLength,
			Detail: fmt.Sprintf("length %d", n)}
		return ""
	}
	if int(n) > r.Remaining() {
		r.err = &FieldError{Field: field, Offset: start, Err: ErrShortBuffer,
			Detail: fmt.Sprintf("string length %d, %d bytes available", n, r.Remaining())}
		return ""
	}
	return string(r.take(field, int(n)))
}
