package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kgo"
)

// recreatedWorld is one source partition, t0-0, whose records 0-9 were
// replicated and checkpointed for group g at offset 10, and whose remote
// topic was then re-created and refilled from the source's log start,
// which had moved to 5 (records 0-4 deleted by retention): the new log
// holds source 5-9 at target 0-4. The refill's syncs are returned, not
// read yet. tagIDs: the replicator records the remote topic's ID on them.
func recreatedWorld(t *testing.T, tagIDs bool) (*model, *side, []feedRec) {
	return recreated(t, tagIDs, 10, 10)
}

// recreated is recreatedWorld with n source records, the group at commit.
func recreated(t *testing.T, tagIDs bool, n, commit int64) (*model, *side, []feedRec) {
	t.Helper()
	m := newModel(1)
	m.tagIDs = tagIDs
	s := newSide(t, m, false)
	k := tpKey{"t0", 0}
	m.produce(k, n, 0)
	m.replicate(k, int(n))
	m.commits["g"] = map[tpKey]int64{k: commit}
	emitOnce(t, s, []Checkpoint{cpOf(commit, commit)})

	for o := range int64(5) {
		m.holes[k][o] = true // deleted at the source since
	}
	m.recreateRemote("t0")
	m.replicate(k, int(n))
	if end := m.ends[cpKeyTP{"src.t0", 0}]; end != n-5 {
		t.Fatalf("refilled remote log end = %d, want %d", end, n-5)
	}
	refill := m.feed
	m.feed = nil
	return m, s, refill
}

// emitOnce runs one emission of s, with a sweep (an idle partition's
// target change is found at a sweep), and checks the checkpoints written.
func emitOnce(t *testing.T, s *side, want []Checkpoint) {
	t.Helper()
	s.read(s.m.feed)
	s.m.feed = nil
	s.emitted = nil
	s.e.forceSweep = true
	s.e.emit(context.Background(), s)
	if d := cmp.Diff(want, s.emitted, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("checkpoints written (-want +got):\n%s", d)
	}
}

// cpOf is group g's checkpoint of src.t0-0 at source offset up.
func cpOf(up, down int64) Checkpoint {
	return Checkpoint{Group: "g", Topic: "src.t0", Partition: 0, UpstreamOffset: up, DownstreamOffset: down, Metadata: "m"}
}

// syncRound runs one group offset sync round of s and checks its commits.
func syncRound(t *testing.T, s *side, want []string) {
	t.Helper()
	s.committed = nil
	s.e.sync(context.Background(), s)
	if d := cmp.Diff(want, s.committed, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("group offset sync commits (-want +got):\n%s", d)
	}
}

// noneDiscarded checks that s's emitter discarded no offset syncs.
func noneDiscarded(t *testing.T, s *side) {
	t.Helper()
	if len(s.e.discarded) != 0 {
		t.Fatalf("discarded %v: want nothing", s.e.discarded)
	}
}

// TestRecreatedRemoteKeepsTheRefillsSyncs: the replicator refilled a
// re-created remote topic and its syncs, which record the new topic ID,
// were read before the emission that lists the new ID. They describe the
// current log and are kept: the checkpoint goes down to the new log's
// offset at once. Before, every sync of the partition was discarded as
// stale, and an idle partition, which gets no other sync, stayed without a
// checkpoint until its next record.
func TestRecreatedRemoteKeepsTheRefillsSyncs(t *testing.T) {
	_, s, refill := recreatedWorld(t, true)
	s.read(refill)
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
	gs, _ := groupStatus(s.e, "g")
	want := []PartitionStatus{{Topic: "t0", RemoteTopic: "src.t0", Partition: 0, Exact: true, CheckpointExact: true,
		SourceOffset: 10, Translated: 5, Checkpointed: 5, TargetOffset: -1, Reason: ReasonNotSyncedYet}}
	if d := cmp.Diff(want, gs.Partitions); d != "" {
		t.Errorf("partition status (-want +got):\n%s", d)
	}
}

