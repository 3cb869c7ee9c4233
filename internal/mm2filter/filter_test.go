package mm2filter

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	f, err := New("topics", []string{"orders.*", "pay"}, "topics.exclude", []string{".*\\.internal", "orders-tmp"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"orders": true, "orders-eu": true, "pay": true,
		"payments":        false, // full match, as Java's Matcher.matches
		"xorders":         false,
		"orders.internal": false,
		"orders-tmp":      false,
		"":                false,
	} {
		if got := f.Match(name); got != want {
			t.Errorf("Match(%q) = %v, want %v", name, got, want)
		}
	}
	none, err := New("topics", nil, "topics.exclude", nil)
	if err != nil || none.Match("orders") || (Filter{}).Match("orders") {
		t.Errorf("an empty include list must match nothing (err %v)", err)
	}
	all, _ := New("topics", []string{".*"}, "topics.exclude", nil)
	if !all.Match("anything") {
		t.Error("an empty exclude list must exclude nothing")
	}
}

func TestRegexError(t *testing.T) {
	for _, tc := range []struct {
		key, re, advice string
		exclude         bool
	}{
		{"a->b.topics", "(?!tmp).*", "negative lookahead", false},
		{"a->b.topics", "(?<=x)y", "lookaround", false},
		{"groups.exclude", `(a)\1`, "backreferences", true},
		{"topics", "a*+", "possessive", false},
		{"topics", "[", "not a valid regular expression", false},
		{"topics", "*payments", `a pattern is a regular expression, not a glob: for names matching *payments write .*payments`, false},
		{"topics", "*.orders", `for names matching *.orders write .*\.orders`, false},
	} {
		inc, ex := []string{tc.re}, []string(nil)
		if tc.exclude {
			inc, ex = []string{".*"}, []string{tc.re}
		}
		_, err := New("topics", inc, "groups.exclude", ex)
		if !tc.exclude {
			_, err = New(tc.key, inc, "topics.exclude", ex)
		}
		var re *RegexError
		if !errors.As(err, &re) {
			t.Fatalf("%q: err %v, want a *RegexError", tc.re, err)
		}
		if re.Key != tc.key || re.Regex != tc.re || !strings.Contains(re.Reason, tc.advice) {
			t.Errorf("%q: %+v, want key %q and advice containing %q", tc.re, re, tc.key, tc.advice)
		}
		if !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), strconv.Quote(tc.re)) {
			t.Errorf("%q: error %q does not name the key and the regex", tc.re, err)
		}
	}
}

// MM2 compiles a list as its items joined with "|" (MirrorUtils
// compilePatternList), so a group its list parsing cut at a comma is whole
// again: "(orders, payments)\..*" is the regex (orders|payments)\..*, and
// an inline flag applies to the items after it, as in Java.
func TestListJoinedWithBarAsMM2Does(t *testing.T) {
	for _, tc := range []struct {
		list []string
		want map[string]bool
	}{
		{[]string{"(orders", `payments)\..*`}, map[string]bool{"orders.eu": true, "payments.eu": true, "billing.eu": false, "orders": false, "payments": false}},
		{[]string{"[a", "b]x"}, map[string]bool{"ax": true, "bx": true, "|x": true, ",x": false}}, // [a|b]x
		{[]string{"(?i)orders", "payments"}, map[string]bool{"ORDERS": true, "Payments": true}},
		{[]string{"orders-[0-9]{1}", "orders-[0-9]{2}"}, map[string]bool{"orders-1": true, "orders-12": true, "orders-123": false}},
	} {
		f, err := New("topics", tc.list, "topics.exclude", nil)
		if err != nil {
			t.Fatalf("New(%q): %v", tc.list, err)
		}
		for name, want := range tc.want {
			if got := f.Match(name); got != want {
				t.Errorf("list %q: Match(%q) = %v, want %v", tc.list, name, got, want)
			}
		}
	}
}

