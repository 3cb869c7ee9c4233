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
)

// Membership: the processes that run the same flow (members) share its N
// slots through Kafka's group protocol. The group (classic protocol,
// cooperative-sticky balancer) consumes the flow's coordination topic on
// the target, whose N partitions are the slots: a member owns slot k while
// the group assigns it partition k. Nothing is ever written to that topic.

// unitsTopicName is the coordination topic of the flow source->target on
// the target cluster: mm2-kmirror-units.<source>.internal, named like
// Connect's mm2-offsets.<source>.internal so that MM2 (4.0+) treats it as
// internal and never replicates it.
func unitsTopicName(source string) string { return "mm2-kmirror-units." + source + ".internal" }

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

// slotOf maps a source partition to its slot: (murmur2(topic) + partition)
// mod n, with Kafka's murmur2 and its sign bit cleared. The partitions of a
// topic are spread round-robin from a start that depends on the topic, and
// adding partitions to a topic never moves an existing one.
func slotOf(topic string, partition, n int32) int32 {
	return int32((int64(connectoffsets.Hash([]byte(topic))) + int64(partition)) % int64(n))
}

// unitsTopicPartitions creates the coordination topic with N partitions if
// it is missing and checks that an existing one has N partitions: members
// configured with different task counts cannot share the work.
func (f *flow) ensureUnitsTopic(ctx context.Context) error {
	if err := createCompacted(ctx, f.dstAdm, f.dst.Alias, f.unitsTopic, f.tasks, f.cfg.OffsetStorageReplicationFactor); err != nil {
		return err
	}
	td, err := f.dstAdm.ListTopics(ctx, f.unitsTopic)
	if err != nil {
		return err
	}
	d, ok := td[f.unitsTopic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		if ok && d.Err != nil {
			return d.Err
		}
		return fmt.Errorf("topic %s not visible yet", f.unitsTopic)
	}
	if n := int32(len(d.Partitions)); n != f.tasks {
		return &fatalError{&ConfigError{Key: f.name + ".tasks.max", Value: fmt.Sprint(f.tasks),
			Reason: fmt.Sprintf("the flow's members share %d slots (the partitions of %s on %s) but this member is configured with %d: set tasks.max=%d like the running members, or change the number of slots offline (stop every member, then run `kmirror units -config FILE -resize`, which fences the old exactly-once producers and re-creates the topic)",
				n, f.unitsTopic, f.dst.Alias, f.tasks, n)}}
	}
	return nil
}

// join creates the flow's group member. Its callbacks start and stop the
// units of the slots the group assigns; they run on kgo's group goroutine,
// one at a time.
func (f *flow) join() error {
	c := f.cfg
	opts := f.clientOpts(f.dst, f.dst.Consumer,
		kgo.ConsumerGroup(f.groupID),
		kgo.ConsumeTopics(f.unitsTopic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(c.SessionTimeout),
		kgo.HeartbeatInterval(c.HeartbeatInterval),
		kgo.RebalanceTimeout(c.RebalanceTimeout),
		kgo.OnPartitionsAssigned(f.onAssigned),
		kgo.OnPartitionsRevoked(f.onRevoked),
		kgo.OnPartitionsLost(f.onLost),
		kgo.FetchMaxWait(5*time.Second),
	)
	cl, err := kclient.New(opts...)
	if err != nil {
		return fmt.Errorf("group member on %s: %w", f.dst.Alias, err)
	}
	f.group = cl
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
			if errors.Is(err, context.Canceled) || time.Since(logged) < 10*time.Second {
				return
			}
			logged = time.Now()
			f.log.Warn("group membership", "group", f.groupID, "err", err)
		})
	}
}

// slotsOf returns the sorted slots of assigned (partitions of the
// coordination topic).
func (f *flow) slotsOf(assigned map[string][]int32) []int32 {
	s := slices.Clone(assigned[f.unitsTopic])
	slices.Sort(s)
	return s
}

func (f *flow) onAssigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
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
	var started []int32
	for _, k := range slots {
		if k < 0 || k >= f.tasks {
			continue
		}
		if k == 0 && f.single == nil {
			f.startSingleton()
		}
		if f.cfg.Disabled || f.units[k] != nil {
			continue
		}
		u := newUnit(k, f.env)
		f.units[k] = u
		u.setOffer(f.catalog.Load().slot(k))
		u.start(f.hard)
		started = append(started, k)
	}
	owned := f.ownedLocked()
	f.unitsMu.Unlock()
	if len(started) > 0 || len(slots) > 0 {
		f.log.Info("slots assigned", "member", memberID, "generation", gen, "new", started, "owned", owned)
	}
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

// release stops the units of slots (and the singleton duties with slot 0),
// all at once, and returns when they have stopped: graceful stores resume
// points first (revocation); otherwise nothing is stored (the slots were
// lost: another member may own them already).
//
// A slot another release is still stopping (the member leaving while a
// rebalance revokes the slot) is waited for too: the callback must not
// return, handing the slot to another member, before its unit stored its
// resume points.
func (f *flow) release(slots []int32, graceful bool) {
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
		if k == 0 {
			if f.single != nil {
				single, f.single = f.single, nil
				f.stoppingSingle = single
			} else {
				otherSingle = f.stoppingSingle
			}
			f.isSingleton.Store(false)
		}
	}
	owned := f.ownedLocked()
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
		return
	}
	start := time.Now()
	for _, u := range us {
		wg.Go(func() { u.stop(graceful) })
	}
	if single != nil {
		wg.Go(single.stop)
	}
	wg.Wait()
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
	}
	if single != nil && f.stoppingSingle == single {
		f.stoppingSingle = nil
	}
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
	f.log.Info("slots "+how, "slots", slots, "owned", owned, "took", time.Since(start).Round(time.Millisecond))
}

// ownedLocked returns the sorted slots this member replicates or holds the
// singleton duties of. f.unitsMu must be held.
func (f *flow) ownedLocked() []int32 {
	var s []int32
	for k := range f.units {
		s = append(s, k)
	}
	if f.single != nil && !slices.Contains(s, 0) {
		s = append(s, 0)
	}
	slices.Sort(s)
	return s
}

// leave stops every unit (gracefully unless hard is done) and the
// singleton duties, then leaves the group so that the other members take
// the slots over at once.
func (f *flow) leave(hard context.Context) {
	f.unitsMu.Lock()
	f.leaving = true
	slots := make([]int32, 0, len(f.units)+1)
	for k := range f.units {
		slots = append(slots, k)
	}
	if _, ok := f.units[0]; f.single != nil && !ok {
		slots = append(slots, 0) // singleton duties without a unit (a heartbeats-only flow)
	}
	slices.Sort(slots)
	f.unitsMu.Unlock()
	f.release(slots, hard.Err() == nil)
	if f.group == nil {
		return
	}
	if hard.Err() == nil {
		ctx, cancel := context.WithTimeout(hard, 10*time.Second)
		if err := f.group.LeaveGroupContext(ctx); err != nil && !errors.Is(err, kerr.UnknownMemberID) && ctx.Err() == nil {
			f.log.Warn("leaving the group", "group", f.groupID, "err", err)
		}
		cancel()
	}
	f.group.Close()
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
	f.log.Info("singleton duties started (topic creation, config and ACL sync, checkpoints, heartbeats)")
}

func (s *singleton) stop() {
	s.cancel()
	<-s.done
}
