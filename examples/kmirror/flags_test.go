package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestFlagMistakesSaidOnceWithAHint (a new user's finding): a misspelt
// flag printed "flag provided but not defined: -embeded" twice (the flag
// package's line, then exitCode's) with no suggestion; "-listen 9093"
// said only "missing port in address". Both now say what to write.
func TestFlagMistakesSaidOnceWithAHint(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-check", "-config", "x.properties", "-embeded"}, "kmirror: flag provided but not defined: -embeded (did you mean -embedded?)"},
		{[]string{"-config", writeProps(t, "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n"), "-embedded", "-listen", "9093"},
			"(a port alone is written :9093, every interface, or 127.0.0.1:9093)"},
	} {
		var stderr bytes.Buffer
		code := exitCode(run(context.Background(), tc.args, &bytes.Buffer{}, &stderr), &stderr)
		out := stderr.String()
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.args, code, out, tc.want)
		}
		if n := strings.Count(out, "flag provided but not defined"); n > 1 {
			t.Errorf("%q: the error printed %d times:\n%s", tc.args, n, out)
		}
	}
}

// TestUsagePrintedOnce (a new user's finding): after a bad flag, and for
// -h, the usage's header was printed twice (the flag package's copy, while
// parsing, went to stderr directly), the error's one useful line below
// both; the flag list once.
func TestUsagePrintedOnce(t *testing.T) {
	for _, args := range [][]string{{"-embeded", "-config", "x"}, {"-h"}} {
		var stderr bytes.Buffer
		exitCode(run(context.Background(), args, &bytes.Buffer{}, &stderr), &stderr)
		out := stderr.String()
		if n, m := strings.Count(out, "usage: kmirror -config FILE"), strings.Count(out, "-embedded\n"); n != 1 || m != 1 {
			t.Errorf("%q: usage header printed %d times, flag list %d times, want 1 and 1:\n%s", args, n, m, out)
		}
	}
}
