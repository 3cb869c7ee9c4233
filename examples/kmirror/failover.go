package main

// The failover subcommand:
//
//	kmirror failover -config mm2.properties -flow 'A->B' -groups REGEX
//	                 [-uncommitted fail|earliest|latest] [-source-timeout 10s]
//	                 [-wait 2m] [-stop-wait 1m] [-dry-run] [-records] [-json]
//
// It promotes the target B for the consumer groups -groups matches: their
// translated offsets are committed into the same groups on B, so that
// their consumers, started on B with auto.offset.reset=none, resume where
// the group was. Whether the source answers within -source-timeout decides
// the mode:
//
//   - planned (it answers): refused if a group still has members on A;
//     the source's end offsets are snapshot, and the command waits (-wait)
//     until the flow's resume points reach them and each group's latest
//     commit is checkpointed (exactly, where kmirror's offset runs allow);
//   - unplanned (it does not): the last checkpoints on B are used; each
//     group's RPO (its newest checkpoint's age at the detection) and each
//     partition's re-read bound are reported.
//
// Then the flow is stopped for good (the persisted STOPPED target state in
// mm2-kmirror-status.A.internal on B, which a returning source does not
// undo), the command waits until every live member of the flow reports it
// applied STOPPED (or none is live; up to -stop-wait, apart from the
// catch-up's -wait), and commits. A refusal after the stop (a member that
// did not report STOPPED, a problem the plan made again finds) commits
// nothing and writes the flow's target state from before the stop back,
// unless a newer one was written while it waited (an operator's pause or
// resume: left as it is). A group with members on B is never moved. A
// partition the group never committed, on a topic it committed another
// partition of, is refused with -uncommitted fail (the default: listed,
// exit 1 before anything changes), or committed at the target partition's
// log start (earliest) or end (latest).
//
// -dry-run changes nothing and prints the plan. It waits for the catch-up
// as the run does, so that its exit code is the run's; -wait 0s checks
// the catch-up once.
//
// With -records, the translations are refined from the copies as
// translate -records does (remoteclusterutils.RefineFromRecords): a
// checkpoint that is not exact is replaced by the copies' exact answer,
// and, planned, a never-committed partition the group committed on the
// source is translated from the copies (no -uncommitted needed for it).
//
// Exit codes: 0 done (-dry-run: the plan has no problem); 1 refused or
// something unaccounted (members on the source, an active group on the
// target, a never-committed partition with fail, catch-up not reached, a
// live member that did not report STOPPED within -stop-wait), nothing
// committed (after the stop, the flow's target state from before it is
// written back, or the report says why not and the flow stays STOPPED),
// even when the plan made again after the stop is the one that refuses;
// 2 bad flags or configuration; 3 the target unreachable or interrupted.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/kread"
	"github.com/kmirror/kmirror/internal/mm2filter"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

type failoverOptions struct {
	drCommon
	uncommitted   string
	sourceTimeout time.Duration
	wait          time.Duration
	stopWait      time.Duration
	dryRun        bool
	records       bool
}

// failoverReport is what failover prints (-json: this shape, pinned by
// testdata/failover.golden).
type failoverReport struct {
	Flow string `json:"flow"`
	// Mode is planned (the source answered) or unplanned.
	Mode   string `json:"mode"`
	DryRun bool   `json:"dry_run"`
	// SourceError is why the source did not answer (unplanned).
	SourceError string    `json:"source_error,omitempty"`
	DetectedAt  time.Time `json:"detected_at"`
	Uncommitted string    `json:"uncommitted"`
	// Rerun says an earlier kmirror failover of the flow committed groups
	// this run matches (the status topic's DR record): those groups, when
	// committed past their translation on the target, are kept there
	// (partitionReport.Ahead).
	Rerun bool `json:"rerun,omitempty"`
	// TargetState is the flow's persisted target state the command wrote
	// last: STOPPED, or, refused after the stop, the state from before the
	// run written back (RUNNING, PAUSED); empty when it wrote none (dry
	// run, refused before).
	TargetState string `json:"target_state,omitempty"`
	// Members is how the wait for the members to apply it ended.
	Members  *membersReport `json:"members,omitempty"`
	Groups   []groupReport  `json:"groups"`
	Summary  summary        `json:"summary"`
	Problems []string       `json:"problems"`
	// Result is done, refused, dry-run, unreachable (a cluster error
	// stopped it) or interrupted; ExitCode the process's exit code.
	Result    string  `json:"result"`
	ExitCode  int     `json:"exit_code"`
	TimingsMs timings `json:"timings_ms"`
}

// timings are the command's phases, in milliseconds; they add up to about
// Total. CatchUp leaves out the translations read while it waits, which
// Translate counts.
type timings struct {
	SourceProbe int64 `json:"source_probe"`
	CatchUp     int64 `json:"catch_up"`
	Stop        int64 `json:"stop"`
	Translate   int64 `json:"translate"`
	Commit      int64 `json:"commit"`
	Total       int64 `json:"total"`
}

// membersReport says how the wait for the members ended.
type membersReport struct {
	// Live members (record younger than 3 status intervals) and how many
	// of them report STOPPED applied from the record the command wrote or
	// a later one.
	Live    int `json:"live"`
	Stopped int `json:"stopped"`
	// Pending names the live members that did not report it: worker,
	// member and the state they last applied (a second new user looked
	// for the hung one in /status).
	Pending []string `json:"pending,omitempty"`
	// WaitedMs is how long the command waited.
	WaitedMs int64 `json:"waited_ms"`
}

func parseFailoverFlags(args []string, stderr io.Writer) (*failoverOptions, error) {
	fs := flag.NewFlagSet("kmirror failover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &failoverOptions{}
	o.register(fs)
	fs.StringVar(&o.uncommitted, "uncommitted", uncommittedFail, "partitions a group never committed (on a topic it committed another partition of): `fail` (list them, exit 1, change nothing), earliest or latest (commit the target log start or end)")
	fs.DurationVar(&o.sourceTimeout, "source-timeout", 10*time.Second, "the source answering within this `duration` makes the failover planned, else unplanned")
	fs.DurationVar(&o.wait, "wait", 2*time.Minute, "planned: how long to wait for the flow to catch up (-dry-run too; 0s checks once)")
	fs.DurationVar(&o.stopWait, "stop-wait", time.Minute, "how long to wait, after writing STOPPED, for every live member of the flow to report it applied (at least 1s); when they do not, nothing is committed and the flow's target state is written back")
	fs.BoolVar(&o.dryRun, "dry-run", false, "change nothing: print the plan (after the same catch-up wait as the run)")
	fs.BoolVar(&o.records, "records", false, "refine the translations from the copies' source offsets (as translate -records): non-exact checkpoints, and (planned) never-committed partitions the group committed on the source")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: kmirror failover -config FILE [-flow 'A->B'] -groups REGEX [-uncommitted fail|earliest|latest]\n"+
			"                        [-source-timeout 10s] [-wait 2m] [-stop-wait 1m] [-dry-run] [-records] [-json]\n\n"+
			"Moves consumer groups to the target: stops the flow for good (STOPPED), then commits each group's\n"+
			"translated offsets into the same group on the target. Exit codes: 0 done, 1 refused or something\n"+
			"unaccounted, 2 bad flags or configuration, 3 the target unreachable or interrupted.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := o.parse(fs, args); err != nil {
		return nil, err
	}
	switch o.uncommitted {
	case uncommittedFail, uncommittedEarliest, uncommittedLatest:
	default:
		return nil, &usageError{fmt.Errorf("-uncommitted %q: want fail, earliest or latest", o.uncommitted)}
	}
	if o.sourceTimeout <= 0 || o.wait < 0 {
		return nil, &usageError{fmt.Errorf("-source-timeout %s, -wait %s: -source-timeout must be positive and -wait not negative (0s checks once)", o.sourceTimeout, o.wait)}
	}
	if o.stopWait < time.Second {
		// A member applies STOPPED within about a second; a shorter wait
		// could only refuse (and write the state back).
		return nil, &usageError{fmt.Errorf("-stop-wait %s: live members need time to apply STOPPED and report it; use at least 1s (the default is 1m)", o.stopWait)}
	}
	return o, nil
}

