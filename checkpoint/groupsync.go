package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitPlan is one OffsetCommit request of a sync round: the plan's
// offsets for one target group, and the results.
type commitPlan struct {
	groupCommit
	errs []error // commit result, per parts entry
	err  error   // request-level failure
}

// syncIO is the I/O one group offset sync round needs; run implements it
// with the emitter's target client, tests with an in-memory model.
type syncIO interface {
	// listTargetGroups lists the target's groups and their states.
	listTargetGroups(ctx context.Context) (kadm.ListedGroups, error)
	// fetchTargetOffsets returns the target groups' committed offsets
	// (one batched OffsetFetch per coordinator), as fetchOffsets does.
	fetchTargetOffsets(ctx context.Context, groups []string) ([]kmsg.OffsetFetchResponseGroup, map[string]error)
	// listEnds lists the log ends of remote topics.
	listEnds(ctx context.Context, topics []string) (kadm.ListedOffsets, error)
	// listStarts lists the log starts of remote topics.
	listStarts(ctx context.Context, topics []string) (kadm.ListedOffsets, error)
	// topicMeta describes remote topics (their IDs, for OffsetCommit v10).
	topicMeta(ctx context.Context, topics []string) (kadm.TopicDetails, error)
	// commit sends one OffsetCommit and fills plan.errs or plan.err.
	commit(ctx context.Context, plan *commitPlan, meta kadm.TopicDetails)
}

// sync runs one group offset sync round with the run's clients.
func (r *run) sync(ctx context.Context) { r.e.sync(ctx, r) }

