package main

// The failback subcommand:
//
//	kmirror failback -config mm2.properties -flow 'A->B' -groups REGEX
//	                 [-uncommitted fail|earliest|latest] [-wait 2m] [-dry-run] [-json]
//
// Run after a failover of the flow A->B, once A is back: it moves the
// consumer groups -groups matches home to A. It refuses a flow that a
// live member still replicates when no kmirror failover of it is
// recorded (forwardNotFailedOver). It never replicates by
// itself: the reverse flow B->A must be enabled in the file, replicate
// and have checkpointed each group's current offsets on B's own topics;
// otherwise it exits 1 and prints what the file needs. That B->A
// replicates is read from its kmirror members in its status topic on A
// (mm2-kmirror-status.B.internal): one live and RUNNING, not only emitting
// heartbeats (a runner whose file disables B->A still emits its
// heartbeats into A, as MM2 does). With no live kmirror member there (the
// flow run by Apache MM2), a fresh heartbeat of B->A on A is the evidence
// (reverse_evidence in the report says which). Then, per group:
//
//   - its positions on A's topics as replicated to B ("A.orders") are
//     translated back to A's topics ("orders") with the forward flow's
//     offset runs and syncs (remoteclusterutils.TranslateBack); a
//     partition neither covers is listed, never guessed; one whose
//     translation is of another incarnation of the source topic (its topic
//     ID on A is not the one the offset runs or resume points recorded:
//     deleted and re-created on A since) is refused, since an old-log
//     offset would skip the new log's records below it;
//   - its positions on B's own topics ("orders" on B, "B.orders" on A)
//     come from the reverse flow's checkpoints on A (B.checkpoints.internal);
//   - the offsets are committed into the group on A (never into a group
//     with members on A or on B), and the forward flow is resumed (the
//     persisted RUNNING target state).
//
// The records written to A after the replication stopped, which never
// reached B, are counted per partition with their offset range: the group
// resumes on A where it was on B, at or before the first of them, so each
// is delivered once; nothing is
// truncated (Confluent Cluster Linking's failback reports them as records
// to truncate).
//
// Exit codes: 0 done; 1 refused or something unaccounted (reverse flow
// missing, not replicating or not caught up, an active group, a partition without
// a translation); 2 bad flags or configuration; 3 a cluster unreachable
// or interrupted.

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/heartbeat"
	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/kread"
	"github.com/kmirror/kmirror/internal/mm2filter"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

type failbackOptions struct {
	drCommon
	uncommitted string
	wait        time.Duration
	dryRun      bool
}

// failbackReport is what failback prints (-json: this shape). In its
// groups, SourceTopic and SourceOffset are the group's topic and position
// on B, Topic and Offset where it resumes on A.
type failbackReport struct {
	Flow    string `json:"flow"`
	Reverse string `json:"reverse_flow"`
	DryRun  bool   `json:"dry_run"`
	// ConfigLines are the lines the file needs before failback can run
	// (the reverse flow missing or incomplete).
	ConfigLines []string `json:"config_lines,omitempty"`
	// ReverseHeartbeat is the newest heartbeat of the reverse flow on A.
	ReverseHeartbeat time.Time `json:"reverse_heartbeat,omitzero"`
	// ReverseEvidence says what showed whether the reverse flow
	// replicates: its live kmirror members in its status topic on A, or,
	// with none (Apache MM2), its heartbeats only.
	ReverseEvidence string `json:"reverse_evidence,omitempty"`
	// Rerun says an earlier kmirror failback of the flow committed groups
	// this run matches (the status topic's DR record): those groups, when
	// committed past their translation on A, are kept there
	// (partitionReport.Ahead).
	Rerun  bool          `json:"rerun,omitempty"`
	Groups []groupReport `json:"groups"`
	// Outage lists, per partition of the forward flow's topics, the
	// records written to A after replication stopped (never on B).
	Outage      []outageRange `json:"outage_records"`
	OutageTotal int64         `json:"outage_records_total"`
	// TargetState is the forward flow's target state written (RUNNING).
	TargetState string   `json:"target_state,omitempty"`
	Problems    []string `json:"problems"`
	Result      string   `json:"result"`
	ExitCode    int      `json:"exit_code"`
	TimingsMs   struct {
		Checks    int64 `json:"checks"`
		Translate int64 `json:"translate"`
		Commit    int64 `json:"commit"`
		Resume    int64 `json:"resume"`
		Total     int64 `json:"total"`
	} `json:"timings_ms"`
}

// outageRange is one partition's records on A that never reached B:
// offsets [From, To).
type outageRange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Count     int64  `json:"count"`
}

func parseFailbackFlags(args []string, stderr io.Writer) (*failbackOptions, error) {
	fs := flag.NewFlagSet("kmirror failback", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &failbackOptions{}
	o.register(fs)
	fs.StringVar(&o.uncommitted, "uncommitted", uncommittedFail, "partitions of B's own topics a group never committed: `fail`, earliest or latest (of the topic on A)")
	fs.DurationVar(&o.wait, "wait", 2*time.Minute, "how long to wait for the reverse flow to checkpoint the groups' offsets on B (-dry-run too; 0s checks once)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "change nothing: print the plan (after the same waits as the run)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: kmirror failback -config FILE [-flow 'A->B'] -groups REGEX [-uncommitted fail|earliest|latest] [-wait 2m] [-dry-run] [-json]\n\n"+
			"After a failover of A->B, moves consumer groups home to A (the reverse flow B->A must run),\n"+
			"commits their offsets there and resumes A->B. Exit codes: 0 done, 1 refused or something\n"+
			"unaccounted, 2 bad flags or configuration, 3 a cluster unreachable or interrupted.\n\nflags:\n")
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
	if o.wait < 0 {
		return nil, &usageError{errors.New("-wait must not be negative")}
	}
	return o, nil
}

// failbackMain runs `kmirror failback args...` and returns the exit code.
func failbackMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFailbackFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return drOK
	}
	if err != nil {
		return drError(stderr, "failback", err, drUsage)
	}
	d, err := o.load()
	if err != nil {
		return drError(stderr, "failback", err, drUsage)
	}
	rep, err := runFailback(ctx, d, o)
	if o.json {
		if werr := writeReportJSON(stdout, rep); werr != nil {
			fmt.Fprintln(stderr, "kmirror failback:", werr)
		}
	} else {
		rep.writeText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "kmirror failback:", err)
	}
	return rep.ExitCode
}