// TestRecreatedRemoteUntaggedSyncsDiscarded: the same with syncs that do
// not record the remote topic's ID (MM2's, older kmirror releases'): the
// emitter cannot tell the refill's syncs from the old log's and discards
// them all; the partition waits for the next sync.
func TestRecreatedRemoteUntaggedSyncsDiscarded(t *testing.T) {
	m, s, refill := recreatedWorld(t, false)
	s.read(refill)
	emitOnce(t, s, nil)
	gs, _ := groupStatus(s.e, "g")
	if len(gs.Partitions) != 1 || gs.Partitions[0].Reason != ReasonStaleTarget || gs.Partitions[0].Translated != -1 {
		t.Fatalf("status %+v: want no translation, %q", gs, ReasonStaleTarget)
	}
	k := tpKey{"t0", 0}
	m.produce(k, 1, 0)
	m.replicate(k, 1) // source 10 at target 5
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
}

// TestSyncsArrivingWhileListingAreKept is the race a review found: the
// refill's syncs arrive while the emission lists the target, after it
// translated the partition from the old log's syncs. The old translation
// (10, past the new log end 5) is not checkpointed, but the syncs that
// arrived are not discarded with the old ones: the next emission
// translates from them. With syncs that record no topic ID too: only the
// old log's syncs, replaced by the refill's, are gone.
func TestSyncsArrivingWhileListingAreKept(t *testing.T) {
	for _, tagIDs := range []bool{true, false} {
		t.Run(fmt.Sprintf("tagIDs=%v", tagIDs), func(t *testing.T) {
			_, s, refill := recreatedWorld(t, tagIDs)
			s.onList = func() {
				s.read(refill)
				s.onList = nil
			}
			emitOnce(t, s, nil)
			noneDiscarded(t, s) // the syncs changed during the listing
			emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
		})
	}
}

// TestSyncsOfAnUnlistedTopicIDWait: the refill's syncs name the new
// remote topic ID while the emission's listing still shows the old one (a
// metadata answer behind the replicator's). Their translation is not
// checkpointed against the old log, and they are not discarded: the next
// emission, whose listing shows the new ID, checkpoints it.
func TestSyncsOfAnUnlistedTopicIDWait(t *testing.T) {
	m, s, refill := recreatedWorld(t, true)
	newID := m.remote["src.t0"]
	oldID := s.e.remoteIDs["src.t0"]
	if oldID == newID || oldID == ([16]byte{}) {
		t.Fatalf("listed ID %x, new ID %x: want an older listed ID", oldID, newID)
	}
	s.read(refill)
	m.remote["src.t0"] = oldID // the listing is behind
	emitOnce(t, s, nil)
	noneDiscarded(t, s)
	m.remote["src.t0"] = newID
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
}

// TestRefillArrivingWhileListingWithinTheEnd (review): as
// TestSyncsArrivingWhileListingAreKept, but the old log's translation (10)
// is within the refilled log's end (15), so no check finds it stale. The
// refill's first sync restarted the partition's history during the
// listing: the translation made before is not checkpointed (it would
// skip source 10-14, at target 5-9 now, and a later, lower one would
// never replace it), and the next emission checkpoints the new log's.
func TestRefillArrivingWhileListingWithinTheEnd(t *testing.T) {
	_, s, refill := recreated(t, true, 20, 10)
	s.onList = func() {
		s.read(refill)
		s.onList = nil
	}
	emitOnce(t, s, nil)
	// Nor does group offset sync commit the old log's checkpoint (10)
	// meanwhile (second review: the held partition kept it).
	syncRound(t, s, nil) // not while the translation is held
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
	syncRound(t, s, []string{"g src.t0-0=5"})
}

// TestListingBehindKeepsTheSyncs (review): after the emitter listed the
// re-created topic's new ID and checkpointed from the refill's syncs, a
// listing answered from stale metadata shows the old ID again. Topic IDs
// are never reused: the listing is behind, and the refill's syncs (which
// an idle partition never repeats) are kept; the next listing shows the
// new ID and the group's next commit is checkpointed from them.
func TestListingBehindKeepsTheSyncs(t *testing.T) {
	m, s, refill := recreatedWorld(t, true)
	oldID := s.e.remoteIDs["src.t0"]
	s.read(refill)
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
	newID := m.remote["src.t0"]
	m.remote["src.t0"] = oldID
	m.commits["g"][tpKey{"t0", 0}] = 8
	emitOnce(t, s, nil)
	noneDiscarded(t, s) // the listing is behind
	m.remote["src.t0"] = newID
	emitOnce(t, s, []Checkpoint{cpOf(8, 3)})
}

