package remoteclusterutils

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/kread"
)

// BackTranslation is a consumer group's position on a remote topic
// translated back to the source topic it was replicated from (see
// [TranslateBack]).
type BackTranslation struct {
	// Topic is the SOURCE topic ("orders"); Partition the partition, the
	// same on both clusters.
	Topic     string
	Partition int32
	// Position is the group's position on the remote topic (the next
	// offset it reads there), as given.
	Position int64
	// Offset is where the group resumes on the source topic: every record
	// of the source partition before Offset that was replicated has its
	// copy on the remote topic before Position (the group consumed it).
	// Records after it may have been consumed on the remote topic too
	// (re-read), never skipped.
	Offset int64
	// Record is the record kind the answer came from: KindRecord (the
	// copy at Position-1 carries its source offset in kmirror's provenance
	// header: Offset is one past it), checkpoint.KindRun
	// (a kmirror offset run holds the copy at Position-1: Offset is one
	// past its source offset) or checkpoint.KindSync (the newest offset
	// sync at or before Position: one past it, or it when the sync names
	// Position itself; records between the sync and Position are re-read).
	Record string
	// Exact is true when Offset comes from the record or an offset run: it is one past
	// the source record whose copy the group consumed last, and a consumer
	// resuming there re-reads nothing the group consumed on the remote
	// topic (except records a restarted replication had copied twice).
	Exact bool
	// SourceTopicID is the ID of the source topic incarnation the copy at
	// Position-1 was replicated from, as the offset run holding it (or
	// linking Position to it) recorded it (checkpoint.OffsetRun.TopicID);
	// zero when unknown (no such run left, offset syncs alone, MM2, older
	// kmirror). A source topic deleted and re-created since has another ID:
	// Offset is then an offset of the old log, and a consumer resuming
	// there on the new one would skip its records below Offset.
	SourceTopicID [16]byte
}

// TranslateBack translates consumer groups' positions on remote topics
// back to the source topics they were replicated from: the failback of a
// group that failed over from cluster A to cluster B (its position on
// "A.orders" on B, back to "orders" on A). MM2's checkpoints cannot do it:
// the reverse flow B->A never replicates A.orders back (it is a cycle), so
// no checkpoint of orders on A ever exists and Java's RemoteClusterUtils has
// no answer.
//
// The forward flow's offset runs (kmirror) and offset syncs (kmirror or
// MM2) hold the mapping; cl must reach the cluster that holds them (the
// forward flow's offset-syncs.topic.location: the source A by default),
// and offsetSyncsTopic names the forward flow's offset-syncs topic
// ("mm2-offset-syncs.B.internal" under the default policy; the offset-runs
// topic beside it, checkpoint.OffsetRunsTopic, is read too when it
// exists). positions maps each source topic to the group's positions on
// its remote topic by partition. targetClusterID, when not empty, is the
// cluster ID of B: runs and syncs kmirror recorded for another target
// cluster (checkpoint.TargetClusterHeader; a target rebuilt under the same
// alias) are ignored.
//
// A position is translated from the offset run holding its previous
// record (exact), else from the newest offset sync at or before it (MM2's
// rule mirrored, safe); both are read to the end offsets observed at the
// call. Since the offset-syncs topic is compacted (only the newest sync per
// partition survives) and offset runs are deleted after 7 days, an old
// position may have neither: it is absent from the result, never guessed
// (the caller lists it). The result is keyed like positions; cl is not
// closed (its options are used to build short-lived readers). When
// neither the offset-syncs topic nor the offset-runs topic exists on the
// cluster cl reaches, the error wraps [ErrNoOffsetSyncsTopic]: nothing
// could be translated, and an empty result would look like positions too
// old to translate.
//
// TranslateBack does not reach B, so it cannot tell a remote topic
// re-created on B (a new log) from the one the runs and syncs describe;
// when that can have happened, use [ReadBackIndex] with
// [BackIndex.ForRemoteTopicIDs] and the remote topics' current IDs.
// Without a deadline in ctx, [DefaultTimeout] bounds the call.
func TranslateBack(ctx context.Context, cl *kgo.Client, offsetSyncsTopic string, positions map[string]map[int32]int64, targetClusterID string) (map[string]map[int32]BackTranslation, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	idx, err := ReadBackIndex(ctx, cl, offsetSyncsTopic, targetClusterID)
	if err != nil {
		return nil, err
	}
	if !idx.found {
		return nil, fmt.Errorf("%w: %s (and %s) on the cluster the client reaches: give the forward flow's offset-syncs topic, on the cluster of its offset-syncs.topic.location (the source by default)",
			ErrNoOffsetSyncsTopic, offsetSyncsTopic, checkpoint.OffsetRunsTopic(offsetSyncsTopic))
	}
	out := make(map[string]map[int32]BackTranslation, len(positions))
	for topic, ps := range positions {
		for p, d := range ps {
			if b, ok := idx.Translate(topic, p, d); ok {
				if out[topic] == nil {
					out[topic] = map[int32]BackTranslation{}
				}
				out[topic][p] = b
			}
		}
	}
	return out, nil
}

