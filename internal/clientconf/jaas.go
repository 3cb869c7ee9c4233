package clientconf

import (
	"errors"
	"fmt"
	"strings"
)

// JAAS is one parsed login module entry of sasl.jaas.config.
type JAAS struct {
	// Module is the login module class, e.g.
	// "org.apache.kafka.common.security.scram.ScramLoginModule".
	Module string
	// Flag is the control flag: required, requisite, sufficient or optional.
	Flag string
	// Options are the key=value options (values unquoted and unescaped).
	Options map[string]string
}

// ParseJAAS parses a sasl.jaas.config value the way Kafka's JaasConfig
// does (java.io.StreamTokenizer rules): exactly one entry
// `<module> <flag> [key=value ...];` with values either words (letters,
// digits and . _ - $, not starting with a digit, '.' or '-') or strings in
// double or single quotes with backslash escapes; comments (/* */, and
// "/" or "//" to the end of the line) are skipped, so unquoted values
// cannot contain "/". The terminating ';' is required. Errors never contain
// option values (they are secrets), nor text that may be part of one: text
// after a secret-bearing option ([IsSecret]) that is not another option,
// or a first word that is not a class name.
func ParseJAAS(s string) (*JAAS, error) {
	t := &jaasLexer{in: []rune(s)}
	tok, err := t.next()
	if err != nil {
		return nil, err
	}
	if tok.kind == tEOF {
		return nil, errors.New("sasl.jaas.config is empty: it must contain one login module entry")
	}
	if tok.kind != tWord {
		return nil, errors.New("a login module class name must come first")
	}
	j := &JAAS{Module: tok.text, Options: map[string]string{}}
	tok, err = t.next()
	if err != nil {
		return nil, err
	}
	if !looksLikeClass(j.Module) && (tok.kind != tWord || !isControlFlag(tok.text)) {
		// A value holding only a password is a plausible slip: quote
		// neither a first word that is not a class name nor the next one.
		return nil, errors.New("sasl.jaas.config must start with a login module class and a control flag, e.g. org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"...\";")
	}
	if tok.kind != tWord {
		return nil, fmt.Errorf("login module %s has no control flag (required, requisite, sufficient or optional)", j.Module)
	}
	if !isControlFlag(tok.text) {
		return nil, fmt.Errorf("invalid login module control flag %q (want required, requisite, sufficient or optional)", tok.text)
	}
	j.Flag = strings.ToLower(tok.text)
	// prev is the option read last: text after a secret-bearing option
	// that is not "name=value" is most likely the rest of its value (an
	// unescaped quote, or a space in an unquoted value), so errors then
	// name prev and never quote that text.
	prev := ""
	// prevCut: the quoted value of prev ended at a line break, not at its
	// closing quote; the error that follows is then named after it.
	prevCut := false
	cut := func(err error) error {
		if prevCut {
			return cutByBreakErr(prev)
		}
		return err
	}
	for {
		tok, err = t.next()
		if err != nil {
			return nil, cut(err)
		}
		if tok.kind == tEOF {
			return nil, cut(errors.New("the JAAS entry is not terminated by ';'"))
		}
		if tok.kind == tSemi {
			break
		}
		if tok.kind != tWord && tok.kind != tString {
			if prev != "" && IsSecret(prev) {
				return nil, cut(afterSecretErr(prev))
			}
			return nil, cut(errors.New("expected an option name"))
		}
		key := tok.text
		eq, err := t.next()
		if err != nil {
			return nil, cut(err)
		}
		if eq.kind != tEquals {
			if prev != "" && IsSecret(prev) || tok.kind == tString {
				return nil, cut(afterOptionErr(prev))
			}
			return nil, cut(fmt.Errorf("value not specified for option %q", key))
		}
		val, err := t.next()
		if err != nil {
			return nil, cut(err)
		}
		if val.kind != tWord && val.kind != tString {
			if prev != "" && IsSecret(prev) || tok.kind == tString {
				return nil, cut(afterOptionErr(prev))
			}
			return nil, cut(fmt.Errorf("value not specified for option %q (unquoted values must not start with a digit, '.' or '-': quote them)", key))
		}
		j.Options[key] = val.text
		prev = key
		prevCut = val.kind == tString && t.cut
	}
	tok, err = t.next()
	if err != nil {
		return nil, err
	}
	if tok.kind != tEOF {
		return nil, errors.New("sasl.jaas.config must contain exactly one login module entry")
	}
	return j, nil
}

// isControlFlag reports whether word is a JAAS control flag (any case).
func isControlFlag(word string) bool {
	switch strings.ToLower(word) {
	case "required", "requisite", "sufficient", "optional":
		return true
	}
	return false
}

// looksLikeClass reports whether word can be a login module class name
// (qualified, like every Kafka login module, or ending in LoginModule), and
// so may be quoted in an error.
func looksLikeClass(word string) bool {
	return strings.Contains(word, ".") || strings.HasSuffix(word, "LoginModule")
}

// afterSecretErr is ParseJAAS's error for text that follows the value of
// option opt (a secret-bearing one, see [IsSecret]) and is not another
// "name=value" option: that text is probably the rest of the value, cut
// by an unescaped quote or a space, so it is not quoted.
func afterSecretErr(opt string) error {
	return fmt.Errorf(`unexpected text after option %s: quote the value (%s="...") and escape each " inside it as \"`, opt, opt)
}