// TestRetiredIDListedTwiceIsCurrent (second and third reviews): a lagging
// broker's answer showed an ID the emitter had not seen, which retired the
// current one; every later listing shows the current ID again. Two
// listings in a row bring it back, instead of its partitions waiting for
// good; the refill's syncs, tagged with it, only waited meanwhile (an ID
// is older only once a listing replaced it before), so the group's next
// commit is checkpointed from them without any new record.
func TestRetiredIDListedTwiceIsCurrent(t *testing.T) {
	m, s, refill := recreatedWorld(t, true)
	s.read(refill)
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
	cur := m.remote["src.t0"]
	m.remote["src.t0"] = [16]byte{0xee} // the lagging answer
	emitOnce(t, s, nil)
	m.remote["src.t0"] = cur
	emitOnce(t, s, nil) // a retired ID: behind, once
	if !s.e.retired["src.t0"][cur] {
		t.Fatalf("retired %v: want the current ID %x retired by the lagging answer", s.e.retired["src.t0"], cur)
	}
	m.commits["g"][tpKey{"t0", 0}] = 8
	emitOnce(t, s, []Checkpoint{cpOf(8, 3)})
	noneDiscarded(t, s) // the refill's syncs are kept
	if s.e.retired["src.t0"][cur] || s.e.remoteIDs["src.t0"] != cur {
		t.Errorf("remote ID %x, retired %v: want %x current again", s.e.remoteIDs["src.t0"], s.e.retired["src.t0"], cur)
	}
}

// TestWaitingPartitionNotSyncedFromItsOldCheckpoint (third review): while
// the refill's syncs wait for a listing that shows their topic ID, group
// offset sync does not fall back on the partition's checkpoint of the old
// log (10, within the refilled log's end 15 but 5 records past the exact
// 5): the target group, emptied with the deleted topic, would skip them
// for good (group offset sync never moves an offset back).
func TestWaitingPartitionNotSyncedFromItsOldCheckpoint(t *testing.T) {
	m, s, refill := recreated(t, true, 20, 10)
	newID := m.remote["src.t0"]
	s.read(refill)
	m.remote["src.t0"] = s.e.remoteIDs["src.t0"] // the listing is behind
	emitOnce(t, s, nil)
	syncRound(t, s, nil) // not while the syncs wait
	m.remote["src.t0"] = newID
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
	syncRound(t, s, []string{"g src.t0-0=5"})
}

// TestSyncRoundAfterRecreationCommitsNothingUnchecked: the remote topic is
// re-created and refilled after an emission translated the group at 10 on
// the old log (where source offset 10 was at 10), and group offset sync
// runs before the next emission lists the target. On the refilled log
// source offset 10 is at 5: committing 10 would skip five records for
// good (a target group offset is never moved back). Before, the round
// committed 10. It now commits nothing and asks the next emission for a
// sweep, which finds the new topic ID; the round after commits 5.
func TestSyncRoundAfterRecreationCommitsNothingUnchecked(t *testing.T) {
	_, s, refill := recreated(t, true, 20, 10)
	s.read(refill)
	syncRound(t, s, nil)
	pe := s.e.groups["g"].parts[0]
	if got := pe.notes().syncReason; got != ReasonTargetUnchecked {
		t.Errorf("sync reason = %q, want %q", got, ReasonTargetUnchecked)
	}
	if !s.e.forceSweep {
		t.Fatal("the sync round did not ask the next emission for a sweep")
	}
	s.emitted = nil
	s.e.emit(context.Background(), s) // no forced sweep by the test
	if d := cmp.Diff([]Checkpoint{cpOf(10, 5)}, s.emitted); d != "" {
		t.Fatalf("checkpoints written (-want +got):\n%s", d)
	}
	syncRound(t, s, []string{"g src.t0-0=5"})
}

// TestSyncRoundAfterFailedListingCommitsNothingUnchecked: the group moves
// to 15 after the remote topic was re-created; the emission translates it
// with the old log's syncs (15) but cannot list the target, so nothing
// checked the translation. On the refilled log source offset 15 is at 10.
// Before, the sync round committed 15; it now commits nothing until an
// emission has listed the target.
func TestSyncRoundAfterFailedListingCommitsNothingUnchecked(t *testing.T) {
	m, s, refill := recreated(t, false, 20, 10)
	m.commits["g"][tpKey{"t0", 0}] = 15
	s.listErr = errors.New("target unreachable")
	emitOnce(t, s, nil)
	syncRound(t, s, nil)
	s.listErr = nil
	s.read(refill)
	emitOnce(t, s, nil) // untagged syncs: discarded, the partition waits
	syncRound(t, s, nil)
	k := tpKey{"t0", 0}
	m.produce(k, 1, 0)
	m.replicate(k, 1) // source 20 at target 15
	m.commits["g"][k] = 20
	emitOnce(t, s, []Checkpoint{cpOf(20, 15)})
	syncRound(t, s, []string{"g src.t0-0=15"})
}

