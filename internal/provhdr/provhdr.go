// Package provhdr reads the value of kmirror's provenance header
// ("kmirror-provenance"): the cluster IDs a record was copied from, oldest
// first, separated by ",", with "\" and "," inside an ID (and a leading
// "#") escaped by "\", and optionally, as last element, "#" and the
// record's offset in the cluster the last ID names. Package mirror
// documents the format (mirror.ProvenanceHeader) and writes it; the engine
// and the translation client read it through this package.
package provhdr

import (
	"bytes"
	"strconv"
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