// cutByBreakErr is ParseJAAS's error for the quoted value of option opt
// ended by a line break inside the quotes (as StreamTokenizer ends it, so
// Kafka fails too): the text after it is the rest of the value, not
// quoted.
func cutByBreakErr(opt string) error {
	return fmt.Errorf("the quoted value of option %s contains a line break, which ends a quoted value in Kafka's JAAS parser (as here), so the rest of the value is read as stray text: remove the line break; a value supplied by a config provider must not end with one (DirectoryConfigProvider keeps a file's trailing newline: write the file without it, e.g. printf '%%s' instead of echo)", opt)
}

// afterOptionErr is ParseJAAS's error for an option name that is a quoted
// string or follows a secret-bearing option and has no value: the text is
// probably the rest of the previous value, so it is not quoted. prev is the
// previous option ("" if none).
func afterOptionErr(prev string) error {
	if prev == "" {
		return errors.New(`an option name must be a word followed by =, e.g. username="alice"`)
	}
	return afterSecretErr(prev)
}

type tokKind int

const (
	tEOF tokKind = iota
	tWord
	tString
	tNumber
	tEquals
	tSemi
	tOther
)

type jaasTok struct {
	kind tokKind
	text string
}

type jaasLexer struct {
	in  []rune
	pos int
	// cut: the last quoted string ended at a line break, not at its
	// closing quote.
	cut bool
}

func isJAASWordStart(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '$' || r >= 160
}

func isJAASWordPart(r rune) bool {
	return isJAASWordStart(r) || r >= '0' && r <= '9' || r == '.' || r == '-'
}

func (t *jaasLexer) next() (jaasTok, error) {
	for t.pos < len(t.in) {
		r := t.in[t.pos]
		switch {
		case r <= ' ':
			t.pos++
		case r == '/' && t.pos+1 < len(t.in) && t.in[t.pos+1] == '*':
			end := strings.Index(string(t.in[t.pos+2:]), "*/")
			if end < 0 {
				// StreamTokenizer ends the input at an unterminated comment.
				t.pos = len(t.in)
				return jaasTok{kind: tEOF}, nil
			}
			t.pos += 2 + len([]rune(string(t.in[t.pos+2:])[:end])) + 2
		case r == '/':
			// "//" and, as StreamTokenizer's default comment character, a
			// single "/" start a comment. Like StreamTokenizer, the
			// character after the "/" is consumed before looking for the
			// line end (so "/" right before a line break also hides the
			// next line).
			t.pos += 2
			for t.pos < len(t.in) && t.in[t.pos] != '\n' && t.in[t.pos] != '\r' {
				t.pos++
			}
		case r == '"' || r == '\'':
			return t.quoted(r)
		case r >= '0' && r <= '9' || r == '.' || r == '-':
			// StreamTokenizer parses a number here: Kafka then reports
			// "Value not specified" since numbers have no string value.
			t.pos++
			for t.pos < len(t.in) && (t.in[t.pos] >= '0' && t.in[t.pos] <= '9' || t.in[t.pos] == '.') {
				t.pos++
			}
			return jaasTok{kind: tNumber}, nil
		case isJAASWordStart(r):
			start := t.pos
			for t.pos < len(t.in) && isJAASWordPart(t.in[t.pos]) {
				t.pos++
			}
			return jaasTok{kind: tWord, text: string(t.in[start:t.pos])}, nil
		case r == '=':
			t.pos++
			return jaasTok{kind: tEquals}, nil
		case r == ';':
			t.pos++
			return jaasTok{kind: tSemi}, nil
		default:
			t.pos++
			return jaasTok{kind: tOther}, nil
		}
	}
	return jaasTok{kind: tEOF}, nil
}

// quoted reads a quoted string with StreamTokenizer's escapes; like it, a
// line break ends an unterminated string.
func (t *jaasLexer) quoted(q rune) (jaasTok, error) {
	t.pos++
	t.cut = false
	var sb strings.Builder
	for t.pos < len(t.in) {
		r := t.in[t.pos]
		t.pos++
		switch {
		case r == q:
			return jaasTok{kind: tString, text: sb.String()}, nil
		case r == '\n' || r == '\r':
			t.cut = true
			return jaasTok{kind: tString, text: sb.String()}, nil
		case r == '\\' && t.pos < len(t.in):
			e := t.in[t.pos]
			t.pos++
			switch e {
			case 'a':
				sb.WriteByte(7)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'v':
				sb.WriteByte('\v')
			default:
				if e >= '0' && e <= '7' {
					v := e - '0'
					maxDigits := 2
					if e > '3' {
						maxDigits = 1
					}
					for i := 0; i < maxDigits && t.pos < len(t.in) && t.in[t.pos] >= '0' && t.in[t.pos] <= '7'; i++ {
						v = v*8 + (t.in[t.pos] - '0')
						t.pos++
					}
					sb.WriteRune(v)
				} else {
					sb.WriteRune(e)
				}
			}
		default:
			sb.WriteRune(r)
		}
	}
	return jaasTok{kind: tString, text: sb.String()}, nil
}
