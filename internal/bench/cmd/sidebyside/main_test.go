package main

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rnd is a random-value workload with uncompressed source records.
func rnd(records, size int) workload {
	return workload{Records: records, Size: size, Kind: kindRandom, Codec: "none"}
}

func TestParseWorkloads(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []workload
		wantErr string
	}{
		{in: "1Mx1024,5Mx100", want: []workload{rnd(1000000, 1024), rnd(5000000, 100)}},
		{in: " 20k x 10 ", want: []workload{rnd(20000, 10)}},
		{in: "300x1", want: []workload{rnd(300, 1)}},
		{in: "2Mxjson/lz4, 2Mxjson/zstd,50kxjson", want: []workload{
			{Records: 2000000, Kind: kindJSON, Codec: "lz4"}, {Records: 2000000, Kind: kindJSON, Codec: "zstd"},
			{Records: 50000, Kind: kindJSON, Codec: "none"}}},
		{in: "1kx512/snappy", want: []workload{{Records: 1000, Size: 512, Kind: kindRandom, Codec: "snappy"}}},
		{in: "1M", wantErr: "want RECORDSxBYTES or RECORDSxjson"},
		{in: "0x10", wantErr: "not a positive count"},
		{in: "10x0", wantErr: "value bytes must be 1..900000 (or json for order events)"},
		{in: "10xjsn/lz4", wantErr: "value bytes must be 1..900000"},
		{in: "10xjson/brotli", wantErr: `codec "brotli": want one of none, gzip, snappy, lz4, zstd`},
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
	ws := []workload{rnd(1000000, 1024), rnd(5000000, 100), rnd(20000, 2048), rnd(123, 7),
		{Records: 2000000, Kind: kindJSON, Codec: "lz4"}, {Records: 50000, Kind: kindJSON, Codec: "none"},
		{Records: 1000, Size: 512, Kind: kindRandom, Codec: "zstd"}}
	var names, ids []string
	for _, w := range ws {
		names, ids = append(names, w.String()), append(ids, w.id())
	}
	wantNames := []string{"1 M x 1 KiB", "5 M x 100 B", "20 k x 2 KiB", "123 x 7 B", "2 M x JSON orders, lz4", "50 k x JSON orders", "1 k x 512 B, zstd"}
	wantIDs := []string{"1Mx1KiB", "5Mx100B", "20kx2KiB", "123x7B", "2Mxjson/lz4", "50kxjson", "1kx512B/zstd"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantIDs, ids); diff != "" {
		t.Errorf("id (-want +got):\n%s", diff)
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-records", "100k", "-size", "512", "-systems", "bare,kmirror,bare",
		"-mirrormaker", "m", "-barepipe", "b"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]workload{rnd(100000, 512)}, c.workloads); diff != "" {
		t.Errorf("workloads (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bare", "kmirror"}, c.systems); diff != "" {
		t.Errorf("systems (-want +got):\n%s", diff)
	}
	c, err = parseFlags([]string{"-systems", "kmirror", "-mirrormaker", "m",
		"-kmirror-env", "GOMEMLIMIT=180MiB", "-kmirror-env", "GODEBUG=gctrace=1,madvdontneed=1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"GOMEMLIMIT=180MiB", "GODEBUG=gctrace=1,madvdontneed=1"}, []string(c.kmirrorEnv)); diff != "" {
		t.Errorf("-kmirror-env (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-systems", "mm2"}, "-classpath is required"},
		{[]string{"-systems", "kafka"}, `unknown system "kafka"`},
		{[]string{"-records", "10", "-barepipe", "b", "-systems", "bare"}, "-records and -size go together"},
		{[]string{"-compression", "brotli", "-systems", "bare", "-barepipe", "b"}, `-compression "brotli"`},
		{[]string{"-compressed-codecs", "bare=brotli", "-systems", "bare", "-barepipe", "b"}, `-compressed-codecs "bare=brotli": codec "brotli"`},
		{[]string{"-compressed-codecs", "kafka=lz4", "-systems", "bare", "-barepipe", "b"}, `-compressed-codecs "kafka=lz4": want SYSTEM=CODEC`},
		{[]string{"-source-batch-bytes", "-1", "-systems", "bare", "-barepipe", "b"}, "-source-batch-bytes -1"},
		{[]string{"-kmirror-env", "GOMEMLIMIT", "-systems", "bare", "-barepipe", "b"}, `environment entry "GOMEMLIMIT": want KEY=VALUE`},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestDefaultWorkloadsAndCodecs: by default the benchmark runs the two
// random workloads and order events compressed with lz4 and zstd; on those
// MM2 and kmirror run with their own default codec and the bare pipe with
// lz4, and everyone gets -compression on the random ones.
func TestDefaultWorkloadsAndCodecs(t *testing.T) {
	c, err := parseFlags([]string{"-systems", "kmirror,bare", "-mirrormaker", "m", "-barepipe", "b"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lz4, zstd := workload{Records: 2000000, Kind: kindJSON, Codec: "lz4"}, workload{Records: 2000000, Kind: kindJSON, Codec: "zstd"}
	if diff := cmp.Diff([]workload{rnd(1000000, 1024), rnd(5000000, 100), lz4, zstd}, c.workloads); diff != "" {
		t.Errorf("workloads (-want +got):\n%s", diff)
	}
	got := []string{c.codecFor(sysMM2, lz4), c.codecFor(sysKmirror, zstd), c.codecFor(sysBare, lz4), c.codecFor(sysBare, rnd(1, 1)), c.codecFor(sysKmirror, rnd(1, 1))}
	if diff := cmp.Diff([]string{"default", "default", "lz4", "none", "none"}, got); diff != "" {
		t.Errorf("codecs (-want +got):\n%s", diff)
	}
	c, err = parseFlags([]string{"-systems", "bare", "-barepipe", "b", "-compression", "snappy", "-compressed-codecs", "kmirror=zstd,bare=default"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got = []string{c.codecFor(sysMM2, lz4), c.codecFor(sysKmirror, lz4), c.codecFor(sysBare, zstd), c.codecFor(sysBare, rnd(1, 1))}
	if diff := cmp.Diff([]string{"default", "zstd", "default", "snappy"}, got); diff != "" {
		t.Errorf("codecs with flags (-want +got):\n%s", diff)
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

func TestProperties(t *testing.T) {
	b := &bench{c: &config{source: []string{"s:1"}, target: []string{"t:1", "t:2"}, mm2Tasks: 2, compression: "none"}}
	got := b.properties("a1src", "a1dst", []string{"x-bulk", "x-live"}, "none")
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

func TestPropertiesCodec(t *testing.T) {
	b := &bench{c: &config{source: []string{"s:1"}, target: []string{"t:1"}, mm2Tasks: 1}}
	if got := b.properties("a", "b", []string{"x"}, "zstd"); !strings.Contains(got, "b.producer.compression.type = zstd\n") {
		t.Errorf("codec zstd: no compression.type line:\n%s", got)
	}
	if got := b.properties("a", "b", []string{"x"}, "default"); strings.Contains(got, "compression.type") {
		t.Errorf("codec default: a compression.type line:\n%s", got)
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
