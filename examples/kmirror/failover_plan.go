package main

// The decisions of kmirror failover, as a pure function of what the
// clusters said (planFailover), table-tested without a cluster.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kmirror/kmirror/remoteclusterutils"
)

// Failover modes.
const (
	modePlanned   = "planned"   // the source answers
	modeUnplanned = "unplanned" // it does not within -source-timeout
)

// Choices of -uncommitted.
const (
	uncommittedFail     = "fail"
	uncommittedEarliest = "earliest"
	uncommittedLatest   = "latest"
)

// Group actions in the reports.
const (
	actionCommit    = "commit"    // planned, not done yet (dry run, or before the stop)
	actionCommitted = "committed" // done
	actionRefused   = "refused"   // not moved; Reason says why
	// actionPartial: committed on some partitions; the broker refused the
	// others (their partitionReport.CommitError; Reason lists them).
	actionPartial = "partial"
	actionNone    = "none" // nothing to move (no commit on a replicated topic)
)

// sourceGroup is a consumer group as the source sees it (planned
// failover).
type sourceGroup struct {
	// Members is the number of members of the group on the source.
	Members int
	// Committed are its committed offsets on topics the flow replicates:
	// source topic -> partition -> offset.
	Committed map[string]map[int32]int64
}

// planInput is everything planFailover decides from.
type planInput struct {
	Mode        string
	Uncommitted string
	// Checkpoints are the groups' detailed translations on the target
	// (the groups -groups matches that have a checkpoint).
	Checkpoints map[string][]remoteclusterutils.PartitionTranslation
	// Source (planned only) are the groups -groups matches on the source.
	Source map[string]sourceGroup
	// TargetMembers is the number of members of each group on the target.
	TargetMembers map[string]int
	// TargetCommitted are the groups' committed offsets on the target:
	// group -> target topic -> partition -> offset. For a group of
	// Committed, a partition committed above its translation is not moved
	// back (partitionReport.Ahead).
	TargetCommitted map[string]map[string]map[int32]int64
	// TargetCurrent are the committed offsets on the target of every
	// group of the plan, as the target gave them (group -> target topic
	// -> partition -> offset): each partition's report shows its group's
	// offset there beside the one to commit, and the move (markMoves).
	// They decide nothing: an operator saw only the new offset, not that
	// the commit moved the group back (re-reads) or forward (skips).
	TargetCurrent map[string]map[string]map[int32]int64
	// Committed are the groups an earlier kmirror failover of the flow
	// committed (the status topic's DR record): their consumers may have
	// moved on on the target since, and are not moved back. Other groups
	// get their translations even below the target's offsets: group
	// offset sync never moves a group back, so after a rewind on the
	// source the target can be ahead of it.
	Committed map[string]bool
	// SourceStarts (planned) are the log start offsets of the flow's
	// source partitions: source topic -> partition -> offset.
	SourceStarts map[string]map[int32]int64
	// TargetStarts and TargetEnds are the log start and end offsets of the
	// target partitions never committed (for -uncommitted earliest|latest);
	// TargetStarts also holds those of the checkpointed partitions: a
	// translation below its partition's log start is committed as the log
	// start (partitionReport.BelowLogStart).
	TargetStarts, TargetEnds map[string]map[int32]int64
	// AtStart (planned) are the groups' commits on the source at or
	// before the source partition's log start (a commit on an empty
	// partition, 0 by Java's consumer): group -> source topic ->
	// partition -> offset. No offset sync or run ever covers them, so no
	// checkpoint comes; the group consumed nothing retained there, and a
	// never-committed partition of them, or one of a topic the group has
	// no checkpoint of at all (its only commits there are at the log
	// start), is committed at the target log start (From earliest,
	// AtLogStart) whatever -uncommitted says.
	AtStart map[string]map[string]map[int32]int64
	// Lagging (planned) lists the partitions the flow has not replicated
	// up to the source's end offsets snapshot ("orders[2]: replicated up
	// to 4999 of 5000").
	Lagging []string
	// Now is when the failure was detected (unplanned) or the plan made.
	Now time.Time
	// Upstream names the source topic of a target topic, Remote the
	// target topic of a source topic.
	Upstream func(targetTopic string) string
	Remote   func(sourceTopic string) string
}

// noGroupProblem is the plan's problem when no group matched (the
// command words it with the -groups value).
const noGroupProblem = "no group matching -groups has a checkpoint on the target (nothing to fail over)"

// plan is planFailover's answer.
type plan struct {
	Groups []groupReport
	// Problems are the reasons for exit code 1, one line each; the
	// groups with Action refused are not moved.
	Problems []string
}

// commitable reports whether every group can be moved (no problem).
func (p plan) commitable() bool { return len(p.Problems) == 0 }

