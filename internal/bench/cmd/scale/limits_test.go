package main

import (
	"strings"
	"testing"
)

func TestMaxPartsPerBroker(t *testing.T) {
	// The project machine: ulimit -n 20000, vm.max_map_count 65530.
	if got := maxPartsPerBroker(20000, 65530); got != 18000 {
		t.Fatalf("maxPartsPerBroker(20000, 65530) = %d, want 18000 (open files bind)", got)
	}
	if got := maxPartsPerBroker(1<<20, 65530); got != 30265 {
		t.Fatalf("maxPartsPerBroker(1<<20, 65530) = %d, want 30265 (memory maps bind)", got)
	}
}

func TestPerBrokerAndFits(t *testing.T) {
	for _, tc := range []struct{ partitions, brokers, want int }{
		{20000, 1, 20100},
		{20000, 2, 10050},
		{20001, 2, 10051},
		{20000, 0, 20100}, // unknown broker count counts as one
	} {
		if got := perBroker(tc.partitions, tc.brokers); got != tc.want {
			t.Errorf("perBroker(%d, %d) = %d, want %d", tc.partitions, tc.brokers, got, tc.want)
		}
	}
	big := shape{Topics: 2000, Partitions: 10, Records: 20, Groups: 5000, GroupTopics: 4}
	one := limits{MaxParts: 18000, Brokers: 1}
	two := limits{MaxParts: 18000, Brokers: 2}
	if one.fits(big) {
		t.Errorf("20 000 partitions fit one broker of 18 000")
	}
	if !two.fits(big) {
		t.Errorf("20 000 partitions do not fit two brokers of 18 000 (10 050 each)")
	}
	huge := shape{Topics: 4000, Partitions: 10, Records: 20, Groups: 5000, GroupTopics: 4}
	if two.fits(huge) {
		t.Errorf("40 000 partitions fit two brokers of 18 000")
	}
}

func TestReportBrokersPerCluster(t *testing.T) {
	c := &config{revision: "r", kafkaVersion: "4.3.1", interval: 5e9}
	for _, tc := range []struct {
		brokers int
		want    string
	}{{0, "(one broker per cluster)"}, {1, "(one broker per cluster)"}, {2, "(2 brokers per cluster)"}} {
		rep := report(c, limits{Brokers: tc.brokers}, nil)
		first, _, _ := strings.Cut(strings.SplitN(rep, "\n", 4)[2], "\n")
		if !strings.HasSuffix(first, tc.want) {
			t.Errorf("brokers %d: header line %q, want suffix %q", tc.brokers, first, tc.want)
		}
	}
}

func TestCSVBrokersPerCluster(t *testing.T) {
	r := result{Shape: shape{Topics: 2000, Partitions: 10, Records: 20, Groups: 5000, GroupTopics: 4}, System: sysKmirror}
	lines := strings.Split(strings.TrimSpace(csvOf([]result{r}, 2)), "\n")
	if len(lines) != 2 {
		t.Fatalf("csv has %d lines, want 2: %q", len(lines), lines)
	}
	if !strings.HasSuffix(lines[0], ",pre_idle_rss_mb,brokers_per_cluster") {
		t.Errorf("header %q does not end with brokers_per_cluster", lines[0])
	}
	if !strings.HasPrefix(lines[1], "2000x10x20:5000x4,kmirror,") || !strings.HasSuffix(lines[1], ",2") {
		t.Errorf("row %q: want shape 2000x10x20:5000x4, system kmirror, brokers 2 last", lines[1])
	}
	if got := strings.Count(lines[0], ","); got != strings.Count(lines[1], ",") {
		t.Errorf("header has %d commas, row %d", got, strings.Count(lines[1], ","))
	}
	if row := strings.Split(strings.TrimSpace(csvOf([]result{r}, 0)), "\n")[1]; !strings.HasSuffix(row, ",1") {
		t.Errorf("unknown broker count: row %q, want 1 last", row)
	}
}
