package verify

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// Range is a run of source records that follow each other in the source
// partition read with read_committed, from offset From to offset To
// inclusive: Records of them. Offsets inside the range that are not
// records (transaction markers, aborted records, offsets removed by
// compaction) are not counted.
type Range struct {
	From    int64 `json:"from"`
	To      int64 `json:"to"`
	Records int64 `json:"records"`
}

// String returns "From-To (N records)", or "From" for one record.
func (r Range) String() string {
	if r.From == r.To {
		return fmt.Sprintf("%d", r.From)
	}
	return fmt.Sprintf("%d-%d (%d records)", r.From, r.To, r.Records)
}

// Replay is a run of duplicates on the target: starting at target offset
// TargetOffset, Records target records copy the source records from
// SourceOffset on a second (or further) time, as a mirror does after a
// crash when it resumes from its last stored position.
type Replay struct {
	TargetOffset int64 `json:"target_offset"`
	SourceOffset int64 `json:"source_offset"`
	Records      int64 `json:"records"`
}

// Alteration is a target record that stands where the source record at
// SourceOffset belongs but differs from it in Fields (a subset of "key",
// "value", "headers", "timestamp").
type Alteration struct {
	SourceOffset int64    `json:"source_offset"`
	TargetOffset int64    `json:"target_offset"`
	Fields       []string `json:"fields"`
}

// Displaced is a target record copied out of order: the copy of the source
// record at SourceOffset sits at TargetOffset, after copies of source
// records that follow it.
type Displaced struct {
	SourceOffset int64 `json:"source_offset"`
	TargetOffset int64 `json:"target_offset"`
}

// StampMap is the source->target offset mapping the target records read
// carry: kmirror stamps each copy's source offset into its provenance
// header ("kmirror-provenance" ending with "#<offset>"); exact translation
// from the data (remoteclusterutils.TranslateFromRecords) relies on it, and
// verify checks it against the content match.
type StampMap struct {
	// Stamped counts the target records read that carry a source offset;
	// Unstamped those that do not (written by MM2, by a kmirror with tail
	// resume off, or by other producers), or whose offset is another
	// cluster's: the header's last ID is not the source's cluster ID (an
	// MM2 copy of a record kmirror had copied to the source from a third
	// cluster keeps that cluster's offset).
	Stamped   int64 `json:"stamped"`
	Unstamped int64 `json:"unstamped"`
	// Runs is the mapping, compactly: maximal runs of stamped target
	// records read one after the other (no unstamped record between) whose
	// source offsets increase.
	Runs []StampRun `json:"runs,omitempty"`
	// Disagreements counts stamped target records whose content matched a
	// source record at another offset than the one they carry (or stood,
	// altered, where another one belongs); DisagreementRecords lists them.
	Disagreements       int64               `json:"disagreements"`
	DisagreementRecords []StampDisagreement `json:"disagreement_records,omitempty"`
}

// StampRun is a run of stamped target records: the copies of source
// offsets SourceFrom to SourceTo (increasing, gaps allowed) at target
// offsets TargetFrom to TargetTo, Records of them.
type StampRun struct {
	SourceFrom int64 `json:"source_from"`
	SourceTo   int64 `json:"source_to"`
	TargetFrom int64 `json:"target_from"`
	TargetTo   int64 `json:"target_to"`
	Records    int64 `json:"records"`
}

// String returns "source A-B -> target C-D (N records)".
func (r StampRun) String() string {
	if r.Records == 1 {
		return fmt.Sprintf("source %d -> target %d", r.SourceFrom, r.TargetFrom)
	}
	return fmt.Sprintf("source %d-%d -> target %d-%d (%d records)", r.SourceFrom, r.SourceTo, r.TargetFrom, r.TargetTo, r.Records)
}

// StampDisagreement is a target record at TargetOffset that carries the
// source offset Stamped while its content matched the source record at
// Matched.
type StampDisagreement struct {
	TargetOffset int64 `json:"target_offset"`
	Stamped      int64 `json:"stamped"`
	Matched      int64 `json:"matched"`
}

