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
		"GROUP  ON secondary    PARTITION  POSITION ON secondary  ON primary  OFFSET ON primary  FROM  TRANSLATION",
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
