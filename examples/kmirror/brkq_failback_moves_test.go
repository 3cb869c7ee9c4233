package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestBrkQFailbackShowsCurrentOffsetsAndMoves: failback printed, per
// group partition, only the offset it commits on A, not the group's
// offset there now: an operator could not see that it moved the group
// back (re-reads) or forward (skips). After a failover, the group read on
// B to 60 of A.orders[0..2], and its offsets on A are 90, 40 and 60: the
// report (JSON and text) shows each current offset beside the 60
// committed, and the move: back 30 (re-reads), forward 20 (skips), none.
func TestBrkQFailbackShowsCurrentOffsetsAndMoves(t *testing.T) {
	w := failedOver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	commit := func(addrs []string, topic string, at map[int32]int64) {
		offs := kadm.Offsets{}
		for p, o := range at {
			offs.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
		}
		if err := kadm.NewClient(w.client(addrs)).CommitAllOffsets(ctx, w.group, offs); err != nil {
			t.Fatal(err)
		}
	}
	commit(w.bAddrs, w.remote, map[int32]int64{0: 60, 1: 60, 2: 60})
	commit(w.aAddrs, w.topic, map[int32]int64{0: 90, 1: 40, 2: 60})
	reverseRunning(t, w)
	code, out, errOut, rep := failbackAnswered(t, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "5s", "-dry-run", "-json")
	if code != drOK || len(rep.Groups) != 1 {
		t.Fatalf("failback -dry-run exit %d, %d group(s); want %d, 1\n%s\n%s", code, len(rep.Groups), drOK, out, errOut)
	}
	got := movesOf(rep.Groups[0].Partitions)
	want := []string{
		fmt.Sprintf("%s[0]: 90 -> 60 backward 30", w.topic),
		fmt.Sprintf("%s[1]: 40 -> 60 forward 20", w.topic),
		fmt.Sprintf("%s[2]: 60 -> 60 none 0", w.topic),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("failback's partitions:\n%s\nwant\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
	code, text, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "5s", "-dry-run")
	words := strings.Join(strings.Fields(text), " ") // the table's columns, their padding aside
	for _, frag := range []string{"NOW ON A OFFSET ON A MOVE", w.topic + " 90 60 back 30 (re-reads)", w.topic + " 40 60 forward 20 (skips)", w.topic + " 60 60 none"} {
		if code != drOK || !strings.Contains(words, frag) {
			t.Errorf("failback -dry-run text (exit %d) lacks %q:\n%s\n%s", code, frag, text, errOut)
		}
	}
}

// movesOf describes each partition of a DR report's group as
// "topic[p]: current -> offset move records" ("none" for no current
// offset), the shape the moves tests compare.
func movesOf(ps []partitionReport) []string {
	var out []string
	for _, p := range ps {
		cur := "none"
		if p.Current != nil {
			cur = fmt.Sprint(*p.Current)
		}
		out = append(out, fmt.Sprintf("%s[%d]: %s -> %d %s %d", p.Topic, p.Partition, cur, p.Offset, p.Move, p.MoveRecords))
	}
	return out
}