// failoverMain runs `kmirror failover args...` and returns the exit code.
func failoverMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFailoverFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return drOK
	}
	if err != nil {
		return drError(stderr, "failover", err, drUsage)
	}
	d, err := o.load()
	if err != nil {
		return drError(stderr, "failover", err, drUsage)
	}
	rep, err := runFailover(ctx, d, o, time.Now, stderr)
	if rep == nil {
		return drError(stderr, "failover", err, drUnreachable)
	}
	if o.json {
		if werr := writeReportJSON(stdout, rep); werr != nil {
			fmt.Fprintln(stderr, "kmirror failover:", werr)
		}
	} else {
		rep.writeText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "kmirror failover:", err)
	}
	return rep.ExitCode
}

// writeText prints the report for people.
func (r *failoverReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "flow %s: %s failover", r.Flow, r.Mode)
	if r.DryRun {
		fmt.Fprint(w, " (dry run: nothing changed)")
	}
	fmt.Fprintln(w)
	if r.SourceError != "" {
		fmt.Fprintf(w, "source unreachable: %s\n", r.SourceError)
	}
	if r.Rerun {
		fmt.Fprintf(w, "flow %s: an earlier failover committed: the groups it committed keep their offsets on the target where they are past their translation\n", r.Flow)
	}
	if r.TargetState != "" {
		written := r.TargetState
		if r.Members != nil { // the members were waited for: STOPPED was written
			written = string(statustopic.Stopped)
		}
		fmt.Fprintf(w, "flow %s: target state %s written", r.Flow, written)
		if r.Members != nil {
			fmt.Fprintf(w, "; %d live member(s), %d applied it (waited %v)", r.Members.Live, r.Members.Stopped,
				(time.Duration(r.Members.WaitedMs) * time.Millisecond).Round(time.Millisecond))
		}
		if written != r.TargetState { // a refusal after the stop (a breaker's finding: "RUNNING written; 0 applied it")
			fmt.Fprintf(w, "; target state %s written back", r.TargetState)
		}
		fmt.Fprintln(w)
	}
	if len(r.Groups) > 0 { // else no empty table: a cluster error stopped the run before its plan, as translate
		fmt.Fprintln(w)
		_, target, _ := strings.Cut(r.Flow, "->")
		writeTable(w, r.Groups, target)
		fmt.Fprintln(w)
	}
	for _, g := range r.Groups {
		line := fmt.Sprintf("group %s: %s", g.Group, actionText(g.Action, r.DryRun, r.Result))
		if r.Mode == modeUnplanned && !g.LastCheckpoint.IsZero() {
			line += fmt.Sprintf("; RPO %v (last checkpoint %s)", (time.Duration(g.RPOMs) * time.Millisecond).Round(100*time.Millisecond),
				g.LastCheckpoint.UTC().Format(time.RFC3339Nano))
		}
		if reread, unknown := rereadOf(g); unknown > 0 {
			line += fmt.Sprintf("; re-reads <= %d records of those processed before the checkpointed commits, unbounded on %d partition(s)", reread, unknown)
		} else if g.Action != actionRefused && g.Action != actionNone {
			line += fmt.Sprintf("; re-reads <= %d records of those processed before the checkpointed commits", reread)
		}
		if g.Reason != "" {
			line += ": " + g.Reason
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "\n%s\n", r.Summary)
	for _, p := range r.Problems {
		fmt.Fprintln(w, "problem:", p)
	}
	t := r.TimingsMs
	fmt.Fprintf(w, "result: %s (exit %d); took %dms (source probe %dms, catch-up %dms, stop %dms, translate %dms, commit %dms)\n",
		r.Result, r.ExitCode, t.Total, t.SourceProbe, t.CatchUp, t.Stop, t.Translate, t.Commit)
}

// actionText is how the text reports show a group's action: a commit
// planned and not done reads "would commit", with why (a dry run, or a run
// that ended before its commits: a new user read "commit" above "result:
// refused" as a group committed). The JSON reports keep the action as is.
func actionText(action string, dryRun bool, result string) string {
	switch {
	case action != actionCommit:
		return action
	case dryRun:
		return "would commit (dry run)"
	}
	if result == "unreachable" {
		return "would commit (not committed: a cluster unreachable)"
	}
	return "would commit (not committed: run " + result + ")"
}

// rereadOf sums a group's re-read bounds over its checkpointed partitions
// and counts those without a bound.
func rereadOf(g groupReport) (sum int64, unknown int) {
	for _, p := range g.Partitions {
		if p.From != "checkpoint" && p.From != "record" {
			continue
		}
		if p.RereadMax < 0 {
			unknown++
			continue
		}
		sum += p.RereadMax
	}
	return sum, unknown
}