// sync runs one group-offset sync round (sync.group.offsets.enabled,
// docs/mm2-compat.md §6.5) on what changed since the previous one. It
// gathers the plan's inputs with admin requests, lets planSync
// (syncplan.go) decide, and applies the plan:
//   - the state of every target group comes from one ListGroups; groups with
//     members (any state but Empty or Dead) are not touched
//     (docs/field-failures.md case B06), and a failed listing skips the
//     round, since a group missing from a partial list would look absent;
//   - only the idle groups whose translations, source offsets or
//     checkpoints moved since their last plan, whose target state changed
//     (became idle, was created or deleted), or whose last plan left
//     something to retry (a log end unknown, a commit failed, a translation
//     past the log end) have their target offsets fetched (one batched
//     OffsetFetch per coordinator) and are planned; at a sweep (every
//     targetSweepInterval) every idle group's offsets are fetched, and those
//     that differ from the last seen or committed (reset by an operator)
//     are planned too. A group at its translation stays so until one of
//     those changes; a group whose fetch failed is skipped;
//   - the log ends of their remote topics are listed; a failure skips the
//     round (a partial listing only skips the partitions it lacks); then
//     their log starts (a start not listed counts as 0);
//   - a batch of groups at a time (syncBatch), planSync decides, per
//     partition, what to commit (never backwards, never past the target
//     log end) and why not; the batch's decisions are recorded in its
//     groups and its commits sent before the next batch is planned;
//   - at the first batch with a commit, the topic IDs of the planned
//     groups' remote topics are listed (OffsetCommit v10); a failure sends
//     no commit this round: the groups to commit show the error and are
//     planned again at the next round;
//   - the commits are sent, at most DefaultCommitParallelism at a time;
//     an absent group is created by the commit, and a commit the broker
//     refuses because members joined meanwhile marks the group active.
func (e *Emitter) sync(ctx context.Context, io syncIO) {
	e.work.syncs.Add(1)
	if e.names == nil {
		e.publish() // rebuilds names
	}
	var eligible []*groupEntry
	for _, name := range e.names {
		if g := e.groups[name]; g != nil && e.syncable(g) {
			eligible = append(eligible, g)
		}
	}
	if len(eligible) == 0 {
		return
	}
	listed, err := io.listTargetGroups(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("listing target groups; skipping this offset sync", "cluster", e.cfg.TargetAlias, "err", err)
			e.fail("sync_group_offsets", err)
		}
		return
	}
	now := time.Now()
	sweep := e.full || e.forceSyncSweep || e.nextSyncSweep.IsZero() || !now.Before(e.nextSyncSweep)
	e.forceSyncSweep = false
	var idle []*groupEntry
	var idleNames []string
	moved := map[*groupEntry]bool{}
	for _, g := range eligible {
		lg, exists := listed[g.name]
		active := !idleOnTarget(lg.State, exists)
		if !g.tknown || g.tlisted != exists || g.tstate != lg.State || g.active != active {
			moved[g] = true
		}
		g.tknown, g.tlisted, g.tstate = true, exists, lg.State
		if active {
			if !g.active || g.syncErr != "" {
				g.active, g.syncErr = true, ""
				e.touch(g)
			}
			continue
		}
		// An idle group's target offsets are fetched when something of it
		// changed, and at a sweep for all: a group reset on the target by
		// an operator, with nothing else changed, is synced again within
		// a sweep interval.
		if sweep || moved[g] || g.syncDirty || g.syncPending {
			idle = append(idle, g)
			idleNames = append(idleNames, g.name)
		}
	}
	if sweep {
		e.nextSyncSweep = now.Add(max(e.sweepEvery, e.cfg.SyncInterval))
	}
	if len(idle) == 0 {
		return
	}
	fetched, ferrs := io.fetchTargetOffsets(ctx, idleNames)
	if ctx.Err() != nil {
		return
	}
	byName := make(map[string]*kmsg.OffsetFetchResponseGroup, len(fetched))
	for i := range fetched {
		byName[fetched[i].Group] = &fetched[i]
	}
	// The groups to plan: those that changed (eligible: each has a
	// translation).
	var plannedGroups []*groupEntry
	topics := map[string]bool{}
	for _, g := range idle {
		rg := byName[g.name]
		changed := rg == nil || rg.ErrorCode != 0 || moved[g] || g.syncDirty || g.syncPending || e.full
		if !changed {
			changed = e.targetMoved(g, rg)
		}
		if !changed {
			continue
		}
		plannedGroups = append(plannedGroups, g)
		for _, pe := range g.parts {
			topics[pe.remote] = true
		}
	}
	e.work.planned.Add(int64(len(plannedGroups)))
	if len(plannedGroups) == 0 {
		return
	}
	topicList := make([]string, 0, len(topics))
	for t := range topics {
		topicList = append(topicList, t)
	}
	sort.Strings(topicList)
	ends, err := io.listEnds(ctx, topicList)
	var shardErr *kadm.ShardErrors
	if err != nil && !errors.As(err, &shardErr) {
		if ctx.Err() == nil {
			e.log.Warn("listing target end offsets; skipping this offset sync", "cluster", e.cfg.TargetAlias, "err", err)
			e.fail("sync_group_offsets", err)
		}
		for _, g := range plannedGroups {
			g.syncPending = true
		}
		return
	}
	in := syncInputs{states: map[string]string{}, offsets: map[string]targetOffsets{},
		ends: map[cpKeyTP]targetEnd{}, missing: map[string]bool{}}
	if shardErr != nil {
		in.endsErr = err
	}
	// The log starts: a translation below one is committed as the log
	// start (planSync). A start not listed is taken as 0: what is
	// committed then is the translation, as before.
	starts, _ := io.listStarts(ctx, topicList)
	for t, ps := range ends {
		for p, o := range ps {
			if p == -1 { // kadm's entry for a topic missing from the metadata
				in.missing[t] = true
				continue
			}
			te := targetEnd{offset: o.Offset, err: o.Err}
			if so, ok := starts.Lookup(t, p); ok && so.Err == nil && o.Err == nil {
				te.start = min(max(so.Offset, 0), o.Offset)
			}
			in.ends[cpKeyTP{t, p}] = te
		}
	}

	// Planned, applied and committed e.syncBatch groups at a time: a
	// round that plans thousands of groups (the first, a commit wave)
	// holds the plan and commits of one batch, not of every group
	// partition at once (issue 22: 36 MB at 80 000 group partitions, as
	// much again as the emitter's whole state; then 8 MB of commits).
	// The topic IDs the commits need (OffsetCommit v10) are listed once,
	// at the first batch with a commit, for every topic of the planned
	// groups (topicList): a failure sends no commit this round, and the
	// groups to commit show the error and are planned again next round.
	var meta kadm.TopicDetails
	var metaErr error
	metaListed := false
	committed, failedGroups := 0, 0
	var firstErr error
	per := max(e.syncBatch, 1)
	for i := 0; i < len(plannedGroups); i += per {
		batch := plannedGroups[i:min(i+per, len(plannedGroups))]
		in.groups = in.groups[:0]
		clear(in.offsets)
		clear(in.states)
		for _, g := range batch {
			in.offsets[g.name] = e.targetOffsetsOf(g, byName[g.name], ferrs[g.name])
			if st, ok := listed[g.name]; ok {
				in.states[g.name] = st.State
			}
			in.groups = append(in.groups, e.syncGroupOf(g))
		}
		plan := planSync(in)
		e.applyPlan(batch, in, plan)
		commits := plan.commits
		if len(commits) == 0 {
			continue
		}
		if !metaListed {
			metaListed = true
			meta, metaErr = io.topicMeta(ctx, topicList)
			if metaErr != nil && ctx.Err() == nil {
				e.log.Warn("describing target topics; no group offsets committed this round", "cluster", e.cfg.TargetAlias, "err", metaErr)
				e.fail("sync_group_offsets", metaErr)
			}
		}
		if metaErr != nil {
			for _, c := range commits {
				if g := e.groups[c.group]; g != nil && g.syncErr == "" {
					g.syncErr = "describing target topics: " + metaErr.Error()
					e.touch(g)
				}
			}
			continue
		}
		c, f, err := e.commitBatch(ctx, io, e.dropUnchecked(commits, meta), meta)
		committed, failedGroups, firstErr = committed+c, failedGroups+f, cmpErr(firstErr, err)
	}
	if metaErr != nil {
		for _, g := range plannedGroups {
			g.syncPending = true
		}
		return
	}
	if firstErr != nil && ctx.Err() == nil {
		e.log.Warn("committing target group offsets", "cluster", e.cfg.TargetAlias, "groups_failed", failedGroups, "err", firstErr)
		e.fail("sync_group_offsets", fmt.Errorf("committing target group offsets: %w", firstErr))
	}
	if e.cfg.OnCommits != nil {
		e.cfg.OnCommits(committed)
	}
}

