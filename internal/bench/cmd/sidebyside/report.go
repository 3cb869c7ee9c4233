package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/bench/benchproc"
)

// report turns the runs into markdown and CSV.
type report struct {
	c        *config
	runID    string
	started  time.Time
	finished time.Time
	loadEnd  float64
	results  []result
}

func newReport(c *config, runID string, started time.Time, results []result) *report {
	return &report{c: c, runID: runID, started: started, finished: time.Now(), loadEnd: benchproc.LoadAvg1(), results: results}
}

// summary is the median over the successful runs of one system on one
// workload.
type summary struct {
	Runs, Failed                int
	RecordsPerS, MinRPS, MaxRPS float64
	MBPerS                      float64
	LatP50Ms, LatP99Ms          float64
	PeakRSSMB, CPUS, CopyCPUS   float64
	StartupS                    float64
	CPUPerGB, StoredRatio       float64
	SourceBytes, PayloadBytes   float64
	Codec, TargetCodecs         string // every distinct value over the runs, joined by ", "
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func summarize(rs []result) summary {
	var s summary
	var rps, mbps, p50, p99, rss, cpu, ccpu, start, perGB, stored, srcBytes, payload []float64
	var codecs, targetCodecs []string
	for _, r := range rs {
		if r.Err != "" {
			s.Failed++
			continue
		}
		s.Runs++
		rps = append(rps, r.RecordsPerS)
		mbps = append(mbps, r.MBPerS)
		p50 = append(p50, r.LatP50Ms)
		p99 = append(p99, r.LatP99Ms)
		rss = append(rss, r.PeakRSSMB)
		cpu = append(cpu, r.CPUS)
		ccpu = append(ccpu, r.CopyCPUS)
		start = append(start, r.StartupS)
		perGB = append(perGB, r.CPUPerGB)
		stored = append(stored, r.StoredRatio)
		srcBytes = append(srcBytes, float64(r.SourceBytes))
		payload = append(payload, float64(r.PayloadBytes))
		if !slices.Contains(codecs, r.Codec) {
			codecs = append(codecs, r.Codec)
		}
		if !slices.Contains(targetCodecs, r.TargetCodecs) {
			targetCodecs = append(targetCodecs, r.TargetCodecs)
		}
	}
	if s.Runs == 0 {
		return s
	}
	s.CPUPerGB, s.StoredRatio, s.SourceBytes, s.PayloadBytes = median(perGB), median(stored), median(srcBytes), median(payload)
	s.Codec, s.TargetCodecs = strings.Join(codecs, ", "), strings.Join(targetCodecs, ", ")
	s.RecordsPerS, s.MinRPS, s.MaxRPS = median(rps), slices.Min(rps), slices.Max(rps)
	s.MBPerS, s.LatP50Ms, s.LatP99Ms = median(mbps), median(p50), median(p99)
	s.PeakRSSMB, s.CPUS, s.CopyCPUS, s.StartupS = median(rss), median(cpu), median(ccpu), median(start)
	return s
}

func (rp *report) byWorkload(w workload, sys string) []result {
	var out []result
	for _, r := range rp.results {
		if r.Workload == w && r.System == sys {
			out = append(out, r)
		}
	}
	return out
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, err := benchproc.StatusKB(b, "MemTotal:"); err == nil {
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%d cores (%s)%s, %s/%s", runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH)
}

func fmtRate(x float64) string {
	switch {
	case x >= 1e6:
		return strconv.FormatFloat(x/1e6, 'f', 2, 64) + " M"
	case x >= 1e3:
		return strconv.FormatFloat(x/1e3, 'f', 1, 64) + " k"
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

func ratio(a, b float64) string {
	if b == 0 || a == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// codecCell shows the codec a system was given and the codecs found in
// the target's batches: "default → snappy", "lz4 → lz4".
func codecCell(set, found string) string {
	if found == "" {
		found = "?"
	}
	return set + " → " + found
}

// fmtRatio prints a ratio with two decimals, or "–" when unknown.
func fmtRatio(x float64) string {
	if x == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
}

// markdown is the report of latest.md; the same text is printed.
func (rp *report) markdown() string {
	c := rp.c
	var s strings.Builder
	fmt.Fprintf(&s, "# Side-by-side replication benchmark\n\n")
	fmt.Fprintf(&s, "- Date: %s (run %s, %s)\n", rp.started.UTC().Format("2006-01-02 15:04 MST"), rp.runID,
		rp.finished.Sub(rp.started).Round(time.Second))
	fmt.Fprintf(&s, "- Apache Kafka %s brokers (one broker per cluster, KRaft) and Apache MirrorMaker 2 %s in dedicated mode (tasks.max=%d, JVM `%s`)\n",
		c.kafkaVersion, c.kafkaVersion, c.mm2Tasks, c.mm2JavaOpts)
	if c.revision != "" {
		fmt.Fprintf(&s, "- kmirror revision: %s\n", c.revision)
	}
	fmt.Fprintf(&s, "- Machine: %s, shared with both brokers; 1-minute load average %.2f at the end\n", machine(), rp.loadEnd)
	fmt.Fprintf(&s, "- %d partitions, %d repetitions, systems alternating (order rotated every repetition)\n", c.partitions, c.reps)
	fmt.Fprintf(&s, "- Producer compression of the systems: `%s` on the uncompressed workloads", c.compression)
	if slices.ContainsFunc(c.workloads, workload.compressed) {
		var parts []string
		for _, sys := range c.systems {
			parts = append(parts, fmt.Sprintf("%s `%s`", sys, c.codecs[sys]))
		}
		fmt.Fprintf(&s, "; on the compressed workloads %s (`default`: no setting, the system's own default)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&s, "\n")
	for _, w := range c.workloads {
		fmt.Fprintf(&s, "- Workload %s: %s", w, rp.describe(w))
		if sm := rp.sourceSummary(w); sm.SourceBytes > 0 {
			fmt.Fprintf(&s, "; %.1f MB of payload stored in %.1f MB on the source (payload / stored %.2f)",
				sm.PayloadBytes/1e6, sm.SourceBytes/1e6, sm.PayloadBytes/sm.SourceBytes)
		}
		fmt.Fprintf(&s, "\n")
	}
	if c.liveRecords > 0 {
		fmt.Fprintf(&s, "- Latency phase: %d records at %d records/s after the copy\n", c.liveRecords, c.liveRate)
	}
	fmt.Fprintf(&s, "- Command: `%s`\n", c.command)
	if len(c.kmirrorEnv) > 0 {
		fmt.Fprintf(&s, "- Environment added to kmirror and kmirror-shallow only: `%s`\n", strings.Join(c.kmirrorEnv, " "))
	}
	s.WriteString("\n")

	fmt.Fprintf(&s, "Medians over the runs. Payload: key + value + header keys and values of the records (Kafka's record and batch framing not counted). ")
	fmt.Fprintf(&s, "records/s and MB/s: bulk copy of a preloaded topic, first to last record appended on the target (min–max over runs in parentheses; MB = 10^6 bytes of payload). ")
	fmt.Fprintf(&s, "Latency: target append time − source append time of records produced at a steady rate after the copy (both topics use LogAppendTime). ")
	fmt.Fprintf(&s, "Peak RSS: VmHWM of the process; CPU s: user+system CPU of the process over the whole run (start-up, copy, latency phase); copy CPU s: during the bulk copy only; copy CPU s/GB: copy CPU s per 10^9 bytes of payload. Start-up: process start to the first record on the target. ")
	fmt.Fprintf(&s, "Codec: the producer codec the system was given → the codecs of the batches found on the target. Target/source bytes: DescribeLogDirs size of the remote topic over that of the source topic, read after the process stopped.\n\n")

	fmt.Fprintf(&s, "| Workload | System | records/s | MB/s | p50 latency ms | p99 latency ms | peak RSS MiB | CPU s | copy CPU s | copy CPU s/GB | target/source bytes | codec | start-up s | runs |\n")
	fmt.Fprintf(&s, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, w := range c.workloads {
		for _, sys := range c.systems {
			sm := summarize(rp.byWorkload(w, sys))
			runs := strconv.Itoa(sm.Runs)
			if sm.Failed > 0 {
				runs += fmt.Sprintf(" (%d failed)", sm.Failed)
			}
			if sm.Runs == 0 {
				fmt.Fprintf(&s, "| %s | %s | – | – | – | – | – | – | – | – | – | – | – | %s |\n", w, systemNames[sys], runs)
				continue
			}
			lat50, lat99 := "–", "–"
			if c.liveRecords > 0 {
				lat50, lat99 = fmt.Sprintf("%.0f", sm.LatP50Ms), fmt.Sprintf("%.0f", sm.LatP99Ms)
			}
			fmt.Fprintf(&s, "| %s | %s | %s (%s–%s) | %.1f | %s | %s | %.0f | %.1f | %.1f | %.2f | %s | %s | %.1f | %s |\n",
				w, systemNames[sys], fmtRate(sm.RecordsPerS), fmtRate(sm.MinRPS), fmtRate(sm.MaxRPS), sm.MBPerS,
				lat50, lat99, sm.PeakRSSMB, sm.CPUS, sm.CopyCPUS, sm.CPUPerGB, fmtRatio(sm.StoredRatio), codecCell(sm.Codec, sm.TargetCodecs), sm.StartupS, runs)
		}
	}
	if slices.Contains(c.systems, sysKmirror) && (slices.Contains(c.systems, sysMM2) || slices.Contains(c.systems, sysBare)) {
		fmt.Fprintf(&s, "\n| Workload | kmirror / MM2 records/s | kmirror / bare records/s | kmirror / MM2 peak RSS | kmirror / MM2 copy CPU s | kmirror / bare copy CPU s/GB | kmirror / MM2 p99 latency |\n")
		fmt.Fprintf(&s, "| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, w := range c.workloads {
			k := summarize(rp.byWorkload(w, sysKmirror))
			m := summarize(rp.byWorkload(w, sysMM2))
			b := summarize(rp.byWorkload(w, sysBare))
			fmt.Fprintf(&s, "| %s | %s | %s | %s | %s | %s | %s |\n", w, ratio(k.RecordsPerS, m.RecordsPerS), ratio(k.RecordsPerS, b.RecordsPerS),
				ratio(k.PeakRSSMB, m.PeakRSSMB), ratio(k.CopyCPUS, m.CopyCPUS), ratio(k.CPUPerGB, b.CPUPerGB), ratio(k.LatP99Ms, m.LatP99Ms))
		}
	}

	fmt.Fprintf(&s, "\n## Every run\n\n")
	fmt.Fprintf(&s, "| Workload | Rep | Order | System | load | records/s | p50 ms | p99 ms | peak RSS MiB | CPU s | copy CPU s | copy CPU s/GB | target/source bytes | codec | start-up s |\n")
	fmt.Fprintf(&s, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rp.results {
		if r.Err != "" {
			fmt.Fprintf(&s, "| %s | %d | %d | %s | %.2f | failed: %s | | | | | | | | | |\n", r.Workload, r.Rep, r.Order, systemNames[r.System], r.Load1,
				strings.ReplaceAll(truncate(r.Err, 200), "|", "/"))
			continue
		}
		fmt.Fprintf(&s, "| %s | %d | %d | %s | %.2f | %s | %.0f | %.0f | %.0f | %.1f | %.1f | %.2f | %s | %s | %.1f |\n", r.Workload, r.Rep, r.Order, systemNames[r.System], r.Load1,
			fmtRate(r.RecordsPerS), r.LatP50Ms, r.LatP99Ms, r.PeakRSSMB, r.CPUS, r.CopyCPUS, r.CPUPerGB, fmtRatio(r.StoredRatio), codecCell(r.Codec, r.TargetCodecs), r.StartupS)
	}

	fmt.Fprintf(&s, "\n## For the README\n\n")
	s.WriteString(rp.readmeTable())
	return s.String()
}

// describe says what the records of w are.
func (rp *report) describe(w workload) string {
	var d string
	if w.Kind == kindJSON {
		d = "JSON order events of about 1 KiB (internal/bench/events, seed 1), keyed by customer, 4 headers"
	} else {
		d = fmt.Sprintf("random (incompressible) values of %d bytes, keys of 10 bytes, no headers", w.Size)
	}
	if w.compressed() {
		return d + ", produced with " + w.Codec
	}
	return d + ", uncompressed"
}

// sourceSummary is the median source size and payload of w over all runs.
func (rp *report) sourceSummary(w workload) summary {
	var rs []result
	for _, r := range rp.results {
		if r.Workload == w {
			rs = append(rs, r)
		}
	}
	return summarize(rs)
}

// readmeTable is the performance table of the project README: the medians
// of every workload and system, in the README's columns.
func (rp *report) readmeTable() string {
	var s strings.Builder
	fmt.Fprintf(&s, "| Workload | System | records/s | MB/s | p50 / p99 latency ms | peak RSS MiB | CPU s of the copy | CPU s per GB | target / source bytes | codec |\n")
	fmt.Fprintf(&s, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, w := range rp.c.workloads {
		for _, sys := range rp.c.systems {
			sm := summarize(rp.byWorkload(w, sys))
			if sm.Runs == 0 {
				fmt.Fprintf(&s, "| %s | %s | failed | | | | | | | |\n", w, systemNames[sys])
				continue
			}
			lat := "–"
			if rp.c.liveRecords > 0 {
				lat = fmt.Sprintf("%.0f / %.0f", sm.LatP50Ms, sm.LatP99Ms)
			}
			fmt.Fprintf(&s, "| %s | %s | %s (%s–%s) | %.1f | %s | %.0f | %.1f | %.2f | %s | %s |\n", w, systemNames[sys],
				fmtRate(sm.RecordsPerS), fmtRate(sm.MinRPS), fmtRate(sm.MaxRPS), sm.MBPerS, lat, sm.PeakRSSMB, sm.CopyCPUS,
				sm.CPUPerGB, fmtRatio(sm.StoredRatio), codecCell(sm.Codec, sm.TargetCodecs))
		}
	}
	return s.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// csvHeader names the columns of latest.csv, one row per run.
// The columns up to target_records are those of the first version of the
// file; kind (random or json) through stored_ratio came with the compressed
// workloads (payload_bytes: key+value+headers of the bulk topic; source_bytes
// and target_bytes: DescribeLogDirs sizes; codec: the producer codec the
// system was given, "default" for none; target_codecs: the codecs found in
// the target's batches, joined by "+").
const csvHeader = "run_id,workload,records,value_bytes,partitions,system,rep,order,start_utc,load1,startup_s,copy_s,records_per_s,mb_per_s," +
	"lat_p50_ms,lat_p99_ms,lat_max_ms,live_records,peak_rss_mib,cpu_s,copy_cpu_s,target_records," +
	"kind,source_codec,codec,target_codecs,payload_bytes,copy_cpu_s_per_gb,source_bytes,target_bytes,stored_ratio,error"

func (rp *report) csv() string {
	var s strings.Builder
	s.WriteString(csvHeader + "\n")
	for _, r := range rp.results {
		f := func(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }
		row := []string{rp.runID, r.Workload.id(), strconv.Itoa(r.Workload.Records), strconv.Itoa(r.Workload.Size),
			strconv.Itoa(rp.c.partitions), r.System, strconv.Itoa(r.Rep), strconv.Itoa(r.Order), r.Start.UTC().Format(time.RFC3339),
			f(r.Load1, 2), f(r.StartupS, 3), f(r.CopyS, 3), f(r.RecordsPerS, 0), f(r.MBPerS, 2),
			f(r.LatP50Ms, 1), f(r.LatP99Ms, 1), f(r.LatMaxMs, 1), strconv.Itoa(r.LiveRecords), f(r.PeakRSSMB, 1), f(r.CPUS, 2), f(r.CopyCPUS, 2),
			strconv.FormatInt(r.TargetRecords, 10),
			r.Workload.Kind, r.Workload.Codec, r.Codec, r.TargetCodecs, strconv.FormatInt(r.PayloadBytes, 10), f(r.CPUPerGB, 3),
			strconv.FormatInt(r.SourceBytes, 10), strconv.FormatInt(r.TargetBytes, 10), f(r.StoredRatio, 4), csvQuote(r.Err)}
		s.WriteString(strings.Join(row, ",") + "\n")
	}
	return s.String()
}

func csvQuote(s string) string {
	if s == "" {
		return ""
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
