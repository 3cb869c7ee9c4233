package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/bench/benchproc"
)

// secs formats seconds, "–" for a phase that did not complete.
func secs(v float64) string {
	if v < 0 {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func num(v float64, prec int) string {
	if v < 0 {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// report is the markdown report: the machine and limits, then one row per
// shape and system.
func report(c *config, lim limits, rs []result) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# Scale benchmark (issue 22)\n\n")
	fmt.Fprintf(&s, "- %s, kmirror %s, Kafka %s (%s per cluster)\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), c.revision, c.kafkaVersion, brokersPerCluster(lim.Brokers))
	if c.command != "" {
		fmt.Fprintf(&s, "- command: `%s`\n", c.command)
	}
	if len(c.kmirrorEnv) > 0 {
		fmt.Fprintf(&s, "- environment added to kmirror and kmirror-shallow only: `%s`\n", strings.Join(c.kmirrorEnv, " "))
	}
	fmt.Fprintf(&s, "- machine: %d cores, %d MiB; ulimit -n %d, vm.max_map_count %d (about %d partitions per broker); load average at the end %.2f\n",
		lim.Cores, lim.MemTotalMB, lim.NoFile, lim.MaxMapCnt, lim.MaxParts, benchproc.LoadAvg1())
	fmt.Fprintf(&s, "- tasks.max=%d, emit.checkpoints.interval.seconds=sync.group.offsets.interval.seconds=%d, %d-byte records; idle CPU over %s starting %s after the last checkpoint record\n\n",
		c.tasks, int(c.interval/time.Second), c.recordBytes, c.idle, c.idleWait)
	fmt.Fprintf(&s, "| shape | system | load1 start / idle | all partitions replicated s | all group partitions checkpointed s | checkpointed after replicated s | commit wave in checkpoints s (CPU s) | commit wave in target groups s | idle CPU %% of a core | idle requests/s | idle write syscalls/s | peak RSS MiB (before idle) | CPU s total | note |\n")
	fmt.Fprintf(&s, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		cp := secs(r.CheckpointedS)
		if r.CheckpointedS < 0 {
			cp = fmt.Sprintf("– (%d of %d)", r.Checkpointed, r.Shape.groupPartitions())
		}
		repl := secs(r.ReplicatedS)
		if r.ReplicatedS < 0 {
			repl = fmt.Sprintf("– (%d of %d)", r.Replicated, r.Shape.partitions())
		}
		wave := secs(r.WaveCpS)
		if r.WaveCpS >= 0 {
			wave += " (" + num(r.WaveCPUS, 2) + ")"
		}
		fmt.Fprintf(&s, "| %d partitions, %d groups (%d group partitions) | %s | %.1f / %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Shape.partitions(), r.Shape.Groups, r.Shape.groupPartitions(), r.System, r.Load1, num(r.Load1Idle, 1),
			repl, cp, after(r), wave, secs(r.WaveGroupsS), num(r.IdleCPUPct, 2), num(r.IdleReqPerS, 1), num(r.IdleWritesPS, 1),
			rss(r), num(r.CPUS, 1), strings.ReplaceAll(r.Err, "|", "/"))
	}
	return s.String()
}

// brokersPerCluster is "one broker", "2 brokers", ...
func brokersPerCluster(n int) string {
	if n <= 1 {
		return "one broker"
	}
	return strconv.Itoa(n) + " brokers"
}

// rss is the peak RSS over the run, and before the idle window when
// known (kmirror's /metrics is read in the idle window: a scrape's memory
// counts in the first figure only).
func rss(r result) string {
	if r.PreIdleRSSMB <= 0 {
		return num(r.PeakRSSMB, 0)
	}
	return num(r.PeakRSSMB, 0) + " (" + num(r.PreIdleRSSMB, 0) + ")"
}

// csvOf is one CSV row per run; brokers is the brokers per cluster (the
// smaller cluster's).
func csvOf(rs []result, brokers int) string {
	var s strings.Builder
	s.WriteString("shape,system,start,load1,load1_idle,replicated_s,replicated,checkpointed_s,checkpointed,cp_after_repl_s,wave_cp_s,wave_cpu_s,wave_groups_s,idle_cpu_pct,idle_req_per_s,idle_writes_per_s,peak_rss_mb,cpu_s,error,pre_idle_rss_mb,brokers_per_cluster\n")
	for _, r := range rs {
		fmt.Fprintf(&s, "%s,%s,%s,%.2f,%.2f,%.2f,%d,%.2f,%d,%.2f,%.2f,%.3f,%.2f,%.3f,%.2f,%.2f,%.1f,%.2f,%q,%.1f,%d\n",
			r.Shape.id(), r.System, r.Start.UTC().Format(time.RFC3339), r.Load1, r.Load1Idle, r.ReplicatedS, r.Replicated,
			r.CheckpointedS, r.Checkpointed, r.CpAfterReplS, r.WaveCpS, r.WaveCPUS, r.WaveGroupsS, r.IdleCPUPct, r.IdleReqPerS,
			r.IdleWritesPS, r.PeakRSSMB, r.CPUS, r.Err, r.PreIdleRSSMB, max(brokers, 1))
	}
	return s.String()
}

// after is the seconds from "every partition replicated" to "every group
// partition checkpointed" (negative: the checkpoints came first).
func after(r result) string {
	if r.ReplicatedS < 0 || r.CheckpointedS < 0 {
		return "–"
	}
	return strconv.FormatFloat(r.CheckpointedS-r.ReplicatedS, 'f', 1, 64)
}
