package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestBrkSDRCommandsSayTargetUnreachable: with the target's host name not
// resolving (a label of 64 characters: the resolver refuses it without
// asking a server), translate said "target B unreachable" only for a
// refused connection; failover and failback said the status topic read's
// dial error bare ("reading the status topic of A->B on B: reading
// mm2-kmirror-status.A.internal: unable to dial: ...: no such host"). The
// three word it alike now, with the key to check, and exit 3.
func TestBrkSDRCommandsSayTargetUnreachable(t *testing.T) {
	host := strings.Repeat("b", 64) + ".example"
	props := writeProps(t, "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = "+host+":9092\n"+
		"A->B.enabled = true\nA->B.topics = orders\nB->A.enabled = true\nB->A.topics = orders\n")
	want := "target B unreachable: cluster B: unable to dial: dial tcp: lookup " + host +
		": no such host (the host name does not resolve: check B.bootstrap.servers, and the brokers' advertised.listeners)"
	for _, c := range []struct {
		name string
		main func(context.Context, []string, io.Writer, io.Writer) int
		args []string
	}{
		{"translate", translateMain, nil},
		{"failover", failoverMain, []string{"-source-timeout", "500ms", "-dry-run"}},
		{"failback", failbackMain, []string{"-dry-run"}},
	} {
		code, out, errOut, _ := runDR(t, c.main, append([]string{"-config", props, "-flow", "A->B", "-groups", "g", "-timeout", "5s"}, c.args...)...)
		if code != drUnreachable || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr\n%s\nwant exit %d and %q\n%s", c.name, code, errOut, drUnreachable, want, out)
		}
	}
}