// planFailover decides, per group and partition, what to commit on the
// target and what to refuse:
//
//   - planned: a group with members on the source is refused (its
//     consumers still run there); a committed partition whose checkpoint
//     is not at the group's current offset is refused (catch-up not
//     reached); partitions the flow has not replicated up to the snapshot
//     (Lagging) refuse the whole failover;
//   - a group with members on the target is never moved; for a group an
//     earlier failover committed (Committed), a partition committed on
//     the target above its translation is not moved back (Ahead: its
//     consumers moved on there);
//   - a partition never committed is refused with -uncommitted fail, else
//     committed at the target log start (earliest) or end (latest);
//   - a translation below the target partition's log start is committed
//     as the log start (BelowLogStart);
//   - unplanned: each group's RPO is the time from its newest checkpoint
//     to Now;
//   - each partition shows its group's offset on the target now
//     (TargetCurrent) and the move committing its offset makes.
func planFailover(in planInput) plan {
	out := plan{Groups: []groupReport{}, Problems: []string{}}
	upstream := in.Upstream
	if upstream == nil {
		upstream = func(string) string { return "" }
	}
	names := make([]string, 0, len(in.Checkpoints)+len(in.Source))
	for g := range in.Checkpoints {
		names = append(names, g)
	}
	for g := range in.Source {
		if _, ok := in.Checkpoints[g]; !ok {
			names = append(names, g)
		}
	}
	for g := range in.AtStart { // after the stop, Source is nil
		if _, ok := in.Checkpoints[g]; !ok && !slices.Contains(names, g) {
			names = append(names, g)
		}
	}
	slices.Sort(names)
	for _, g := range names {
		gr := groupReport{Group: g, Action: actionCommit, Partitions: []partitionReport{}}
		var reasons []string
		refuse := func(format string, args ...any) {
			reasons = append(reasons, fmt.Sprintf(format, args...))
		}
		cps := in.Checkpoints[g]
		src, onSource := in.Source[g]
		if in.Mode == modePlanned && onSource && src.Members > 0 {
			refuse("%d member(s) still on the source: stop the group's consumers there first", src.Members)
		}
		if n := in.TargetMembers[g]; n > 0 {
			refuse("%d member(s) on the target: an active group is never moved, and it refuses the whole run: leave it out of -groups, or stop its consumers on the target", n)
		}
		have := map[string]map[int32]remoteclusterutils.PartitionTranslation{} // by source topic
		for _, p := range cps {
			st := upstream(p.Topic)
			if have[st] == nil {
				have[st] = map[int32]remoteclusterutils.PartitionTranslation{}
			}
			have[st][p.Partition] = p
		}
		if in.Mode == modePlanned && onSource {
			var behind []string
			for _, t := range keysOf(src.Committed) {
				for _, part := range keysOf(src.Committed[t]) {
					at := src.Committed[t][part]
					cp, ok := have[t][part]
					_, atStart := in.AtStart[g][t][part]
					switch {
					case (!ok || cp.NeverCommitted) && atStart: // committed at the target log start below
					case !ok || cp.NeverCommitted:
						behind = append(behind, fmt.Sprintf("%s[%d] committed at %d, no checkpoint yet", t, part, at))
					case cp.SourceOffset != at:
						behind = append(behind, fmt.Sprintf("%s[%d] committed at %d, checkpointed at %d", t, part, at, cp.SourceOffset))
					}
				}
			}
			if len(behind) > 0 {
				refuse("catch-up not reached: %s", strings.Join(behind, "; "))
			}
			if len(src.Committed) == 0 && len(cps) == 0 {
				gr.Action, gr.Reason = actionNone, "no commit on a topic the flow replicates"
				out.Groups = append(out.Groups, gr)
				continue
			}
		}
		var never []string
		for _, p := range cps {
			pr := partitionReport{Topic: p.Topic, SourceTopic: upstream(p.Topic), Partition: p.Partition,
				SourceOffset: p.SourceOffset, Offset: p.Offset, Translation: string(p.Translation), Record: p.Record,
				RereadMax: p.Reread, CheckpointTime: p.CheckpointTime, NeverCommitted: p.NeverCommitted,
				CheckpointOffset: p.CheckpointOffset, RecordFallback: p.RecordFallback, MissingOnTarget: p.MissingOnTarget,
				OtherLog: p.EarlierLog()}
			at, atStart := in.AtStart[g][upstream(p.Topic)][p.Partition]
			if p.MissingOnTarget {
				// A checkpoint of a partition the target does not have (its
				// remote topic deleted, or re-created with fewer partitions):
				// no consumer reads it there, and the broker refuses a
				// commit of it (the group was reported partial).
				pr.Offset = -1
			} else if pr.OtherLog {
				// Translated for an earlier log of the remote topic (deleted
				// and re-created since): its offset is a position in that
				// log. The current log is read from its start.
				pr.From, pr.Offset = uncommittedEarliest, lookup(in.TargetStarts, p.Topic, p.Partition)
				if pr.Offset < 0 {
					refuse("%s[%d]: the earliest offset of the target partition is unknown", p.Topic, p.Partition)
				}
			} else if p.NeverCommitted && atStart {
				pr = atLogStart(in, p.Topic, upstream(p.Topic), p.Partition, at)
				if pr.Offset < 0 {
					refuse("%s[%d]: the earliest offset of the target partition is unknown", p.Topic, p.Partition)
				}
			} else if p.NeverCommitted {
				switch in.Uncommitted {
				case uncommittedEarliest:
					pr.From, pr.Offset = uncommittedEarliest, lookup(in.TargetStarts, p.Topic, p.Partition)
				case uncommittedLatest:
					pr.From, pr.Offset = uncommittedLatest, lookup(in.TargetEnds, p.Topic, p.Partition)
				default:
					never = append(never, fmt.Sprintf("%s[%d]", p.Topic, p.Partition))
				}
				if pr.From != "" && pr.Offset < 0 {
					refuse("%s[%d]: the %s offset of the target partition is unknown", p.Topic, p.Partition, pr.From)
				}
			} else {
				pr.From = "checkpoint"
				if p.Record == remoteclusterutils.KindRecord {
					pr.From = "record" // failover -records: from the copies
				}
				s, ok := in.TargetStarts[p.Topic][p.Partition]
				pr.atLogStart(s, ok)
			}
			if !p.NeverCommitted && !p.CheckpointTime.IsZero() {
				pr.CheckpointAgeMs = max(0, in.Now.Sub(p.CheckpointTime).Milliseconds())
				if p.CheckpointTime.After(gr.LastCheckpoint) {
					gr.LastCheckpoint = p.CheckpointTime
				}
			}
			gr.Partitions = append(gr.Partitions, pr)
		}
		// Commits at the source log start on a topic the group has no
		// checkpoint of at all (not even a never-committed partition).
		for _, t := range keysOf(in.AtStart[g]) {
			for _, part := range keysOf(in.AtStart[g][t]) {
				if _, ok := have[t][part]; ok || in.Remote == nil {
					continue
				}
				pr := atLogStart(in, in.Remote(t), t, part, in.AtStart[g][t][part])
				if pr.Offset < 0 {
					refuse("%s[%d]: the earliest offset of the target partition is unknown", pr.Topic, part)
				}
				gr.Partitions = append(gr.Partitions, pr)
			}
		}
		if len(never) > 0 {
			refuse("never committed: %s (a consumer with auto.offset.reset=none would never read them): choose -uncommitted earliest or latest",
				strings.Join(never, ", "))
		}
		if in.Mode == modeUnplanned && !gr.LastCheckpoint.IsZero() {
			gr.RPOMs = max(0, in.Now.Sub(gr.LastCheckpoint).Milliseconds())
		}
		if len(reasons) > 0 {
			gr.Action, gr.Reason = actionRefused, strings.Join(reasons, "; ")
			out.Problems = append(out.Problems, fmt.Sprintf("group %s: %s", g, gr.Reason))
		}
		markMoves(&gr, in.TargetCurrent[g])
		if in.Committed[g] {
			keepAhead(&gr, in.TargetCommitted[g])
		}
		out.Groups = append(out.Groups, gr)
	}
	for _, l := range in.Lagging {
		out.Problems = append(out.Problems, "catch-up not reached: "+l)
	}
	if len(out.Groups) == 0 {
		out.Problems = append(out.Problems, noGroupProblem)
	}
	return out
}

// atLogStart is the report of a partition the group committed at at or
// before the source log start (planInput.AtStart): committed at the target
// log start. A commit at 0 consumed nothing: nothing is re-read.
func atLogStart(in planInput, topic, sourceTopic string, part int32, at int64) partitionReport {
	pr := partitionReport{Topic: topic, SourceTopic: sourceTopic, Partition: part, SourceOffset: at,
		From: uncommittedEarliest, Offset: lookup(in.TargetStarts, topic, part),
		Translation: string(remoteclusterutils.TranslationNone), RereadMax: -1, AtLogStart: true}
	if at == 0 {
		pr.RereadMax = 0
	}
	return pr
}

func lookup(m map[string]map[int32]int64, t string, p int32) int64 {
	if o, ok := m[t][p]; ok {
		return o
	}
	return -1
}

func keysOf[K string | int32, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
