package mm2props

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBrkNDroppedBackslashWarned: the properties reader (Java's, so MM2's
// too) drops a backslash before an ordinary character and reads \t as a
// tab. "A->B.topics = orders\.eu" therefore selected ordersXeu as well
// (the regex is orders.eu), "groups = \p{Alpha}+" became p{Alpha}+, and
// "ssl.truststore.location = C:\kafka\certs\ts.pem" named
// C:kafkacerts<tab>s.pem, all without a word. Each is warned now, with the
// line to write; a backslash that changes nothing ([\-\.] is [-.]) and \\
// are not.
func TestBrkNDroppedBackslashWarned(t *testing.T) {
	c := resolve(t, `clusters = A, B
A->B.enabled = true
A->B.topics = orders\.eu, .*[\-\.]internal
topics.exclude = .*[\-\.]internal, __.*
groups = \p{Alpha}+
groups.exclude = tmp\\.x
A.ssl.truststore.location = C:\kafka\certs\ts.pem
B.ssl.truststore.location = C:\\kafka\\ts.pem
B.ssl.keystore.location = /etc/kafka/\u006b.pem
`, Options{})
	want := []string{
		`A->B.topics: the properties reader drops a backslash before a character other than t, n, r, f and u (MM2's too), so the regex list is orders.eu, .*[-.]internal, not orders\.eu, .*[\-\.]internal: write A->B.topics = orders\\.eu, .*[\\-\\.]internal`,
		`groups: the properties reader drops a backslash before a character other than t, n, r, f and u (MM2's too), so the regex list is p{Alpha}+, not \p{Alpha}+: write groups = \\p{Alpha}+`,
		`A.ssl.truststore.location: MM2 and kmirror read this path as "C:kafkacerts\ts.pem" (a backslash starts an escape in a properties file): write A.ssl.truststore.location = C:\\kafka\\certs\\ts.pem, or / between directories`,
	}
	var got []string
	for _, w := range warnings(c) {
		for _, k := range []string{"A->B.topics: the properties", "groups: the properties", "A.ssl.truststore.location: MM2", "topics.exclude: the properties", "groups.exclude: the", "B.ssl."} {
			if len(w) >= len(k) && w[:len(k)] == k {
				got = append(got, w)
			}
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
	if s := c.Settings["A->B.topics"]; s.Value != "orders.eu, .*[-.]internal" {
		t.Errorf("A->B.topics = %q, want the value MM2 reads, orders.eu, .*[-.]internal", s.Value)
	}
}

// TestBrkNEntryEscaped: Entry.Escaped keeps the backslash of every escape
// but \\ and \uXXXX, and is empty when there is none.
func TestBrkNEntryEscaped(t *testing.T) {
	es, err := ParseString("a = x\\.y\\tz\\\\w\\u0041\nb = plain\\\\\nc = \\u0041\n")
	if err != nil {
		t.Fatal(err)
	}
	var got [][3]string
	for _, e := range es {
		got = append(got, [3]string{e.Key, e.Value, e.Escaped})
	}
	want := [][3]string{{"a", "x.y\tz\\wA", `x\.y\tz\wA`}, {"b", `plain\`, ""}, {"c", "A", ""}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
}

// TestBrkNDroppedBackslashConfigPropertiesQuiet: config.properties.exclude
// written with single backslashes (MM2's documented default copied into a
// file) draws no warning: on dotted config names "." selects what "\."
// does.
func TestBrkNDroppedBackslashConfigPropertiesQuiet(t *testing.T) {
	c := resolve(t, "clusters = A, B\nA->B.enabled = true\nconfig.properties.exclude = message\\.timestamp\\..*\nconfig.properties.blacklist = x\\.y\n", Options{})
	for _, w := range c.Warnings {
		if strings.HasPrefix(w.Key, "config.properties.") && strings.HasPrefix(w.Message, "the properties reader drops a ") {
			t.Errorf("warning %s: %s, want none", w.Key, w.Message)
		}
	}
}

// TestBrkNMalformedUnicodeEscapeSaysWhatToWrite: a Windows path such as
// C:\users\kafka\ts.jks holds "\u" without four hex digits, which fails
// Java's (and kmirror's) load; the error said only "malformed \uxxxx
// escape". It now says what to write. The value (possibly a secret) is
// not shown.
func TestBrkNMalformedUnicodeEscapeSaysWhatToWrite(t *testing.T) {
	_, err := ParseString("clusters = A, B\nA.ssl.truststore.location = C:\\users\\kafka\\ts.jks\nA.ssl.key.password = p\\uzz\n")
	want := "mm2props: line 2: key \"A.ssl.truststore.location\": malformed \\uxxxx escape (Java: \"Malformed \\uxxxx encoding.\"; MM2 fails to start): a backslash starts an escape in a properties file: write \\\\ for a backslash (in a path, / works too), or \\u and four hex digits for a character\n" +
		"mm2props: line 3: key \"A.ssl.key.password\": malformed \\uxxxx escape (Java: \"Malformed \\uxxxx encoding.\"; MM2 fails to start): a backslash starts an escape in a properties file: write \\\\ for a backslash (in a path, / works too), or \\u and four hex digits for a character"
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
}
