package mm2keys_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/clientconf"
	"github.com/kmirror/kmirror/internal/mm2keys"
)

// docs returns README.md, ACLS.md and docs/*.md, concatenated.
func docs(t *testing.T) string {
	t.Helper()
	files := []string{"../../README.md", "../../ACLS.md"}
	more, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sb.Write(b)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// unsupportedKeys returns the keys of ACLS.md's table of MM2 keys kmirror
// does not support, without their `a.`, `b.` or `a->b.` prefix.
func unsupportedKeys(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../../ACLS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := strings.Index(doc, "<!-- unsupported-keys:begin -->"), strings.Index(doc, "<!-- unsupported-keys:end -->")
	if begin < 0 || end < begin {
		t.Fatal("ACLS.md lacks the unsupported-keys markers")
	}
	rowRE := regexp.MustCompile("^\\| `([^`]+)` \\|")
	out := map[string]bool{}
	for _, line := range strings.Split(doc[begin:end], "\n") {
		if m := rowRE.FindStringSubmatch(line); m != nil {
			k := m[1]
			for _, p := range []string{"a->b.", "a.", "b."} {
				k = strings.TrimPrefix(k, p)
			}
			out[k] = true
		}
	}
	return out
}

// TestRowsDocumented fails when a row's key is written nowhere in README.md,
// ACLS.md or docs/: a key kmirror reads, ignores or refuses is documented.
func TestRowsDocumented(t *testing.T) {
	d := docs(t)
	for _, r := range mm2keys.Rows {
		if !strings.Contains(d, r.Key) {
			t.Errorf("row %s (%s scope) is not documented in README.md, ACLS.md or docs/", r.Key, r.Scope)
		}
	}
}

// TestUnsupportedRowsInACLS fails when an unsupported row is missing from
// ACLS.md's table of MM2 keys kmirror does not support.
func TestUnsupportedRowsInACLS(t *testing.T) {
	u := unsupportedKeys(t)
	for _, r := range mm2keys.Rows {
		if r.Effect == mm2keys.Unsupported && !u[r.Key] {
			t.Errorf("unsupported row %s is not in ACLS.md's unsupported-keys table", r.Key)
		}
	}
}

// TestKafkaKeysCovered fails when a key of Apache Kafka's MM2
// configuration classes (testdata/kafka-mm2-keys.txt) is neither a row nor
// in ACLS.md's list of unsupported keys (client keys: a connection key of
// internal/clientconf).
func TestKafkaKeysCovered(t *testing.T) {
	f, err := os.Open("testdata/kafka-mm2-keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]bool{}
	for _, r := range mm2keys.Rows {
		rows[r.Key] = true
	}
	u := unsupportedKeys(t)
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		class, key, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("malformed line %q", line)
		}
		n++
		if k, ok := strings.CutPrefix(key, "client:"); ok {
			if !clientconf.IsConnectionKey(k) {
				t.Errorf("%s %s: not a connection key of internal/clientconf", class, k)
			}
			continue
		}
		if !rows[key] && !u[key] {
			t.Errorf("%s %s: neither a row of the key registry nor in ACLS.md's unsupported keys", class, key)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 70 {
		t.Errorf("testdata lists %d keys, want MM2's whole list", n)
	}
}

// TestRowsWellFormed checks each row on its own: one row per key and
// scope, a mapped key in one scope only, defaults that read as the row's
// type, intervals whose switch is a boolean row, enums whose default is
// one of their values.
func TestRowsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	mapped := map[string]mm2keys.Scope{}
	for _, r := range mm2keys.Rows {
		id := r.Scope.String() + " " + r.Key
		if seen[id] {
			t.Errorf("two rows for %s", id)
		}
		seen[id] = true
		if r.Effect == mm2keys.Mapped {
			if s, ok := mapped[r.Key]; ok {
				t.Errorf("%s is mapped in scopes %s and %s", r.Key, s, r.Scope)
			}
			mapped[r.Key] = r.Scope
		}
		if r.Effect != mm2keys.Mapped && r.Note == "" {
			t.Errorf("%s: a row without effect or unsupported needs a Note", id)
		}
		if (r.Scope == mm2keys.Client) != (r.Prefix != "") {
			t.Errorf("%s: Prefix %q is for Client rows only, and required there", id, r.Prefix)
		}
		if r.Default == "" || r.Effect != mm2keys.Mapped {
			continue
		}
		var err error
		switch r.Type {
		case mm2keys.Bool:
			_, err = strconv.ParseBool(r.Default)
		case mm2keys.Seconds, mm2keys.Millis, mm2keys.Bytes, mm2keys.Count, mm2keys.RF:
			_, err = strconv.ParseInt(r.Default, 10, 64)
		case mm2keys.Enum:
			if !slices.Contains(r.Values, r.Default) {
				t.Errorf("%s: default %q is not one of %v", id, r.Default, r.Values)
			}
			if r.Field != "" && !slices.Contains(r.Values, r.True) {
				t.Errorf("%s: True %q is not one of %v", id, r.True, r.Values)
			}
		}
		if err != nil {
			t.Errorf("%s: default %q is not a %s", id, r.Default, r.Type)
		}
		if r.Type == mm2keys.Seconds {
			sw, ok := mm2keys.Lookup(mm2keys.Flow, r.Switch)
			if !ok || sw.Type != mm2keys.Bool || sw.Field == "" {
				t.Errorf("%s: Switch %q is not a boolean flow row with a Field", id, r.Switch)
			}
		}
	}
}

// TestNuRESTKeysPointAtListen: Connect's REST keys (listeners,
// rest.advertised.*, dedicated.mode.enable.internal.rest) said "kmirror
// has no REST server", though the runner serves Connect's REST API on
// -listen: their note names the flag.
func TestNuRESTKeysPointAtListen(t *testing.T) {
	n := 0
	for _, r := range mm2keys.Rows {
		if r.Key == "listeners" || r.Key == "admin.listeners" || strings.HasPrefix(r.Key, "rest.advertised.") || r.Key == "dedicated.mode.enable.internal.rest" {
			n++
			if strings.Contains(r.Note, "no REST server") || !strings.Contains(r.Note, "-listen") {
				t.Errorf("%s (%v): note %q; want it to name the runner's -listen, where its REST API is", r.Key, r.Scope, r.Note)
			}
		}
	}
	if n == 0 {
		t.Error("no REST key among the rows")
	}
}
