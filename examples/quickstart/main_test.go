package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestQuickstart runs the quickstart in-process with 300 records per
// topic and checks its report: every record verified, no lag, and the
// bytes column (keys, values, header keys and values, computed here from
// the workload's definition) equal to what the engine counted.
func TestQuickstart(t *testing.T) {
	const n = 300
	var out bytes.Buffer
	if err := run(&out, n, false); err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out.String())
	}
	report := out.String()

	// The payload of one topic's n records, from the workload's definition.
	var want int64
	for i := range n {
		want += int64(len(fmt.Sprintf("customer-%d", i%997)))
		if i%10 != 9 { // every tenth is a tombstone
			want += int64(len(fmt.Sprintf(`{"id":%d,"amount":%d.%02d,"currency":"USD"}`, i, i%500, i%100)))
		}
		want += int64(len("trace-id") + 16 + len("source") + len("quickstart"))
	}

	row := regexp.MustCompile(`(?m)^(us-east-1\.\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$`)
	rows := row.FindAllStringSubmatch(report, -1)
	if len(rows) != 2 {
		t.Fatalf("%d table rows, want 2:\n%s", len(rows), report)
	}
	var tableBytes int64
	for i, r := range rows {
		wantTopic, wantParts := []string{"us-east-1.orders", "us-east-1.payments"}[i], []string{"6", "3"}[i]
		b, _ := strconv.ParseInt(r[5], 10, 64)
		if r[1] != wantTopic || r[2] != wantParts || r[3] != strconv.Itoa(n) || r[4] != strconv.Itoa(n) || b != want || r[6] != "0" {
			t.Errorf("row %q: want %s, %s partitions, %d records, %d verified, %d bytes, lag 0", r[0], wantTopic, wantParts, n, n, want)
		}
		tableBytes += b
	}
	m := regexp.MustCompile(`replicated (\d+) records, (\d+) bytes`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no summary line:\n%s", report)
	}
	if m[1] != strconv.Itoa(2*n) || m[2] != strconv.FormatInt(tableBytes, 10) {
		t.Errorf("summary: %s records, %s bytes counted by the engine; want %d records and the table's %d bytes", m[1], m[2], 2*n, tableBytes)
	}
	if !strings.HasSuffix(report, "all records replicated with identical keys, values, headers, timestamps and order (plus the kmirror-provenance header naming the source cluster)\n") {
		t.Errorf("report does not end with the verification line:\n%s", report)
	}
}

// TestNuMQuickstartRecordsBelowOne: -records 0 or a negative count is
// refused before anything starts, with a message naming the flag, instead
// of "mirror: closed" (the report closed the Mirror before it ran).
func TestNuMQuickstartRecordsBelowOne(t *testing.T) {
	for _, n := range []int{0, -5} {
		var out bytes.Buffer
		err := run(&out, n, false)
		want := fmt.Sprintf("-records %d: want at least 1 record per topic", n)
		if err == nil || err.Error() != want {
			t.Errorf("run(%d) = %v, want %q", n, err, want)
		}
		if out.Len() != 0 {
			t.Errorf("run(%d) printed %q, want nothing", n, out.String())
		}
	}
}