func (r *failbackReport) writeText(w io.Writer) {
	a, b, _ := strings.Cut(r.Flow, "->")
	fmt.Fprintf(w, "failback of %s (reverse flow %s)", r.Flow, r.Reverse)
	if r.DryRun {
		fmt.Fprint(w, " (dry run: nothing changed)")
	}
	fmt.Fprintln(w)
	if len(r.ConfigLines) > 0 {
		fmt.Fprintln(w, "\nthe file needs these lines (then start kmirror on it, and run failback again):")
		for _, l := range r.ConfigLines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if r.ReverseEvidence != "" {
		fmt.Fprintf(w, "reverse flow %s: %s\n", r.Reverse, r.ReverseEvidence)
	}
	if r.Rerun {
		fmt.Fprintf(w, "flow %s: an earlier failback committed: the groups it committed keep their offsets on %s where they are past their translation\n", r.Flow, a)
	}
	if len(r.Groups) > 0 {
		fmt.Fprintln(w)
		// The clusters by their aliases (A and B in the README's runbook).
		tw := newTable(w, fmt.Sprintf("GROUP\tON %[2]s\tPARTITION\tPOSITION ON %[2]s\tON %[1]s\tNOW ON %[1]s\tOFFSET ON %[1]s\tMOVE\tFROM\tTRANSLATION", a, b))
		for _, g := range r.Groups {
			for _, p := range g.Partitions {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Group, p.SourceTopic, p.Partition, offsetText(p.SourceOffset),
					orDash(p.Topic), currentText(p), offsetText(p.Offset), moveText(p), fromText(p), p.translation())
			}
		}
		tw.Flush()
		for _, g := range r.Groups {
			line := fmt.Sprintf("group %s: %s", g.Group, actionText(g.Action, r.DryRun, r.Result))
			if g.Reason != "" {
				line += ": " + g.Reason
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(r.Groups) > 0 {
		fmt.Fprintf(w, "\nrecords written to %s after replication stopped (never on %s; the groups read each once): %d\n", a, b, r.OutageTotal)
		for _, o := range r.Outage {
			fmt.Fprintf(w, "  %s[%d]: offsets %d-%d (%d records)\n", o.Topic, o.Partition, o.From, o.To-1, o.Count)
		}
	}
	if r.TargetState != "" {
		fmt.Fprintf(w, "flow %s: target state %s written\n", r.Flow, r.TargetState)
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "problem:", p)
	}
	t := r.TimingsMs
	fmt.Fprintf(w, "result: %s (exit %d); took %dms (checks %dms, translate %dms, commit %dms, resume %dms)\n",
		r.Result, r.ExitCode, t.Total, t.Checks, t.Translate, t.Commit, t.Resume)
}

// reverseFlow finds the flow target->source of the file, enabled or not.
func reverseFlow(d *drFlow) (mirror.FlowConfig, bool) {
	for _, f := range d.props.Flows() {
		if f.Source == d.flow.Target && f.Target == d.flow.Source {
			return f, true
		}
	}
	return mirror.FlowConfig{}, false
}

// reverseLines returns the lines the file needs for the reverse flow rev
// (found: present in the file) to serve a failback of groups.
func reverseLines(d *drFlow, rev mirror.FlowConfig, found bool, groups []string) []string {
	name := d.flow.Target + "->" + d.flow.Source
	var out []string
	if !found || rev.Disabled {
		out = append(out, name+".enabled = true")
		if !found || rev.Topics == nil {
			out = append(out, fmt.Sprintf("%s.topics = %s", name, orDefault(strings.Join(d.flow.Topics, ", "), ".*")))
		}
	}
	if found && rev.DisableCheckpoints {
		out = append(out, name+".emit.checkpoints.enabled = true")
	}
	if found && rev.DisableHeartbeats {
		out = append(out, name+".emit.heartbeats.enabled = true")
	}
	if found && !rev.Disabled {
		var excluded []string
		for _, g := range groups {
			if !groupSelected(rev, g) {
				excluded = append(excluded, g)
			}
		}
		if len(excluded) > 0 {
			out = append(out, fmt.Sprintf("%s.groups = %s (the flow's groups and groups.exclude leave out %s)",
				name, strings.Join(append(append([]string{}, rev.Groups...), excluded...), ", "), strings.Join(excluded, ", ")))
		}
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// groupSelected reports whether the flow's groups/groups.exclude select g.
func groupSelected(f mirror.FlowConfig, g string) bool {
	sel, err := flowGroups(f)
	return err == nil && sel(g)
}

// runFailback does the failback; the report is never nil.
func runFailback(ctx context.Context, d *drFlow, o *failbackOptions) (*failbackReport, error) {
	start := time.Now()
	rev, found := reverseFlow(d)
	rep := &failbackReport{Flow: d.name(), Reverse: d.flow.Target + "->" + d.flow.Source, DryRun: o.dryRun,
		Groups: []groupReport{}, Outage: []outageRange{}, Problems: []string{}}
	finish := func(result string, code int) {
		rep.Result, rep.ExitCode = result, code
		rep.TimingsMs.Total = time.Since(start).Milliseconds()
	}
	fail := func(err error) (*failbackReport, error) {
		rep.Problems = append(rep.Problems, err.Error())
		finish(stoppedResult(ctx), drUnreachable)
		return rep, err
	}
	refuse := func() (*failbackReport, error) {
		finish("refused", drRefused)
		return rep, nil
	}
	a, b := d.src, d.dst
	aCl, err := kclient.New(clusterOpts(a, a.Admin)...)
	if err != nil {
		return fail(err)
	}
	defer aCl.Close()
	bCl, err := kclient.New(clusterOpts(b, b.Admin)...)
	if err != nil {
		return fail(err)
	}
	defer bCl.Close()
	aAdm, bAdm := kadm.NewClient(aCl), kadm.NewClient(bCl)
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	// Both clusters are read and written: one refusing the client fails
	// here with the keys to check, not with a bare EOF.
	for _, c := range []struct {
		cfg  mirror.ClusterConfig
		what string
	}{{b, "target"}, {a, "source"}} {
		if err := refusedBy(rctx, c.cfg, c.what, o.timeout); err != nil {
			return fail(err)
		}
	}

	// The forward flow's status topic on B: the record of earlier
	// failovers and failbacks (prev), and whether a live member still
	// replicates the flow.
	prev, drFound, err := statustopic.ReadDR(rctx, clusterOpts(b, b.Consumer), d.flow.Source)
	if err != nil {
		return fail(fmt.Errorf("reading the status topic of %s on %s: %w", d.name(), b.Alias, err))
	}
	if fwdView, err := statustopic.ReadView(rctx, clusterOpts(b, b.Consumer), d.flow.Source); err == nil {
		if problem := forwardNotFailedOver(d.name(), d.flow.Source, b.Alias, flowMembers(fwdView, time.Now()), prev, drFound); problem != "" {
			rep.Problems = append(rep.Problems, problem)
			return refuse()
		}
	} else if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		return fail(fmt.Errorf("reading the status topic of %s on %s: %w", d.name(), b.Alias, err))
	}

	// The groups on B and A.
	listed, err := bAdm.ListGroups(rctx)
	if err != nil {
		return fail(fmt.Errorf("listing the groups on %s: %w", b.Alias, err))
	}
	var names []string
	for _, g := range listed.Groups() {
		if d.groups.MatchString(g) {
			names = append(names, g)
		}
	}
	slices.Sort(names)
	if lines := reverseLines(d, rev, found, names); len(lines) > 0 {
		rep.ConfigLines = lines
		rep.Problems = append(rep.Problems, fmt.Sprintf("the reverse flow %s is not enabled as failback needs: add the lines printed, start kmirror on the file, and run failback again", rep.Reverse))
		return refuse()
	}
	revSel, err := flowTopics(&drFlow{flow: rev, pol: d.pol})
	if err != nil {
		return fail(err)
	}
	if len(names) == 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("no group on %s matches -groups %q", b.Alias, o.groups))
		return refuse()
	}
	onB, err := groupMembers(rctx, bAdm, names)
	if err != nil {
		return fail(fmt.Errorf("describing the groups on %s: %w", b.Alias, err))
	}
	onA, err := groupMembers(rctx, aAdm, names)
	if err != nil {
		return fail(fmt.Errorf("describing the groups on %s (is it back?): %w", a.Alias, err))
	}

	// The reverse flow replicates. Its heartbeats alone prove nothing: a
	// runner emits them for every pair, a disabled one too (MM2's
	// emit.heartbeats.enabled is per pair, whatever <pair>.enabled says).
	// kmirror's members of the flow publish whether they replicate in its
	// status topic on A: when some are live, they decide. With none (the
	// flow run by Apache MM2, which writes no such topic), the heartbeats
	// are all failback can know.
	hb, err := newestHeartbeat(rctx, clusterOpts(a, a.Consumer), d.pol.HeartbeatsTopic(), b.Alias, a.Alias)
	if err != nil {
		return fail(fmt.Errorf("reading the heartbeats on %s: %w", a.Alias, err))
	}
	rep.ReverseHeartbeat = hb
	view, err := statustopic.ReadView(rctx, clusterOpts(a, a.Consumer), b.Alias)
	if err != nil && !errors.Is(err, kerr.TopicAuthorizationFailed) {
		return fail(fmt.Errorf("reading the status topic of %s on %s: %w", rep.Reverse, a.Alias, err))
	}
	var rs reverseStatus
	if err == nil {
		rs = flowMembers(view, time.Now())
	}
	interval := rev.EmitHeartbeatsInterval
	if interval <= 0 {
		interval = mirror.DefaultEmitHeartbeatsInterval
	}
	switch {
	case rs.Replicating > 0:
		rep.ReverseEvidence = fmt.Sprintf("status topic %s on %s: %d of %d live member(s) replicating", statustopic.Topic(b.Alias), a.Alias, rs.Replicating, rs.Live)
	case rs.Live > 0:
		rep.ReverseEvidence = fmt.Sprintf("status topic %s on %s: none of %d live member(s) replicating", statustopic.Topic(b.Alias), a.Alias, rs.Live)
		rep.Problems = append(rep.Problems, fmt.Sprintf("%[1]s is not replicating: no member of it is RUNNING (its status topic %[2]s on %[3]s has %[4]d live member(s): %[5]s); heartbeats alone come from any process with emit.heartbeats.enabled, and a flow that does not replicate never checkpoints the groups. %[6]s",
			rep.Reverse, statustopic.Topic(b.Alias), a.Alias, rs.Live, strings.Join(rs.NotReplicating, "; "), reverseAdvice(rep.Reverse, a.Alias, rs)))
		return refuse()
	default:
		why := fmt.Sprintf("no live kmirror member in %s on %s (a flow run by Apache MM2 publishes none)", statustopic.Topic(b.Alias), a.Alias)
		if err != nil {
			why = fmt.Sprintf("%s on %s unreadable (%v)", statustopic.Topic(b.Alias), a.Alias, err)
		}
		rep.ReverseEvidence = "heartbeats only: " + why
		if hb.IsZero() || time.Since(hb) > max(3*interval, 15*time.Second) {
			// Neither a member nor heartbeats (a new user read "heartbeats
			// only" where there were none).
			rep.ReverseEvidence = "no live member, no recent heartbeat: " + why
			rep.Problems = append(rep.Problems, fmt.Sprintf("the reverse flow %s has no live member: %s, and %s; start kmirror on the file (kmirror -config FILE, or -clusters %s for that flow alone)",
				rep.Reverse, newestHeartbeatPhrase(a.Alias, hb), why, a.Alias))
			return refuse()
		}
	}

	// Positions on B, and the reverse flow caught up on B's own topics.
	fwdTopics, err := flowTopics(d)
	if err != nil {
		return fail(err)
	}
	committed, err := groupCommits(rctx, bAdm, names) // group -> topic on B -> partition -> offset
	if err != nil {
		return fail(fmt.Errorf("fetching the groups' offsets on %s: %w", b.Alias, err))
	}
	var revCps map[string][]remoteclusterutils.PartitionTranslation
	deadline := time.Now().Add(o.wait)
	for {
		tctx, tcancel := context.WithTimeout(ctx, o.timeout)
		revCps, err = remoteclusterutils.NewClient(aCl, remoteclusterutils.WithPolicy(d.pol)).TranslateGroups(tctx, b.Alias, d.groups.MatchString)
		tcancel()
		if err != nil && !errors.Is(err, remoteclusterutils.ErrNoCheckpointsTopic) {
			return fail(fmt.Errorf("reading the checkpoints of %s on %s: %w", rep.Reverse, a.Alias, err))
		}
		behind, inexact := reverseBehind(d, committed, revCps, revSel)
		// A checkpoint of the latest commit that is only safe (the offset
		// syncs or runs of its records had not arrived yet) becomes exact
		// at a later emission: wait for that within -wait, then take it
		// as it is (its re-read bound is reported).
		// -dry-run waits as the run does (it only reads): its answer is
		// the run's.
		if len(behind) == 0 && (len(inexact) == 0 || !time.Now().Before(deadline)) {
			break
		}
		if !time.Now().Before(deadline) {
			for _, l := range behind {
				rep.Problems = append(rep.Problems, "the reverse flow has not caught up: "+l)
			}
			break
		}
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	rep.TimingsMs.Checks = time.Since(start).Milliseconds()
	rctx, cancel = context.WithTimeout(ctx, o.timeout)
	defer cancel()

	// Translate back.
	t := time.Now()
	syncsCl, syncsTopic := aCl, d.pol.OffsetSyncsTopic(d.flow.Target)
	if d.flow.OffsetSyncsTopicLocationTarget {
		syncsCl, syncsTopic = bCl, d.pol.OffsetSyncsTopic(d.flow.Source)
	}
	bMeta, err := bAdm.BrokerMetadata(rctx)
	if err != nil {
		return fail(fmt.Errorf("metadata of %s: %w", b.Alias, err))
	}
	reached := map[string]map[int32]int64{} // source topic -> partition -> end of its remote partition on B
	remoteEnds := map[string]map[int32]int64{}
	var remotes []string
	for _, g := range names {
		for topic := range committed[g] {
			if src, ok := d.pol.TopicSource(topic); ok && src == a.Alias && !slices.Contains(remotes, topic) {
				remotes = append(remotes, topic)
			}
		}
	}
	// Every remote topic of the forward flow on B, for the outage count.
	tdsA, err := aAdm.ListTopics(rctx)
	if err != nil {
		return fail(fmt.Errorf("listing the topics of %s: %w", a.Alias, err))
	}
	// A's current topic IDs, against those the forward flow recorded
	// (incarnation below).
	curIDs := map[string][16]byte{}
	for topic, td := range tdsA {
		if td.Err == nil {
			curIDs[topic] = td.ID
		}
	}
	for topic := range tdsA {
		if fwdTopics(topic) {
			if r := d.pol.FormatRemoteTopic(a.Alias, topic); !slices.Contains(remotes, r) {
				remotes = append(remotes, r)
			}
		}
	}
	slices.Sort(remotes)
	if len(remotes) > 0 {
		ends, err := bAdm.ListEndOffsets(rctx, remotes...)
		if err != nil {
			return fail(fmt.Errorf("listing the end offsets on %s: %w", b.Alias, err))
		}
		ends.Each(func(x kadm.ListedOffset) {
			if x.Err == nil {
				if remoteEnds[x.Topic] == nil {
					remoteEnds[x.Topic] = map[int32]int64{}
				}
				remoteEnds[x.Topic][x.Partition] = x.Offset
			}
		})
	}
	for remote, ps := range remoteEnds {
		up := d.sourceTopic(remote)
		reached[up] = map[int32]int64{}
		for p, end := range ps {
			reached[up][p] = end
		}
	}
	back, err := remoteclusterutils.ReadBackIndex(rctx, syncsCl, syncsTopic, bMeta.Cluster)
	if err != nil {
		return fail(fmt.Errorf("reading the offset runs and syncs of %s: %w", d.name(), err))
	}
	// The runs and syncs of a remote topic's previous log (deleted and
	// re-created on B) would translate the current log's positions to
	// source offsets past what was consumed there.
	if len(remotes) > 0 {
		tds, err := bAdm.ListTopics(rctx, remotes...)
		if err != nil {
			return fail(fmt.Errorf("listing the remote topics on %s: %w", b.Alias, err))
		}
		ids := map[string][16]byte{}
		for _, remote := range remotes {
			td, ok := tds[remote]
			switch {
			case !ok, errors.Is(td.Err, kerr.UnknownTopicOrPartition): // gone: nothing of it to translate
			case td.Err != nil:
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s on %s: its topic ID cannot be read (%v), so failback cannot tell the offset runs and syncs of its current log from those of one it had before a re-creation: grant Describe on it and run failback again",
					remote, b.Alias, td.Err))
			default:
				ids[d.sourceTopic(remote)] = td.ID
			}
		}
		back = back.ForRemoteTopicIDs(ids)
	}
	// Copies carrying their source offset (tail resume's offset element)
	// translate exactly from themselves, whatever runs and syncs are left.
	aMeta, err := aAdm.BrokerMetadata(rctx)
	if err != nil {
		return fail(fmt.Errorf("metadata of %s: %w", a.Alias, err))
	}
	positions, remoteOf := map[string]map[int32]int64{}, map[string]string{}
	addPos := func(topic string, p int32, pos int64) {
		if positions[topic] == nil {
			positions[topic] = map[int32]int64{}
		}
		positions[topic][p] = pos
		remoteOf[topic] = d.pol.FormatRemoteTopic(a.Alias, topic)
	}
	for topic, ps := range reached {
		for p, pos := range ps {
			addPos(topic, p, pos)
		}
	}
	byRecords := map[string]*remoteclusterutils.BackIndex{} // per group: positions differ
	for _, g := range names {
		gp := map[string]map[int32]int64{}
		for topic, ps := range committed[g] {
			if src, ok := d.pol.TopicSource(topic); ok && src == a.Alias {
				up := d.sourceTopic(topic)
				remoteOf[up] = topic
				gp[up] = ps
			}
		}
		if len(gp) > 0 {
			if byRecords[g], err = back.WithRecords(rctx, bCl, aMeta.Cluster, remoteOf, gp); err != nil {
				return fail(fmt.Errorf("reading the copies on %s: %w", b.Alias, err))
			}
		}
	}
	if back, err = back.WithRecords(rctx, bCl, aMeta.Cluster, remoteOf, positions); err != nil {
		return fail(fmt.Errorf("reading the copies on %s: %w", b.Alias, err))
	}
	// The source topic incarnation the forward flow replicated, where its
	// offset runs do not say: its resume points on B record it.
	resumeIDs, err := resumeSourceIDs(rctx, d)
	if err != nil {
		return fail(err)
	}
	// incarnation compares the source topic ID a translation of topic's
	// partition p is from (its offset run's, else the partition's resume
	// point's) with A's current one; other is true when both are known and
	// differ: the topic was deleted and re-created on A since, and the
	// translation names an offset of the old log.
	incarnation := func(topic string, p int32, bt remoteclusterutils.BackTranslation) (was, now [16]byte, other bool) {
		var zero [16]byte
		was, now = bt.SourceTopicID, curIDs[topic]
		if was == zero {
			was = resumeIDs[topic][p]
		}
		return was, now, was != zero && now != zero && was != now
	}
	// The outage records: on A after what reached B. Listed only for the
	// topics that reached B: kadm lists every topic of A when given none.
	var aEnds, aStarts kadm.ListedOffsets
	if len(reached) > 0 {
		if aEnds, err = aAdm.ListEndOffsets(rctx, sortedTopics(reached)...); err != nil {
			return fail(fmt.Errorf("listing the end offsets on %s: %w", a.Alias, err))
		}
		if aStarts, err = aAdm.ListStartOffsets(rctx, sortedTopics(reached)...); err != nil {
			return fail(fmt.Errorf("listing the start offsets on %s: %w", a.Alias, err))
		}
	}
	for _, topic := range sortedTopics(reached) {
		for _, p := range keysOf(reached[topic]) {
			end, ok := aEnds.Lookup(topic, p)
			if !ok || end.Err != nil {
				continue
			}
			from := int64(0)
			if b, ok := back.Translate(topic, p, reached[topic][p]); ok {
				from = b.Offset
				if _, _, other := incarnation(topic, p, b); other {
					// What reached B is of the old log: none of the
					// current one did.
					from = 0
					if st, ok := aStarts.Lookup(topic, p); ok && st.Err == nil {
						from = st.Offset
					}
				}
			} else if reached[topic][p] > 0 {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s[%d]: what reached B (up to %s[%d] offset %d) has no offset run or sync left to translate it back: the records written to %s after replication stopped cannot be counted",
					topic, p, d.pol.FormatRemoteTopic(a.Alias, topic), p, reached[topic][p], a.Alias))
				continue
			}
			if end.Offset < from {
				// A's log does not reach what was replicated from it: the
				// topic was re-created (or truncated) on A since.
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s[%d]: what reached %s translates back to offset %d, past the log end %d on %s: %s was re-created or truncated on %s since %s replicated it, so the records written to it since cannot be counted",
					topic, p, b.Alias, from, end.Offset, a.Alias, topic, a.Alias, d.name()))
				continue
			}
			if end.Offset > from {
				rep.Outage = append(rep.Outage, outageRange{Topic: topic, Partition: p, From: from, To: end.Offset, Count: end.Offset - from})
				rep.OutageTotal += end.Offset - from
			}
		}
	}
	rep.TimingsMs.Translate = time.Since(t).Milliseconds()

	// The log starts on A of the reverse flow's checkpointed topics: a
	// checkpoint below one is committed as the log start (atLogStart; A's
	// retention removed the records from it on while the group read on B:
	// TestFailbackBelowLogStartOnA).
	// TranslateGroups listed them (PartitionStart): only those it could
	// not are listed again.
	revStarts := translatedStarts(revCps)
	if err := checkpointedStarts(rctx, aAdm, revCps, revStarts); err != nil {
		return fail(fmt.Errorf("listing the start offsets on %s: %w", a.Alias, err))
	}
	// The plan per group.
	var starts, endsA map[string]map[int32]int64
	for _, g := range names {
		gr := groupReport{Group: g, Action: actionCommit, Partitions: []partitionReport{}}
		var reasons []string
		if n := onB[g]; n > 0 {
			reasons = append(reasons, fmt.Sprintf("%d member(s) on %s: stop the group's consumers there first", n, b.Alias))
		}
		if n := onA[g]; n > 0 {
			reasons = append(reasons, fmt.Sprintf("%d member(s) on %s: an active group is never moved", n, a.Alias))
		}
		for _, topic := range sortedTopics(committed[g]) {
			for _, p := range keysOf(committed[g][topic]) {
				pos := committed[g][topic][p]
				pr := partitionReport{SourceTopic: topic, Partition: p, SourceOffset: pos, Offset: -1, RereadMax: -1}
				src, remote := d.pol.TopicSource(topic)
				switch {
				case remote && src == a.Alias: // A's topic, replicated to B
					pr.Topic = d.sourceTopic(topic)
					idx := back
					if byRecords[g] != nil {
						idx = byRecords[g]
					}
					bt, ok := idx.Translate(pr.Topic, p, pos)
					switch {
					case ok:
						pr.Offset, pr.From = bt.Offset, bt.Record
						pr.Translation, pr.RereadMax = string(remoteclusterutils.TranslationExact), 0
						if !bt.Exact {
							pr.Translation, pr.Record, pr.RereadMax = string(remoteclusterutils.TranslationSafe), bt.Record, -1
						}
						// A translation of another incarnation of the topic
						// (deleted and re-created on A since the forward
						// flow replicated it) names an offset of the old
						// log: committed, the consumer would skip the new
						// log's records below it, whether or not the new log
						// has grown past it. Data written by MM2 records no
						// topic ID: only the log end check below applies.
						// A translation past A's log end names records A no
						// longer holds (the topic re-created or truncated
						// there): committed, the consumer would skip the new
						// log's records below it once the log grows there.
						if was, now, other := incarnation(pr.Topic, p, bt); other {
							reasons = append(reasons, fmt.Sprintf("%s[%d] at %d on %s translates back to %s[%d] offset %d of the %s %s replicated (topic ID %s), but %s on %s has topic ID %s now: it was deleted and re-created there since, and committing %d would skip the new log's records below it. "+
								"Reset the group on %s to the new log's start yourself (kafka-consumer-groups.sh --bootstrap-server <%s> --group %s --topic %s:%d --reset-offsets --to-earliest --execute), or delete the group there; then run failback for the other groups, or resume %s (PUT /connectors/%s/resume)",
								topic, p, pos, b.Alias, pr.Topic, p, bt.Offset, pr.Topic, d.name(), kafkaTopicID(was), pr.Topic, a.Alias, kafkaTopicID(now), bt.Offset,
								a.Alias, a.Alias, g, pr.Topic, p, d.name(), d.name()))
						} else if !tdsA.Has(pr.Topic) {
							// Deleted on A, or A rebuilt empty, since the
							// forward flow replicated it: the broker refuses
							// a commit on it (UNKNOWN_TOPIC_OR_PARTITION),
							// and the dry run said "would commit".
							reasons = append(reasons, fmt.Sprintf("%s[%d] at %d on %s translates back to %s[%d] offset %d, but %s does not exist on %s (deleted there, or %s rebuilt, since %s replicated it; or this client may not describe it): "+
								"once it exists again, commit the group's offset there yourself (its log start reads the new log), or leave the group out of -groups",
								topic, p, pos, b.Alias, pr.Topic, p, bt.Offset, pr.Topic, a.Alias, a.Alias, d.name()))
						} else if end, found := aEnds.Lookup(pr.Topic, p); found && end.Err == nil && bt.Offset > end.Offset {
							reasons = append(reasons, fmt.Sprintf("%s[%d] at %d on %s translates back to %s[%d] offset %d, past its log end %d on %s: %s was re-created or truncated on %s since %s replicated it; commit the group's offset there yourself (its log start reads the new log)",
								topic, p, pos, b.Alias, pr.Topic, p, bt.Offset, end.Offset, a.Alias, pr.Topic, a.Alias, d.name()))
						} else {
							st, found := aStarts.Lookup(pr.Topic, p)
							pr.atLogStart(st.Offset, found && st.Err == nil)
						}
					default:
						reasons = append(reasons, fmt.Sprintf("%s[%d] at %d on %s: neither an offset run nor an offset sync of %s covers it (offset runs older than 7 days are deleted, the offset-syncs topic keeps the newest sync per partition)",
							topic, p, pos, b.Alias, d.name()))
					}
				case !remote && revSel(topic): // B's own topic, replicated to A by the reverse flow
					pr.Topic = d.pol.FormatRemoteTopic(b.Alias, topic)
					if cp, ok := findCheckpoint(revCps[g], pr.Topic, p); ok {
						pr.Offset, pr.From, pr.Translation, pr.Record, pr.RereadMax, pr.CheckpointTime =
							cp.Offset, "checkpoint", string(cp.Translation), cp.Record, cp.Reread, cp.CheckpointTime
						st, found := revStarts[pr.Topic][p]
						pr.atLogStart(st, found)
					} else {
						reasons = append(reasons, fmt.Sprintf("%s[%d] at %d on %s: no checkpoint of %s on %s yet", topic, p, pos, b.Alias, rep.Reverse, a.Alias))
					}
				default:
					pr.From = "skipped"
					pr.Translation = string(remoteclusterutils.TranslationNone)
				}
				gr.Partitions = append(gr.Partitions, pr)
			}
		}
		// Partitions of B's topics the group never committed.
		var never []string
		for _, cp := range revCps[g] {
			if !cp.NeverCommitted {
				continue
			}
			pr := partitionReport{SourceTopic: d.sourceTopicOf(cp.Topic), Topic: cp.Topic, Partition: cp.Partition, SourceOffset: -1, Offset: -1,
				Translation: string(remoteclusterutils.TranslationNone), RereadMax: -1, NeverCommitted: true}
			switch o.uncommitted {
			case uncommittedEarliest, uncommittedLatest:
				if starts == nil {
					if starts, endsA, err = neverCommittedBounds(rctx, aAdm, revCps); err != nil {
						return fail(fmt.Errorf("listing offsets on %s: %w", a.Alias, err))
					}
				}
				pr.From, pr.Offset = o.uncommitted, lookup(starts, cp.Topic, cp.Partition)
				if o.uncommitted == uncommittedLatest {
					pr.Offset = lookup(endsA, cp.Topic, cp.Partition)
				}
			default:
				never = append(never, fmt.Sprintf("%s[%d]", cp.Topic, cp.Partition))
			}
			gr.Partitions = append(gr.Partitions, pr)
		}
		if len(never) > 0 {
			reasons = append(reasons, fmt.Sprintf("never committed: %s (a consumer with auto.offset.reset=none would never read them): choose -uncommitted earliest or latest", strings.Join(never, ", ")))
		}
		if len(reasons) > 0 {
			gr.Action, gr.Reason = actionRefused, strings.Join(reasons, "; ")
			rep.Problems = append(rep.Problems, fmt.Sprintf("group %s: %s", g, gr.Reason))
		}
		rep.Groups = append(rep.Groups, gr)
	}
	if len(rep.Problems) > 0 {
		return refuse()
	}
	// For a group an earlier failback committed (the status topic's DR
	// record), a partition committed on A above its translation is not
	// moved back (the consumers moved on at home). Other groups get their
	// translations even below A's offsets: those are from before the
	// failover, and the group may have been rewound on B.
	// Every group's offsets on A are shown beside those committed, with
	// the move (markMoves).
	done := committedBy(prev, drFailback)
	again := inSet(reportGroups(rep.Groups), done)
	rep.Rerun = drFound && len(again) > 0 // of a group this run matches
	commitsA, err := groupCommits(rctx, aAdm, reportGroups(rep.Groups))
	if err != nil {
		return fail(fmt.Errorf("fetching the groups' offsets on %s: %w", a.Alias, err))
	}
	for i := range rep.Groups {
		markMoves(&rep.Groups[i], commitsA[rep.Groups[i].Group])
	}
	dropRefused(commitsA, prev)
	for i := range rep.Groups {
		if done[rep.Groups[i].Group] {
			keepAhead(&rep.Groups[i], commitsA[rep.Groups[i].Group])
		}
	}
	if o.dryRun {
		finish("dry-run", drOK)
		return rep, nil
	}

	// Commit on A, then resume the forward flow.
	t = time.Now()
	for i := range rep.Groups {
		g := &rep.Groups[i]
		if g.Action == actionNone {
			continue
		}
		offs := kadm.Offsets{}
		for _, p := range g.Partitions {
			if p.Offset >= 0 && p.Topic != "" && p.Ahead == 0 {
				offs.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.Offset, LeaderEpoch: -1})
			}
		}
		if problem := commitReported(rctx, aAdm, g, offs, a.Alias, drFailback); problem != "" {
			rep.Problems = append(rep.Problems, problem)
		}
	}
	rep.TimingsMs.Commit = time.Since(t).Milliseconds()
	if err := recordDR(ctx, d, bCl, drFailback, prev, rep.Groups, time.Now()); err != nil {
		rep.Problems = append(rep.Problems, err.Error())
	}
	if ctx.Err() != nil { // as failover: the groups committed before are recorded
		finish("interrupted", drUnreachable)
		return rep, ctx.Err()
	}
	if len(rep.Problems) > 0 {
		return refuse()
	}
	t = time.Now()
	if _, err := writeTargetState(ctx, d, bCl, statustopic.Running, "kmirror failback", ""); err != nil {
		return fail(err)
	}
	rep.TargetState = string(statustopic.Running)
	rep.TimingsMs.Resume = time.Since(t).Milliseconds()
	finish("done", drOK)
	return rep, nil
}