// BackIndex holds a forward flow's offset runs and offset syncs, read once
// by [ReadBackIndex], to translate many positions back (see
// [TranslateBack], which reads one and uses it). It is immutable and safe
// for concurrent use.
type BackIndex struct {
	runs  map[backKey][]backRun
	syncs map[backKey][]backSync
	// recs maps positions to the source offset the copied record before
	// each carries ([BackIndex.WithRecords]).
	recs map[backKey]map[int64]int64
	// found: the offset-syncs or the offset-runs topic exists.
	found bool
}

// ErrNoOffsetSyncsTopic is wrapped by the error [TranslateBack] returns
// when neither the offset-syncs topic it was given nor the offset-runs
// topic beside it exists on the cluster its client reaches: the client
// reaches the wrong cluster (the forward flow's offset-syncs.topic.location
// decides where they are: the source by default) or the topic name is not
// the forward flow's. A flow creates its offset-syncs topic as it starts.
var ErrNoOffsetSyncsTopic = errors.New("remoteclusterutils: offset-syncs topic not found")

// Found reports whether the offset-syncs topic or the offset-runs topic
// beside it existed when [ReadBackIndex] read them. An index of neither
// translates nothing: a caller that can translate from the copies alone
// ([BackIndex.WithRecords]) may go on, others should report the topic
// name and cluster (see [ErrNoOffsetSyncsTopic]).
func (b *BackIndex) Found() bool { return b.found }

type backKey struct {
	topic     string
	partition int32
}

// backRun and backSync are an offset run and an offset sync with the
// remote topic ID recorded on them (checkpoint.TargetTopicIDHeader; zero:
// none).
type backRun struct {
	checkpoint.OffsetRun
	topicID [16]byte
}

type backSync struct {
	checkpoint.OffsetSync
	topicID [16]byte
}

// topicIDOf returns the remote topic ID recorded in hs (zero: none).
func topicIDOf(hs []kgo.RecordHeader) [16]byte {
	_, id := checkpoint.RecordedTarget(hs)
	return id
}

