package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
)

// translateBack maps a consumer group's committed offsets on a remote topic
// (us-east-1.orders on ap-northeast-2, keyed by partition) back to the
// topic it was replicated from (orders on us-east-1), using the FORWARD
// flow's offset syncs read in reverse.
//
// Why this is needed: MM2 checkpoints a group of the reverse flow
// ap-northeast-2->us-east-1 only for topics that flow replicates, and
// us-east-1.orders is never replicated back (cycle detection, docs/mm2-compat.md §4.3), so
// no checkpoint for orders on us-east-1 ever exists: the failback branch of
// MirrorCheckpointTask is dead code since Kafka 3.3 (docs/mm2-compat.md §11 item 23), and
// Java's RemoteClusterUtils cannot translate it. The offset syncs of the
// forward flow hold the same mapping in the other direction: a sync
// (u, d) says record u of orders is record d of us-east-1.orders.
//
// Rule (the mirror image of MM2's translation, docs/mm2-compat.md §6.3): take the last
// sync in log order with d <= D for the group's offset D; resume at u when
// d == D, else at u+1. Every record of us-east-1.orders below D was
// consumed, so every source record up to u was too: the result never skips
// a record the group has not seen, and re-reads at most the records between
// two syncs. Partitions without a usable sync are left out.
//
// syncs must reach the cluster holding the forward flow's offset-syncs
// topic (here ap-northeast-2, offset-syncs.topic.location=target).
func translateBack(ctx context.Context, syncs *kgo.Client, syncsTopic, sourceTopic string, committed map[int32]int64) (map[int32]int64, int, error) {
	adm := kadm.NewClient(syncs)
	ends, err := adm.ListEndOffsets(ctx, syncsTopic)
	if err != nil {
		return nil, 0, err
	}
	end, ok := ends.Lookup(syncsTopic, 0)
	if !ok || end.Err != nil {
		return nil, 0, fmt.Errorf("end offset of %s: %v", syncsTopic, end.Err)
	}
	starts, err := adm.ListStartOffsets(ctx, syncsTopic)
	if err != nil {
		return nil, 0, err
	}
	startOff, _ := starts.Lookup(syncsTopic, 0)

	cl, err := kgo.NewClient(append(syncs.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		syncsTopic: {0: kgo.NewOffset().AtStart()},
	}))...)
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	type pair struct{ up, down int64 }
	best := map[int32]pair{}
	n := 0
	for pos := startOff.Offset; pos < end.Offset; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("reading %s: %w", syncsTopic, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return nil, 0, fmt.Errorf("reading %s: %w", syncsTopic, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			pos = r.Offset + 1
			if r.Offset >= end.Offset {
				return
			}
			s, err := checkpoint.DecodeOffsetSync(r.Key, r.Value)
			if err != nil || s.Topic != sourceTopic {
				return
			}
			n++
			d, ok := committed[s.Partition]
			if ok && s.DownstreamOffset <= d {
				best[s.Partition] = pair{s.UpstreamOffset, s.DownstreamOffset}
			}
		})
	}
	out := map[int32]int64{}
	for p, d := range committed {
		s, ok := best[p]
		if !ok {
			continue
		}
		if s.down == d {
			out[p] = s.up
		} else {
			out[p] = s.up + 1
		}
	}
	return out, n, nil
}

// committedOffsets returns group's committed offsets of topic on adm.
func committedOffsets(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
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

// commitWhenEmpty commits offs into group once the group has no members:
// a member of the group from before the outage is kept by the restarted
// coordinator until its session times out (3 s here), and the broker
// refuses admin commits into a group with members.
func commitWhenEmpty(ctx context.Context, adm *kadm.Client, group string, offs kadm.Offsets) (waited time.Duration, err error) {
	start := time.Now()
	for {
		resp, err := adm.CommitOffsets(ctx, group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err == nil {
			return time.Since(start), nil
		}
		if !errors.Is(err, kerr.UnknownMemberID) && !errors.Is(err, kerr.RebalanceInProgress) &&
			!errors.Is(err, kerr.IllegalGeneration) && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return time.Since(start), err
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("committing offsets of %s: %w (last error: %v)", group, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePort returns a loopback TCP port that is free now, so that a cluster
// can be restarted on the same address after its "outage".
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
