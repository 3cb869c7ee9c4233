package main

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBrkQFailoverListsTargetStartsOnce: failover listed the log starts of
// the target's remote topics twice: inside
// remoteclusterutils.TranslateGroups (to mark checkpoints below the log
// start) and again in the runner (checkpointedStarts, and
// neverCommittedBounds for the never-committed partitions). It takes them
// from the translations now (PartitionTranslation.PartitionStart): one
// ListOffsets request for the starts of A.orders on B per failover (B has
// one broker), and the plan is the same (partition 2 never committed,
// committed at its log start 0 by -uncommitted earliest).
func TestBrkQFailoverListsTargetStartsOnce(t *testing.T) {
	w := newDRWorld(t, "")
	w.produce(w.aAddrs, "A", w.topic, 20)
	at := map[int32]int64{0: 10, 1: 12}
	w.consumeManual(w.aAddrs, "A", w.topic, at, at)
	_, runnerLog, stopRunner, waitRunner := started(t, "-config", w.props, "-clusters", "B", "-log-level", "warn")
	eventually(t, "both commits checkpointed", func() string {
		if _, out, errOut, _ := runDR(t, translateMain, "-config", w.props, "-flow", "A->B", "-groups", w.group); !strings.Contains(out, "2 exact") {
			return out + errOut
		}
		return ""
	})
	stopRunner()
	if err := waitRunner(); err != nil {
		t.Fatalf("runner: %v\n%s", err, runnerLog)
	}
	w.killA()
	var starts atomic.Int32
	w.b.ControlKey(int16(kmsg.ListOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		w.b.KeepControl()
		for _, rt := range kr.(*kmsg.ListOffsetsRequest).Topics {
			if rt.Topic == w.remote && slices.ContainsFunc(rt.Partitions, func(p kmsg.ListOffsetsRequestTopicPartition) bool { return p.Timestamp == -2 }) {
				starts.Add(1)
			}
		}
		return nil, nil, false
	})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-flow", "A->B", "-groups", w.group, "-source-timeout", "1s", "-uncommitted", "earliest", "-dry-run", "-json")
	rep := decodeFailover(t, out)
	if code != drOK || len(rep.Groups) != 1 || len(rep.Groups[0].Partitions) != 3 {
		t.Fatalf("failover -dry-run: exit %d, want %d, one group of 3 partitions\n%s\n%s", code, drOK, out, errOut)
	}
	var got []int64
	for _, p := range rep.Groups[0].Partitions {
		got = append(got, p.Offset)
	}
	if n := starts.Load(); n != 1 || !slices.Equal(got, []int64{10, 12, 0}) {
		t.Errorf("failover listed the starts of %s on B in %d request(s), planned offsets %v; want 1, [10 12 0]\n%s", w.remote, n, got, out)
	}
}
