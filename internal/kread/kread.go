// Package kread reads a topic from its log start to the end offsets
// observed at the call: how kmirror loads its resume points, checkpoints
// and offset syncs, and how the translation client reads checkpoints.
package kread

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	var ends kadm.ListedOffsets
	if len(o.Partitions) > 0 {
		ends = ListOffsets(ctx, admCl, map[string][]int32{topic: o.Partitions}, -1, false)
	} else {
		ends, err = kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	}
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
	if len(want) == 0 {
		return map[int32][]*kgo.Record{}, nil
	}
	ranges := map[int32]Range{}
	for p, end := range want {
		ranges[p] = Range{From: -2, To: end}
	}
	got, err := ReadRanges(ctx, opts, map[string]map[int32]Range{topic: ranges}, o.ReadCommitted)
	if err != nil {
		return nil, err
	}
	out := got[topic]
	if out == nil {
		out = map[int32][]*kgo.Record{}
	}
	return out, nil
}

// ListOffsets lists one offset of each of the given partitions only
// (timestamp -2: the log start offset; -1: the end offset, the last stable
// offset when readCommitted) with one ListOffsets request, which kgo sends
// to each partition's leader. kadm's listings ask about every partition of
// a topic, so one of the others without a leader (its broker down) failed
// or stalled a read of partition 0 (MM2 reads its internal topics'
// partition 0 only). A partition whose request failed (no such topic or
// partition, no leader, ctx) carries the error.
func ListOffsets(ctx context.Context, cl *kgo.Client, partitions map[string][]int32, timestamp int64, readCommitted bool) kadm.ListedOffsets {
	req := kmsg.NewPtrListOffsetsRequest()
	if readCommitted {
		req.IsolationLevel = 1
	}
	for topic, ps := range partitions {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, timestamp
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	out := kadm.ListedOffsets{}
	set := func(o kadm.ListedOffset) {
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]kadm.ListedOffset{}
		}
		out[o.Topic][o.Partition] = o
	}
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			for _, t := range sh.Req.(*kmsg.ListOffsetsRequest).Topics {
				for _, p := range t.Partitions {
					set(kadm.ListedOffset{Topic: t.Topic, Partition: p.Partition, Offset: -1, Err: sh.Err})
				}
			}
			continue
		}
		for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				set(kadm.ListedOffset{Topic: t.Topic, Partition: p.Partition, Timestamp: p.Timestamp,
					Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Err: kerr.ErrorForCode(p.ErrorCode)})
			}
		}
	}
	return out
}

// Range is a range of offsets of one partition to read: [From, To). From
// -2 is the log start.
type Range struct {
	From, To int64
}

// ReadRanges returns the data records (no transaction markers) of each
// partition's range, in log order, grouped by topic and partition, with
// one client: kgo fetches the partitions of one broker in one request. A
// partition is done once a record or marker at To-1 or later arrived, so
// a range whose last offsets were compacted away or are markers still
// ends; a range with To <= From reads nothing. Read committed, aborted
// records are not returned. opts reach the cluster. It fails as a whole
// (a fetch error, ctx, or IdleStop without progress).
func ReadRanges(ctx context.Context, opts []kgo.Opt, ranges map[string]map[int32]Range, readCommitted bool) (map[string]map[int32][]*kgo.Record, error) {
	out := map[string]map[int32][]*kgo.Record{}
	err := ReadRangesEach(ctx, opts, ranges, readCommitted, func(r *kgo.Record) {
		if out[r.Topic] == nil {
			out[r.Topic] = map[int32][]*kgo.Record{}
		}
		out[r.Topic][r.Partition] = append(out[r.Topic][r.Partition], r)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadRangesEach reads as ReadRanges does and calls each with every record
// ReadRanges would return, in log order per partition, on the calling
// goroutine, keeping none of them: a caller that needs a few records of
// large ranges holds only those. A record's Key, Value and header values
// may share the memory of its fetched batch: a record kept after each
// returns keeps that batch, unless the caller copies what it keeps.
func ReadRangesEach(ctx context.Context, opts []kgo.Opt, ranges map[string]map[int32]Range, readCommitted bool, each func(*kgo.Record)) error {
	want, start := plan(ranges, func(r Range) bool { return r.To > r.From && r.To > 0 })
	if len(want) == 0 {
		return nil
	}
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	cl, err := kclient.New(append(append([]kgo.Opt{}, opts...), kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(), // markers count toward reaching To-1
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(start))...)
	if err != nil {
		return err
	}
	defer kclient.CloseConsumer(cl, kclient.Partitions(start))
	lastProgress := time.Now()
	for len(want) > 0 {
		fs, ferr := pollSecond(ctx, cl)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading %s: %w", names(ranges), err)
		}
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := key{r.Topic, r.Partition}
			end, ok := want[k]
			if !ok {
				return
			}
			lastProgress = time.Now()
			if !r.Attrs.IsControl() && r.Offset < end {
				each(r)
			}
			if r.Offset >= end-1 {
				delete(want, k)
			}
		})
		if len(want) > 0 && time.Since(lastProgress) > IdleStop {
			return fmt.Errorf("reading %s: no record for %v while %d partitions had not reached the end of their ranges", names(ranges), IdleStop, len(want))
		}
	}
	return nil
}

