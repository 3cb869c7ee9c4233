package checkpoint

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file holds the decisions of one group-offset sync round as a pure
// function, planSync: no clients, no clock, no logging. run.sync
// (groupsync.go) gathers its inputs with admin requests, calls it, and
// applies the result (OffsetCommit requests, status fields, logs).

// Target group states (ListGroups GroupState) in which a group has no
// members: only such groups, and absent ones, receive offsets.
var idleGroupStates = map[string]bool{"Empty": true, "Dead": true}

// idleOnTarget reports whether a target group may receive offsets: it is
// absent from the target's group listing (listed false), or listed in a
// state without members (Empty, Dead). Every other state (Stable,
// PreparingRebalance, CompletingRebalance, KIP-848's Assigning and
// Reconciling, an unknown one) has, or may have, members.
func idleOnTarget(state string, listed bool) bool {
	return !listed || idleGroupStates[state]
}

// syncPart is one replicated partition of a source group, as the plan
// sees it.
type syncPart struct {
	key cpKeyTP // remote topic and partition
	// source is the group's committed offset on the source.
	source int64
	// translated is the translation of source, -1 when none.
	translated int64
	// last is the last checkpoint written for the partition, nil when none.
	last *Checkpoint
	// metadata is the source commit's metadata, committed with the offset.
	metadata string
}

// syncGroup is one source group: its replicated partitions.
type syncGroup struct {
	name  string
	parts []syncPart
}

// targetOffsets is one target group's fetched committed offsets.
type targetOffsets struct {
	// err is the fetch's failure; kerr.GroupIDNotFound means the group
	// has no offsets (an absent group), not a failure.
	err error
	// offsets are the committed offsets by remote partition; a negative
	// offset (a null entry, or -1 committed by a non-Java client) counts
	// as none.
	offsets map[cpKeyTP]int64
}

// targetEnd is one remote partition's listed log end and log start.
type targetEnd struct {
	offset int64
	err    error // the partition's listing error; offset is unknown then
	// start is the listed log start; 0 when unknown (its listing failed).
	start int64
}

// syncInputs is everything one sync round decides from.
type syncInputs struct {
	// groups are the source groups, sorted by name, each with its
	// partitions sorted by key.
	groups []syncGroup
	// states are the target groups' states (ListGroups) by name; a group
	// missing is absent on the target.
	states map[string]string
	// offsets are the committed offsets of the idle target groups by name;
	// a group missing has none.
	offsets map[string]targetOffsets
	// ends are the remote partitions' log ends listed on the target.
	ends map[cpKeyTP]targetEnd
	// missing are the remote topics the log-end listing found missing.
	missing map[string]bool
	// endsErr is the error of a partial log-end listing (some brokers
	// failed), nil when the listing is complete.
	endsErr error
}

// partSync is the plan for one translated partition of an idle group.
type partSync struct {
	key cpKeyTP
	// want is the best known translation of the group's source offset.
	want int64
	// reason says why nothing is committed ("" when committed, or when the
	// target is already at want).
	reason string
	// endKnown reports that the remote partition's log end was listed;
	// target and end are valid only then.
	endKnown bool
	// target is the target group's committed offset, -1 none.
	target int64
	// end is the remote partition's log end.
	end int64
	// commit reports that want, or the log start when want is below it
	// ([ReasonBelowTargetLogStart]), is to be committed.
	commit bool
}

// groupSync is the plan for one source group with a translated partition.
type groupSync struct {
	name string
	// active: the target group has (or may have) members; nothing is
	// decided for its partitions.
	active bool
	// err is a group-level reason for skipping its partitions (its
	// target offsets could not be fetched); "" otherwise.
	err string
	// parts are the plans of the translated partitions, in input order;
	// nil when active or err is set.
	parts []partSync
}

// syncPlan is the outcome of planSync.
type syncPlan struct {
	// groups are the source groups with at least one translated
	// partition, in input order.
	groups []groupSync
	// commits are the offsets to commit, one entry per target group with
	// something to commit, in input order.
	commits []groupCommit
}

// groupCommit is the offsets to commit into one target group.
type groupCommit struct {
	group string
	parts []commitPart
}

// commitPart is one partition's offset to commit, with the source
// commit's metadata.
type commitPart struct {
	key      cpKeyTP
	offset   int64
	metadata string
}

// bestOffset returns the best known no-skip target offset for a group at
// source offset src with translation translated (-1 none) and last
// checkpoint last (nil none): the translation, or the last checkpoint's
// downstream offset when that checkpoint is for a source offset not after
// src and higher (translations of older offsets never pass the current
// position). ok is false when there is none.
func bestOffset(src, translated int64, last *Checkpoint) (int64, bool) {
	b := translated
	if last != nil && last.UpstreamOffset <= src && last.DownstreamOffset > b {
		b = last.DownstreamOffset
	}
	return b, b >= 0
}

