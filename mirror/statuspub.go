package mirror

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/statustopic"
)

// The flow's status topic (internal/statustopic): every member tails it
// (the target state, the other members' and slots' records) and publishes
// its own member record and the records of the slots it owns.

// statusProducerOpts bound the status topic's writes: a record that
// cannot be written in 10 s is given up (the next publication replaces
// it), and one request in flight keeps them in order.
var statusProducerOpts = []kgo.Opt{kgo.RecordDeliveryTimeout(10 * time.Second), kgo.MaxProduceRequestsInflightPerBroker(1),
	kgo.DisableIdempotentWrite()}

// defaultWorkerID is the worker id of a Mirror without WithWorkerID: the
// host name.
func defaultWorkerID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "kmirror"
	}
	return h
}

// newMemberID returns a member id unique to this flow's run:
// "<worker id>-<8 hex digits>".
func newMemberID(worker string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return worker + "-" + hex.EncodeToString(b[:])
}

// statusTopicSpec is the flow's status topic on the target.
func (f *flow) statusTopicSpec() ensuretopic.Spec {
	return statustopic.Spec(f.cfg.Source, f.dst.Alias, f.cfg.OffsetStorageReplicationFactor)
}

// statusFetchWait bounds the status client's idle fetches: the broker
// answers as soon as a record arrives, so a longer wait costs no delay,
// only fewer requests while nothing changes (it was 1 s: one fetch a
// second on the target for every member of every flow).
const statusFetchWait = 5 * time.Second

