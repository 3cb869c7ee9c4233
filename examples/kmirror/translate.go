package main

// The translate subcommand, and what translate, failover and failback
// share (the flow of the file, its clusters, the group selection, the exit
// codes):
//
//	kmirror translate -config mm2.properties -flow 'A->B' -groups REGEX [-json] [-records] [-timeout 30s]
//
// It reads the flow's checkpoints on the target (A.checkpoints.internal on
// B) and prints, per consumer group the regex matches (full match) and per
// target partition: the group's source offset, the translated target
// offset (what Java's RemoteClusterUtils.translateOffsets returns), whether
// that translation is exact, safe (with the record kind, run or sync, and
// the bound on records re-read) or unknown (a checkpoint written by Apache
// MM2), the checkpoint's age, and the partitions the group never committed
// on a topic it committed another partition of (RemoteClusterUtils leaves
// them out). It needs only the target: it works when the source is gone.
//
// With -records, a partition whose checkpoint is not exact (safe, or
// unknown: written by MM2) is translated again from the copies on the
// remote topic (remoteclusterutils.RefineFromRecords: kmirror stamps each
// copy's source offset in its provenance header): when they answer
// exactly, the report gives that offset, exact, record kind "record",
// from "record", the checkpoint's offset in checkpoint_offset; otherwise
// record_fallback says why the checkpoint's translation stays. When the
// source answers (within 5s), a never-committed partition the group did
// commit on the source (no offset sync or run covered it yet, so no
// checkpoint) is translated from the copies too, exact or safe,
// checkpoint_offset -1; the source's cluster ID names the copies' last
// hop (else it is taken from the copies).
//
// Exit codes: 0 every partition of every group matched is translated; 1
// no group matched, or some partition was never committed; 2 bad flags or
// configuration; 3 the target unreachable or interrupted.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// Exit codes of translate, failover and failback (verify's).
const (
	drOK          = 0 // done
	drRefused     = 1 // refused, or something unaccounted
	drUsage       = 2 // bad flags or configuration
	drUnreachable = 3 // a cluster unreachable, or interrupted
)

// drFlow is one flow of the file, resolved for the DR commands.
type drFlow struct {
	flow     mirror.FlowConfig
	src, dst mirror.ClusterConfig
	pol      policy.ReplicationPolicy
	groups   *regexp.Regexp
	props    *mirror.Properties
}

// name is "A->B".
func (f *drFlow) name() string { return f.flow.Name() }

// opts returns the client options of c with the role's options.
func clusterOpts(c mirror.ClusterConfig, role []kgo.Opt, extra ...kgo.Opt) []kgo.Opt {
	out := append(append(append([]kgo.Opt{}, c.Client...), role...), extra...)
	return out
}

// drCommon holds the flags every DR command has.
type drCommon struct {
	config  string
	flow    string
	groups  string
	json    bool
	timeout time.Duration
}

func (c *drCommon) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "MM2 dedicated-mode properties `file` (required): the clusters and flows the mirror runs")
	fs.StringVar(&c.flow, "flow", "", "the flow, `source->target` (required when the file has several; quote it: > is a shell redirect)")
	fs.StringVar(&c.groups, "groups", "", "consumer groups, a `regex` (full match, RE2) (required)")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound of each read of a cluster")
}

// parse parses args into fs and checks the common flags.
func (c *drCommon) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Errorf("unexpected argument %q (the properties file is given with -config)", fs.Arg(0))}
	}
	switch {
	case c.config == "":
		return &usageError{errors.New("-config is required (the MM2 properties file the mirror runs)")}
	case c.groups == "":
		return &usageError{errors.New("-groups is required: a regex of the consumer groups (full match), e.g. -groups 'orders-.*' or -groups '.*'")}
	case c.timeout <= 0:
		return &usageError{fmt.Errorf("-timeout %s: must be positive", c.timeout)}
	}
	// Compiled alone first: wrapped, a value such as 'a)|(b' compiles to
	// ^(?:a)|(b)$, which is no full match.
	if _, err := regexp.Compile(c.groups); err != nil {
		return &usageError{fmt.Errorf("-groups %q: %v (RE2 syntax, full match)", c.groups, err)}
	}
	if _, err := regexp.Compile("^(?:" + c.groups + ")$"); err != nil {
		return &usageError{fmt.Errorf("-groups %q: %v (RE2 syntax, full match)", c.groups, err)}
	}
	return nil
}

