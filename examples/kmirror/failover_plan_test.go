package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

var planNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func cpAt(topic string, p int32, src, off int64, kind remoteclusterutils.TranslationKind, record string, reread int64, age time.Duration) remoteclusterutils.PartitionTranslation {
	return remoteclusterutils.PartitionTranslation{Topic: topic, Partition: p, SourceOffset: src, Offset: off, Translation: kind,
		Record: record, Reread: reread, CheckpointTime: planNow.Add(-age)}
}

func neverCp(topic string, p int32) remoteclusterutils.PartitionTranslation {
	return remoteclusterutils.PartitionTranslation{Topic: topic, Partition: p, SourceOffset: -1, Offset: -1,
		Translation: remoteclusterutils.TranslationNone, Reread: -1, NeverCommitted: true}
}

// fromRecords is p as translate -records reports it when the copies
// translate it exactly to off.
func fromRecords(p remoteclusterutils.PartitionTranslation, off int64) remoteclusterutils.PartitionTranslation {
	p.CheckpointOffset, p.Offset = p.Offset, off
	p.Translation, p.Record, p.Reread = remoteclusterutils.TranslationExact, remoteclusterutils.KindRecord, 0
	return p
}

// withFallback is p as translate -records reports it when the copies do
// not translate it exactly.
func withFallback(p remoteclusterutils.PartitionTranslation, why string) remoteclusterutils.PartitionTranslation {
	p.RecordFallback = why
	return p
}

// missingOnTarget is p as TranslateDetailed reports a checkpoint of a
// partition the target does not have.
func missingOnTarget(p remoteclusterutils.PartitionTranslation) remoteclusterutils.PartitionTranslation {
	p.MissingOnTarget = true
	return p
}

// otherLog is p as TranslateDetailed reports a checkpoint translated for
// an earlier log of its remote topic.
func otherLog(p remoteclusterutils.PartitionTranslation) remoteclusterutils.PartitionTranslation {
	p.OtherLog, p.TranslatedFrom = true, [16]byte{9}
	return p
}

func upstream(t string) string { return strings.TrimPrefix(t, "A.") }

