package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestBrkSFailoverShowsCurrentOffsetsAndMoves: failover printed, per
// group partition, only the offset it commits on the target, not the
// group's offset there now (failback shows both since
// TestBrkQFailbackShowsCurrentOffsetsAndMoves): an operator could not see
// that the commit moved the group back (re-reads) or forward (skips). A
// first failover of g, checkpointed at 5 on A.orders[0..2], whose offsets
// on B are 8, 2 and 5: the plan (JSON and text) shows each beside the 5
// it commits, and the move: back 3 (re-reads), forward 3 (skips), none;
// the commits stay the translations (a first failover moves the group
// back too).
func TestBrkSFailoverShowsCurrentOffsetsAndMoves(t *testing.T) {
	w := newRerunWorldN(t, 3)
	o := kadm.Offsets{}
	for p, at := range map[int32]int64{0: 8, 1: 2, 2: 5} {
		o.Add(kadm.Offset{Topic: "A.orders", Partition: p, At: at, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(w.cl).CommitAllOffsets(w.ctx, "g", o); err != nil {
		t.Fatal(err)
	}
	args := []string{"-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-dry-run"}
	code, out, errOut, _ := runDR(t, failoverMain, append(args, "-json")...)
	rep := decodeFailover(t, out)
	if code != drOK || len(rep.Groups) != 1 {
		t.Fatalf("failover -dry-run exit %d, %d group(s); want %d, 1\n%s\n%s", code, len(rep.Groups), drOK, out, errOut)
	}
	got := movesOf(rep.Groups[0].Partitions)
	want := []string{"A.orders[0]: 8 -> 5 backward 3", "A.orders[1]: 2 -> 5 forward 3", "A.orders[2]: 5 -> 5 none 0"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("failover's partitions:\n%s\nwant\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
	for _, f := range []string{`"current_offset": 8`, `"move": "backward"`, `"move_records": 3`} {
		if !strings.Contains(out, f) {
			t.Errorf("failover -json lacks %s:\n%s", f, out)
		}
	}
	code, text, errOut, _ := runDR(t, failoverMain, args...)
	words := strings.Join(strings.Fields(text), " ") // the table's columns, their padding aside
	for _, frag := range []string{"SOURCE OFFSET NOW ON B OFFSET MOVE FROM", "A.orders 0 5 8 5 back 3 (re-reads) checkpoint",
		"A.orders 1 5 2 5 forward 3 (skips) checkpoint", "A.orders 2 5 5 5 none checkpoint"} {
		if code != drOK || !strings.Contains(words, frag) {
			t.Errorf("failover -dry-run text (exit %d) lacks %q:\n%s\n%s", code, frag, text, errOut)
		}
	}
}

// TestBrkSPlanFailoverMovesKeepDecisions: the offsets on the target now
// (TargetCurrent) are shown, and decide nothing. A group an earlier
// failover committed, translated at 50 on A.orders[0..1], committed at 90
// and 40 on B (the commit at 40 refused in that run, so not in
// TargetCommitted): [0] is kept at 90 (move "kept"), [1] moves forward
// 10, and the offsets to commit stay the translations.
func TestBrkSPlanFailoverMovesKeepDecisions(t *testing.T) {
	in := planInput{Mode: modeUnplanned, Uncommitted: uncommittedFail, Now: planNow, Upstream: upstream, Committed: map[string]bool{"g": true},
		Checkpoints: map[string][]remoteclusterutils.PartitionTranslation{"g": {
			cpAt("A.orders", 0, 50, 50, remoteclusterutils.TranslationExact, "", 0, time.Second),
			cpAt("A.orders", 1, 50, 50, remoteclusterutils.TranslationExact, "", 0, time.Second)}},
		TargetCommitted: map[string]map[string]map[int32]int64{"g": {"A.orders": {0: 90}}},
		TargetCurrent:   map[string]map[string]map[int32]int64{"g": {"A.orders": {0: 90, 1: 40}}}}
	p := planFailover(in)
	var got []string
	for _, pr := range p.Groups[0].Partitions {
		got = append(got, fmt.Sprintf("[%d] %d -> %d ahead %d %s %d", pr.Partition, *pr.Current, pr.Offset, pr.Ahead, pr.Move, pr.MoveRecords))
	}
	want := []string{"[0] 90 -> 50 ahead 90 kept 0", "[1] 40 -> 50 ahead 0 forward 10"}
	if p.Groups[0].Action != actionCommit || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("action %s, partitions:\n%s\nwant commit,\n%s", p.Groups[0].Action, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