// load reads the file and resolves the flow (enabled or not: failback
// looks at the reverse flow's state itself).
func (c *drCommon) load() (*drFlow, error) {
	props, err := mirror.LoadProperties(c.config)
	if err != nil {
		return nil, &usageError{err}
	}
	flow, src, dst, err := chooseFlow(props, c.flow)
	if err != nil {
		return nil, err
	}
	d := &drFlow{flow: *flow, props: props, groups: regexp.MustCompile("^(?:" + c.groups + ")$"), src: *src, dst: *dst}
	d.pol = flow.Policy
	if d.pol == nil {
		if d.pol, err = policy.NewDefault(); err != nil {
			return nil, &usageError{err}
		}
	}
	return d, nil
}

// targetClient builds a client of the flow's target.
func (d *drFlow) targetClient(extra ...kgo.Opt) (*kgo.Client, error) {
	return kclient.New(clusterOpts(d.dst, d.dst.Admin, extra...)...)
}

// translateGroups reads the flow's checkpoints on the target, for the
// groups the regex matches.
func (d *drFlow) translateGroups(ctx context.Context, cl *kgo.Client) (map[string][]remoteclusterutils.PartitionTranslation, error) {
	rc := remoteclusterutils.NewClient(cl, remoteclusterutils.WithPolicy(d.pol))
	tr, err := rc.TranslateGroups(ctx, d.flow.Source, d.groups.MatchString)
	if d.flow.DisableCheckpoints && (errors.Is(err, remoteclusterutils.ErrNoCheckpointsTopic) || errors.Is(err, remoteclusterutils.ErrNoCheckpointYet)) {
		// The file says why: "the mirror creates it when its flow starts,
		// so retry" never comes true there (a new user's finding, with MM2
		// files that set emit.checkpoints.enabled = false).
		err = fmt.Errorf("%w; the file disables the flow's checkpoints (%s.emit.checkpoints.enabled = false, or at top level), so none are written: "+
			"set it to true (and restart the members) to translate its groups", err, d.name())
	}
	return tr, err
}

// sourceTopic names the source topic of remote topic t ("" if the policy
// does not parse it).
func (d *drFlow) sourceTopic(t string) string {
	if u, ok := d.pol.UpstreamTopic(t); ok {
		return u
	}
	return ""
}

