// Package kread reads a topic from its log start to the end offsets
// observed at the call: how kmirror loads its resume points, checkpoints
// and offset syncs, and how the translation client reads checkpoints.
package kread

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
)

// IdleStop bounds how long ReadToEnd waits without any new record before
// it gives up with an error. Reading ends when every partition delivered
// its record at end-1 (transaction markers included: they are fetched as
// control records and skipped), never on a timer, so a slow cluster
// yields a complete read or an error, not a partial result.
const IdleStop = 10 * time.Second

// Options of ReadToEnd.
type Options struct {
	// Partitions limits the read to these partitions (nil: all).
	Partitions []int32
	// ReadCommitted reads with isolation level read_committed.
	ReadCommitted bool
}

// ReadToEnd returns the records of topic, in log order per partition and
// partitions concatenated in ascending order, from the log start to the end
// offsets listed at the call. opts reach the cluster (seed brokers, TLS,
// SASL). A missing topic is an error wrapping kerr.UnknownTopicOrPartition.
func ReadToEnd(ctx context.Context, opts []kgo.Opt, topic string, o Options) ([]*kgo.Record, error) {
	by, err := ReadPartitions(ctx, opts, topic, o)
	if err != nil {
		return nil, err
	}
	var out []*kgo.Record
	for p := int32(0); len(by) > 0; p++ {
		out = append(out, by[p]...)
		delete(by, p)
	}
	return out, nil
}

// ReadPartitions is ReadToEnd with records grouped by partition.
func ReadPartitions(ctx context.Context, opts []kgo.Opt, topic string, o Options) (map[int32][]*kgo.Record, error) {
	admCl, err := kclient.New(opts...)
	if err != nil {
		return nil, err
	}
	defer admCl.Close()
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("listing end offsets of %s: %w", topic, err)
	}
	only := map[int32]bool{}
	for _, p := range o.Partitions {
		only[p] = true
	}
	want := map[int32]int64{}
	start := map[int32]kgo.Offset{}
	ends.Each(func(lo kadm.ListedOffset) {
		if lo.Offset > 0 && (len(only) == 0 || only[lo.Partition]) {
			want[lo.Partition] = lo.Offset
			start[lo.Partition] = kgo.NewOffset().AtStart()
		}
	})
	out := map[int32][]*kgo.Record{}
	if len(want) == 0 {
		return out, nil
	}
	iso := kgo.ReadUncommitted()
	if o.ReadCommitted {
		iso = kgo.ReadCommitted()
	}
	cl, err := kclient.New(append(append([]kgo.Opt{}, opts...), kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(), // markers count toward reaching end-1
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	last := map[int32]int64{}
	lastProgress := time.Now()
	for len(want) > 0 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if pctx.Err() == nil && ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := want[r.Partition]; !ok {
				return
			}
			lastProgress = time.Now()
			last[r.Partition] = r.Offset
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], r)
			}
		})
		for p, end := range want {
			if l, ok := last[p]; ok && l >= end-1 {
				delete(want, p)
			}
		}
		if len(want) > 0 && time.Since(lastProgress) > IdleStop {
			return nil, fmt.Errorf("reading %s: no record for %v while partitions %v had not reached their end offsets", topic, IdleStop, want)
		}
	}
	return out, nil
}
