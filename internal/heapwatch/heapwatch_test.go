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
	written := func() time.Time {
		t.Helper()
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Fatalf("%s: %d bytes, not a gzipped profile", path, len(b))
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.ModTime()
	}
	big := make([]byte, 64<<20)
	first := written()
	runtime.KeepAlive(big)
	big = nil
	if again := written(); !again.Equal(first) {
		t.Errorf("profile rewritten at %v after the live heap shrank (first at %v)", again, first)
	}
	bigger := make([]byte, 160<<20)
	if third := written(); !third.After(first) {
		t.Errorf("profile not rewritten at a new peak (still %v)", third)
	}
	runtime.KeepAlive(bigger)
	stop()
}
