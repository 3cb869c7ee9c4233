package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestNuDRUnreachableIsNotInterrupted: failover and failback against a
// target (and source) that refuse connections ended with "result:
// interrupted (exit 3)", though nothing interrupted them: an operator in
// the middle of a failover read that the command had been stopped. They
// say "unreachable" now (exit 3 still), and "interrupted" only when
// their context ended (TestFailoverInterruptedWhileMembersStop and
// TestBrk1206FailoverDryRunInterruptedWhileWaiting).
func TestNuDRUnreachableIsNotInterrupted(t *testing.T) {
	props := filepath.Join(t.TempDir(), "mm2.properties")
	body := "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n" +
		"A->B.enabled = true\nA->B.topics = orders\nB->A.enabled = true\nB->A.topics = orders\n"
	if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		main func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) int
	}{
		{"failover", func(ctx context.Context, args []string, out, errOut *bytes.Buffer) int {
			return failoverMain(ctx, append(args, "-source-timeout", "500ms"), out, errOut)
		}},
		{"failback", func(ctx context.Context, args []string, out, errOut *bytes.Buffer) int {
			return failbackMain(ctx, args, out, errOut)
		}},
	} {
		var out, errOut bytes.Buffer
		code := c.main(context.Background(), []string{"-config", props, "-flow", "A->B", "-groups", "g", "-timeout", "2s", "-dry-run", "-json"}, &out, &errOut)
		var rep struct {
			Result   string   `json:"result"`
			ExitCode int      `json:"exit_code"`
			Problems []string `json:"problems"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%s: %v\n%s\n%s", c.name, err, out.String(), errOut.String())
		}
		if code != drUnreachable || rep.ExitCode != drUnreachable || rep.Result != "unreachable" || len(rep.Problems) == 0 {
			t.Errorf("%s with its clusters refusing connections: exit %d, result %q (exit_code %d), problems %q; want %d, unreachable\n%s",
				c.name, code, rep.Result, rep.ExitCode, rep.Problems, drUnreachable, errOut.String())
		}
	}
}

// TestNuTranslateUsageListsExitCodes: kmirror failover -h and failback -h
// list their exit codes; translate -h did not, though it exits 1 on a
// never-committed partition (the README's walkthrough): a script gating
// on it had to read the README.
func TestNuTranslateUsageListsExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := translateMain(context.Background(), []string{"-h"}, &out, &errOut); code != drOK {
		t.Fatalf("translate -h: exit %d", code)
	}
	for _, want := range []string{"Exit codes: 0", "1 a partition never committed", "2 bad flags or configuration", "3 the target unreachable or interrupted"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("translate -h: %q does not say %q", errOut.String(), want)
		}
	}
}

// TestNuFailoverTextWithoutGroups: a failover a cluster error stopped
// before its plan printed an empty table (its header alone), as translate
// did before; and a planned commit it did not make read "not committed:
// run unreachable".
func TestNuFailoverTextWithoutGroups(t *testing.T) {
	r := &failoverReport{Flow: "A->B", Mode: modePlanned, Result: "unreachable", ExitCode: drUnreachable,
		Problems: []string{"reading the status topic of A->B on B: unable to dial"}}
	var out bytes.Buffer
	r.writeText(&out)
	if strings.Contains(out.String(), "GROUP") {
		t.Errorf("report without groups prints a table:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "result: unreachable (exit 3)") {
		t.Errorf("report lacks its result:\n%s", out.String())
	}
	if got, want := actionText(actionCommit, false, "unreachable"), "would commit (not committed: a cluster unreachable)"; got != want {
		t.Errorf("actionText(commit, unreachable) = %q, want %q", got, want)
	}
}

// TestNuFFailoverSourceRejectingCredentialsIsNotDown: a source that
// answered but refused the file's SASL credentials (a DR host with an old
// password) made the failover unplanned, as if the source were down: it
// skipped the check of the groups' members on the source and the
// catch-up, and would have stopped the flow and committed. It is refused
// now (exit 1), with the keys to fix, and nothing is written. The source
// answers as a Kafka broker does to a wrong password (kfake closes the
// connection instead).
func TestNuFFailoverSourceRejectingCredentialsIsNotDown(t *testing.T) {
	p := testcluster.NewFakePair(t, "A", "B", kfake.EnableSASL(), kfake.Superuser("PLAIN", "u", "right"))
	refuseSASL(p.Source.Fake)
	props := saslProps(t, p, "stale", "right")
	var out, errOut bytes.Buffer
	code := failoverMain(context.Background(), []string{"-config", props, "-flow", "A->B", "-groups", "g", "-source-timeout", "2s", "-json"}, &out, &errOut)
	var rep failoverReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
	}
	const srcErr = "cluster A: SASL_AUTHENTICATION_FAILED: SASL Authentication failed.: Authentication failed: Invalid username or password"
	want := []string{"the source A answered but refused the client (" + srcErr + "): it is not down, so the failover is not made unplanned, " +
		"which would skip a planned one's checks (the groups' members on the source, the catch-up); fix A.sasl.jaas.config and A.sasl.mechanism " +
		"(and A.security.protocol) and run failover again"}
	if code != drRefused || rep.ExitCode != drRefused || rep.Result != "refused" || rep.Mode != modePlanned || rep.TargetState != "" ||
		rep.SourceError != srcErr || !slices.Equal(rep.Problems, want) {
		t.Errorf("exit %d, result %q (exit_code %d), mode %q, target_state %q, source_error %q, problems %q; want %d, refused, planned, none, %q, %q\n%s",
			code, rep.Result, rep.ExitCode, rep.Mode, rep.TargetState, rep.SourceError, rep.Problems, drRefused, srcErr, want, errOut.String())
	}
	status, err := statustopic.ReadAll(t.Context(), []kgo.Opt{kgo.SeedBrokers(p.Target.Brokers...), kgo.SASL(plain.Auth{User: "u", Pass: "right"}.AsMechanism())}, "A")
	if err != nil || len(status) != 0 {
		t.Errorf("status topic of A->B on B: %d records, %v; want none: the refused failover wrote nothing", len(status), err)
	}
}