// partitionReport is one partition of a group in the DR reports.
type partitionReport struct {
	// Topic is the target topic; SourceTopic the source topic it mirrors.
	Topic       string `json:"topic"`
	SourceTopic string `json:"source_topic"`
	Partition   int32  `json:"partition"`
	// SourceOffset is the group's offset on the source the checkpoint
	// translates (-1: never committed).
	SourceOffset int64 `json:"source_offset"`
	// Offset is the translated target offset (translate), or the offset
	// committed or to commit (failover, failback).
	Offset int64 `json:"offset"`
	// From says where Offset comes from: "checkpoint", "record" (the
	// copies, translate -records), "earliest", "latest" (never-committed
	// partitions by choice), or none.
	From string `json:"from,omitempty"`
	// Translation is exact, safe, unknown or none.
	Translation string `json:"translation"`
	// Record is run or sync for kmirror's safe translations; record when
	// -records translated it from the copies (From is then "record").
	Record string `json:"record,omitempty"`
	// CheckpointOffset is the checkpoint's offset when Offset came from
	// the copies instead (-1: the partition had no checkpoint).
	CheckpointOffset int64 `json:"checkpoint_offset,omitempty"`
	// RecordFallback says why -records left the checkpoint's translation
	// of a partition that is not exact.
	RecordFallback string `json:"record_fallback,omitempty"`
	// RereadMax bounds the records a consumer reads again of those the
	// group processed before SourceOffset (-1 unknown).
	RereadMax int64 `json:"reread_max"`
	// CheckpointTime is when the checkpoint was written; CheckpointAgeMs
	// its age at the report.
	CheckpointTime  time.Time `json:"checkpoint_time,omitzero"`
	CheckpointAgeMs int64     `json:"checkpoint_age_ms,omitempty"`
	// NeverCommitted marks a partition the group has no checkpoint for, on
	// a topic it committed another partition of.
	NeverCommitted bool `json:"never_committed,omitempty"`
	// AtLogStart marks a partition the group committed at or before the
	// source log start (failover, planned): no offset sync or run covers
	// such a commit, so no checkpoint translates it; it is committed at
	// the target log start (From earliest).
	AtLogStart bool `json:"at_log_start,omitempty"`
	// CommitError (failover, failback) is the broker's error for this
	// partition's commit when it refused it while committing others of
	// the group (the group's action is then "partial").
	CommitError string `json:"commit_error,omitempty"`
	// Ahead is the group's committed offset on the cluster the command
	// commits on when it is above Offset (failover, failback): its
	// consumers read past the translation there already (an earlier
	// failover or failback, run again), so the partition is not moved
	// back and Offset is not committed. 0: not ahead.
	Ahead int64 `json:"ahead,omitempty"`
	// BelowLogStart (failover, failback) marks a partition whose
	// translation was below its log start on the cluster the command
	// commits on (that cluster's retention removed the records from it
	// on): Offset is the log start. A consumer at the translation would
	// reset by auto.offset.reset, to the log end by default, skipping
	// every record the cluster still holds. In translate, which commits
	// nothing, Offset stays the translation and LogStart is the target
	// partition's log start above it (what failover commits).
	BelowLogStart bool  `json:"below_log_start,omitempty"`
	LogStart      int64 `json:"log_start,omitempty"`
	// Current (failover, failback) is the group's committed offset on the cluster
	// the command commits on, before it commits (absent: none there), and
	// Move what committing Offset does to it (markMoves): "backward" (the
	// consumers read again the records from Offset to Current), "forward"
	// (they skip those from Current to Offset), "none" (Offset is
	// Current) or "kept" (Ahead: not moved back); MoveRecords counts the
	// records between the two. An operator saw only the new offset.
	Current     *int64 `json:"current_offset,omitempty"`
	Move        string `json:"move,omitempty"`
	MoveRecords int64  `json:"move_records,omitempty"`
	// MissingOnTarget marks a checkpoint of a partition the target does
	// not have: its remote topic was deleted, or re-created with fewer
	// partitions, after the checkpoint was written (checkpoints are never
	// deleted). failover does not commit it (Offset -1): no consumer reads
	// the partition there, and the broker refuses the commit.
	MissingOnTarget bool `json:"missing_on_target,omitempty"`
	// OtherLog marks a checkpoint translated for an earlier log of its
	// remote topic (deleted and re-created since; remoteclusterutils'
	// PartitionTranslation.OtherLog): its offset is a position in that
	// log. failover commits the current log's start (From earliest).
	OtherLog bool `json:"other_log,omitempty"`
}

// atLogStart commits the partition at its log start start (found: listed)
// on the cluster the command commits on when its Offset is below it
// (BelowLogStart): that cluster's retention removed the records from it
// on, and a consumer there gets OFFSET_OUT_OF_RANGE and, with
// auto.offset.reset=latest (Kafka's default), skips every record the
// cluster still holds.
func (p *partitionReport) atLogStart(start int64, found bool) {
	if found && p.Offset >= 0 && p.Offset < start {
		p.Offset, p.BelowLogStart = start, true
	}
}

func newPartitionReport(d *drFlow, p remoteclusterutils.PartitionTranslation, now time.Time) partitionReport {
	r := partitionReport{Topic: p.Topic, SourceTopic: d.sourceTopic(p.Topic), Partition: p.Partition,
		SourceOffset: p.SourceOffset, Offset: p.Offset, Translation: string(p.Translation), Record: p.Record,
		RereadMax: p.Reread, CheckpointTime: p.CheckpointTime, NeverCommitted: p.NeverCommitted,
		CheckpointOffset: p.CheckpointOffset, RecordFallback: p.RecordFallback, MissingOnTarget: p.MissingOnTarget,
		OtherLog: p.EarlierLog()}
	if p.BelowLogStart && p.Offset < p.LogStart { // (RefineFromRecords may have moved Offset above it)
		// translate showed these as plain "exact", a position the target
		// no longer holds (a new user's finding): failover marks them.
		r.BelowLogStart, r.LogStart = true, p.LogStart
	}
	if !p.NeverCommitted {
		r.From = "checkpoint"
		if p.Record == remoteclusterutils.KindRecord {
			r.From = "record"
		}
		if !p.CheckpointTime.IsZero() { // zero: translated from the copies without a checkpoint
			r.CheckpointAgeMs = max(0, now.Sub(p.CheckpointTime).Milliseconds())
		}
	}
	return r
}

