package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Target group states (ListGroups GroupState) in which a group has no
// members: only such groups, and absent ones, receive offsets.
var idleGroupStates = map[string]bool{"Empty": true, "Dead": true}

// commitPlan is the offsets to commit into one target group.
type commitPlan struct {
	group string
	parts []*partEntry
	want  []int64 // offset to commit, per parts entry
	errs  []error // commit result, per parts entry
	err   error   // request-level failure
}

// sync runs one group-offset sync round (sync.group.offsets.enabled,
// docs/mm2-compat.md §6.5), with these rules:
//   - the state of every target group comes from one ListGroups; groups with
//     members (any state but Empty or Dead) are not touched
//     (docs/field-failures.md case B06), and a failed listing skips the
//     round, since a group missing from a partial list would look absent;
//   - the target offsets of the remaining groups are fetched in batches; a
//     group whose fetch failed is skipped;
//   - a target group whose committed offset is past the remote
//     partition's log end (a target rebuilt, a remote topic re-created or
//     truncated) is reported ([ReasonTargetPastLogEnd]) and not moved;
//   - per partition the offset committed is the best known translation of
//     the group's current source offset (see [PartitionStatus.Translated]),
//     only when the target has no offset for the partition or a lower one
//     (never backwards: invariant I2 of docs/field-failures.md) and only
//     when it is at most the remote partition's log end listed in this
//     round (never past the target log end: invariant I1, and
//     docs/field-failures.md case B32, transaction markers);
//   - an absent group is created by the commit; a commit the broker refuses
//     because members joined meanwhile marks the group active.
func (r *run) sync(ctx context.Context) {
	e := r.e
	var names []string
	for name, g := range e.groups {
		for _, pe := range g.parts {
			if _, ok := e.best(name, pe); ok {
				names = append(names, name)
				break
			}
		}
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)

	lctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	listed, err := r.dst.ListGroups(lctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("listing target groups; skipping this offset sync", "cluster", e.cfg.TargetAlias, "err", err)
			e.fail("sync_group_offsets", err)
		}
		return
	}
	var check []string
	topics := map[string]bool{}
	for _, name := range names {
		g := e.groups[name]
		lg, exists := listed[name]
		g.active = exists && !idleGroupStates[lg.State]
		g.syncErr = ""
		if g.active {
			continue
		}
		check = append(check, name)
		for _, pe := range g.parts {
			topics[pe.remote] = true
		}
	}
	if len(check) == 0 {
		return
	}
	targets := r.fetchOffsets(ctx, r.dst, check)
	topicList := make([]string, 0, len(topics))
	for t := range topics {
		topicList = append(topicList, t)
	}
	sort.Strings(topicList)
	ectx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	ends, err := r.dst.ListEndOffsets(ectx, topicList...)
	cancel()
	var shardErr *kadm.ShardErrors
	if err != nil && !errors.As(err, &shardErr) {
		if ctx.Err() == nil {
			e.log.Warn("listing target end offsets; skipping this offset sync", "cluster", e.cfg.TargetAlias, "err", err)
			e.fail("sync_group_offsets", err)
		}
		return
	}
	mctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	meta, merr := r.dst.ListTopics(mctx, topicList...) // topic IDs for OffsetCommit v10
	cancel()
	if merr != nil {
		if ctx.Err() == nil {
			e.log.Warn("describing target topics; skipping this offset sync", "cluster", e.cfg.TargetAlias, "err", merr)
			e.fail("sync_group_offsets", merr)
		}
		return
	}

	var plans []*commitPlan
	for _, name := range check {
		g := e.groups[name]
		tr := targets[name]
		if tr.Err != nil && !errors.Is(tr.Err, kerr.GroupIDNotFound) {
			g.syncErr = "fetching target offsets: " + tr.Err.Error()
			continue
		}
		plan := &commitPlan{group: name}
		for _, pe := range g.parts {
			want, ok := e.best(name, pe)
			if !ok {
				continue
			}
			pe.syncReason = ""
			end, ok := ends.Lookup(pe.remote, pe.partition)
			switch {
			case !ok:
				if _, missing := ends.Lookup(pe.remote, -1); missing {
					pe.syncReason = ReasonRemoteTopicMissing
				} else if shardErr != nil {
					pe.syncReason = "target end offset unknown: " + err.Error()
				} else {
					pe.syncReason = ReasonPartitionMismatch
				}
				continue
			case errors.Is(end.Err, kerr.UnknownTopicOrPartition):
				pe.syncReason = ReasonRemoteTopicMissing
				continue
			case end.Err != nil:
				pe.syncReason = "target end offset unknown: " + end.Err.Error()
				continue
			}
			have := int64(-1)
			if o, ok := tr.Fetched.Lookup(pe.remote, pe.partition); ok && o.Err == nil {
				have = o.At
			}
			pe.targetOffset = have
			switch {
			case have > end.Offset:
				// The target was rebuilt, or the remote topic re-created or
				// truncated, under an idle group: reported, never moved
				// (kmirror never moves a target offset back; the group's
				// consumers reset by auto.offset.reset, or an operator
				// resets the group).
				pe.syncReason = ReasonTargetPastLogEnd
				e.log.Warn("target group offset past the target log end; not moved (reset the group on the target, or let its consumers apply auto.offset.reset)",
					"group", name, "topic", pe.remote, "partition", pe.partition, "offset", have, "log_end", end.Offset)
				continue
			case want > end.Offset:
				pe.syncReason = ReasonPastTargetEnd
				e.log.Warn("translated offset past the target log end; not committed",
					"group", name, "topic", pe.remote, "partition", pe.partition, "offset", want, "log_end", end.Offset)
				continue
			}
			if have >= want {
				if have > want {
					pe.syncReason = ReasonTargetAhead
				}
				continue // already there, or ahead: never move back (invariant I2)
			}
			plan.parts = append(plan.parts, pe)
			plan.want = append(plan.want, want)
		}
		if len(plan.parts) > 0 {
			plans = append(plans, plan)
		}
	}

	var wg sync.WaitGroup
	sem := make(chan struct{}, DefaultCommitParallelism)
	for _, p := range plans {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
			defer cancel()
			r.commit(cctx, p, meta)
		})
	}
	wg.Wait()

	committed, failedGroups := 0, 0
	var firstErr error
	for _, p := range plans {
		g := e.groups[p.group]
		if p.err != nil {
			g.syncErr = "committing target offsets: " + p.err.Error()
			failedGroups++
			firstErr = cmpErr(firstErr, p.err)
			continue
		}
		for i, pe := range p.parts {
			switch err := p.errs[i]; {
			case err == nil:
				pe.targetOffset = p.want[i]
				committed++
			case isMembershipErr(err):
				g.active = true
			default:
				pe.syncReason = "commit failed: " + err.Error()
				firstErr = cmpErr(firstErr, err)
			}
		}
		if g.active {
			failedGroups++
		}
	}
	if firstErr != nil && ctx.Err() == nil {
		e.log.Warn("committing target group offsets", "cluster", e.cfg.TargetAlias, "groups_failed", failedGroups, "err", firstErr)
		e.fail("sync_group_offsets", fmt.Errorf("committing target group offsets: %w", firstErr))
	}
	if e.cfg.OnCommits != nil {
		e.cfg.OnCommits(committed)
	}
}

