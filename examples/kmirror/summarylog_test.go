package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/mirror"
)

func summaryLines(log func(*slog.Logger)) []string {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	log(l)
	out := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(out) == 1 && out[0] == "" {
		return []string{}
	}
	return out
}

func TestLogSummary(t *testing.T) {
	prev := mirror.Status{Flows: []mirror.FlowStatus{
		{Name: "a->b", State: mirror.StateRunning, Records: 1000, Bytes: 250_000, Lag: 40},
		{Name: "b->a", State: mirror.StateDisabled},
		{Name: "c->b", State: mirror.StateRunning, Records: 500, Bytes: 9000},
	}}
	cur := mirror.Status{Flows: []mirror.FlowStatus{
		{Name: "a->b", State: mirror.StateRunning, Records: 92_404, Bytes: 24_015_000, Lag: 12, Groups: []mirror.GroupStatus{
			{Group: "orders-consumer", State: checkpoint.StateSynced},
			{Group: "billing", State: checkpoint.StateCheckpointed},
			{Group: "audit", State: checkpoint.StateCheckpointed},
			{Group: "console-consumer-1", State: checkpoint.StateSkipped, Reason: checkpoint.ReasonActiveOnTarget},
		}},
		{Name: "b->a", State: mirror.StateDisabled},
		// Counters that started again (a restart between the snapshots).
		{Name: "c->b", State: mirror.StateRetrying, Records: 20, Bytes: 300, Lag: 7, Error: "target cluster b unreachable"},
		// A flow absent from prev counts from 0.
		{Name: "d->b", State: mirror.StateStarting, Records: 30, Bytes: 6000},
		// A refused topic: counted.
		{Name: "e->b", State: mirror.StateRunning, Lag: 10, TopicErrors: []mirror.TopicError{{Topic: "bad", Op: mirror.TopicOpCreate, Lag: 10}}},
		// Issue 20: a lag that cannot be computed is not 0.
		{Name: "f->b", State: mirror.StateRetrying, LagUnknown: true},
	}}
	got := summaryLines(func(l *slog.Logger) { logSummary(l, prev, cur, time.Minute) })
	want := []string{
		`level=INFO msg="replication summary" flow=a->b state=RUNNING records_per_sec=1523.4 bytes_per_sec=396083 lag=12 groups_checkpointed=3 interval=1m0s`,
		`level=INFO msg="replication summary" flow=b->a state=DISABLED records_per_sec=0 bytes_per_sec=0 lag=0 groups_checkpointed=0 interval=1m0s`,
		`level=INFO msg="replication summary" flow=c->b state=RETRYING records_per_sec=0 bytes_per_sec=0 lag=7 groups_checkpointed=0 interval=1m0s`,
		`level=INFO msg="replication summary" flow=d->b state=STARTING records_per_sec=0.5 bytes_per_sec=100 lag=0 groups_checkpointed=0 interval=1m0s`,
		`level=INFO msg="replication summary" flow=e->b state=RUNNING records_per_sec=0 bytes_per_sec=0 lag=10 groups_checkpointed=0 topic_errors=1 interval=1m0s`,
		`level=INFO msg="replication summary" flow=f->b state=RETRYING records_per_sec=0 bytes_per_sec=0 lag=unknown groups_checkpointed=0 interval=1m0s`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("summary lines (-want +got):\n%s", d)
	}
	// summaryLoop keeps only summaryBase of the previous snapshot: the
	// same lines, and no group or partition slice held for an interval.
	prev.Flows[0].Groups = cur.Flows[0].Groups
	prev.Flows[0].Partitions = []mirror.PartitionStatus{{Topic: "t", Partition: 0}}
	base := summaryBase(prev)
	if got := summaryLines(func(l *slog.Logger) { logSummary(l, base, cur, time.Minute) }); !cmp.Equal(want, got) {
		t.Errorf("summary lines from summaryBase(prev) (-want +got):\n%s", cmp.Diff(want, got))
	}
	if len(base.Flows) != 3 || base.Flows[0].Groups != nil || base.Flows[0].Partitions != nil || base.Flows[0].Records != 1000 {
		t.Errorf("summaryBase(prev) = %+v, want the 3 flows' names and counters only", base.Flows)
	}
}

func TestLogSummaryQuiet(t *testing.T) {
	cur := mirror.Status{Flows: []mirror.FlowStatus{{Name: "a->b", State: mirror.StateRunning, Records: 10}}}
	// No interval: no rate (and no division by zero).
	got := summaryLines(func(l *slog.Logger) { logSummary(l, mirror.Status{}, cur, 0) })
	if d := cmp.Diff([]string{`level=INFO msg="replication summary" flow=a->b state=RUNNING records_per_sec=0 bytes_per_sec=0 lag=0 groups_checkpointed=0 interval=0s`}, got); d != "" {
		t.Errorf("dt 0 (-want +got):\n%s", d)
	}
	// A logger above INFO, or none: nothing.
	var buf bytes.Buffer
	logSummary(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), mirror.Status{}, cur, time.Minute)
	logSummary(nil, mirror.Status{}, cur, time.Minute)
	if buf.Len() != 0 {
		t.Errorf("logged at WARN level: %q", buf.String())
	}
}