// Side describes what was read of one side of a partition. Offsets are
// those listed when the partition's comparison started.
type Side struct {
	// LogStart is the log start offset: records below it were deleted
	// (retention, DeleteRecords) and cannot be compared.
	LogStart int64 `json:"log_start"`
	// End is the last stable offset (the end of a read_committed read).
	End int64 `json:"end"`
	// From is the first offset read.
	From int64 `json:"from"`
	// To is one past the last offset read (it passes End on the source when
	// newer records had to be read to recognize the target's newest copies,
	// and on the target when the comparison waited for the mirror to catch
	// up).
	To int64 `json:"to"`
}

// PartitionReport is the comparison of one source partition with the same
// partition of its remote topic.
//
// Source records of the window split into Matched + Missing +
// DeletedOnTarget == Compared, plus ProvenanceSkipped records not compared
// (the flow does not copy them). Target records read split into copies of
// window records (first copies, Duplicated, OutOfOrder and Altered ones),
// TargetOutsideWindow, TargetLeadIn, TargetOriginals, CompactedOnSource
// and Unexpected.
type PartitionReport struct {
	// Partition is the partition number, the same on both sides.
	Partition int32 `json:"partition"`
	// Source and Target say what was read on each side.
	Source Side `json:"source"`
	Target Side `json:"target"`
	// WindowFrom is the first source offset of the compared window: source
	// records from here to Source.End are expected on the target. Records
	// between Source.From and WindowFrom were read only to recognize
	// replays that reach back before the window.
	WindowFrom int64 `json:"window_from"`
	// NotCompared is set when source records that still exist were left out
	// because the target deleted their copies: the target's log start is
	// above 0 and the comparison started MaxReplay records before the
	// source record the target's oldest record copies, placed by its
	// provenance offset or, unstamped, its timestamp (not on a remote topic
	// with LogAppendTime, whose timestamps are the copies' own: there the
	// source is read from its start).
	NotCompared *Range `json:"not_compared,omitempty"`
	// TargetFirstMatch is the target offset of the first target record
	// recognized as a copy of a source record read, -1 if none.
	TargetFirstMatch int64 `json:"target_first_match"`

	// Compared counts the source records of the window expected on the
	// target.
	Compared int64 `json:"compared"`
	// ProvenanceSkipped counts the source records of the window that are
	// not expected on the target and so not compared: kmirror's provenance
	// check, the one the flow applies, does not copy them, as their
	// kmirror-provenance header lists the target cluster (the flow back of
	// an active-active pair with the identity policy copied them from
	// there) or the source itself, or the Redpanda migrator's header names
	// either. Only when both clusters report distinct cluster IDs.
	ProvenanceSkipped int64 `json:"provenance_skipped"`
	// Matched counts window records found on the target (at least once).
	Matched int64 `json:"matched"`
	// Missing counts window records not found on the target; MissingRanges
	// lists their offsets.
	Missing       int64   `json:"missing"`
	MissingRanges []Range `json:"missing_ranges,omitempty"`
	// MissingAfterLastCopied counts the missing records that follow the
	// newest source record found on the target: records the mirror had not
	// copied (yet) when the target was read.
	MissingAfterLastCopied int64 `json:"missing_after_last_copied"`
	// DeletedOnTarget counts window records before the first one found on
	// a target whose log start is above 0: their copies were deleted by
	// retention (or DeleteRecords) on the target, so they are not missing.
	DeletedOnTarget       int64   `json:"deleted_on_target"`
	DeletedOnTargetRanges []Range `json:"deleted_on_target_ranges,omitempty"`

	// TargetRecords counts the target records read.
	TargetRecords int64 `json:"target_records"`
	// TargetLeadIn counts target records before the first copy of a
	// window record that match no source record read: copies of source
	// records before those read (the window and the context before it),
	// including replays before the window that reached back further than
	// the context, or copies of records the source deleted (its log start
	// is above 0).
	TargetLeadIn int64 `json:"target_lead_in"`
	// TargetOriginals counts target records written on the target, not
	// copied there: a ProvenanceSkipped source record (read before or with
	// the copies around it) is their copy, made by the flow back.
	TargetOriginals int64 `json:"target_originals"`
	// TargetOutsideWindow counts target records that copy source records
	// read outside the window (before it, to recognize replays, or after
	// it, produced after the comparison started).
	TargetOutsideWindow int64 `json:"target_outside_window"`
	// Duplicated counts target records that copy a window record already
	// copied; Replays says where each run of duplicates starts.
	Duplicated int64    `json:"duplicated"`
	Replays    []Replay `json:"replays,omitempty"`
	// Altered counts target records that stand where a window record
	// belongs but differ from it in some field.
	Altered     int64        `json:"altered"`
	Alterations []Alteration `json:"alterations,omitempty"`
	// OutOfOrder counts copies that come after copies of later source
	// records (they fill a hole left behind).
	OutOfOrder        int64       `json:"out_of_order"`
	OutOfOrderRecords []Displaced `json:"out_of_order_records,omitempty"`
	// Unexpected counts target records after the first copy of a window
	// record that copy no source record read and resemble no expected one
	// (every field differs), or that stand right before the exact copy of
	// the record they resembled (written into the remote topic between two
	// copies); UnexpectedOffsets lists their target offsets.
	Unexpected        int64   `json:"unexpected"`
	UnexpectedOffsets []int64 `json:"unexpected_offsets,omitempty"`
	// CompactedOnSource counts target records that copy source records
	// compaction removed since (a compacted source topic): each stands
	// where the source partition has a hole in its offsets and carries a
	// source offset in that hole or, without one, the key of a later
	// source record. They are no difference.
	CompactedOnSource int64 `json:"compacted_on_source"`
	// Stamps is the source->target offset mapping the target records read
	// carry in their provenance headers; nil when none carries one.
	Stamps *StampMap `json:"stamps,omitempty"`
	// DetailsTruncated is set when a list above was cut at
	// Config.MaxDetails entries (the counts stay exact).
	DetailsTruncated bool `json:"details_truncated,omitempty"`
	// Error is set when the partition could not be compared to the end
	// (the counts cover what was read).
	Error string `json:"error,omitempty"`
}

