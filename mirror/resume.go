package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/kread"
)

// resumeStore keeps the flow's resume points where MM2's dedicated mode keeps
// its source offsets: mm2-offsets.<source>.internal on the target
// (docs/mm2-compat.md §2.6), key
// ["MirrorSourceConnector",{"cluster":S,"partition":p,"topic":t}], value
// {"offset":<last replicated offset>}, in the partition Connect's producer
// picks (murmur2 of the key modulo the partition count). kmirror can
// therefore resume where an MM2 deployment stopped, and the reverse.
type resumeStore struct {
	f          *flow
	topic      string
	partitions int32
	loaded     map[tp]int64 // last replicated offset per source partition, from the topic
}

func newResumeStore(f *flow) *resumeStore {
	return &resumeStore{f: f, topic: connectoffsets.TopicName(f.cfg.Source)}
}

// load creates the topic if needed and reads it to its end.
func (s *resumeStore) load(ctx context.Context) error {
	f := s.f
	if err := createCompacted(ctx, f.dstAdm, f.dst.Alias, s.topic, connectoffsets.DefaultPartitions, f.cfg.OffsetStorageReplicationFactor); err != nil {
		return err
	}
	td, err := f.dstAdm.ListTopics(ctx, s.topic)
	if err != nil {
		return err
	}
	d, ok := td[s.topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		if ok && d.Err != nil {
			return d.Err
		}
		return fmt.Errorf("topic %s not visible yet", s.topic)
	}
	s.partitions = int32(len(d.Partitions))
	opts := f.clientOpts(f.dst, f.dst.Consumer)
	recs, err := kread.ReadToEnd(ctx, opts, s.topic, kread.Options{})
	if err != nil {
		return err
	}
	s.loaded = map[tp]int64{}
	for _, r := range recs {
		conn, alias, topic, part, err := connectoffsets.ParseSourceKey(r.Key)
		if err != nil || conn != "MirrorSourceConnector" || alias != f.cfg.Source {
			continue // other connectors' or other flows' entries, or foreign data
		}
		if r.Value == nil {
			delete(s.loaded, tp{topic, part})
			continue
		}
		off, err := connectoffsets.ParseSourceValue(r.Value)
		if err != nil {
			f.log.Warn("skipping malformed resume point", "topic", s.topic, "offset", r.Offset, "err", err)
			continue
		}
		s.loaded[tp{topic, part}] = off
	}
	f.log.Info("resume points loaded", "topic", s.topic, "partitions", len(s.loaded))
	return nil
}

// resumePoint returns the last replicated offset of a source partition, -1 if none.
func (s *resumeStore) resumePoint(topic string, partition int32) int64 {
	if off, ok := s.loaded[tp{topic, partition}]; ok {
		return off
	}
	return -1
}

// commit stores the resume point of every partition that advanced, after
// the records it covers were acknowledged, and waits for the writes.
func (s *resumeStore) commit(ctx context.Context) error {
	f := s.f
	type upd struct {
		p   *partState
		off int64
	}
	var ups []upd
	var recs []*kgo.Record
	hasher := kgo.StickyKeyPartitioner(nil).ForTopic(s.topic)
	for _, p := range *f.parts.Load() {
		p.mu.Lock()
		acked, committed := p.acked, p.committed
		p.mu.Unlock()
		// Store whatever the last replicated record is, also when it went
		// back (the source topic was re-created): as Connect does, with no
		// monotonic check, so a restart resumes on the new topic.
		if acked == committed || acked < 0 {
			continue
		}
		r := &kgo.Record{Topic: s.topic, Key: connectoffsets.SourceKey(f.cfg.Source, p.topic, p.partition),
			Value: connectoffsets.SourceValue(acked)}
		r.Partition = int32(hasher.Partition(r, int(s.partitions)))
		recs = append(recs, r)
		ups = append(ups, upd{p, acked})
	}
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.AdminTimeout)
	defer cancel()
	start := time.Now()
	if err := f.dstCl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("resume-point topic %s missing on %s: %w", s.topic, f.dst.Alias, err)
		}
		return err
	}
	for _, u := range ups {
		u.p.mu.Lock()
		u.p.committed = u.off
		u.p.mu.Unlock()
	}
	f.metrics.committed(f, len(ups), time.Since(start))
	return nil
}
