package mm2props

import (
	"strings"
	"testing"
)

// TestInlineCommentWarns: java.util.Properties starts a comment only at
// the beginning of a line, so "A->B.topics = orders.* # only orders" is
// the regex `orders.* # only orders`, which selects no topic, in MM2 as in
// kmirror. Nothing said so: a value holding " #" (or " !") now draws a
// warning naming what the value really is, without showing secret values.
func TestInlineCommentWarns(t *testing.T) {
	c := resolve(t, "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"+
		"A->B.enabled = true\nA->B.topics = orders.* # only orders\nA->B.groups = g1\t! not g2\n"+
		"A.sasl.jaas.config = x required password=\"pw #s3cret\";\n"+
		"A->B.topics.exclude = a#b\n", Options{})
	got := map[string]string{}
	for _, w := range c.Warnings {
		if strings.Contains(w.Message, "comment") {
			got[w.Key] = w.Message
		}
	}
	for _, k := range []string{"A->B.topics", "A->B.groups"} {
		if got[k] == "" {
			t.Errorf("%s: no warning about the text after # or ! being part of the value; warnings: %v", k, c.Warnings)
		}
	}
	if !strings.Contains(got["A->B.topics"], `"orders.* # only orders"`) {
		t.Errorf("A->B.topics: the warning should show the value as read: %q", got["A->B.topics"])
	}
	if _, ok := got["A->B.topics.exclude"]; ok {
		t.Errorf("a # without whitespace before it (a#b) is not a comment attempt: %q", got["A->B.topics.exclude"])
	}
	for _, w := range c.Warnings {
		if strings.Contains(w.Message, "s3cret") {
			t.Errorf("a warning shows a secret value: %v", w)
		}
	}
}
