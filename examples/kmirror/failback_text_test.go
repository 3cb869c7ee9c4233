package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestFailbackTextNamesTheClusters: the text report names the clusters by
// their aliases, not by the README runbook's letters (a new user's try,
// stop 38: "records written to primary ... (never on B; ...)").
func TestFailbackTextNamesTheClusters(t *testing.T) {
	r := &failbackReport{Flow: "primary->secondary", Reverse: "secondary->primary", Rerun: true,
		Groups: []groupReport{{Group: "g", Action: "committed", Partitions: []partitionReport{
			{SourceTopic: "primary.orders", Partition: 0, SourceOffset: 100, Topic: "orders", Offset: 100, From: "run"}}}},
		Outage: []outageRange{{Topic: "orders", Partition: 0, From: 100, To: 115, Count: 15}}, OutageTotal: 15}
	var out bytes.Buffer
	r.writeText(&out)
	for _, want := range []string{
		"flow primary->secondary: an earlier failback committed: the groups it committed keep their offsets on primary where they are past their translation",
		"GROUP  ON secondary    PARTITION  POSITION ON secondary  ON primary  NOW ON primary  OFFSET ON primary  MOVE  FROM  TRANSLATION",
		"records written to primary after replication stopped (never on secondary; the groups read each once): 15",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), " B") || strings.Contains(out.String(), " A ") {
		t.Errorf("report names a cluster by letter:\n%s", out.String())
	}
}

// TestPlannedCommitText (a new user's finding): a failover refused for
// one group's live members printed "group other: commit; ..." for the
// groups it had planned to move, right above "result: refused", which
// reads as if they were committed. A planned commit not done now reads
// "would commit", saying why; done and refused groups read as before.
func TestPlannedCommitText(t *testing.T) {
	for _, tc := range []struct {
		action string
		dryRun bool
		result string
		want   string
	}{
		{actionCommit, false, "refused", "would commit (not committed: run refused)"},
		{actionCommit, true, "ok", "would commit (dry run)"},
		{actionCommitted, false, "ok", actionCommitted},
		{actionRefused, false, "refused", actionRefused},
	} {
		if got := actionText(tc.action, tc.dryRun, tc.result); got != tc.want {
			t.Errorf("actionText(%q, dry run %v, %q) = %q, want %q", tc.action, tc.dryRun, tc.result, got, tc.want)
		}
	}
	r := &failoverReport{Flow: "A->B", Mode: modePlanned, Result: "refused", ExitCode: drRefused,
		Groups: []groupReport{{Group: "busy", Action: actionRefused, Reason: "1 member(s) on B"}, {Group: "idle", Action: actionCommit}}}
	var out bytes.Buffer
	r.writeText(&out)
	for _, want := range []string{"group busy: refused: 1 member(s) on B\n", "group idle: would commit (not committed: run refused); re-reads <= 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
