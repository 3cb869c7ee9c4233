package main

import (
	"errors"
	"log/slog"
	"math"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// containerLimit is where the runner reads the container's memory limit
// (cgroup v1 or v2); tests replace it.
var containerLimit memlimit.Provider = memlimit.FromCgroup

// setContainerMemoryLimit sets Go's soft memory limit to 90 % of the
// container's memory limit, as the JVM sizes MM2's heap from the
// container's memory (-XX:MaxRAMPercentage): without it a Go process lets
// its heap grow to twice the live heap, and a container sized for the
// live heap is OOM-killed at the first burst. It does nothing when
// GOMEMLIMIT is set (the operator's choice wins), with AUTOMEMLIMIT=off, or
// outside a container with a limit (without a word where there are no
// cgroups at all, as on macOS). AUTOMEMLIMIT=0.8 sets another ratio.
// It returns where the limit in effect comes from, for the "starting"
// line: "GOMEMLIMIT", "container" or "none"; a limit it cannot read or a
// bad AUTOMEMLIMIT is logged and changes nothing.
//
// github.com/KimMachineGun/automemlimit does the reading (cgroup v1 and v2
// mount points, hierarchies, the "max" values): well kept and used by
// Prometheus, it beats a cgroup parser of our own.
func setContainerMemoryLimit(log *slog.Logger) string {
	if os.Getenv("GOMEMLIMIT") != "" {
		return "GOMEMLIMIT"
	}
	if v, _ := os.LookupEnv("AUTOMEMLIMIT"); v == "off" {
		return "none"
	}
	// Set changes nothing when it fails.
	limit, err := memlimit.Set(memlimit.WithProvider(containerLimit))
	switch {
	case errors.Is(err, memlimit.ErrNoLimit), err == nil && limit == math.MaxInt64:
		return "none"
	case errors.Is(err, memlimit.ErrCgroupsNotSupported), errors.Is(err, memlimit.ErrNoCgroup):
		// Not in a container (macOS, Windows, a process in no cgroup):
		// no limit to follow, nothing to say.
		return "none"
	case err != nil:
		log.Warn("reading the container's memory limit: Go's soft memory limit left as it was; set GOMEMLIMIT to choose one", "err", err)
		return "none"
	}
	return "container"
}
