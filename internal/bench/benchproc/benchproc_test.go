package benchproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestProcParsers(t *testing.T) {
	status := []byte("Name:\tjava\nVmPeak:\t 5000 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 100000 kB\n")
	kb, err := StatusKB(status, "VmHWM:")
	if err != nil || kb != 123456 {
		t.Errorf("statusKB = %d, %v; want 123456", kb, err)
	}
	if _, err := StatusKB(status, "VmSwap:"); err == nil {
		t.Error("statusKB of a missing key: no error")
	}
	// Fields 14 and 15 (utime, stime) are 250 and 50 ticks; the command
	// name holds a space and a parenthesis.
	stat := []byte("4242 (my (prog) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 1000 200")
	cpu, err := StatCPU(stat)
	if err != nil || cpu != 3 {
		t.Errorf("statCPU = %v, %v; want 3", cpu, err)
	}
	if _, err := StatCPU([]byte("4242 (x) S 1")); err == nil {
		t.Error("statCPU of a short line: no error")
	}
}

func TestCPUAt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	samples := []cpuSample{{t0, 1}, {t0.Add(50 * time.Millisecond), 1.5}, {t0.Add(100 * time.Millisecond), 2.25}}
	got := []float64{cpuAt(samples, t0.Add(-time.Millisecond)), cpuAt(samples, t0), cpuAt(samples, t0.Add(99*time.Millisecond)),
		cpuAt(samples, t0.Add(time.Hour)), cpuAt(nil, t0)}
	want := []float64{0, 1, 1.5, 2.25, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestEnvEntry(t *testing.T) {
	for _, tc := range []struct {
		in, wantErr string
	}{
		{in: "GOMEMLIMIT=180MiB"},
		{in: "GODEBUG=gctrace=1,madvdontneed=1"},
		{in: "EMPTY="},
		{in: "GOMEMLIMIT", wantErr: `environment entry "GOMEMLIMIT": want KEY=VALUE, e.g. GOMEMLIMIT=180MiB`},
		{in: "=1", wantErr: `environment entry "=1": want KEY=VALUE, e.g. GOMEMLIMIT=180MiB`},
		{in: "A,B=1", wantErr: `environment entry "A,B=1": want KEY=VALUE, e.g. GOMEMLIMIT=180MiB`},
	} {
		got, err := EnvEntry(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("EnvEntry(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.in {
			t.Errorf("EnvEntry(%q) = %q, %v; want it back", tc.in, got, err)
		}
	}
}

// TestStartAddsEnv: the child sees the added entries, over the inherited
// ones.
func TestStartAddsEnv(t *testing.T) {
	t.Setenv("KMIRROR_BENCHPROC_TEST", "inherited")
	log := filepath.Join(t.TempDir(), "env.log")
	p, err := Start("env", []string{"sh", "-c", "echo $KMIRROR_BENCHPROC_TEST $KMIRROR_BENCHPROC_ADDED"},
		[]string{"KMIRROR_BENCHPROC_TEST=added", "KMIRROR_BENCHPROC_ADDED=yes"}, log)
	if err != nil {
		t.Fatal(err)
	}
	<-p.done
	p.Stop(time.Second)
	out, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "added yes" {
		t.Fatalf("child saw %q, want %q", got, "added yes")
	}
}

// TestKmirrorEnvFor: the entries go to the kmirror systems only.
func TestKmirrorEnvFor(t *testing.T) {
	env := KmirrorEnv{"GOMEMLIMIT=180MiB"}
	for sys, want := range map[string]int{"kmirror": 1, "kmirror-shallow": 1, "kmirror-base": 0, "bare": 0, "mm2": 0} {
		if got := env.For(sys); len(got) != want {
			t.Errorf("For(%q) = %q, want %d entries", sys, got, want)
		}
	}
}
