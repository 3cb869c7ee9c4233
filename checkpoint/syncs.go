package checkpoint

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
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
		if errors.Is(err, ErrTombstone) {
			// Removes the key's earlier checkpoint, as it does for every
			// reader of the topic (MirrorClient keeps the last record of a
			// key, compaction keeps none): the emitter writes the key
			// again at its next emission instead of taking the deleted
			// checkpoint as written.
			if kc, kerr := DecodeCheckpointKey(r.Key); kerr == nil {
				e.cps.Forget(kc.Group, kc.Topic, kc.Partition)
				continue
			}
		}
		if err != nil && !errors.Is(err, ErrUnknownVersion) {
			bad++
			continue
		}
		if !e.cps.Load(cp) {
			bad++
			continue
		}
		e.cps.SetTarget(cp.Group, cp.Topic, cp.Partition, checkpointTargetOf(r.Headers))
		e.cps.SetExact(cp.Group, cp.Topic, cp.Partition, headerSaysExact(r.Headers))
		if r.Timestamp.After(e.cpAt[cp.Group]) {
			e.cpAt[cp.Group] = r.Timestamp
		}
	}
	if bad > 0 {
		e.log.Warn("skipped unusable checkpoint records", "topic", e.cpTopic, "records", bad)
	}
	return e.cps.Len(), nil
}

// tailSyncs reads partition 0 of the offset-syncs topic (and of the
// offset-runs topic, when configured) from its start into the stores, marks
// the sync store read to end once both reached the end offsets listed at
// start (closing ready), and keeps reading until ctx is done. One consumer
// per emitter reads the topics, however many groups there are
// (docs/field-failures.md case B36: thousands of groups must not mean
// thousands of readers of that one partition). Undecodable records and
// tombstones are skipped with a warning (MM2 can stop translating on them,
// docs/mm2-compat.md §11 item 29).
func (e *Emitter) tailSyncs(ctx context.Context, ready chan<- struct{}) {
	c := e.cfg
	topics := []string{c.OffsetSyncsTopic}
	if c.OffsetRunsTopic != "" {
		topics = append(topics, c.OffsetRunsTopic)
	}
	parts := map[string]map[int32]kgo.Offset{}
	for _, t := range topics {
		parts[t] = map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}
	}
	var cl *kgo.Client
	open := func() bool {
		var delay time.Duration
		for {
			var err error
			cl, err = kclient.New(append(append([]kgo.Opt{}, c.OffsetSyncsOpts...),
				kgo.ConsumePartitions(parts),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				// The broker answers as soon as a sync arrives; the wait only
				// bounds an idle fetch: 5 s, as the replication consumers',
				// so that an idle flow's reader costs one fetch every 5 s, not
				// two a second (a helper counting idle requests by API key).
				kgo.FetchMaxWait(5*time.Second),
			)...)
			if err == nil {
				return true
			}
			e.log.Error("offset-syncs consumer", "err", err)
			delay = backoff(delay)
			if !sleep(ctx, delay) {
				return false
			}
		}
	}
	if !open() {
		return
	}
	defer func() {
		if cl != nil {
			kclient.CloseConsumer(cl, kclient.Partitions(parts))
		}
	}()

	ends := e.syncsEnd(ctx, kadm.NewClient(cl), topics)
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
	last := map[string]int64{}
	caughtUp := func() bool {
		for _, t := range topics {
			if end := ends[t]; end > 0 {
				if l, ok := last[t]; !ok || l < end-1 {
					return false
				}
			}
		}
		return true
	}
	if caughtUp() {
		markReady()
	}
	bad, idle := 0, 0
	var reopenDelay time.Duration
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
		recreated := map[string]bool{}
		fs.EachError(func(t string, _ int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if errors.Is(err, kerr.UnknownTopicID) {
				recreated[t] = true // logged below, once
				return
			}
			if t == c.OffsetRunsTopic && errors.Is(err, kerr.UnknownTopicOrPartition) {
				return // written by MM2 or an older kmirror: offset syncs only
			}
			e.log.Warn("reading offset syncs", "topic", t, "err", err)
			e.fail("offset_syncs", err)
		})
		n := 0
		e.storeMu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition != 0 {
				return
			}
			n++
			last[r.Topic] = r.Offset
			var err error
			if r.Topic == c.OffsetRunsTopic {
				var run OffsetRun
				if run, err = DecodeOffsetRun(r.Key, r.Value); err == nil {
					e.addRun(run, r.Headers)
				}
			} else {
				var s OffsetSync
				if s, err = DecodeOffsetSync(r.Key, r.Value); err == nil {
					e.addSync(s, r.Headers)
				}
			}
			if err != nil {
				bad++
				if bad == 1 || bad%1000 == 0 {
					e.log.Warn("skipping unusable record", "topic", r.Topic, "offset", r.Offset, "err", err, "skipped", bad)
				}
			}
		})
		e.storeMu.Unlock()
		if n > 0 {
			select {
			case e.syncsIn <- struct{}{}:
			default:
			}
		}
		if len(recreated) > 0 {
			// The topic was deleted and created again: kgo fetches it by
			// the topic ID it knows and fails every fetch at once with
			// UNKNOWN_TOPIC_ID, for good (a busy loop: 180 000 errors
			// logged in 40 s, and nothing read from the new topic:
			// TestOffsetSyncTopicsRestored). A new consumer reads the
			// new topic from its start and the others from where they
			// were.
			for t := range parts {
				if recreated[t] {
					parts[t] = map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}
					delete(last, t)
					e.log.Warn("offset syncs topic re-created: reading it again from its start", "topic", t)
				} else if l, ok := last[t]; ok {
					parts[t] = map[int32]kgo.Offset{0: kgo.NewOffset().At(l + 1)}
				}
			}
			kclient.CloseConsumer(cl, kclient.Partitions(parts))
			reopenDelay = backoff(reopenDelay)
			if !sleep(ctx, reopenDelay) || !open() {
				cl = nil
				return
			}
			continue
		}
		reopenDelay = 0
		if isReady {
			continue
		}
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
		// Done when the records before the end offsets were read, or when
		// two idle polls show nothing more comes (records removed meanwhile).
		if caughtUp() || idle >= 2 {
			markReady()
		}
	}
}