// resumeSourceIDs reads the forward flow's resume points on the target
// and returns the source topic ID each records: source topic ->
// partition -> ID (absent: none recorded, e.g. written by MM2).
func resumeSourceIDs(ctx context.Context, d *drFlow) (map[string]map[int32][16]byte, error) {
	out := map[string]map[int32][16]byte{}
	recs, err := kread.ReadToEnd(ctx, clusterOpts(d.dst, d.dst.Consumer), connectoffsets.TopicName(d.flow.Source), kread.Options{ReadCommitted: true})
	if err != nil {
		if topicMissing(err) {
			return out, nil
		}
		return nil, fmt.Errorf("reading the resume points of %s on %s: %w", d.name(), d.dst.Alias, err)
	}
	for k, rp := range connectoffsets.ResumePoints(recs, d.flow.Source, nil) {
		if rp.SourceTopicID == ([16]byte{}) {
			continue // the newest resume point records none
		}
		if out[k.Topic] == nil {
			out[k.Topic] = map[int32][16]byte{}
		}
		out[k.Topic][k.Partition] = rp.SourceTopicID
	}
	return out, nil
}

// topicMissing reports whether a read of a topic failed because the topic
// does not exist: UNKNOWN_TOPIC_OR_PARTITION, wrapped or only named in
// the text of a listing's error.
func topicMissing(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION")
}