// runFailover does the failover. It returns a nil report only when
// nothing could be reported (the target unreachable at the start).
func runFailover(ctx context.Context, d *drFlow, o *failoverOptions, now func() time.Time, log io.Writer) (*failoverReport, error) {
	start := now()
	rep := &failoverReport{Flow: d.name(), DryRun: o.dryRun, Uncommitted: o.uncommitted, Problems: []string{}, Groups: []groupReport{}}
	finish := func(result string, code int) {
		rep.Result, rep.ExitCode = result, code
		rep.Summary = summarize(rep.Groups)
		rep.TimingsMs.Total = now().Sub(start).Milliseconds()
	}
	dstCl, err := d.targetClient()
	if err != nil {
		return nil, err
	}
	defer dstCl.Close()
	dstAdm := kadm.NewClient(dstCl)

	// Planned or unplanned.
	t0 := now()
	srcErr := probe(ctx, d.src, o.sourceTimeout)
	rep.TimingsMs.SourceProbe = now().Sub(t0).Milliseconds()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rep.Mode, rep.DetectedAt = modePlanned, now().UTC()
	if kclient.Rejected(srcErr) {
		// A broker of the source answered: it is not down. Failing over as
		// if it were would skip a planned failover's checks (the groups'
		// members on the source, the catch-up) because of a credential (an
		// operator's find: wrong SASL credentials made it unplanned).
		rep.SourceError = srcErr.Error()
		rep.Problems = append(rep.Problems, fmt.Sprintf("the source %s answered but refused the client (%v): it is not down, so the failover is not made unplanned, "+
			"which would skip a planned one's checks (the groups' members on the source, the catch-up); fix %s.sasl.jaas.config and %s.sasl.mechanism "+
			"(and %s.security.protocol) and run failover again", d.src.Alias, srcErr, d.src.Alias, d.src.Alias, d.src.Alias))
		finish("refused", drRefused)
		return rep, nil
	}
	if srcErr != nil {
		rep.Mode, rep.SourceError = modeUnplanned, srcErr.Error()
		fmt.Fprintf(log, "kmirror failover: %s: unplanned failover from the last checkpoints\n", sourceDown(d.src.Alias, srcErr, o.sourceTimeout))
	}

	if err := refusedBy(ctx, d.dst, "target", o.timeout); err != nil {
		return failed(ctx, rep, finish, fmt.Errorf("reading the status topic of %s on %s: %w", d.name(), d.dst.Alias, err))
	}
	in := planInput{Mode: rep.Mode, Uncommitted: o.uncommitted, Upstream: d.sourceTopic,
		Remote: func(t string) string { return d.pol.FormatRemoteTopic(d.flow.Source, t) }}
	// Run again after an earlier failover committed: its groups'
	// consumers may have moved on on the target (planInput.Committed).
	sctx, cancel := context.WithTimeout(ctx, o.timeout)
	status, err := statustopic.ReadAll(sctx, clusterOpts(d.dst, d.dst.Consumer), d.flow.Source)
	cancel()
	if err != nil {
		return failed(ctx, rep, finish, fmt.Errorf("reading the status topic of %s on %s: %w", d.name(), d.dst.Alias, err))
	}
	prev, _ := statustopic.DROf(status)
	in.Committed = committedBy(prev, drFailover)
	// A flow an earlier run (or an operator) STOPPED or PAUSED replicates
	// nothing: a planned failover's catch-up cannot be reached while the
	// source receives records, and is not waited for (a new user's
	// finding: a run again waited -wait, 2 minutes, then refused without
	// saying why; PAUSED too, a second new user's).
	var stopped *statustopic.TargetStateRecord
	// The target state a refusal after the stop writes back: read again
	// just before the stop (an operator may change it while the command
	// waits for the catch-up); this read's when that one fails.
	before := statustopic.TargetStateRecord{State: statustopic.Running}
	beforeFound := false
	if ts, found, err := statustopic.TargetStateOf(status); err == nil && found {
		before, beforeFound = ts, true
		if rep.Mode == modePlanned && (ts.State == statustopic.Stopped || ts.State == statustopic.Paused) {
			stopped = &ts
		}
	}
	read := func() error { // the target's side of the plan
		rctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		t := now()
		tr, err := d.translateGroups(rctx, dstCl)
		if err != nil {
			return fmt.Errorf("reading the checkpoints of %s on %s: %w", d.name(), d.dst.Alias, err)
		}
		if o.records {
			var srcID string
			var commits map[string]map[string]map[int32]int64
			if rep.Mode == modePlanned {
				srcID, commits, _ = d.sourceCommits(rctx, tr, min(o.timeout, sourceProbeTimeout)) // unanswered: the checkpoints' view
			}
			if tr, err = remoteclusterutils.RefineFromRecords(rctx, dstCl, srcID, tr, commits); err != nil {
				return fmt.Errorf("reading the copies on %s: %w", d.dst.Alias, err)
			}
		}
		rep.TimingsMs.Translate += now().Sub(t).Milliseconds()
		in.Checkpoints = tr
		if in.TargetMembers, err = groupMembers(rctx, dstAdm, groupNames(tr)); err != nil {
			return fmt.Errorf("describing the groups on %s: %w", d.dst.Alias, err)
		}
		// Every group's offsets on the target are shown beside those to
		// commit (TargetCurrent); only the groups an earlier failover
		// committed are kept ahead (TargetCommitted, without the
		// partitions it did not commit). A rerun is one for a group this
		// run matches (an earlier failover of other groups is not).
		names := groupNames(tr)
		for _, g := range keysOf(in.AtStart) { // committed at the target log start, maybe without a checkpoint
			if _, ok := tr[g]; !ok {
				names = append(names, g)
			}
		}
		if in.TargetCurrent, err = groupCommits(rctx, dstAdm, names); err != nil {
			return fmt.Errorf("fetching the groups' offsets on %s: %w", d.dst.Alias, err)
		}
		again := inSet(groupNames(tr), in.Committed)
		rep.Rerun = len(again) > 0
		in.TargetCommitted = commitsOf(in.TargetCurrent, again)
		dropRefused(in.TargetCommitted, prev)
		in.TargetStarts, in.TargetEnds, err = neverCommittedBounds(rctx, dstAdm, tr, atStartTopics(in)...)
		if err != nil {
			return fmt.Errorf("listing offsets on %s: %w", d.dst.Alias, err)
		}
		in.Now = now()
		if rep.Mode == modeUnplanned {
			in.Now = rep.DetectedAt
		}
		return nil
	}

	var p plan
	if rep.Mode == modePlanned {
		t, translated := now(), rep.TimingsMs.Translate
		in.Source, in.Lagging, err = catchUp(ctx, d, o, dstCl, &in, read, now, stopped != nil)
		in.AtStart = commitsAtStart(in.Source, in.SourceStarts)
		rep.TimingsMs.CatchUp = max(0, now().Sub(t).Milliseconds()-(rep.TimingsMs.Translate-translated))
		if err != nil {
			return failed(ctx, rep, finish, err)
		}
	} else if err := read(); err != nil {
		return failed(ctx, rep, finish, err)
	}
	p = planFailover(in)
	rep.Groups, rep.Problems = p.Groups, p.Problems
	if stopped != nil && len(in.Lagging) > 0 {
		by := stopped.By
		if by == "" {
			by = "an operator"
		}
		if stopped.Reason != "" {
			by += ": " + stopped.Reason
		}
		if stopped.State == statustopic.Paused {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s is PAUSED (by %s at %s): it replicates nothing, so a planned failover cannot catch up while the source receives records; "+
				"resume it (%s) and run failover again",
				d.name(), by, stopped.At.UTC().Format(time.RFC3339), restPut(d, "resume")))
		} else {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s is STOPPED (by %s at %s): the records the source received since are not replicated, so a planned failover cannot catch up; "+
				"to fail over more groups, stop the source's producers, resume the flow (%s), and run failover again once it has caught up",
				d.name(), by, stopped.At.UTC().Format(time.RFC3339), restPut(d, "resume")))
		}
	}
	if len(p.Groups) == 0 { // the value, and what to write instead
		rctx, cancel := context.WithTimeout(ctx, o.timeout)
		rep.Problems = append(slices.DeleteFunc(rep.Problems, func(s string) bool { return s == noGroupProblem }),
			fmt.Sprintf("no group matching -groups %q has a checkpoint in %s on %s (nothing to fail over)%s",
				o.groups, d.pol.CheckpointsTopic(d.flow.Source), d.dst.Alias, d.checkpointedGroups(rctx, dstCl)))
		cancel()
	}
	if !p.commitable() {
		finish("refused", drRefused)
		return rep, nil
	}
	if o.dryRun {
		finish("dry-run", drOK)
		return rep, nil
	}

	// Stop the flow for good, and wait for its members.
	t := now()
	// The state the members run now: the last target-state record they
	// can read (a newer one that cannot be read, written by hand with a
	// typo, is ignored by them; a breaker's finding: taken as RUNNING,
	// a refusal resumed a flow that was paused).
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	if v, err := statustopic.ReadView(rctx, clusterOpts(d.dst, d.dst.Consumer), d.flow.Source); err == nil {
		before, beforeFound = v.TargetState()
	}
	cancel()
	stopAt, err := writeTargetState(ctx, d, dstCl, statustopic.Stopped, "kmirror failover ("+rep.Mode+")", "")
	if err != nil {
		return failed(ctx, rep, finish, err)
	}
	rep.TargetState = string(statustopic.Stopped)
	mr, err := waitMembers(ctx, d, statustopic.Stopped, stopAt, o.stopWait, now)
	rep.Members = mr
	rep.TimingsMs.Stop = now().Sub(t).Milliseconds()
	// Interrupted or unreadable with STOPPED written (a breaker's
	// finding: the report did not say): the flow is left as it is.
	stoppedErr := func(err error) error {
		if before.State == statustopic.Stopped {
			return fmt.Errorf("%w (after writing STOPPED: nothing committed; the flow stays STOPPED, as it was before this run: run failover again)", err)
		}
		verb := stateVerb(before.State) // back to the state before this run
		return fmt.Errorf("%w (after writing STOPPED: nothing committed; the flow stays STOPPED: run failover again, or %s it with %s)", err, verb, restPut(d, verb))
	}
	if err != nil && ctx.Err() != nil {
		// Interrupted in the wait (Ctrl-C on a member that does not stop):
		// nothing is committed, so the state from before is written back
		// as after a refusal, with a context of its own (a second new
		// user's finding: the flow stayed STOPPED while the source's
		// producers went on). The problem names the interruption
		// (ctx.Err()), whether it came between two reads of the status
		// topic or in one (then err wraps it in the read's context: the
		// test's wording differed with the timing, CI 2026-12-06).
		rep.Problems = append(rep.Problems, fmt.Sprintf("interrupted while waiting for the members (%v): nothing committed; %s",
			ctx.Err(), restoreState(context.WithoutCancel(ctx), d, dstCl, before, beforeFound, stopAt, rep)))
		finish("interrupted", drUnreachable)
		return rep, err
	}
	if err != nil {
		return failed(ctx, rep, finish, stoppedErr(err))
	}
	// A refusal from here on commits nothing, so the flow gets back the
	// target state it had (a new user's finding: left STOPPED, a planned
	// rerun refused at once, the source's records since the stop being
	// unreplicated, and only a resume through the REST API got out).
	restore := func(why string) {
		rep.Problems = append(rep.Problems, why+"; "+restoreState(context.WithoutCancel(ctx), d, dstCl, before, beforeFound, stopAt, rep)) // an interruption now must not leave it STOPPED
		finish("refused", drRefused)
	}
	if mr.Stopped < mr.Live {
		restore(fmt.Sprintf("%d of %d live member(s) of %s did not report STOPPED within -stop-wait %s (%s): nothing committed",
			mr.Live-mr.Stopped, mr.Live, d.name(), o.stopWait, strings.Join(mr.Pending, "; ")))
		return rep, nil
	}

	// The final checkpoints (the emitters stopped), and the commits.
	if err := read(); err != nil {
		return failed(ctx, rep, finish, stoppedErr(err)) // said as the wait's (a breaker's finding)
	}
	in.Source = nil // planned: checked before the stop
	p = planFailover(in)
	rep.Groups, rep.Problems = p.Groups, p.Problems
	if !p.commitable() {
		// Found only now (a group became active on the target while the
		// flow stopped, a checkpoint changed): exit 1 means nothing was
		// committed, so no group is.
		restore(fmt.Sprintf("found after %s was stopped: nothing committed", d.name()))
		return rep, nil
	}
	t = now()
	commitGroups(ctx, dstAdm, in.Checkpoints, rep)
	rep.TimingsMs.Commit = now().Sub(t).Milliseconds()
	if err := recordDR(ctx, d, dstCl, drFailover, prev, rep.Groups, now()); err != nil {
		rep.Problems = append(rep.Problems, err.Error())
	}
	if ctx.Err() != nil {
		finish("interrupted", drUnreachable)
		return rep, ctx.Err()
	}
	if len(rep.Problems) > 0 {
		finish("refused", drRefused)
		return rep, nil
	}
	finish("done", drOK)
	return rep, nil
}

