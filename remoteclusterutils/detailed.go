package remoteclusterutils

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
)

// TranslationKind says how much a translated offset can be trusted, in
// [PartitionTranslation.Translation].
type TranslationKind string

// Translation kinds.
const (
	// TranslationExact: the checkpoint is the exact translation of the
	// group's source offset (kmirror's offset runs prove it): a consumer
	// resuming there re-reads nothing the group had processed before the
	// checkpointed commit, and skips nothing.
	TranslationExact TranslationKind = "exact"
	// TranslationSafe: the checkpoint is never past the exact position (a
	// consumer resuming there skips nothing) but may be before it:
	// [PartitionTranslation.Reread] bounds what it reads again.
	TranslationSafe TranslationKind = "safe"
	// TranslationUnknown: the checkpoint does not say how it was
	// translated (written by Apache MM2 or an older kmirror). MM2 3.5+
	// translates safely (one past the newest offset sync at or before the
	// group's offset); MM2 3.4.0 and older could be ahead (KAFKA-12468).
	TranslationUnknown TranslationKind = "unknown"
	// TranslationNone: no checkpoint ([PartitionTranslation.NeverCommitted]).
	TranslationNone TranslationKind = "none"
)

// PartitionTranslation is the detailed translation of one target
// partition of a consumer group: what [Client.TranslateOffsets] returns for
// it, plus how the offset was translated and when, and the partitions it
// leaves out.
type PartitionTranslation struct {
	// Topic is the target topic ("us-west.orders"); Partition its partition.
	Topic     string
	Partition int32
	// SourceOffset is the group's committed offset on the source that the
	// checkpoint translates (MM2's Checkpoint.upstreamOffset); -1 when
	// NeverCommitted.
	SourceOffset int64
	// Offset is the translated offset on the target, the next record to
	// consume (Checkpoint.downstreamOffset, what TranslateOffsets returns);
	// -1 when NeverCommitted.
	Offset int64
	// Metadata is the commit metadata copied from the source group.
	Metadata string
	// Translation is [TranslationExact], [TranslationSafe],
	// [TranslationUnknown] or, when NeverCommitted, [TranslationNone].
	Translation TranslationKind
	// Record is the record kind a kmirror translation came from:
	// checkpoint.KindRun ("run": kmirror's offset runs) or
	// checkpoint.KindSync ("sync": offset syncs alone, MM2's rule); empty
	// for an exact translation from the checkpoint, an unknown one or none;
	// [KindRecord] when [RefineFromRecords] took Offset from the copies.
	Record string
	// CheckpointOffset is the checkpoint's own translated offset when
	// Record is [KindRecord] (Offset replaced it), -1 when the partition
	// had no checkpoint (translated from the group's commit on the source);
	// 0 otherwise.
	CheckpointOffset int64
	// RecordFallback, set by [RefineFromRecords] on a partition it looked
	// at but did not change, says why: the copies' answer was not exact
	// (with its bound on records re-read) or there was none (not caught
	// up, no stamped copy, non-monotonic source offsets, mixed sources).
	RecordFallback string
	// Reread bounds the records a consumer resuming at Offset reads again
	// of those the group had processed on the source before SourceOffset:
	// 0 when exact, -1 when unknown (or NeverCommitted). What the group
	// processed after its last checkpointed commit is re-read besides.
	Reread int64
	// CheckpointTime is the checkpoint record's timestamp (when the
	// emitter wrote it); zero when NeverCommitted.
	CheckpointTime time.Time
	// NeverCommitted marks a partition of a target topic on which the
	// group has a checkpoint for another partition but none for this one:
	// the group never committed it on the source (or its commit was not
	// checkpointed yet). TranslateOffsets leaves such partitions out, and
	// a consumer with auto.offset.reset=none never reads them. A topic the
	// group has no checkpoint on at all is invisible here.
	NeverCommitted bool
	// MissingOnTarget marks a checkpoint of a partition this cluster does
	// not have: its topic is absent, or has fewer partitions (a remote
	// topic deleted, or re-created with fewer partitions, after the
	// checkpoint was written; checkpoints are never deleted). Committing
	// it fails on the broker (UNKNOWN_TOPIC_OR_PARTITION), so
	// [TranslatedOffsets] leaves it out. MM2's MirrorClient returns such
	// checkpoints as they are, and so does [Client.TranslateOffsets].
	MissingOnTarget bool
	// BelowLogStart marks a checkpoint whose Offset is below its target
	// partition's log start, LogStart (as listed by the call; 0 when not
	// BelowLogStart): the target's retention removed the copies from
	// Offset on. A consumer committed at Offset gets OFFSET_OUT_OF_RANGE
	// and resets by auto.offset.reset, to the log end by default, skipping
	// every record the target still holds; [TranslatedOffsets] gives
	// LogStart instead. MM2's MirrorClient returns such checkpoints as
	// they are, and so does [Client.TranslateOffsets].
	BelowLogStart bool
	LogStart      int64
	// TranslatedFrom is the remote topic ID the checkpoint's translation
	// was made for (kmirror's checkpoint.TranslatedFromHeader; zero on
	// checkpoints of MM2 and of kmirror releases without that header).
	// OtherLog marks a checkpoint whose TranslatedFrom is not the topic's
	// current ID: the remote topic was deleted and re-created since, and
	// Offset is a position in its earlier log, which may skip records of
	// the current one or lie past its end. LogStart is then the current
	// log's start (-1 when it could not be listed), which
	// [TranslatedOffsets] gives instead (left out when -1), until the
	// emitter checkpoints the group again. MM2's MirrorClient, which
	// knows no topic IDs, returns such checkpoints as they are, and so
	// does [Client.TranslateOffsets].
	TranslatedFrom [16]byte
	OtherLog       bool
	// PartitionStart is the log start of the partition on this cluster as
	// the call listed it ([Client.TranslateDetailed] and
	// [Client.TranslateGroups] set it on every partition they return,
	// NeverCommitted ones included; -1 when it could not be listed, or the
	// partition is MissingOnTarget): a caller that commits at the log
	// start (kmirror failover) needs no second listing of the same starts.
	PartitionStart int64
}