// A regex with a comma inside a counted repetition is cut by MM2's list
// parsing: orders-[0-9]{1,3} becomes orders-[0-9]{1|3}, which Java refuses
// (the connector fails). Go would read the braces as literals and match
// no orders-NNN topic; kmirror refuses the list with a rewrite instead.
func TestRegexCommaInRepetitionRefusedWithRewrite(t *testing.T) {
	const split = "MM2 splits this list at its commas and joins the pieces with |, so the regex is "
	const noComma = ": a regex in this list cannot contain a comma; "
	const java = ", which Java refuses (PatternSyntaxException: the connector fails)"
	const closeGroup = `close the group with ), or write \( for a literal parenthesis (in a properties file with the backslash doubled, as its reader drops one)`
	for _, tc := range []struct {
		list   []string
		regex  string
		reason string
		whole  bool
	}{
		{[]string{"orders-[0-9]{1", "3}"}, "orders-[0-9]{1,3}",
			split + "orders-[0-9]{1|3}" + java + noComma + "write orders-[0-9][0-9]?[0-9]? (the same repetition without a comma), or orders-[0-9]+", true},
		{[]string{`x\d{0`, "2}", "y"}, `x\d{0,2},y`,
			split + `x\d{0|2}|y` + java + noComma + `write x\d?\d?, y (the same repetition without a comma), or x\d*, y`, true},
		{[]string{"(ab){2", "}"}, "(ab){2,}",
			split + "(ab){2|}" + java + noComma + "write (ab)(ab)+ (the same repetition without a comma), or (ab)+", true},
		{[]string{"x{1", "20}"}, "x{1,20}",
			split + "x{1|20}" + java + noComma + "write x+ (any count: a range of counts needs a comma)", true},
		// Invalid with its comma kept too: the item at fault is named, not
		// the comma (a new user's finding: ".*internal, (foo" was blamed
		// on its comma, the list's own separator).
		{[]string{"(a", "b"}, "(a", "not a valid regular expression: error parsing regexp: missing closing ): `(a`: " + closeGroup, false},
		{[]string{".*internal", "(foo"}, "(foo", "not a valid regular expression: error parsing regexp: missing closing ): `(foo`: " + closeGroup, false},
		{[]string{"orders", "app-{env}"}, "app-{env}",
			`Java (MM2) refuses a { that does not start a repetition {n}, {n,} or {n,m} (PatternSyntaxException: the connector fails): write \{ for a literal brace`, false},
	} {
		_, err := New("a->b.topics", tc.list, "a->b.topics.exclude", nil)
		var re *RegexError
		if !errors.As(err, &re) {
			t.Fatalf("New(%q): err %v, want a *RegexError", tc.list, err)
		}
		want := RegexError{Key: "a->b.topics", Regex: tc.regex, List: tc.whole, Reason: tc.reason}
		if *re != want {
			t.Errorf("New(%q):\n got %+v\nwant %+v", tc.list, *re, want)
		}
	}
	// A repetition with a comma in one item (the Go API, or a list of one)
	// is a valid Java regex.
	f, err := New("topics", []string{"orders-[0-9]{1,3}", `\p{L}+`}, "topics.exclude", nil)
	if err != nil || !f.Match("orders-123") || f.Match("orders-1234") || !f.Match("abc") {
		t.Errorf("one item with {1,3}: err %v, or wrong matches", err)
	}
}