// restoreState writes back the target state the flow had before failover
// stopped it (before: found says a record held it; its writer and reason
// go into the reason of the record written back), after a refusal that
// committed nothing, and says what the operator does next. It writes only
// while the STOPPED record failover wrote (at offset stopAt) is still the
// flow's latest target state: a newer one (an operator's pause or resume
// while the command waited; a breaker's finding: it was overwritten) is
// left as it is. A state that cannot be written is said too (the flow
// then stays STOPPED).
func restoreState(ctx context.Context, d *drFlow, cl *kgo.Client, before statustopic.TargetStateRecord, found bool, stopAt int64, rep *failoverReport) string {
	const next = "run failover again once the problems above are resolved"
	if before.State == statustopic.Stopped {
		return "the flow stays STOPPED, as it was before this run; " + next
	}
	by := func(r statustopic.TargetStateRecord) string {
		s := " by " + r.By
		if r.By == "" {
			s = " by an unnamed writer"
		}
		if !r.At.IsZero() {
			s += " at " + r.At.UTC().Format(time.RFC3339)
		}
		return s
	}
	verb := stateVerb(before.State)
	manual := fmt.Sprintf("%s it (%s), then %s", verb, restPut(d, verb), next)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	v, err := statustopic.ReadView(rctx, clusterOpts(d.dst, d.dst.Consumer), d.flow.Source)
	cancel()
	switch {
	case err != nil:
		return fmt.Sprintf("the flow stays STOPPED: reading its target state, to write %s back, failed (%v); %s", before.State, err, manual)
	case v.BadTarget != "":
		return fmt.Sprintf("the flow stays STOPPED: a target-state record written after this run's STOPPED cannot be read (%s), so %s is not written back over it; %s", v.BadTarget, before.State, manual)
	case v.TargetOffset() != stopAt:
		cur, _ := v.TargetState()
		return fmt.Sprintf("the flow's target state was set to %s%s while this run waited: left as it is (%s, the state before this run, not written back); %s", cur.State, by(cur), before.State, next)
	}
	why := fmt.Sprintf("the target state before a refused failover (no record: %s)", before.State)
	if found {
		why = fmt.Sprintf("the target state before a refused failover: %s%s", before.State, by(before))
		if before.Reason != "" {
			why += ": " + before.Reason
		}
	}
	if _, err := writeTargetState(ctx, d, cl, before.State, "kmirror failover (refused: nothing committed)", why); err != nil {
		return fmt.Sprintf("the flow stays STOPPED: writing its target state %s back failed (%v); %s", before.State, err, manual)
	}
	rep.TargetState = string(before.State)
	return fmt.Sprintf("the flow's target state is %s again, as before this run; %s", before.State, next)
}

// restPut is the REST request, on any member, that changes d's flow by
// verb (pause, resume, stop).
func restPut(d *drFlow, verb string) string {
	return fmt.Sprintf("PUT /connectors/%s/%s on a member", url.PathEscape(d.name()), verb)
}

// stateVerb is the REST request (PUT /connectors/{flow}/VERB) that writes
// target state st.
func stateVerb(st statustopic.TargetState) string {
	switch st {
	case statustopic.Paused:
		return "pause"
	case statustopic.Stopped:
		return "stop"
	}
	return "resume"
}

// The commands of the status topic's DR record (statustopic.DRRecord).
const (
	drFailover = "failover"
	drFailback = "failback"
)