// translateReport is what translate prints (-json: this shape).
type translateReport struct {
	Flow             string        `json:"flow"`
	CheckpointsTopic string        `json:"checkpoints_topic"`
	At               time.Time     `json:"at"`
	Groups           []groupReport `json:"groups"`
	Summary          summary       `json:"summary"`
}

// groupReport is one group of a DR report.
type groupReport struct {
	Group string `json:"group"`
	// Action (failover, failback): "commit" (dry run), "committed",
	// "refused", "partial" (some partitions committed, the others refused:
	// their CommitError), or "none"; Reason why refused or partial.
	Action string `json:"action,omitempty"`
	Reason string `json:"reason,omitempty"`
	// LastCheckpoint is the newest checkpoint time of the group.
	LastCheckpoint time.Time `json:"last_checkpoint,omitzero"`
	// RPOMs (unplanned failover) is the time from LastCheckpoint to the
	// detection of the failure: an upper bound of what the group processed
	// on the source that a consumer on the target processes again.
	RPOMs      int64             `json:"rpo_ms,omitempty"`
	Partitions []partitionReport `json:"partitions"`
}

// summary counts the partitions of a report.
type summary struct {
	Groups         int `json:"groups"`
	Partitions     int `json:"partitions"`
	Exact          int `json:"exact"`
	Safe           int `json:"safe"`
	Unknown        int `json:"unknown"`
	NeverCommitted int `json:"never_committed"`
	// FromRecords counts the exact partitions translated from the copies
	// (translate -records).
	FromRecords int `json:"from_records,omitempty"`
	// AtLogStart counts the partitions committed on the source at or
	// before its log start (failover, planned), committed at the target
	// log start: no translation exists or is needed.
	AtLogStart int `json:"at_log_start,omitempty"`
	// MissingOnTarget counts the checkpoints of partitions the target
	// does not have (partitionReport.MissingOnTarget).
	MissingOnTarget int `json:"missing_on_target,omitempty"`
}

func summarize(gs []groupReport) summary {
	s := summary{Groups: len(gs)}
	for _, g := range gs {
		for _, p := range g.Partitions {
			s.Partitions++
			switch {
			case p.NeverCommitted:
				s.NeverCommitted++
			case p.MissingOnTarget:
				s.MissingOnTarget++
			case p.AtLogStart:
				s.AtLogStart++
			case p.Translation == string(remoteclusterutils.TranslationExact):
				s.Exact++
				if p.Record == remoteclusterutils.KindRecord {
					s.FromRecords++
				}
			case p.Translation == string(remoteclusterutils.TranslationSafe):
				s.Safe++
			default:
				s.Unknown++
			}
		}
	}
	return s
}

func (s summary) String() string {
	exact := fmt.Sprint(s.Exact)
	if s.FromRecords > 0 {
		exact = fmt.Sprintf("%d (%d from the copies)", s.Exact, s.FromRecords)
	}
	out := fmt.Sprintf("%d group(s), %d partition(s): %s exact, %d safe, %d unknown (written by MM2), %d never committed",
		s.Groups, s.Partitions, exact, s.Safe, s.Unknown, s.NeverCommitted)
	if s.AtLogStart > 0 {
		out += fmt.Sprintf(", %d committed at the source log start", s.AtLogStart)
	}
	if s.MissingOnTarget > 0 {
		out += fmt.Sprintf(", %d of partitions missing on the target (not committed)", s.MissingOnTarget)
	}
	return out
}

// groupReports builds the per-group reports of translations, sorted by
// group.
func groupReports(d *drFlow, tr map[string][]remoteclusterutils.PartitionTranslation, now time.Time) []groupReport {
	out := make([]groupReport, 0, len(tr))
	for g, ps := range tr {
		gr := groupReport{Group: g, Partitions: []partitionReport{}}
		for _, p := range ps {
			gr.Partitions = append(gr.Partitions, newPartitionReport(d, p, now))
			if p.CheckpointTime.After(gr.LastCheckpoint) {
				gr.LastCheckpoint = p.CheckpointTime
			}
		}
		out = append(out, gr)
	}
	sortGroups(out)
	return out
}

