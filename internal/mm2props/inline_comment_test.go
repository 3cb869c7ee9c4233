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

// TestInlineCommentHidesMisspeltSecret: the inline-comment warning quoted
// the whole value of any key IsSecret does not name, so a misspelt secret
// key (sasl.jas.config, ssl.truststore.pasword) whose password held " #"
// showed the password in -check's output. Such values are now not quoted:
// neither a key close to a secret client key nor a value that reads like
// a JAAS configuration or names a password.
func TestInlineCommentHidesMisspeltSecret(t *testing.T) {
	c := resolve(t, "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"+
		"A->B.enabled = true\n"+
		"B.sasl.jas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"S3CRETY #1\";\n"+
		"B.ssl.truststore.pasword = S3CRETZ #2\n"+
		"B.consumer.ssl.key.pasword = S3CRETV !3\n"+
		"unknown.key = pass: password=S3CRETW #4\n"+
		"A->B.topics = orders.* # only orders\n", Options{})
	comment := 0
	for _, w := range c.Warnings {
		if strings.Contains(w.Message, "S3CRET") {
			t.Errorf("a warning shows a secret value: %v", w)
		}
		if strings.Contains(w.Message, "starts a comment") {
			comment++
		}
	}
	if comment != 1 {
		t.Errorf("want exactly the A->B.topics inline-comment warning, got %d; warnings: %v", comment, c.Warnings)
	}
}
