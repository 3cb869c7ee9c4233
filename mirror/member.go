package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/topicname"
)

// Membership: the processes that run the same flow (members) share its N
// slots through Kafka's group protocol. The group (classic protocol,
// cooperative-sticky balancer) consumes the flow's coordination topic on
// the target, whose N partitions are the slots: a member owns slot k while
// the group assigns it partition k. Nothing is ever written to that topic.

// unitsTopicName is the coordination topic of the flow source->target on
// the target cluster: mm2-kmirror-units.<source>.internal, named like
// Connect's mm2-offsets.<source>.internal so that MM2 (4.0+) treats it as
// internal and never replicates it. An alias that cannot appear in a topic
// name (the source of a heartbeats-only flow may be any string MM2 accepts)
// appears there with its illegal characters replaced and a hash appended
// (topicname.WithAlias).
func unitsTopicName(source string) string {
	return topicname.WithAlias("mm2-kmirror-units.", source, ".internal")
}

// defaultGroupID is the group id of the flow's members unless
// FlowConfig.GroupID overrides it: "kmirror.<source>-><target>". It is
// not MM2's Connect group ("<source>-mm2"), so kmirror members never join
// an MM2 cluster's group.
func defaultGroupID(source, target string) string { return "kmirror." + source + "->" + target }

// transactionalID is the transactional id of slot's producer in
// exactly-once mode: "<group id>-<slot>".
func transactionalID(groupID string, slot int32) string { return fmt.Sprintf("%s-%d", groupID, slot) }

// owns reports (nil) whether this member is still a member of the current
// generation of its group, and so still owns the slots it was assigned: it
// commits offset 0 of the slot's partition of the coordination topic with
// its generation, which the group coordinator refuses from a member whose
// session expired (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID) or while the group
// rebalances (REBALANCE_IN_PROGRESS).
func (f *flow) owns(ctx context.Context, slot int32) error {
	f.unitsMu.Lock()
	mine := f.units[slot] != nil
	f.unitsMu.Unlock()
	if !mine || f.group == nil {
		return fmt.Errorf("slot %d is not assigned to this member", slot)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var cerr error
	f.group.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{f.unitsTopic: {slot: {Epoch: -1, Offset: 0}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						cerr = err
					}
				}
			}
		})
	return cerr
}

// SlotOf returns the slot (Kafka Connect's task) that replicates source
// partition partition of topic in a flow with n slots (tasks.max): the
// slot numbers [Mirror.ClusterStatus] and the runner's /status show.
// Every member computes the same: (murmur2(topic) + partition) mod n, with
// Kafka's murmur2 and its sign bit cleared, so the partitions of a topic
// are spread round-robin and adding partitions never moves an existing
// one. n must be positive.
func SlotOf(topic string, partition, n int32) int32 { return slotOf(topic, partition, n) }

// slotOf maps a source partition to its slot: (murmur2(topic) + partition)
// mod n, with Kafka's murmur2 and its sign bit cleared. The partitions of a
// topic are spread round-robin from a start that depends on the topic, and
// adding partitions to a topic never moves an existing one.
func slotOf(topic string, partition, n int32) int32 {
	return int32((int64(connectoffsets.Hash([]byte(topic))) + int64(partition)) % int64(n))
}

// ensureUnitsTopic creates the coordination topic with N partitions if it
// is missing, or accepts one created in advance, and makes sure it has at
// least N partitions: the topic keeps the largest count any member needed
// (only the newest epoch's first tasks.max partitions are slots, see
// epoch.go). A heartbeats-only flow accepts any count (it uses slot 0).
// A member whose tasks.max differs from the partition count refuses to
// start while members of an older kmirror release share the group: they
// balance with cooperative-sticky, which cannot keep members of different
// slot counts apart.
func (f *flow) ensureUnitsTopic(ctx context.Context) error {
	spec := f.unitsTopicSpec()
	spec.ExactPartitions = false
	r, err := f.ensureTopic(ctx, f.dstAdm, spec)
	if err != nil {
		return err
	}
	have := r.Partitions
	if have == 0 {
		have = f.tasks
	}
	if f.cfg.Disabled || have == f.tasks {
		f.unitsParts.Store(max(have, f.tasks))
		return nil
	}
	if err := f.refuseLegacyGroup(ctx, have); err != nil {
		return err
	}
	if have < f.tasks {
		resp, err := f.dstAdm.UpdatePartitions(ctx, int(f.tasks), f.unitsTopic)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.InvalidPartitions) {
			return fmt.Errorf("adding partitions to the coordination topic %s on %s (from %d to tasks.max %d): %w; grant ALTER on topic %s, or add them yourself: kafka-topics.sh --bootstrap-server <%s> --alter --topic %s --partitions %d",
				f.unitsTopic, f.dst.Alias, have, f.tasks, err, f.unitsTopic, f.dst.Alias, f.unitsTopic, f.tasks)
		}
		f.log.Info("coordination topic grown for a larger tasks.max (the members of the older epoch wait until restarted with it)",
			"topic", f.unitsTopic, "from", have, "to", f.tasks)
		have = f.tasks
	}
	f.unitsParts.Store(have)
	return nil
}