func sortGroups(gs []groupReport) {
	for i := 1; i < len(gs); i++ {
		for j := i; j > 0 && gs[j].Group < gs[j-1].Group; j-- {
			gs[j], gs[j-1] = gs[j-1], gs[j]
		}
	}
}

// translation renders a partition's translation for the tables.
func (p partitionReport) translation() string {
	switch {
	case p.NeverCommitted:
		return "NEVER COMMITTED"
	case p.MissingOnTarget:
		return p.Translation + ", PARTITION MISSING ON THE TARGET (remote topic deleted or re-created with fewer partitions; not committed)"
	case p.OtherLog:
		return p.Translation + ", OF AN EARLIER LOG OF THE TOPIC (re-created since; failover commits the current log's start)"
	case p.AtLogStart:
		return "AT SOURCE LOG START"
	case p.BelowLogStart && p.Offset < p.LogStart: // translate
		return fmt.Sprintf("%s, BELOW THE TARGET LOG START %d (failover commits the start)", p.Translation, p.LogStart)
	case p.BelowLogStart:
		return p.Translation + ", BELOW THE LOG START (its start committed)"
	case p.Translation == string(remoteclusterutils.TranslationSafe) && p.RereadMax >= 0:
		return fmt.Sprintf("safe (%s), re-read <= %d", p.Record, p.RereadMax)
	case p.Translation == string(remoteclusterutils.TranslationSafe):
		return fmt.Sprintf("safe (%s), re-read bound unknown", p.Record)
	case p.Translation == string(remoteclusterutils.TranslationUnknown):
		return "unknown (no kmirror-translation header: written by MM2)"
	case p.Record == remoteclusterutils.KindRecord && p.CheckpointOffset < 0:
		return "exact (record; no checkpoint)"
	case p.Record == remoteclusterutils.KindRecord:
		return fmt.Sprintf("exact (record; checkpoint %d)", p.CheckpointOffset)
	}
	return p.Translation
}

func offsetText(o int64) string {
	if o < 0 {
		return "-"
	}
	return fmt.Sprint(o)
}

func ageText(p partitionReport) string {
	if p.NeverCommitted || p.CheckpointTime.IsZero() {
		return "-"
	}
	return (time.Duration(p.CheckpointAgeMs) * time.Millisecond).Round(100 * time.Millisecond).String()
}

// writeTable prints the groups' partitions as a table: translate's, or,
// with target (the target cluster's alias), failover's plan, with each
// partition's offset on the target now (NOW ON <target>), the one to
// commit and the move.
func writeTable(w io.Writer, gs []groupReport, target string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "GROUP\tTOPIC\tPARTITION\tSOURCE OFFSET\tTARGET OFFSET\tTRANSLATION\tCHECKPOINT AGE"
	if target != "" {
		head = "GROUP\tTOPIC\tPARTITION\tSOURCE OFFSET\tNOW ON " + target + "\tOFFSET\tMOVE\tFROM\tTRANSLATION\tCHECKPOINT AGE"
	}
	fmt.Fprintln(tw, head)
	for _, g := range gs {
		for _, p := range g.Partitions {
			if target != "" {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Group, p.Topic, p.Partition, offsetText(p.SourceOffset),
					currentText(p), offsetText(p.Offset), moveText(p), fromText(p), p.translation(), ageText(p))
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", g.Group, p.Topic, p.Partition, offsetText(p.SourceOffset),
				offsetText(p.Offset), p.translation(), ageText(p))
		}
	}
	tw.Flush()
}

