package mirror

import (
	"errors"
	"strings"
	"testing"
)

// TestNuEveryBadClientKeyReported: two bad client keys of one role
// (B.producer.compression.type and B.producer.acks) were reported one at a
// time, the first only, though `kmirror -check` "reports every error of
// the file at once, each with its line number": an operator fixed one,
// ran -check again, and met the next.
func TestNuEveryBadClientKeyReported(t *testing.T) {
	_, err := ParseProperties(strings.NewReader("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\nA->B.enabled = true\n" +
		"B.producer.compression.type = brotli\nB.producer.acks = 2\nB.producer.linger.ms = abc\n"))
	var ces *ConfigErrors
	if !errors.As(err, &ces) {
		t.Fatalf("ParseProperties: %v; want a *ConfigErrors", err)
	}
	for _, want := range []string{
		`B.producer.compression.type="brotli": line 5:`,
		`B.producer.acks="2": line 6:`,
		`B.producer.linger.ms="abc": line 7:`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors %q: want %q among them", err, want)
		}
	}
	if len(ces.Errs) != 3 {
		t.Errorf("%d errors, want 3: %v", len(ces.Errs), err)
	}
}