// recordDR records in the status topic's DR record that command
// committed the groups of gs (those committed, or kept ahead on every
// partition), over the groups of the previous record prev: per group, the
// command that committed it last. It writes even when ctx ended (the
// commits are done: a later run must know of them), within 10 s.
func recordDR(ctx context.Context, d *drFlow, cl *kgo.Client, command string, prev statustopic.DRRecord, gs []groupReport, now time.Time) error {
	groups := map[string]string{}
	for g, c := range prev.Groups {
		groups[g] = c
	}
	refused := map[string]map[string][]int32{}
	for g, ts := range prev.Refused {
		refused[g] = ts
	}
	changed := false
	for _, g := range gs {
		if g.Action != actionCommitted && g.Action != actionPartial && (g.Action != actionNone || len(g.Partitions) == 0) {
			continue
		}
		var ref map[string][]int32 // the partitions the broker refused (partial)
		for _, p := range g.Partitions {
			if p.CommitError != "" {
				if ref == nil {
					ref = map[string][]int32{}
				}
				ref[p.Topic] = append(ref[p.Topic], p.Partition)
			}
		}
		if groups[g.Group] != command || !reflect.DeepEqual(refused[g.Group], ref) {
			changed = true
		}
		groups[g.Group] = command
		if ref == nil {
			delete(refused, g.Group)
		} else {
			refused[g.Group] = ref
		}
	}
	if !changed {
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rec := statustopic.DRRecord{Flow: d.name(), At: now.UTC(), Groups: groups}
	if len(refused) > 0 {
		rec.Refused = refused
	}
	if err := statustopic.WriteDR(wctx, cl, d.flow.Source, rec); err != nil {
		return fmt.Errorf("%w: the groups are committed, but a run of kmirror %s again would not know it and could move them back", err, command)
	}
	return nil
}

// dropRefused removes from commits (group -> topic -> partition ->
// offset, of the groups rec says a command committed last) the partitions
// whose commit the broker refused in that command's last run
// (DRRecord.Refused): it never committed them, so what is there is not its
// consumers' progress, and keepAhead must not keep it.
func dropRefused(commits map[string]map[string]map[int32]int64, rec statustopic.DRRecord) {
	for g, ts := range rec.Refused {
		for t, ps := range ts {
			for _, p := range ps {
				delete(commits[g][t], p)
			}
		}
	}
}

// committedBy returns the groups of rec that command committed last.
func committedBy(rec statustopic.DRRecord, command string) map[string]bool {
	out := map[string]bool{}
	for g, c := range rec.Groups {
		if c == command {
			out[g] = true
		}
	}
	return out
}

// failed ends the report of a command stopped by a cluster error:
// "interrupted" when ctx ended (Ctrl-C), else "unreachable" (a new user's
// finding: a target that refused connections read "result: interrupted").
func failed(ctx context.Context, rep *failoverReport, finish func(string, int), err error) (*failoverReport, error) {
	rep.Problems = append(rep.Problems, err.Error())
	if errors.Is(err, remoteclusterutils.ErrNoCheckpointsTopic) { // the target answered: nothing to fail over
		finish("refused", drRefused)
		return rep, err
	}
	finish(stoppedResult(ctx), drUnreachable)
	return rep, err
}

// stoppedResult is the result of a command a cluster error stopped:
// "interrupted" when ctx ended, else "unreachable".
func stoppedResult(ctx context.Context) string {
	if ctx.Err() != nil {
		return "interrupted"
	}
	return "unreachable"
}

// sourceDown words why the source probe failed from its error: a timeout
// is "did not answer within", anything else (a refused connection, an
// unknown host, a TLS failure) is said as it is ("did not answer
// within 1s" for a connection refused at once misled).
func sourceDown(alias string, err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Sprintf("source %s did not answer within %s", alias, timeout)
	}
	return kclient.Unreachable("source", alias, err).Error()
}

// probe reports whether the cluster answers a metadata request within
// timeout.
func probe(ctx context.Context, c mirror.ClusterConfig, timeout time.Duration) error {
	if err := kclient.Probe(ctx, timeout, clusterOpts(c, c.Admin)...); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Alias, err)
	}
	return nil
}

func groupNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for g := range m {
		out = append(out, g)
	}
	return out
}

// groupMembers returns the number of members of each group.
func groupMembers(ctx context.Context, adm *kadm.Client, groups []string) (map[string]int, error) {
	out := map[string]int{}
	if len(groups) == 0 {
		return out, nil
	}
	ds, err := adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return nil, err
	}
	for g, dg := range ds {
		if errors.Is(dg.Err, kerr.GroupIDNotFound) {
			out[g] = 0 // no such group there yet (Kafka answers state Dead)
			continue
		}
		if dg.Err != nil {
			return nil, fmt.Errorf("group %s: %w", g, dg.Err)
		}
		out[g] = len(dg.Members)
	}
	return out, nil
}

// inSet returns the names of ns that set holds, in their order.
func inSet(ns []string, set map[string]bool) []string {
	var out []string
	for _, n := range ns {
		if set[n] {
			out = append(out, n)
		}
	}
	return out
}

// groupCommits returns the groups' committed offsets on the cluster adm
// reaches: group -> topic -> partition -> offset (groups that committed
// nothing there are absent).
func groupCommits(ctx context.Context, adm *kadm.Client, groups []string) (map[string]map[string]map[int32]int64, error) {
	out := map[string]map[string]map[int32]int64{}
	if len(groups) == 0 {
		return out, nil
	}
	resps := adm.FetchManyOffsets(ctx, groups...)
	for g, r := range resps {
		if errors.Is(r.Err, kerr.GroupIDNotFound) {
			continue
		}
		if r.Err != nil {
			return nil, fmt.Errorf("group %s: %w", g, r.Err)
		}
		r.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 {
				return
			}
			if out[g] == nil {
				out[g] = map[string]map[int32]int64{}
			}
			if out[g][o.Topic] == nil {
				out[g][o.Topic] = map[int32]int64{}
			}
			out[g][o.Topic][o.Partition] = o.At
		})
	}
	return out, nil
}

// commitsOf returns the commits of groups in all (group -> topic ->
// partition -> offset), copied: dropRefused deletes from what it returns
// and all stays as it is.
func commitsOf(all map[string]map[string]map[int32]int64, groups []string) map[string]map[string]map[int32]int64 {
	out := map[string]map[string]map[int32]int64{}
	for _, g := range groups {
		for t, ps := range all[g] {
			if out[g] == nil {
				out[g] = map[string]map[int32]int64{}
			}
			out[g][t] = maps.Clone(ps)
		}
	}
	return out
}

// keepAhead marks the partitions of gr whose group is committed above the
// offset to commit (Ahead): never moved back. A group whose every
// partition is ahead has nothing to commit.
func keepAhead(gr *groupReport, committed map[string]map[int32]int64) {
	n, ahead := 0, 0
	for i := range gr.Partitions {
		p := &gr.Partitions[i]
		if p.Offset < 0 || p.Topic == "" {
			continue
		}
		n++
		if at, ok := committed[p.Topic][p.Partition]; ok && at > p.Offset {
			p.Ahead = at
			if p.Move != "" { // markMoves' backward move is not made
				p.Move, p.MoveRecords = moveKept, 0
			}
			ahead++
		}
	}
	if n > 0 && ahead == n && gr.Action == actionCommit {
		gr.Action, gr.Reason = actionNone, "the group is committed past the translation on every partition already (run before?): nothing moved back"
	}
}

// Moves of a partition committed over the group's current offset
// (partitionReport.Move).
const (
	moveBackward = "backward" // re-reads
	moveForward  = "forward"  // skips
	moveNone     = "none"
	moveKept     = "kept" // Ahead: not moved back (keepAhead)
)

// markMoves sets, on each partition of gr that commits an offset, the
// group's current committed offset on the cluster it commits on
// (committed: topic -> partition -> offset) and whether the commit moves
// it backward or forward, and by how many records. keepAhead, after it,
// marks the backward moves it does not make "kept".
func markMoves(gr *groupReport, committed map[string]map[int32]int64) {
	for i := range gr.Partitions {
		p := &gr.Partitions[i]
		if p.Offset < 0 || p.Topic == "" {
			continue
		}
		at, ok := committed[p.Topic][p.Partition]
		if !ok {
			continue
		}
		p.Current = &at
		switch {
		case p.Offset < at:
			p.Move, p.MoveRecords = moveBackward, at-p.Offset
		case p.Offset > at:
			p.Move, p.MoveRecords = moveForward, p.Offset-at
		default:
			p.Move = moveNone
		}
	}
}

// currentText is how the text reports show a partition's current offset
// (partitionReport.Current): "-" when the group has none there.
func currentText(p partitionReport) string {
	if p.Current == nil {
		return "-"
	}
	return offsetText(*p.Current)
}

// moveText is how the text reports show a partition's move.
func moveText(p partitionReport) string {
	switch p.Move {
	case moveBackward:
		return fmt.Sprintf("back %d (re-reads)", p.MoveRecords)
	case moveForward:
		return fmt.Sprintf("forward %d (skips)", p.MoveRecords)
	case "":
		return "-"
	}
	return p.Move
}

