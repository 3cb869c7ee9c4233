package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBrkSDemoTopicsPartitionsDefault: -demo-topics orders (no :N) was
// taken as 1 partition while the flag's help said `topic:partitions`, as
// if :N were required, and README said nothing of it. The help, the
// file comment's synopsis and README say that :N defaults to 1, which
// the parse does, and a bad N says what to write.
func TestBrkSDemoTopicsPartitionsDefault(t *testing.T) {
	var stderr bytes.Buffer
	exitCode(run(context.Background(), []string{"-h"}, &bytes.Buffer{}, &stderr), &stderr)
	help := strings.Join(strings.Fields(stderr.String()), " ")
	if want := "-demo-topics topic[:partitions],... with -embedded: topic[:partitions],... to create and feed on every source cluster " +
		"(partitions 1 to 1000, 1 when :partitions is left out: orders is orders:1)"; !strings.Contains(help, want) {
		t.Errorf("kmirror -h lacks %q:\n%s", want, stderr.String())
	}
	got, err := parseDemoTopics("orders,payments:2")
	if d := cmp.Diff([]demoTopic{{"orders", 1}, {"payments", 2}}, got, cmp.AllowUnexported(demoTopic{})); err != nil || d != "" {
		t.Errorf("parseDemoTopics(orders,payments:2): %v (-want +got):\n%s", err, d)
	}
	if _, err := parseDemoTopics("orders:"); err == nil || err.Error() != `-demo-topics "orders:": partitions must be a number from 1 to 1000 (write orders:3, or orders alone for 1)` {
		t.Errorf("parseDemoTopics(orders:) error %v, want it to say what to write", err)
	}
	for _, f := range []string{"main.go", "../../README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"main.go": "(1 to 1000; 1 when :N is left out)", "../../README.md": "(topic[:partitions],...; orders alone is 1 partition)"}[f]; !strings.Contains(string(b), want) {
			t.Errorf("%s does not say %q", f, want)
		}
	}
}