// commit sends one OffsetCommit for plan as a simple commit (generation -1,
// no member id: what kadm.CommitOffsets and MM2's alterConsumerGroupOffsets
// send), with the topic ids of meta, and fills plan.errs.
func (r *run) commit(ctx context.Context, plan *commitPlan, meta kadm.TopicDetails) {
	plan.errs = make([]error, len(plan.parts))
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = plan.group
	idx := map[string]int{} // topic -> index in req.Topics
	for i, pe := range plan.parts {
		td, ok := meta[pe.remote]
		if !ok || td.Err != nil {
			plan.errs[i] = kerr.UnknownTopicOrPartition
			continue
		}
		ti, ok := idx[pe.remote]
		if !ok {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = pe.remote, td.ID
			req.Topics = append(req.Topics, rt)
			ti = len(req.Topics) - 1
			idx[pe.remote] = ti
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = pe.partition, plan.want[i], -1
		rp.Metadata = kmsg.StringPtr(pe.metadata)
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rp)
	}
	if len(req.Topics) == 0 {
		return
	}
	resp, err := req.RequestWith(ctx, r.dstCl)
	if err != nil {
		plan.err = err
		return
	}
	type tp struct {
		topic string
		p     int32
	}
	got := map[tp]error{}
	for _, rt := range resp.Topics {
		topic := rt.Topic
		if topic == "" { // v10 answers with topic ids only
			for name, td := range meta {
				if td.ID == rt.TopicID {
					topic = name
					break
				}
			}
		}
		for _, rp := range rt.Partitions {
			got[tp{topic, rp.Partition}] = kerr.ErrorForCode(rp.ErrorCode)
		}
	}
	for i, pe := range plan.parts {
		if plan.errs[i] != nil {
			continue
		}
		err, ok := got[tp{pe.remote, pe.partition}]
		if !ok {
			err = errors.New("partition missing in the commit response")
		}
		plan.errs[i] = err
	}
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// isMembershipErr reports the OffsetCommit errors a broker returns for a
// simple (member-less) commit into a group that has members: the group is
// active on the target.
func isMembershipErr(err error) bool {
	return errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.FencedInstanceID) ||
		errors.Is(err, kerr.StaleMemberEpoch)
}
