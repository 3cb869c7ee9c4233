package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
)

// detect returns once two health checks of the cluster behind cl, 100 ms
// apart and bounded by 300 ms each, have failed in a row.
func detect(ctx context.Context, cl *kgo.Client) error {
	failures := 0
	for failures < 2 {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := cl.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			failures++
		} else {
			failures = 0
		}
		if failures < 2 {
			if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

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

// distinct counts the distinct orders read in phase.
func distinct(reads []read, phase int) int {
	seen := map[int]bool{}
	for _, r := range reads {
		if r.phase == phase {
			seen[r.id] = true
		}
	}
	return len(seen)
}

// firstRead returns when the first record of phase was read.
func (c *consumer) firstRead(phase int) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.reads {
		if r.phase == phase {
			return r.at, true
		}
	}
	return time.Time{}, false
}

// waitFirstRead waits for the consumer's first read in phase.
func waitFirstRead(ctx context.Context, c *consumer, phase int, bg *background) (time.Time, error) {
	for {
		if at, ok := c.firstRead(phase); ok {
			return at, nil
		}
		if err := bg.failed(); err != nil {
			return time.Time{}, fmt.Errorf("consumer: %w", err)
		}
		if err := sleepCtx(ctx, 2*time.Millisecond); err != nil {
			return time.Time{}, fmt.Errorf("waiting for the consumer's first record: %w", err)
		}
	}
}

// waitCommitted waits until group has committed at least ends on topic.
func waitCommitted(ctx context.Context, adm *kadm.Client, group, topic string, ends map[int32]int64) error {
	for {
		got, err := committedOffsets(ctx, adm, group, topic)
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
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitReverseCheckpoint waits until flow ap-northeast-2->us-east-1 has
// copied every record of orders (srcEnd: its end offsets on ap-northeast-2,
// which no longer grow) and reports the group SafeToSwitch with translated
// offsets at the end of ap-northeast-2.orders on us-east-1: the checkpoint
// of the group's final position, not of an earlier one (the status has no
// timestamp, so the offsets are compared).
func waitReverseCheckpoint(ctx context.Context, m *mirror.Mirror, adm *kadm.Client, remote string, srcEnd map[int32]int64) error {
	name := seoul + "->" + east
	for {
		var fs mirror.FlowStatus
		for _, f := range m.Status().Flows {
			if f.Name == name {
				fs = f
			}
		}
		copied := true
		for _, p := range fs.Partitions {
			if p.Topic == topic && p.Replicated < srcEnd[p.Partition] {
				copied = false
			}
		}
		if copied && len(fs.Partitions) > 0 {
			ends, err := endOffsets(ctx, adm, remote)
			if err == nil {
				for _, g := range fs.Groups {
					if g.Group != group {
						continue
					}
					// A partition the group committed at offset 0 with
					// nothing replicated has no offset sync, so the engine
					// never calls the group SafeToSwitch; such partitions
					// are empty on both sides and checked by offset only.
					ok := g.SafeToSwitch || hasEmpty(srcEnd)
					for p, end := range ends {
						if end > 0 && g.Offsets[remote][p] != end {
							ok = false
						}
					}
					if ok {
						return nil
					}
				}
			}
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for flow %s to checkpoint %s: %w (status %+v)", name, group, err, fs.Groups)
		}
	}
}

// fillMissing adds offset 0 (the log start: kfake and these topics never
// delete records) for the partitions of topic offs has no offset for, and
// returns how many it added.
func fillMissing(offs kadm.Offsets, topic string, partitions int32) int {
	n := 0
	for p := range partitions {
		if _, ok := offs.Lookup(topic, p); !ok {
			offs.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
			n++
		}
	}
	return n
}

// fmtOffsets renders the offsets of one topic as "p0=12 p1=40 ...".
func fmtOffsets(offs kadm.Offsets, topic string) string {
	var b strings.Builder
	for _, o := range offs.Sorted() {
		if o.Topic == topic {
			fmt.Fprintf(&b, " p%d=%d", o.Partition, o.At)
		}
	}
	return strings.TrimSpace(b.String())
}

func hasEmpty(ends map[int32]int64) bool {
	for _, e := range ends {
		if e == 0 {
			return true
		}
	}
	return false
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// unread returns the acknowledged ids not read yet.
func unread(acked map[int]string, reads []read) []int {
	seen := make(map[int]bool, len(reads))
	for _, r := range reads {
		seen[r.id] = true
	}
	var out []int
	for id := range acked {
		if !seen[id] {
			out = append(out, id)
		}
	}
	return out
}

// idsBelow returns the order ids in topic below ends (per partition).
func idsBelow(ctx context.Context, brokers []string, topic string, ends map[int32]int64) (map[int]bool, error) {
	parts := map[int32]kgo.Offset{}
	left := 0
	for p, end := range ends {
		if end > 0 {
			parts[p] = kgo.NewOffset().AtStart()
			left++
		}
	}
	out := map[int]bool{}
	if left == 0 {
		return out, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	done := map[int32]bool{}
	for len(done) < left {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			if id, err := orderID(r.Value); err == nil {
				out[id] = true
			}
			if r.Offset == ends[r.Partition]-1 {
				done[r.Partition] = true
			}
		})
	}
	return out, nil
}
