package heapwatch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestNewPeak checks when a live heap counts as a new peak: more than 5 %
// above the largest seen.
func TestNewPeak(t *testing.T) {
	for _, c := range []struct {
		live, peak uint64
		want       bool
	}{
		{live: 1, peak: 0, want: true},
		{live: 0, peak: 0, want: false},
		{live: 105, peak: 100, want: false},
		{live: 106, peak: 100, want: true},
		{live: 50, peak: 100, want: false},
		{live: 200 << 20, peak: 100 << 20, want: true},
	} {
		if got := newPeak(c.live, c.peak); got != c.want {
			t.Errorf("newPeak(%d, %d) = %v, want %v", c.live, c.peak, got, c.want)
		}
	}
}

// TestWatchWritesProfile checks that Watch writes a whole heap profile
// (gzipped) once the live heap holds a large allocation, and leaves no
// temporary file behind.
func TestWatchWritesProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "peak.pprof")
	stop := Watch(path, 2*time.Millisecond)
	defer stop()
	big := make([]byte, 64<<20)
	runtime.GC()
	var b []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && len(b) == 0; time.Sleep(10 * time.Millisecond) {
		b, _ = os.ReadFile(path)
	}
	runtime.KeepAlive(big)
	stop()
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("%s: %d bytes, want a gzipped heap profile", path, len(b))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "peak.pprof" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files %v, want only peak.pprof", names)
	}
}

// TestEveryWritesNumberedProfiles: profiles 1, 2, ... appear, whole, and
// none after stop.
func TestEveryWritesNumberedProfiles(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "idle")
	stop := Every(base, 5*time.Millisecond)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(base + ".2.pprof"); err == nil {
			break
		}
	}
	stop()
	stop()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := len(entries)
	if n < 2 {
		t.Fatalf("%d profiles, want at least 2", n)
	}
	for i := 1; i <= n; i++ {
		b, err := os.ReadFile(fmt.Sprintf("%s.%d.pprof", base, i))
		if err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Fatalf("profile %d: %d bytes, %v; want a gzipped heap profile", i, len(b), err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if after, _ := os.ReadDir(dir); len(after) != n {
		t.Errorf("%d files after stop, want %d", len(after), n)
	}
}