// openStatus creates the status topic if it is missing, opens the flow's
// status client (it tails the topic from its start and writes the
// member's records) and reads the topic to its end, so that the flow
// knows its target state before it starts anything. Called by start,
// which retries it; the client is kept across retries.
func (f *flow) openStatus(ctx context.Context) error {
	if _, err := f.ensureTopic(ctx, f.dstAdm, f.statusTopicSpec()); err != nil {
		return err
	}
	if f.statusCl == nil {
		cl, err := f.newStatusClient()
		if err != nil {
			return err
		}
		f.statusCl = cl
	}
	if id, ok, err := f.statusTopicIDNow(ctx); err == nil && ok {
		f.statusTopicID = id
	}
	// A topic just created may not be in every broker's metadata yet.
	var ends kadm.ListedOffsets
	for wait := time.Now().Add(10 * time.Second); ; {
		var err error
		ends, err = f.dstAdm.ListEndOffsets(ctx, f.statusTopic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) || time.Now().After(wait) || ctx.Err() != nil {
			return fmt.Errorf("listing the end of %s on %s: %w", f.statusTopic, f.dst.Alias, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	end := int64(0)
	if o, ok := ends.Lookup(f.statusTopic, 0); ok {
		end = o.Offset
	}
	idle := time.Now()
	for {
		f.viewMu.Lock()
		next := f.view.Next
		f.viewMu.Unlock()
		if next >= end {
			break
		}
		if time.Since(idle) > 30*time.Second {
			f.dropStatusClient()
			return fmt.Errorf("reading %s on %s: no record for 30 s at offset %d of %d", f.statusTopic, f.dst.Alias, next, end)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		n, err := f.pollStatus(pctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if statusTopicLost(err) {
				f.dropStatusClient()
			}
			return fmt.Errorf("reading %s on %s: %w", f.statusTopic, f.dst.Alias, err)
		}
		if n > 0 {
			idle = time.Now()
		}
	}
	f.viewMu.Lock()
	// Restart requests written before the member started are history: a
	// partition failed since restarts on a request written since.
	f.view.TakeRestarts()
	// Member records arriving from now on prove their writers alive,
	// whatever their clocks (MemberRecord.Stale).
	f.view.Clock = time.Now
	f.restartSeen = f.view.Next - 1
	f.viewMu.Unlock()
	st, off := f.desiredTargetOffset()
	f.unitsMu.Lock()
	if f.applied != st {
		f.applied, f.appliedAt = st, time.Now()
	}
	f.appliedOffset = off
	f.reported, f.reportedOffset = f.applied, off // nothing runs yet
	f.unitsMu.Unlock()
	if st != TargetRunning {
		f.log.Info("target state at start", "state", st)
	}
	return nil
}

// dropStatusClient closes the status client of a start that failed while
// reading the status topic, and empties the view: the next try reads the
// topic anew with a new client. kgo keeps the topic ID it knows for a
// name, so a status topic deleted or re-created while the member started
// failed every later try with UNKNOWN_TOPIC_ID, and the member stayed
// RETRYING for good (TestBrkGStatusTopicRecreatedWhileStarting); once
// running, the tail goroutine restores it (restoreStatus).
func (f *flow) dropStatusClient() {
	if f.statusCl == nil {
		return
	}
	f.statusCl.Close()
	f.statusCl = nil
	f.viewMu.Lock()
	f.view = statustopic.NewView()
	f.viewMu.Unlock()
}

// newStatusClient returns a client that tails the status topic from its
// start and writes this member's records.
func (f *flow) newStatusClient() (*kgo.Client, error) {
	opts := append(append([]kgo.Opt{}, f.dst.Consumer...), f.dst.Producer...)
	cl, err := kclient.New(f.clientOpts(f.dst, opts, append(slices.Clone(statusProducerOpts),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{f.statusTopic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(statusFetchWait))...)...)
	if err != nil {
		return nil, fmt.Errorf("status topic client on %s: %w", f.dst.Alias, err)
	}
	return cl, nil
}

// statusTopicIDNow lists the status topic's ID on the target (ok false:
// the topic is missing).
func (f *flow) statusTopicIDNow(ctx context.Context) (id kadm.TopicID, ok bool, err error) {
	tds, err := f.dstAdm.ListTopics(ctx, f.statusTopic)
	if err != nil {
		return id, false, err
	}
	td, found := tds[f.statusTopic]
	if !found || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return id, false, nil
	}
	if td.Err != nil {
		return id, false, td.Err
	}
	return td.ID, true, nil
}

// statusTopicLost reports whether err, from a read or write of the status
// topic, says the topic is gone or is another one now (deleted, or
// deleted and created again).
func statusTopicLost(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID)
}

// statusReopen decides what restoreStatus does with the status topic
// found on the target (exists, its ID) and the ID statusCl reads (known:
// listed at the open): create it when it is missing, and reopen (a new
// client reading the topic from its start into a new view) when it was
// missing or is another topic than the one read. The same topic is left
// alone: the error was transient (a leader moving), and the client goes
// on where it is.
func statusReopen(exists bool, id, known kadm.TopicID) (create, reopen bool) {
	if !exists {
		return true, true
	}
	return false, id != known
}

// restoreStatus runs in the tail goroutine once a read or write of the
// status topic failed as if it were deleted or re-created (statusLost):
// it creates the topic again if it is missing (as at the start) and reads
// it anew with a new client, since kgo keeps the topic ID it knows for a
// name and failed every read and write of the new topic for good. Before,
// a deleted status topic was never created again by the members: each
// saw only itself in ClusterStatus (the others' slots UNASSIGNED), and a
// target state written afterwards (SetTargetState creates the topic) was
// acknowledged and applied by no member (TestBrk1207StatusTopicDeletedStateApplied).
// The view starts again empty but for the target state (View.Restarted),
// the restart requests of the new topic are all new, and the owned slots'
// records are written again at the next publication.
func (f *flow) restoreStatus(ctx context.Context) {
	if !f.statusLost.Swap(false) {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, f.cfg.AdminTimeout)
	defer cancel()
	id, exists, err := f.statusTopicIDNow(lctx)
	if err != nil {
		f.statusLost.Store(true)
		return
	}
	create, reopen := statusReopen(exists, id, f.statusTopicID)
	created := false
	if create {
		r, err := f.ensureTopic(lctx, f.dstAdm, f.statusTopicSpec())
		created = err == nil && r.Created
		if err != nil {
			f.statusLost.Store(true)
			f.log.Warn("creating the status topic again", "topic", f.statusTopic, "err", err)
			return
		}
		// A topic just created may not be in every broker's metadata
		// yet; the creator must not lose that it created it (it writes
		// the target state there, below).
		for wait := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			id, exists, err = f.statusTopicIDNow(lctx)
			if err != nil || exists || time.Now().After(wait) || lctx.Err() != nil {
				break
			}
		}
		if err != nil || !exists {
			f.statusLost.Store(true)
			return
		}
	}
	if !reopen {
		return
	}
	cl, err := f.newStatusClient()
	if err != nil {
		f.statusLost.Store(true)
		return
	}
	f.pubMu.Lock()
	if f.pubDone {
		f.pubMu.Unlock()
		cl.Close()
		return
	}
	old := f.statusCl
	f.statusCl, f.statusTopicID = cl, id
	clear(f.pubSlots) // the new topic holds none of them
	clear(f.pubChunks)
	f.pubMu.Unlock()
	f.viewMu.Lock()
	f.view = f.view.Restarted()
	f.restartSeen = -1
	kept, found := f.view.TargetState()
	f.viewMu.Unlock()
	// The offset the member reports its state from was the old topic's:
	// a command waiting for a record of the new topic at a lower offset
	// must not take it as applied.
	f.unitsMu.Lock()
	f.appliedOffset, f.reportedOffset = -1, -1
	f.unitsMu.Unlock()
	old.Close()
	f.log.Warn("status topic was deleted or re-created: created again if missing, read again from its start", "topic", f.statusTopic, "created", created)
	if found && kept.State != statustopic.Running {
		// The topic this member created holds no target state, which
		// reads RUNNING: a member started now would replicate a flow the
		// others keep paused or stopped. The state is written again. A
		// topic another created (an operator's delete and create: no
		// member created it) is written only when it holds no target
		// state yet, which someone may have written there
		// (TestBrkGStatusTopicRecreatedByOperatorStopKept).
		write := created
		if !created {
			_, has, err := statustopic.ReadTargetState(lctx, f.dstAdmCl.Opts(), f.cfg.Source)
			write = err == nil && !has
		}
		if write {
			if _, err := statustopic.WriteTargetStateOffset(lctx, cl, f.cfg.Source, kept); err != nil {
				f.log.Warn("writing the target state again in the re-created status topic", "state", kept.State, "err", err)
			}
		}
	}
	f.wakePublish()
}

// pollStatus reads the status topic's next records into the view and
// returns how many it applied; a target-state change wakes the
// target-state goroutine.
func (f *flow) pollStatus(ctx context.Context) (int, error) {
	fs := f.statusCl.PollFetches(ctx)
	var ferr error
	fs.EachError(func(_ string, _ int32, err error) {
		if ctx.Err() == nil && ferr == nil {
			ferr = err
		}
	})
	n, changed := 0, false
	f.viewMu.Lock()
	fs.EachRecord(func(r *kgo.Record) {
		n++
		if f.view.Apply(r) {
			changed = true
		}
	})
	f.viewMu.Unlock()
	if changed {
		f.wakeTarget()
	}
	return n, ferr
}

// tailLoop keeps the view of the status topic current until ctx ends, and
// applies the restart requests it reads (applyRestart).
func (f *flow) tailLoop(ctx context.Context) {
	var logged time.Time
	for ctx.Err() == nil {
		f.restoreStatus(ctx)
		// Bounded, so that a loss the publisher found is restored while
		// nothing arrives (a wait ended early costs no request).
		pctx, cancel := context.WithTimeout(ctx, statusFetchWait)
		n, err := f.pollStatus(pctx)
		cancel()
		if statusTopicLost(err) {
			f.statusLost.Store(true)
		}
		if err != nil && ctx.Err() == nil && time.Since(logged) > time.Minute {
			logged = time.Now()
			f.log.Warn("reading the status topic", "topic", f.statusTopic, "err", err)
		}
		if n > 0 {
			f.applyRestart()
		}
	}
}

// applyRestart restarts this member's FAILED partitions that the restart
// requests read since the last call ask for (RestartFailedInCluster),
// each in turn, except those this member wrote (it restarted its own
// before writing).
func (f *flow) applyRestart() {
	f.viewMu.Lock()
	reqs := f.view.TakeRestarts()
	seen := f.restartSeen
	if len(reqs) > 0 {
		f.restartSeen = max(seen, reqs[len(reqs)-1].Offset)
	}
	f.viewMu.Unlock()
	for _, rec := range reqs {
		if !restartApplies(rec, seen, f.name, f.selfID) {
			continue
		}
		slot := int32(-1)
		if rec.Slot != nil {
			slot = *rec.Slot
		}
		n := f.restartFailed(slot, rec.Topic, rec.Partition)
		f.log.Info("restart request read from the status topic", "slot", slot, "topic", rec.Topic, "partition", rec.Partition,
			"by", rec.By, "from_member", rec.FromMember, "offset", rec.Offset, "restarted", n)
	}
}

// restartApplies decides whether a member (flow name, member id self)
// applies restart request rec: one of its flow written by another member,
// at an offset past seen, the last request it read (at or below it: the
// status client read the topic again from its start, its offset out of
// range, which must not restart anything twice).
func restartApplies(rec statustopic.RestartEntry, seen int64, flow, self string) bool {
	return rec.Offset > seen && rec.Flow == flow && rec.Partition >= -1 && rec.FromMember != self
}

func (f *flow) wakePublish() {
	select {
	case f.pubWake <- struct{}{}:
	default:
	}
}

// publishLoop publishes this member's record and its slots' records every
// status interval, and within a second of a change of its slots, target
// state, flow state or a partition's state, until ctx ends.
func (f *flow) publishLoop(ctx context.Context) {
	tick := min(time.Second, f.statusInterval)
	t := time.NewTicker(tick)
	defer t.Stop()
	var last time.Time
	lastSig, lastLight := "", ""
	var light []byte
	var sigs changeSigs
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.pubWake:
		}
		// Between publications, the whole status (every partition) is
		// gathered only when something it is made of changed: a unit
		// stored a new snapshot, the member's state, slots or target
		// state, or the status topic's view. At thousands of idle
		// partitions gathering it every second was most of an idle
		// member's CPU (issue 22's profile at 20 000 partitions).
		light = f.lightSig(light[:0])
		due := time.Since(last) >= f.statusInterval
		if !due && string(light) == lastLight {
			continue
		}
		var extra []statustopic.SlotRecord
		if due {
			// Lag that never hides: the slots nobody owns (on slot 0's
			// member), and the partitions of a paused member.
			now := time.Now()
			extra = f.unownedSlotRecords(ctx, now)
			var parts []PartitionStatus
			for _, s := range extra {
				parts = append(parts, partitionStatuses(s.Partitions)...)
			}
			f.mu.Lock()
			f.unassigned = parts
			f.mu.Unlock()
			f.refreshPausedLag(ctx)
			f.dropGoneMembers(ctx, now)
		}
		fs := f.statusOf(false) // no groups: not published, and costly at thousands of groups
		f.checkDisagreements(f.clusterStatusOf(fs, time.Now(), false))
		sig := sigs.of(fs)
		if sig == lastSig && !due && !f.slotsOverwritten(fs.Member.Slots) {
			lastLight = string(light)
			continue
		}
		if err := f.publish(ctx, fs, extra); err != nil {
			if ctx.Err() == nil {
				f.log.Warn("publishing the member's status", "topic", f.statusTopic, "err", err)
			}
			continue
		}
		last, lastSig, lastLight = time.Now(), sig, string(light)
	}
}

