package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/verify"
)

// TestBrkOProgressSaysWhatItCounts: the progress line counted the records
// read on both sides as "records" ("5.8k/5.8k records" while the report
// said 2900 source records compared); it says that it counts both sides
// and splits them.
func TestBrkOProgressSaysWhatItCounts(t *testing.T) {
	var b bytes.Buffer
	pr := &progressPrinter{w: &b}
	pr.print(verify.Progress{Elapsed: 2 * time.Second, SourceRecords: 2900, TargetRecords: 2900, Estimate: 5800, Partitions: 3, PartitionsDone: 3})
	want := "verify: 100% read 5.8k/5.8k records of both sides (source 2.9k + target 2.9k), 2.9k records/s, ETA -, partitions 3/3\n"
	if b.String() != want {
		t.Errorf("progress line\n%q\nwant\n%q", b.String(), want)
	}
}