// ReadBackIndex reads the offset-syncs topic offsetSyncsTopic and the
// offset-runs topic beside it (checkpoint.OffsetRunsTopic; a missing one
// is empty) from the cluster cl reaches, to the end offsets observed at the
// call, keeping the records of targetClusterID (all when empty; see
// [TranslateBack]). Undecodable records, and syncs with a negative offset
// (which no writer produces; the checkpoint emitter's sync store rejects
// them too), are skipped. Without a deadline in ctx, [DefaultTimeout]
// bounds the call.
func ReadBackIndex(ctx context.Context, cl *kgo.Client, offsetSyncsTopic, targetClusterID string) (*BackIndex, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if cl == nil {
		return nil, ErrNilClient
	}
	if offsetSyncsTopic == "" {
		return nil, errors.New("remoteclusterutils: ReadBackIndex: empty offset-syncs topic name")
	}
	mine := func(hs []kgo.RecordHeader) bool {
		if targetClusterID == "" {
			return true
		}
		for _, h := range hs {
			if h.Key == checkpoint.TargetClusterHeader {
				return string(h.Value) == targetClusterID
			}
		}
		return true // written without the header (MM2, older kmirror): cannot tell
	}
	idx := &BackIndex{runs: map[backKey][]backRun{}, syncs: map[backKey][]backSync{}}
	runsTopic := checkpoint.OffsetRunsTopic(offsetSyncsTopic)
	runs, err := kread.ReadToEnd(ctx, cl.Opts(), runsTopic, kread.Options{Partitions: []int32{0}})
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("remoteclusterutils: reading %s: %w", runsTopic, err)
	}
	idx.found = err == nil
	for _, r := range runs {
		if run, err := checkpoint.DecodeOffsetRun(r.Key, r.Value); err == nil && mine(r.Headers) {
			k := backKey{run.Topic, run.Partition}
			idx.runs[k] = append(idx.runs[k], backRun{run, topicIDOf(r.Headers)})
		}
	}
	syncs, err := kread.ReadToEnd(ctx, cl.Opts(), offsetSyncsTopic, kread.Options{Partitions: []int32{0}})
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("remoteclusterutils: reading %s: %w", offsetSyncsTopic, err)
	}
	idx.found = idx.found || err == nil
	for _, r := range syncs {
		// The codec does not range-check offsets: a negative one is no
		// sync, nor is an upstream offset of math.MaxInt64 (no log
		// reaches it; one past it overflows).
		if s, err := checkpoint.DecodeOffsetSync(r.Key, r.Value); err == nil && s.UpstreamOffset >= 0 && s.UpstreamOffset < math.MaxInt64 &&
			s.DownstreamOffset >= 0 && mine(r.Headers) {
			k := backKey{s.Topic, s.Partition}
			idx.syncs[k] = append(idx.syncs[k], backSync{s, topicIDOf(r.Headers)})
		}
	}
	return idx, nil
}

// Translate translates position (the next offset a group reads on the
// remote topic of source topic topic, partition partition) back to the
// source topic, by the rules of [TranslateBack]; ok is false when no
// offset run or sync covers it.
func (b *BackIndex) Translate(topic string, partition int32, position int64) (bt BackTranslation, ok bool) {
	k := backKey{topic, partition}
	defer func() {
		if ok {
			bt.SourceTopicID = b.sourceTopicIDAt(k, position)
		}
	}()
	offer := func(c BackTranslation) {
		if !ok || c.Offset > bt.Offset || (c.Offset == bt.Offset && c.Exact && !bt.Exact) {
			bt, ok = c, true
		}
	}
	d := position
	if up, found := b.recs[k][d]; found {
		// The copy the group consumed last names its own source offset.
		return BackTranslation{Topic: topic, Partition: partition, Position: d, Offset: up + 1, Record: KindRecord, Exact: true}, true
	}
	for _, run := range b.runs[k] {
		switch {
		case d < 1:
		case d-1 >= run.FirstOffset && d-1 <= run.LastOffset():
			u := run.FirstUpstreamOffset + (d - 1 - run.FirstOffset)
			offer(BackTranslation{Topic: topic, Partition: partition, Position: d, Offset: u + 1, Record: checkpoint.KindRun, Exact: true})
		case linksTo(run.OffsetRun, d):
			// The run links its previous record, before d, to its
			// first, at or after d: the source offsets between held
			// nothing the replication copied, and the target offsets
			// between hold only its transaction markers.
			offer(BackTranslation{Topic: topic, Partition: partition, Position: d, Offset: run.FirstUpstreamOffset, Record: checkpoint.KindRun, Exact: true})
		}
	}
	// The sync with the highest downstream offset at or before d (the
	// newest in log order among equals).
	var newest checkpoint.OffsetSync
	found := false
	for _, s := range b.syncs[k] {
		if s.DownstreamOffset <= d && (!found || s.DownstreamOffset >= newest.DownstreamOffset) {
			newest, found = s.OffsetSync, true
		}
	}
	if found {
		at := newest.UpstreamOffset + 1 // the copy at newest.DownstreamOffset < d was consumed
		if newest.DownstreamOffset == d {
			at = newest.UpstreamOffset // the copy at d is the next one to read
		}
		offer(BackTranslation{Topic: topic, Partition: partition, Position: d, Offset: at, Record: checkpoint.KindSync})
	}
	return bt, ok
}