// kafkaTopicID prints a topic ID as Kafka's tools do (kafka-topics.sh
// --describe: URL-safe base64, no padding).
func kafkaTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// reportGroups returns the groups of a report, in its order.
func reportGroups(gs []groupReport) []string {
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		out = append(out, g.Group)
	}
	return out
}

// sourceTopicOf names, for a remote topic on A of the reverse flow
// ("B.orders"), B's topic ("orders").
func (d *drFlow) sourceTopicOf(t string) string { return d.sourceTopic(t) }

func findCheckpoint(ps []remoteclusterutils.PartitionTranslation, topic string, p int32) (remoteclusterutils.PartitionTranslation, bool) {
	for _, x := range ps {
		if x.Topic == topic && x.Partition == p && !x.NeverCommitted {
			return x, true
		}
	}
	return remoteclusterutils.PartitionTranslation{}, false
}

// reverseBehind lists the partitions of B's own topics (replicated by the
// reverse flow) whose group offset on B has no checkpoint at that offset
// on A yet.
func reverseBehind(d *drFlow, committed map[string]map[string]map[int32]int64, revCps map[string][]remoteclusterutils.PartitionTranslation, revSel func(string) bool) (out, inexact []string) {
	for _, g := range keysOf(committed) {
		for _, topic := range sortedTopics(committed[g]) {
			if _, remote := d.pol.TopicSource(topic); remote || !revSel(topic) {
				continue
			}
			for _, p := range keysOf(committed[g][topic]) {
				at := committed[g][topic][p]
				cp, ok := findCheckpoint(revCps[g], d.pol.FormatRemoteTopic(d.flow.Target, topic), p)
				switch {
				case !ok:
					out = append(out, fmt.Sprintf("group %s: %s[%d] committed at %d on %s, no checkpoint on %s yet", g, topic, p, at, d.flow.Target, d.flow.Source))
				case cp.SourceOffset != at:
					out = append(out, fmt.Sprintf("group %s: %s[%d] committed at %d on %s, checkpointed at %d", g, topic, p, at, d.flow.Target, cp.SourceOffset))
				case cp.Translation == remoteclusterutils.TranslationSafe:
					inexact = append(inexact, fmt.Sprintf("group %s: %s[%d] checkpointed at %d, not exact yet", g, topic, p, at))
				}
			}
		}
	}
	return out, inexact
}

