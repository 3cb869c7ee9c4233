package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestFailbackAfterRemoteTopicRecreated: the remote topic A.orders was
// deleted on B after A->B had replicated into it, and the runner refilled
// the re-created topic (a new topic ID, a new log) from orders' log start.
// The flow started with auto.offset.reset=latest, so the first log held
// orders' offsets S.. (S >= 100) at 0..; the new one holds every offset
// at the same offset. A group consumed the new log on B up to positions
// 10, 50 and its end, and fails back to A: its offsets there must be 10,
// 50 and the end. The first log's run and syncs, still in the forward
// flow's offset-runs and offset-syncs topics, translate 10 to S+10 and 50
// to at least S+20 (Translate takes the highest answer): failing back
// there skips records the group never consumed. The copies carry no source
// offset (resume.from.target.enabled=false), so failback translates from
// the runs and syncs, and must keep only those tagged with the remote
// topic's current ID (BackIndex.ForRemoteTopicIDs, commit 9e7bd49).
func TestFailbackAfterRemoteTopicRecreated(t *testing.T) {
	w := newDRWorld(t, "A->B.source.consumer.auto.offset.reset = latest\nA->B.resume.from.target.enabled = false\n")
	syncsTopic := "mm2-offset-syncs.B.internal" // the forward flow's, on A
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bAdm := kadm.NewClient(w.client(w.bAddrs))
	backIndex := func() *remoteclusterutils.BackIndex {
		t.Helper()
		idx, err := remoteclusterutils.ReadBackIndex(ctx, w.client(w.aAddrs), syncsTopic, "B")
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	// remote returns the ID and end offsets of A.orders on B.
	remote := func() (id [16]byte, ends map[int32]int64, why string) {
		tds, err := bAdm.ListTopics(ctx, w.remote)
		if err != nil {
			return id, nil, err.Error()
		}
		td, ok := tds[w.remote]
		if !ok || td.Err != nil {
			return id, nil, fmt.Sprintf("%s on B: %v", w.remote, td.Err)
		}
		listed, err := bAdm.ListEndOffsets(ctx, w.remote)
		if err != nil {
			return id, nil, err.Error()
		}
		ends = map[int32]int64{}
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				ends[o.Partition] = o.Offset
			}
		})
		return td.ID, ends, ""
	}
	endOnA := func() int64 { // every partition of orders holds as many records
		w.mu.Lock()
		defer w.mu.Unlock()
		return int64(len(w.produced["A/"+w.topic+"/0"]))
	}

	// orders holds offsets 0-99 before the flow first sees it: with
	// auto.offset.reset=latest the flow starts at its end, 100 or later
	// (one record per partition is written until copies reach B).
	w.produce(w.aAddrs, "A", w.topic, 100)
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-log-level", "info")
	defer func() {
		stopRunner()
		if err := waitRunner(); err != nil {
			t.Errorf("runner: %v\n%s", err, runnerLog)
		}
	}()
	eventually(t, "A->B replicates orders from its end", func() string {
		w.produce(w.aAddrs, "A", w.topic, 1)
		_, ends, why := remote()
		if why != "" {
			return why
		}
		for p := range w.parts {
			if ends[p] == 0 {
				return fmt.Sprintf("end offsets of %s on B: %v", w.remote, ends)
			}
		}
		return ""
	})

	// The first log: offsets start[p].. of orders at 0...
	w.produce(w.aAddrs, "A", w.topic, 20)
	end := endOnA()
	// The runs record orders' topic ID on A (the source incarnation).
	srcTds, err := kadm.NewClient(w.client(w.aAddrs)).ListTopics(ctx, w.topic)
	if err != nil || srcTds[w.topic].Err != nil {
		t.Fatalf("listing %s on A: %v %v", w.topic, err, srcTds[w.topic].Err)
	}
	srcID := [16]byte(srcTds[w.topic].ID)
	var oldID [16]byte
	start := map[int32]int64{}
	eventually(t, "the first log replicated, with its runs", func() string {
		id, ends, why := remote()
		if why != "" {
			return why
		}
		oldID = id
		idx := backIndex().ForRemoteTopicIDs(map[string][16]byte{w.topic: id})
		for p := range w.parts {
			start[p] = end - ends[p]
			if ends[p] < 20 || start[p] < 100 {
				return fmt.Sprintf("end offsets of %s on B: %v, orders' end on A %d", w.remote, ends, end)
			}
			want := remoteclusterutils.BackTranslation{Topic: w.topic, Partition: p, Position: ends[p], Offset: end, Record: checkpoint.KindRun, Exact: true, SourceTopicID: srcID}
			if bt, ok := idx.Translate(w.topic, p, ends[p]); !ok || bt != want {
				return fmt.Sprintf("partition %d: %+v (%t), want %+v from a run tagged %x", p, bt, ok, want, id)
			}
		}
		return ""
	})
	t.Logf("first log of %s (ID %x): orders' offsets %v.. at 0..", w.remote, oldID, start)

	// The remote topic is deleted on B: the runner re-creates it and
	// refills it from orders' log start, each offset at the same offset.
	if resp, err := bAdm.DeleteTopics(ctx, w.remote); err != nil || resp[w.remote].Err != nil {
		t.Fatalf("deleting %s on B: %v %v", w.remote, err, resp)
	}
	var newID [16]byte
	eventually(t, "the re-created remote topic refilled, with its runs", func() string {
		id, ends, why := remote()
		if why != "" {
			return why
		}
		if id == oldID {
			return fmt.Sprintf("%s still has the ID %x", w.remote, id)
		}
		newID = id
		idx := backIndex().ForRemoteTopicIDs(map[string][16]byte{w.topic: id})
		for p := range w.parts {
			if ends[p] != end {
				return fmt.Sprintf("end offsets of %s on B: %v, want %d", w.remote, ends, end)
			}
			want := remoteclusterutils.BackTranslation{Topic: w.topic, Partition: p, Position: end, Offset: end, Record: checkpoint.KindRun, Exact: true, SourceTopicID: srcID}
			if bt, ok := idx.Translate(w.topic, p, end); !ok || bt != want {
				return fmt.Sprintf("partition %d: %+v (%t), want %+v from a run tagged %x", p, bt, ok, want, id)
			}
		}
		return ""
	})
	t.Logf("%s re-created on B: ID %x, refilled with orders' offsets 0-%d", w.remote, newID, end-1)

	// The group consumes the new log on B (no member stays in the group).
	positions := map[int32]int64{0: 10, 1: 50, 2: end}
	reads := w.consumeManual(w.bAddrs, "B", w.remote, positions, positions)
	consumed := map[int]bool{}
	for _, r := range reads {
		if want := w.produced[fmt.Sprintf("A/%s/%d", w.topic, r.partition)][r.offset]; r.id != want {
			t.Fatalf("%s[%d] offset %d on B holds record %d, want %d (orders' offset %d on A)", w.remote, r.partition, r.offset, r.id, want, r.offset)
		}
		consumed[r.id] = true
	}
	if n := int64(len(reads)); n != 60+end {
		t.Fatalf("the group read %d records on B, want %d", n, 60+end)
	}

	// The scenario: without the remote topic's ID, the first log's run and
	// syncs answer past what the group consumed (Translate takes the
	// highest answer).
	unfiltered := backIndex()
	if bt, _ := unfiltered.Translate(w.topic, 0, 10); bt.Offset != start[0]+10 || bt.Record != checkpoint.KindRun {
		t.Fatalf("unfiltered: position 10 of partition 0 translates to %+v, want %d from the first log's run", bt, start[0]+10)
	}
	if bt, _ := unfiltered.Translate(w.topic, 1, 50); bt.Offset < start[1]+20 {
		t.Fatalf("unfiltered: position 50 of partition 1 translates to %+v, want at least %d from the first log", bt, start[1]+20)
	}

	// failback -dry-run: the plan, exact from the new log's runs.
	var wantPlan []partitionReport
	for p := range w.parts {
		wantPlan = append(wantPlan, partitionReport{Topic: w.topic, SourceTopic: w.remote, Partition: p, SourceOffset: positions[p],
			Offset: positions[p], From: checkpoint.KindRun, Translation: "exact"})
	}
	flow := "A->B"
	// Stopped, as a failover leaves it (failback refuses a flow that
	// replicates and was never failed over).
	brk2State(t, w.client(w.bAddrs), statustopic.Stopped, "test", "failed over")
	var fb failbackReport
	eventually(t, "failback -dry-run", func() string {
		code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-dry-run", "-json")
		fb = failbackReport{}
		if err := json.Unmarshal([]byte(out), &fb); err != nil {
			t.Fatalf("failback -json: %v\n%s\n%s", err, out, errOut)
		}
		if code != drOK && len(fb.Groups) == 0 {
			return fmt.Sprintf("exit %d\n%s\n%s", code, out, errOut) // before the reverse flow's first heartbeat
		}
		if code != drOK {
			t.Fatalf("failback -dry-run: exit %d, want 0\n%s\n%s", code, out, errOut)
		}
		return ""
	})
	if len(fb.Groups) != 1 || fb.Groups[0].Action != actionCommit || fb.OutageTotal != 0 || fb.TargetState != "" {
		t.Fatalf("failback -dry-run report: %+v", fb)
	}
	if got, want := fmt.Sprint(fb.Groups[0].Partitions), fmt.Sprint(wantPlan); got != want {
		t.Errorf("failback -dry-run plans\n%s\nwant\n%s", got, want)
	}
	if got := w.committed(w.aAddrs); len(got) != 0 {
		t.Fatalf("-dry-run committed %v on A", got)
	}

	// failback: committed on A where the group stopped on B.
	code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-json")
	if code != drOK {
		t.Fatalf("failback: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	want := map[string]map[int32]int64{w.topic: positions}
	got := w.committed(w.aAddrs)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("committed on A after failback: %v, want %v", got, want)
	}
	// Every record of orders before the committed offsets was consumed on
	// B: none is skipped.
	for p := range w.parts {
		ids := w.produced[fmt.Sprintf("A/%s/%d", w.topic, p)]
		skipped := 0
		for off := int64(0); off < got[w.topic][p] && off < int64(len(ids)); off++ {
			if !consumed[ids[off]] {
				skipped++
			}
		}
		if skipped > 0 {
			t.Errorf("%s[%d]: failback committed %d on A, skipping %d records the group never consumed on B", w.topic, p, got[w.topic][p], skipped)
		}
	}
}
