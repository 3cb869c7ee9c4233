package mirror

import (
	"strings"
	"testing"
)

// TestSeparatorWhitespaceWarns: MM2's DefaultReplicationPolicy reads
// replication.policy.separator from the connector's original settings,
// untrimmed, so "_ " (a trailing space) is a separator with a space: MM2
// names remote topics "A_ orders", which Kafka refuses. kmirror trims it
// to "_" and must say so instead of silently running another separator.
func TestSeparatorWhitespaceWarns(t *testing.T) {
	t.Parallel()
	const head = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
	for _, line := range []string{"replication.policy.separator = _ \n", "A->B.replication.policy.separator = _\t\n"} {
		p, err := ParseProperties(strings.NewReader(head+line), WithLookupEnv(lookupTestEnv))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		found := false
		for _, w := range p.Warnings() {
			if strings.HasSuffix(w.Key, "replication.policy.separator") && strings.Contains(w.Message, "whitespace") {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: no warning that MM2 keeps the whitespace of the separator; warnings: %v", line, p.Warnings())
		}
	}
	// A separator without whitespace draws no such warning.
	p, err := ParseProperties(strings.NewReader(head+"replication.policy.separator = _\n"), WithLookupEnv(lookupTestEnv))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range p.Warnings() {
		if strings.Contains(w.Message, "whitespace") {
			t.Errorf("unexpected warning %v", w)
		}
	}
}
