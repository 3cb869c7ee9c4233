package remoteclusterutils

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/kread"
)

// Fetch sizes and pacing of the checkpoints reader.
const (
	fetchMaxWait       = 500 * time.Millisecond // broker wait; data below the end offset is returned at once
	fetchMaxBytes      = 64 << 20               // bytes per response
	retryBackoff       = 50 * time.Millisecond  // after a retriable error
	maxRetryBackoff    = time.Second
	checkpointsPartNum = int32(0) // MM2 reads and writes partition 0 only (docs/mm2-compat.md §1.1, §11 item 28)
)

// fetchPartitionMax is the byte limit per response for partition 0 (a
// variable only so that tests can force many small fetches; the broker
// always returns at least one whole batch).
var fetchPartitionMax int32 = 16 << 20

// readCheckpoints folds every record of partition 0 of topic, from the log
// start to the end offset observed now, into f. It uses raw ListOffsets and
// Fetch requests on the caller's client, so it never changes that client's
// consumer state, group membership or assignments. A topic deleted and
// re-created during the read (its topic ID changed) is read again from the
// new log's start, f reset: never old records folded with new ones.
func (c *Client) readCheckpoints(ctx context.Context, alias, topic string, f *folder) error {
	for {
		err := c.readCheckpointsOnce(ctx, alias, topic, f)
		if !errors.Is(err, errRecreated) {
			return err
		}
		// The topic was deleted and re-created during the read: what was
		// folded is partly the old log's. Read the new log from its start.
		if l := c.cfg.logger; l != nil {
			l.Info("checkpoints topic re-created while it was read: reading it again", "topic", topic, "alias", alias)
		}
		f.reset()
	}
}

// errRecreated: partition 0's topic ID changed during a read.
var errRecreated = errors.New("remoteclusterutils: topic re-created during the read")

func (c *Client) readCheckpointsOnce(ctx context.Context, alias, topic string, f *folder) error {
	start, end, err := c.bounds(ctx, alias, topic)
	if err != nil {
		return err
	}
	f.stats.Topic, f.stats.StartOffset, f.stats.EndOffset = topic, start, end
	if start >= end {
		return nil
	}

	dec := kgo.DefaultDecompressor()
	offset := start
	backoff := retryBackoff
	var (
		leader  int32 = -1
		epoch   int32 = -1
		topicID [16]byte
	)
	for offset < end {
		if leader < 0 {
			var id [16]byte
			if leader, epoch, id, err = partitionLeader(ctx, c.cl, topic, func() error { return c.topicGone(ctx, alias, topic) }); err != nil {
				var nt *NoCheckpointsTopicError
				if errors.As(err, &nt) {
					return err
				}
				return fmt.Errorf("remoteclusterutils: reading %s: %w", topic, err)
			}
			if zero := ([16]byte{}); topicID != zero && id != zero && id != topicID {
				// A fetch with the old ID failed (UNKNOWN_TOPIC_ID):
				// going on at offset would read the new log from the
				// middle, to the old log's end, on top of the old one.
				return errRecreated
			}
			topicID = id
		}
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = int32(fetchMaxWait / time.Millisecond)
		req.MinBytes = 1
		req.MaxBytes = fetchMaxBytes
		req.IsolationLevel = 1 // read_committed, see the package documentation
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = checkpointsPartNum
		rp.FetchOffset = offset
		rp.CurrentLeaderEpoch = epoch
		rp.PartitionMaxBytes = fetchPartitionMax
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)

		kresp, err := c.cl.Broker(int(leader)).RetriableRequest(ctx, req)
		if err == nil {
			err = kerr.ErrorForCode(kresp.(*kmsg.FetchResponse).ErrorCode)
		}
		var fp kgo.FetchPartition
		next := offset
		if err == nil {
			fp, next, err = processFetch(kresp.(*kmsg.FetchResponse), topic, topicID, offset, dec)
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("remoteclusterutils: reading %s up to offset %d (at %d): %w", topic, end, offset, ctx.Err())
			}
			switch {
			case errors.Is(err, kerr.OffsetOutOfRange):
				// Retention or DeleteRecords moved the log start past
				// offset: continue from the new start.
				s, _, berr := c.bounds(ctx, alias, topic)
				if berr != nil {
					return berr
				}
				if s <= offset {
					return fmt.Errorf("remoteclusterutils: reading %s: offset %d out of range but log start is %d: %w", topic, offset, s, err)
				}
				offset = s
				continue
			case isRetriable(err):
				leader = -1 // refresh metadata
				if serr := sleepCtx(ctx, backoff); serr != nil {
					return fmt.Errorf("remoteclusterutils: reading %s up to offset %d (at %d%s): %w", topic, end, offset, lastErr(", ", err, serr), serr)
				}
				backoff = min(2*backoff, maxRetryBackoff)
				continue
			default:
				return fmt.Errorf("remoteclusterutils: reading %s at offset %d: %w", topic, offset, err)
			}
		}
		backoff = retryBackoff
		for _, r := range fp.Records {
			if r.Offset >= end {
				break
			}
			f.addRecord(r)
		}
		if next > offset {
			offset = next
			continue
		}
		// No progress: the log now ends before our end offset (leader
		// truncation or a deleted-and-recreated topic). Everything that
		// exists has been read.
		if stable := min(fp.HighWatermark, fp.LastStableOffset); stable >= 0 && stable <= offset {
			break
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			return fmt.Errorf("remoteclusterutils: reading %s up to offset %d (no progress at %d): %w", topic, end, offset, err)
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
	return nil
}