// commitBatch sends one batch's commits, at most DefaultCommitParallelism
// at a time, and records their outcome in the groups: the target offsets
// committed, the groups that turned out active, the partitions whose
// commit failed (their groups are planned again next round). It returns
// how many partitions were committed, how many groups failed, and the
// first error (cmpErr's choice).
func (e *Emitter) commitBatch(ctx context.Context, io syncIO, commits []groupCommit, meta kadm.TopicDetails) (committed, failedGroups int, firstErr error) {
	plans := make([]*commitPlan, len(commits))
	for i, c := range commits {
		plans[i] = &commitPlan{groupCommit: c}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, DefaultCommitParallelism)
	for _, p := range plans {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
			defer cancel()
			io.commit(cctx, p, meta)
		})
	}
	wg.Wait()
	for _, p := range plans {
		g := e.groups[p.group]
		if p.err != nil {
			g.syncErr = "committing target offsets: " + p.err.Error()
			g.syncPending = true
			failedGroups++
			firstErr = cmpErr(firstErr, p.err)
			continue
		}
		failed := false
		for i, cp := range p.parts {
			pe := g.parts.get(tpKey{topic: e.sourceOf[cp.key.remote], partition: cp.key.partition})
			if pe == nil {
				continue // removed since the plan (not expected: the plan is applied under storeMu)
			}
			switch err := p.errs[i]; {
			case err == nil:
				if !g.tlisted { // the commit created the group, Empty
					g.tlisted, g.tstate = true, "Empty"
				}
				pe.targetOffset = cp.offset
				if pe.seenTarget < 0 {
					g.nTarget++
				}
				pe.seenTarget = cp.offset
				committed++
			case isMembershipErr(err):
				g.active = true
				g.syncPending = true
			default:
				err = commitAdvice(err, p.group, cp.key.remote, e.cfg.TargetAlias, len(cp.metadata))
				pe.setSyncReason("commit failed: " + err.Error())
				g.syncPending, failed = true, true
				firstErr = cmpErr(firstErr, err)
			}
		}
		if g.active || failed {
			failedGroups++ // counted in the round's warning (partitions refused were not)
		}
	}
	return committed, failedGroups, firstErr
}

