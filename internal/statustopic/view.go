package statustopic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kread"
)

// View is the state a status topic's records describe, fed in log order
// by Apply: the target state, the last record of each member and of each
// slot chunk, and when a slot's or member's record was tombstoned. It is
// not safe for concurrent use.
type View struct {
	target       TargetStateRecord
	targetFound  bool
	targetOffset int64 // of the record target comes from, -1 none
	// restarts are the restart requests applied since the last
	// TakeRestarts, in log order (at most maxPendingRestarts, the newest).
	restarts   []RestartEntry
	members    map[string]MemberRecord
	memberGone map[string]time.Time
	slots      map[int32]map[int]SlotRecord
	slotGone   map[int32]time.Time
	// Next is the offset after the last record applied.
	Next int64
	// Bad counts records whose value did not decode (skipped).
	Bad int
	// Clock, when set, stamps each member record applied with the
	// reader's time of arrival (MemberRecord.Arrived). A member tailing
	// the topic sets it once it read the topic's history: a record
	// arriving live proves its writer alive whatever the writer's clock
	// says ([MemberRecord.Stale]). Nil: records are judged by their own
	// time only (a one-off read, the history).
	Clock func() time.Time
	// BadTarget says why the newest target-state record could not be
	// decoded ("" when it could, or there is none): the flow keeps the
	// state of the last one that could (a hand-written record with a
	// typo must not be ignored without a word).
	BadTarget string
}

// NewView returns an empty View (target state RUNNING, not found).
func NewView() *View {
	return &View{target: TargetStateRecord{State: Running}, targetOffset: -1, members: map[string]MemberRecord{},
		memberGone: map[string]time.Time{}, slots: map[int32]map[int]SlotRecord{}, slotGone: map[int32]time.Time{}}
}

// Apply feeds one record of the topic (log order). It reports whether the
// target state changed, or was written again (a new record of the same
// state: [View.TargetOffset] moved, and members report the offset they
// applied). Records it cannot decode are counted in Bad and otherwise
// ignored (a newer kmirror may write fields this one ignores, never a
// shape it cannot read).
func (v *View) Apply(r *kgo.Record) (targetChanged bool) {
	v.Next = r.Offset + 1
	k := string(r.Key)
	switch {
	case k == TargetStateKey:
		if r.Value == nil {
			v.target, v.targetFound, v.targetOffset, v.BadTarget = TargetStateRecord{State: Running}, false, r.Offset, ""
			return true
		}
		rec, err := DecodeTargetState(r.Value)
		if err != nil {
			v.Bad++
			v.BadTarget = fmt.Sprintf("the target-state record at offset %d of %s cannot be read (%v): write it with PUT /connectors/{flow}/stop|pause|resume or Mirror.SetTargetState, or by hand as {\"flow\":\"A->B\",\"state\":\"STOPPED\",\"at\":\"2026-12-01T10:00:00Z\"} (at in RFC 3339)", r.Offset, r.Topic, err)
			return false
		}
		v.BadTarget = ""
		v.target, v.targetFound, v.targetOffset = rec, true, r.Offset
		return true
	case k == RestartKey:
		if r.Value == nil {
			return false // compaction's tombstone: asks nothing
		}
		var rec RestartRecord
		if err := json.Unmarshal(r.Value, &rec); err != nil || rec.check() != nil {
			v.Bad++
			return false
		}
		if len(v.restarts) == maxPendingRestarts {
			v.restarts = slices.Delete(v.restarts, 0, 1)
		}
		v.restarts = append(v.restarts, RestartEntry{RestartRecord: rec, Offset: r.Offset})
	case strings.HasPrefix(k, MemberPrefix):
		id := strings.TrimPrefix(k, MemberPrefix)
		if r.Value == nil {
			delete(v.members, id)
			v.memberGone[id] = r.Timestamp
			return false
		}
		m, err := decodeMember(id, r.Value)
		if err != nil {
			v.Bad++
			return false
		}
		if v.Clock != nil {
			m.Arrived = v.Clock()
		}
		v.members[id] = m
		delete(v.memberGone, id)
	case strings.HasPrefix(k, SlotPrefix):
		n, chunk, ok := parseSlotKey(k)
		if !ok {
			v.Bad++
			return false
		}
		if r.Value == nil {
			if c := v.slots[n]; c != nil {
				delete(c, chunk)
				if len(c) == 0 {
					delete(v.slots, n)
				}
			}
			if chunk == 0 {
				v.slotGone[n] = r.Timestamp
			}
			return false
		}
		var s SlotRecord
		if err := json.Unmarshal(r.Value, &s); err != nil {
			v.Bad++
			return false
		}
		s.Slot, s.Chunk = n, chunk
		if v.slots[n] == nil {
			v.slots[n] = map[int]SlotRecord{}
		}
		v.slots[n][chunk] = s
		if chunk == 0 {
			delete(v.slotGone, n)
		}
	}
	return false
}