// lightSig appends to b a summary of what the flow's status is made of,
// without touching its partitions: the flow's state and waiting reason,
// the member's slots, units, singleton, applied target state and stopped
// units' partitions, the count of the units' status snapshots
// (flow.statusSeq) and how far the status topic's view was read. Equal summaries mean equal statuses but
// for what only ages (staleness, fetch errors shown for a while), which
// the publication every status interval covers.
func (f *flow) lightSig(b []byte) []byte {
	f.mu.Lock()
	b = append(b, f.state...)
	b = append(b, '|')
	b = append(b, f.waiting...)
	b = append(b, '|')
	f.mu.Unlock()
	b = strconv.AppendUint(b, f.statusSeq.Load(), 10)
	b = append(b, '|')
	f.unitsMu.Lock()
	for _, s := range f.ownedLocked() {
		b = strconv.AppendInt(b, int64(s), 10)
		b = append(b, ',')
	}
	b = append(b, '|')
	for _, s := range sortedSlots(f.units) {
		b = strconv.AppendInt(b, int64(s), 10)
		b = append(b, ',')
	}
	b = append(b, '|')
	for _, s := range sortedSlots(f.stopping) {
		b = strconv.AppendInt(b, int64(s), 10)
		b = append(b, ',')
	}
	b = strconv.AppendBool(b, f.single != nil)
	b = append(b, '|')
	b = append(b, f.reported...)
	b = append(b, '|')
	b = append(b, f.legacyWaiting...)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(len(f.pausedParts)), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(len(f.final)), 10)
	f.unitsMu.Unlock()
	f.viewMu.Lock()
	b = append(b, '|')
	b = strconv.AppendInt(b, f.view.Next, 10)
	f.viewMu.Unlock()
	return b
}