// TopicReport is the comparison of one source topic with its remote topic.
type TopicReport struct {
	// Topic is the source topic; Remote its name on the target, from the
	// replication policy.
	Topic  string `json:"topic"`
	Remote string `json:"remote_topic"`
	// TimestampsCompared is false when the remote topic has
	// message.timestamp.type=LogAppendTime: the target broker stamps
	// records with its own clock, so source timestamps are not kept.
	TimestampsCompared bool `json:"timestamps_compared"`
	// Notes explain what the comparison could not check on this topic.
	Notes      []string          `json:"notes,omitempty"`
	Partitions []PartitionReport `json:"partitions"`
	// Error is set when the topic could not be compared at all.
	Error string `json:"error,omitempty"`
}

// Totals sums the partition reports.
type Totals struct {
	Topics                 int   `json:"topics"`
	Partitions             int   `json:"partitions"`
	Compared               int64 `json:"compared"`
	ProvenanceSkipped      int64 `json:"provenance_skipped"`
	Matched                int64 `json:"matched"`
	Missing                int64 `json:"missing"`
	MissingAfterLastCopied int64 `json:"missing_after_last_copied"`
	DeletedOnTarget        int64 `json:"deleted_on_target"`
	TargetRecords          int64 `json:"target_records"`
	TargetLeadIn           int64 `json:"target_lead_in"`
	TargetOriginals        int64 `json:"target_originals"`
	TargetOutsideWindow    int64 `json:"target_outside_window"`
	Duplicated             int64 `json:"duplicated"`
	Altered                int64 `json:"altered"`
	OutOfOrder             int64 `json:"out_of_order"`
	Unexpected             int64 `json:"unexpected"`
	CompactedOnSource      int64 `json:"compacted_on_source"`
	// StampDisagreements sums the partitions' Stamps.Disagreements.
	StampDisagreements int64 `json:"stamp_disagreements"`
	// Errors counts topics and partitions that could not be compared.
	Errors int `json:"errors"`
}