// refuseLegacyGroup returns the fatal tasks.max error when the flow's
// group runs members of an older kmirror release (group protocol
// cooperative-sticky, no kmirror-slots-v1) and this member's tasks.max
// differs from the coordination topic's partition count have.
func (f *flow) refuseLegacyGroup(ctx context.Context, have int32) error {
	groups, err := f.dstAdm.DescribeGroups(ctx, f.groupID)
	if err != nil {
		return fmt.Errorf("describing group %s on %s: %w", f.groupID, f.dst.Alias, err)
	}
	g, ok := groups[f.groupID]
	if !ok || g.Err != nil || len(g.Members) == 0 || g.Protocol == slotsProtocol || g.Protocol == "" {
		return nil
	}
	return &fatalError{&ConfigError{Key: f.name + ".tasks.max", Value: fmt.Sprint(f.tasks),
		Reason: fmt.Sprintf("the flow's %d running member(s) share %d slots (the partitions of %s on %s) and run an older kmirror release (group protocol %s), which cannot change tasks.max online: "+
			"start this member with tasks.max=%d, upgrade every member with the same tasks.max first and then change it in a second rolling restart, "+
			"or stop every member and run `kmirror units -config FILE -resize` (it fences the old exactly-once producers and re-creates the topic)",
			len(g.Members), have, f.unitsTopic, f.dst.Alias, g.Protocol, have)}}
}

// join creates the flow's group member. Its callbacks start and stop the
// units of the slots the group assigns; they run on kgo's group goroutine,
// one at a time.
func (f *flow) join() error {
	c := f.cfg
	opts := f.clientOpts(f.dst, f.dst.Consumer,
		kgo.ConsumerGroup(f.groupID),
		kgo.ConsumeTopics(f.unitsTopic),
		// kmirror's epoch-aware protocol first; cooperative-sticky for the
		// members of older releases (epoch.go).
		kgo.Balancers(&slotBalancer{f: f, inner: kgo.CooperativeStickyBalancer()}, legacyBalancer{kgo.CooperativeStickyBalancer(), f}),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(c.SessionTimeout),
		kgo.HeartbeatInterval(c.HeartbeatInterval),
		kgo.RebalanceTimeout(c.RebalanceTimeout),
		kgo.OnPartitionsAssigned(f.onAssigned),
		kgo.OnPartitionsRevoked(f.onRevoked),
		kgo.OnPartitionsLost(f.onLost),
		kgo.FetchMaxWait(5*time.Second),
	)
	// Its own context, which leave ends to bound Close.
	ctx, cancel := context.WithCancel(context.Background())
	opts = append(opts, kgo.WithContext(ctx))
	cl, err := kclient.New(opts...)
	if err != nil {
		cancel()
		return fmt.Errorf("group member on %s: %w", f.dst.Alias, err)
	}
	f.group, f.groupCancel = cl, cancel
	return nil
}

// groupLoop polls the member's client: the coordination topic holds no
// records, but group errors are delivered through polls.
func (f *flow) groupLoop(ctx context.Context) {
	var logged time.Time
	for {
		fs := f.group.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			f.unitsMu.Lock()
			slotless := len(f.owned) == 0
			f.unitsMu.Unlock()
			if slotless {
				// The member replicates nothing until it joins: the flow
				// is RETRYING with the reason, until the group assigns it
				// (onAssigned). It said RUNNING, with no error (a helper
				// with a session timeout the broker refuses, stop 38).
				f.health(func() { f.groupErr = f.groupJoinErr(err) })
			}
			if time.Since(logged) < 10*time.Second {
				return
			}
			logged = time.Now()
			f.log.Warn("group membership", "group", f.groupID, "err", err)
		})
	}
}

