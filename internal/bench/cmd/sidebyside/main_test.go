package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseWorkloads(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []workload
		wantErr string
	}{
		{in: "1Mx1024,5Mx100", want: []workload{{1000000, 1024}, {5000000, 100}}},
		{in: " 20k x 10 ", want: []workload{{20000, 10}}},
		{in: "300x1", want: []workload{{300, 1}}},
		{in: "1M", wantErr: "want RECORDSxBYTES"},
		{in: "0x10", wantErr: "not a positive count"},
		{in: "10x0", wantErr: "value bytes must be 1..900000"},
		{in: ",", wantErr: "no workload"},
	} {
		got, err := parseWorkloads(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseWorkloads(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseWorkloads(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("parseWorkloads(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestWorkloadString(t *testing.T) {
	got := []string{workload{1000000, 1024}.String(), workload{5000000, 100}.String(), workload{20000, 2048}.String(), workload{123, 7}.String()}
	want := []string{"1 M x 1 KiB", "5 M x 100 B", "20 k x 2 KiB", "123 x 7 B"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-records", "100k", "-size", "512", "-systems", "bare,kmirror,bare",
		"-mirrormaker", "m", "-barepipe", "b"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]workload{{100000, 512}}, c.workloads); diff != "" {
		t.Errorf("workloads (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bare", "kmirror"}, c.systems); diff != "" {
		t.Errorf("systems (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-systems", "mm2"}, "-classpath is required"},
		{[]string{"-systems", "kafka"}, `unknown system "kafka"`},
		{[]string{"-records", "10", "-barepipe", "b", "-systems", "bare"}, "-records and -size go together"},
		{[]string{"-compression", "brotli", "-systems", "bare", "-barepipe", "b"}, `-compression "brotli"`},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestRotate(t *testing.T) {
	s := []string{"mm2", "kmirror", "bare"}
	got := [][]string{rotate(s, 0), rotate(s, 1), rotate(s, 2), rotate(s, 3)}
	want := [][]string{{"mm2", "kmirror", "bare"}, {"kmirror", "bare", "mm2"}, {"bare", "mm2", "kmirror"}, {"mm2", "kmirror", "bare"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPercentileMedian(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(i + 1)
	}
	got := []float64{percentile(v, 0.5), percentile(v, 0.99), percentile(v, 1), percentile([]float64{7}, 0.99), percentile(nil, 0.5),
		median([]float64{3, 1, 2}), median([]float64{4, 1, 3, 2})}
	want := []float64{50, 99, 100, 7, 0, 2, 2.5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestProcParsers(t *testing.T) {
	status := []byte("Name:\tjava\nVmPeak:\t 5000 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 100000 kB\n")
	kb, err := statusKB(status, "VmHWM:")
	if err != nil || kb != 123456 {
		t.Errorf("statusKB = %d, %v; want 123456", kb, err)
	}
	if _, err := statusKB(status, "VmSwap:"); err == nil {
		t.Error("statusKB of a missing key: no error")
	}
	// Fields 14 and 15 (utime, stime) are 250 and 50 ticks; the command
	// name holds a space and a parenthesis.
	stat := []byte("4242 (my (prog) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 1000 200")
	cpu, err := statCPU(stat)
	if err != nil || cpu != 3 {
		t.Errorf("statCPU = %v, %v; want 3", cpu, err)
	}
	if _, err := statCPU([]byte("4242 (x) S 1")); err == nil {
		t.Error("statCPU of a short line: no error")
	}
}

func TestProperties(t *testing.T) {
	b := &bench{c: &config{source: []string{"s:1"}, target: []string{"t:1", "t:2"}, mm2Tasks: 2, compression: "none"}}
	got := b.properties("a1src", "a1dst", []string{"x-bulk", "x-live"})
	for _, line := range []string{
		"clusters = a1src, a1dst\n",
		"a1src.bootstrap.servers = s:1\n",
		"a1dst.bootstrap.servers = t:1,t:2\n",
		"a1src->a1dst.enabled = true\n",
		"a1dst->a1src.enabled = false\n",
		"a1src->a1dst.topics = x-bulk, x-live\n",
		"a1dst.producer.compression.type = none\n",
		"tasks.max = 2\n",
		"offset-syncs.topic.replication.factor = 1\n",
		"emit.heartbeats.enabled = false\n",
		"sync.topic.configs.enabled = false\n",
		"heartbeats.replication.enabled = false\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("properties lack %q:\n%s", line, got)
		}
	}
}

func TestSummarizeSkipsFailures(t *testing.T) {
	rs := []result{
		{RecordsPerS: 100, PeakRSSMB: 10, LatP99Ms: 5},
		{RecordsPerS: 300, PeakRSSMB: 30, LatP99Ms: 7},
		{RecordsPerS: 200, PeakRSSMB: 20, LatP99Ms: 6},
		{Err: "boom", RecordsPerS: 1e9},
	}
	got := summarize(rs)
	want := summary{Runs: 3, Failed: 1, RecordsPerS: 200, MinRPS: 100, MaxRPS: 300, PeakRSSMB: 20, LatP99Ms: 6}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
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
