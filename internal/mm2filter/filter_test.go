package mm2filter

import (
	"errors"
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