// dropUnchecked removes from commits the partitions of remote topics whose
// ID in meta (this round's listing) is not the one the last emission
// checked its translations and checkpoints against (e.remoteIDs): the
// topic was re-created since, or no listing of it succeeded yet (a failed
// one leaves the round's translations unchecked). A translation of the
// previous log can be above the exact offset of the new one, and a target
// group offset is never moved back: committing it would skip records for
// good. Their groups are retried next round, and the next emission sweeps
// the target, which finds the change and translates them again. A zero
// ID (a broker without topic IDs) is not compared.
func (e *Emitter) dropUnchecked(commits []groupCommit, meta kadm.TopicDetails) []groupCommit {
	var zero [16]byte
	out := commits[:0]
	for _, c := range commits {
		g := e.groups[c.group]
		parts := c.parts[:0]
		for _, p := range c.parts {
			listed := meta[p.key.remote].ID
			checked, ok := e.remoteIDs[p.key.remote]
			if listed == zero || (ok && checked == listed) {
				parts = append(parts, p)
				continue
			}
			if pe := g.parts.get(tpKey{topic: e.sourceOf[p.key.remote], partition: p.key.partition}); pe != nil {
				pe.setSyncReason(ReasonTargetUnchecked)
			}
			g.syncPending = true
			e.forceSweep = true
			e.touch(g)
		}
		if len(parts) > 0 {
			c.parts = parts
			out = append(out, c)
		}
	}
	return out
}

// defaultSyncBatch is how many groups a sync round plans at a time.
const defaultSyncBatch = 256