// TestLoadedCheckpointOfThePreviousLogForgotten: a member starts after the
// remote topic was re-created and refilled (source 5-9 at target 0-4, then
// 10-19 at 5-14), and loads group g's last checkpoint, (10, 10), which MM2
// or an older release wrote on the old log and which records no topic ID.
// Its first listing has no earlier ID to compare with, and 10 is within
// the new log's end (15). Before, the exact translation (10, 5) was
// refused as older than the loaded checkpoint, and group offset sync fell
// back on it and committed 10: five records skipped for good. The loaded
// checkpoint is now forgotten, (10, 5) written and 5 committed.
func TestLoadedCheckpointOfThePreviousLogForgotten(t *testing.T) {
	for _, tagIDs := range []bool{true, false} {
		t.Run(fmt.Sprintf("tagIDs=%v", tagIDs), func(t *testing.T) {
			m := newModel(1)
			m.tagIDs = tagIDs
			k := tpKey{"t0", 0}
			oldLogRecreated(m, 10, 5)
			m.replicate(k, 10)
			m.produce(k, 10, 0)
			m.replicate(k, 10)
			if end := m.ends[cpKeyTP{"src.t0", 0}]; end != 15 {
				t.Fatalf("refilled remote log end = %d, want 15", end)
			}
			m.commits["g"] = map[tpKey]int64{k: 10}
			s := newSide(t, m, false)
			if !s.e.cps.Load(cpOf(10, 10)) {
				t.Fatal("Load of the old checkpoint returned false")
			}
			refill := m.feed[len(m.feed)-2:] // the new log's last syncs: the older ones were compacted away
			m.feed = nil
			s.read(refill)
			emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
			syncRound(t, s, []string{"g src.t0-0=5"})
		})
	}
}

// TestSyncRoundAfterRecreationOfAnIdlePartition: as
// TestSyncRoundAfterRecreationCommitsNothingUnchecked, but the refill's
// syncs arrive only after the next emission: nothing marks the partition
// changed, and only the sweep the round asked for lists the new topic ID.
// The old log's syncs are dropped then, and the partition checkpoints and
// commits 5 once the refill's syncs are read.
func TestSyncRoundAfterRecreationOfAnIdlePartition(t *testing.T) {
	_, s, refill := recreated(t, true, 20, 10)
	syncRound(t, s, nil)
	if !s.e.forceSweep {
		t.Fatal("the sync round did not ask the next emission for a sweep")
	}
	s.emitted = nil
	s.e.emit(context.Background(), s) // no forced sweep by the test
	if len(s.emitted) != 0 {
		t.Fatalf("checkpoints written %v before the refill's syncs: want none", s.emitted)
	}
	if got := s.e.remoteIDs["src.t0"]; got != s.m.remote["src.t0"] {
		t.Fatalf("remote topic ID after the emission = %x, want the new %x", got, s.m.remote["src.t0"])
	}
	syncRound(t, s, nil)
	s.read(refill)
	s.emitted = nil
	s.e.emit(context.Background(), s)
	if d := cmp.Diff([]Checkpoint{cpOf(10, 5)}, s.emitted); d != "" {
		t.Fatalf("checkpoints written (-want +got):\n%s", d)
	}
	syncRound(t, s, []string{"g src.t0-0=5"})
}

// oldLogRecreated replicates n records of t0-0 (source 0 to n-1 at target
// 0 to n-1), then deletes the source offsets below start (retention) and
// re-creates the remote topic: empty, under a new ID, its refill not
// replicated yet. It returns the old log's sync and run records and leaves
// m.feed empty.
func oldLogRecreated(m *model, n, start int64) []feedRec {
	k := tpKey{"t0", 0}
	m.produce(k, n, 0)
	m.replicate(k, int(n))
	old := m.feed
	m.feed = nil
	for o := range start {
		m.holes[k][o] = true
	}
	m.recreateRemote("t0")
	return old
}