// TestPlanFailover: the decisions of kmirror failover, per case.
func TestPlanFailover(t *testing.T) {
	exact := func(p int32, off int64) remoteclusterutils.PartitionTranslation {
		return cpAt("A.orders", p, off, off, remoteclusterutils.TranslationExact, "", 0, 3*time.Second)
	}
	for _, c := range []struct {
		name     string
		in       planInput
		actions  map[string]string // group -> action
		offsets  map[string][]int64
		problems []string // substrings, in order
	}{
		{
			name: "unplanned, never committed fails by default",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail,
				Checkpoints: map[string][]remoteclusterutils.PartitionTranslation{"g": {exact(0, 50), neverCp("A.orders", 1)}}},
			actions:  map[string]string{"g": actionRefused},
			offsets:  map[string][]int64{"g": {50, -1}},
			problems: []string{"group g: never committed: A.orders[1]"},
		},
		{
			name: "unplanned, never committed at earliest and latest",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedEarliest,
				Checkpoints:  map[string][]remoteclusterutils.PartitionTranslation{"g": {exact(0, 50), neverCp("A.orders", 1)}},
				TargetStarts: map[string]map[int32]int64{"A.orders": {1: 7}}, TargetEnds: map[string]map[int32]int64{"A.orders": {1: 99}}},
			actions: map[string]string{"g": actionCommit},
			offsets: map[string][]int64{"g": {50, 7}},
		},
		{
			// A checkpoint of orders[2] after the remote topic was
			// re-created with two partitions (TranslateDetailed marks it
			// MissingOnTarget): not committed, the others are; before, its
			// commit was sent, the broker refused it and the group was
			// reported partial.
			name: "checkpoint of a partition the target does not have: left out",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail,
				Checkpoints: map[string][]remoteclusterutils.PartitionTranslation{"g": {exact(0, 50), exact(1, 40), missingOnTarget(exact(2, 30))}}},
			actions: map[string]string{"g": actionCommit},
			offsets: map[string][]int64{"g": {50, 40, -1}},
		},
		{
			// A checkpoint translated for an earlier log of A.orders
			// (re-created since, before the emitter checkpointed the group
			// again): the current log's start is committed, not 30, a
			// position in the earlier log.
			name: "checkpoint of an earlier log of the topic: the current log's start",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail,
				Checkpoints:  map[string][]remoteclusterutils.PartitionTranslation{"g": {exact(0, 50), otherLog(exact(1, 30))}},
				TargetStarts: map[string]map[int32]int64{"A.orders": {0: 0, 1: 2}}},
			actions: map[string]string{"g": actionCommit},
			offsets: map[string][]int64{"g": {50, 2}},
		},
		{
			name: "checkpoint of an earlier log, its log start unknown: refused",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail,
				Checkpoints: map[string][]remoteclusterutils.PartitionTranslation{"g": {otherLog(exact(1, 30))}}},
			actions:  map[string]string{"g": actionRefused},
			offsets:  map[string][]int64{"g": {-1}},
			problems: []string{"group g: A.orders[1]: the earliest offset of the target partition is unknown"},
		},
		{
			name: "latest",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedLatest,
				Checkpoints:  map[string][]remoteclusterutils.PartitionTranslation{"g": {neverCp("A.orders", 0), exact(1, 5)}},
				TargetStarts: map[string]map[int32]int64{"A.orders": {0: 7}}, TargetEnds: map[string]map[int32]int64{"A.orders": {0: 99}}},
			actions: map[string]string{"g": actionCommit},
			offsets: map[string][]int64{"g": {99, 5}},
		},
		{
			// A first failover after a rewind on the source: group offset
			// sync never moves a target group back, so the target is ahead
			// of the source group; the translation is committed (found by
			// a review: keeping 5000 skipped the records being reprocessed).
			name: "first failover: the translation is committed below the target's offset",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail,
				Checkpoints:     map[string][]remoteclusterutils.PartitionTranslation{"g": {exact(0, 2000)}},
				TargetCommitted: map[string]map[string]map[int32]int64{"g": {"A.orders": {0: 5000}}}},
			actions: map[string]string{"g": actionCommit},
			offsets: map[string][]int64{"g": {2000}},
		},
		{
			name: "committed ahead on every partition: nothing to commit",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail, Committed: map[string]bool{"g": true, "some": true, "all": true},
				Checkpoints:     map[string][]remoteclusterutils.PartitionTranslation{"g": {exact(0, 50), exact(1, 50)}},
				TargetCommitted: map[string]map[string]map[int32]int64{"g": {"A.orders": {0: 90, 1: 51}}}},
			actions: map[string]string{"g": actionNone},
			offsets: map[string][]int64{"g": {50, 50}},
		},
		{
			// Failover run again after the consumers moved on on the
			// target: never moved back (found by a review).
			name: "committed ahead on the target: kept; a group ahead everywhere has nothing to do",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail, Committed: map[string]bool{"g": true, "some": true, "all": true},
				Checkpoints:     map[string][]remoteclusterutils.PartitionTranslation{"some": {exact(0, 50), exact(1, 50)}, "all": {exact(0, 50)}},
				TargetCommitted: map[string]map[string]map[int32]int64{"some": {"A.orders": {0: 90, 1: 40}}, "all": {"A.orders": {0: 50}, "B.other": {0: 1}}}},
			actions: map[string]string{"some": actionCommit, "all": actionCommit},
			offsets: map[string][]int64{"some": {50, 50}, "all": {50}},
		},
		{
			name: "active on the target: never moved, the others are",
			in: planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail,
				Checkpoints:   map[string][]remoteclusterutils.PartitionTranslation{"busy": {exact(0, 1)}, "idle": {exact(0, 2)}},
				TargetMembers: map[string]int{"busy": 2}},
			actions:  map[string]string{"busy": actionRefused, "idle": actionCommit},
			problems: []string{"group busy: 2 member(s) on the target: an active group is never moved, and it refuses the whole run: leave it out of -groups"},
		},
		{
			name: "planned: members on the source",
			in: planInput{Mode: modePlanned, Uncommitted: uncommittedFail,
				Checkpoints: map[string][]remoteclusterutils.PartitionTranslation{"g": {exact(0, 50)}},
				Source:      map[string]sourceGroup{"g": {Members: 1, Committed: map[string]map[int32]int64{"orders": {0: 50}}}}},
			actions:  map[string]string{"g": actionRefused},
			problems: []string{"group g: 1 member(s) still on the source"},
		},
		{
			name: "planned: commit not checkpointed yet, and data lagging",
			in: planInput{Mode: modePlanned, Uncommitted: uncommittedFail,
				Checkpoints: map[string][]remoteclusterutils.PartitionTranslation{"g": {exact(0, 50)}},
				Source:      map[string]sourceGroup{"g": {Committed: map[string]map[int32]int64{"orders": {0: 60, 1: 3}}}},
				Lagging:     []string{"orders[0]: resume point stored at offset 58; the next record to replicate is at offset 59 (source end offset 60)"}},
			actions: map[string]string{"g": actionRefused},
			problems: []string{"group g: catch-up not reached: orders[0] committed at 60, checkpointed at 50; orders[1] committed at 3, no checkpoint yet",
				"catch-up not reached: orders[0]: resume point stored at offset 58; the next record to replicate is at offset 59 (source end offset 60)"},
		},
		{
			name: "planned: a group with no commit on a replicated topic has nothing to move",
			in: planInput{Mode: modePlanned, Uncommitted: uncommittedFail,
				Checkpoints: map[string][]remoteclusterutils.PartitionTranslation{"g": {exact(0, 50)}},
				Source:      map[string]sourceGroup{"g": {Committed: map[string]map[int32]int64{"orders": {0: 50}}}, "other": {}}},
			actions: map[string]string{"g": actionCommit, "other": actionNone},
		},
		{
			name:     "no group",
			in:       planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail},
			actions:  map[string]string{},
			problems: []string{"no group matching -groups has a checkpoint on the target"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now, c.in.Upstream = planNow, upstream
			p := planFailover(c.in)
			got := map[string]string{}
			for _, g := range p.Groups {
				got[g.Group] = g.Action
				if want, ok := c.offsets[g.Group]; ok {
					var offs []int64
					for _, pr := range g.Partitions {
						offs = append(offs, pr.Offset)
					}
					if d := cmp.Diff(want, offs); d != "" {
						t.Errorf("group %s offsets (-want +got):\n%s", g.Group, d)
					}
				}
			}
			if d := cmp.Diff(c.actions, got); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
			for _, g := range p.Groups {
				for _, pr := range g.Partitions {
					at, ok := c.in.TargetCommitted[g.Group][pr.Topic][pr.Partition]
					if want := map[bool]int64{true: at, false: 0}[c.in.Committed[g.Group] && ok && at > pr.Offset]; pr.Ahead != want {
						t.Errorf("group %s %s[%d]: ahead %d, want %d", g.Group, pr.Topic, pr.Partition, pr.Ahead, want)
					}
				}
			}
			if len(p.Problems) != len(c.problems) {
				t.Fatalf("problems %q, want %d like %q", p.Problems, len(c.problems), c.problems)
			}
			for i, want := range c.problems {
				if !strings.Contains(p.Problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, p.Problems[i], want)
				}
			}
		})
	}
}