// Restarted returns an empty View for the topic read again from its start
// once it was deleted or re-created, but for v's target state, kept until
// the new topic holds a target-state record: a flow stopped for a failover
// is not resumed because its status topic was lost. Its offset is -1 (no
// record of the new topic).
func (v *View) Restarted() *View {
	n := NewView()
	n.target, n.targetFound, n.Clock = v.target, v.targetFound, v.Clock
	return n
}

// TargetState returns the target-state record (State RUNNING, found false,
// when none was written).
func (v *View) TargetState() (TargetStateRecord, bool) { return v.target, v.targetFound }

// TargetOffset returns the offset of the record [View.TargetState] comes
// from (a tombstone's for RUNNING after one), -1 when none was written.
func (v *View) TargetOffset() int64 { return v.targetOffset }

// RestartEntry is a restart request read from the topic and its offset.
type RestartEntry struct {
	RestartRecord
	Offset int64
}

// maxPendingRestarts bounds the restart requests a View keeps between two
// TakeRestarts (a reader that never takes them, or a flood of requests:
// the newest are kept).
const maxPendingRestarts = 256

// TakeRestarts returns the restart requests applied since the last call,
// in log order, and forgets them: a member applies each once, every one
// (several may arrive in one fetch), and drops those of the topic's
// history read before it started. Tombstones and records that do not
// decode are not returned.
func (v *View) TakeRestarts() []RestartEntry {
	out := v.restarts
	v.restarts = nil
	return out
}

// Members returns every member's last record (live or stale), by member id.
func (v *View) Members() map[string]MemberRecord {
	out := make(map[string]MemberRecord, len(v.members))
	for k, m := range v.members {
		out[k] = m
	}
	return out
}

// Member returns member id's last record.
func (v *View) Member(id string) (MemberRecord, bool) {
	m, ok := v.members[id]
	return m, ok
}

// SlotOwner returns the owner of slot n's last record (its chunk 0), and
// whether there is one: [View.Slot] without copying the partitions, for
// the publisher's check every second at thousands of partitions.
func (v *View) SlotOwner(n int32) (owner string, ok bool) {
	first, ok := v.slots[n][0]
	return first.Owner, ok
}

