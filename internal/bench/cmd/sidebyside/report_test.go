package main

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testReport is a report of two workloads (random, and order events with
// lz4) and two systems, with made-up numbers: one failed kmirror run.
func testReport() *report {
	rw := rnd(1000, 1024)
	jw := workload{Records: 2000, Kind: kindJSON, Codec: "lz4"}
	c := &config{workloads: []workload{rw, jw}, systems: []string{sysKmirror, sysBare}, partitions: 8, reps: 2,
		liveRecords: 100, liveRate: 50, mm2Tasks: 2, compression: "none",
		codecs:       map[string]string{sysMM2: "default", sysKmirror: "default", sysBare: "lz4"},
		kafkaVersion: "4.3.1", command: "sidebyside -test"}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	results := []result{
		{Workload: rw, System: sysKmirror, Rep: 1, Order: 1, Start: t0, RecordsPerS: 1000, MBPerS: 1.03, LatP50Ms: 5, LatP99Ms: 9, PeakRSSMB: 100,
			CPUS: 2, CopyCPUS: 1, TargetRecords: 1000, Codec: "none", TargetCodecs: "none", PayloadBytes: 1034000, CPUPerGB: 967.118,
			SourceBytes: 1100000, TargetBytes: 1100000, StoredRatio: 1},
		{Workload: rw, System: sysBare, Rep: 1, Order: 2, Start: t0, RecordsPerS: 2000, MBPerS: 2.07, LatP50Ms: 4, LatP99Ms: 8, PeakRSSMB: 90,
			CPUS: 1.5, CopyCPUS: 0.5, TargetRecords: 1000, Codec: "none", TargetCodecs: "none", PayloadBytes: 1034000, CPUPerGB: 483.559,
			SourceBytes: 1100000, TargetBytes: 1100000, StoredRatio: 1},
		{Workload: jw, System: sysKmirror, Rep: 1, Order: 1, Start: t0, RecordsPerS: 4000, MBPerS: 4.4, LatP50Ms: 6, LatP99Ms: 20, PeakRSSMB: 120,
			CPUS: 3, CopyCPUS: 0.2, TargetRecords: 2000, Codec: "default", TargetCodecs: "snappy", PayloadBytes: 2200000, CPUPerGB: 90.909,
			SourceBytes: 700000, TargetBytes: 707000, StoredRatio: 1.01},
		{Workload: jw, System: sysKmirror, Rep: 2, Order: 2, Start: t0, Err: "boom | x"},
		{Workload: jw, System: sysBare, Rep: 1, Order: 2, Start: t0, RecordsPerS: 5000, MBPerS: 5.5, LatP50Ms: 5, LatP99Ms: 10, PeakRSSMB: 110,
			CPUS: 2, CopyCPUS: 0.4, TargetRecords: 2000, Codec: "lz4", TargetCodecs: "lz4", PayloadBytes: 2200000, CPUPerGB: 181.818,
			SourceBytes: 700000, TargetBytes: 630000, StoredRatio: 0.9},
	}
	return &report{c: c, runID: "sbstest", started: t0, finished: t0.Add(90 * time.Second), loadEnd: 1.5, results: results}
}

func TestReportMarkdown(t *testing.T) {
	md := testReport().markdown()
	for _, line := range []string{
		"- Producer compression of the systems: `none` on the uncompressed workloads; on the compressed workloads kmirror `default`, bare `lz4` (`default`: no setting, the system's own default)\n",
		"- Workload 1 k x 1 KiB: random (incompressible) values of 1024 bytes, keys of 10 bytes, no headers, uncompressed; 1.0 MB of payload stored in 1.1 MB on the source (payload / stored 0.94)\n",
		"- Workload 2 k x JSON orders, lz4: JSON order events of about 1 KiB (internal/bench/events, seed 1), keyed by customer, 4 headers, produced with lz4; 2.2 MB of payload stored in 0.7 MB on the source (payload / stored 3.14)\n",
		"| 1 k x 1 KiB | kmirror | 1.0 k (1.0 k–1.0 k) | 1.0 | 5 | 9 | 100 | 2.0 | 1.0 | 967.12 | 1.00 | none → none | 0.0 | 1 |\n",
		"| 2 k x JSON orders, lz4 | kmirror | 4.0 k (4.0 k–4.0 k) | 4.4 | 6 | 20 | 120 | 3.0 | 0.2 | 90.91 | 1.01 | default → snappy | 0.0 | 1 (1 failed) |\n",
		"| 2 k x JSON orders, lz4 | bare franz-go pipe | 5.0 k (5.0 k–5.0 k) | 5.5 | 5 | 10 | 110 | 2.0 | 0.4 | 181.82 | 0.90 | lz4 → lz4 | 0.0 | 1 |\n",
		"| 2 k x JSON orders, lz4 | n/a | 0.80× | n/a | n/a | 0.50× | n/a |\n",
		"| 2 k x JSON orders, lz4 | 2 | 2 | kmirror | 0.00 | failed: boom / x | | | | | | | | | |\n",
		"| 2 k x JSON orders, lz4 | 1 | 2 | bare franz-go pipe | 0.00 | 5.0 k | 5 | 10 | 110 | 2.0 | 0.4 | 181.82 | 0.90 | lz4 → lz4 | 0.0 |\n",
		"## For the README\n\n| Workload | System | records/s | MB/s | p50 / p99 latency ms | peak RSS MiB | CPU s of the copy | CPU s per GB | target / source bytes | codec |\n",
		"| 2 k x JSON orders, lz4 | kmirror | 4.0 k (4.0 k–4.0 k) | 4.4 | 6 / 20 | 120 | 0.2 | 90.91 | 1.01 | default → snappy |\n",
	} {
		if !strings.Contains(md, line) {
			t.Errorf("markdown lacks %q\n---\n%s", line, md)
		}
	}
}

func TestReportCSV(t *testing.T) {
	rows, err := csv.NewReader(strings.NewReader(testReport().csv())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want a header and 5", len(rows))
	}
	header := rows[0]
	col := func(row []string, name string) string {
		for i, h := range header {
			if h == name {
				return row[i]
			}
		}
		t.Fatalf("no column %q in %q", name, header)
		return ""
	}
	// The columns of the first version keep their names and places.
	if diff := cmp.Diff(strings.Split("run_id,workload,records,value_bytes,partitions,system,rep,order,start_utc,load1,startup_s,copy_s,records_per_s,mb_per_s,"+
		"lat_p50_ms,lat_p99_ms,lat_max_ms,live_records,peak_rss_mib,cpu_s,copy_cpu_s,target_records", ","), header[:22]); diff != "" {
		t.Errorf("first columns (-want +got):\n%s", diff)
	}
	if header[len(header)-1] != "error" {
		t.Errorf("last column %q, want error", header[len(header)-1])
	}
	var got [][]string
	for _, r := range rows[1:] {
		got = append(got, []string{col(r, "workload"), col(r, "system"), col(r, "kind"), col(r, "source_codec"), col(r, "codec"),
			col(r, "target_codecs"), col(r, "payload_bytes"), col(r, "copy_cpu_s_per_gb"), col(r, "source_bytes"), col(r, "target_bytes"),
			col(r, "stored_ratio"), col(r, "error")})
	}
	want := [][]string{
		{"1kx1KiB", "kmirror", "random", "none", "none", "none", "1034000", "967.118", "1100000", "1100000", "1.0000", ""},
		{"1kx1KiB", "bare", "random", "none", "none", "none", "1034000", "483.559", "1100000", "1100000", "1.0000", ""},
		{"2kxjson/lz4", "kmirror", "json", "lz4", "default", "snappy", "2200000", "90.909", "700000", "707000", "1.0100", ""},
		{"2kxjson/lz4", "kmirror", "json", "lz4", "", "", "0", "0.000", "0", "0", "0.0000", "boom | x"},
		{"2kxjson/lz4", "bare", "json", "lz4", "lz4", "lz4", "2200000", "181.818", "700000", "630000", "0.9000", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// TestChart draws the chart of the test report's CSV with chart.py; it
// needs python3 with matplotlib and skips without them.
func TestChart(t *testing.T) {
	if err := exec.Command("python3", "-c", "import matplotlib").Run(); err != nil {
		t.Skip("python3 with matplotlib not available (pip install matplotlib): chart.py not run")
	}
	dir := t.TempDir()
	src, png := filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.png")
	if err := os.WriteFile(src, []byte(testReport().csv()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", "../../chart.py", src, png).CombinedOutput()
	if err != nil {
		t.Fatalf("chart.py: %v\n%s", err, out)
	}
	fi, err := os.Stat(png)
	if err != nil || fi.Size() < 10000 {
		t.Fatalf("chart.py wrote %v (%v), want a PNG", fi, err)
	}
	// The CSV of the first version (without the compressed-workload
	// columns) still draws.
	old := "run_id,workload,records,value_bytes,partitions,system,rep,order,start_utc,load1,startup_s,copy_s,records_per_s,mb_per_s,lat_p50_ms,lat_p99_ms,lat_max_ms,live_records,peak_rss_mib,cpu_s,copy_cpu_s,target_records,error\n" +
		"sbs1,1Mx1KiB,1000000,1024,8,kmirror,1,1,2026-11-29T19:49:59Z,5.40,0.558,5.566,179662,185.77,6.0,65.0,148.0,20000,210.8,4.91,2.83,1000000,\n"
	if err := os.WriteFile(src, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("python3", "../../chart.py", src, png).CombinedOutput(); err != nil {
		t.Fatalf("chart.py on a first-version CSV: %v\n%s", err, out)
	}
}