// atStartTopics names the target topics of the groups' commits at the
// source log start (planInput.AtStart).
func atStartTopics(in planInput) []string {
	var out []string
	for _, ts := range in.AtStart {
		for t := range ts {
			if r := in.Remote(t); !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// neverCommittedBounds returns the log start offsets of the target
// partitions of tr (as TranslateGroups listed them:
// PartitionTranslation.PartitionStart; failover listed them a second time)
// and of the topics extra it lacks, and the log end offsets of the
// partitions the groups never committed and of extra.
func neverCommittedBounds(ctx context.Context, adm *kadm.Client, tr map[string][]remoteclusterutils.PartitionTranslation, extra ...string) (starts, ends map[string]map[int32]int64, err error) {
	starts, ends = translatedStarts(tr), map[string]map[int32]int64{}
	var topics, startTopics []string
	seen := map[string]bool{}
	for _, t := range extra {
		if !seen[t] {
			seen[t] = true
			topics = append(topics, t)
			if _, ok := starts[t]; !ok {
				startTopics = append(startTopics, t)
			}
		}
	}
	for _, ps := range tr {
		for _, p := range ps {
			if p.NeverCommitted && !seen[p.Topic] {
				seen[p.Topic] = true
				topics = append(topics, p.Topic)
			}
		}
	}
	for _, l := range []struct {
		list   func(context.Context, ...string) (kadm.ListedOffsets, error)
		topics []string
		into   map[string]map[int32]int64
	}{{adm.ListStartOffsets, startTopics, starts}, {adm.ListEndOffsets, topics, ends}} {
		if len(l.topics) == 0 {
			continue
		}
		lo, err := l.list(ctx, l.topics...)
		if err != nil {
			return nil, nil, err
		}
		var perr error
		lo.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				// A topic of extra not on the target (yet): its
				// partitions stay unknown (the plan refuses them).
				if !slices.Contains(extra, o.Topic) && perr == nil {
					perr = o.Err
				}
				return
			}
			if l.into[o.Topic] == nil {
				l.into[o.Topic] = map[int32]int64{}
			}
			l.into[o.Topic][o.Partition] = o.Offset
		})
		if perr != nil {
			return nil, nil, perr
		}
	}
	return starts, ends, nil
}

// translatedStarts are the log starts TranslateGroups listed of the
// partitions of tr: topic -> partition -> offset (those it could not list
// left out).
func translatedStarts(tr map[string][]remoteclusterutils.PartitionTranslation) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	for _, ps := range tr {
		for _, p := range ps {
			if p.PartitionStart < 0 {
				continue
			}
			if out[p.Topic] == nil {
				out[p.Topic] = map[int32]int64{}
			}
			out[p.Topic][p.Partition] = p.PartitionStart
		}
	}
	return out
}

// checkpointedStarts adds to starts the log start offsets of the target
// topics of tr's checkpoints it lacks (failback: those translatedStarts
// did not find): a translation below its partition's log start is
// committed as the log start. A topic not on the target (MissingOnTarget,
// or its partitions' listing errors) is left out: its checkpoints are
// committed as they are.
func checkpointedStarts(ctx context.Context, adm *kadm.Client, tr map[string][]remoteclusterutils.PartitionTranslation, starts map[string]map[int32]int64) error {
	var topics []string
	for _, ps := range tr {
		for _, p := range ps {
			if _, ok := starts[p.Topic]; !ok && !p.NeverCommitted && !p.MissingOnTarget && !slices.Contains(topics, p.Topic) {
				topics = append(topics, p.Topic)
			}
		}
	}
	if len(topics) == 0 {
		return nil
	}
	lo, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			return
		}
		if starts[o.Topic] == nil {
			starts[o.Topic] = map[int32]int64{}
		}
		starts[o.Topic][o.Partition] = o.Offset
	})
	return nil
}

// flowTopics returns the flow's selection of source topics: its topics and
// topics.exclude, never internal topics or cycles, heartbeats topics not
// (consumer groups do not read them).
func flowTopics(d *drFlow) (func(string) bool, error) {
	include, exclude := d.flow.Topics, d.flow.TopicsExclude
	if include == nil {
		include = []string{".*"}
	}
	if exclude == nil {
		exclude = mirror.DefaultTopicsExclude
	}
	filter, err := mm2filter.New(d.name()+".topics", include, d.name()+".topics.exclude", exclude)
	if err != nil {
		return nil, err
	}
	return func(t string) bool {
		return filter.Match(t) && !d.pol.IsHeartbeatsTopic(t) && !policy.NeverReplicated(d.pol, d.flow.Source, d.flow.Target, t)
	}, nil
}