// targetOffsetsOf returns the plan's view of g's fetched target offsets:
// rg is its response (nil when none came, ferr the request's error).
func (e *Emitter) targetOffsetsOf(g *groupEntry, rg *kmsg.OffsetFetchResponseGroup, ferr error) targetOffsets {
	var to targetOffsets
	switch {
	case rg == nil:
		to.err = ferr
		if to.err == nil {
			to.err = errors.New("no response for group")
		}
		return to
	default:
		to.err = kerr.ErrorForCode(rg.ErrorCode)
	}
	if to.err != nil {
		return to
	}
	to.offsets = make(map[cpKeyTP]int64, len(g.parts))
	e.eachTargetPart(g, rg, func(pe *partEntry, rp *kmsg.OffsetFetchResponseGroupTopicPartition) bool {
		if (rp.ErrorCode == kerr.UnknownTopicOrPartition.Code || rp.ErrorCode == kerr.UnknownTopicID.Code) && e.remoteGone[pe.remote] {
			// The remote topic is not there (the target listing shows it
			// missing too): its offsets went with it (absent, as for a
			// deleted topic answered -1). Skipping the group would keep
			// its other partitions unsynced until the topic came back.
			// A topic the listing shows is skipped as below: an answer
			// the listing does not confirm is not proof of no offset.
			return true
		}
		if rp.ErrorCode != 0 {
			// The partition's offset is unknown, not absent: planned as
			// none, a translation below it would move the group back.
			// The group is skipped and retried next round.
			to.err = fmt.Errorf("%s-%d: %w", pe.remote, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			to.offsets = nil
			return false
		}
		to.offsets[pe.cpKey()] = rp.Offset
		return true
	})
	return to
}

// applyPlan records a batch's plan in its groups: the target offsets as
// fetched (for the next round's comparison), each partition's reason and
// target offset, and what the next round must retry.
func (e *Emitter) applyPlan(batch []*groupEntry, in syncInputs, plan syncPlan) {
	for _, g := range batch {
		to := in.offsets[g.name]
		g.nTarget = 0
		for _, pe := range g.parts {
			pe.setSyncReason("") // a partition without translation is not planned
			// The target offset is the one fetched, also for a partition
			// whose log end is unknown or whose remote topic is missing
			// (its offsets went with the topic): the status must not show
			// the one committed before as the target's.
			pe.seenTarget, pe.targetOffset = -1, -1
			if o, ok := to.offsets[pe.cpKey()]; ok && o >= 0 {
				pe.seenTarget, pe.targetOffset = o, o
				g.nTarget++
			}
		}
		g.syncDirty, g.syncPending = false, false
		e.touch(g)
	}
	for _, gs := range plan.groups {
		g := e.groups[gs.name]
		g.active, g.syncErr = gs.active, gs.err
		if gs.err != "" {
			g.syncPending = true
			for _, pe := range g.parts {
				pe.setSyncReason(gs.err) // the partitions' reason, not "not synced yet"
			}
		}
		for _, ps := range gs.parts {
			pe := g.parts.get(tpKey{topic: e.sourceOf[ps.key.remote], partition: ps.key.partition})
			if pe == nil {
				continue // not expected: the plan names the group's partitions
			}
			pe.setSyncReason(ps.reason)
			if ps.reason != "" && ps.reason != ReasonTargetAhead {
				g.syncPending = true // retried every round: a log end, a topic, a commit may come
			}
			if ps.endKnown {
				pe.targetOffset = ps.target
			}
			switch ps.reason {
			case ReasonTargetPastLogEnd:
				e.log.Warn("target group offset past the target log end; not moved (reset the group on the target, or let its consumers apply auto.offset.reset)",
					"group", gs.name, "topic", ps.key.remote, "partition", ps.key.partition, "offset", ps.target, "log_end", ps.end)
			case ReasonPastTargetEnd:
				e.log.Warn("translated offset past the target log end; not committed",
					"group", gs.name, "topic", ps.key.remote, "partition", ps.key.partition, "offset", ps.want, "log_end", ps.end)
			}
		}
	}
}

// targetMoved reports whether a target group's fetched offsets differ
// from those last seen or committed for its partitions (reset, deleted,
// committed by someone else). Offsets of other topics are ignored.
func (e *Emitter) targetMoved(g *groupEntry, rg *kmsg.OffsetFetchResponseGroup) bool {
	matched, moved := 0, false
	e.eachTargetPart(g, rg, func(pe *partEntry, rp *kmsg.OffsetFetchResponseGroupTopicPartition) bool {
		o := rp.Offset
		if rp.ErrorCode != 0 || o < 0 {
			o = -1
		}
		if o != pe.seenTarget {
			moved = true
			return false
		}
		if o >= 0 {
			matched++
		}
		return true
	})
	return moved || matched != g.nTarget
}

// eachTargetPart calls f with each partition of g's fetched target offsets
// rg that is one of g's group partitions (by remote topic), until f returns
// false.
func (e *Emitter) eachTargetPart(g *groupEntry, rg *kmsg.OffsetFetchResponseGroup, f func(*partEntry, *kmsg.OffsetFetchResponseGroupTopicPartition) bool) {
	for ti := range rg.Topics {
		rt := &rg.Topics[ti]
		src, ok := e.sourceOf[rt.Topic]
		if !ok {
			continue
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if pe := g.parts.get(tpKey{topic: src, partition: rp.Partition}); pe != nil && !f(pe, rp) {
				return
			}
		}
	}
}

// syncable reports whether some partition of g has a best known
// translation: only such groups take part in group offset sync.
func (e *Emitter) syncable(g *groupEntry) bool {
	for _, pe := range g.parts {
		if pe.translated >= 0 {
			return true
		}
		if _, ok := e.best(g.name, pe); ok {
			return true
		}
	}
	return false
}

// syncGroupOf returns the plan's view of g, its partitions sorted by
// remote topic and partition; none when nothing of it is translated.
func (e *Emitter) syncGroupOf(g *groupEntry) syncGroup {
	sg := syncGroup{name: g.name}
	for _, pe := range sortedParts(g) {
		p := syncPart{key: pe.cpKey(), source: pe.srcOffset, translated: pe.translated, metadata: mdOf(pe.md)}
		if last, ok := e.checkedLast(g.name, pe); ok {
			p.last = &last
		}
		sg.parts = append(sg.parts, p)
	}
	if !sg.translated() {
		sg.parts = nil
	}
	return sg
}

// listTargetGroups lists the target's groups.
func (r *run) listTargetGroups(ctx context.Context) (kadm.ListedGroups, error) {
	lctx, cancel := context.WithTimeout(ctx, r.e.cfg.AdminTimeout)
	defer cancel()
	return r.dst.ListGroups(lctx)
}

// fetchTargetOffsets fetches the target groups' committed offsets.
func (r *run) fetchTargetOffsets(ctx context.Context, groups []string) ([]kmsg.OffsetFetchResponseGroup, map[string]error) {
	return r.e.fetchGroupOffsets(ctx, r.dstCl, groups)
}

// listEnds lists the log ends of remote topics.
func (r *run) listEnds(ctx context.Context, topics []string) (kadm.ListedOffsets, error) {
	ectx, cancel := context.WithTimeout(ctx, r.e.cfg.AdminTimeout)
	defer cancel()
	return r.dst.ListEndOffsets(ectx, topics...)
}

// listStarts lists the log starts of remote topics.
func (r *run) listStarts(ctx context.Context, topics []string) (kadm.ListedOffsets, error) {
	sctx, cancel := context.WithTimeout(ctx, r.e.cfg.AdminTimeout)
	defer cancel()
	return r.dst.ListStartOffsets(sctx, topics...)
}

// topicMeta describes remote topics.
func (r *run) topicMeta(ctx context.Context, topics []string) (kadm.TopicDetails, error) {
	mctx, cancel := context.WithTimeout(ctx, r.e.cfg.AdminTimeout)
	defer cancel()
	return r.dst.ListTopics(mctx, topics...)
}

// commit sends one OffsetCommit for plan as a simple commit (generation -1,
// no member id: what kadm.CommitOffsets and MM2's alterConsumerGroupOffsets
// send), with the topic ids of meta, and fills plan.errs.
func (r *run) commit(ctx context.Context, plan *commitPlan, meta kadm.TopicDetails) {
	plan.errs = make([]error, len(plan.parts))
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = plan.group
	idx := map[string]int{} // topic -> index in req.Topics
	for i, cp := range plan.parts {
		td, ok := meta[cp.key.remote]
		if !ok || td.Err != nil {
			plan.errs[i] = kerr.UnknownTopicOrPartition
			continue
		}
		ti, ok := idx[cp.key.remote]
		if !ok {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = cp.key.remote, td.ID
			req.Topics = append(req.Topics, rt)
			ti = len(req.Topics) - 1
			idx[cp.key.remote] = ti
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = cp.key.partition, cp.offset, -1
		rp.Metadata = kmsg.StringPtr(cp.metadata)
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
	for i, cp := range plan.parts {
		if plan.errs[i] != nil {
			continue
		}
		err, ok := got[tp{cp.key.remote, cp.key.partition}]
		if !ok {
			err = errors.New("partition missing in the commit response")
		}
		plan.errs[i] = err
	}
}

// commitAdvice adds to err, the failure of a target commit of group into
// remote topic topic on cluster target, the ACL kmirror lacks when it is
// an authorization error (OffsetCommit needs READ on the group and READ on
// the topic), and the size of the commit's metadata (mdLen bytes, copied
// from the source) and the broker setting to raise when the target found
// it too large; other errors are returned as they are. A breaker withheld
// READ on a target group: the status said "commit failed:
// GROUP_AUTHORIZATION_FAILED" alone (TestGroupSyncCommitRefusedNamesACL);
// likewise OFFSET_METADATA_TOO_LARGE (TestBrkEGroupSyncMetadataTooLargeSaysWhy).
func commitAdvice(err error, group, topic, target string, mdLen int) error {
	switch {
	case errors.Is(err, kerr.OffsetMetadataTooLarge):
		return fmt.Errorf("%w; the source commit's metadata is %d bytes, above the target's limit: raise offset.metadata.max.bytes on the brokers of %s (4096 by default), or commit shorter metadata on the source", err, mdLen, target)
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		return fmt.Errorf("%w; grant kmirror READ on group %s on %s (ACLS.md: group offset sync)", err, group, target)
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return fmt.Errorf("%w; grant kmirror READ on topic %s on %s (ACLS.md: group offset sync)", err, topic, target)
	}
	return err
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
