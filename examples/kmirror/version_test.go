package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name     string
		bi       *debug.BuildInfo
		ok       bool
		rev, tim string // -ldflags fallbacks
		want     string
	}{
		{
			name: "go install at a released version",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/kmirror/kmirror", Version: "v0.4.0"}},
			ok:   true,
			want: "kmirror v0.4.0 (github.com/kmirror/kmirror) go1.26.0 " + platform,
		},
		{
			name: "go build in a git clone with changes",
			bi: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/kmirror/kmirror", Version: "v0.4.1-0.20261201100000-8cd72bf3e2a1+dirty"},
				Settings: []debug.BuildSetting{
					{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
					{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "8cd72bf3e2a1d4c5b6a7980f1e2d3c4b5a697887"},
					{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
				}},
			ok:   true,
			want: "kmirror v0.4.1-0.20261201100000-8cd72bf3e2a1+dirty (github.com/kmirror/kmirror) revision 8cd72bf3e2a1d4c5b6a7980f1e2d3c4b5a697887 2026-12-01T10:00:00Z modified go1.26.0 linux/arm64",
		},
		{
			name: "devel with a clean checkout",
			bi: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/kmirror/kmirror", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}},
			ok:   true,
			want: "kmirror (devel) (github.com/kmirror/kmirror) revision abc123 go1.26.0 " + platform,
		},
		{
			name: "devel without VCS information",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/kmirror/kmirror", Version: "(devel)"}},
			ok:   true,
			want: "kmirror (devel) (github.com/kmirror/kmirror) revision unknown (built without VCS information: use go install ...@version, or go build in a git clone without -buildvcs=false in GOFLAGS) go1.26.0 " + platform,
		},
		{
			name: "devel with the Dockerfile's -ldflags revision",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/kmirror/kmirror", Version: "(devel)"}},
			ok:   true, rev: "feedbeef", tim: "2026-12-02T08:00:00Z",
			want: "kmirror (devel) (github.com/kmirror/kmirror) revision feedbeef 2026-12-02T08:00:00Z go1.26.0 " + platform,
		},
		{
			name: "stamped VCS revision wins over -ldflags",
			bi: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/kmirror/kmirror", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}}},
			ok: true, rev: "feedbeef",
			want: "kmirror (devel) (github.com/kmirror/kmirror) revision abc123 go1.26.0 " + platform,
		},
		{
			name: "no build information",
			ok:   false,
			want: "kmirror (devel) (github.com/kmirror/kmirror) revision unknown (built without VCS information: use go install ...@version, or go build in a git clone without -buildvcs=false in GOFLAGS) " + runtime.Version() + " " + platform,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionOf(tc.bi, tc.ok, tc.rev, tc.tim).String(); got != tc.want {
				t.Errorf("version:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestVersionFlag: -version prints one line and exits 0 without -config.
func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-version"}, &out, io.Discard)
	if code := exitCode(err, io.Discard); code != 0 {
		t.Fatalf("-version: exit code %d (%v), want 0", code, err)
	}
	if got, want := out.String(), readVersion().String()+"\n"; got != want {
		t.Errorf("-version printed %q, want %q", got, want)
	}
	if !strings.HasPrefix(out.String(), "kmirror ") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("-version output is not one line starting with \"kmirror \": %q", out.String())
	}
}

// TestVersionBinary builds the runner as the Dockerfile does (no VCS
// stamping, revision through -ldflags) and runs `kmirror -version`.
func TestVersionBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the runner")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	bin := filepath.Join(t.TempDir(), "kmirror")
	build := exec.Command(gobin, "build", "-buildvcs=false", "-ldflags=-X main.ldRevision=0123abcd -X main.ldTime=2026-12-02T08:00:00Z", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("kmirror -version: %v\n%s", err, out)
	}
	want := "kmirror (devel) (github.com/kmirror/kmirror) revision 0123abcd 2026-12-02T08:00:00Z " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if string(out) != want {
		t.Errorf("kmirror -version:\n got %q\nwant %q", out, want)
	}
}