// Slot returns slot n's record with the partitions of all its chunks;
// complete is false when a chunk of the last write is missing (the
// partitions then are those found).
func (v *View) Slot(n int32) (s SlotRecord, complete, ok bool) {
	cs := v.slots[n]
	first, ok := cs[0]
	if !ok {
		return SlotRecord{}, false, false
	}
	s = first
	s.Partitions = slices.Clone(first.Partitions)
	// The chunks present, in order: never a loop up to the record's own
	// count, which a foreign or corrupt record may make huge (regression:
	// TestSlotForeignChunkCountDoesNotWedge).
	idx := make([]int, 0, len(cs))
	for i := range cs {
		if i >= 1 && i < first.Chunks {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	complete = len(idx) == max(first.Chunks, 1)-1
	for _, i := range idx {
		c := cs[i]
		if !c.At.Equal(first.At) || c.Owner != first.Owner {
			complete = false
			continue
		}
		s.Partitions = append(s.Partitions, c.Partitions...)
	}
	s.Chunk = 0
	return s, complete, true
}

// SlotNumbers returns the slots that have a record, sorted.
func (v *View) SlotNumbers() []int32 {
	out := make([]int32, 0, len(v.slots))
	for n, cs := range v.slots {
		if _, ok := cs[0]; ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// SlotChunks returns how many chunks slot n's last write had (0: none).
func (v *View) SlotChunks(n int32) int {
	if c, ok := v.slots[n][0]; ok {
		return max(c.Chunks, 1)
	}
	return 0
}

// SlotGoneAt returns when slot n's record was last tombstoned (zero: never,
// or a record was written since).
func (v *View) SlotGoneAt(n int32) time.Time { return v.slotGone[n] }

// interval returns the publication interval a record declares (the
// default when it declares none).
func interval(ms int64) time.Duration {
	if ms <= 0 {
		return DefaultInterval
	}
	return time.Duration(ms) * time.Millisecond
}

// Stale reports whether m is older than StaleAfter of its own intervals
// at now: its member is taken as gone. A record that arrived (Arrived, the
// reader's clock) within StaleAfter intervals is not stale whatever its
// At: At is the writer's clock, and a member whose clock was behind the
// reader's by more than 3 intervals (15 s by default) was taken as gone
// while it published every interval: its slots shown UNASSIGNED, their
// lag computed by the singleton too, itself missing from the members
// (TestBrk1207MemberClockBehindStaysLive).
func (m MemberRecord) Stale(now time.Time) bool {
	limit := StaleAfter * interval(m.IntervalMS)
	if !m.Arrived.IsZero() && now.Sub(m.Arrived) <= limit {
		return false
	}
	return now.Sub(m.At) > limit
}

// Stale reports whether s is older than StaleAfter of its own intervals at
// now.
func (s SlotRecord) Stale(now time.Time) bool {
	return now.Sub(s.At) > StaleAfter*interval(s.IntervalMS)
}

// MemberState is a live member's applied target state, from ReadMembers.
type MemberState struct {
	MemberID string
	WorkerID string
	// Applied is the target state the member reports it has applied, and
	// AppliedOffset the offset of the target-state record it applied it
	// from (-1: none, or a member of a release that does not say).
	Applied       TargetState
	AppliedOffset int64
	// Age is how old its last record was at the read.
	Age time.Duration
}

// ReadView reads the status topic of source alias source on the cluster
// opts reach to the end offsets listed at the call and returns its View. A
// missing topic is an empty View.
func ReadView(ctx context.Context, opts []kgo.Opt, source string) (*View, error) {
	v := NewView()
	recs, err := kread.ReadToEnd(ctx, opts, Topic(source), kread.Options{})
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return v, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", Topic(source), err)
	}
	for _, r := range recs {
		v.Apply(r)
	}
	return v, nil
}

// ReadMembers returns the live members of the flows from source alias
// source (those whose last record is not stale at now), sorted by member
// id, with the target state each has applied: a command that stopped the
// flow waits until every one reports STOPPED.
func ReadMembers(ctx context.Context, opts []kgo.Opt, source string, now time.Time) ([]MemberState, error) {
	v, err := ReadView(ctx, opts, source)
	if err != nil {
		return nil, err
	}
	return v.LiveMembers(now), nil
}

// LiveMembers returns the members whose last record is not stale at now,
// sorted by member id.
func (v *View) LiveMembers(now time.Time) []MemberState {
	var out []MemberState
	for id, m := range v.members {
		if m.Stale(now) {
			continue
		}
		off := int64(-1)
		if m.AppliedOffset != nil {
			off = *m.AppliedOffset
		}
		out = append(out, MemberState{MemberID: id, WorkerID: m.WorkerID, Applied: m.Applied, AppliedOffset: off, Age: max(now.Sub(m.At), 0)})
	}
	slices.SortFunc(out, func(a, b MemberState) int { return strings.Compare(a.MemberID, b.MemberID) })
	return out
}
