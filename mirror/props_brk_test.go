package mirror

import (
	"errors"
	"strings"
	"testing"
)

// TestJAASFragmentKeyNotShown: a sasl.jaas.config cut by a line break
// without a trailing backslash leaves the rest of the value on the next
// line, which java.util.Properties reads as a key of its own: the password
// became the key `"alice-s3cret";` and the "unknown setting" warning showed
// it (also with non-ASCII bytes, and in a malformed \uXXXX error).
func TestJAASFragmentKeyNotShown(t *testing.T) {
	t.Parallel()
	const head = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n" +
		"A.security.protocol = SASL_SSL\nA.sasl.mechanism = PLAIN\n"
	for _, tc := range []struct {
		name, tail, wantWarning string
		wantLine                int
	}{
		{"value on the next line", "A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\n" +
			"    \"alice-s3cret\";\n", "probably the rest of the value of A.sasl.jaas.config (line 7), cut by a line break; end each line of a value but its last with a backslash", 8},
		{"non-ASCII", "A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\n" +
			"\"alice-s3cret\u00e9\";\n", "probably the rest of the value of A.sasl.jaas.config (line 7)", 8},
		{"bare word after a password", "A.ssl.key.password =\n   alice-s3cret\n",
			"probably the rest of the value of A.ssl.key.password (line 7)", 8},
		{"quote in a key", "A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"x\";\n" +
			"topics = .*\npass\"alice-s3cret\n", "not a setting (a key cannot contain a quote or ';'", 9},
	} {
		p, err := ParseProperties(strings.NewReader(head+tc.tail), WithLookupEnv(lookupTestEnv))
		var warnings []Warning
		var ces *ConfigErrors
		switch {
		case err == nil:
			warnings = p.Warnings()
			if strings.Contains(p.Effective(), "s3cret") {
				t.Errorf("%s: the effective configuration shows the password:\n%s", tc.name, p.Effective())
			}
		case errors.As(err, &ces):
			warnings = ces.Warnings
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: error shows the password: %v", tc.name, err)
			}
		default:
			t.Fatalf("%s: error %T %v", tc.name, err, err)
		}
		found := false
		for _, w := range warnings {
			if strings.Contains(w.String(), "s3cret") {
				t.Errorf("%s: warning shows the password: %s", tc.name, w)
			}
			if w.Line == tc.wantLine && w.Key == "[hidden]" && strings.Contains(w.Message, tc.wantWarning) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no warning for line %d with key [hidden] containing %q in %v", tc.name, tc.wantLine, tc.wantWarning, warnings)
		}
	}
	// A malformed \uXXXX escape in such a key: the error names the line only.
	_, err := ParseProperties(strings.NewReader(head+"\"alice-s3cret\\u12\";\n"), WithLookupEnv(lookupTestEnv))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "line 7" || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("malformed escape in a fragment: error %v, want key \"line 7\" without the text", err)
	}
}

// TestByteOrderMark: a file saved as "UTF-8 with BOM" (Windows editors)
// starts with EF BB BF, which MM2 reads as ISO-8859-1 characters at the
// start of the first key. The error was "clusters: required: list the
// cluster aliases" for a file whose line 1 is `clusters = A, B`.
func TestByteOrderMark(t *testing.T) {
	t.Parallel()
	const rest = "A.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
	_, err := ParseProperties(strings.NewReader("\xef\xbb\xbfclusters = A, B\r\n"+rest), WithLookupEnv(lookupTestEnv))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "clusters" ||
		!strings.Contains(ce.Reason, "line 1: required, but this line sets \u00ef\u00bb\u00bfclusters, not clusters: the file starts with a UTF-8 byte order mark (bytes EF BB BF)") ||
		!strings.Contains(ce.Reason, "save the file without the mark") {
		t.Errorf("BOM before clusters: error %v, want one naming the byte order mark", err)
	}

	// Before a comment: valid, with one warning about the mark.
	p, err := ParseProperties(strings.NewReader("\xef\xbb\xbf# mm2.properties\nclusters = A, B\n"+rest), WithLookupEnv(lookupTestEnv))
	if err != nil {
		t.Fatal(err)
	}
	if ws := p.Warnings(); len(ws) != 1 || ws[0].Line != 1 || !strings.Contains(ws[0].Message, "byte order mark (bytes EF BB BF)") {
		t.Errorf("BOM before a comment: warnings %v, want one about the byte order mark", ws)
	}

	// Before another key: the error about it names the mark's line.
	_, err = ParseProperties(strings.NewReader("\xef\xbb\xbfA.bootstrap.servers = a:9092\nclusters = A, B\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"), WithLookupEnv(lookupTestEnv))
	if !errors.As(err, &ce) || ce.Key != "A.bootstrap.servers" ||
		!strings.Contains(ce.Reason, "line 1 sets \u00ef\u00bb\u00bfA.bootstrap.servers: did you mean A.bootstrap.servers?") {
		t.Errorf("BOM before A.bootstrap.servers: error %v", err)
	}
	var ces *ConfigErrors
	if !errors.As(err, &ces) || len(ces.Warnings) != 1 || !strings.Contains(ces.Warnings[0].Message, "byte order mark") {
		t.Errorf("BOM before A.bootstrap.servers: warnings %v, want only the byte order mark's", ces)
	}
}

// TestShortPolicyClassWarns: kmirror reads replication.policy.class =
// IdentityReplicationPolicy as the identity policy, but MM2 loads the
// class by name and fails on it; the difference was silent, so a file
// checked with kmirror failed when run with MM2.
func TestShortPolicyClassWarns(t *testing.T) {
	t.Parallel()
	p, err := ParseProperties(strings.NewReader("clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"+
		"A->B.enabled = true\nB->A.enabled = true\nreplication.policy.class = IdentityReplicationPolicy\n"), WithLookupEnv(lookupTestEnv))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Flows()[0].Policy.FormatRemoteTopic("A", "orders"); got != "orders" {
		t.Errorf("remote topic %q, want orders (identity policy)", got)
	}
	want := []string{`line 6: replication.policy.class: kmirror accepts the short class name, MM2 does not ("Class IdentityReplicationPolicy cannot be found": its connectors fail): write org.apache.kafka.connect.mirror.IdentityReplicationPolicy`}
	var got []string
	for _, w := range p.Warnings() {
		got = append(got, w.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant (once, for both flows)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