// groupJoinErr is the flow's error for err, the member's failure to join
// its group on the target: what it is, the target named unreachable when
// it refused the connection or the client (kclient.Refused), and what to
// write when the broker refused the session timeout.
func (f *flow) groupJoinErr(err error) error {
	if errors.Is(err, kerr.InvalidSessionTimeout) {
		return fmt.Errorf("joining the flow's group %s on %s: %w: the target's brokers refuse session.timeout.ms %v "+
			"(group.min.session.timeout.ms and group.max.session.timeout.ms bound it, Kafka's defaults 6 s and 30 min): "+
			"set %s.session.timeout.ms within them", f.groupID, f.dst.Alias, err, f.cfg.SessionTimeout, f.dst.Alias)
	}
	if kclient.Refused(err) {
		// Said as the cluster probe says it: the probe's own error came
		// up to a probe interval later, and meanwhile the flow's reason
		// read as a group problem (TestGroupJoinErrSaysTargetUnreachable).
		err = kclient.Unreachable("target cluster", f.dst.Alias, err)
	}
	return fmt.Errorf("joining the flow's group %s on %s: %w", f.groupID, f.dst.Alias, err)
}

// slotsOf returns the sorted slots of assigned (partitions of the
// coordination topic).
func (f *flow) slotsOf(assigned map[string][]int32) []int32 {
	s := slices.Clone(assigned[f.unitsTopic])
	slices.Sort(s)
	return s
}

func (f *flow) onAssigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	f.health(func() { f.groupErr = nil }) // joined (kgo calls this after every join, also with nothing new)
	slots := f.slotsOf(assigned)
	memberID, gen := cl.GroupMetadata()
	f.unitsMu.Lock()
	f.memberID, f.generation = memberID, gen
	if !f.rebalanceStart.IsZero() {
		d := time.Since(f.rebalanceStart)
		f.rebalances++
		f.rebalanceTime += d
		f.metrics.rebalanced(f.labels, d)
		f.rebalanceStart = time.Time{}
	}
	if f.leaving {
		f.unitsMu.Unlock()
		return
	}
	if f.legacyGroup.Load() && !f.cfg.Disabled && f.tasks != f.unitsParts.Load() {
		// The group fell back to cooperative-sticky (a member of an older
		// release joined) while this member's slots differ from the
		// others': it must not replicate with another mapping.
		f.legacyWaiting = fmt.Sprintf("the group runs members of an older kmirror release, which share %d slots; this member has tasks.max %d: it replicates nothing (restart it with tasks.max=%d, or upgrade every member first)",
			f.unitsParts.Load(), f.tasks, f.unitsParts.Load())
		// The units (and the singleton duties) it runs with its own
		// mapping copy partitions the older members now own too: they
		// stop, gracefully, and the slots stay owned. kgo hands a kept
		// slot to onAssigned no more, so they start again at the first
		// assignment after the group left the fallback (below), not here
		// (startOwnedLocked waits while legacyWaiting is set).
		running := sortedSlots(f.owned)
		f.unitsMu.Unlock()
		f.log.Error("not replicating: "+f.legacyWaiting, "slots", slots, "stopping", running)
		f.stopSlots(running, true, running)
		f.wakePublish()
		return
	}
	f.legacyWaiting = ""
	var fresh []int32
	for _, k := range slots {
		if k >= 0 && k < f.tasks && !f.owned[k] {
			f.owned[k] = true
			f.slotSince[k] = time.Now()
			fresh = append(fresh, k)
		}
	}
	started := f.startOwnedLocked()
	f.pausedPlaceholdersLocked(fresh) // paused or stopped: their lag unknown, not 0
	owned := f.ownedLocked()
	applied := f.applied
	f.unitsMu.Unlock()
	if len(started) > 0 || len(slots) > 0 {
		// The member as /status and the status topic name it (member_id,
		// group_member_id), so that the two can be matched.
		// new: the slots this assignment added; started: the slots whose
		// unit of work started now (none on a flow that only emits
		// heartbeats, or one PAUSED or STOPPED: "new" alone said [] there).
		f.log.Info("slots assigned", "member_id", f.selfID, "group_member_id", memberID, "generation", gen, "new", fresh, "started", started, "owned", owned, "target_state", applied)
	}
	f.wakePublish()
}

