// Package heapwatch writes heap profiles at the peaks of a process's live
// heap, for memory investigations of the runner and the benchmark programs
// (issue 22): the peak RSS of a Go process follows the largest live heap a
// collection marked, and a profile taken afterwards misses what made it.
package heapwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// EnvVar names the environment variable that turns the watch on: its
// value is a path prefix, and the profile of a process goes to
// PREFIX.<program>.<pid>.pprof.
const EnvVar = "KMIRROR_HEAPPROFILE_PEAK"

// EveryEnvVar names the environment variable that also writes a profile
// at a fixed period (a Go duration, e.g. 30s), to
// PREFIX.<program>.<pid>.<n>.pprof for n = 1, 2, ...: the difference of
// two (go tool pprof -sample_index=alloc_space -base OLD NEW) is what the
// process allocated between them, an idle member's allocation rate, say.
// A heap profile's figures are those of the last finished collection, so
// the difference is between the collections before each write, not the
// writes themselves. The files are never removed: keep the run short or
// the period long. It needs [EnvVar] for the prefix.
const EveryEnvVar = "KMIRROR_HEAPPROFILE_EVERY"

// FromEnv starts [Watch] for the rest of the process's life when [EnvVar]
// is set, and [Every] too when [EveryEnvVar] is. Errors creating a file,
// a bad period and a period without a prefix are reported once on
// stderr; the program goes on.
func FromEnv() {
	prefix := os.Getenv(EnvVar)
	if prefix == "" {
		if os.Getenv(EveryEnvVar) != "" {
			fmt.Fprintf(os.Stderr, "heapwatch: %s is set without %s, the path prefix: no profiles\n", EveryEnvVar, EnvVar)
		}
		return
	}
	base := fmt.Sprintf("%s.%s.%d", prefix, filepath.Base(os.Args[0]), os.Getpid())
	Watch(base+".pprof", 20*time.Millisecond)
	if v := os.Getenv(EveryEnvVar); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "heapwatch: %s=%q: want a positive duration such as 30s; no periodic profiles\n", EveryEnvVar, v)
			return
		}
		Every(base, d)
	}
}

// Every writes a heap profile to base.<n>.pprof every period, n counting
// from 1, until the returned function is called (it waits for a write in
// progress; it may be called more than once).
func Every(base string, period time.Duration) (stop func()) {
	n := 0
	return loop(period, false, func() (string, bool) {
		n++
		return fmt.Sprintf("%s.%d.pprof", base, n), true
	})
}

// Watch samples the live heap marked by the last collection
// (/gc/heap/live:bytes) every interval and, whenever it exceeds the
// largest seen by 5 %, writes a heap profile to path, replacing the
// previous one: the file ends up describing the largest live heap of the
// run (the in-use figures of a heap profile are those of the last
// collection). The returned function stops the watch and waits for it; it
// may be called more than once.
func Watch(path string, interval time.Duration) (stop func()) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	return loop(interval, true, func() (string, bool) {
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if !newPeak(live, peak) {
			return "", false
		}
		peak = live
		return path, true
	})
}

// loop runs due on its own goroutine every interval (and at once when
// first is set) and writes a profile to the path it returns when it says
// so; the first write error is reported on stderr. The returned function
// stops the loop and waits for it; it may be called more than once.
func loop(interval time.Duration, first bool, due func() (path string, ok bool)) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		warned := false
		for tick := first; ; tick = true {
			if tick {
				if path, ok := due(); ok {
					if err := write(path); err != nil && !warned {
						warned = true
						fmt.Fprintf(os.Stderr, "heapwatch: %v\n", err)
					}
				}
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-stopped
	}
}

// newPeak reports whether live exceeds the largest live heap seen, peak,
// by more than 5 % (each write costs a profile of the whole heap).
func newPeak(live, peak uint64) bool { return live > peak+peak/20 }

// write writes a heap profile to path through a temporary file renamed
// over it, so that a reader never sees a partial profile.
func write(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
