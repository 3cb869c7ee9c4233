// Package mm2filter compiles MM2's include/exclude regex lists (topics and
// topics.exclude, groups and groups.exclude, config.properties.exclude):
// the behaviour of MM2's DefaultTopicFilter, DefaultGroupFilter and
// DefaultConfigPropertyFilter, with Go RE2 regexes.
//
// As in MM2 (MirrorUtils.compilePatternList), a list's items are joined
// with "|" into one regex that must match the whole name. MM2's list
// parsing cuts a regex at its commas, so the joined form is what MM2 runs:
// "(orders, payments)\..*" is accepted as (orders|payments)\..*. Where the
// joined form is a regex Java refuses (the connector fails) kmirror refuses
// the list when it is loaded, with a rewrite: "orders-[0-9]{1,3}" becomes
// orders-[0-9]{1|3}, which Go would read with literal braces, silently
// selecting other topics. A { that starts no repetition is refused for the
// same reason (Java refuses it; RE2 reads it as a literal), and so is a
// character class with a nested class or && (Java: union, intersection;
// RE2: literal characters or a POSIX class), and Java's inline flag (?U)
// with a class escape (Java: Unicode \w, \d, \s, \b; RE2: ungreedy, the
// classes ASCII).
package mm2filter

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Filter is a compiled include/exclude pair: a name passes when it fully
// matches an include regex and no exclude regex. The zero Filter matches
// nothing.
type Filter struct {
	include, exclude *regexp.Regexp
}

// RegexError is a regex Go cannot compile, with advice on what to write
// instead.
type RegexError struct {
	Key   string // the configuration key that holds the regex
	Regex string // the item at fault, or the whole list (List)
	// List is set when the error is about the list as a whole (its items
	// joined with "|", as MM2 compiles them): Regex is then the items
	// joined with commas, as the list is written.
	List   bool
	Reason string
}

func (e *RegexError) Error() string { return fmt.Sprintf("%s=%q: %s", e.Key, e.Regex, e.Reason) }

// RegexErrors is every bad regex [New] found, when there are two or more
// (in the include list, then the exclude list), so that all can be fixed
// in one go. errors.As with a *RegexError finds the first.
type RegexErrors []*RegexError