// sourceTopicIDAt returns the source topic ID recorded by the offset run
// holding the copy at position-1 of k's remote partition, or linking
// position to it (zero: none).
func (b *BackIndex) sourceTopicIDAt(k backKey, position int64) [16]byte {
	var zero [16]byte
	d := position
	for _, run := range b.runs[k] {
		if d >= 1 && run.TopicID != zero &&
			((d-1 >= run.FirstOffset && d-1 <= run.LastOffset()) || linksTo(run.OffsetRun, d)) {
			return run.TopicID
		}
	}
	return zero
}

// linksTo reports whether run links position d to its first record: its
// previous record is before d and its first at or after it (d-1 is the
// previous record or one of the transaction markers after it, which an
// exactly-once session writes between two runs).
func linksTo(run checkpoint.OffsetRun, d int64) bool {
	return run.PrevOffset >= 0 && run.PrevOffset < d && d <= run.FirstOffset
}

// ForRemoteTopicIDs returns a BackIndex that keeps, for each source topic
// of ids, only the offset runs and syncs recorded for that remote topic ID
// (checkpoint.TargetTopicIDHeader) or recorded without one: ids maps the
// source topic ("orders") to the current topic ID of its remote topic on
// the target ("A.orders" on B), as kadm's TopicDetail.ID gives it. A
// remote topic deleted and re-created after replication began holds a new
// log, and the old log's runs and syncs map its offsets to the wrong
// source offsets, which can be past what the group consumed: records
// skipped on failback. Runs and syncs without the header (MM2's, older
// kmirror releases') cannot be told apart and are kept. Source topics
// absent from ids, or given a zero ID (a cluster without topic IDs), are
// not filtered. Records read by [BackIndex.WithRecords] come from the
// current log and are kept. b is not changed.
func (b *BackIndex) ForRemoteTopicIDs(ids map[string][16]byte) *BackIndex {
	var zero [16]byte
	keep := func(k backKey, id [16]byte) bool {
		want, ok := ids[k.topic]
		return !ok || want == zero || id == zero || id == want
	}
	out := &BackIndex{runs: map[backKey][]backRun{}, syncs: map[backKey][]backSync{}, recs: b.recs, found: b.found}
	for k, rs := range b.runs {
		for _, r := range rs {
			if keep(k, r.topicID) {
				out.runs[k] = append(out.runs[k], r)
			}
		}
	}
	for k, ss := range b.syncs {
		for _, s := range ss {
			if keep(k, s.topicID) {
				out.syncs[k] = append(out.syncs[k], s)
			}
		}
	}
	return out
}

// KindRecord is the record kind of a [BackTranslation] read from the copied
// record itself: kmirror stamps each record's source offset into its
// provenance header (the "kmirror-provenance" value ends with
// "#<offset>"; mirror.ProvenanceOffset), so a position on a remote topic
// translates back exactly from the record before it, whatever offset
// syncs and runs are left.
const KindRecord = "record"