// catchUp is the planned failover's wait: it reads the groups on the
// source (refusing at once when one has members there), snapshots the end
// offsets of the flow's source topics, and waits up to -wait until the
// flow's resume points reach them and each group's current commits are
// checkpointed (exactly, when kmirror's offset runs can make them so); not
// at all when the flow is stopped (it replicates nothing). It returns the
// groups and the partitions still lagging at the end; read fills in with
// the target's side each round.
func catchUp(ctx context.Context, d *drFlow, o *failoverOptions, dstCl *kgo.Client, in *planInput, read func() error, now func() time.Time, stopped bool) (map[string]sourceGroup, []string, error) {
	sel, err := flowTopics(d)
	if err != nil {
		return nil, nil, err
	}
	srcCl, err := kclient.New(clusterOpts(d.src, d.src.Admin)...)
	if err != nil {
		return nil, nil, err
	}
	defer srcCl.Close()
	srcAdm := kadm.NewClient(srcCl)
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	groups, err := sourceGroups(rctx, srcAdm, d, sel)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the groups on %s: %w", d.src.Alias, err)
	}
	for _, g := range groups {
		if g.Members > 0 { // refused at once: no point waiting
			return groups, nil, read()
		}
	}
	if len(groups) == 0 {
		// No group of -groups on the source: when none has a checkpoint
		// on the target either, there is nothing to fail over, said at
		// once (an operator's find: -groups with a typo waited -wait for
		// the catch-up first).
		if err := read(); err != nil {
			return nil, nil, err
		}
		if len(in.Checkpoints) == 0 {
			return groups, nil, nil
		}
	}
	tds, err := srcAdm.ListTopics(rctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the topics of %s: %w", d.src.Alias, err)
	}
	var topics []string
	for t := range tds {
		if sel(t) {
			topics = append(topics, t)
		}
	}
	starts, ends := map[string]map[int32]int64{}, map[string]map[int32]int64{}
	if len(topics) > 0 {
		for _, l := range []struct {
			list func(context.Context, ...string) (kadm.ListedOffsets, error)
			into map[string]map[int32]int64
		}{{srcAdm.ListStartOffsets, starts}, {srcAdm.ListEndOffsets, ends}} {
			lo, err := l.list(rctx, topics...)
			if err == nil {
				err = lo.Error()
			}
			if err != nil {
				return nil, nil, fmt.Errorf("listing the offsets of %s: %w", d.src.Alias, err)
			}
			lo.Each(func(x kadm.ListedOffset) {
				if l.into[x.Topic] == nil {
					l.into[x.Topic] = map[int32]int64{}
				}
				l.into[x.Topic][x.Partition] = x.Offset
			})
		}
	}
	in.SourceStarts = starts
	in.AtStart = commitsAtStart(groups, starts) // read lists their target log starts
	deadline := now().Add(o.wait)
	gaps := newGapProbe(d, o)
	for {
		lagging, err := lagBehind(ctx, d, o, starts, ends, gaps)
		if err != nil {
			return nil, nil, err
		}
		if err := read(); err != nil {
			return nil, nil, err
		}
		if len(lagging) == 0 && checkpointedAtCommits(groups, in.Checkpoints, d.sourceTopic, starts) {
			return groups, nil, nil
		}
		// -dry-run waits as the run does (it only reads), so that its
		// answer is the run's: a live flow's catch-up is reached within
		// -wait, and -wait 0s checks it once.
		if stopped || !now().Before(deadline) {
			return groups, lagging, nil // a STOPPED flow never catches up: not waited for
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// checkpointedAtCommits reports whether every committed partition of the
// groups has a checkpoint at its current offset that will not become
// exact later (exact, MM2's, or from offset syncs alone), or, committed at
// or before the source log start (starts), none that ever will.
func checkpointedAtCommits(groups map[string]sourceGroup, tr map[string][]remoteclusterutils.PartitionTranslation, upstream func(string) string, starts map[string]map[int32]int64) bool {
	for g, sg := range groups {
		have := map[string]map[int32]remoteclusterutils.PartitionTranslation{}
		for _, p := range tr[g] {
			t := upstream(p.Topic)
			if have[t] == nil {
				have[t] = map[int32]remoteclusterutils.PartitionTranslation{}
			}
			have[t][p.Partition] = p
		}
		for t, ps := range sg.Committed {
			for part, at := range ps {
				cp, ok := have[t][part]
				if s, known := starts[t][part]; (!ok || cp.NeverCommitted) && known && at <= s {
					continue // no sync or run covers it: committed at the target log start
				}
				if !ok || cp.NeverCommitted || cp.SourceOffset != at {
					return false
				}
				if cp.Translation == remoteclusterutils.TranslationSafe && cp.Record == "run" {
					return false // the next offset flush's run makes it exact
				}
			}
		}
	}
	return true
}

// commitsAtStart returns the groups' commits at or before their source
// partition's log start (planInput.AtStart).
func commitsAtStart(groups map[string]sourceGroup, starts map[string]map[int32]int64) map[string]map[string]map[int32]int64 {
	out := map[string]map[string]map[int32]int64{}
	for g, sg := range groups {
		for t, ps := range sg.Committed {
			for part, at := range ps {
				if s, ok := starts[t][part]; !ok || at > s {
					continue
				}
				if out[g] == nil {
					out[g] = map[string]map[int32]int64{}
				}
				if out[g][t] == nil {
					out[g][t] = map[int32]int64{}
				}
				out[g][t][part] = at
			}
		}
	}
	return out
}

// sourceGroups reads the groups -groups matches on the source: members and
// committed offsets on the flow's topics.
func sourceGroups(ctx context.Context, adm *kadm.Client, d *drFlow, sel func(string) bool) (map[string]sourceGroup, error) {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, g := range listed.Groups() {
		if d.groups.MatchString(g) {
			names = append(names, g)
		}
	}
	out := map[string]sourceGroup{}
	if len(names) == 0 {
		return out, nil
	}
	members, err := groupMembers(ctx, adm, names)
	if err != nil {
		return nil, err
	}
	fetched := adm.FetchManyOffsets(ctx, names...)
	for _, g := range names {
		r := fetched[g]
		if r.Err != nil {
			return nil, fmt.Errorf("group %s: %w", g, r.Err)
		}
		sg := sourceGroup{Members: members[g], Committed: map[string]map[int32]int64{}}
		r.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 || !sel(o.Topic) {
				return
			}
			if sg.Committed[o.Topic] == nil {
				sg.Committed[o.Topic] = map[int32]int64{}
			}
			sg.Committed[o.Topic][o.Partition] = o.At
		})
		out[g] = sg
	}
	return out, nil
}

// lagBehind lists the source partitions whose resume point on the target
// (mm2-offsets.<source>.internal) has not reached the snapshot end offset,
// not counting offsets that hold no record to replicate: on a topic written
// transactionally the end offset counts the last commit marker (and any
// aborted records), which a resume point (the last data record copied)
// never reaches, so gaps asks the source what lies between.
func lagBehind(ctx context.Context, d *drFlow, o *failoverOptions, starts, ends map[string]map[int32]int64, gaps *gapProbe) ([]string, error) {
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	recs, err := kread.ReadToEnd(rctx, clusterOpts(d.dst, d.dst.Consumer), connectoffsets.TopicName(d.flow.Source), kread.Options{ReadCommitted: true})
	if err != nil {
		return nil, fmt.Errorf("reading the resume points of %s on %s: %w", d.name(), d.dst.Alias, err)
	}
	resume := connectoffsets.ResumePoints(recs, d.flow.Source, nil)
	var out []string
	behind := map[string]map[int32]kread.Range{} // the gaps to look into
	for _, t := range keysOf(ends) {
		for _, p := range keysOf(ends[t]) {
			end := ends[t][p]
			if end <= starts[t][p] {
				continue // empty
			}
			// A partition without a resume point has nothing replicated:
			// caught up only when it holds no record to replicate (only
			// markers and aborted records), which the probe tells.
			got := int64(-1)
			if rp, ok := resume[connectoffsets.SourcePartition{Topic: t, Partition: p}]; ok {
				got = rp.Offset
			}
			if from := max(got+1, starts[t][p]); from < end {
				if behind[t] == nil {
					behind[t] = map[int32]kread.Range{}
				}
				behind[t][p] = kread.Range{From: from, To: end}
			}
		}
	}
	if len(behind) == 0 {
		return out, nil
	}
	next, err := gaps.firstData(ctx, behind)
	if err != nil {
		return nil, fmt.Errorf("reading the source partitions behind on %s: %w", d.src.Alias, err)
	}
	for _, t := range keysOf(behind) {
		for _, p := range keysOf(behind[t]) {
			r := behind[t][p]
			done := "no resume point stored"
			if rp, ok := resume[connectoffsets.SourcePartition{Topic: t, Partition: p}]; ok {
				done = fmt.Sprintf("resume point stored at offset %d", rp.Offset)
			}
			switch n, ok := next[t][p]; {
			case !ok:
				out = append(out, fmt.Sprintf("%s[%d]: %s; offsets %d-%d of the source not readable (read_committed) within %s: an open transaction, or a slow source",
					t, p, done, r.From, r.To-1, gaps.wait))
			case n < r.To:
				out = append(out, fmt.Sprintf("%s[%d]: %s; the next record to replicate is at offset %d (source end offset %d)", t, p, done, n, r.To))
			}
		}
	}
	return out, nil
}

// gapProbe finds the first record to replicate (read_committed: neither a
// transaction marker nor an aborted record) between resume points and the
// snapshot end offsets on the source. It keeps what it found: the ends do
// not move, so a gap proven empty is never read again, and a record found
// is read again only once a resume point passed it.
type gapProbe struct {
	opts  []kgo.Opt                     // the source's consumer options
	wait  time.Duration                 // bound of one read
	found map[string]map[int32][2]int64 // per partition: {from, first data record in [from, end), end when none}
}

// gapProbeWait bounds one read of the gaps: a partition whose gap holds an
// open transaction never resolves (its last stable offset is below the
// end), and the catch-up wait reads again every round.
const gapProbeWait = 2 * time.Second

// newGapProbe returns the probe of the flow's source.
func newGapProbe(d *drFlow, o *failoverOptions) *gapProbe {
	return &gapProbe{opts: clusterOpts(d.src, d.src.Consumer), wait: min(gapProbeWait, o.timeout), found: map[string]map[int32][2]int64{}}
}

