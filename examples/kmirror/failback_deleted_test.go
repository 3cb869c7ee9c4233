package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestNuFailbackSourceTopicDeletedOnA: after a failover, A came back
// without orders (deleted there, or A rebuilt empty). failback -dry-run
// said "would commit" orders[p] at 100 on A and exited 0, and the run
// then failed on the broker's UNKNOWN_TOPIC_OR_PARTITION ("This server
// does not host this topic-partition"), naming neither the topic's
// absence nor what to do. The plan must refuse the partition (exit 1,
// dry run too), saying that orders does not exist on A, and commit
// nothing.
func TestNuFailbackSourceTopicDeletedOnA(t *testing.T) {
	w := failedOver(t)
	flow := "A->B"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end := kadm.Offsets{}
	for p := range w.parts {
		end.Add(kadm.Offset{Topic: w.remote, Partition: p, At: 100, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(w.client(w.bAddrs)).CommitAllOffsets(ctx, w.group, end); err != nil {
		t.Fatal(err)
	}
	if r, err := kadm.NewClient(w.client(w.aAddrs)).DeleteTopics(ctx, w.topic); err != nil || r.Error() != nil {
		t.Fatalf("deleting %s on A: %v %v", w.topic, err, r.Error())
	}

	reverseRunning(t, w)
	for _, dry := range []bool{true, false} {
		args := []string{"-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-json"}
		if dry {
			args = append(args, "-dry-run")
		}
		code, out, errOut, rep := failbackAnswered(t, args...)
		if code != drRefused {
			t.Errorf("failback (dry run %v) exit %d, want %d (refused: orders does not exist on A)\n%s\n%s", dry, code, drRefused, out, errOut)
		}
		problems := strings.Join(rep.Problems, "\n")
		for p := range 3 {
			want := fmt.Sprintf("A.orders[%d] at 100 on B translates back to orders[%[1]d] offset 100, but orders does not exist on A", p)
			if !strings.Contains(problems, want) {
				t.Errorf("failback (dry run %v) problems %q: want %q", dry, rep.Problems, want)
			}
		}
		if c := w.committed(w.aAddrs); len(c["orders"]) > 0 {
			t.Errorf("failback (dry run %v) committed %v on A", dry, c["orders"])
		}
	}
}

// TestFailbackBelowLogStartOnA: after a failover, the group read on B up
// to 60 of A.orders[0..2], while A's retention (DeleteRecords here) removed
// orders[0] below 80 on A. failback committed the translation, 60, below
// A's log start: the group's consumer back on A gets OFFSET_OUT_OF_RANGE
// there and, with auto.offset.reset=latest (Kafka's default), skips the
// records A still holds from 80 on. It commits the log start, 80, now, and
// says so (below_log_start), as failover does on B; the other partitions
// get their translations.
func TestFailbackBelowLogStartOnA(t *testing.T) {
	w := failedOver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at := kadm.Offsets{}
	for p := range w.parts {
		at.Add(kadm.Offset{Topic: w.remote, Partition: p, At: 60, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(w.client(w.bAddrs)).CommitAllOffsets(ctx, w.group, at); err != nil {
		t.Fatal(err)
	}
	w.deleteRecords(w.aAddrs, w.topic, 0, 80)
	reverseRunning(t, w)
	code, out, errOut, rep := failbackAnswered(t, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-wait", "5s", "-json")
	if code != drOK {
		t.Fatalf("failback exit %d, want %d\n%s\n%s", code, drOK, out, errOut)
	}
	want := fmt.Sprint(map[int32]int64{0: 80, 1: 60, 2: 60})
	if got := fmt.Sprint(w.committed(w.aAddrs)[w.topic]); got != want {
		t.Errorf("committed on A: %s, want %s\n%s", got, want, out)
	}
	if got := belowLogStart(rep.Groups); got != fmt.Sprintf("[%s[0] 80]", w.topic) {
		t.Errorf("partitions below the log start: %s, want %s[0] 80\n%s", got, w.topic, out)
	}
}