func sortedTopics[V any](m map[string]V) []string { return keysOf(m) }

// newestHeartbeat returns the timestamp of the newest heartbeat from
// source to target in topic (zero when none), read to its end.
func newestHeartbeat(ctx context.Context, opts []kgo.Opt, topic, source, target string) (time.Time, error) {
	recs, err := kread.ReadToEnd(ctx, opts, topic, kread.Options{})
	if err != nil {
		if topicMissing(err) {
			return time.Time{}, nil
		}
		return time.Time{}, err
	}
	var newest time.Time
	for _, r := range recs {
		// A version other than 0 is parsed with the v0 layout, as Java's
		// readers do: the heartbeat is usable.
		h, err := heartbeat.Decode(r.Key, r.Value)
		if err != nil && !errors.Is(err, heartbeat.ErrUnknownVersion) || h.SourceClusterAlias != source || h.TargetClusterAlias != target {
			continue
		}
		if at := time.UnixMilli(h.Timestamp); at.After(newest) {
			newest = at
		}
	}
	return newest, nil
}

// reverseStatus is what the reverse flow's status topic on A says of its
// live members.
type reverseStatus struct {
	Live, Replicating int
	// Held counts the live members that applied PAUSED or STOPPED,
	// HeartbeatsOnly those whose file disables the flow.
	Held, HeartbeatsOnly int
	// NotReplicating says, per live member that does not replicate, why.
	NotReplicating []string
}