// EarlierLog reports whether p's Offset is a position in an earlier log of
// its remote topic: p is OtherLog, and [RefineFromRecords] did not take
// Offset from the current log's copies (Record [KindRecord]).
func (p PartitionTranslation) EarlierLog() bool { return p.OtherLog && p.Record != KindRecord }

// detail builds the translation of checkpoint c with its record's meta.
func detail(c checkpoint.Checkpoint, m cpMeta) PartitionTranslation {
	pt := PartitionTranslation{Topic: c.Topic, Partition: c.Partition, SourceOffset: c.UpstreamOffset,
		Offset: c.DownstreamOffset, Metadata: c.Metadata, CheckpointTime: m.at,
		Translation: TranslationUnknown, Reread: -1, TranslatedFrom: m.from}
	if m.translation == "" {
		return pt
	}
	info, err := checkpoint.ParseTranslationInfo(m.translation)
	if err != nil {
		return pt // unknown: a header this version cannot read
	}
	if info.Exact {
		pt.Translation, pt.Reread = TranslationExact, 0
		return pt
	}
	pt.Translation, pt.Record, pt.Reread = TranslationSafe, info.Kind, info.Reread
	return pt
}

// details returns the detailed translations of every wanted group of f,
// each sorted by topic then partition, without never-committed marks.
func (f *folder) details() map[string][]PartitionTranslation {
	out := map[string][]PartitionTranslation{}
	for k, c := range f.latest {
		out[k.group] = append(out[k.group], detail(c, f.meta[k]))
	}
	for _, ps := range out {
		sortTranslations(ps)
	}
	return out
}

