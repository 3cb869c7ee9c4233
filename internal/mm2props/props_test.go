package mm2props

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kv is a compact expected entry.
type kv struct{ K, V string }

// javaCases are inputs with the key/value pairs Java 17's
// Properties.load(InputStream) produces for them (each was run through
// Java when the table was written).
var javaCases = []struct {
	name string
	in   string
	want []kv
}{
	{"equals", "a=b", []kv{{"a", "b"}}},
	{"colon", "config.storage.replication.factor: 1", []kv{{"config.storage.replication.factor", "1"}}},
	{"whitespace separator", "clusters source, target", []kv{{"clusters", "source, target"}}},
	{"tab separator", "a\tb", []kv{{"a", "b"}}},
	{"spaces around equals", "A->B.enabled = true", []kv{{"A->B.enabled", "true"}}},
	{"only first separator consumed", "a = = b", []kv{{"a", "= b"}}},
	{"colon then equals", "a : =b", []kv{{"a", "=b"}}},
	{"trailing whitespace kept", "topics=.* \t", []kv{{"topics", ".* \t"}}},
	{"trailing space after true", "refresh.topics.enabled=false ", []kv{{"refresh.topics.enabled", "false "}}},
	{"key only", "---%<---", []kv{{"---%<---", ""}}},
	{"key with trailing blanks only", "key   ", []kv{{"key", ""}}},
	{"empty key", "=v", []kv{{"", "v"}}},
	{"hash comment", "# a=b\nc=d", []kv{{"c", "d"}}},
	{"bang comment", "! a=b\nc=d", []kv{{"c", "d"}}},
	{"indented comments", "   # x=1\n\t! y=2\n\f#z\nc=d", []kv{{"c", "d"}}},
	{"hash inside value", "a=b # not a comment", []kv{{"a", "b # not a comment"}}},
	{"hash inside key", "a#b=c", []kv{{"a#b", "c"}}},
	{"comment never continues", "#c\\\nx=y", []kv{{"x", "y"}}},
	{"blank lines", "\n\n  \t\na=1\n\n", []kv{{"a", "1"}}},
	{"backslash before ordinary char dropped", `topics.exclude = .*[\-\.]internal, .*\.replica`, []kv{{"topics.exclude", ".*[-.]internal, .*.replica"}}},
	{"escaped backslash", `a=C:\\dir`, []kv{{"a", `C:\dir`}}},
	{"control escapes", `a=\t\n\r\f\b\x`, []kv{{"a", "\t\n\r\fbx"}}},
	{"unicode escape", `a=\u0041\u00e9\u20AC`, []kv{{"a", "Aé€"}}},
	{"unicode escape in key", `\u0041=1`, []kv{{"A", "1"}}},
	{"escaped separators in key", `a\=b\:c\ d=e`, []kv{{"a=b:c d", "e"}}},
	{"escaped leading space in value", `k =\  v `, []kv{{"k", "  v "}}},
	{"continuation", "a=b\\\n    c", []kv{{"a", "bc"}}},
	{"continuation in key", "key\\\n  part=v", []kv{{"keypart", "v"}}},
	{"continuation crlf", "a=b\\\r\n  c\r\nd=e", []kv{{"a", "bc"}, {"d", "e"}}},
	{"continuation cr", "a=b\\\r  c\rd=e", []kv{{"a", "bc"}, {"d", "e"}}},
	{"continuation then empty line", "a=b\\\n\nc=d", []kv{{"a", "b"}, {"c", "d"}}},
	{"continuation then blank line", "a=b\\\n   \nc=d", []kv{{"a", "b"}, {"c", "d"}}},
	{"continuation line with hash is text", "a=b\\\n  #c", []kv{{"a", "b#c"}}},
	{"even backslashes do not continue", "x=\\\\\ny=1", []kv{{"x", `\`}, {"y", "1"}}},
	{"odd backslashes continue", "x=\\\\\\\ny", []kv{{"x", `\y`}}},
	{"backslash at eof dropped", "a=b\\", []kv{{"a", "b"}}},
	{"lone backslash at eof", "\\", []kv{{"", ""}}},
	{"backslash newline at eof", "a=1\n\\\n", []kv{{"a", "1"}, {"", ""}}},
	{"backslash crlf at eof", "\\\r\n", nil},
	{"backslash newline blanks at eof", "\\\n   ", nil},
	{"empty continuation then comment", "\\\n# c\na=1", []kv{{"a", "1"}}},
	{"crlf lines", "a=1\r\nb=2\r\n", []kv{{"a", "1"}, {"b", "2"}}},
	{"cr lines", "a=1\rb=2\r", []kv{{"a", "1"}, {"b", "2"}}},
	{"form feed blanks", "\f\fk\f=\fv", []kv{{"k", "v"}}},
	{"duplicate keys kept in order", "a=1\na=2", []kv{{"a", "1"}, {"a", "2"}}},
	{"placeholder not expanded", "a=${env:X}\nb=${a}", []kv{{"a", "${env:X}"}, {"b", "${a}"}}},
	{"jaas string", `k = org.Mod required username="u" password="p";`, []kv{{"k", `org.Mod required username="u" password="p";`}}},
	{"flow key with arrow", "us-east-1->ap-northeast-2.topics = orders, payments", []kv{{"us-east-1->ap-northeast-2.topics", "orders, payments"}}},
	{"latin1 byte", "a=caf\xe9", []kv{{"a", "café"}}},
	{"utf8 bytes read as latin1", "a=caf\xc3\xa9", []kv{{"a", "cafÃ©"}}},
}

func TestParseJavaQuirks(t *testing.T) {
	for _, tc := range javaCases {
		t.Run(tc.name, func(t *testing.T) {
			es, err := Parse(strings.NewReader(tc.in))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			var got []kv
			for _, e := range es {
				got = append(got, kv{e.Key, e.Value})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseLineNumbers(t *testing.T) {
	in := "# header\n\na=1\nb=x\\\n  y\r\nc=3\r\n\r\n  d=4\re=5"
	es, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	type ln struct {
		K    string
		Line int
		Cont bool
	}
	var got []ln
	for _, e := range es {
		got = append(got, ln{e.Key, e.Line, e.Continued})
	}
	want := []ln{{"a", 3, false}, {"b", 4, true}, {"c", 6, false}, {"d", 8, false}, {"e", 9, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestParseMalformedUnicode(t *testing.T) {
	for _, in := range []string{`a=\u00`, `a=\uzzzz`, "x=1\n" + `b\u12G4=v`, `k=secret\u00` + "\n"} {
		_, err := Parse(strings.NewReader(in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("Parse(%q) error = %v, want *SyntaxError", in, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("error %q leaks the value", err)
		}
	}
	_, err := Parse(strings.NewReader("x=1\n" + `b\u12G4=v`))
	var se *SyntaxError
	errors.As(err, &se)
	if se.Line != 2 || se.Key != "b" {
		t.Errorf("SyntaxError = %+v, want line 2 key \"b\"", se)
	}
}

func TestParseStringUTF8(t *testing.T) {
	es, err := ParseString("a=café")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := Last(es, "a"); got != "café" {
		t.Errorf("ParseString value = %q, want %q", got, "café")
	}
}

func TestLastAndToMap(t *testing.T) {
	es, _ := ParseString("a=1\nb=2\na=3")
	if v, ok := Last(es, "a"); !ok || v != "3" {
		t.Errorf("Last(a) = %q, %t; want 3, true", v, ok)
	}
	if _, ok := Last(es, "z"); ok {
		t.Error("Last(z) found a value")
	}
	if diff := cmp.Diff(map[string]string{"a": "3", "b": "2"}, ToMap(es)); diff != "" {
		t.Error(diff)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestParseReadError(t *testing.T) {
	if _, err := Parse(errReader{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Parse(errReader) = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, tc := range javaCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte("a=\\u00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := Parse(strings.NewReader(string(b)))
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			return
		}
		prev := 1
		for _, e := range es {
			if e.Line < prev {
				t.Fatalf("line numbers go backwards: %d after %d", e.Line, prev)
			}
			prev = e.Line
		}
	})
}

// TestParseEverySyntaxError: every malformed line is reported, in order;
// the other entries are returned.
func TestParseEverySyntaxError(t *testing.T) {
	es, err := ParseString("a=1\nb\\u12=2\nc=3\nd=\\uXYZW\ne=5")
	var lines []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var se *SyntaxError
		if !errors.As(e, &se) {
			t.Fatalf("%T %v is not a *SyntaxError", e, e)
		}
		lines = append(lines, se.Line)
	}
	if d := cmp.Diff([]int{2, 4}, lines); d != "" {
		t.Errorf("error lines (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"a": "1", "c": "3", "e": "5"}, ToMap(es)); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
}