// loadedSide is a new emitter (a member starting) on m's world that loaded
// cp from the checkpoints topic as MM2 or an older release wrote it (no
// remote topic ID) and read feed.
func loadedSide(t *testing.T, m *model, cp Checkpoint, feed []feedRec) *side {
	t.Helper()
	s := newSide(t, m, false)
	if !s.e.cps.Load(cp) {
		t.Fatalf("Load(%v) returned false", cp)
	}
	s.read(feed)
	return s
}

// syncsOnly returns the offset syncs of feed without their headers, as
// Apache MM2's replication writes them (and no offset runs).
func syncsOnly(feed []feedRec) []feedRec {
	var out []feedRec
	for _, r := range feed {
		if r.sync != nil {
			out = append(out, feedRec{sync: r.sync})
		}
	}
	return out
}

// TestLoadedCheckpointAboveASafeTranslationForgotten (review of
// TestLoadedCheckpointOfThePreviousLogForgotten): the same with a safe
// translation. Old log: source 0-29 at 0-29, checkpoint (30, 30) loaded.
// Re-created and refilled from source log start 10: 10-39 at 0-29, of
// which the emitter has read the syncs and runs of 10-29 only (the rest
// come with the next offset flush). The group is at 35: its translation
// is 20, safe, with at most 5 records re-read; the exact offset is 25.
// Before, the loaded checkpoint stayed and group offset sync fell back on
// it: 30 committed, five records skipped. It is now forgotten (20 + 5 <
// 30), (35, 20) written and 20 committed.
func TestLoadedCheckpointAboveASafeTranslationForgotten(t *testing.T) {
	for _, tagIDs := range []bool{true, false} {
		t.Run(fmt.Sprintf("tagIDs=%v", tagIDs), func(t *testing.T) {
			m := newModel(1)
			m.tagIDs = tagIDs
			k := tpKey{"t0", 0}
			oldLogRecreated(m, 30, 10)
			m.replicate(k, 30)
			read := m.feed
			m.feed = nil
			m.produce(k, 10, 0)
			m.replicate(k, 10) // not read yet
			m.feed = nil
			m.commits["g"] = map[tpKey]int64{k: 35}
			if x := m.exactAt(cpKeyTP{"src.t0", 0}, 35); x != 25 {
				t.Fatalf("exact offset of 35 = %d, want 25", x)
			}
			s := loadedSide(t, m, cpOf(30, 30), read)
			emitOnce(t, s, []Checkpoint{cpOf(35, 20)})
			syncRound(t, s, []string{"g src.t0-0=20"})
		})
	}
}

// TestLoadedCheckpointWithSyncsOnlyForgotten: the scenario of
// TestLoadedCheckpointOfThePreviousLogForgotten with Apache MM2's
// replication (offset syncs without headers, no runs): the translation of
// 10 is MM2's, safe, from the sync (10, 5) (nothing re-read). Before, group
// offset sync committed the loaded old-log checkpoint's 10.
func TestLoadedCheckpointWithSyncsOnlyForgotten(t *testing.T) {
	m := newModel(1)
	k := tpKey{"t0", 0}
	oldLogRecreated(m, 10, 5)
	m.replicate(k, 10)
	m.produce(k, 10, 0)
	m.replicate(k, 10)
	feed := syncsOnly(m.feed)
	m.feed = nil
	m.commits["g"] = map[tpKey]int64{k: 10}
	s := loadedSide(t, m, cpOf(10, 10), feed)
	s.e.runs = nil
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
	syncRound(t, s, []string{"g src.t0-0=5"})
}

// TestLoadedCheckpointNotCommittedWithoutTranslation: syncs only, and the
// group's offset (7) is older than every sync of the log refilled from
// source log start 10: no translation at all. The loaded checkpoint (5,
// 5), of the old log, is kept in the checkpoints topic (nothing shows it
// wrong; MM2 keeps it too), but group offset sync no longer falls back on
// a checkpoint that records no remote topic ID: before, it committed 5,
// past the new log's 0 where source 10 is.
func TestLoadedCheckpointNotCommittedWithoutTranslation(t *testing.T) {
	m := newModel(1)
	k := tpKey{"t0", 0}
	oldLogRecreated(m, 20, 10)
	m.replicate(k, 20)
	feed := syncsOnly(m.feed)
	m.feed = nil
	m.commits["g"] = map[tpKey]int64{k: 7}
	s := loadedSide(t, m, cpOf(5, 5), feed)
	s.e.runs = nil
	emitOnce(t, s, nil)
	syncRound(t, s, nil)
	if last, ok := s.e.cps.Last("g", "src.t0", 0); !ok || last != cpOf(5, 5) {
		t.Errorf("last checkpoint %v, %v: want the loaded %v kept", last, ok, cpOf(5, 5))
	}
}