// FuzzNew checks that any comma-separated list compiles or fails with a
// *RegexError, without panicking (the comma checks scan regexes by hand).
func FuzzNew(f *testing.F) {
	for _, s := range []string{"orders-[0-9]{1,3}", `(orders, payments)\..*`, `[a\`, `\Q{,\E`, `(ab){2,}, c`, `\p{L}{1,2}`, "x{1,20}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list := strings.Split(s, ",")
		for i := range list {
			list[i] = strings.TrimSpace(list[i])
		}
		_, err := New("topics", list, "topics.exclude", nil)
		var re *RegexError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("New(%q): %v is not a *RegexError", list, err)
		}
	})
}

// TestJavaNestedClassRefused: Java reads a [ inside a character class as a
// nested class (a union) and && as an intersection; Go's RE2 reads the [
// as a literal (and [:alpha:] as a POSIX class) and && as two ampersands.
// The pattern compiles in both but selects other names, so kmirror must
// refuse it rather than replicate other topics than MM2.
func TestJavaNestedClassRefused(t *testing.T) {
	for _, re := range []string{`[a-z&&[^x]]+`, `[[:alpha:]]+`, `[a[b]]-.*`, `orders-[0-9&&[^5]]`, `[a-z&&b-d]x`} {
		f, err := New("topics", []string{re}, "topics.exclude", nil)
		var rerr *RegexError
		if !errors.As(err, &rerr) {
			t.Errorf("%q: err %v (Match(orders)=%v), want a *RegexError: Java and Go read the class differently", re, err, f.Match("orders"))
			continue
		}
		if !strings.Contains(rerr.Reason, "nested") {
			t.Errorf("%q: reason %q does not explain the nested class", re, rerr.Reason)
		}
	}
	// Escaped brackets and a single & stay ordinary class members.
	for _, re := range []string{`[\[a]x`, `[a&b]x`, `[\]]x`, `[]a]x`} {
		if _, err := New("topics", []string{re}, "topics.exclude", nil); err != nil {
			t.Errorf("%q: %v, want accepted", re, err)
		}
	}
}

// TestJavaEscapesRewritten (a breaker's finding): MM2 accepts Java's
// \p{Alpha}, \p{javaLowerCase}, \h, \R and \Z in topics and groups lists;
// Go's RE2 refuses them, and kmirror said only "not a valid regular
// expression: invalid escape sequence". The error now names the Java
// escapes and gives the RE2 pattern to write instead.
func TestJavaEscapesRewritten(t *testing.T) {
	for _, tc := range []struct{ re, want string }{
		{`\p{Alpha}+`, `Go's RE2 has no \p{Alpha} (Java's regular expressions, which MM2 uses, do): write [a-zA-Z]+ instead`},
		{`orders-\p{Alnum}{2}`, `write orders-[a-zA-Z0-9]{2} instead`},
		{`[\p{Alpha}_]+\.x`, `write [a-zA-Z_]+\.x instead`},
		{`\p{javaLowerCase}+`, `write [\p{Ll}\x{AA}\x{BA}\x{2B0}-\x{2B8}`},
		{`a\h+b`, `Go's RE2 has no \h`},
		{`a\Z`, `write a\z instead`},
		{`x\R`, `write x(?:\r\n|[\n\x0B\f\r\x{85}\x{2028}\x{2029}]) instead`},
		{`\p{Alpha}\h`, `Go's RE2 has no \p{Alpha}, \h`},
	} {
		_, err := New("topics", []string{tc.re}, "topics.exclude", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.re, err, tc.want)
			continue
		}
		// The rewrite compiles and keeps the meaning on a sample name.
		if i := strings.Index(err.Error(), "write "); i >= 0 && strings.Contains(tc.want, "write ") {
			rw := err.Error()[i+len("write "):]
			rw = rw[:strings.Index(rw, " instead")]
			if _, cerr := New("topics", []string{rw}, "topics.exclude", nil); cerr != nil {
				t.Errorf("%q: the rewrite %q does not compile: %v", tc.re, rw, cerr)
			}
		}
	}
	// A literal backslash before h is no Java escape: plain RE2 advice.
	if _, err := New("topics", []string{`a\\h[`}, "topics.exclude", nil); err == nil || strings.Contains(err.Error(), "Java") {
		t.Errorf(`a\\h[: %v`, err)
	}
}

