// Package provhdr reads the value of kmirror's provenance header
// ("kmirror-provenance"): the cluster IDs a record was copied from, oldest
// first, separated by ",", with "\" and "," inside an ID (and a leading
// "#") escaped by "\", and optionally, as last element, "#" and the
// record's offset in the cluster the last ID names. Package mirror
// documents the format (mirror.ProvenanceHeader) and writes it; the engine,
// the translation client and verify read it through this package, and
// [Check] is the engine's provenance check.
package provhdr

import (
	"bytes"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Parse returns the cluster IDs listed in a provenance header
// value, oldest first, without the offset element ([Offset]):
// an element starting with an unescaped "#" is left out wherever it
// stands. Every other byte string parses: an empty value is one empty ID,
// and a "\" at the very end is kept as a literal backslash.
func Parse(value []byte) []string {
	var out []string
	var cur []byte
	offsetEl := len(value) > 0 && value[0] == '#'
	for i := 0; i < len(value); i++ {
		switch c := value[i]; {
		case c == '\\' && i+1 < len(value):
			i++
			cur = append(cur, value[i])
		case c == ',':
			if !offsetEl {
				out = append(out, string(cur))
			}
			cur = cur[:0]
			offsetEl = i+1 < len(value) && value[i+1] == '#'
		default:
			cur = append(cur, c)
		}
	}
	if offsetEl {
		return out
	}
	return append(out, string(cur))
}

// Offset returns the offset element of a provenance header
// value: the record's offset in the cluster the value's last ID names (the
// source offset of the record's last copy). ok is false when the value
// does not end with one (written by a kmirror without tail resume, or by a
// hop that appended its ID after it).
func Offset(value []byte) (offset int64, ok bool) {
	i := bytes.LastIndexByte(value, ',')
	el := value[i+1:]
	if len(el) < 2 || el[0] != '#' || (i > 0 && EscapedAt(value, i)) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(el[1:]), 10, 64)
	if err != nil || n < 0 || el[1] == '+' {
		return 0, false
	}
	return n, true
}

// EscapedAt reports whether the byte at i of an escaped value is escaped
// (preceded by an odd number of backslashes).
func EscapedAt(value []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && value[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// WithoutOffset returns value without its trailing offset element (and the
// comma before it), or value itself when it has none.
func WithoutOffset(value []byte) []byte {
	if _, ok := Offset(value); !ok {
		return value
	}
	i := bytes.LastIndexByte(value, ',')
	if i < 0 {
		return value[:0]
	}
	return value[:i]
}

// LastID returns the last cluster ID of value (unescaped, the offset
// element left out); ok is false when value lists none.
func LastID(value []byte) (id string, ok bool) {
	ids := Parse(value)
	if len(ids) == 0 {
		return "", false
	}
	return ids[len(ids)-1], true
}

// Header is the key of kmirror's provenance header (mirror.ProvenanceHeader).
const Header = "kmirror-provenance"

// RedpandaHeader is the Redpanda migrator's provenance header
// (redpanda_migrator output): the ID of the cluster the migrator first read
// the record from; it skips a record whose value is its destination's ID.
const RedpandaHeader = "redpanda-migrator-provenance"

// Verdict is the outcome of the provenance check of one record ([Check]).
type Verdict uint8

const (
	// Pass: the record is copied, with the source appended.
	Pass Verdict = iota
	// Target: the target cluster is in the record's provenance: the
	// record came from there.
	Target
	// Looped: the source cluster is in the record's provenance: it came
	// back around a loop (through a hop that ignores the header).
	Looped
	// Redpanda: the Redpanda migrator's header names the target (or the
	// source) as the record's origin.
	Redpanda
)

// Check is the provenance check of a record with headers h read from the
// source cluster to be copied to the target cluster: the engine's check
// for every record it copies, and verify's for the source records a flow
// does not copy. src and dst are the source and target cluster IDs escaped
// as elements of a value ([AppendEscaped]), rawSrc and rawDst the IDs
// themselves. A record is not copied (a verdict other than Pass) when the
// target (or the source) is in its provenance, or when the Redpanda
// migrator's header names either. idx is the index of its last [Header]
// header (-1 if none), the one the copy extends; when a record carries
// several (another tool duplicated it), every one is checked. Check never
// allocates.
func Check(h []kgo.RecordHeader, src, dst, rawSrc, rawDst []byte) (v Verdict, idx int) {
	idx = -1
	for i := range h {
		switch h[i].Key {
		case Header:
			idx = i
			if v == Pass {
				v = scan(h[i].Value, src, dst)
			}
		case RedpandaHeader:
			if v == Pass && (bytes.Equal(h[i].Value, rawDst) || bytes.Equal(h[i].Value, rawSrc)) {
				v = Redpanda
			}
		}
	}
	return v, idx
}

// scan compares each escaped element of value with the escaped target and
// source IDs (escaping is one-to-one, so comparing escaped forms compares
// IDs).
func scan(value, src, dst []byte) Verdict {
	if bytes.IndexByte(value, '\\') < 0 { // no escapes (Kafka cluster IDs never need one): split with IndexByte
		for {
			i := bytes.IndexByte(value, ',')
			if i < 0 {
				return match(value, src, dst)
			}
			if v := match(value[:i], src, dst); v != Pass {
				return v
			}
			value = value[i+1:]
		}
	}
	start := 0
	for i := 0; i < len(value); i++ {
		switch value[i] {
		case '\\':
			i++ // the escaped byte belongs to the element
		case ',':
			if v := match(value[start:i], src, dst); v != Pass {
				return v
			}
			start = i + 1
		}
	}
	return match(value[start:], src, dst)
}

func match(el, src, dst []byte) Verdict {
	switch {
	case bytes.Equal(el, dst):
		return Target
	case bytes.Equal(el, src):
		return Looped
	}
	return Pass
}

// AppendEscaped appends cluster ID id to dst as an element of a value: "\"
// and "," escaped by "\", and a leading "#" too (not an offset element).
func AppendEscaped(dst []byte, id string) []byte {
	if len(id) > 0 && id[0] == '#' {
		dst = append(dst, '\\') // not an offset element
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c == '\\' || c == ',' {
			dst = append(dst, '\\')
		}
		dst = append(dst, id[i])
	}
	return dst
}
