package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// Lag that never hides (issue 20): every source partition of a flow has a
// lag, whether a unit replicates it or not.
//   - A unit's partitions: source end as of its last fetch minus the next
//     offset to replicate (partition.go).
//   - Partitions of slots no live member owns: the member holding slot 0
//     computes their lag from the source's end offsets and the stored
//     resume points and publishes it in the slots' records (owner "",
//     UNASSIGNED), every status interval.
//   - Partitions of a paused or stopped member: its owner refreshes their
//     source end offsets at each publication (their resume points are
//     the final ones its units stored). Owned slots no unit ran since the
//     flow was paused or stopped (a member started on a PAUSED or STOPPED
//     flow, a slot assigned while it is, partitions discovered since) get
//     their partitions from discovery's catalog and the stored resume
//     points (fillPausedParts).
//   - A flow that has not started (RETRYING at start-up): the lag of its
//     selected topics from the source's end offsets and the stored resume
//     points, or unknown when either cluster does not answer.

// partLag is the lag of a partition whose next offset to replicate is
// next (-1: none stored: replication starts at the log start) given the
// partition's log start and end.
func partLag(next, start, end int64) int64 {
	if next < start {
		next = start
	}
	return max(end-next, 0)
}

// sourceOffsets lists the log start and end offsets of topics on the
// source.
func (f *flow) sourceOffsets(ctx context.Context, topics []string) (starts, ends kadm.ListedOffsets, err error) {
	ctx, cancel := context.WithTimeout(ctx, min(f.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	if ends, err = f.srcAdm.ListEndOffsets(ctx, topics...); err == nil {
		starts, err = f.srcAdm.ListStartOffsets(ctx, topics...)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("listing offsets on %s: %w", f.src.Alias, err)
	}
	return starts, ends, nil
}

// storedResumePoints reads the flow's resume points (the last replicated
// offset per source partition).
func (f *flow) storedResumePoints(ctx context.Context) (map[tp]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rp, _, err := readResumePoints(ctx, f.clientOpts(f.dst, f.dst.Consumer), f.resumeTopic, f.cfg.Source, f.log)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return map[tp]int64{}, nil // no resume point stored yet
	}
	if err != nil {
		return nil, fmt.Errorf("reading the resume points in %s on %s: %w", f.resumeTopic, f.dst.Alias, err)
	}
	return rp, nil
}

// unownedSlots returns the slots no live member owns, as this member's
// view of the status topic says (its own slots taken from owned).
func (f *flow) unownedSlots(now time.Time, owned []int32) []int32 {
	claimed := map[int32]bool{}
	for _, k := range owned {
		claimed[k] = true
	}
	f.viewMu.Lock()
	for id, m := range f.view.Members() {
		if id == f.selfID || m.Stale(now) {
			continue
		}
		for _, k := range m.Slots {
			claimed[k] = true
		}
	}
	f.viewMu.Unlock()
	var out []int32
	for k := range f.tasks {
		if !claimed[k] {
			out = append(out, k)
		}
	}
	return out
}

// unownedSlotRecords computes, on the member that owns slot 0, the records
// of the slots no live member owns: their partitions (discovery's
// catalog) with the lag from the source's end offsets and the stored
// resume points, state UNASSIGNED, since the last record of their owner
// (or their tombstone). With the offsets or resume points unreadable, the
// partitions' lag is unknown. Nil on other members, for a flow that
// replicates nothing, and when every slot is owned.
func (f *flow) unownedSlotRecords(ctx context.Context, now time.Time) []statustopic.SlotRecord {
	f.unitsMu.Lock()
	mine := f.owned[0] && !f.leaving
	owned := f.ownedLocked()
	f.unitsMu.Unlock()
	cat := f.catalog.Load()
	if !mine || f.cfg.Disabled || cat == nil {
		return nil
	}
	slots := f.unownedSlots(now, owned)
	if len(slots) == 0 {
		return nil
	}
	var topics []string
	for _, k := range slots {
		for p := range cat.slot(k) {
			if !slices.Contains(topics, p.topic) {
				topics = append(topics, p.topic)
			}
		}
	}
	var starts, ends kadm.ListedOffsets
	var rp map[tp]int64
	var err error
	if len(topics) > 0 {
		if starts, ends, err = f.sourceOffsets(ctx, topics); err == nil {
			rp, err = f.storedResumePoints(ctx)
		}
		if err != nil && ctx.Err() == nil {
			f.log.Debug("lag of the unassigned slots unknown", "slots", slots, "err", err)
		}
	}
	var out []statustopic.SlotRecord
	f.viewMu.Lock()
	defer f.viewMu.Unlock()
	for _, k := range slots {
		since := now
		if rec, _, ok := f.view.Slot(k); ok {
			if rec.Owner == "" && !rec.Since.IsZero() {
				since = rec.Since
			} else if rec.Owner != "" {
				since = rec.At // rewritten when it changes: its owner's last member record is later
				if m, ok := f.view.Member(rec.Owner); ok && m.At.After(since) {
					since = m.At
				}
			}
		} else if at := f.view.SlotGoneAt(k); !at.IsZero() {
			since = at
		}
		s := statustopic.SlotRecord{Flow: f.name, Slot: k, State: string(StateUnassigned), Since: since.UTC(),
			IntervalMS: f.statusInterval.Milliseconds(), At: now.UTC()}
		for p, o := range cat.slot(k) {
			pr := statustopic.PartitionRecord{Topic: p.topic, RemoteTopic: o.remote, Partition: p.partition, State: string(StateUnassigned),
				SourceEnd: -1, Replicated: -1, Committed: -1}
			st, ok1 := starts.Lookup(p.topic, p.partition)
			en, ok2 := ends.Lookup(p.topic, p.partition)
			if err != nil || !ok1 || !ok2 || st.Err != nil || en.Err != nil {
				pr.LagUnknown = true
			} else {
				next := int64(-1)
				if c, ok := rp[p]; ok {
					pr.Committed, next = c, c+1
					pr.Replicated = next
				}
				pr.SourceEnd = en.Offset
				pr.Lag = partLag(next, st.Offset, en.Offset)
			}
			s.Partitions = append(s.Partitions, pr)
		}
		slices.SortFunc(s.Partitions, func(a, b statustopic.PartitionRecord) int {
			if a.Topic != b.Topic {
				if a.Topic < b.Topic {
					return -1
				}
				return 1
			}
			return int(a.Partition - b.Partition)
		})
		out = append(out, s)
	}
	return out
}

// dropPausedLocked forgets the paused partitions of slot k (its unit
// starts, or the slot is released). f.unitsMu must be held.
func (f *flow) dropPausedLocked(k int32) {
	delete(f.pausedParts, k)
	delete(f.pausedUnread, k)
}

// pausedPlaceholdersLocked adds to pausedParts, their lag unknown, the
// partitions discovery's catalog puts in the newly owned slots ks that no
// unit runs (the applied target state is PAUSED or STOPPED), and marks
// them unread so that fillPausedParts reads their resume points. Without
// them a slot taken over while the flow is paused or stopped showed no
// partition and lag 0 until the next due publication (up to a status
// interval, 5 s by default), where "lag never hides" says never 0
// (TestStoppedHandOverNeverShowsLagZero). f.unitsMu must be held.
func (f *flow) pausedPlaceholdersLocked(ks []int32) {
	cat := f.catalog.Load()
	if f.cfg.Disabled || cat == nil || f.leaving || f.applied == TargetRunning {
		return
	}
	for _, k := range ks {
		if f.units[k] != nil || f.stopping[k] != nil || len(f.pausedParts[k]) > 0 {
			continue
		}
		for p, o := range cat.slot(k) {
			f.pausedParts[k] = append(f.pausedParts[k], PartitionStatus{Topic: p.topic, RemoteTopic: o.remote, Partition: p.partition,
				State: State(f.applied), SourceEnd: -1, Replicated: -1, Committed: -1, Since: f.slotSince[k], LagUnknown: true})
			if f.pausedUnread[k] == nil {
				f.pausedUnread[k] = map[tp]bool{}
			}
			f.pausedUnread[k][p] = true
		}
		slices.SortFunc(f.pausedParts[k], comparePartitions)
	}
}

// pausedMissingLocked returns, per owned slot no unit runs while the
// applied target state is PAUSED or STOPPED, the partitions of discovery's
// catalog that pausedParts lacks or holds without their resume point.
// f.unitsMu must be held.
func (f *flow) pausedMissingLocked(cat *catalog) map[int32][]tp {
	if f.cfg.Disabled || cat == nil || f.leaving || f.applied == TargetRunning {
		return nil
	}
	var out map[int32][]tp
	for k := range f.owned {
		if f.units[k] != nil || f.stopping[k] != nil {
			continue // its stop fills pausedParts from the unit's own status
		}
		have := map[tp]bool{}
		for _, p := range f.pausedParts[k] {
			have[tp{p.Topic, p.Partition}] = !f.pausedUnread[k][tp{p.Topic, p.Partition}]
		}
		for p := range cat.slot(k) {
			if !have[p] {
				if out == nil {
					out = map[int32][]tp{}
				}
				out[k] = append(out[k], p)
			}
		}
	}
	return out
}

// fillPausedParts adds to pausedParts the partitions of owned slots no
// unit ran since the flow was paused or stopped (a member that started on
// a PAUSED or STOPPED flow starts no unit, so nothing recorded them: it
// reported lag 0 and no partition, and the singleton does not count owned
// slots): discovery's partitions of the slot, state the applied target
// state, resume point as stored, so that refreshPausedLag gives them
// their lag. With the resume points unreadable they are added with their
// lag unknown, and read again at the next call.
func (f *flow) fillPausedParts(ctx context.Context) {
	cat := f.catalog.Load()
	f.unitsMu.Lock()
	missing := f.pausedMissingLocked(cat)
	f.unitsMu.Unlock()
	if len(missing) == 0 {
		return
	}
	rp, err := f.storedResumePoints(ctx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		f.log.Debug("lag of the paused partitions unknown", "err", err)
	}
	f.unitsMu.Lock()
	defer f.unitsMu.Unlock()
	missing = f.pausedMissingLocked(cat) // as things are now
	for k, ps := range missing {
		offers := cat.slot(k)
		for _, p := range ps {
			i := slices.IndexFunc(f.pausedParts[k], func(s PartitionStatus) bool { return s.Topic == p.topic && s.Partition == p.partition })
			if i < 0 {
				f.pausedParts[k] = append(f.pausedParts[k], PartitionStatus{Topic: p.topic, RemoteTopic: offers[p].remote, Partition: p.partition,
					State: State(f.applied), SourceEnd: -1, Replicated: -1, Committed: -1, Since: f.slotSince[k]})
				i = len(f.pausedParts[k]) - 1
			}
			ps := &f.pausedParts[k][i]
			if err != nil {
				ps.LagUnknown = true
				if f.pausedUnread[k] == nil {
					f.pausedUnread[k] = map[tp]bool{}
				}
				f.pausedUnread[k][p] = true
				continue
			}
			delete(f.pausedUnread[k], p)
			if c, ok := rp[p]; ok {
				ps.Committed, ps.Replicated = c, c+1
			}
		}
		slices.SortFunc(f.pausedParts[k], comparePartitions)
	}
}

// refreshPausedLag lists the source end offsets of the partitions this
// member keeps paused or stopped and updates their lag (their next offset
// is where their units stopped, or the stored resume point for those
// fillPausedParts added, which it calls first). On failure their lag
// becomes unknown.
func (f *flow) refreshPausedLag(ctx context.Context) {
	f.fillPausedParts(ctx)
	f.unitsMu.Lock()
	var topics []string
	for _, ps := range f.pausedParts {
		for _, p := range ps {
			if !slices.Contains(topics, p.Topic) {
				topics = append(topics, p.Topic)
			}
		}
	}
	f.unitsMu.Unlock()
	if len(topics) == 0 {
		return
	}
	starts, ends, err := f.sourceOffsets(ctx, topics)
	if ctx.Err() != nil {
		return
	}
	f.unitsMu.Lock()
	defer f.unitsMu.Unlock()
	for k, ps := range f.pausedParts {
		for i := range ps {
			p := &ps[i]
			if f.pausedUnread[k][tp{p.Topic, p.Partition}] {
				continue // the resume point is unknown: so is the lag
			}
			st, ok1 := starts.Lookup(p.Topic, p.Partition)
			en, ok2 := ends.Lookup(p.Topic, p.Partition)
			if err != nil || !ok1 || !ok2 || st.Err != nil || en.Err != nil {
				p.LagUnknown = true
				continue
			}
			next := p.Replicated
			if next < 0 && p.Committed >= 0 {
				next = p.Committed + 1
			}
			p.SourceEnd, p.Lag, p.LagUnknown = en.Offset, partLag(next, st.Offset, en.Offset), false
		}
	}
}

// startLag is the lag of a flow that has not started: known is false when
// it could not be computed.
type startLag struct {
	lag   int64
	known bool
	at    time.Time
}

// estimateStartLag computes the lag of the flow's selected topics from the
// source's end offsets and the stored resume points, for a flow retrying
// its start-up (no unit runs yet): the records it has to replicate once
// it starts. It records the result for Status (unknown when either
// cluster does not answer).
func (f *flow) estimateStartLag(ctx context.Context) {
	if f.cfg.Disabled || f.srcAdm == nil || f.dstAdm == nil {
		return
	}
	ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lag, err := f.computeStartLag(ectx)
	if ctx.Err() != nil {
		return
	}
	f.mu.Lock()
	f.startLag = &startLag{lag: lag, known: err == nil, at: time.Now()}
	f.mu.Unlock()
	if err != nil {
		f.log.Debug("lag unknown while starting", "err", err)
	}
}

func (f *flow) computeStartLag(ctx context.Context) (int64, error) {
	lctx, cancel := context.WithTimeout(ctx, min(f.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	src, err := f.srcAdm.ListTopics(lctx)
	if err != nil {
		return 0, fmt.Errorf("listing topics on %s: %w", f.src.Alias, err)
	}
	rules := f.currentRules()
	var topics []string
	for _, t := range src.Names() {
		if src[t].Err != nil {
			continue
		}
		if ok, _ := rules.decide(t, nil); ok {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return 0, nil
	}
	starts, ends, err := f.sourceOffsets(ctx, topics)
	if err != nil {
		return 0, err
	}
	rp, err := f.storedResumePoints(ctx)
	if err != nil {
		return 0, err
	}
	var lag int64
	var bad error
	ends.Each(func(en kadm.ListedOffset) {
		st, ok := starts.Lookup(en.Topic, en.Partition)
		if en.Err != nil || !ok || st.Err != nil {
			bad = errors.Join(bad, fmt.Errorf("%s[%d]: offsets unknown", en.Topic, en.Partition))
			return
		}
		next := int64(-1)
		if c, ok := rp[tp{en.Topic, en.Partition}]; ok {
			next = c + 1
		}
		lag += partLag(next, st.Offset, en.Offset)
	})
	return lag, bad
}