// WithRecords returns a BackIndex that also translates the positions of
// positions (source topic -> partition -> position on the remote topic)
// from the copies themselves: cl reaches the cluster holding the remote
// topics (B), remoteTopics maps each source topic to its remote topic, and
// sourceClusterID is the cluster ID of the source (A). A position whose
// previous record on the remote topic names A as its last hop with a
// source offset X translates to X+1, exact, before any run or sync is
// looked at; the previous record is the one at position-1 or, when that
// offset is a transaction marker (an exactly-once flow ends each
// transaction with one, and a consumer that commits its position, as
// Java's does, stands past it), the one at position-2. Others keep the
// rules of [TranslateBack], as does a position
// past the end offset (last stable offset) of its remote partition, which
// has no record before it to read. Records written by
// MM2, by a kmirror with tail resume off (no offset), by other producers,
// or aborted are passed over. b is not changed. Without a deadline in ctx,
// [DefaultTimeout] bounds the call.
func (b *BackIndex) WithRecords(ctx context.Context, cl *kgo.Client, sourceClusterID string, remoteTopics map[string]string, positions map[string]map[int32]int64) (*BackIndex, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if cl == nil {
		return nil, ErrNilClient
	}
	ranges := map[string]map[int32]kread.Range{}
	for topic, ps := range positions {
		remote, ok := remoteTopics[topic]
		if !ok {
			continue
		}
		for p, d := range ps {
			if d < 1 {
				continue
			}
			if ranges[remote] == nil {
				ranges[remote] = map[int32]kread.Range{}
			}
			ranges[remote][p] = kread.Range{From: max(0, d-2), To: d}
		}
	}
	out := &BackIndex{runs: b.runs, syncs: b.syncs, recs: map[backKey]map[int64]int64{}, found: b.found}
	for k, m := range b.recs {
		out.recs[k] = m
	}
	if len(ranges) == 0 {
		return out, nil
	}
	// A position past the partition's end has no record before it: a
	// read of it would go through the whole partition and stop idle,
	// failing every position. Such positions keep the other rules.
	asked := map[string][]int32{}
	for remote, ps := range ranges {
		for p := range ps {
			asked[remote] = append(asked[remote], p)
		}
	}
	ends := kread.ListOffsets(ctx, cl, asked, -1, true)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("remoteclusterutils: listing the end offsets of the remote topics: %w", err)
	}
	for remote, ps := range ranges {
		for p, r := range ps {
			e, ok := ends.Lookup(remote, p)
			switch {
			case !ok:
				return nil, fmt.Errorf("remoteclusterutils: %s[%d]: end offset not listed (no such topic or partition)", remote, p)
			case e.Err != nil:
				return nil, fmt.Errorf("remoteclusterutils: %s[%d]: listing the end offset: %w", remote, p, e.Err)
			case r.To > e.Offset:
				delete(ps, p)
			}
		}
		if len(ps) == 0 {
			delete(ranges, remote)
		}
	}
	got, err := kread.ReadRanges(ctx, cl.Opts(), ranges, true)
	if err != nil {
		return nil, fmt.Errorf("remoteclusterutils: reading the records before the positions: %w", err)
	}
	for topic, ps := range positions {
		remote := remoteTopics[topic]
		for p, d := range ps {
			// read_committed: markers and aborted records are not
			// records, so the last one read is the one the group read
			// last (at d-1, or at d-2 before a marker).
			rs := got[remote][p]
			if len(rs) == 0 {
				continue
			}
			// A stamp of math.MaxInt64 is no source offset (one past it
			// overflows).
			if up, ok := copiedFrom(rs[len(rs)-1], sourceClusterID); ok && up < math.MaxInt64 {
				k := backKey{topic, p}
				m := map[int64]int64{}
				for x, y := range out.recs[k] {
					m[x] = y
				}
				m[d] = up
				out.recs[k] = m
			}
		}
	}
	return out, nil
}

// copiedFrom returns the source offset r's last provenance header carries
// when its last hop is the cluster sourceClusterID.
func copiedFrom(r *kgo.Record, sourceClusterID string) (int64, bool) {
	last, off, ok := lastHop(r)
	if !ok || last != sourceClusterID {
		return 0, false
	}
	return off, true
}

// provenanceHeader is mirror.ProvenanceHeader (this package does not import
// the engine).
const provenanceHeader = "kmirror-provenance"
