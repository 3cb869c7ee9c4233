package mm2filter

import (
	"errors"
	"testing"
)

// TestBrkNJavaUnicodeClassFlagRefused: Java's inline flag (?U) is
// UNICODE_CHARACTER_CLASS (\w, \d, \s, \b take every Unicode letter and
// digit); Go's RE2 accepts (?U) as "ungreedy" and keeps \w ASCII, so
// groups = (?U)\w+ was accepted and selected other groups than MM2 with
// the same file (Java: "заказы" matches; kmirror: it did not). It is
// refused now with a rewrite; without a class escape (?U) changes nothing
// in either and is accepted, as MM2 does.
func TestBrkNJavaUnicodeClassFlagRefused(t *testing.T) {
	const uAdvice = `Java reads (?U) as UNICODE_CHARACTER_CLASS (\w, \d, \s, \b and the POSIX classes take every Unicode letter and digit), Go's RE2 as ungreedy, keeping them ASCII, so the pattern would select other names than in MM2: write `
	const uTail = ` instead, with Unicode categories where other letters or digits must match (e.g. [\p{L}\p{M}\p{Nd}\p{Pc}] for \w, \p{Nd} for \d), each backslash doubled in a properties file, whose reader drops one`
	for _, tc := range []struct {
		list      []string
		regex     string
		rewritten string
	}{
		{[]string{`(?U)\w+`}, `(?U)\w+`, `\w+`},
		{[]string{`(?U:\d)+-x`}, `(?U:\d)+-x`, `(?:\d)+-x`},
		{[]string{`(?iU)orders-\d+`}, `(?iU)orders-\d+`, `(?i)orders-\d+`},
		// The flag applies to the items after it: MM2 joins them with |.
		{[]string{`(?U)orders`, `\w+-eu`}, `(?U)orders`, `orders`},
	} {
		_, err := New("groups", tc.list, "groups.exclude", nil)
		var rerr *RegexError
		if !errors.As(err, &rerr) {
			t.Errorf("%q: err %v, want a *RegexError", tc.list, err)
			continue
		}
		if want := uAdvice + tc.rewritten + uTail; rerr.Key != "groups" || rerr.Regex != tc.regex || rerr.Reason != want {
			t.Errorf("%q: got %q %q %q\nwant %q %q %q", tc.list, rerr.Key, rerr.Regex, rerr.Reason, "groups", tc.regex, want)
		}
	}
	// No class escape: Java and RE2 select the same names.
	f, err := New("groups", []string{`(?iU)orders-.*`}, "groups.exclude", nil)
	if err != nil || !f.Match("ORDERS-eu") || f.Match("payments") {
		t.Errorf("(?iU)orders-.*: err %v, Match(ORDERS-eu)=%v Match(payments)=%v; want accepted, true, false", err, f.Match("ORDERS-eu"), f.Match("payments"))
	}
}

// TestBrkNJavaOnlyFlagsAndAtomicGroupAdvice: Java's inline flags (?u),
// (?d) and (?x) and the atomic group (?>...) were refused with only "not
// a valid regular expression: ... invalid or unsupported Perl syntax";
// the error now says what each means and gives the pattern to write.
func TestBrkNJavaOnlyFlagsAndAtomicGroupAdvice(t *testing.T) {
	for _, tc := range []struct{ re, reason string }{
		{`(?iu)straße-.*`, `Go's RE2 has no (?u) (UNICODE_CASE): its (?i) always folds Unicode case, as Java's (?iu) does: write (?i)straße-.* instead`},
		{`(?d)orders.x`, `Go's RE2 has no (?d) (UNIX_LINES), which changes only which characters end a line, and names hold none: write orders.x instead`},
		{`(?x) orders \. [a b] # the EU ones`, `Go's RE2 has no (?x) (COMMENTS: white space and # comments are ignored): write orders\.[ab] instead, each backslash doubled in a properties file, whose reader drops one`},
		{`a(?x: b c )d`, `Go's RE2 has no (?x) (COMMENTS: white space and # comments are ignored): write the pattern without these flags, and without the white space and # comments (?x) lets it hold`},
		{`(?>orders-[0-9]+)-eu`, `Go's RE2 has no atomic group (?>...): (?:...) matches the same names unless the group must give back characters the rest of the pattern needs (Java's (?>a+)a matches nothing): write (?:orders-[0-9]+)-eu instead`},
		{`(?ux)a b`, `Go's RE2 has no (?u) (UNICODE_CASE): its (?i) always folds Unicode case, as Java's (?iu) does; Go's RE2 has no (?x) (COMMENTS: white space and # comments are ignored): write ab instead`},
	} {
		_, err := New("topics", []string{tc.re}, "topics.exclude", nil)
		var rerr *RegexError
		if !errors.As(err, &rerr) {
			t.Errorf("%q: err %v, want a *RegexError", tc.re, err)
			continue
		}
		if rerr.Regex != tc.re || rerr.Reason != tc.reason {
			t.Errorf("%q: got %q: %q\nwant %q: %q", tc.re, rerr.Regex, rerr.Reason, tc.re, tc.reason)
		}
	}
}