// TestFailoverReportGolden pins the -json shape of kmirror failover: an
// unplanned failover of two groups, one with a safe translation from
// offset syncs and a never-committed partition taken at earliest, with
// their offsets on the target now and the moves.
func TestFailoverReportGolden(t *testing.T) {
	in := planInput{Mode: modeUnplanned, Uncommitted: uncommittedEarliest, Now: planNow, Upstream: upstream,
		Checkpoints: map[string][]remoteclusterutils.PartitionTranslation{
			"billing": {
				cpAt("A.orders", 0, 1200, 1180, remoteclusterutils.TranslationExact, "", 0, 4*time.Second),
				cpAt("A.orders", 1, 1100, 1051, remoteclusterutils.TranslationSafe, "sync", 49, 9*time.Second),
				neverCp("A.orders", 2),
			},
			"audit": {cpAt("A.payments", 0, 77, 77, remoteclusterutils.TranslationUnknown, "", -1, 61*time.Second)},
		},
		TargetStarts: map[string]map[int32]int64{"A.orders": {2: 0}},
		// The groups' offsets on the target before the commit (the
		// partitions' current_offset and move).
		TargetCurrent: map[string]map[string]map[int32]int64{"billing": {"A.orders": {0: 1180, 1: 1100}}, "audit": {"A.payments": {0: 70}}},
	}
	p := planFailover(in)
	rep := failoverReport{Flow: "A->B", Mode: modeUnplanned, SourceError: "cluster A: unable to dial: dial tcp 10.0.0.1:9092: i/o timeout",
		DetectedAt: planNow, Uncommitted: uncommittedEarliest, TargetState: string(statustopic.Stopped),
		Members: &membersReport{Live: 2, Stopped: 2, WaitedMs: 1200}, Groups: p.Groups, Problems: p.Problems,
		Result: "done", ExitCode: drOK, TimingsMs: timings{SourceProbe: 10000, Stop: 1210, Translate: 31, Commit: 12, Total: 11260}}
	for i := range rep.Groups {
		rep.Groups[i].Action = actionCommitted
	}
	rep.Summary = summarize(rep.Groups)
	var buf bytes.Buffer
	if err := writeReportJSON(&buf, rep); err != nil { // what -json prints
		t.Fatal(err)
	}
	got := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	golden := filepath.Join("testdata", "failover.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestFailoverReportGolden -update writes it)", err)
	}
	if d := cmp.Diff(string(want), string(got)+"\n"); d != "" {
		t.Errorf("failover -json differs from %s (-want +got):\n%s", golden, d)
	}
}