// syncsEnd lists the end offsets of partition 0 of topics, retrying until
// it succeeds or ctx is done; a missing topic has end 0.
func (e *Emitter) syncsEnd(ctx context.Context, adm *kadm.Client, topics []string) map[string]int64 {
	var delay time.Duration
	for {
		lctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
		listed, err := adm.ListEndOffsets(lctx, topics...)
		cancel()
		out := map[string]int64{}
		if err == nil {
			for _, topic := range topics {
				o, ok := listed.Lookup(topic, 0)
				if ok && o.Err == nil {
					out[topic] = o.Offset
					continue
				}
				if missing, mok := listed.Lookup(topic, -1); !ok || (mok && errors.Is(missing.Err, kerr.UnknownTopicOrPartition)) {
					out[topic] = 0 // no such topic (yet): nothing to read
					continue
				}
				err = o.Err
				break
			}
			if err == nil {
				return out
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		e.log.Warn("listing offset-syncs end offsets", "topics", topics, "err", err)
		delay = backoff(delay)
		if !sleep(ctx, delay) {
			return nil
		}
	}
}

// headerSaysExact reports whether a checkpoint record's [TranslationHeader]
// says "exact" (false when absent or malformed, as MM2's records).
func headerSaysExact(hs []kgo.RecordHeader) bool {
	for _, h := range hs {
		if h.Key == TranslationHeader {
			info, err := ParseTranslationInfo(string(h.Value))
			return err == nil && info.Exact
		}
	}
	return false
}
