package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestNuMTranslateMarksBelowLogStart: kmirror translate ("1. Look")
// showed a checkpoint below its target partition's log start as a plain
// "exact" translation, though remoteclusterutils marks it BelowLogStart
// and failover commits the log start there: the table and -json now say
// so, and keep the translation as the offset (what translateOffsets
// returns; translate commits nothing).
func TestNuMTranslateMarksBelowLogStart(t *testing.T) {
	d := &drFlow{pol: policyDefault(t)}
	d.flow.Source, d.flow.Target = "A", "B"
	below := cpAt("A.orders", 0, 10, 10, remoteclusterutils.TranslationExact, "", 0, 4*time.Second)
	below.BelowLogStart, below.LogStart = true, 100
	tr := map[string][]remoteclusterutils.PartitionTranslation{"orders-partial": {
		below,
		cpAt("A.orders", 1, 300, 300, remoteclusterutils.TranslationExact, "", 0, 4*time.Second),
	}}
	gs := groupReports(d, tr, planNow)
	if len(gs) != 1 || len(gs[0].Partitions) != 2 {
		t.Fatalf("reports: %+v", gs)
	}
	p0, p1 := gs[0].Partitions[0], gs[0].Partitions[1]
	if !p0.BelowLogStart || p0.LogStart != 100 || p0.Offset != 10 {
		t.Errorf("orders[0]: below_log_start %v, log_start %d, offset %d; want true, 100, 10", p0.BelowLogStart, p0.LogStart, p0.Offset)
	}
	if got, want := p0.translation(), "exact, BELOW THE TARGET LOG START 100 (failover commits the start)"; got != want {
		t.Errorf("orders[0] table: %q, want %q", got, want)
	}
	if p1.BelowLogStart || p1.LogStart != 0 || p1.translation() != "exact" {
		t.Errorf("orders[1]: below_log_start %v, log_start %d, %q; want false, 0, exact", p1.BelowLogStart, p1.LogStart, p1.translation())
	}
	// failover's own marking (Offset moved to the start, LogStart unset) reads as before.
	f := partitionReport{Translation: "exact", Offset: 100, BelowLogStart: true}
	if got, want := f.translation(), "exact, BELOW THE LOG START (its start committed)"; got != want {
		t.Errorf("failover row: %q, want %q", got, want)
	}
	var buf bytes.Buffer
	if err := writeReportJSON(&buf, translateReport{Flow: "A->B", Groups: gs, Summary: summarize(gs)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"offset": 10,`, `"below_log_start": true,`, `"log_start": 100`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("-json lacks %s:\n%s", want, buf.String())
		}
	}
	if got := strings.Count(buf.String(), `"log_start"`); got != 1 {
		t.Errorf("-json has %d log_start fields, want 1:\n%s", got, buf.String())
	}
}