// fromText is how the DR commands' tables show where a partition's
// offset comes from: "kept: at N, ahead" for one not moved back
// (keepAhead).
func fromText(p partitionReport) string {
	if p.Ahead > 0 {
		return fmt.Sprintf("kept: at %d, ahead", p.Ahead)
	}
	return orDash(p.From)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeReportJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// drError prints err for command cmd and returns its exit code: 2 for a
// usage error, else code.
func drError(stderr io.Writer, cmd string, err error, code int) int {
	fmt.Fprintf(stderr, "kmirror %s: %v\n", cmd, err)
	var ue *usageError
	if errors.As(err, &ue) {
		return drUsage
	}
	return code
}

// translateMain runs `kmirror translate args...` and returns the exit code.
func translateMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kmirror translate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c drCommon
	c.register(fs)
	records := fs.Bool("records", false, "translate the partitions whose checkpoint is not exact again from the copies' source offsets (provenance header), and, when the source answers, never-committed partitions the group committed there; report those answered from \"record\"")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: kmirror translate -config FILE [-flow 'A->B'] -groups REGEX [-json] [-records]\n\n"+
			"Prints each group's translated offsets on the target, per partition: source offset, target offset,\n"+
			"exact, safe (with the bound on records re-read) or unknown, checkpoint age; and the partitions\n"+
			"the group never committed. Needs only the target cluster. With -records, partitions whose\n"+
			"checkpoint is not exact are translated again from the copies' source offsets. Exit codes: 0 every\n"+
			"partition translated, 1 a partition never committed, no group matched or no checkpoints topic of the\n"+
			"flow on the target, 2 bad flags or configuration, 3 the target unreachable or interrupted.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := c.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return drOK
		}
		return drError(stderr, "translate", err, drUsage)
	}
	d, err := c.load()
	if err != nil {
		return drError(stderr, "translate", err, drUsage)
	}
	cl, err := d.targetClient()
	if err != nil {
		return drError(stderr, "translate", err, drUsage)
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := refusedBy(rctx, d.dst, "target", c.timeout); err != nil {
		return drError(stderr, "translate", fmt.Errorf("reading the checkpoints of %s on %s: %w", d.name(), d.dst.Alias, err), drUnreachable)
	}
	tr, err := d.translateGroups(rctx, cl)
	if err != nil {
		code := drUnreachable
		if errors.Is(err, remoteclusterutils.ErrNoCheckpointsTopic) {
			code = drRefused // the target answered: no checkpoints of this flow there
		}
		return drError(stderr, "translate", fmt.Errorf("reading the checkpoints of %s on %s: %w", d.name(), d.dst.Alias, err), code)
	}
	if *records {
		// The source, when it answers, gives its cluster ID and the
		// groups' commits of never-committed partitions; without it the ID
		// is taken from the copies (the target is all translate needs).
		srcID, commits, err := d.sourceCommits(rctx, tr, min(c.timeout, sourceProbeTimeout))
		if err != nil {
			fmt.Fprintf(stderr, "kmirror translate: the source %s did not answer (%v): never-committed partitions are not translated from the copies, "+
				"the source cluster ID is taken from them\n", d.src.Alias, err)
		}
		if tr, err = remoteclusterutils.RefineFromRecords(rctx, cl, srcID, tr, commits); err != nil {
			return drError(stderr, "translate", fmt.Errorf("reading the copies on %s: %w", d.dst.Alias, err), drUnreachable)
		}
	}
	now := time.Now()
	rep := translateReport{Flow: d.name(), CheckpointsTopic: d.pol.CheckpointsTopic(d.flow.Source), At: now.UTC(),
		Groups: groupReports(d, tr, now)}
	if d.flow.DisableCheckpoints && len(rep.Groups) > 0 {
		// Checkpoints written before the file disabled them read as
		// current (exit 0), the age column the only hint (an operator's
		// find).
		fmt.Fprintf(stderr, "kmirror translate: the file disables the flow's checkpoints (%s.emit.checkpoints.enabled = false, or at top level): "+
			"these were written before, and stay where they are while the groups move on (see each checkpoint's age)\n", d.name())
	}
	rep.Summary = summarize(rep.Groups)
	if c.json {
		if err := writeReportJSON(stdout, rep); err != nil {
			fmt.Fprintln(stderr, "kmirror translate:", err)
		}
	} else {
		if len(rep.Groups) > 0 { // else stderr says why, with no empty table (a new user's finding)
			writeTable(stdout, rep.Groups, "")
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%s: %s\n", rep.Flow, rep.Summary)
	}
	switch {
	case len(rep.Groups) == 0:
		fmt.Fprintf(stderr, "kmirror translate: no group matching %q has a checkpoint in %s on %s "+
			"(groups.exclude or groups of the flow, no commit on a replicated topic, or no emission yet)%s\n",
			c.groups, rep.CheckpointsTopic, d.dst.Alias, d.checkpointedGroups(rctx, cl))
		return drRefused
	case rep.Summary.NeverCommitted > 0:
		fmt.Fprintf(stderr, "kmirror translate: %d partition(s) never committed: a consumer with auto.offset.reset=none does not read them; "+
			"kmirror failover -uncommitted earliest|latest commits them\n", rep.Summary.NeverCommitted)
		return drRefused
	}
	return drOK
}

// checkpointedGroups says which groups have a checkpoint of the flow on
// its target ("; the groups checkpointed there: a, b"), for a -groups that
// matched none; empty when none has or they cannot be read.
func (d *drFlow) checkpointedGroups(ctx context.Context, cl *kgo.Client) string {
	all, err := remoteclusterutils.NewClient(cl, remoteclusterutils.WithPolicy(d.pol)).TranslateGroups(ctx, d.flow.Source, nil)
	if err != nil || len(all) == 0 {
		return ""
	}
	names := groupNames(all)
	slices.Sort(names)
	const most = 20
	more := ""
	if len(names) > most {
		names, more = names[:most], fmt.Sprintf(" (and %d more)", len(names)-most)
	}
	return "; the groups checkpointed there: " + strings.Join(names, ", ") + more
}

// refusedBy probes cluster c (what is "source" or "target") before a DR
// command reads it (kclient.Refusal), and returns its refusal worded by
// kclient.Unreachable, naming the keys to check and never a secret: a
// cluster refusing connections, or closing them (a security.protocol it
// does not speak, SASL credentials it rejects), answered only after
// -timeout (30 s), with "context deadline exceeded" and no hint
// (operators' finds), or said EOF with no hint.
func refusedBy(ctx context.Context, c mirror.ClusterConfig, what string, timeout time.Duration) error {
	if err := kclient.Refusal(ctx, min(timeout, kclient.ProbeTimeout), clusterOpts(c, c.Admin)...); err != nil {
		return kclient.Unreachable(what, c.Alias, fmt.Errorf("cluster %s: %w", c.Alias, err))
	}
	return nil
}

// sourceProbeTimeout bounds translate -records' reads of the source.
const sourceProbeTimeout = 5 * time.Second

// sourceCommits reads, on the flow's source within timeout, its cluster ID
// and the committed offsets of the groups of tr that have never-committed
// partitions, keyed group -> remote topic -> partition (translate
// -records). The error says the source did not answer.
func (d *drFlow) sourceCommits(ctx context.Context, tr map[string][]remoteclusterutils.PartitionTranslation, timeout time.Duration) (string, map[string]map[string]map[int32]int64, error) {
	cl, err := kclient.New(clusterOpts(d.src, d.src.Admin, kgo.RetryTimeout(timeout))...)
	if err != nil {
		return "", nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return "", nil, err
	}
	var groups []string
	for g, ps := range tr {
		for _, p := range ps {
			if p.NeverCommitted {
				groups = append(groups, g)
				break
			}
		}
	}
	if len(groups) == 0 {
		return meta.Cluster, nil, nil
	}
	out := map[string]map[string]map[int32]int64{}
	for g, r := range adm.FetchManyOffsets(ctx, groups...) {
		if r.Err != nil {
			return meta.Cluster, nil, fmt.Errorf("group %s: %w", g, r.Err)
		}
		r.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 {
				return
			}
			remote := d.pol.FormatRemoteTopic(d.flow.Source, o.Topic)
			if out[g] == nil {
				out[g] = map[string]map[int32]int64{}
			}
			if out[g][remote] == nil {
				out[g][remote] = map[int32]int64{}
			}
			out[g][remote][o.Partition] = o.At
		})
	}
	return meta.Cluster, out, nil
}

// drCommands are the DR subcommands by name.
var drCommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"translate": translateMain,
	"failover":  failoverMain,
	"failback":  failbackMain,
}

// subcommand returns args[1], or "".
func subcommand(args []string) string {
	if len(args) > 1 {
		return args[1]
	}
	return ""
}
