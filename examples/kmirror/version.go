package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// ldRevision and ldTime are set with -ldflags "-X main.ldRevision=... -X
// main.ldTime=..." by builds that have no VCS stamping (the Dockerfile
// builds with -buildvcs=false: the build context has no .git). The build
// info's vcs.revision and vcs.time win when present.
var (
	ldRevision string
	ldTime     string
)

// buildVersion describes a binary from its build information.
type buildVersion struct {
	Module   string // module path, "github.com/kmirror/kmirror"
	Version  string // module version ("v0.4.0", a pseudo-version) or "(devel)"
	Revision string // VCS revision, empty when unknown
	Time     string // commit time (RFC 3339), empty when unknown
	Modified bool   // the working tree had uncommitted changes
	Go       string // toolchain, "go1.26.0"
	Platform string // "linux/amd64"
}

// readVersion reads the running binary's build information.
func readVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	return versionOf(bi, ok, ldRevision, ldTime)
}

// versionOf extracts the version from build information (ok false: the
// binary has none). revision and commitTime are the -ldflags fallbacks.
func versionOf(bi *debug.BuildInfo, ok bool, revision, commitTime string) buildVersion {
	v := buildVersion{Module: "github.com/kmirror/kmirror", Version: "(devel)", Revision: revision, Time: commitTime,
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	goos, goarch := runtime.GOOS, runtime.GOARCH
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	v.Platform = goos + "/" + goarch
	return v
}

// String is the -version output, one line:
//
//	kmirror v0.4.0 (github.com/kmirror/kmirror) go1.26.0 linux/amd64
//	kmirror (devel) (github.com/kmirror/kmirror) revision 8cd72bf... 2026-12-01T10:00:00Z modified go1.26.0 linux/amd64
//
// A "(devel)" build without a revision says how to get one.
func (v buildVersion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kmirror %s (%s)", v.Version, v.Module)
	if v.Revision != "" {
		fmt.Fprintf(&b, " revision %s", v.Revision)
		if v.Time != "" {
			fmt.Fprintf(&b, " %s", v.Time)
		}
		if v.Modified {
			b.WriteString(" modified")
		}
	} else if v.Version == "(devel)" {
		b.WriteString(" revision unknown (built without VCS information: use go install ...@version, or go build in a git clone without -buildvcs=false in GOFLAGS)")
	}
	fmt.Fprintf(&b, " %s %s", v.Go, v.Platform)
	return b.String()
}