// TestJavaCaseClassesRewrittenWithOtherCase: Java's \p{javaLowerCase} and
// \p{javaUpperCase} are Character.isLowerCase and isUpperCase, which take
// Unicode's Other_Lowercase and Other_Uppercase characters besides the
// Ll and Lu letters (ª, º, ⓐ; Ⓐ, Ⅻ). Group names may hold them; the
// rewrite suggested as "MM2 reads it alike" was \p{Ll} or \p{Lu} alone,
// which selects other groups than MM2 with the same file.
func TestJavaCaseClassesRewrittenWithOtherCase(t *testing.T) {
	for _, tc := range []struct {
		re          string
		match, miss []string
	}{
		{`g-\p{javaLowerCase}+`, []string{"g-abc", "g-ªb", "g-ºx", "g-ⓐⓑ", "g-ʰa"}, []string{"g-A", "g-Ⓐ", "g-1"}},
		{`[\p{javaLowerCase}_]+`, []string{"a_ª"}, []string{"A"}},
		{`g-\p{javaUpperCase}+`, []string{"g-ABC", "g-Ⓐ", "g-Ⅻ"}, []string{"g-a", "g-ª", "g-ⓐ"}},
	} {
		rw, found := rewriteJavaEscapes(tc.re)
		if found == "" {
			t.Errorf("%q: no rewrite", tc.re)
			continue
		}
		re := regexp.MustCompile("^(?:" + rw + ")$")
		for _, n := range tc.match {
			if !re.MatchString(n) {
				t.Errorf("%q rewritten %q: does not match %q, which Java's matches", tc.re, rw, n)
			}
		}
		for _, n := range tc.miss {
			if re.MatchString(n) {
				t.Errorf("%q rewritten %q: matches %q, which Java's does not", tc.re, rw, n)
			}
		}
	}
}

// TestJavaDigitClassIsASCII: Java's \p{Digit} (MM2's topics and groups
// lists) is the POSIX class, US-ASCII 0-9; Go's RE2 accepts the same
// escape as Unicode's decimal digits, so a group named with
// Arabic-Indic digits was selected by kmirror and not by MM2 with the
// same file. It is now read as Java reads it, outside and inside a
// character class, and its negation \P{Digit} too.
func TestJavaDigitClassIsASCII(t *testing.T) {
	for _, tc := range []struct {
		re          string
		match, miss []string
	}{
		{`orders-\p{Digit}+`, []string{"orders-12", "orders-0"}, []string{"orders-١٢", "orders-", "orders-x"}},
		{`[\p{Digit}_]+`, []string{"1_2", "_"}, []string{"١", "a"}},
		{`x\P{Digit}`, []string{"xa", "x١"}, []string{"x1"}},
		{`a\\p\{Digit\}`, []string{`a\p{Digit}`}, []string{"a1"}},
	} {
		f, err := New("groups", []string{tc.re}, "groups.exclude", nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.re, err)
		}
		for _, n := range tc.match {
			if !f.Match(n) {
				t.Errorf("%q does not match %q, which Java's does", tc.re, n)
			}
		}
		for _, n := range tc.miss {
			if f.Match(n) {
				t.Errorf("%q matches %q, which Java's does not", tc.re, n)
			}
		}
	}
}

// TestJavaNegatedDigitInClassIsASCII: inside a character class, Java's
// \P{Digit} (anything but US-ASCII 0-9) was kept as written, which RE2
// reads as anything but Unicode's decimal digits: [\P{Digit}_]+ selected
// "ab" but not "١٢", which MM2 selects with the same file.
func TestJavaNegatedDigitInClassIsASCII(t *testing.T) {
	f, err := New("groups", []string{`g-[\P{Digit}_]+`}, "groups.exclude", nil)
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]bool{"g-ab": true, "g-١٢": true, "g-_": true, "g-1": false, "g-a1": false} {
		if got := f.Match(n); got != want {
			t.Errorf("Match(%q) = %t, want %t (as Java)", n, got, want)
		}
	}
}