// firstData returns per partition of ranges the offset of its first record
// to replicate, To when there is none; partitions unresolved within the
// probe's wait are absent.
func (g *gapProbe) firstData(ctx context.Context, ranges map[string]map[int32]kread.Range) (map[string]map[int32]int64, error) {
	out := map[string]map[int32]int64{}
	read := map[string]map[int32]kread.Range{}
	for t, ps := range ranges {
		for p, r := range ps {
			if f, ok := g.found[t][p]; ok && f[0] <= r.From && f[1] >= r.From {
				if out[t] == nil {
					out[t] = map[int32]int64{}
				}
				out[t][p] = f[1] // [f[0], f[1]) holds no record to replicate
				continue
			}
			if read[t] == nil {
				read[t] = map[int32]kread.Range{}
			}
			read[t][p] = r
		}
	}
	if len(read) == 0 {
		return out, nil
	}
	rctx, cancel := context.WithTimeout(ctx, g.wait)
	defer cancel()
	got, err := kread.FirstData(rctx, g.opts, read)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for t, ps := range got {
		for p, n := range ps {
			if out[t] == nil {
				out[t] = map[int32]int64{}
			}
			if g.found[t] == nil {
				g.found[t] = map[int32][2]int64{}
			}
			out[t][p], g.found[t][p] = n, [2]int64{read[t][p].From, n}
		}
	}
	return out, nil
}

// writeTargetState persists the flow's target state (seam 2) in its status
// topic on the target, creating the topic if the members have not, and
// returns the record's offset.
func writeTargetState(ctx context.Context, d *drFlow, cl *kgo.Client, state statustopic.TargetState, by, reason string) (int64, error) {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := ensuretopic.Ensure(wctx, kadm.NewClient(cl), statustopic.Spec(d.flow.Source, d.dst.Alias, -1)); err != nil {
		return -1, fmt.Errorf("status topic of %s: %w", d.name(), err)
	}
	rec := statustopic.TargetStateRecord{Flow: d.name(), State: state, At: time.Now().UTC(), By: by, Reason: reason}
	return statustopic.WriteTargetStateOffset(wctx, cl, d.flow.Source, rec)
}

// membersStopped counts the live members and those of them that applied
// state from the target-state record at offset since or a later one. A
// member that reports state from an earlier record may not have applied a
// change written between (a resume it is about to apply); a member of a
// release that does not report the record's offset counts as earlier.
// pending names the others: worker, member and what they last applied.
func membersStopped(ms []statustopic.MemberState, state statustopic.TargetState, since int64) (live, applied int, pending []string) {
	for _, m := range ms {
		live++
		if m.Applied == state && m.AppliedOffset >= since {
			applied++
			continue
		}
		last := string(m.Applied)
		switch {
		case last == "":
			last = "nothing"
		case m.Applied == state && m.AppliedOffset < 0:
			last += " (a release that does not say from which record)"
		case m.Applied == state:
			last += " from an earlier record"
		}
		pending = append(pending, fmt.Sprintf("worker %s (member %s) applied %s", m.WorkerID, m.MemberID, last))
	}
	return live, applied, pending
}

// waitMembers waits up to wait until every live member of the flow reports
// state applied from the record at offset since or a later one, or none is
// live.
func waitMembers(ctx context.Context, d *drFlow, state statustopic.TargetState, since int64, wait time.Duration, now func() time.Time) (*membersReport, error) {
	start := now()
	deadline := start.Add(wait)
	opts := clusterOpts(d.dst, d.dst.Consumer)
	for {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ms, err := statustopic.ReadMembers(rctx, opts, d.flow.Source, now())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("reading the members of %s: %w", d.name(), err)
		}
		t := now()
		live, applied, pending := membersStopped(ms, state, since)
		r := &membersReport{Live: live, Stopped: applied, Pending: pending, WaitedMs: t.Sub(start).Milliseconds()}
		if applied == live || !t.Before(deadline) {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// commitGroups commits the offsets of the groups the plan did not refuse
// and marks them committed; a refused commit (the group became active)
// refuses the group, and one refused on some partitions only marks it
// partial (commitReported).
func commitGroups(ctx context.Context, adm *kadm.Client, tr map[string][]remoteclusterutils.PartitionTranslation, rep *failoverReport) {
	for i := range rep.Groups {
		g := &rep.Groups[i]
		if g.Action != actionCommit {
			continue
		}
		meta := map[string]map[int32]string{}
		for _, p := range tr[g.Group] {
			if meta[p.Topic] == nil {
				meta[p.Topic] = map[int32]string{}
			}
			meta[p.Topic][p.Partition] = p.Metadata
		}
		offs := kadm.Offsets{}
		for _, p := range g.Partitions {
			if p.Offset >= 0 && p.Ahead == 0 {
				offs.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.Offset, LeaderEpoch: -1, Metadata: meta[p.Topic][p.Partition]})
			}
		}
		if problem := commitReported(ctx, adm, g, offs, "", drFailover); problem != "" {
			rep.Problems = append(rep.Problems, problem)
		}
	}
}

// memberErr reports whether a commit error is the broker refusing an
// offset commit without a member for a group that has members (classic
// groups: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS;
// KIP-848 consumer groups: STALE_MEMBER_EPOCH).
func memberErr(err error) bool {
	return errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.StaleMemberEpoch)
}

// commitReported commits offs as group g's offsets with adm (on cluster
// where, "" for the report's own target) and records the outcome in g:
// committed; refused (the request failed, or the broker refused every
// partition); or partial, when the broker refused some partitions only (an
// OffsetCommit answers per partition: a topic's authorization, metadata
// too large), whose CommitError it sets while the others stay committed.
// It returns the report's problem line, "" when all were committed. A
// partial group counts as committed by command in the DR record, so that
// a run again keeps its committed partitions where its consumers moved
// them and commits the others (TestFailoverPartialCommitRecorded).
func commitReported(ctx context.Context, adm *kadm.Client, g *groupReport, offs kadm.Offsets, where, command string) string {
	on := ""
	if where != "" {
		on = " on " + where
	}
	resp, err := adm.CommitOffsets(ctx, g.Group, offs)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// No broker refused it: the command stopped (the commit may or
		// may not have reached the broker; a run again commits it).
		g.Action, g.Reason = actionRefused, fmt.Sprintf("not committed%s: interrupted (%v); run kmirror %s again", on, err, command)
		return fmt.Sprintf("group %s: %s", g.Group, g.Reason)
	}
	there := on
	if there == "" {
		there = " on the target"
	}
	activeHint := fmt.Sprintf(": the group has members%s now (it became active after it was checked): stop its consumers there, then run kmirror %s again", there, command)
	if err != nil {
		g.Action, g.Reason = actionRefused, fmt.Sprintf("commit refused%s: %v", on, err)
		if memberErr(err) {
			g.Reason += activeHint
		}
		return fmt.Sprintf("group %s: %s", g.Group, g.Reason)
	}
	var refused []string
	total, byMembers := 0, true
	resp.Each(func(r kadm.OffsetResponse) {
		total++
		if r.Err == nil {
			return
		}
		byMembers = byMembers && memberErr(r.Err)
		refused = append(refused, fmt.Sprintf("%s[%d]: %v", r.Topic, r.Partition, r.Err))
		for i := range g.Partitions {
			if p := &g.Partitions[i]; p.Topic == r.Topic && p.Partition == r.Partition {
				p.CommitError = r.Err.Error()
			}
		}
	})
	slices.Sort(refused)
	switch {
	case len(refused) == 0:
		g.Action = actionCommitted
		return ""
	case len(refused) == total:
		g.Action, g.Reason = actionRefused, fmt.Sprintf("commit refused%s: %s", on, strings.Join(refused, "; "))
		if byMembers {
			g.Reason += activeHint
		}
	default:
		g.Action, g.Reason = actionPartial, fmt.Sprintf("commit refused%s on %d of %d partitions (%s); the other %d were committed: fix the cause and run kmirror %s again (it keeps the committed partitions where the group's consumers moved them)",
			on, len(refused), total, strings.Join(refused, "; "), total-len(refused), command)
	}
	return fmt.Sprintf("group %s: %s", g.Group, g.Reason)
}