// changeSig sums up what a change of must publish within a second: the
// applied target state, the owned slots, the singleton, the flow state and
// every partition's state.
//
// It appends to b (no fmt per partition: it runs at every publication,
// over every partition of the member).
func changeSig(fs FlowStatus) string { return changeSigHead(fs) + changeSigParts(fs.Partitions) }

// changeSigHead is the part of changeSig that is not the partitions'.
func changeSigHead(fs FlowStatus) string {
	return fmt.Sprintf("%s|%s@%d|%v|%v|%s|", fs.State, fs.AppliedState, fs.appliedOffset, fs.Member.Slots, fs.Member.Singleton, fs.Member.Waiting)
}

// changeSigParts is the partitions' part of changeSig.
func changeSigParts(parts []PartitionStatus) string {
	b := make([]byte, 0, len(parts)*32)
	for _, p := range parts {
		b = append(b, p.Topic...)
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(p.Partition), 10)
		b = append(b, '=')
		b = append(b, p.State...)
		b = append(b, ';')
	}
	return string(b)
}

// sameSlice reports whether a and b are the same slice: the same length
// and, when not empty, the same first element. The status caches of an
// idle member (changeSigs, partitionsBySlot, sameSlotRecord) key on it:
// the slices they compare are never changed once built, and each cache
// keeps its key alive, so an equal address means equal content.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// changeSigs computes changeSig, reusing the partitions' part of the last
// signature while the status's partitions are the same slice (statusOf
// shares it until a unit stores a new snapshot). Publish loop only.
type changeSigs struct {
	parts []PartitionStatus // the slice the cached part was built from
	part  string
}

