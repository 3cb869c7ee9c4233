package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Target group states (ListGroups GroupState) in which a group has no
// members: only such groups, and absent ones, receive offsets.
var idleGroupStates = map[string]bool{"Empty": true, "Dead": true}

// commitPlan is the offsets to commit into one target group.
type commitPlan struct {
	group   string
	offsets kadm.Offsets
	parts   []*partEntry
	resp    kadm.OffsetResponses
	err     error
}

// sync runs one group-offset sync round (sync.group.offsets.enabled, spec
// 6.5), with these rules:
//   - the state of every target group comes from one ListGroups; groups with
//     members (any state but Empty or Dead) are not touched (case B06), and
//     a failed listing skips the round, since a group missing from a
//     partial list would look absent;
//   - the target offsets of the remaining groups are fetched in batches; a
//     group whose fetch failed is skipped;
//   - per partition the offset committed is the best known translation of
//     the group's current source offset (see [PartitionStatus.Translated]),
//     only when the target has no offset for the partition or a lower one
//     (never backwards, I2) and only when it is at most the remote
//     partition's log end listed in this round (I1, case B32);
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

	var plans []*commitPlan
	for _, name := range check {
		g := e.groups[name]
		tr := targets[name]
		if tr.Err != nil && !errors.Is(tr.Err, kerr.GroupIDNotFound) {
			g.syncErr = "fetching target offsets: " + tr.Err.Error()
			continue
		}
		plan := &commitPlan{group: name, offsets: kadm.Offsets{}}
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
			case want > end.Offset:
				pe.syncReason = ReasonPastTargetEnd
				e.log.Warn("translated offset past the target log end; not committed",
					"group", name, "topic", pe.remote, "partition", pe.partition, "offset", want, "log_end", end.Offset)
				continue
			}
			have := int64(-1)
			if o, ok := tr.Fetched.Lookup(pe.remote, pe.partition); ok && o.Err == nil {
				have = o.At
			}
			pe.targetOffset = have
			if have >= want {
				if have > want {
					pe.syncReason = ReasonTargetAhead
				}
				continue // already there, or ahead: never move back (I2)
			}
			plan.offsets.Add(kadm.Offset{Topic: pe.remote, Partition: pe.partition, At: want, LeaderEpoch: -1, Metadata: pe.metadata})
			plan.parts = append(plan.parts, pe)
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
			p.resp, p.err = r.dst.CommitOffsets(cctx, p.group, p.offsets)
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
		for _, pe := range p.parts {
			want, _ := e.best(p.group, pe)
			res, ok := p.resp.Lookup(pe.remote, pe.partition)
			switch {
			case ok && res.Err == nil:
				pe.targetOffset = want
				committed++
			case ok && isMembershipErr(res.Err):
				g.active = true
			case ok:
				pe.syncReason = "commit failed: " + res.Err.Error()
				firstErr = cmpErr(firstErr, res.Err)
			default:
				pe.syncReason = "commit failed: no response"
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