// startOwnedLocked starts what the applied target state lets run on the
// owned slots and is not running yet: a unit per owned slot while
// RUNNING, the singleton duties with slot 0 unless STOPPED; nothing while
// the member waits for a group of older members to leave (legacyWaiting).
// It returns the slots whose unit it started. f.unitsMu must be held.
func (f *flow) startOwnedLocked() []int32 {
	if f.legacyWaiting != "" {
		return nil // the group runs another slot mapping (onAssigned)
	}
	var started []int32
	for _, k := range sortedSlots(f.owned) {
		if k == 0 && f.single == nil && f.applied != TargetStopped {
			f.startSingleton()
		}
		if f.cfg.Disabled || f.units[k] != nil || f.applied != TargetRunning {
			continue
		}
		u := newUnit(k, f.env)
		f.units[k] = u
		f.dropPausedLocked(k)
		u.setOffer(f.catalog.Load().slot(k))
		u.start(f.hard)
		started = append(started, k)
	}
	return started
}

func (f *flow) onRevoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	f.unitsMu.Lock()
	f.rebalanceStart = time.Now()
	f.unitsMu.Unlock()
	f.release(f.slotsOf(revoked), true)
}

func (f *flow) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	f.unitsMu.Lock()
	f.rebalanceStart = time.Now()
	f.unitsMu.Unlock()
	f.release(f.slotsOf(lost), false)
}

// release gives up slots: it stops their units (and the singleton duties
// with slot 0), all at once, and returns when they have stopped: graceful
// stores resume points first (revocation); otherwise nothing is stored
// (the slots were lost: another member may own them already). A graceful
// release then tombstones the slots' status records, before the group can
// hand them to another member.
//
// A slot another stop is still stopping (the member leaving, or a pause,
// while a rebalance revokes the slot) is waited for too: the callback must
// not return, handing the slot to another member, before its unit stored
// its resume points.
func (f *flow) release(slots []int32, graceful bool) {
	f.unitsMu.Lock()
	owned := 0
	for _, k := range slots {
		if f.owned[k] {
			owned++
		}
		delete(f.owned, k)
		delete(f.slotSince, k)
		f.dropPausedLocked(k)
	}
	f.unitsMu.Unlock()
	start := time.Now()
	us, stopped := f.stopSlots(slots, graceful, slots)
	if len(slots) == 0 || (owned == 0 && !stopped) {
		// Nothing of this member's: the group's revocation, as the member
		// leaves, of slots that leave already released (it was logged
		// twice, the second time with took=0s).
		return
	}
	f.unitsMu.Lock()
	leaving := f.leaving
	f.unitsMu.Unlock()
	if graceful && !leaving {
		f.tombstoneSlots(slots) // a member leaving writes them with its own tombstone (leave)
	}
	f.unitsMu.Lock()
	still := f.ownedLocked()
	if f.leaving {
		// The member stopped: Status keeps showing where its partitions
		// ended.
		for _, u := range us {
			f.final = u.snapshot(f.final)
		}
	}
	f.unitsMu.Unlock()
	how := "revoked"
	if !graceful {
		how = "lost"
	}
	f.log.Info("slots "+how, "slots", slots, "owned", still, "took", time.Since(start).Round(time.Millisecond))
	f.wakePublish()
}

// stopSlots stops the units of slots, and the singleton duties when
// withSingle contains 0 (release passes the slots, a pause passes none and
// a stop passes slot 0), all at once, and waits for them, also for those
// another stop is stopping. It returns the units it stopped itself and
// whether it stopped anything. The stopped units' counters move to the
// flow's retired totals, so that FlowStatus.Records never goes down.
func (f *flow) stopSlots(slots []int32, graceful bool, withSingle []int32) ([]*unit, bool) {
	f.unitsMu.Lock()
	var us, others []*unit
	var single, otherSingle *singleton
	for _, k := range slots {
		if u := f.units[k]; u != nil {
			us = append(us, u)
			delete(f.units, k)
			f.stopping[k] = u
		} else if u := f.stopping[k]; u != nil {
			others = append(others, u)
		}
	}
	if slices.Contains(withSingle, 0) {
		if f.single != nil {
			single, f.single = f.single, nil
			f.stoppingSingle = single
		} else {
			otherSingle = f.stoppingSingle
		}
		f.isSingleton.Store(false)
	}
	f.unitsMu.Unlock()
	var wg sync.WaitGroup
	for _, u := range others {
		wg.Go(func() { u.stop(graceful) }) // idempotent: waits, or aborts a graceful stop of a lost slot
	}
	if otherSingle != nil {
		wg.Go(otherSingle.stop)
	}
	if len(us) == 0 && single == nil {
		wg.Wait()
		return nil, false
	}
	for _, u := range us {
		wg.Go(func() { u.stop(graceful) })
	}
	if single != nil {
		wg.Go(single.stop)
	}
	wg.Wait()
	if single != nil {
		// Its heartbeats and their failures are not those of the emitter
		// that starts when slot 0 comes back (TestHeartbeatStatusOnlyOnSingleton).
		f.mu.Lock()
		f.lastHB, f.hbErr, f.hbErrSince = time.Time{}, "", time.Time{}
		f.mu.Unlock()
	}
	// The stopped units' health is no longer this member's to report.
	f.health(func() {
		for _, u := range us {
			delete(f.commitErrs, u.slot)
		}
	})
	f.unitsMu.Lock()
	for _, u := range us {
		if f.stopping[u.slot] == u {
			delete(f.stopping, u.slot)
		}
		for _, ps := range u.snapshot(nil) {
			f.retiredRecords += ps.Records
			f.retiredBytes += ps.Bytes
		}
	}
	if single != nil && f.stoppingSingle == single {
		f.stoppingSingle = nil
	}
	f.unitsMu.Unlock()
	return us, true
}