// names returns the topics of ranges for errors: one name, or the count.
func names(ranges map[string]map[int32]Range) string {
	if len(ranges) == 1 {
		for t := range ranges {
			return t
		}
	}
	return fmt.Sprintf("%d topics", len(ranges))
}

// FirstData returns, per partition of ranges, the offset of the first data
// record in [From, To) read_committed, or To when the range holds nothing
// but transaction markers and aborted records (or compacted-away offsets).
// It reads only up to that first record, with one client, so it is cheap
// on a range of millions of records. A partition that did not resolve
// before ctx ended (an open transaction keeps the last stable offset below
// To; a slow cluster) is absent from the result; ctx ending is not an
// error. A range with To <= From, or From < 0, is absent too. A fetch
// error fails the call.
func FirstData(ctx context.Context, opts []kgo.Opt, ranges map[string]map[int32]Range) (map[string]map[int32]int64, error) {
	want, start := plan(ranges, func(r Range) bool { return r.To > r.From && r.From >= 0 })
	out := map[string]map[int32]int64{}
	set := func(k key, off int64) {
		if out[k.topic] == nil {
			out[k.topic] = map[int32]int64{}
		}
		out[k.topic][k.partition] = off
		delete(want, k)
	}
	if len(want) == 0 {
		return out, nil
	}
	cl, err := kclient.New(append(append([]kgo.Opt{}, opts...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // markers show how far the read got
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxPartitionBytes(64<<10), // the first batch is enough
		kgo.ConsumePartitions(start))...)
	if err != nil {
		return nil, err
	}
	defer kclient.CloseConsumer(cl, kclient.Partitions(start))
	for len(want) > 0 && ctx.Err() == nil {
		fs, ferr := pollSecond(ctx, cl)
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := key{r.Topic, r.Partition}
			end, ok := want[k]
			switch {
			case !ok:
			case r.Offset >= end:
				set(k, end)
			case !r.Attrs.IsControl():
				set(k, r.Offset)
			case r.Offset == end-1:
				set(k, end)
			}
		})
	}
	return out, nil
}

// pollSecond polls cl for at most a second (ctx bounds it too) and
// returns the fetches and the first fetch error of a topic, naming it
// (none when the second ran out: kgo reports that as every partition's
// error).
func pollSecond(ctx context.Context, cl *kgo.Client) (kgo.Fetches, error) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	fs := cl.PollFetches(pctx)
	var ferr error
	fs.EachError(func(t string, _ int32, err error) {
		if pctx.Err() == nil && ferr == nil {
			ferr = fmt.Errorf("reading %s: %w", t, err)
		}
	})
	cancel()
	return fs, ferr
}

// key is a topic partition.
type key struct {
	topic     string
	partition int32
}

// plan returns, for the ranges keep accepts, the end offset (To) to read
// to per partition and the consumer's start offsets (From, or the log
// start for a negative From).
func plan(ranges map[string]map[int32]Range, keep func(Range) bool) (map[key]int64, map[string]map[int32]kgo.Offset) {
	want := map[key]int64{}
	start := map[string]map[int32]kgo.Offset{}
	for t, ps := range ranges {
		for p, r := range ps {
			if !keep(r) {
				continue
			}
			if start[t] == nil {
				start[t] = map[int32]kgo.Offset{}
			}
			at := kgo.NewOffset().At(r.From)
			if r.From < 0 {
				at = kgo.NewOffset().AtStart()
			}
			start[t][p] = at
			want[key{t, p}] = r.To
		}
	}
	return want, start
}
