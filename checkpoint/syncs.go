package checkpoint

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kread"
)

// loadCheckpoints reads partition 0 of the checkpoints topic from its start
// to the end offset observed now into e.cps (docs/mm2-compat.md §6.2 step 2,
// §13(a)): the last record per key wins; tombstones, undecodable records and
// negative offsets are skipped. It returns the number of checkpoints kept.
func (e *Emitter) loadCheckpoints(ctx context.Context) (int, error) {
	lctx, cancel := context.WithTimeout(ctx, 4*e.cfg.AdminTimeout)
	defer cancel()
	recs, err := kread.ReadToEnd(lctx, e.cfg.TargetOpts, e.cpTopic, kread.Options{Partitions: []int32{0}})
	if err != nil {
		return 0, err
	}
	bad := 0
	for _, r := range recs {
		cp, err := DecodeCheckpoint(r.Key, r.Value)
		if err != nil && !errors.Is(err, ErrUnknownVersion) {
			bad++
			continue
		}
		if !e.cps.Load(cp) {
			bad++
		}
	}
	if bad > 0 {
		e.log.Warn("skipped unusable checkpoint records", "topic", e.cpTopic, "records", bad)
	}
	return e.cps.Len(), nil
}

// tailSyncs reads partition 0 of the offset-syncs topic from its start into
// the store, marks the store read to end once it reached the end offset
// listed at start (closing ready), and keeps reading until ctx is done.
// One consumer per emitter reads the topic, however many groups there are
// (docs/field-failures.md case B36: thousands of groups must not mean
// thousands of readers of that one partition). Undecodable records and
// tombstones are skipped with a warning (MM2 can stop translating on them,
// docs/mm2-compat.md §11 item 29).
func (e *Emitter) tailSyncs(ctx context.Context, ready chan<- struct{}) {
	c := e.cfg
	topic := c.OffsetSyncsTopic
	var cl *kgo.Client
	var delay time.Duration
	for {
		var err error
		cl, err = kgo.NewClient(append(append([]kgo.Opt{}, c.OffsetSyncsOpts...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(500*time.Millisecond),
		)...)
		if err == nil {
			break
		}
		e.log.Error("offset-syncs consumer", "err", err)
		delay = backoff(delay)
		if !sleep(ctx, delay) {
			return
		}
	}
	defer cl.Close()

	end := e.syncsEnd(ctx, kadm.NewClient(cl))
	if ctx.Err() != nil {
		return
	}
	isReady := false
	markReady := func() {
		e.storeMu.Lock()
		e.store.MarkReadToEnd()
		e.storeMu.Unlock()
		isReady = true
		close(ready)
	}
	if end <= 0 {
		markReady()
	}
	var last int64 = -1
	bad, idle := 0, 0
	for {
		pctx := ctx
		var cancel context.CancelFunc = func() {}
		if !isReady {
			pctx, cancel = context.WithTimeout(ctx, kread.IdleStop)
		}
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			e.log.Warn("reading offset syncs", "topic", topic, "err", err)
			e.fail("offset_syncs", err)
		})
		n := 0
		e.storeMu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition != 0 {
				return
			}
			n++
			last = r.Offset
			s, err := DecodeOffsetSync(r.Key, r.Value)
			if err != nil {
				bad++
				if bad == 1 || bad%1000 == 0 {
					e.log.Warn("skipping unusable offset-sync record", "topic", topic, "offset", r.Offset, "err", err, "skipped", bad)
				}
				return
			}
			e.store.Add(s)
		})
		e.storeMu.Unlock()
		if isReady {
			continue
		}
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
		// Done when the record before the end offset was read, or when
		// two idle polls show nothing more comes (records removed meanwhile).
		if last >= end-1 || idle >= 2 {
			markReady()
		}
	}
}

// syncsEnd lists the end offset of partition 0 of the offset-syncs topic,
// retrying until it succeeds or ctx is done; a missing topic has end 0.
func (e *Emitter) syncsEnd(ctx context.Context, adm *kadm.Client) int64 {
	topic := e.cfg.OffsetSyncsTopic
	var delay time.Duration
	for {
		lctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
		ends, err := adm.ListEndOffsets(lctx, topic)
		cancel()
		if err == nil {
			o, ok := ends.Lookup(topic, 0)
			if ok && o.Err == nil {
				return o.Offset
			}
			if missing, mok := ends.Lookup(topic, -1); !ok || (mok && errors.Is(missing.Err, kerr.UnknownTopicOrPartition)) {
				return 0 // no such topic (yet): nothing to read
			}
			err = o.Err
		}
		if ctx.Err() != nil {
			return 0
		}
		e.log.Warn("listing offset-syncs end offset", "topic", topic, "err", err)
		delay = backoff(delay)
		if !sleep(ctx, delay) {
			return 0
		}
	}
}
