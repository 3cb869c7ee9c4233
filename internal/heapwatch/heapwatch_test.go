package heapwatch

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestWatchWritesAtNewPeaks checks that a profile is written when the live
// heap grows past the largest seen, kept when it shrinks, and replaced at
// a new peak.
func TestWatchWritesAtNewPeaks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peak.pprof")
	runtime.GC() // the live heap of earlier tests is gone
	stop := Watch(path, 2*time.Millisecond)
	defer stop()
	// modTime returns the profile's modification time once it is written
	// after since (zero since: written at all), or the last one after d.
	modTime := func(since time.Time, d time.Duration) time.Time {
		t.Helper()
		runtime.GC()
		var last time.Time
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			st, err := os.Stat(path)
			if err != nil {
				continue
			}
			if last = st.ModTime(); last.After(since) {
				break
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Fatalf("%s: %d bytes, not a gzipped profile", path, len(b))
		}
		return last
	}
	big := make([]byte, 64<<20)
	first := modTime(time.Time{}, 5*time.Second)
	runtime.KeepAlive(big)
	big = nil
	if again := modTime(first, 200*time.Millisecond); !again.Equal(first) {
		t.Errorf("profile rewritten at %v after the live heap shrank (first at %v)", again, first)
	}
	bigger := make([]byte, 160<<20)
	if third := modTime(first, 5*time.Second); !third.After(first) {
		t.Errorf("profile not rewritten at a new peak (still %v)", third)
	}
	runtime.KeepAlive(bigger)
	stop()
}
