package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDRFlowOfAnUnlistedClusterNamesIt (breaker): the file enables A->B
// but B is not in clusters (a cluster missing from the list, or a typo in
// the flow's alias). The DR commands said "the configuration has no
// enabled flow (<source>-><target>.enabled = true)": the line the file
// already has. They exit 2 naming the flow's line and the alias to add to
// clusters.
func TestDRFlowOfAnUnlistedClusterNamesIt(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := write("missing.properties", "clusters = A\nA.bootstrap.servers = 127.0.0.1:1\nA->B.enabled = true\n")
	typo := write("typo.properties", "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\nA->b.enabled = true\n")
	for _, c := range []struct {
		file string
		flow string
		want []string
	}{
		{missing, "", []string{"A->B.enabled", "B is not in clusters (A)"}},
		{missing, "A->B", []string{"A->B.enabled", "B is not in clusters (A)"}},
		{typo, "", []string{"A->b.enabled", "b is not in clusters (A, B)"}},
		{typo, "A->B", []string{"A->b.enabled", "b is not in clusters (A, B)"}},
	} {
		for name, main := range drCommands {
			args := []string{"-config", c.file, "-groups", "g", "-timeout", "1s"}
			if c.flow != "" {
				args = append(args, "-flow", c.flow)
			}
			code, out, errOut, _ := runDR(t, main, args...)
			for _, w := range c.want {
				if code != drUsage || !strings.Contains(errOut, w) {
					t.Errorf("%s %s -flow %q: exit %d, stderr %q; want %d naming %q\n%s", name, filepath.Base(c.file), c.flow, code, errOut, drUsage, w, out)
				}
			}
		}
	}
}

// TestDRUnknownGroupNamesWhatExists (breaker): -groups with a typo ("G"
// for the group g) matches nothing. failover said "no group matching
// -groups has a checkpoint on the target" without the value, and neither
// it nor translate said which groups the flow has checkpointed. Both exit
// 1 naming the value and the groups to write instead; nothing committed.
func TestDRUnknownGroupNamesWhatExists(t *testing.T) {
	w := newRerunWorld(t)
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "G", "-source-timeout", "500ms", "-wait", "1s", "-json")
	rep := decodeFailover(t, out)
	if want := `no group matching -groups "G" has a checkpoint in A.checkpoints.internal on B (nothing to fail over); the groups checkpointed there: g`; code != drRefused ||
		len(rep.Problems) != 1 || rep.Problems[0] != want || w.committedB() != -1 || rep.TargetState != "" {
		t.Errorf("failover -groups G: exit %d, problems %q, g on B at %d, target state %q; want %d, [%q], nothing written\n%s", code, rep.Problems, w.committedB(), rep.TargetState, drRefused, want, errOut)
	}
	code, out, errOut, _ = runDR(t, translateMain, "-config", w.props, "-groups", "G")
	if want := `kmirror translate: no group matching "G" has a checkpoint in A.checkpoints.internal on B (groups.exclude or groups of the flow, no commit on a replicated topic, or no emission yet); the groups checkpointed there: g`; code != drRefused || !strings.Contains(errOut, want) {
		t.Errorf("translate -groups G: exit %d, stderr %q; want %d and %q\n%s", code, errOut, drRefused, want, out)
	}
	// No empty table on stdout (a new user's finding): the summary only.
	if strings.Contains(out, "GROUP") || !strings.HasPrefix(out, "A->B: ") {
		t.Errorf("translate -groups G: stdout %q; want the summary line alone, no table header", out)
	}
}

// TestDRGroupsRegexStaysAFullMatch (breaker): -groups is a full match, the
// runbook's safety against moving groups the operator did not name. The
// regex was wrapped as "^(?:" + value + ")$", so -groups 'a)|(b' compiled
// to ^(?:a)|(b)$: every group starting with "a" or ending with "b" (e.g.
// the active "analytics" and "web"). A value that is no regex by itself is
// refused (exit 2, naming it).
func TestDRGroupsRegexStaysAFullMatch(t *testing.T) {
	props := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(props, []byte("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\nA->B.enabled = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, main := range drCommands {
		code, out, errOut, _ := runDR(t, main, "-config", props, "-groups", "a)|(b", "-timeout", "1s")
		if code != drUsage || !strings.Contains(errOut, `-groups "a)|(b"`) {
			t.Errorf("%s -groups 'a)|(b': exit %d, stderr %q; want %d naming the value\n%s", name, code, errOut, drUsage, out)
		}
	}
	var c drCommon
	c.config, c.groups = props, "orders-.*|payments"
	d, err := c.load()
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range map[string]bool{"orders-1": true, "payments": true, "payments-x": false, "x-orders-1": false} {
		if d.groups.MatchString(g) != want {
			t.Errorf("-groups %q matches %q: %v, want %v", c.groups, g, !want, want)
		}
	}
}

// TestDRUnlistedPairsInFileOrder: two enabled pairs naming clusters not in
// clusters are both named, in the file's order (the message was
// joined from a map, so its order changed from one run to the next).
func TestDRUnlistedPairsInFileOrder(t *testing.T) {
	props := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(props, []byte("clusters = A\nA.bootstrap.servers = 127.0.0.1:1\nA->C.enabled = true\nA->B.enabled = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "line 3: A->C.enabled has no effect: C is not in clusters (A): add it there (with its C.bootstrap.servers), or correct the alias; " +
		"line 4: A->B.enabled has no effect: B is not in clusters (A): add it there (with its B.bootstrap.servers), or correct the alias"
	for range 16 { // a map's order differs between runs: 16 runs all in order
		code, out, errOut, _ := runDR(t, translateMain, "-config", props, "-groups", "g", "-timeout", "1s")
		if code != drUsage || !strings.Contains(errOut, want) {
			t.Fatalf("translate: exit %d, stderr %q; want %d and %q\n%s", code, errOut, drUsage, want, out)
		}
	}
}

// TestFailoverStopWaitAtLeastASecond (a new user's finding): -stop-wait 0s
// checked the members once, milliseconds after writing STOPPED, before any
// live member could apply it, so it could only refuse. Below 1s it is a
// usage error naming the value (exit 2, nothing written).
func TestFailoverStopWaitAtLeastASecond(t *testing.T) {
	props := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(props, []byte("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\nA->B.enabled = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"0s", "500ms", "-1s"} {
		code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g", "-stop-wait", v, "-timeout", "1s")
		if code != drUsage || !strings.Contains(errOut, "use at least 1s") || !strings.Contains(errOut, "-stop-wait "+v+":") {
			t.Errorf("failover -stop-wait %s: exit %d, stderr %q; want %d naming the value and 'use at least 1s'\n%s", v, code, errOut, drUsage, out)
		}
	}
}