// translated reports whether some partition of g has a best known
// translation: only such groups are planned.
func (g syncGroup) translated() bool {
	for _, p := range g.parts {
		if _, ok := bestOffset(p.source, p.translated, p.last); ok {
			return true
		}
	}
	return false
}

// planSync decides one group-offset sync round (docs/mm2-compat.md §6.5,
// with kmirror's differences), per source group with a translated
// partition:
//   - a group that has members on the target (not idleOnTarget) is left
//     alone: active (MM2 writes it and the broker refuses, KAFKA-14095;
//     docs/field-failures.md case B06);
//   - a group whose target offsets could not be fetched is skipped with
//     the fetch error;
//   - per translated partition, want is bestOffset. Nothing is committed
//     when the remote topic is missing ([ReasonRemoteTopicMissing]), the
//     remote partition is missing ([ReasonPartitionMismatch]) or its log
//     end is unknown; when the target group's offset is past the log end
//     ([ReasonTargetPastLogEnd]: reported, never moved); when want is
//     past the log end ([ReasonPastTargetEnd]: never past the target log
//     end, invariant I1 of docs/field-failures.md); when the target group
//     is ahead of want ([ReasonTargetAhead]: never backwards, invariant
//     I2); or when it is at want already (no reason). Otherwise want is
//     committed: the target group has no offset for the partition (or a
//     null one), or a lower one; an absent group is created by the
//     commit. A want below the log start is replaced by the log start,
//     under the same rules, with [ReasonBelowTargetLogStart]: a consumer
//     at an offset below it resets by auto.offset.reset (to the log end
//     by default), skipping every record the target still holds.
func planSync(in syncInputs) syncPlan {
	var plan syncPlan
	for _, g := range in.groups {
		gs := groupSync{name: g.name}
		type translatedPart struct {
			p    syncPart
			want int64
		}
		var tps []translatedPart
		for _, p := range g.parts {
			if want, ok := bestOffset(p.source, p.translated, p.last); ok {
				tps = append(tps, translatedPart{p, want})
			}
		}
		if len(tps) == 0 {
			continue
		}
		state, listed := in.states[g.name]
		gs.active = !idleOnTarget(state, listed)
		if gs.active {
			plan.groups = append(plan.groups, gs)
			continue
		}
		tr := in.offsets[g.name]
		if tr.err != nil && !errors.Is(tr.err, kerr.GroupIDNotFound) {
			gs.err = "fetching target offsets: " + tr.err.Error()
			plan.groups = append(plan.groups, gs)
			continue
		}
		cp := groupCommit{group: g.name}
		gs.parts = make([]partSync, 0, len(tps))
		for _, tp := range tps {
			ps := partSync{key: tp.p.key, want: tp.want, target: -1}
			var at int64
			ps.reason, at, ps.commit = decidePart(in, tr, &ps)
			if ps.commit {
				cp.parts = append(cp.parts, commitPart{key: ps.key, offset: at, metadata: tp.p.metadata})
			}
			gs.parts = append(gs.parts, ps)
		}
		plan.groups = append(plan.groups, gs)
		if len(cp.parts) > 0 {
			plan.commits = append(plan.commits, cp)
		}
	}
	return plan
}

// decidePart fills ps's log end and target offset and decides its commit
// of offset at.
func decidePart(in syncInputs, tr targetOffsets, ps *partSync) (reason string, at int64, commit bool) {
	end, ok := in.ends[ps.key]
	switch {
	case !ok:
		switch {
		case in.missing[ps.key.remote]:
			return ReasonRemoteTopicMissing, 0, false
		case in.endsErr != nil:
			return "target end offset unknown: " + in.endsErr.Error(), 0, false
		}
		return ReasonPartitionMismatch, 0, false
	case errors.Is(end.err, kerr.UnknownTopicOrPartition):
		return ReasonRemoteTopicMissing, 0, false
	case end.err != nil:
		return "target end offset unknown: " + end.err.Error(), 0, false
	}
	ps.endKnown, ps.end = true, end.offset
	if o, ok := tr.offsets[ps.key]; ok {
		ps.target = o
	}
	switch {
	case ps.target > ps.end:
		// The target was rebuilt, or the remote topic re-created or
		// truncated, under an idle group: reported, never moved (kmirror
		// never moves a target offset back; the group's consumers reset
		// by auto.offset.reset, or an operator resets the group).
		return ReasonTargetPastLogEnd, 0, false
	case ps.want > ps.end:
		return ReasonPastTargetEnd, 0, false
	case ps.want < end.start:
		// The copies from want on below the log start are gone: the log
		// start, unless the target group is there or ahead already.
		return ReasonBelowTargetLogStart, end.start, ps.target < end.start
	case ps.target > ps.want:
		return ReasonTargetAhead, 0, false // never move back (invariant I2)
	case ps.target == ps.want:
		return "", 0, false // already there
	}
	return "", ps.want, true
}
