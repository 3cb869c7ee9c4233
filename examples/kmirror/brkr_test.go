package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestBrkRListenWithoutPortSaysWhatToWrite: "-listen bogus" (or a host
// name alone) exited 2 with only "listen tcp: address bogus: missing port
// in address"; the error now says what to write.
func TestBrkRListenWithoutPortSaysWhatToWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mm2.properties")
	props := "clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:2\na->b.enabled = true\n"
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"-config", path, "-listen", "localhost"}, io.Discard, io.Discard)
	var msg bytes.Buffer
	code := exitCode(err, &msg)
	const want = "kmirror: -listen localhost: listen tcp: address localhost: missing port in address (write host:port, e.g. 127.0.0.1:9090, or :9090 for every interface)\n"
	if code != 2 || msg.String() != want {
		t.Errorf("-listen localhost: exit %d, %q; want 2, %q", code, msg.String(), want)
	}
}
