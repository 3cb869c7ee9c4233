package verify

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
)

// partReader streams one partition with read_committed from a start
// offset to an end offset. Transaction markers are fetched (as control
// records) so that reaching end-1 is seen even when the partition ends with
// a marker; aborted records are dropped by the client. Memory: one fetch.
type partReader struct {
	cl     *kgo.Client
	topic  string
	part   int32
	end    int64         // records at offsets >= end are held back until extend
	seen   int64         // highest offset fetched (data or control)
	buf    []*kgo.Record // data records fetched, not yet returned
	idle   time.Duration
	count  *atomic.Int64 // records returned, for progress
	closed bool
}

// fetchMaxBytes and fetchMaxPartitionBytes bound one fetch of a reader
// (compressed bytes): a comparison reads one partition per client, so
// larger fetches only cost memory; measured on loopback, 1 MiB reads
// faster than 8 MiB (less memory for the GC to scan).
const (
	fetchMaxBytes          = 1 << 20
	fetchMaxPartitionBytes = 1 << 20
)

// newPartReader returns a reader of topic[part] from start to end. With
// an empty range it opens no client, unless extendable: then extend can
// move the end later (a partition still empty when the comparison started,
// that a live mirror fills while verify waits).
func newPartReader(opts []kgo.Opt, topic string, part int32, start, end int64, idle time.Duration, count *atomic.Int64, extendable bool) (*partReader, error) {
	r := &partReader{topic: topic, part: part, end: end, seen: start - 1, idle: idle, count: count}
	if start >= end && !extendable {
		return r, nil
	}
	cl, err := kclient.New(append(append([]kgo.Opt{}, opts...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(250*time.Millisecond),
		kgo.FetchMaxBytes(fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(fetchMaxPartitionBytes),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(start)}}),
	)...)
	if err != nil {
		return nil, err
	}
	r.cl = cl
	return r, nil
}

func (r *partReader) close() {
	if r.cl != nil && !r.closed {
		r.closed = true
		r.cl.Close()
	}
}

// atEnd reports whether every record below end was returned.
func (r *partReader) atEnd() bool {
	return (len(r.buf) == 0 || r.buf[0].Offset >= r.end) && r.seen >= r.end-1
}

// extend moves the end to end (never backwards). A reader created with an
// empty range cannot be extended (it has no client).
func (r *partReader) extend(end int64) bool {
	if r.cl == nil || end <= r.end {
		return false
	}
	r.end = end
	return true
}

// next returns the next data record below end, or nil at the end.
func (r *partReader) next(ctx context.Context) (*kgo.Record, error) {
	for {
		if len(r.buf) > 0 && r.buf[0].Offset < r.end {
			rec := r.buf[0]
			r.buf[0] = nil
			r.buf = r.buf[1:]
			r.count.Add(1)
			return rec, nil
		}
		if r.atEnd() || r.cl == nil {
			return nil, nil
		}
		if err := r.poll(ctx); err != nil {
			return nil, err
		}
	}
}

// peek returns the next data record without consuming it (nil at the end).
func (r *partReader) peek(ctx context.Context) (*kgo.Record, error) {
	rec, err := r.next(ctx)
	if rec != nil {
		r.buf = append([]*kgo.Record{rec}, r.buf...)
		r.count.Add(-1)
	}
	return rec, err
}

// poll fetches until at least one record (data or control) arrives, the
// idle bound passes (an error), or ctx ends.
func (r *partReader) poll(ctx context.Context) error {
	start := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := r.cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return fmt.Errorf("reading %s[%d] after offset %d: %w", r.topic, r.part, r.seen, ferr)
		}
		got := false
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset <= r.seen {
				return
			}
			got = true
			r.seen = rec.Offset
			if !rec.Attrs.IsControl() {
				r.buf = append(r.buf, rec)
			}
		})
		if got {
			return nil
		}
		if time.Since(start) > r.idle {
			return fmt.Errorf("reading %s[%d]: no record for %s after offset %d while the end offset is %d", r.topic, r.part, r.idle, r.seen, r.end)
		}
	}
}