// reverseAdvice is what to do when no live member of the reverse flow rev
// (into cluster alias into) replicates, by why they do not: resume it when
// they hold it PAUSED or STOPPED (the state is kept in the status topic and
// applies at every start: a new user paused the heartbeats-only flow,
// enabled it later, and was told to enable it), enable it when their files
// disable it, both otherwise.
func reverseAdvice(rev, into string, rs reverseStatus) string {
	resume := fmt.Sprintf("resume %s with PUT /connectors/%s/resume on a member (the state is kept in the status topic and applies at every start)", rev, url.PathEscape(rev))
	enable := fmt.Sprintf("start a runner with %[1]s.enabled = true (kmirror -config FILE, or -clusters %[2]s for the flows into %[2]s alone; a runner whose file disables %[1]s only emits its heartbeats)", rev, into)
	switch {
	case rs.Held > 0 && rs.HeartbeatsOnly == 0:
		return "Its members hold it paused or stopped: " + resume + ", then run failback again"
	case rs.HeartbeatsOnly > 0 && rs.Held == 0:
		return "Its runners' files disable it: " + enable + ", then run failback again"
	}
	return "Start a runner with the flow enabled and, where its members hold it paused or stopped, resume it: " + enable + "; " + resume + "; then run failback again"
}

// flowMembers reads the live members of a flow (the reverse flow, or
// the forward one) in its status topic's view v at now. A member replicates unless its file disables the
// flow (it only emits heartbeats), it applied PAUSED or STOPPED, or it
// FAILED.
func flowMembers(v *statustopic.View, now time.Time) reverseStatus {
	var rs reverseStatus
	ms := v.Members()
	for _, id := range keysOf(ms) {
		m := ms[id]
		if m.Stale(now) {
			continue
		}
		rs.Live++
		var why string
		switch {
		case m.HeartbeatsOnly || m.State == string(mirror.StateDisabled):
			why = "heartbeats only (its file sets enabled = false)"
			rs.HeartbeatsOnly++
			if m.Applied == statustopic.Paused || m.Applied == statustopic.Stopped {
				// Kept: it holds the flow once a file enables it.
				why += ", target state " + string(m.Applied) + " applied"
				rs.Held++
			}
		case m.Applied != "" && m.Applied != statustopic.Running:
			why = "target state " + string(m.Applied) + " applied"
			rs.Held++
		case m.State == string(mirror.StateFailed) || m.State == string(mirror.StateStopped):
			why = m.State
			if m.Error != "" {
				why += ": " + m.Error
			}
		default:
			rs.Replicating++
			continue
		}
		rs.NotReplicating = append(rs.NotReplicating, fmt.Sprintf("member %s (worker %s): %s", id, orDefault(m.WorkerID, "?"), why))
	}
	return rs
}

