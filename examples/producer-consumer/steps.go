package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/mirror"
)

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// endOffsets returns the end offset of every partition of topic.
func endOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// committed returns group's committed offsets of topic.
func committed(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := resp.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.Err == nil && o.At >= 0 {
			out[p] = o.At
		}
	}
	return out, nil
}

// waitCommitted waits until group committed ends on topic (partitions
// with end 0 need no commit), i.e. the consumer read everything.
func waitCommitted(ctx context.Context, adm *kadm.Client, group, topic string, ends map[int32]int64, d *deployment) error {
	for {
		got, err := committed(ctx, adm, group, topic)
		if err == nil {
			done := true
			for p, end := range ends {
				if end > 0 && got[p] < end {
					done = false
				}
			}
			if done {
				return nil
			}
		}
		if err := d.failed(); err != nil {
			return err
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitSafe waits until the flow has replicated srcEnd of messages and the
// group is SafeToSwitch with offsets at the end of the remote topic: the
// status of its final position (mirror.GroupStatus has no timestamp, so
// an earlier SafeToSwitch is told apart by the offsets). It reports the
// group's state changes through say.
func waitSafe(ctx context.Context, m *mirror.Mirror, secAdm *kadm.Client, remote string, srcEnd map[int32]int64, say func(string, ...any)) error {
	last := ""
	for {
		var fs mirror.FlowStatus
		if flows := m.Status().Flows; len(flows) > 0 {
			fs = flows[0]
		}
		replicated := len(fs.Partitions) > 0
		for _, p := range fs.Partitions {
			if p.Topic == defaultTopic && srcEnd[p.Partition] > 0 && p.Replicated < srcEnd[p.Partition] {
				replicated = false
			}
		}
		for _, g := range fs.Groups {
			if g.Group != defaultGroup {
				continue
			}
			now := fmt.Sprintf("state %s, SafeToSwitch %v", g.State, g.SafeToSwitch)
			if g.Reason != "" {
				now += " (" + g.Reason + ")"
			}
			if now != last {
				say("        group status: %s", now)
				last = now
			}
			if !g.SafeToSwitch || !replicated {
				continue
			}
			ends, err := endOffsets(ctx, secAdm, remote)
			if err != nil {
				continue
			}
			at := true
			for p, end := range ends {
				if end > 0 && g.Offsets[remote][p] != end {
					at = false
				}
			}
			if at {
				return nil
			}
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for SafeToSwitch: %w (last status: %s)", err, last)
		}
	}
}

// commitStart commits the log start offset for every partition of topic
// the group has no committed offset for.
func commitStart(ctx context.Context, adm *kadm.Client, group, topic string) error {
	have, err := committed(ctx, adm, group, topic)
	if err != nil {
		return err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return err
	}
	if err := starts.Error(); err != nil {
		return err
	}
	offs := kadm.Offsets{}
	starts.Each(func(o kadm.ListedOffset) {
		if _, ok := have[o.Partition]; !ok {
			offs.Add(kadm.Offset{Topic: topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
		}
	})
	if len(offs) == 0 {
		return nil
	}
	return adm.CommitAllOffsets(ctx, group, offs)
}

// fmtOffsets renders offsets as "p0=12 p1=40 ...".
func fmtOffsets(offs map[int32]int64) string {
	ps := make([]int32, 0, len(offs))
	for p := range offs {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, " p%d=%d", p, offs[p])
	}
	return strings.TrimSpace(b.String())
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
