package main

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// TestContainerMemoryLimit: the runner let its heap grow to twice the
// live heap whatever the container's memory limit (a container sized for
// MM2's -Xmx-like budget OOM-killed it at the first burst); it now sets
// Go's soft limit to 90 % of the container's, unless GOMEMLIMIT or
// AUTOMEMLIMIT=off says otherwise. Not parallel: it changes the process's
// memory limit and environment.
func TestContainerMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer func(p memlimit.Provider) { containerLimit = p }(containerLimit)
	unset := func(k string) {
		if v, ok := os.LookupEnv(k); ok {
			t.Cleanup(func() { os.Setenv(k, v) })
		}
		os.Unsetenv(k)
	}
	const gib = 1 << 30
	for _, tc := range []struct {
		name, gomemlimit, automemlimit string // "-": unset
		provider                       memlimit.Provider
		wantFrom                       string
		wantLimit                      int64
		wantLog                        string
	}{
		{"container limit 1 GiB", "-", "-", memlimit.Limit(gib), "container", gib * 9 / 10, ""},
		{"ratio from AUTOMEMLIMIT", "-", "0.5", memlimit.Limit(gib), "container", gib / 2, ""},
		{"no container limit", "-", "-", func() (uint64, error) { return 0, memlimit.ErrNoLimit }, "none", math.MaxInt64, ""},
		{"GOMEMLIMIT wins", "180MiB", "-", memlimit.Limit(gib), "GOMEMLIMIT", math.MaxInt64, ""},
		{"AUTOMEMLIMIT=off", "-", "off", memlimit.Limit(gib), "none", math.MaxInt64, ""},
		{"unreadable limit", "-", "-", func() (uint64, error) { return 0, errors.New("no cgroup mount") }, "none", math.MaxInt64, "no cgroup mount"},
		{"bad AUTOMEMLIMIT", "-", "lots", memlimit.Limit(gib), "none", math.MaxInt64, "cannot parse AUTOMEMLIMIT: lots"},
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		for k, v := range map[string]string{"GOMEMLIMIT": tc.gomemlimit, "AUTOMEMLIMIT": tc.automemlimit} {
			if v == "-" {
				unset(k)
			} else {
				t.Setenv(k, v)
			}
		}
		containerLimit = tc.provider
		var buf bytes.Buffer
		from := setContainerMemoryLimit(slog.New(slog.NewTextHandler(&buf, nil)))
		if got := debug.SetMemoryLimit(-1); from != tc.wantFrom || got != tc.wantLimit {
			t.Errorf("%s: from %q limit %d, want %q %d", tc.name, from, got, tc.wantFrom, tc.wantLimit)
		}
		if tc.wantLog == "" && buf.Len() > 0 || !strings.Contains(buf.String(), tc.wantLog) {
			t.Errorf("%s: log %q, want %q", tc.name, buf.String(), tc.wantLog)
		}
	}
}

// TestMemoryLimitOutsideCgroupsSilent: on a system without cgroups (the
// runner on macOS or Windows, as in a demo with -embedded) or a process
// in no cgroup, there is no container limit to follow, as with a cgroup
// without one: the limit is left alone without a word. The runner warned
// "reading the container's memory limit: ... set GOMEMLIMIT" at every
// start there.
func TestMemoryLimitOutsideCgroupsSilent(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer func(p memlimit.Provider) { containerLimit = p }(containerLimit)
	for _, k := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Cleanup(func() { os.Setenv(k, v) })
			os.Unsetenv(k)
		}
	}
	for _, noCgroup := range []error{memlimit.ErrCgroupsNotSupported, memlimit.ErrNoCgroup} {
		debug.SetMemoryLimit(math.MaxInt64)
		containerLimit = func() (uint64, error) { return 0, noCgroup }
		var buf bytes.Buffer
		from := setContainerMemoryLimit(slog.New(slog.NewTextHandler(&buf, nil)))
		if got := debug.SetMemoryLimit(-1); from != "none" || got != math.MaxInt64 || buf.Len() > 0 {
			t.Errorf("%v: from %q limit %d log %q; want none, unchanged, nothing logged", noCgroup, from, got, buf.String())
		}
	}
}