// newestHeartbeatPhrase says how old the reverse flow's newest heartbeat on
// cluster alias is, or that it has none there (the zero time), as a clause
// of failback's problem ("its newest heartbeat on A is none" read as if
// "none" were a heartbeat).
func newestHeartbeatPhrase(alias string, t time.Time) string {
	if t.IsZero() {
		return "it has no heartbeat on " + alias
	}
	return fmt.Sprintf("its newest heartbeat on %s is %v old", alias, time.Since(t).Round(time.Second))
}

// flowGroups returns the flow's group selection (groups, groups.exclude).
func flowGroups(f mirror.FlowConfig) (func(string) bool, error) {
	include, exclude := f.Groups, f.GroupsExclude
	if include == nil {
		include = []string{".*"}
	}
	if exclude == nil {
		exclude = mirror.DefaultGroupsExclude
	}
	filter, err := mm2filter.New(f.Name()+".groups", include, f.Name()+".groups.exclude", exclude)
	if err != nil {
		return nil, err
	}
	return filter.Match, nil
}

// newTable returns a tab writer with head printed.
func newTable(w io.Writer, head string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, head)
	return tw
}

// forwardNotFailedOver says why failback refuses to run ("" when it may):
// fs, the live members of the forward flow (from source alias source) in
// its status topic on B, has
// some replicating, and no kmirror failover or failback of it is recorded
// there (the DR record dr, found drFound). Failback moves groups home
// after a failover: while the forward flow replicates, the groups' offsets
// on B are copies of theirs on A (group offset sync), translated back they
// are at or below A's, and committing them would move the groups on A
// backwards (a new user's find: the dry run of a flow never failed over
// said "would commit"). A flow with no live kmirror member (stopped, or
// run by Apache MM2, which writes no status topic) is not refused: nothing
// tells. After a failover or a failback (a run again of it) the DR record
// lets it run.
func forwardNotFailedOver(flow, source, b string, fs reverseStatus, dr statustopic.DRRecord, drFound bool) string {
	if fs.Replicating == 0 || (drFound && len(dr.Groups) > 0) {
		return ""
	}
	return fmt.Sprintf("%[1]s was not failed over: %[3]d of its %[4]d live member(s) replicate it (status topic %[5]s on %[2]s), and no kmirror failover of it is recorded there. "+
		"Failback moves groups home after a failover; while %[1]s replicates, the groups' offsets on %[2]s are copies of theirs at the source, and committing them back there could move the groups backwards. "+
		"Fail over first (kmirror failover -flow '%[1]s'); if you failed over without kmirror, stop the flow (PUT /connectors/%[6]s/stop) and run failback again",
		flow, b, fs.Replicating, fs.Live, statustopic.Topic(source), url.PathEscape(flow))
}