// staleSource answers the source topic IDs from ids instead of the model.
type staleSource struct {
	*side
	ids map[string][16]byte
}

func (s staleSource) topicIDs(context.Context, []string) (map[string][16]byte, error) {
	return s.ids, nil
}

// TestStaleSourceTopicIDDoesNotRewindACheckpoint (review): source topic t0
// was re-created; its first incarnation (ID a) is at target 0-99, the
// second (ID b) at 100-199 of the same remote log, and group g's
// checkpoint at 50 of the second is (50, 150), translated from syncs and
// runs recording the remote topic's ID (kmirror's replicator), so
// recording it too. One lagging source broker then answers the old ID a:
// the group's new offset 60 translates exactly with a's runs, to 60. That
// checkpoint records the current remote topic, so it is of this log and
// is kept: the lower (60, 60) is refused as MM2 refuses it. A first fix
// forgot it and wrote (60, 60): consumers failing over would have re-read
// 40 records of the deleted incarnation and 60 of the current one.
func TestStaleSourceTopicIDDoesNotRewindACheckpoint(t *testing.T) {
	m := newModel(1)
	a, b := [16]byte{0xa0}, [16]byte{0xb0}
	hs := targetID{cluster: m.cluster, topic: m.remote["src.t0"]}.headers() // kmirror's replicator
	run := func(id [16]byte, session uint64, down int64) feedRec {
		r := OffsetRun{Topic: "t0", Partition: 0, Session: session, TopicID: id, Fresh: true, SessionOffset: down,
			PrevUpstreamOffset: -1, PrevOffset: -1, FirstOffset: down, Count: 100, EndUpstreamOffset: -1, Committed: -1}
		return feedRec{run: &r, headers: hs}
	}
	sync := func(up, down int64) feedRec {
		s := OffsetSync{Topic: "t0", Partition: 0, UpstreamOffset: up, DownstreamOffset: down}
		return feedRec{sync: &s, headers: hs}
	}
	m.ends[cpKeyTP{"src.t0", 0}] = 200
	s := newSide(t, m, false)
	s.read([]feedRec{run(a, 1, 0), sync(0, 0), sync(99, 99), run(b, 2, 100), sync(0, 100), sync(99, 199)})
	k := tpKey{"t0", 0}
	m.commits["g"] = map[tpKey]int64{k: 50}
	emit := func(id [16]byte, want []Checkpoint) {
		t.Helper()
		s.emitted = nil
		s.e.forceSweep = true
		s.e.emit(context.Background(), staleSource{s, map[string][16]byte{"t0": id, "t1": {0xff, 2}, "t2": {0xff, 2}}})
		if d := cmp.Diff(want, s.emitted, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("checkpoints written (-want +got):\n%s", d)
		}
	}
	emit(b, []Checkpoint{cpOf(50, 150)})
	m.commits["g"][k] = 60
	emit(a, nil) // the stale answer
	emit(b, []Checkpoint{cpOf(60, 160)})
}