func sortTranslations(ps []PartitionTranslation) {
	slices.SortFunc(ps, func(a, b PartitionTranslation) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// TranslateDetailed is [Client.TranslateOffsets] with details: per target
// partition of group, the offset TranslateOffsets returns, the source
// offset it translates, whether the translation is exact, safe (with the
// bound on records re-read) or unknown (from the checkpoint's
// kmirror-translation header, which Apache MM2 does not write), and the
// checkpoint's time; plus the partitions the group never committed on a
// topic it committed another partition of, marked NeverCommitted (one
// Metadata request on this cluster finds them). The result is sorted by
// topic then partition. Checkpoints of partitions this cluster does not
// have are marked MissingOnTarget, those translated for an earlier log of
// the remote topic OtherLog, and those below their partition's log start
// BelowLogStart (one ListOffsets request lists the starts). Errors
// are those of TranslateOffsets, and a failed metadata or log-start
// request.
func (c *Client) TranslateDetailed(ctx context.Context, remoteClusterAlias, group string) ([]PartitionTranslation, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	ctx, cancel := c.withTimeout(ctx) // one bound for the read and the metadata request
	defer cancel()
	f, err := c.read(ctx, remoteClusterAlias, group, false)
	if err != nil {
		return nil, err
	}
	if f.stats.Checkpoints == 0 {
		return nil, &NoCheckpointYetError{Alias: remoteClusterAlias, Topic: f.stats.Topic, Records: f.stats.Records}
	}
	all := f.details()
	if err := c.markAgainstTarget(ctx, all); err != nil {
		return nil, err
	}
	out := all[group]
	if out == nil {
		out = []PartitionTranslation{}
	}
	return out, nil
}

// TranslateGroups is [Client.TranslateDetailed] for every group that match
// accepts (nil: every group), from one read of the checkpoints topic:
// groups without any checkpoint are absent from the map. A topic without
// any checkpoint yet gives an empty map and no error.
func (c *Client) TranslateGroups(ctx context.Context, remoteClusterAlias string, match func(group string) bool) (map[string][]PartitionTranslation, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	ctx, cancel := c.withTimeout(ctx) // one bound for the read and the metadata request
	defer cancel()
	f, err := c.read(ctx, remoteClusterAlias, "", true)
	if err != nil {
		return nil, err
	}
	all := f.details()
	for g := range all {
		if match != nil && !match(g) {
			delete(all, g)
		}
	}
	if err := c.markAgainstTarget(ctx, all); err != nil {
		return nil, err
	}
	return all, nil
}

// markAgainstTarget adds, to each group's translations, the partitions of
// its topics it has no checkpoint for, and marks its checkpoints of
// partitions this cluster does not have, from the topics' partition counts
// on this cluster.
func (c *Client) markAgainstTarget(ctx context.Context, groups map[string][]PartitionTranslation) error {
	var topics []string
	seen := map[string]bool{}
	for _, ps := range groups {
		for _, p := range ps {
			if !seen[p.Topic] {
				seen[p.Topic] = true
				topics = append(topics, p.Topic)
			}
		}
	}
	if len(topics) == 0 {
		return nil
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	resp, err := uncachedMetadata(ctx, c.cl, topics...)
	if err != nil {
		return fmt.Errorf("remoteclusterutils: listing the partitions of %d target topics: %w", len(topics), err)
	}
	counts := map[string]int{} // the topics that exist on the target
	ids := map[string][16]byte{}
	absent := map[string]bool{}
	for _, t := range topics {
		absent[t] = true // unless the response says otherwise
	}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case err == nil:
			counts[*t.Topic], ids[*t.Topic] = len(t.Partitions), t.TopicID
			delete(absent, *t.Topic)
		case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.InvalidTopicException):
			// Absent.
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			// Not "absent": its partitions would go unaccounted for.
			return fmt.Errorf("remoteclusterutils: listing the partitions of target topic %s: %w: grant the client's principal Describe on it", *t.Topic, err)
		default:
			delete(absent, *t.Topic) // retriable (a leader election): not known to be absent
		}
	}
	starts, err := c.logStarts(ctx, slices.Sorted(maps.Keys(counts)))
	if err != nil {
		return err
	}
	for g, ps := range groups {
		have := map[string]map[int32]bool{}
		for i, p := range ps {
			s, listed := starts[p.Topic][p.Partition]
			ps[i].PartitionStart = -1
			if listed {
				ps[i].PartitionStart = s
			}
			switch n, ok := counts[p.Topic]; {
			case absent[p.Topic] || ok && p.Partition >= int32(n):
				ps[i].MissingOnTarget = true
			case p.TranslatedFrom != [16]byte{} && ids[p.Topic] != [16]byte{} && p.TranslatedFrom != ids[p.Topic]:
				ps[i].OtherLog, ps[i].LogStart = true, -1
				if listed {
					ps[i].LogStart = s
				}
			case listed && p.Offset >= 0 && p.Offset < s:
				ps[i].BelowLogStart, ps[i].LogStart = true, s
			}
			if have[p.Topic] == nil {
				have[p.Topic] = map[int32]bool{}
			}
			have[p.Topic][p.Partition] = true
		}
		for t, parts := range have {
			n, ok := counts[t]
			if !ok {
				continue // absent from the target: nothing to mark
			}
			for p := range int32(n) {
				if !parts[p] {
					start, listed := starts[t][p]
					if !listed {
						start = -1
					}
					ps = append(ps, PartitionTranslation{Topic: t, Partition: p, SourceOffset: -1, Offset: -1,
						Translation: TranslationNone, Reread: -1, NeverCommitted: true, PartitionStart: start})
				}
			}
		}
		sortTranslations(ps)
		groups[g] = ps
	}
	return nil
}