// of returns changeSig(fs).
func (c *changeSigs) of(fs FlowStatus) string {
	head := changeSigHead(fs)
	if len(fs.Partitions) == 0 || !sameSlice(c.parts, fs.Partitions) {
		c.parts, c.part = fs.Partitions, changeSigParts(fs.Partitions)
	}
	return head + c.part
}

// memberRecord is this member's record for status fs.
func (f *flow) memberRecord(fs FlowStatus, now time.Time) statustopic.MemberRecord {
	srcID := ""
	f.mu.Lock()
	if f.started {
		srcID = f.srcID // learned by start, before it set started
	}
	f.mu.Unlock()
	return statustopic.MemberRecord{Flow: f.name, MemberID: f.selfID, WorkerID: f.workerID, Version: moduleVersion(),
		GroupMemberID: fs.Member.MemberID, Generation: fs.Member.Generation, Tasks: int(f.tasks), HeartbeatsOnly: f.cfg.Disabled, Started: startedTime(f.startedAt.Load()),
		Fingerprint: f.fingerprint, Config: f.fpConfig, SourceClusterID: srcID,
		Slots: append([]int32{}, fs.Member.Slots...), Singleton: fs.Member.Singleton,
		Applied: statustopic.TargetState(fs.AppliedState), AppliedOffset: &fs.appliedOffset, State: string(fs.State), Error: fs.Error, Waiting: fs.Member.Waiting,
		Records: fs.Records, Bytes: fs.Bytes, ProvenanceSkipped: fs.ProvenanceSkipped, Lag: fs.Lag, LagUnknown: fs.LagUnknown,
		TopicErrorLag: topicErrorLag(fs),
		Rebalances:    fs.Member.Rebalances, IntervalMS: f.statusInterval.Milliseconds(), At: now.UTC()}
}

