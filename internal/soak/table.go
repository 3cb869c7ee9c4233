package main

import (
	"fmt"
	"strings"
	"time"
)

// row is one line of a mode's table: a fault and what verify found after
// it, or the mode's final whole-topic check.
type row struct {
	Fault      string
	FaultTime  time.Duration // first injection to the last one lifted
	Produced   int64         // source records in the compared window
	Replicated int64         // of them, found on the target
	Lost       int64         // missing and in no reported gap: must be 0
	InGap      int64         // missing and in a gap the runner reported
	Duplicated int64         // extra copies (replays)
	Recover    time.Duration // fault lifted to every partition caught up; -1: not measured
	RSSPeak    int64         // bytes, the largest runner process
	HeldPeak   int64         // payload bytes of the records fetched and not yet produced, largest runner
	Notes      []string
	Failures   []string
}

func (r *row) fail(msg string) { r.Failures = append(r.Failures, msg) }
func (r *row) note(msg string) { r.Notes = append(r.Notes, msg) }

// modeResult is one scenario's table.
type modeResult struct {
	m        mode
	rows     []row
	baseRSS  int64 // RSS before the first fault
	bound    int64 // documented RSS bound for this configuration
	setupErr string
	elapsed  time.Duration
}

func (mr *modeResult) failed() bool {
	if mr.setupErr != "" {
		return true
	}
	for _, r := range mr.rows {
		if len(r.Failures) > 0 {
			return true
		}
	}
	return false
}

// result is a whole run.
type result struct {
	profile      string
	seed         int64
	started      time.Time
	elapsed      time.Duration
	kafka        string
	machine      string
	rate, size   int
	partitions   int
	modes        []*modeResult
	sessionTimes string
}

func (r *result) failed() bool {
	for _, m := range r.modes {
		if m.failed() {
			return true
		}
	}
	return len(r.modes) == 0
}

func mib(b int64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(b)/(1<<20))
}

func dur(d time.Duration) string {
	if d < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", d.Seconds())
}

// header is the markdown table header.
const header = "| # | fault | fault s | produced | replicated | lost | in reported gap | duplicated | recover s | RSS peak MiB | held peak MiB | verdict |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|\n"

// line renders a row of the markdown table.
func (r *row) line(i int) string {
	verdict := "ok"
	if len(r.Failures) > 0 {
		verdict = "**FAIL**"
	}
	idx := fmt.Sprint(i)
	if i == 0 {
		idx = "Σ"
	}
	return fmt.Sprintf("| %s | %s | %s | %d | %d | %d | %d | %d | %s | %s | %s | %s |\n", idx, r.Fault, dur(r.FaultTime),
		r.Produced, r.Replicated, r.Lost, r.InGap, r.Duplicated, dur(r.Recover), mib(r.RSSPeak), mib(r.HeldPeak), verdict)
}

// markdown renders the run: a heading, one table per mode, the failures
// and notes.
func (r *result) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Soak, profile %s (%s)\n\n", r.profile, r.started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Apache Kafka %s (two single-broker KRaft clusters, internal/realkafka/kafka.sh); %s; "+
		"%d partitions, %d records/s of %d-byte values, seed %d; %s in all.\n",
		r.kafka, r.machine, r.partitions, r.rate, r.size, r.seed, r.elapsed.Round(time.Second))
	for _, m := range r.modes {
		fmt.Fprintf(&b, "\n### %s (%s)\n\n", m.m.title, m.elapsed.Round(time.Second))
		if m.setupErr != "" {
			fmt.Fprintf(&b, "**FAILED** to set up: %s\n", m.setupErr)
			continue
		}
		fmt.Fprintf(&b, "RSS before the first fault %s MiB; documented bound %s MiB.\n\n", mib(m.baseRSS), mib(m.bound))
		b.WriteString(header)
		for i, rw := range m.rows {
			n := i + 1
			if i == len(m.rows)-1 && strings.HasPrefix(rw.Fault, "final") {
				n = 0
			}
			b.WriteString(rw.line(n))
		}
		var extra []string
		for i, rw := range m.rows {
			for _, f := range rw.Failures {
				extra = append(extra, fmt.Sprintf("- row %d FAIL: %s", i+1, f))
			}
			for _, n := range rw.Notes {
				extra = append(extra, fmt.Sprintf("- row %d: %s", i+1, n))
			}
		}
		if len(extra) > 0 {
			b.WriteString("\n" + strings.Join(extra, "\n") + "\n")
		}
	}
	return b.String()
}