// Error returns the errors' messages, separated by "; ".
func (e RegexErrors) Error() string {
	msgs := make([]string, len(e))
	for i, re := range e {
		msgs[i] = re.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the errors, for errors.As.
func (e RegexErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, re := range e {
		out[i] = re
	}
	return out
}

// New compiles include and exclude regex lists (Go RE2 syntax; each list's
// items joined with "|" and anchored to match the whole name, as MM2's
// Pattern.compile(String.join("|", list)) and Matcher.matches). An empty
// include list matches nothing; an empty exclude list excludes nothing.
// The error is a *RegexError naming the key and the regex (or the list)
// and saying what to write instead, or [RegexErrors] when both lists, or
// several items of one, are bad (every bad item: only the first was
// reported, and fixing it showed the next).
func New(includeKey string, include []string, excludeKey string, exclude []string) (Filter, error) {
	var f Filter
	inc, incErrs := compileList(includeKey, include)
	exc, excErrs := compileList(excludeKey, exclude)
	switch errs := append(incErrs, excErrs...); len(errs) {
	case 0:
		f.include, f.exclude = inc, exc
		return f, nil
	case 1:
		return Filter{}, errs[0]
	default:
		return Filter{}, RegexErrors(errs)
	}
}

// Match reports whether name passes the filter.
func (f Filter) Match(name string) bool {
	if f.include == nil || !f.include.MatchString(name) {
		return false
	}
	return f.exclude == nil || !f.exclude.MatchString(name)
}

// compileList compiles list as MM2's MirrorUtils.compilePatternList does:
// the items joined with "|" into one regex, anchored for a whole match. A
// regex with a comma was cut into items by MM2's list parsing, so the
// joined form is what MM2 compiles: "(orders, payments)" is
// (orders|payments), and "a{1,3}" is a{1|3}, which Java refuses. Both
// are judged as Java would, and an error about the whole list says so.
// It returns every bad item of the kind found first (Java-only groups or
// flags, or regexes Go cannot compile), or one error about the list.
func compileList(key string, list []string) (*regexp.Regexp, []*RegexError) {
	if len(list) == 0 {
		return nil, nil
	}
	joined := strings.Join(list, "|")
	split := len(list) > 1 && slices.ContainsFunc(list, func(p string) bool { return !balanced(p) })
	if i := badBrace(joined); i >= 0 {
		if split {
			return nil, []*RegexError{{Key: key, Regex: strings.Join(list, ","), List: true, Reason: commaAdvice(list, joined, "which Java refuses (PatternSyntaxException: the connector fails)")}}
		}
		return nil, []*RegexError{{Key: key, Regex: itemAt(list, i), Reason: "Java (MM2) refuses a { that does not start a repetition {n}, {n,} or {n,m} (PatternSyntaxException: the connector fails): write \\{ for a literal brace"}}
	}
	if item := nestedClass(list); item != "" {
		return nil, []*RegexError{{Key: key, Regex: item, Reason: "Java (MM2) reads a [ inside a character class as a nested class (a union) and && as an intersection, " +
			"Go's RE2 reads that [ as a literal (and [:name:] as a POSIX class) and && as two ampersands, so the pattern would select other names than in MM2: " +
			"write the class without nesting, listing the characters it keeps (e.g. [a-wyz] for [a-z&&[^x]]), or escape a literal bracket (written \\\\[ in a properties file, whose reader drops one backslash)"}}
	}
	unicodeMatters := hasClassEscape(joined) // a flag applies to the items after it too
	var errs []*RegexError
	for _, p := range distinct(list) {
		if why := javaGroupAdvice(p, unicodeMatters); why != "" {
			errs = append(errs, &RegexError{Key: key, Regex: p, Reason: why})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	re, err := regexp.Compile("^(?:" + withJavaMeanings(joined) + ")$")
	if err == nil {
		return re, nil
	}
	// The comma is at fault only when the regex is valid with its commas
	// kept: an unclosed "(foo" in ".*internal, (foo" is not, and the item
	// that fails on its own is named below.
	if split && validWithCommas(list) {
		_, err := regexp.Compile(joined)
		why := regexAdvice(joined, err)
		if strings.HasPrefix(why, "not a valid regular expression") {
			why = commaAdvice(list, joined, fmt.Sprintf("which is not a valid regular expression: %v", err))
		}
		return nil, []*RegexError{{Key: key, Regex: strings.Join(list, ","), List: true, Reason: why}}
	}
	for _, p := range distinct(list) {
		if _, err := regexp.Compile(p); err != nil {
			errs = append(errs, &RegexError{Key: key, Regex: p, Reason: regexAdvice(p, err)})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	_, err = regexp.Compile(joined)
	return nil, []*RegexError{{Key: key, Regex: strings.Join(list, ","), List: true, Reason: regexAdvice(joined, err)}}
}

// distinct returns list's items without repeats, in list's order: a bad
// item written twice is one error, where its error appeared once per copy
// (TestBrkTRepeatedBadItemReportedOnce).
func distinct(list []string) []string {
	out := make([]string, 0, len(list))
	for _, p := range list {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// validWithCommas reports whether list's items, joined again with the
// commas MM2's list parsing cut them at, are a valid regex.
func validWithCommas(list []string) bool {
	_, err := regexp.Compile(withJavaMeanings(strings.Join(list, ",")))
	return err == nil
}

// commaAdvice explains a list whose items, joined with "|" as MM2 does,
// are not a valid regex (what is what the joined regex is), with a
// rewrite without a comma when one can be derived.
func commaAdvice(list []string, joined, what string) string {
	msg := "MM2 splits this list at its commas and joins the pieces with |, so the regex is " + joined + ", " + what + ": a regex in this list cannot contain a comma; "
	switch exact, loose := rewriteCounted(strings.Join(list, ",")); {
	case exact != "":
		return msg + "write " + exact + " (the same repetition without a comma), or " + loose
	case loose != "":
		return msg + "write " + loose + " (any count: a range of counts needs a comma)"
	}
	return msg + "write each alternative as a list item of its own, or join them with | inside a group, e.g. (orders|payments)\\..*"
}

// itemAt returns the item of list that holds byte i of its "|"-joined form.
func itemAt(list []string, i int) string {
	for _, p := range list {
		if i <= len(p) {
			return p
		}
		i -= len(p) + 1
	}
	return list[len(list)-1]
}

// Kinds of [rtok].
const (
	tAtom   = iota // a character, escape, class or "."
	tOpen          // (
	tClose         // )
	tAlt           // |
	tQuant         // *, + or ?
	tRepeat        // a counted repetition {n}, {n,} or {n,m}
	tBrace         // a { that starts no repetition (Java refuses it)
	tOpenCl        // a [ whose class is not closed
)

// rtok is a token of a regex: its kind and byte range.
type rtok struct {
	kind       int
	start, end int
}

// countedRE matches a counted repetition at the start of a string.
var countedRE = regexp.MustCompile(`^\{([0-9]+)(,([0-9]*))?\}`)

// tokens splits re into the tokens the comma checks need, with Java's
// rules: escapes (\p{..}, \x{..}, \N{..} and \Q..\E whole), classes
// (nested ones too), groups, alternation, quantifiers and braces.
func tokens(re string) []rtok {
	var out []rtok
	for i := 0; i < len(re); {
		start := i
		kind := tAtom
		switch c := re[i]; c {
		case '\\':
			i += 2
			if i > len(re) {
				i = len(re)
				break
			}
			switch re[i-1] {
			case 'p', 'P', 'x', 'N':
				if i < len(re) && re[i] == '{' {
					if j := strings.IndexByte(re[i:], '}'); j >= 0 {
						i += j + 1
					}
				}
			case 'Q':
				if j := strings.Index(re[i:], "\\E"); j >= 0 {
					i += j + 2
				} else {
					i = len(re)
				}
			default:
				_, n := utf8.DecodeRuneInString(re[i-1:])
				i += n - 1
			}
		case '[':
			i++
			if i < len(re) && re[i] == '^' {
				i++
			}
			if i < len(re) && re[i] == ']' {
				i++
			}
			depth := 1
			for i < len(re) && depth > 0 {
				switch re[i] {
				case '\\':
					i++
				case '[':
					depth++
				case ']':
					depth--
				}
				i++
			}
			if depth > 0 {
				i, kind = len(re), tOpenCl
			}
		case '(':
			i, kind = i+1, tOpen
		case ')':
			i, kind = i+1, tClose
		case '|':
			i, kind = i+1, tAlt
		case '*', '+', '?':
			i, kind = i+1, tQuant
		case '{':
			if m := countedRE.FindString(re[i:]); m != "" {
				i, kind = i+len(m), tRepeat
			} else {
				i, kind = i+1, tBrace
			}
		default:
			_, n := utf8.DecodeRuneInString(re[i:])
			i += n
		}
		out = append(out, rtok{kind: kind, start: start, end: i})
	}
	return out
}

// nestedClass returns the first item of list with a character class that
// holds an unescaped [ (a nested class in Java) or && (an intersection in
// Java), or "". Go's RE2 reads both differently without failing.
func nestedClass(list []string) string {
	for _, p := range list {
		for _, t := range tokens(p) {
			if t.kind != tAtom || p[t.start] != '[' {
				continue
			}
			body := p[t.start+1 : t.end]
			body = strings.TrimPrefix(body, "^")
			body = strings.TrimPrefix(body, "]")
			for i := 0; i < len(body); i++ {
				switch {
				case body[i] == '\\':
					i++
				case body[i] == '[' || strings.HasPrefix(body[i:], "&&"):
					return p
				}
			}
		}
	}
	return ""
}

// badBrace returns the byte offset of the first { in re that Java refuses
// (one that starts no counted repetition), or -1.
func badBrace(re string) int {
	for _, t := range tokens(re) {
		if t.kind == tBrace {
			return t.start
		}
	}
	return -1
}

// balanced reports whether re closes every group, class and brace it
// opens and closes none it does not open: an item that is not balanced is
// most likely part of a regex that MM2's list parsing cut at a comma.
func balanced(re string) bool {
	depth, braces := 0, 0
	for _, t := range tokens(re) {
		switch {
		case t.kind == tOpen:
			depth++
		case t.kind == tClose:
			if depth--; depth < 0 {
				return false
			}
		case t.kind == tOpenCl:
			return false
		case t.kind == tBrace:
			braces++
		case t.kind == tAtom && (re[t.start] == '}' || re[t.start] == ']'):
			if re[t.start] == ']' || braces == 0 {
				return false
			}
			braces--
		}
	}
	return depth == 0 && braces == 0
}

// maxRewrite is the largest repetition count rewriteCounted writes out.
const maxRewrite = 8

// rewriteCounted rewrites the counted repetitions with a comma in re
// ({m,n} and {m,}) without one: exact repeats the atom (orders-[0-9]{1,3}
// is orders-[0-9][0-9]?[0-9]?; "" for counts above maxRewrite), loose uses
// + or * (orders-[0-9]+). Both are "" when the rewrite is not a valid list:
// an atom that cannot be found, or a comma left inside an item.
func rewriteCounted(re string) (exact, loose string) {
	toks := tokens(re)
	var ex, lo strings.Builder
	exactOK := true
	last := 0 // bytes of re before it are written
	for k, t := range toks {
		if t.kind != tRepeat || !strings.Contains(re[t.start:t.end], ",") || k == 0 {
			continue
		}
		// The atom the repetition applies to: the token before it, or
		// the whole group it closes.
		a := toks[k-1]
		switch a.kind {
		case tAtom:
		case tClose:
			depth := 0
			for j := k - 1; j >= 0; j-- {
				if toks[j].kind == tClose {
					depth++
				} else if toks[j].kind == tOpen {
					if depth--; depth == 0 {
						a.start = toks[j].start
						break
					}
				}
			}
			if depth != 0 {
				return "", ""
			}
		default:
			return "", ""
		}
		m := countedRE.FindStringSubmatch(re[t.start:t.end])
		lo1, _ := strconv.Atoi(m[1])
		atom := re[a.start:a.end]
		var e string
		hi, _ := strconv.Atoi(m[3])
		switch {
		case m[3] != "" && hi < lo1:
			return "", "" // Java refuses it too
		case lo1 > maxRewrite || hi > maxRewrite:
			exactOK = false
		case m[3] == "" && lo1 == 0:
			e = atom + "*"
		case m[3] == "":
			e = strings.Repeat(atom, lo1-1) + atom + "+"
		default:
			e = strings.Repeat(atom, lo1) + strings.Repeat(atom+"?", hi-lo1)
		}
		l := atom + "+"
		if lo1 == 0 {
			l = atom + "*"
		}
		ex.WriteString(re[last:a.start] + e)
		lo.WriteString(re[last:a.start] + l)
		last = t.end
	}
	if last == 0 {
		return "", ""
	}
	ex.WriteString(re[last:])
	lo.WriteString(re[last:])
	// Commas left must separate items that are whole regexes.
	if !validList(lo.String()) {
		return "", ""
	}
	// Shown as a list is written: items separated by ", ".
	sep := strings.NewReplacer(",", ", ")
	if !exactOK {
		return "", sep.Replace(lo.String())
	}
	return sep.Replace(ex.String()), sep.Replace(lo.String())
}

// validList reports whether every comma-separated item of v is balanced
// and holds no brace Java refuses.
func validList(v string) bool {
	for _, p := range strings.Split(v, ",") {
		if !balanced(p) || badBrace(p) >= 0 {
			return false
		}
	}
	return true
}

// regexAdvice explains a regex Go cannot compile, with a rewrite hint for
// the Java-only constructs MM2 users write.
func regexAdvice(re string, err error) string {
	rewrite, found := rewriteJavaEscapes(re)
	switch {
	case strings.Contains(re, "(?!"):
		return fmt.Sprintf("Go's RE2 has no negative lookahead (?!...): list the names to skip in the matching *.exclude key instead (%v)", err)
	case strings.Contains(re, "(?="), strings.Contains(re, "(?<=") || strings.Contains(re, "(?<!"):
		return fmt.Sprintf("Go's RE2 has no lookaround: match the whole name with the include key and put what must not match in the *.exclude key (%v)", err)
	case backrefRE.MatchString(re):
		return fmt.Sprintf("Go's RE2 has no backreferences (\\1): list the alternatives explicitly (%v)", err)
	case strings.Contains(re, "*+") || strings.Contains(re, "++") || strings.Contains(re, "?+"):
		return fmt.Sprintf("Go's RE2 has no possessive quantifiers: drop the trailing + (RE2 never backtracks) (%v)", err)
	case found != "":
		note := ""
		if strings.Contains(rewrite, `\`) {
			note = ", each backslash doubled in a properties file, whose reader drops one"
		}
		return fmt.Sprintf("Go's RE2 has no %s (Java's regular expressions, which MM2 uses, do): write %s instead%s; MM2 reads it alike (%v)", found, rewrite, note, err)
	case strings.HasPrefix(re, "*") || strings.HasPrefix(re, "?"):
		// A glob, as in a shell (a new user's try, stop 38).
		glob := strings.NewReplacer(".", `\.`, "*", ".*", "?", ".").Replace(re)
		return fmt.Sprintf("a pattern is a regular expression, not a glob: for names matching %s write %s (%v)", re, glob, err)
	}
	if fix := syntaxAdvice(err); fix != "" {
		return fmt.Sprintf("not a valid regular expression: %v: %s", err, fix)
	}
	return fmt.Sprintf("not a valid regular expression: %v", err)
}

// syntaxAdvice says what to write instead of the common syntax errors
// (an unclosed group or class, a quantifier with nothing to repeat); the
// error alone named the fault but not the fix. "" for the others.
func syntaxAdvice(err error) string {
	const lit = " (in a properties file with the backslash doubled, as its reader drops one)"
	var se *syntax.Error
	if !errors.As(err, &se) {
		return ""
	}
	switch se.Code {
	case syntax.ErrMissingParen:
		return `close the group with ), or write \( for a literal parenthesis` + lit
	case syntax.ErrUnexpectedParen:
		return `open the group with (, or write \) for a literal parenthesis` + lit
	case syntax.ErrMissingBracket:
		return `close the class with ], or write \[ for a literal bracket` + lit
	case syntax.ErrMissingRepeatArgument, syntax.ErrInvalidRepeatOp:
		return `put what repeats before *, + or ? (.* for any characters), or write \*, \+ or \? for a literal character` + lit
	}
	return ""
}

var backrefRE = regexp.MustCompile(`\\[1-9]`)

// javaEscapes are the escapes of Java's regular expressions that Go's RE2
// refuses, each with a form both read alike on topic and group names (which
// hold no line terminator), so the file stays valid for MM2: Java's POSIX
// classes (US-ASCII) as ranges, its java.lang.Character classes as Unicode
// categories (the case classes with Unicode's other lowercase or
// uppercase characters: withOtherCase), \h, \R and \Z. (\p{Digit}, which
// RE2 accepts with another meaning, is in javaMeanings.)
var javaEscapes = []javaEscape{
	{`\p{Alpha}`, `[a-zA-Z]`}, {`\p{Alnum}`, `[a-zA-Z0-9]`}, {`\p{Lower}`, `[a-z]`}, {`\p{Upper}`, `[A-Z]`},
	{`\p{Punct}`, `[!-/:-@\[-` + "`" + `{-~]`}, {`\p{Graph}`, `[!-~]`}, {`\p{Print}`, `[ -~]`}, {`\p{Blank}`, `[ \t]`},
	{`\p{Cntrl}`, `[\x00-\x1F\x7F]`}, {`\p{XDigit}`, `[0-9a-fA-F]`}, {`\p{Space}`, `[ \t\n\x0B\f\r]`},
	{`\p{ASCII}`, `[\x00-\x7F]`},
	{`\p{javaLowerCase}`, withOtherCase(`\p{Ll}`, unicode.Other_Lowercase)},
	{`\p{javaUpperCase}`, withOtherCase(`\p{Lu}`, unicode.Other_Uppercase)}, {`\p{javaDigit}`, `\p{Nd}`},
	{`\p{javaLetter}`, `\p{L}`}, {`\p{javaLetterOrDigit}`, `[\p{L}\p{Nd}]`},
	{`\h`, `[\t \x{A0}\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}]`},
	{`\R`, `(?:\r\n|[\n\x0B\f\r\x{85}\x{2028}\x{2029}])`},
	{`\Z`, `\z`},
}

// javaEscape is a Java regex escape and the RE2 form that reads alike on
// topic and group names.
type javaEscape struct{ java, re2 string }

// javaMeanings are the escapes Go's RE2 accepts with another meaning than
// Java's, rewritten to Java's before a list is compiled, so that a file
// selects the same names as in MM2: Java's \p{Digit} is the POSIX class,
// US-ASCII 0-9; RE2 reads it as Unicode's decimal digits, which a group
// name may hold ("orders-١٢"). Its negation is written as the ranges
// around 0-9, so that it is rewritten inside a character class too
// ([\P{Digit}_]: [^0-9] cannot be a class member).
var javaMeanings = []javaEscape{{`\p{Digit}`, `[0-9]`}, {`\P{Digit}`, `[\x00-/:-\x{10FFFF}]`}}

// withJavaMeanings returns re with the escapes of javaMeanings rewritten
// (re itself when it has none, or when the result does not compile).
func withJavaMeanings(re string) string {
	if !strings.Contains(re, `{Digit}`) {
		return re
	}
	if rw, _ := rewriteEscapes(re, javaMeanings); rw != "" {
		return rw
	}
	return re
}

// withOtherCase is the RE2 class of category cat and the characters of
// other (Unicode's Other_Lowercase or Other_Uppercase): Java's
// Character.isLowerCase and isUpperCase, hence \p{javaLowerCase} and
// \p{javaUpperCase}, take those too (ª, ⓐ; Ⓐ, Ⅻ), which a group name
// may hold.
func withOtherCase(cat string, other *unicode.RangeTable) string {
	var spans [][2]uint32 // adjacent ranges merged
	add := func(lo, hi, stride uint32) {
		for c := lo; c <= hi; c += stride {
			if n := len(spans); n > 0 && spans[n-1][1]+1 == c {
				spans[n-1][1] = c
			} else {
				spans = append(spans, [2]uint32{c, c})
			}
		}
	}
	for _, r := range other.R16 {
		add(uint32(r.Lo), uint32(r.Hi), uint32(r.Stride))
	}
	for _, r := range other.R32 {
		add(r.Lo, r.Hi, r.Stride)
	}
	var b strings.Builder
	b.WriteString("[" + cat)
	for _, sp := range spans {
		fmt.Fprintf(&b, `\x{%X}`, sp[0])
		if sp[1] > sp[0] {
			fmt.Fprintf(&b, `-\x{%X}`, sp[1])
		}
	}
	return b.String() + "]"
}

// rewriteJavaEscapes replaces the escapes of javaEscapes in re and returns
// the result and the Java escapes found ("\p{Alpha}, \h"), or "", "" when
// re has none or the result does not compile either. An escaped backslash
// before one ("\\h", a literal backslash then h) is left alone.
func rewriteJavaEscapes(re string) (rewrite, found string) {
	return rewriteEscapes(re, javaEscapes)
}

// rewriteEscapes replaces the escapes of table in re (see
// rewriteJavaEscapes).
func rewriteEscapes(re string, table []javaEscape) (rewrite, found string) {
	var b strings.Builder
	var names []string
	inClass := false // inside [...]: a bracketed replacement goes in without its brackets
	for i := 0; i < len(re); {
		if re[i] != '\\' || i+1 == len(re) {
			switch {
			case re[i] == '[' && !inClass:
				inClass = true
			case re[i] == ']' && inClass:
				inClass = false
			}
			b.WriteByte(re[i])
			i++
			continue
		}
		matched := false
		for _, e := range table {
			if strings.HasPrefix(re[i:], e.java) {
				r := e.re2
				if inClass && strings.HasPrefix(r, "(") {
					return "", "" // \R matches two characters: no class member
				}
				if inClass && strings.HasPrefix(r, "[") {
					r = r[1 : len(r)-1]
				}
				b.WriteString(r)
				if !slices.Contains(names, e.java) {
					names = append(names, e.java)
				}
				i += len(e.java)
				matched = true
				break
			}
		}
		if !matched { // another escape, kept as it is
			b.WriteString(re[i : i+2])
			i += 2
		}
	}
	if len(names) == 0 {
		return "", ""
	}
	if _, err := regexp.Compile(b.String()); err != nil {
		return "", ""
	}
	return b.String(), strings.Join(names, ", ")
}

// javaGroupAdvice explains the groups of re that Java's regular
// expressions (MM2) and Go's RE2 read differently, with re rewritten so
// that both read it alike, or returns "". Java's inline flags are not
// RE2's: (?U) is UNICODE_CHARACTER_CLASS in Java (\w, \d, \s, \b and the
// POSIX classes take every Unicode letter and digit) but "ungreedy" in
// RE2, which accepts it, so (?U)\w+ would silently select other groups
// than in MM2; (?u) (UNICODE_CASE), (?d) (UNIX_LINES) and (?x) (COMMENTS)
// RE2 refuses, and so the atomic group (?>...).
//
// (?U) is refused only when classEscapes (the list holds an escape whose
// meaning it changes, [hasClassEscape]): otherwise it changes nothing in
// either, since Java's (?iU) folds Unicode case as RE2's (?i) does, and an
// ungreedy match is still a whole-name match.
func javaGroupAdvice(re string, classEscapes bool) string {
	var b strings.Builder
	var found []string
	note := func(what string) {
		if !slices.Contains(found, what) {
			found = append(found, what)
		}
	}
	drop := "udx"
	if classEscapes {
		drop += "U"
	}
	xAt := -1       // offset in b from which (?x) applies
	scoped := false // a (?x:...) group: its end is not worked out, no rewrite
	last := 0
	for _, t := range tokens(re) {
		if t.kind != tOpen || !strings.HasPrefix(re[t.end:], "?") {
			continue
		}
		rest := re[t.end+1:]
		if strings.HasPrefix(rest, ">") {
			note("(?>")
			b.WriteString(re[last:t.start] + "(?:")
			last = t.end + 2
			continue
		}
		n := strings.IndexFunc(rest, func(r rune) bool { return !strings.ContainsRune("idmsuxU-", r) })
		if n <= 0 || (rest[n] != ')' && rest[n] != ':') {
			continue
		}
		flags, kept := rest[:n], ""
		for _, f := range flags {
			if strings.ContainsRune(drop, f) {
				note("(?" + string(f) + ")")
			} else {
				kept += string(f)
			}
		}
		if kept == flags {
			continue
		}
		b.WriteString(re[last:t.start])
		if strings.Contains(flags, "x") && xAt < 0 {
			xAt = b.Len()
			scoped = rest[n] == ':' || strings.Contains(flags, "-")
		}
		kept = strings.TrimSuffix(strings.TrimPrefix(kept, "-"), "-")
		switch {
		case kept != "":
			b.WriteString("(?" + kept + rest[n:n+1])
		case rest[n] == ':':
			b.WriteString("(?:")
		}
		last = t.end + 1 + n + 1
	}
	if len(found) == 0 {
		return ""
	}
	b.WriteString(re[last:])
	rewrite := b.String()
	if xAt >= 0 {
		rewrite = withoutComments(rewrite, xAt)
	}
	why := map[string]string{
		"(?U)": "Java reads (?U) as UNICODE_CHARACTER_CLASS (\\w, \\d, \\s, \\b and the POSIX classes take every Unicode letter and digit), Go's RE2 as ungreedy, keeping them ASCII, so the pattern would select other names than in MM2",
		"(?u)": "Go's RE2 has no (?u) (UNICODE_CASE): its (?i) always folds Unicode case, as Java's (?iu) does",
		"(?d)": "Go's RE2 has no (?d) (UNIX_LINES), which changes only which characters end a line, and names hold none",
		"(?x)": "Go's RE2 has no (?x) (COMMENTS: white space and # comments are ignored)",
		"(?>":  "Go's RE2 has no atomic group (?>...): (?:...) matches the same names unless the group must give back characters the rest of the pattern needs (Java's (?>a+)a matches nothing)",
	}
	var parts []string
	for _, f := range found {
		parts = append(parts, why[f])
	}
	msg := strings.Join(parts, "; ")
	if _, err := regexp.Compile(withJavaMeanings(rewrite)); rewrite == "" || scoped || err != nil {
		msg += ": write the pattern without these flags"
		if xAt >= 0 {
			msg += ", and without the white space and # comments (?x) lets it hold"
		}
		return msg
	}
	msg += ": write " + rewrite + " instead"
	if slices.Contains(found, "(?U)") {
		msg += ", with Unicode categories where other letters or digits must match (e.g. [\\p{L}\\p{M}\\p{Nd}\\p{Pc}] for \\w, \\p{Nd} for \\d)"
	}
	if strings.Contains(rewrite, `\`) || slices.Contains(found, "(?U)") { // the example classes hold backslashes
		msg += ", each backslash doubled in a properties file, whose reader drops one"
	}
	return msg
}

// withoutComments returns re with what Java's COMMENTS mode ignores from
// byte from on removed: white space and # to the end of the line, outside
// and inside character classes; an escaped one is kept.
func withoutComments(re string, from int) string {
	var b strings.Builder
	b.WriteString(re[:from])
	comment := false
	for i := from; i < len(re); i++ {
		c := re[i]
		switch {
		case comment:
			comment = c != '\n'
			continue
		case c == '\\' && i+1 < len(re):
			b.WriteString(re[i : i+2])
			i++
			continue
		case c == '#':
			comment = true
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// hasClassEscape reports whether re holds an escape whose meaning Java's
// (?U) changes: \w, \d, \s, \b, their negations, or a \p{...} class.
func hasClassEscape(re string) bool {
	for i := 0; i+1 < len(re); i++ {
		if re[i] == '\\' {
			if strings.IndexByte("wWdDsSbBpP", re[i+1]) >= 0 {
				return true
			}
			i++
		}
	}
	return false
}
