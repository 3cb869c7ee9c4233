package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

// TestKmirrorEnvFlag: -kmirror-env is repeatable, keeps commas inside a
// value, and names a bad entry.
func TestKmirrorEnvFlag(t *testing.T) {
	c, err := parseFlags([]string{"-mirrormaker", "m", "-kmirror-env", "GOMEMLIMIT=180MiB",
		"-kmirror-env", "GODEBUG=gctrace=1,madvdontneed=1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"GOMEMLIMIT=180MiB", "GODEBUG=gctrace=1,madvdontneed=1"}
	if !slices.Equal([]string(c.kmirrorEnv), want) {
		t.Errorf("kmirrorEnv = %q, want %q", c.kmirrorEnv, want)
	}
	if rep := report(c, limits{}, nil); !strings.Contains(rep, "- environment added to kmirror and kmirror-shallow only: `GOMEMLIMIT=180MiB GODEBUG=gctrace=1,madvdontneed=1`") {
		t.Errorf("report does not list the entries:\n%s", rep)
	}
	if _, err := parseFlags([]string{"-mirrormaker", "m", "-kmirror-env", "=1"}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), `environment entry "=1": want KEY=VALUE`) {
		t.Errorf("bad entry: error %v, want it named", err)
	}
}