// partitionRecord is the status-topic form of ps.
func partitionRecord(ps PartitionStatus) statustopic.PartitionRecord {
	return statustopic.PartitionRecord{Topic: ps.Topic, RemoteTopic: ps.RemoteTopic, Partition: ps.Partition, State: string(ps.State),
		Error: ps.Error, SourceEnd: ps.SourceEnd, Replicated: ps.Replicated, Committed: ps.Committed, Lag: ps.Lag,
		LagUnknown: ps.LagUnknown, Records: ps.Records, Bytes: ps.Bytes, Since: ps.Since, NextRetry: ps.NextRetry, Retries: ps.Retries}
}

// partitionStatus is the PartitionStatus of a status-topic partition.
func partitionStatus(pr statustopic.PartitionRecord) PartitionStatus {
	return PartitionStatus{Topic: pr.Topic, RemoteTopic: pr.RemoteTopic, Partition: pr.Partition, State: State(pr.State),
		Error: pr.Error, SourceEnd: pr.SourceEnd, Replicated: pr.Replicated, Committed: pr.Committed, Lag: pr.Lag,
		LagUnknown: pr.LagUnknown, Records: pr.Records, Bytes: pr.Bytes, Since: pr.Since, NextRetry: pr.NextRetry, Retries: pr.Retries}
}

// slotRecords builds the records of the slots this member owns from fs:
// each slot's partitions, its state (the applied target state when not
// RUNNING, else the flow's) and since when.
func (f *flow) slotRecords(fs FlowStatus, now time.Time) []statustopic.SlotRecord {
	by := f.partitionsBySlot(fs.Partitions)
	state := fs.State
	var out []statustopic.SlotRecord
	since := make(map[int32]time.Time, len(fs.Member.Slots))
	f.unitsMu.Lock()
	for _, k := range fs.Member.Slots {
		since[k] = f.slotSince[k]
	}
	f.unitsMu.Unlock()
	for _, k := range fs.Member.Slots {
		out = append(out, statustopic.SlotRecord{Flow: f.name, Slot: k, Owner: f.selfID, WorkerID: f.workerID,
			State: string(state), Since: since[k].UTC(), Partitions: by[k], IntervalMS: f.statusInterval.Milliseconds(), At: now.UTC()})
	}
	return out
}

// bySlot is partitionsBySlot's last result and the partitions it was
// built from.
type bySlot struct {
	parts []PartitionStatus
	by    map[int32][]statustopic.PartitionRecord
}

// partitionsBySlot returns the status-topic records of parts grouped by
// slot. The result is read only: while parts is the slice of the last call
// (statusOf shares it until a unit stores a new snapshot), it is the last
// result again, so that an idle member's publication every status interval
// builds no partition record (issue 22).
func (f *flow) partitionsBySlot(parts []PartitionStatus) map[int32][]statustopic.PartitionRecord {
	f.mergeMu.Lock()
	defer f.mergeMu.Unlock()
	if c := f.bySlot; c != nil && sameSlice(c.parts, parts) {
		return c.by
	}
	// Sized first: at thousands of partitions the doubling appends left
	// as much garbage as the records (issue 22).
	slots := make([]int32, len(parts))
	n := map[int32]int{}
	for i, ps := range parts {
		slots[i] = slotOf(ps.Topic, ps.Partition, f.tasks)
		n[slots[i]]++
	}
	by := make(map[int32][]statustopic.PartitionRecord, len(n))
	for k, c := range n {
		by[k] = make([]statustopic.PartitionRecord, 0, c)
	}
	for i, ps := range parts {
		by[slots[i]] = append(by[slots[i]], partitionRecord(ps))
	}
	f.bySlot = &bySlot{parts: parts, by: by}
	return by
}