// logStarts lists the log start offsets of topics, by topic and
// partition; a partition whose start could not be listed is left out
// (nothing is marked BelowLogStart from it).
func (c *Client) logStarts(ctx context.Context, topics []string) (map[string]map[int32]int64, error) {
	out := map[string]map[int32]int64{}
	if len(topics) == 0 {
		return out, nil
	}
	listed, err := kadm.NewClient(c.cl).ListStartOffsets(ctx, topics...)
	var shardErr *kadm.ShardErrors
	if err != nil && !errors.As(err, &shardErr) {
		return nil, fmt.Errorf("remoteclusterutils: listing the log starts of %d target topics: %w", len(topics), err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			if out[o.Topic] == nil {
				out[o.Topic] = map[int32]int64{}
			}
			out[o.Topic][o.Partition] = o.Offset
		}
	})
	return out, nil
}

// TranslatedOffsets returns the offsets of ps that have a translation and
// a partition on this cluster (NeverCommitted and MissingOnTarget ones left
// out), in the shape [Client.TranslateOffsets] returns: the same values for
// the same read, but for MissingOnTarget partitions, for BelowLogStart
// ones, given at their LogStart (or at Offset if [RefineFromRecords] moved
// it above), and for OtherLog ones, given at the current log's start.
func TranslatedOffsets(ps []PartitionTranslation) Offsets {
	out := make(Offsets)
	for _, p := range ps {
		earlier := p.EarlierLog()
		if p.NeverCommitted || p.MissingOnTarget || earlier && p.LogStart < 0 {
			continue
		}
		at := p.Offset
		switch {
		case earlier:
			at = p.LogStart
		case p.BelowLogStart:
			at = max(at, p.LogStart)
		}
		out.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: at, LeaderEpoch: -1, Metadata: p.Metadata})
	}
	return out
}