// TestRestartWithTheOldLogsUntaggedSyncsOnly (second review): a member
// restarts after the remote topic was re-created and refilled from source
// log start 20, before the refill's syncs (recording no topic ID: MM2's or
// an older release's replicator) reached the syncs topic. Its first listing
// has nothing to compare with, and the old log's translation of the
// group's 30 (30, within the new log's end 40) is written. That checkpoint
// recorded the listed, new topic ID, although nothing showed its syncs were
// of that log; group offset sync then fell back on it and committed 30
// where source 30 is at 10, even after the refill's syncs were read. It
// now records no topic ID (translatedFrom): once the refill's syncs are
// read it is rewritten to (30, 10), and 10 is committed.
func TestRestartWithTheOldLogsUntaggedSyncsOnly(t *testing.T) {
	m := newModel(1)
	k := tpKey{"t0", 0}
	history := oldLogRecreated(m, 30, 20)
	m.replicate(k, 10)
	m.produce(k, 30, 0)
	m.replicate(k, 30)
	refill := m.feed
	m.feed = nil
	m.commits["g"] = map[tpKey]int64{k: 30}
	if end, x := m.ends[cpKeyTP{"src.t0", 0}], m.exactAt(cpKeyTP{"src.t0", 0}, 30); end != 40 || x != 10 {
		t.Fatalf("new log end %d, exact offset of 30 %d: want 40 and 10", end, x)
	}
	s := newSide(t, m, false)
	s.read(history)
	// The documented limit: until the refill's first sync is read, nothing
	// tells the old log's translation from the new one's (a sync round now
	// would commit it too).
	emitOnce(t, s, []Checkpoint{cpOf(30, 30)})
	if id := s.e.cps.Target("g", "src.t0", 0); id.topic != ([16]byte{}) {
		t.Fatalf("checkpoint from syncs recording no topic ID records %x, want none", id.topic)
	}
	s.read(refill)
	emitOnce(t, s, []Checkpoint{cpOf(30, 10)})
	syncRound(t, s, []string{"g src.t0-0=10"})
}

// TestRestartWithUntaggedSyncsAndNoTranslation (second review): as
// TestRestartWithTheOldLogsUntaggedSyncsOnly with MM2's replication (syncs
// only) and a refill starting past the group's offset (source log start
// 35, group at 30): once the refill's syncs are read the group has no
// translation. Before, group offset sync fell back on the checkpoint the
// first emission wrote from the old log's syncs (30, recording the new
// topic ID) and committed it where source 30's first record is at 0.
func TestRestartWithUntaggedSyncsAndNoTranslation(t *testing.T) {
	m := newModel(1)
	k := tpKey{"t0", 0}
	history := syncsOnly(oldLogRecreated(m, 30, 35))
	m.produce(k, 35, 0)
	m.replicate(k, 30)
	m.produce(k, 10, 0)
	m.replicate(k, 10)
	refill := syncsOnly(m.feed)
	m.feed = nil
	m.commits["g"] = map[tpKey]int64{k: 30}
	s := newSide(t, m, false)
	s.e.runs = nil
	s.read(history)
	emitOnce(t, s, []Checkpoint{cpOf(30, 30)}) // the documented limit, as above
	s.read(refill)
	emitOnce(t, s, nil)
	syncRound(t, s, nil)
	if len(s.skips) > 0 {
		t.Fatalf("group offset sync skips records: %v", s.skips)
	}
}

// untaggedThenTaggedRefill is the world of the third review: t0-0's old
// log was replicated by MM2 or an older release (syncs recording no
// topic ID), source 0-19 at 0-19; the remote topic was re-created and
// kmirror refilled it from source log start 5 (5-19 at 0-14, syncs
// recording the new ID), and group g is at 10, whose exact offset is 5.
// It returns the old log's records and the refill's.
func untaggedThenTaggedRefill(t *testing.T) (m *model, old, refill []feedRec) {
	t.Helper()
	m = newModel(1)
	k := tpKey{"t0", 0}
	old = oldLogRecreated(m, 20, 5)
	m.tagIDs = true
	m.replicate(k, 20)
	refill = m.feed
	m.feed = nil
	m.commits["g"] = map[tpKey]int64{k: 10}
	if x := m.exactAt(cpKeyTP{"src.t0", 0}, 10); x != 5 {
		t.Fatalf("exact offset of 10 = %d, want 5", x)
	}
	return m, old, refill
}

// TestTaggedRefillArrivingWhileListingAfterUntaggedSyncs (third review):
// a member starts with the old log's untagged syncs read; the refill's
// first syncs, recording the new topic ID, arrive while the emission
// lists the target, after it translated g from the old log's syncs (10,
// within the new log's end 15). Before, nothing held that translation (an
// untagged history does not differ from a tagged record), and its
// checkpoint recorded the new ID from the tags at queue time: group offset
// sync committed 10 and kept falling back on it. The record that first
// records an ID now holds the translation; the next emission writes (10,
// 5) and 5 is committed.
func TestTaggedRefillArrivingWhileListingAfterUntaggedSyncs(t *testing.T) {
	m, old, refill := untaggedThenTaggedRefill(t)
	s := newSide(t, m, false)
	s.read(old)
	s.onList = func() {
		s.read(refill)
		s.onList = nil
	}
	emitOnce(t, s, nil)
	syncRound(t, s, nil)
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
	syncRound(t, s, []string{"g src.t0-0=5"})
}