// Report is the result of [Run].
type Report struct {
	// Source and Target are the cluster aliases compared.
	Source string `json:"source"`
	Target string `json:"target"`
	// Window describes the compared window ("whole partitions", "last N
	// records per partition", "since <time>").
	Window      string `json:"window"`
	ExactlyOnce bool   `json:"exactly_once"`
	// IgnoredHeaders are the header keys left out of the comparison.
	IgnoredHeaders []string `json:"ignored_headers"`
	// Started is when Run started; Elapsed how long it took
	// (nanoseconds in JSON).
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// FlowState is the flow's target state as its status topic on the
	// target records it (the state `kmirror failover`, Connect's
	// PUT /connectors/{name}/stop or pause, or Mirror.SetTargetState
	// wrote); nil when the topic holds none (a flow never stopped or
	// paused, or one Apache MM2 runs).
	FlowState *FlowState `json:"flow_state,omitempty"`
	// Topics holds one report per source topic, sorted by name.
	Topics []TopicReport `json:"topics"`
	Totals Totals        `json:"totals"`
}

// FlowState is a flow's target state read by [Run] (KIP-875's connector
// target state: RUNNING, PAUSED or STOPPED). A flow that is not RUNNING
// copies no records: those the source took after At are missing on the
// target until it runs again, which the report counts as any other missing
// record.
type FlowState struct {
	// State is "RUNNING", "PAUSED" or "STOPPED"; empty when Error is set.
	State string `json:"state,omitempty"`
	// At is when the state was written; By who wrote it (a worker id, or a
	// command such as "kmirror failover"); Reason the writer's reason.
	At     time.Time `json:"at,omitzero"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
	// Error says why the status topic could not be read (an ACL without
	// READ on it, for example); the comparison does not depend on it.
	Error string `json:"error,omitempty"`
}

// line returns the report's text line for s.
func (s *FlowState) line() string {
	if s.Error != "" {
		return "flow state: unknown (" + s.Error + ")"
	}
	var b strings.Builder
	b.WriteString("flow state: " + s.State)
	if !s.At.IsZero() {
		b.WriteString(" since " + s.At.UTC().Format(time.RFC3339))
	}
	if s.By != "" {
		b.WriteString(" by " + s.By)
	}
	if s.Reason != "" {
		b.WriteString(" (" + s.Reason + ")")
	}
	if s.State != string(statustopic.Running) {
		b.WriteString(": the flow copies no records, so those the source took since are missing on the target until it runs again")
	}
	return b.String()
}

// Mismatch reports whether the target differs from the source: records
// missing, altered, out of order or unexpected, or (with ExactlyOnce)
// duplicated.
func (r *Report) Mismatch() bool {
	t := r.Totals
	return t.Missing > 0 || t.Altered > 0 || t.OutOfOrder > 0 || t.Unexpected > 0 || (r.ExactlyOnce && t.Duplicated > 0)
}

// Incomplete reports whether some topic or partition could not be
// compared (its Error is set).
func (r *Report) Incomplete() bool { return r.Totals.Errors > 0 }

func (r *Report) total() {
	t := Totals{Topics: len(r.Topics)}
	for _, tr := range r.Topics {
		if tr.Error != "" {
			t.Errors++
		}
		for _, p := range tr.Partitions {
			t.Partitions++
			t.Compared += p.Compared
			t.ProvenanceSkipped += p.ProvenanceSkipped
			t.Matched += p.Matched
			t.Missing += p.Missing
			t.MissingAfterLastCopied += p.MissingAfterLastCopied
			t.DeletedOnTarget += p.DeletedOnTarget
			t.TargetRecords += p.TargetRecords
			t.TargetLeadIn += p.TargetLeadIn
			t.TargetOriginals += p.TargetOriginals
			t.TargetOutsideWindow += p.TargetOutsideWindow
			t.Duplicated += p.Duplicated
			t.Altered += p.Altered
			t.OutOfOrder += p.OutOfOrder
			t.Unexpected += p.Unexpected
			t.CompactedOnSource += p.CompactedOnSource
			if p.Stamps != nil {
				t.StampDisagreements += p.Stamps.Disagreements
			}
			if p.Error != "" {
				t.Errors++
			}
		}
	}
	r.Totals = t
}

// WriteText writes r for a terminal: one table row per partition, then
// the details of every difference, the notes, and a one-line verdict.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	eo := "off (duplicates allowed)"
	if r.ExactlyOnce {
		eo = "on (duplicates fail)"
	}
	fmt.Fprintf(&b, "verify %s->%s: %s; exactly-once: %s; ignored headers: %s\n", r.Source, r.Target, r.Window, eo, orNone(r.IgnoredHeaders))
	if r.FlowState != nil {
		b.WriteString(r.FlowState.line() + "\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "topic\tremote topic\tpart\twindow from\tsource end\ttarget read from\ttarget end\tcompared\tmissing\tdeleted on target\tduplicated\taltered\tout of order\tunexpected\t")
	for _, tr := range r.Topics {
		for _, p := range tr.Partitions {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", tr.Topic, tr.Remote, p.Partition,
				p.WindowFrom, p.Source.End, p.Target.From, p.Target.To,
				p.Compared, p.Missing, p.DeletedOnTarget, p.Duplicated, p.Altered, p.OutOfOrder, p.Unexpected)
		}
	}
	t := r.Totals
	fmt.Fprintf(tw, "total\t\t%d\t\t\t\t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t.Partitions, t.Compared, t.Missing, t.DeletedOnTarget, t.Duplicated, t.Altered, t.OutOfOrder, t.Unexpected)
	tw.Flush()

	var details []string
	for _, tr := range r.Topics {
		if tr.Error != "" {
			details = append(details, fmt.Sprintf("%s: not compared: %s", tr.Topic, tr.Error))
		}
		for _, p := range tr.Partitions {
			details = append(details, p.details(tr.Topic, tr.Remote)...)
		}
	}
	if len(details) > 0 {
		b.WriteString("\n")
		for _, d := range details {
			b.WriteString(d)
			b.WriteString("\n")
		}
	}
	var notes []string
	for _, tr := range r.Topics {
		for _, n := range tr.Notes {
			notes = append(notes, tr.Topic+": "+n)
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range notes {
			b.WriteString("  " + n + "\n")
		}
	}
	b.WriteString("\n" + r.Verdict() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Verdict is a one-line summary: "OK: ..." or "MISMATCH: ..." or
// "INCOMPLETE: ...".
func (r *Report) Verdict() string {
	t := r.Totals
	var bad []string
	add := func(n int64, what string) {
		if n > 0 {
			bad = append(bad, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(t.Missing, "missing")
	add(t.Altered, "altered")
	add(t.OutOfOrder, "out of order")
	add(t.Unexpected, "unexpected")
	if r.ExactlyOnce {
		add(t.Duplicated, "duplicated (exactly-once)")
	}
	errs := ""
	if t.Errors > 0 {
		errs = fmt.Sprintf("; %d topic(s)/partition(s) not compared", t.Errors)
	}
	elapsed := r.Elapsed.Round(time.Millisecond)
	switch {
	case len(bad) > 0:
		return fmt.Sprintf("MISMATCH: %s of %d source records compared%s (%s)", strings.Join(bad, ", "), t.Compared, errs, elapsed)
	case t.Errors > 0:
		return fmt.Sprintf("INCOMPLETE: nothing differs in what was read, but %d topic(s)/partition(s) could not be compared (%s)", t.Errors, elapsed)
	}
	dup := ""
	if t.Duplicated > 0 {
		dup = fmt.Sprintf(", %d duplicates (allowed at least once)", t.Duplicated)
	}
	del := ""
	if t.DeletedOnTarget > 0 {
		del = fmt.Sprintf(", %d deleted on the target by retention", t.DeletedOnTarget)
	}
	if t.ProvenanceSkipped > 0 {
		del += fmt.Sprintf(", %d not expected (they came from the target: provenance)", t.ProvenanceSkipped)
	}
	return fmt.Sprintf("OK: %d source records compared in %d partition(s), none missing%s%s (%s)", t.Compared, t.Partitions, dup, del, elapsed)
}

func (p PartitionReport) details(topic, remote string) []string {
	var out []string
	at := fmt.Sprintf("%s[%d]", topic, p.Partition)
	if p.Error != "" {
		out = append(out, fmt.Sprintf("%s: not compared to the end: %s", at, p.Error))
	}
	if p.Missing > 0 {
		out = append(out, fmt.Sprintf("%s: %d missing, source offsets %s", at, p.Missing, ranges(p.MissingRanges)))
		if p.MissingAfterLastCopied > 0 {
			out = append(out, fmt.Sprintf("%s: %d of them follow the newest record copied (the mirror had not copied them yet)", at, p.MissingAfterLastCopied))
		}
	}
	if p.DeletedOnTarget > 0 {
		out = append(out, fmt.Sprintf("%s: %d deleted on the target (log start %d), source offsets %s", at, p.DeletedOnTarget, p.Target.LogStart, ranges(p.DeletedOnTargetRanges)))
	}
	if p.ProvenanceSkipped > 0 {
		out = append(out, fmt.Sprintf("%s: %d source records not expected on the target: their provenance header lists the target cluster (or the source), so the flow does not copy them back", at, p.ProvenanceSkipped))
	}
	if p.TargetOriginals > 0 {
		out = append(out, fmt.Sprintf("%s: %d target records written on the target, not copies (the source holds their copies, made by the flow back)", at, p.TargetOriginals))
	}
	if p.NotCompared != nil {
		out = append(out, fmt.Sprintf("%s: source offsets %d-%d not compared: the target deleted their copies (target log start %d)", at, p.NotCompared.From, p.NotCompared.To, p.Target.LogStart))
	}
	if p.Duplicated > 0 {
		var rs []string
		for _, r := range p.Replays {
			rs = append(rs, fmt.Sprintf("target offset %d replays source offset %d (%d records)", r.TargetOffset, r.SourceOffset, r.Records))
		}
		out = append(out, fmt.Sprintf("%s: %d duplicated: %s", at, p.Duplicated, strings.Join(rs, "; ")))
	}
	for _, a := range p.Alterations {
		out = append(out, fmt.Sprintf("%s: altered: source offset %d differs at %s[%d] offset %d in %s", at, a.SourceOffset, remote, p.Partition, a.TargetOffset, strings.Join(a.Fields, ", ")))
	}
	for _, d := range p.OutOfOrderRecords {
		out = append(out, fmt.Sprintf("%s: out of order: source offset %d copied at target offset %d, after later records", at, d.SourceOffset, d.TargetOffset))
	}
	if p.Unexpected > 0 {
		out = append(out, fmt.Sprintf("%s: %d target records copy no source record read, at target offsets %s", at, p.Unexpected, int64s(p.UnexpectedOffsets)))
	}
	if p.CompactedOnSource > 0 {
		out = append(out, fmt.Sprintf("%s: %d target records copy source records compaction removed since (not a difference)", at, p.CompactedOnSource))
	}
	if st := p.Stamps; st != nil {
		runs := make([]string, len(st.Runs))
		for i, r := range st.Runs {
			runs[i] = r.String()
		}
		// Of every target record read, also those read before the
		// compared window to find its start (-last, -since): a new user's
		// try (stop 38) took the runs for the records compared.
		out = append(out, fmt.Sprintf("%s: source->target offsets from the copies' provenance, for every target record read (the compared records and any read before them to find where they start): %s (%d stamped, %d without a source offset)",
			at, strings.Join(runs, "; "), st.Stamped, st.Unstamped))
		for _, d := range st.DisagreementRecords {
			out = append(out, fmt.Sprintf("%s: stamp disagrees: %s[%d] offset %d carries source offset %d, its content matched source offset %d",
				at, remote, p.Partition, d.TargetOffset, d.Stamped, d.Matched))
		}
	}
	if p.DetailsTruncated {
		out = append(out, fmt.Sprintf("%s: lists cut at the first entries (raise -max-details); counts are exact", at))
	}
	return out
}

func ranges(rs []Range) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

func int64s(xs []int64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