// ownedLocked returns the sorted slots the group assigned to this member
// (whether their units run or the flow is paused), and slot 0 while this
// member still runs the singleton duties without it (a heartbeats-only
// flow leaving). f.unitsMu must be held.
func (f *flow) ownedLocked() []int32 {
	s := sortedSlots(f.owned)
	if f.single != nil && !slices.Contains(s, 0) {
		s = append(s, 0)
		slices.Sort(s)
	}
	return s
}

// leave stops every unit (gracefully unless hard is done) and the
// singleton duties, then leaves the group so that the other members take
// the slots over at once.
func (f *flow) leave(hard context.Context) {
	f.unitsMu.Lock()
	f.leaving = true
	slots := sortedSlots(f.owned)
	for k := range f.units {
		if !slices.Contains(slots, k) {
			slots = append(slots, k)
		}
	}
	if f.single != nil && !slices.Contains(slots, 0) {
		slots = append(slots, 0) // singleton duties without a unit (a heartbeats-only flow)
	}
	slices.Sort(slots)
	f.unitsMu.Unlock()
	f.release(slots, hard.Err() == nil)
	if hard.Err() == nil {
		// The slots' and the member's status records, in one write
		// before LeaveGroup (the new owners' records come after).
		f.closeStatusWith(slots)
	}
	if f.group == nil {
		return
	}
	// leaveTimeout bounds the LeaveGroup and the Close together. Close
	// leaves the group itself when no leave ran first (after hard ended)
	// and waits for a LeaveGroup in flight whatever the context it was
	// sent with, until the target answers or kgo's read timeout ends it
	// (from its request timeout overhead, 10 s by default): Mirror.Shutdown
	// with a 1 s bound and a target that stopped answering took 70 s
	// (TestShutdownBoundedWithSilentTarget). The member's context ends at
	// the deadline, which fails its requests in flight.
	deadline := time.Now().Add(leaveTimeout)
	if hard.Err() == nil {
		ctx, cancel := context.WithDeadline(hard, deadline)
		if err := f.group.LeaveGroupContext(ctx); err != nil && !errors.Is(err, kerr.UnknownMemberID) && ctx.Err() == nil {
			f.log.Warn("leaving the group", "group", f.groupID, "err", err)
		}
		cancel()
	}
	abandon := time.AfterFunc(time.Until(deadline), f.groupCancel)
	f.group.Close()
	abandon.Stop()
	f.groupCancel()
}

// singleton runs the duties only one member of a flow does at a time: the
// checkpoint emitter with group offset sync, and the heartbeat emitter
// (tasks.go). Topic creation, config sync and ACL sync run in the flow's
// refresh loop while the member holds slot 0 (flow.isSingleton).
type singleton struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startSingleton starts the singleton duties. f.unitsMu must be held.
func (f *flow) startSingleton() {
	ctx, cancel := context.WithCancel(f.runCtx)
	s := &singleton{cancel: cancel, done: make(chan struct{})}
	f.single = s
	f.isSingleton.Store(true)
	go func() {
		defer close(s.done)
		if err := f.runTasks(ctx); err != nil {
			f.log.Error("singleton duties stopped", "err", err)
		}
	}()
	f.wakeRefresh()
	if f.cfg.Disabled {
		// A heartbeats-only flow runs no other duty (an operator read
		// topic creation and checkpoints in its log).
		f.log.Info("singleton duties started (heartbeats only: the flow is disabled)")
	} else {
		f.log.Info("singleton duties started (topic creation, config and ACL sync, checkpoints, heartbeats)")
	}
}

func (s *singleton) stop() {
	s.cancel()
	<-s.done
}