// RefineFromRecords is the fallback of checkpoint translations that are not
// exact, and of partitions without a checkpoint: for each partition of
// groups (a [Client.TranslateGroups] result) whose Translation is safe or
// unknown, it translates the checkpoint's SourceOffset from the copies on
// the remote topic ([TranslateFromRecords]; cl reaches the target,
// sourceClusterID is the source's cluster ID, or empty to take it from the
// copies) and, when the copies give an exact answer, replaces Offset with
// it: Translation [TranslationExact], Record [KindRecord], Reread 0, the
// checkpoint's offset kept in CheckpointOffset. Other partitions keep
// their checkpoint's translation, RecordFallback saying why.
//
// A never-committed partition (no checkpoint: the group's commit on the
// source may be one no offset sync or run covered yet) is translated when
// sourceCommits (group -> remote topic -> partition -> the group's
// committed offset on the SOURCE, read there by the caller; nil: none)
// holds its offset: any answer of the copies, exact or safe (with its
// Reread bound), makes it translated, Record [KindRecord],
// CheckpointOffset -1, NeverCommitted false; otherwise RecordFallback says
// why. Exact partitions are not looked at. The result is a new map; groups
// is not changed. The error is a failed read. Without a deadline in ctx,
// [DefaultTimeout] bounds the call.
func RefineFromRecords(ctx context.Context, cl *kgo.Client, sourceClusterID string, groups map[string][]PartitionTranslation, sourceCommits map[string]map[string]map[int32]int64) (map[string][]PartitionTranslation, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	type tp struct {
		topic     string
		partition int32
	}
	// x returns the source offset to translate for p of group g.
	x := func(g string, p PartitionTranslation) (int64, bool) {
		switch {
		case p.MissingOnTarget:
			return 0, false // no copies to look at
		case p.NeverCommitted:
			c, ok := sourceCommits[g][p.Topic][p.Partition]
			return c, ok && c >= 0
		case p.Translation == TranslationExact || p.SourceOffset < 0:
			return 0, false
		}
		return p.SourceOffset, true
	}
	// Distinct source offsets per partition, all answered by one search
	// of the partition.
	xs := map[string]map[int32][]int64{}
	for g, ps := range groups {
		for _, p := range ps {
			off, ok := x(g, p)
			if !ok {
				continue
			}
			if xs[p.Topic] == nil {
				xs[p.Topic] = map[int32][]int64{}
			}
			if !slices.Contains(xs[p.Topic][p.Partition], off) {
				xs[p.Topic][p.Partition] = append(xs[p.Topic][p.Partition], off)
			}
		}
	}
	answers := map[tp]map[int64]RecordTranslation{}
	if len(xs) > 0 {
		got, err := translateFromRecords(ctx, cl, sourceClusterID, xs)
		if err != nil {
			return nil, err
		}
		for t, ps := range got {
			for p, rs := range ps {
				k := tp{t, p}
				answers[k] = make(map[int64]RecordTranslation, len(rs))
				for _, r := range rs {
					answers[k][r.SourceOffset] = r
				}
			}
		}
	}
	out := make(map[string][]PartitionTranslation, len(groups))
	for g, ps := range groups {
		nps := slices.Clone(ps)
		for i, p := range nps {
			off, ok := x(g, p)
			if !ok {
				continue
			}
			r, ok := answers[tp{p.Topic, p.Partition}][off]
			if !ok {
				continue
			}
			switch {
			case r.Err != nil:
				nps[i].RecordFallback = r.Err.Error()
			case p.NeverCommitted:
				nps[i].NeverCommitted, nps[i].SourceOffset, nps[i].Offset, nps[i].CheckpointOffset = false, off, r.Offset, -1
				nps[i].Translation, nps[i].Record, nps[i].Reread = TranslationSafe, KindRecord, r.Reread
				if r.Exact {
					nps[i].Translation, nps[i].Reread = TranslationExact, 0
				}
			case !r.Exact:
				nps[i].RecordFallback = fmt.Sprintf("the copies give %d, safe, re-read <= %d: checkpoint kept", r.Offset, r.Reread)
			default:
				nps[i].CheckpointOffset = p.Offset
				nps[i].Offset, nps[i].Translation, nps[i].Record, nps[i].Reread = r.Offset, TranslationExact, KindRecord, 0
			}
		}
		out[g] = nps
	}
	return out, nil
}
