package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
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

// TestBrkOInterruptedSaysSo: Ctrl-C while verify listed the clusters
// printed only "kmirror verify: context canceled" (exit 3); it says that
// the run was interrupted and nothing compared. Interrupted during the
// comparison (here at the source's first fetch), the partial report is
// printed, and the message says what it covers.
func TestBrkOInterruptedSaysSo(t *testing.T) {
	p := testcluster.NewFakePair(t, "A", "B")
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.CreateTopic(t, &p.Target, "A."+topic, 1, nil)
	for _, c := range []*testcluster.Cluster{&p.Source, &p.Target} {
		tp := topic
		if c == &p.Target {
			tp = "A." + topic
		}
		testcluster.Produce(t, c, &kgo.Record{Topic: tp, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1_700_000_000_000)})
	}
	props := writeVerifyProps(t, "A", "B", p.Source.Brokers[0], p.Target.Brokers[0], p.TopicsPattern())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := verifyMain(ctx, []string{"-config", props, "-progress", "0"}, &out, &errOut)
	want := "kmirror verify: interrupted (context canceled) before the comparison started: nothing was compared; run kmirror verify again\n"
	if code != verifyIncomplete || errOut.String() != want || out.Len() != 0 {
		t.Errorf("cancelled before the start: exit %d, stdout %q, stderr %q; want exit %d, stderr %q", code, out.String(), errOut.String(), verifyIncomplete, want)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	p.Source.Fake.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		cancel()
		return nil, nil, false
	})
	out.Reset()
	errOut.Reset()
	code = verifyMain(ctx, []string{"-config", props, "-progress", "0", "-json"}, &out, &errOut)
	want = "kmirror verify: interrupted (context canceled): the report covers what was read before; partitions not compared to the end say so; run kmirror verify again for a complete result\n"
	if code != verifyIncomplete || errOut.String() != want {
		t.Errorf("cancelled during the comparison: exit %d, stderr %q; want exit %d, stderr %q", code, errOut.String(), verifyIncomplete, want)
	}
	var rep verify.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is no JSON report: %v\n%s", err, out.String())
	}
	if rep.Totals.Errors != 1 || rep.Totals.Compared != 0 || rep.Topics[0].Partitions[0].Error != "context canceled" {
		t.Errorf("partial report: totals %+v, partition error %q; want 1 error, 0 compared, \"context canceled\"", rep.Totals, rep.Topics[0].Partitions[0].Error)
	}
}

// TestBrkOUnreachableSaysWhatToCheck: a cluster that no broker answers
// for said only "unable to dial: dial tcp 127.0.0.1:1: connect:
// connection refused"; it names the key to check. Exit code 3.
func TestBrkOUnreachableSaysWhatToCheck(t *testing.T) {
	p := testcluster.NewFakePair(t, "A", "B")
	testcluster.CreateTopic(t, &p.Source, p.Topic("orders"), 1, nil)
	props := writeVerifyProps(t, "A", "B", p.Source.Brokers[0], "127.0.0.1:1", p.TopicsPattern())
	code, out, errOut := runVerify(t, "-config", props, "-progress", "0", "-timeout", "2s")
	want := `kmirror verify: target cluster "B": reading the cluster ID: unable to dial: dial tcp 127.0.0.1:1: connect: connection refused (no broker answers at that address: check B.bootstrap.servers and that the cluster is up)` + "\n"
	if code != verifyIncomplete || errOut != want || out != "" {
		t.Errorf("exit %d, stdout %q, stderr\n%q\nwant exit %d, stderr\n%q", code, out, errOut, verifyIncomplete, want)
	}
}

// TestBrkOSinceInTheFuture: -since with a time after now (a wrong year)
// compared no record and exited 0 ("OK: 0 source records compared"),
// passing a gate on a typo; it is a usage error naming the value.
func TestBrkOSinceInTheFuture(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	_, err := parseVerifyFlags([]string{"-config", "x", "-since", "2026-02-28T10:00:00Z"}, &bytes.Buffer{}, now)
	want := `-since "2026-02-28T10:00:00Z" is in the future (now 2025-03-01T12:00:00Z): no record would be compared; give a past time or a duration back from now (2h)`
	var ue *usageError
	if !errors.As(err, &ue) || err.Error() != want {
		t.Errorf("error %v (%T), want the usage error %q", err, err, want)
	}
	code, out, errOut := runVerify(t, "-config", "x", "-since", "2999-01-01T00:00:00Z")
	if code != verifyUsage || out != "" || !strings.HasPrefix(errOut, `kmirror verify: -since "2999-01-01T00:00:00Z" is in the future (now `) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and the message", code, out, errOut, verifyUsage)
	}
}

// TestBrkOUsageListsExitCodes: kmirror verify -h listed the flags only,
// though a fail-over drill gates on its exit code (translate, failover
// and failback -h list theirs): a script had to read the README.
func TestBrkOUsageListsExitCodes(t *testing.T) {
	code, out, errOut := runVerify(t, "-h")
	if code != verifyOK || out != "" {
		t.Fatalf("verify -h: exit %d, stdout %q", code, out)
	}
	want := "usage: kmirror verify -config FILE [-flow 'A->B'] [-topics REGEX] [-last N | -since TIME] [-json]\n\n" +
		"Compares each source topic of the flow with its remote topic on the target, partition by\n" +
		"partition, by content (key, value, headers, timestamp): the report goes to stdout, progress\n" +
		"(records read on both sides) to stderr. Exit codes: 0 every record compared is on the target,\n" +
		"1 records missing, altered, out of order or unexpected (or duplicated, with -exactly-once),\n" +
		"2 bad flags or configuration, or nothing selected, 3 a cluster unreachable, a topic or partition\n" +
		"not compared, or interrupted.\n\nflags:\n  -catch-up duration\n"
	if !strings.HasPrefix(errOut, want) {
		t.Errorf("verify -h:\n%s\nwant it to start with\n%s", errOut, want)
	}
}