// processFetch extracts partition 0 of topic from resp and decodes its
// records at or after offset. next is the offset to fetch next.
func processFetch(resp *kmsg.FetchResponse, topic string, topicID [16]byte, offset int64, dec kgo.Decompressor) (kgo.FetchPartition, int64, error) {
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		if rt.Topic != topic && rt.TopicID != topicID {
			continue
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.Partition != checkpointsPartNum {
				continue
			}
			fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Offset:         offset,
				IsolationLevel: kgo.ReadCommitted(),
				Topic:          topic,
				Partition:      checkpointsPartNum,
			}, rp, dec, nil)
			if fp.Err != nil && len(fp.Records) == 0 {
				return fp, offset, fp.Err
			}
			return fp, next, nil
		}
	}
	// An empty response (e.g. the broker's wait expired): retry.
	return kgo.FetchPartition{HighWatermark: -1, LastStableOffset: -1}, offset, nil
}

// bounds returns the log start offset and the end offset (last stable
// offset) of partition 0 of topic.
func (c *Client) bounds(ctx context.Context, alias, topic string) (start, end int64, err error) {
	backoff := retryBackoff
	for {
		start, end, err = listBounds(ctx, c.cl, topic)
		if err == nil {
			return start, end, nil
		}
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			// Metadata can lag a topic creation by a moment: confirm
			// with a full topic listing before reporting it missing.
			names, lerr := c.topicNames(ctx)
			if lerr != nil {
				return 0, 0, fmt.Errorf("remoteclusterutils: checking topic %s: %w", topic, lerr)
			}
			found := false
			for _, n := range names {
				found = found || n == topic
			}
			if !found {
				return 0, 0, c.missingTopicError(alias, topic, names)
			}
		} else if !isRetriable(err) {
			return 0, 0, fmt.Errorf("remoteclusterutils: listing offsets of %s: %w", topic, err)
		}
		if serr := sleepCtx(ctx, backoff); serr != nil {
			return 0, 0, fmt.Errorf("remoteclusterutils: listing offsets of %s%s: %w", topic, parenLastErr(err, serr), serr)
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// listBounds lists the log start offset and the end offset (the last
// stable offset: equal to the high watermark unless a transaction on the
// topic is still open) of partition 0 of topic, asking about partition 0
// only: the other partitions of a topic created with more (by hand, or
// with the broker's default count) do not matter, as MM2 reads partition
// 0 only, and one of them offline must not fail or stall the read.
func listBounds(ctx context.Context, cl *kgo.Client, topic string) (start, end int64, err error) {
	if start, err = listOffset(ctx, cl, topic, -2, false); err != nil { // -2: the log start
		return 0, 0, err
	}
	if end, err = listOffset(ctx, cl, topic, -1, true); err != nil { // -1, read_committed: the last stable offset
		return 0, 0, err
	}
	return start, end, nil
}

// listOffset lists one offset of partition 0 of topic.
func listOffset(ctx context.Context, cl *kgo.Client, topic string, timestamp int64, readCommitted bool) (int64, error) {
	l := kread.ListOffsets(ctx, cl, map[string][]int32{topic: {checkpointsPartNum}}, timestamp, readCommitted)
	o, ok := l.Lookup(topic, checkpointsPartNum)
	if !ok {
		return 0, fmt.Errorf("no offsets listed for partition 0: %w", kerr.UnknownTopicOrPartition)
	}
	return o.Offset, o.Err
}

// topicGone returns the *NoCheckpointsTopicError of topic when a full
// topic listing does not have it (deleted during the read), nil when it
// does (metadata lagging) or the listing failed (the caller retries).
func (c *Client) topicGone(ctx context.Context, alias, topic string) error {
	names, err := c.topicNames(ctx)
	if err != nil || slices.Contains(names, topic) {
		return nil
	}
	return c.missingTopicError(alias, topic, names)
}

// partitionLeader returns the leader, leader epoch and topic ID of
// partition 0 of topic, from the brokers ([uncachedMetadata]: a topic
// re-created during the read is seen at once, not after franz-go's cache
// expires). When the topic is unknown, gone (nil: none) is asked whether
// it was deleted; its error is returned as is.
func partitionLeader(ctx context.Context, cl *kgo.Client, topic string, gone func() error) (leader, epoch int32, id [16]byte, err error) {
	backoff := retryBackoff
	for {
		resp, merr := uncachedMetadata(ctx, cl, topic)
		if merr == nil {
			merr = kerr.UnknownTopicOrPartition // unless the response has the topic
			for _, t := range resp.Topics {
				if t.Topic == nil || *t.Topic != topic {
					continue
				}
				if merr = kerr.ErrorForCode(t.ErrorCode); merr != nil {
					break
				}
				merr = kerr.UnknownTopicOrPartition // unless it has partition 0
				for _, p := range t.Partitions {
					switch {
					case p.Partition != checkpointsPartNum:
						continue
					case p.ErrorCode != 0 && p.ErrorCode != kerr.ReplicaNotAvailable.Code:
						merr = kerr.ErrorForCode(p.ErrorCode)
					case p.Leader < 0:
						merr = kerr.LeaderNotAvailable
					default:
						return p.Leader, p.LeaderEpoch, t.TopicID, nil
					}
				}
			}
		}
		if !isRetriable(merr) && !errors.Is(merr, kerr.UnknownTopicOrPartition) {
			return 0, 0, id, merr
		}
		if errors.Is(merr, kerr.UnknownTopicOrPartition) && gone != nil {
			// Deleted during the read (and not re-created): missing, not
			// a partition to wait for until the deadline.
			if gerr := gone(); gerr != nil {
				return 0, 0, id, gerr
			}
		}
		if serr := sleepCtx(ctx, backoff); serr != nil {
			return 0, 0, id, fmt.Errorf("partition 0 leader%s: %w", parenLastErr(merr, serr), serr)
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// isRetriable reports errors that a metadata refresh and a retry can fix.
func isRetriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable || errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.InconsistentTopicID)
	}
	return kgo.IsRetryableBrokerErr(err)
}

// lastErr is sep+"last error <err>" for the error of a retry loop that ctx
// ended, or "" when err is ctx's own error (the last request was cut short
// by the deadline), which that error wraps anyway: it read "listing offsets
// of t (last error context deadline exceeded): context deadline exceeded".
func lastErr(sep string, err, ctxErr error) string {
	if err == nil || errors.Is(err, ctxErr) {
		return ""
	}
	return sep + "last error " + err.Error()
}

// parenLastErr is lastErr in parentheses after a space, or "".
func parenLastErr(err, ctxErr error) string {
	if s := lastErr("", err, ctxErr); s != "" {
		return " (" + s + ")"
	}
	return ""
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