// goldenJSON compares what -json prints for v with testdata/name
// (go test -run Golden -update rewrites it).
func goldenJSON(t *testing.T, name string, v any) {
	t.Helper()
	var buf bytes.Buffer
	if err := writeReportJSON(&buf, v); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run Golden -update writes it)", err)
	}
	if d := cmp.Diff(string(want), buf.String()); d != "" {
		t.Errorf("-json differs from %s (-want +got):\n%s", golden, d)
	}
}

// TestTranslateReportGolden pins the -json shape of kmirror translate.
func TestTranslateReportGolden(t *testing.T) {
	d := &drFlow{pol: policyDefault(t)}
	d.flow.Source, d.flow.Target = "A", "B"
	tr := map[string][]remoteclusterutils.PartitionTranslation{"billing": {
		cpAt("A.orders", 0, 1200, 1180, remoteclusterutils.TranslationExact, "", 0, 4*time.Second),
		cpAt("A.orders", 1, 1100, 1051, remoteclusterutils.TranslationSafe, "sync", 49, 9*time.Second),
		neverCp("A.orders", 2),
		fromRecords(cpAt("A.orders", 3, 900, 870, remoteclusterutils.TranslationSafe, "sync", 30, 5*time.Second), 880),
		withFallback(cpAt("A.orders", 4, 700, 690, remoteclusterutils.TranslationUnknown, "", -1, 5*time.Second), "no copy carrying its source offset found in [0, 700)"),
		// No checkpoint: the group's commit on the source, 500, translated from the copies.
		{Topic: "A.orders", Partition: 5, SourceOffset: 500, Offset: 480, Translation: remoteclusterutils.TranslationExact,
			Record: remoteclusterutils.KindRecord, CheckpointOffset: -1},
	}}
	rep := translateReport{Flow: "A->B", CheckpointsTopic: "A.checkpoints.internal", At: planNow, Groups: groupReports(d, tr, planNow)}
	rep.Summary = summarize(rep.Groups)
	goldenJSON(t, "translate.golden.json", rep)
}

