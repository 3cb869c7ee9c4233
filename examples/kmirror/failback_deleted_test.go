package main

import (
	"context"
	"encoding/json"
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

	_, revLog, stopRev, waitRev := started(t, "-config", w.props, "-clusters", "A", "-log-level", "warn")
	defer func() {
		stopRev()
		if err := waitRev(); err != nil {
			t.Errorf("reverse runner: %v\n%s", err, revLog)
		}
	}()
	for _, dry := range []bool{true, false} {
		args := []string{"-config", w.props, "-flow", flow, "-groups", w.group, "-wait", "5s", "-json"}
		if dry {
			args = append(args, "-dry-run")
		}
		var (
			code        int
			out, errOut string
			rep         failbackReport
		)
		eventually(t, "failback answers (not waiting on the reverse flow)", func() string {
			code, out, errOut, _ = runDR(t, failbackMain, args...)
			rep = failbackReport{}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				return err.Error()
			}
			if rep.ReverseHeartbeat.IsZero() || time.Since(rep.ReverseHeartbeat) > 15*time.Second {
				return "no live reverse flow yet: " + out
			}
			return ""
		})
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