// TestTaggedRefillArrivingWhileListingOfARunningEmitter: the same with an
// emitter that checkpointed g on the old log before the re-creation.
func TestTaggedRefillArrivingWhileListingOfARunningEmitter(t *testing.T) {
	m := newModel(1)
	k := tpKey{"t0", 0}
	s := newSide(t, m, false)
	m.produce(k, 20, 0)
	m.replicate(k, 20)
	m.commits["g"] = map[tpKey]int64{k: 10}
	emitOnce(t, s, []Checkpoint{cpOf(10, 10)})
	for o := range int64(5) {
		m.holes[k][o] = true
	}
	m.recreateRemote("t0")
	m.tagIDs = true
	m.replicate(k, 20)
	refill := m.feed
	m.feed = nil
	s.onList = func() {
		s.read(refill)
		s.onList = nil
	}
	emitOnce(t, s, nil)
	syncRound(t, s, nil)
	emitOnce(t, s, []Checkpoint{cpOf(10, 5)})
	syncRound(t, s, []string{"g src.t0-0=5"})
}

// TestLoadedCheckpointOfAnEarlierReleaseNotTrusted (third review): a
// release before TranslatedFromHeader recorded the listed topic ID on
// every checkpoint, also on one it translated from an old log's syncs
// recording none at a first listing: (30, 30), recording the new log's ID,
// where source 30 is at 10 on the new log. Loaded, it is taken for MM2's
// (checkpointTargetOf): rewritten lower, and never fallen back on. Before,
// it was exempt from the bound and group offset sync committed 30.
func TestLoadedCheckpointOfAnEarlierReleaseNotTrusted(t *testing.T) {
	m := newModel(1)
	k := tpKey{"t0", 0}
	oldLogRecreated(m, 30, 20)
	m.replicate(k, 10)
	m.produce(k, 30, 0)
	m.replicate(k, 30)
	refill := m.feed // recording no topic ID
	m.feed = nil
	m.commits["g"] = map[tpKey]int64{k: 30}
	earlier := targetID{cluster: m.cluster, topic: m.remote["src.t0"]}.headers() // no TranslatedFromHeader
	s := loadedSide(t, m, cpOf(30, 30), refill)
	s.e.cps.SetTarget("g", "src.t0", 0, checkpointTargetOf(earlier))
	emitOnce(t, s, []Checkpoint{cpOf(30, 10)})
	syncRound(t, s, []string{"g src.t0-0=10"})
}

// TestCheckpointHeadersRoundTrip: a checkpoint translated from syncs
// recording the remote topic ID carries it in TargetTopicIDHeader (for
// earlier releases) and TranslatedFromHeader, and loads with it; one
// recording none carries the cluster only; an earlier release's topic ID
// without TranslatedFromHeader loads as none.
func TestCheckpointHeadersRoundTrip(t *testing.T) {
	tr := kgo.RecordHeader{Key: TranslationHeader, Value: []byte("exact")}
	id := targetID{cluster: "dst", topic: [16]byte{7}}
	hs := checkpointHeaders(id, tr)
	want := []kgo.RecordHeader{{Key: TargetClusterHeader, Value: []byte("dst")}, {Key: TargetTopicIDHeader, Value: id.topic[:]},
		{Key: TranslatedFromHeader, Value: id.topic[:]}, tr}
	if d := cmp.Diff(want, hs); d != "" {
		t.Errorf("headers (-want +got):\n%s", d)
	}
	if got := checkpointTargetOf(hs); got != id {
		t.Errorf("loaded %+v, want %+v", got, id)
	}
	clusterOnly := targetID{cluster: "dst"}
	if got := checkpointTargetOf(checkpointHeaders(clusterOnly, tr)); got != clusterOnly {
		t.Errorf("loaded %+v, want %+v", got, clusterOnly)
	}
	if got := checkpointTargetOf(append(id.headers(), tr)); got != clusterOnly {
		t.Errorf("an earlier release's checkpoint loaded as %+v, want %+v", got, clusterOnly)
	}
}