// TestFailbackReportGolden pins the -json shape of kmirror failback.
func TestFailbackReportGolden(t *testing.T) {
	rep := failbackReport{Flow: "A->B", Reverse: "B->A", ReverseHeartbeat: planNow.Add(-time.Second),
		Groups: []groupReport{{Group: "billing", Action: actionCommitted, Partitions: []partitionReport{
			{SourceTopic: "A.orders", Topic: "orders", Partition: 0, SourceOffset: 1300, Offset: 1320, From: "run", Translation: "exact", RereadMax: 0},
			{SourceTopic: "orders", Topic: "B.orders", Partition: 0, SourceOffset: 40, Offset: 40, From: "checkpoint", Translation: "exact",
				RereadMax: 0, CheckpointTime: planNow.Add(-2 * time.Second)},
		}}},
		Outage:      []outageRange{{Topic: "orders", Partition: 0, From: 1320, To: 1335, Count: 15}},
		OutageTotal: 15, TargetState: "RUNNING", Problems: []string{}, Result: "done", ExitCode: drOK}
	rep.TimingsMs.Checks, rep.TimingsMs.Translate, rep.TimingsMs.Commit, rep.TimingsMs.Resume, rep.TimingsMs.Total = 26, 22, 3, 11, 61
	goldenJSON(t, "failback.golden.json", rep)
}

func policyDefault(t *testing.T) policy.ReplicationPolicy {
	t.Helper()
	p, err := policy.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMissingOnTargetReported: a checkpoint of a partition the target
// does not have is shown as such in the -json report, the table and the
// summary, and is not among the offsets failover commits.
func TestMissingOnTargetReported(t *testing.T) {
	in := planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail, Now: planNow, Upstream: upstream,
		Checkpoints: map[string][]remoteclusterutils.PartitionTranslation{"g": {
			cpAt("A.orders", 0, 50, 50, remoteclusterutils.TranslationExact, "", 0, time.Second),
			missingOnTarget(cpAt("A.orders", 2, 30, 30, remoteclusterutils.TranslationExact, "", 0, time.Second)),
		}}}
	p := planFailover(in)
	if len(p.Groups) != 1 || len(p.Groups[0].Partitions) != 2 || len(p.Problems) != 0 {
		t.Fatalf("plan: %+v", p)
	}
	miss := p.Groups[0].Partitions[1]
	if !miss.MissingOnTarget || miss.Offset != -1 || miss.Partition != 2 {
		t.Fatalf("orders[2]: %+v, want missing on target, offset -1", miss)
	}
	if got, want := miss.translation(), "exact, PARTITION MISSING ON THE TARGET (remote topic deleted or re-created with fewer partitions; not committed)"; got != want {
		t.Errorf("table: %q, want %q", got, want)
	}
	s := summarize(p.Groups)
	if got, want := s.String(), "1 group(s), 2 partition(s): 1 exact, 0 safe, 0 unknown (written by MM2), 0 never committed, 1 of partitions missing on the target (not committed)"; got != want {
		t.Errorf("summary: %q, want %q", got, want)
	}
	var buf bytes.Buffer
	if err := writeReportJSON(&buf, failoverReport{Groups: p.Groups, Summary: s}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"missing_on_target": true`, `"missing_on_target": 1`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("-json lacks %s:\n%s", want, buf.String())
		}
	}
}
