package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTranslateRecordsFallback: a checkpoint written by MM2 (unknown
// translation, 6 -> 4) on a remote topic whose copies carry their source
// offsets: translate reports it as the checkpoint gives it; translate
// -records reports 6, exact, from the copies, the checkpoint's 4 kept;
// a checkpoint beyond what was replicated keeps its translation with the
// reason; a partition without a checkpoint that the group committed on the
// source is translated from the copies when the source answers, and stays
// never committed (with a note) when it does not.
// recordsSetup builds, on kfake, a flow's target whose remote topic holds
// copies stamped with their source offsets: partition 0 #0-#9 with an MM2
// checkpoint 6 -> 4, partition 1 #0 with a checkpoint 5 -> 1 (beyond what
// was replicated), partition 2 #0-#4 without a checkpoint but the group's
// commit at 3 on the source. It returns the properties with the source up
// and with the source unreachable, and the group.
func recordsSetup(t *testing.T) (props, deadSource, group string) {
	t.Helper()
	props, deadSource, group, _ = recordsSetupPair(t)
	return props, deadSource, group
}

// recordsSetupPair is recordsSetup that also returns the clusters.
func recordsSetupPair(t *testing.T) (props, deadSource, group string, p *testcluster.Pair) {
	t.Helper()
	p = testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	remote := p.Source.Alias + "." + orders
	cps := p.Source.Alias + ".checkpoints.internal"
	testcluster.CreateTopic(t, &p.Target, remote, 3, nil)
	testcluster.CreateTopic(t, &p.Source, orders, 3, nil)
	srcID := testcluster.ClusterID(t, &p.Source) // what the copies' provenance names
	testcluster.CreateTopic(t, &p.Target, cps, 1, map[string]*string{"cleanup.policy": ptrTo("compact")})
	var copies []*kgo.Record
	for u := range 10 {
		copies = append(copies, &kgo.Record{Topic: remote, Partition: 0, Value: fmt.Appendf(nil, "%d", u),
			Headers: []kgo.RecordHeader{{Key: "kmirror-provenance", Value: fmt.Appendf(nil, "%s,#%d", srcID, u)}}})
	}
	copies = append(copies, &kgo.Record{Topic: remote, Partition: 1, Value: []byte("x"),
		Headers: []kgo.RecordHeader{{Key: "kmirror-provenance", Value: fmt.Appendf(nil, "%s,#0", srcID)}}})
	for u := range 5 { // partition 2: #0-#4 at 0-4, no checkpoint
		copies = append(copies, &kgo.Record{Topic: remote, Partition: 2, Value: fmt.Appendf(nil, "%d", u),
			Headers: []kgo.RecordHeader{{Key: "kmirror-provenance", Value: fmt.Appendf(nil, "%s,#%d", srcID, u)}}})
	}
	testcluster.Produce(t, &p.Target, copies...)
	group = p.Group("billing")
	var recs []*kgo.Record
	for _, c := range []checkpoint.Checkpoint{
		{Group: group, Topic: remote, Partition: 0, UpstreamOffset: 6, DownstreamOffset: 4},
		{Group: group, Topic: remote, Partition: 1, UpstreamOffset: 5, DownstreamOffset: 1},
	} {
		k, err := c.Key()
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.Value()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: cps, Key: k, Value: v}) // no kmirror-translation header: as MM2 writes
	}
	testcluster.Produce(t, &p.Target, recs...)
	// The group committed partition 2 on the source at 3 (no offset sync
	// covered it: no checkpoint).
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: orders, Partition: 2, At: 3, LeaderEpoch: -1})
	if _, err := testcluster.Admin(t, &p.Source).CommitOffsets(context.Background(), group, commit); err != nil {
		t.Fatal(err)
	}
	deadSource = writeVerifyProps(t, p.Source.Alias, p.Target.Alias, "127.0.0.1:1", strings.Join(p.Target.Brokers, ","), p.TopicsPattern())
	props = writeVerifyProps(t, p.Source.Alias, p.Target.Alias, strings.Join(p.Source.Brokers, ","), strings.Join(p.Target.Brokers, ","), p.TopicsPattern())

	return props, deadSource, group, p
}

