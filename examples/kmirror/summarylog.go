package main

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/mirror"
)

// summaryMessage is the message of the records logSummary logs.
const summaryMessage = "replication summary"

// logSummary logs at INFO one record per flow of cur saying what the flow
// did during the dt that separates two Mirror.Status snapshots, prev and
// cur:
//
//	level=INFO msg="replication summary" flow=a->b state=RUNNING records_per_sec=1523.4 bytes_per_sec=396084 lag=12 groups_checkpointed=3 interval=1m0s
//
// Its attributes besides the flow's name and state:
//   - records_per_sec, bytes_per_sec: records and bytes (keys, values and
//     header keys and values) acknowledged by the target during dt, per
//     second, from this member's cumulative counters (which never go down
//     while it runs, also when a rebalance moves slots away); 0 when the
//     counters did not grow (a flow absent from prev counts from 0).
//   - lag: this member's lag of the flow in records in cur ("unknown"
//     when part of it cannot be computed: never 0 for records it cannot
//     count).
//   - groups_checkpointed: consumer groups with at least one checkpoint
//     (state "checkpointed" or "synced") in cur.
//   - topic_errors: the flow's topic errors in cur (topics the target
//     refuses to create, add partitions to or alter configs of), only
//     when there are some.
//
// Called every minute with consecutive snapshots, it gives an operator a
// line a minute per flow saying whether replication progresses. Nothing is
// logged when log is nil or does not log INFO.
func logSummary(log *slog.Logger, prev, cur mirror.Status, dt time.Duration) {
	if log == nil || !log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	before := make(map[string]mirror.FlowStatus, len(prev.Flows))
	for _, f := range prev.Flows {
		before[f.Name] = f
	}
	for _, f := range cur.Flows {
		p := before[f.Name]
		groups := 0
		for _, g := range f.Groups {
			if g.State == checkpoint.StateCheckpointed || g.State == checkpoint.StateSynced {
				groups++
			}
		}
		attrs := []slog.Attr{
			slog.String("flow", f.Name),
			slog.String("state", string(f.State)),
			slog.Float64("records_per_sec", math.Round(perSecond(f.Records-p.Records, dt)*10)/10),
			slog.Int64("bytes_per_sec", int64(math.Round(perSecond(f.Bytes-p.Bytes, dt)))),
			lagAttr(f),
			slog.Int("groups_checkpointed", groups),
		}
		if n := len(f.TopicErrors); n > 0 {
			attrs = append(attrs, slog.Int("topic_errors", n))
		}
		log.LogAttrs(context.Background(), slog.LevelInfo, summaryMessage, append(attrs, slog.Duration("interval", dt.Round(time.Millisecond)))...)
	}
}

// perSecond is delta per second over dt; 0 when delta is negative (the
// counters started again) or dt is not positive.
func perSecond(delta int64, dt time.Duration) float64 {
	if delta <= 0 || dt <= 0 {
		return 0
	}
	return float64(delta) / dt.Seconds()
}

// lagAttr is the summary's lag attribute: the number, or "unknown".
func lagAttr(f mirror.FlowStatus) slog.Attr {
	if f.LagUnknown {
		return slog.String("lag", "unknown")
	}
	return slog.Int64("lag", f.Lag)
}