// publish writes this member's record and its slots' records (fs is its
// status) and waits for the target's acknowledgement.
func (f *flow) publish(ctx context.Context, fs FlowStatus, extra []statustopic.SlotRecord) (err error) {
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	if f.statusCl == nil || f.pubDone {
		return nil
	}
	now := time.Now()
	// The owned slots are read again under pubMu: a release that
	// tombstoned a slot after fs was taken must not see it written back.
	f.unitsMu.Lock()
	owned := f.ownedLocked()
	f.unitsMu.Unlock()
	fs.Member.Slots = slices.DeleteFunc(fs.Member.Slots, func(k int32) bool { return !slices.Contains(owned, k) })
	mr, err := statustopic.MemberRecordOf(f.cfg.Source, f.memberRecord(fs, now))
	if err != nil {
		return err
	}
	recs := []*kgo.Record{mr}
	var wrote []int32 // owned slots whose record this publication writes
	defer func() {
		if err != nil {
			for _, k := range wrote {
				delete(f.pubSlots, k) // maybe not written: the next publication writes it again
			}
		}
	}()
	for _, s := range append(f.slotRecords(fs, now), extra...) {
		if s.Owner == "" && slices.Contains(owned, s.Slot) {
			continue // owned since it was computed
		}
		if s.Owner != "" {
			last, ok := f.pubSlots[s.Slot]
			if ok && sameSlotRecord(last, s) && now.Sub(last.At) < slotRewriteEvery*f.statusInterval && !f.slotsOverwritten([]int32{s.Slot}) {
				continue // unchanged: its owner's member record proves it current
			}
			f.pubSlots[s.Slot] = s
			wrote = append(wrote, s.Slot)
		}
		rs, err := statustopic.SlotRecords(f.cfg.Source, s, f.pubChunks[s.Slot])
		if err != nil {
			return err
		}
		n := 0
		for _, r := range rs {
			if r.Value != nil {
				n++
			}
		}
		f.pubChunks[s.Slot] = n
		recs = append(recs, rs...)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err = kclient.ProduceWait(pctx, f.statusCl, recs...)
	if statusTopicLost(err) {
		f.statusLost.Store(true) // restored by the tail goroutine
	}
	return err
}

// dropGoneMembers tombstones, on the member holding the singleton duties,
// the records of the members gone without a leave (SIGKILL, a lost host):
// stale at now and named as the owner of no slot record (the last record
// of a slot whose owner is gone tells since when it is UNASSIGNED from the
// owner's last member record, until the singleton writes the slot's own).
// Nobody else deletes them: the compacted topic, and every member's view,
// kept one record per crashed member for good
// (TestBrkGCrashedMembersDropped). A member only slow to publish writes
// its record again at its next publication.
func (f *flow) dropGoneMembers(ctx context.Context, now time.Time) {
	if !f.isSingleton.Load() {
		return
	}
	var gone []string
	f.viewMu.Lock()
	owners := map[string]bool{}
	for _, k := range f.view.SlotNumbers() {
		if o, ok := f.view.SlotOwner(k); ok {
			owners[o] = true
		}
	}
	for id, m := range f.view.Members() {
		if id != f.selfID && !owners[id] && m.Stale(now) {
			gone = append(gone, id)
		}
	}
	f.viewMu.Unlock()
	if len(gone) == 0 {
		return
	}
	slices.Sort(gone)
	recs := make([]*kgo.Record, 0, len(gone))
	for _, id := range gone {
		recs = append(recs, statustopic.MemberTombstone(f.cfg.Source, id))
	}
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	if f.statusCl == nil || f.pubDone {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := kclient.ProduceWait(pctx, f.statusCl, recs...); err != nil {
		if statusTopicLost(err) {
			f.statusLost.Store(true)
		}
		if ctx.Err() == nil {
			f.log.Warn("deleting the records of members gone without leaving", "members", gone, "err", err)
		}
		return
	}
	f.log.Info("records of members gone without leaving deleted", "members", gone)
}

// slotRewriteEvery is how many publication intervals an owned slot's
// record whose content did not change goes without being written again.
// The owner's member record, written every interval, is what proves the
// slot's record current (buildCluster reads an owned slot from the record
// its live owner wrote, whatever its age); rewriting every partition's
// status every interval made an idle member encode, and every member
// decode, the status of every partition of the flow every 5 s (issue 22:
// about a fifth of an idle member's CPU at 6 000 partitions). The rewrite
// at this period keeps a record a reader lost or never read (a compacted
// topic keeps the last one) from aging without bound.
const slotRewriteEvery = 12

// sameSlotRecord reports whether slot records a and b say the same but
// for when they were written (At).
func sameSlotRecord(a, b statustopic.SlotRecord) bool {
	if a.Flow != b.Flow || a.Slot != b.Slot || a.Owner != b.Owner || a.WorkerID != b.WorkerID || a.State != b.State ||
		!a.Since.Equal(b.Since) || a.IntervalMS != b.IntervalMS {
		return false
	}
	if sameSlice(a.Partitions, b.Partitions) {
		return true // the same records (partitionsBySlot's, unchanged)
	}
	return slices.EqualFunc(a.Partitions, b.Partitions, func(x, y statustopic.PartitionRecord) bool {
		sx, sy := x, y
		sx.Since, sy.Since, sx.NextRetry, sy.NextRetry = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		return sx == sy && x.Since.Equal(y.Since) && x.NextRetry.Equal(y.NextRetry)
	})
}

// slotsOverwritten reports whether the status topic's record of one of
// slots (this member's) names another owner: the singleton wrote it as
// unassigned just before this member got the slot, so it is published
// again now rather than at the next interval.
func (f *flow) slotsOverwritten(slots []int32) bool {
	f.viewMu.Lock()
	defer f.viewMu.Unlock()
	for _, k := range slots {
		if owner, ok := f.view.SlotOwner(k); ok && owner != f.selfID {
			return true
		}
	}
	return false
}

// tombstoneSlots deletes the status records of slots this member hands
// over (a graceful revocation) and waits for the target's acknowledgement
// (bounded by leaveTimeout: the group waits for the callback, and a stop
// must not wait on a dead cluster), so the records of a new owner always
// come after.
func (f *flow) tombstoneSlots(slots []int32) {
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	if f.statusCl == nil || len(slots) == 0 {
		return
	}
	var recs []*kgo.Record
	for _, k := range slots {
		recs = append(recs, statustopic.SlotTombstones(f.cfg.Source, k, f.pubChunks[k])...)
		delete(f.pubChunks, k)
		delete(f.pubSlots, k)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(f.hard), leaveTimeout)
	defer cancel()
	if err := kclient.ProduceWait(ctx, f.statusCl, recs...); err != nil && f.hard.Err() == nil {
		if statusTopicLost(err) {
			f.statusLost.Store(true)
		}
		f.log.Warn("deleting the status of the slots handed over", "slots", slots, "err", err)
	}
}

// closeStatus tombstones this member's record (a graceful leave: the
// other members and the tools see it gone at once, not after 3 intervals)
// and ends publication. The status client is closed with the others.
func (f *flow) closeStatus(graceful bool) {
	if graceful {
		f.closeStatusWith(nil)
		return
	}
	f.pubMu.Lock()
	f.pubDone = true
	f.pubMu.Unlock()
}

// closeStatusWith is closeStatus for a graceful leave that also deletes
// the records of the slots it released, in one write bounded by
// statusStopTimeout. It does nothing once publication ended.
func (f *flow) closeStatusWith(slots []int32) {
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	if f.pubDone || f.statusCl == nil {
		f.pubDone = true
		return
	}
	f.pubDone = true
	var recs []*kgo.Record
	for _, k := range slots {
		recs = append(recs, statustopic.SlotTombstones(f.cfg.Source, k, f.pubChunks[k])...)
		delete(f.pubChunks, k)
		delete(f.pubSlots, k)
	}
	recs = append(recs, statustopic.MemberTombstone(f.cfg.Source, f.selfID))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(f.hard), statusStopTimeout)
	defer cancel()
	if err := kclient.ProduceWait(ctx, f.statusCl, recs...); err != nil && f.hard.Err() == nil {
		f.log.Warn("deleting the member's status records", "slots", slots, "err", err)
	}
}

// topicErrorLag is the part of fs.Lag its topic errors keep back.
func topicErrorLag(fs FlowStatus) int64 {
	var n int64
	for _, te := range fs.TopicErrors {
		n += max(te.Lag, 0)
	}
	return n
}

// startedTime is the time of Unix milliseconds ms (zero for 0).
func startedTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// statusStopTimeout bounds the last status write of a member that leaves
// (its slots' and its own tombstones). A healthy target acknowledges it in
// milliseconds; a target that stopped answering must not add much to the
// stop (LeaveGroup, leaveTimeout, is next): readers see the member stale
// after 3 intervals anyway.
const statusStopTimeout = 500 * time.Millisecond