func TestTranslateRecordsFallback(t *testing.T) {
	props, deadSource, group := recordsSetup(t)
	translate := func(code int, props string, args ...string) translateReport {
		t.Helper()
		got, out, errOut, _ := runDR(t, translateMain, append([]string{"-config", props, "-groups", group}, args...)...)
		if got != code {
			t.Fatalf("translate %q: exit %d\n%s\n%s", args, code, out, errOut)
		}
		var rep translateReport
		if len(args) > 0 && args[len(args)-1] == "-json" {
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
		}
		return rep
	}
	plain := translate(drRefused, props, "-json") // partition 2 never committed
	if ps := plain.Groups[0].Partitions; len(ps) != 3 || ps[0].Offset != 4 || ps[0].Translation != "unknown" || ps[0].From != "checkpoint" ||
		ps[0].RecordFallback != "" || !ps[2].NeverCommitted {
		t.Errorf("without -records: %+v", ps)
	}
	for _, cfg := range []string{props, deadSource} {
		code := drOK
		if cfg == deadSource {
			code = drRefused // partition 2 stays never committed
		}
		rep := translate(code, cfg, "-records", "-json")
		ps := rep.Groups[0].Partitions
		if len(ps) != 3 {
			t.Fatalf("partitions %+v", ps)
		}
		if g := ps[0]; g.SourceOffset != 6 || g.Offset != 6 || g.Translation != "exact" || g.Record != "record" || g.From != "record" ||
			g.CheckpointOffset != 4 || g.RereadMax != 0 {
			t.Errorf("partition 0 with -records: %+v, want 6 exact from the copies (checkpoint 4)", g)
		}
		if g := ps[1]; g.Offset != 1 || g.Translation != "unknown" ||
			g.RecordFallback != "the remote partition has not caught up with the source offset: the newest copy at 0 is of source offset 0, below 4" {
			t.Errorf("partition 1 with -records: %+v, want the checkpoint kept, not caught up", g)
		}
		g := ps[2]
		switch cfg {
		case props:
			if g.NeverCommitted || g.SourceOffset != 3 || g.Offset != 3 || g.Translation != "exact" || g.From != "record" ||
				g.CheckpointOffset != -1 || g.CheckpointAgeMs != 0 {
				t.Errorf("partition 2 with -records: %+v, want the source commit 3 translated to 3, exact, no checkpoint", g)
			}
			if s := rep.Summary; s.Exact != 2 || s.FromRecords != 2 || s.Unknown != 1 || s.NeverCommitted != 0 {
				t.Errorf("summary %+v", s)
			}
		default:
			if !g.NeverCommitted || g.Offset != -1 {
				t.Errorf("partition 2 with -records, the source gone: %+v, want never committed", g)
			}
		}
	}
	_, out, errOut, _ := runDR(t, translateMain, "-config", props, "-groups", group, "-records")
	for _, want := range []string{"exact (record; checkpoint 4)", "exact (record; no checkpoint)", "3 partition(s): 2 (2 from the copies) exact, 0 safe, 1 unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}
	if errOut != "" {
		t.Errorf("stderr with the source up: %s", errOut)
	}
	_, _, errOut, _ = runDR(t, translateMain, "-config", deadSource, "-groups", group, "-records")
	if !strings.Contains(errOut, "did not answer") {
		t.Errorf("stderr with the source gone lacks the note: %s", errOut)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestFailoverRecordsDryRun: failover -records, unplanned (the source
// gone), plans the commit of partition 0 at the copies' exact 6 (from
// "record", the checkpoint's 4 kept aside) and of partition 1 at its
// checkpoint; partition 2 has no checkpoint and no source to read the
// commit from: -uncommitted earliest commits the log start.
func TestFailoverRecordsDryRun(t *testing.T) {
	_, deadSource, group := recordsSetup(t)
	code, out, errOut, _ := runDR(t, failoverMain, "-config", deadSource, "-groups", group, "-records", "-dry-run",
		"-source-timeout", "500ms", "-uncommitted", "earliest", "-json")
	if code != drOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rep failoverReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Mode != modeUnplanned || len(rep.Groups) != 1 || len(rep.Groups[0].Partitions) != 3 {
		t.Fatalf("report %+v", rep)
	}
	ps := rep.Groups[0].Partitions
	if g := ps[0]; g.Offset != 6 || g.From != "record" || g.Translation != "exact" || g.CheckpointOffset != 4 {
		t.Errorf("partition 0: %+v, want 6 from the copies", g)
	}
	if g := ps[1]; g.Offset != 1 || g.From != "checkpoint" || g.RecordFallback == "" {
		t.Errorf("partition 1: %+v, want the checkpoint's 1 with the reason", g)
	}
	if g := ps[2]; g.Offset != 0 || g.From != "earliest" {
		t.Errorf("partition 2: %+v, want the log start", g)
	}
	// Without -records, partition 0 is the checkpoint's 4.
	code, out, errOut, _ = runDR(t, failoverMain, "-config", deadSource, "-groups", group, "-dry-run",
		"-source-timeout", "500ms", "-uncommitted", "earliest", "-json")
	rep = failoverReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != drOK {
		t.Fatalf("exit %d %v\n%s", code, err, errOut)
	}
	if g := rep.Groups[0].Partitions[0]; g.Offset != 4 || g.From != "checkpoint" {
		t.Errorf("partition 0 without -records: %+v", g)
	}
}

// TestFailoverRecordsPlannedDryRun: planned (the source answers), the
// group's commit of partition 2 on the source, which no checkpoint holds,
// is translated from the copies: the catch-up is reached without
// -uncommitted and the plan commits 3 there; without -records the
// catch-up is not reached (no checkpoint yet).
func TestFailoverRecordsPlannedDryRun(t *testing.T) {
	props, _, group, p := recordsSetupPair(t)
	testcluster.CreateTopic(t, &p.Target, "mm2-offsets."+p.Source.Alias+".internal", 1, map[string]*string{"cleanup.policy": ptrTo("compact")})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", group, "-records", "-dry-run", "-wait", "5s", "-json")
	var rep failoverReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("exit %d %v\n%s\n%s", code, err, out, errOut)
	}
	if code != drOK || rep.Mode != modePlanned || len(rep.Groups) != 1 || len(rep.Groups[0].Partitions) != 3 {
		t.Fatalf("exit %d, report %s\n%s", code, out, errOut)
	}
	if g := rep.Groups[0].Partitions[2]; g.Offset != 3 || g.SourceOffset != 3 || g.From != "record" || g.Translation != "exact" || g.NeverCommitted {
		t.Errorf("partition 2: %+v, want the source commit 3 at 3 from the copies", g)
	}
	// Without -records the commit has no checkpoint: the catch-up is not
	// reached.
	code, out, errOut, _ = runDR(t, failoverMain, "-config", props, "-groups", group, "-dry-run", "-wait", "1s", "-json")
	if code != drRefused || !strings.Contains(out, "no checkpoint yet") {
		t.Errorf("without -records: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestFailoverRecordsCommits: the unplanned failover of
// TestFailoverRecordsDryRun without -dry-run commits what it planned on
// the target: partition 0 at the copies' exact 6 (the checkpoint says 4),
// partition 1 at its checkpoint 1, partition 2 at the log start.
func TestFailoverRecordsCommits(t *testing.T) {
	_, deadSource, group, p := recordsSetupPair(t)
	code, out, errOut, _ := runDR(t, failoverMain, "-config", deadSource, "-groups", group, "-records",
		"-source-timeout", "500ms", "-uncommitted", "earliest", "-json")
	if code != drOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if rep := decodeFailover(t, out); len(rep.Groups) != 1 || rep.Groups[0].Action != actionCommitted {
		t.Fatalf("report %s", out)
	}
	remote := p.Source.Alias + "." + p.Topic("orders")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(testcluster.Client(t, &p.Target)).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == remote {
			got[o.Partition] = o.At
		}
	})
	if d := cmp.Diff(map[int32]int64{0: 6, 1: 1, 2: 0}, got); d != "" {
		t.Errorf("committed on the target (-want +got):\n%s\nreport %s", d, out)
	}
}
