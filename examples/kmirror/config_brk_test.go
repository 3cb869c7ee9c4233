package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkError runs -check on the properties text and returns its error.
func checkError(t *testing.T, props string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"-check", "-config", path}, io.Discard, io.Discard)
	if err == nil {
		t.Fatalf("-check accepted:\n%s", props)
	}
	return err.Error()
}

// TestBrk1207ClustersWhiteSpaceKeepsOtherAliases: "clusters = x, a b"
// (one alias holding a space) was told to write "clusters = a, b", which
// drops the alias x listed before it; the suggested line is the whole
// list, every alias split at its white space.
func TestBrk1207ClustersWhiteSpaceKeepsOtherAliases(t *testing.T) {
	msg := checkError(t, "clusters = x, a b\nx.bootstrap.servers = h:1\na.bootstrap.servers = h:2\nb.bootstrap.servers = h:3\na->b.enabled = true\n")
	if !strings.Contains(msg, `alias "a b" contains white space`) || !strings.Contains(msg, "clusters = x, a, b") {
		t.Errorf("error %q; want it to name the alias \"a b\" and suggest clusters = x, a, b", msg)
	}
}

// TestBrk1207ClustersNoBreakSpace: a UTF-8 no-break space in clusters
// (bytes C2 A0, as pasted from a web page), read as ISO-8859-1 as MM2
// reads the file, is "Â" and U+00A0. Between two aliases it was told
// "alias "Â\u00a0b" contains white space: ... clusters = Â, b", a line
// that keeps the stray Â; after the last alias it made the alias "bÂ" and
// the error asked for bÂ.bootstrap.servers. Both now name the no-break
// space and suggest clusters = a, b.
func TestBrk1207ClustersNoBreakSpace(t *testing.T) {
	for _, clusters := range []string{"a,\xc2\xa0b", "a, b\xc2\xa0", `a,\u00a0b`} {
		msg := checkError(t, "clusters = "+clusters+"\na.bootstrap.servers = h:1\nb.bootstrap.servers = h:2\na->b.enabled = true\n")
		if !strings.Contains(msg, "no-break space") || !strings.Contains(msg, "clusters = a, b") || strings.Contains(msg, "clusters = \u00c2") || strings.Contains(msg, "b\u00c2.") {
			t.Errorf("clusters = %q: error %q; want it to name the no-break space and suggest clusters = a, b", clusters, msg)
		}
	}
}
