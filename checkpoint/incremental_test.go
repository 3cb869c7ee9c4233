package checkpoint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/policy"
)

// This file checks the incremental emitter (emit.go, groupsync.go) against
// a full recomputation (Emitter.full: every emission translates and checks
// every group partition and lists every remote topic, every sync round
// plans every idle group), on an in-memory model of the two clusters and
// the replicator: random sequences of source commits, replication (offset
// syncs and runs, with compaction holes), remote topics re-created, the
// target cluster rebuilt, target groups joined, left, reset and deleted,
// failed checkpoint writes, emissions, sync rounds and member restarts. Both emitters must
// write the same checkpoints at every emission and commit the same offsets
// at every sync round, and report the same statuses.
//
// The incremental emitter finds target changes under idle partitions at
// its next sweep (every targetSweepInterval); the model asks for a sweep at
// the emission after each such change, as the full emitter finds them at
// once. Sweeps are also forced at random, where they must change nothing.

// model is the world: the source's groups and topics, the replicator's
// state per partition, the target's identity and logs.
type model struct {
	rng     *rand.Rand
	topics  []string // source topics
	parts   int32
	cluster string
	nextID  byte
	// tagIDs: the replicator records the remote topic's ID on its syncs
	// and runs (TargetTopicIDHeader) besides the target cluster, as
	// kmirror's does; without it, as older kmirror releases did.
	tagIDs bool

	srcEnd map[tpKey]int64          // next source offset
	holes  map[tpKey]map[int64]bool // source offsets without a record
	repl   map[tpKey]*replState     // the replicator
	remote map[string][16]byte      // remote topic IDs
	ends   map[cpKeyTP]int64        // remote log ends
	// logs are the remote logs' records as (source offset, target
	// offset), for the "never past replicated data" oracle (exactAt).
	logs    map[cpKeyTP][][2]int64
	commits map[string]map[tpKey]int64 // source group offsets
	skipped map[string]bool            // source topics the topic filter refuses now
	session uint64

	// feed are the sync and run records produced since the emitters last
	// read them: both read the same.
	feed []feedRec
}

type feedRec struct {
	sync    *OffsetSync
	run     *OffsetRun
	headers []kgo.RecordHeader
}

// replState is one source partition's replication session.
type replState struct {
	cur              int64 // next source offset to copy
	down             int64 // next target offset
	session          uint64
	fresh            bool
	sessUp, sessDown int64 // session's first record, -1 none yet
	run              *OffsetRun
	lastUp, lastDown int64 // last record copied in the session, -1 none
}

func newModel(seed uint64) *model {
	m := &model{rng: rand.New(rand.NewPCG(seed, 22)), topics: []string{"t0", "t1", "t2"}, parts: 2, cluster: "dst-1",
		srcEnd: map[tpKey]int64{}, holes: map[tpKey]map[int64]bool{}, repl: map[tpKey]*replState{},
		remote: map[string][16]byte{}, ends: map[cpKeyTP]int64{}, logs: map[cpKeyTP][][2]int64{}, commits: map[string]map[tpKey]int64{}, skipped: map[string]bool{}}
	for _, t := range m.topics {
		m.remote["src."+t] = m.newID()
		for p := range m.parts {
			k := tpKey{t, p}
			m.holes[k] = map[int64]bool{}
			m.newSession(k)
			m.ends[cpKeyTP{"src." + t, p}] = 0
		}
	}
	return m
}

func (m *model) newID() [16]byte {
	m.nextID++
	return [16]byte{m.nextID}
}

// newSession starts a fresh replication of k from the source's start (a
// new partition, or a refill of a re-created remote topic).
func (m *model) newSession(k tpKey) {
	m.session++
	m.repl[k] = &replState{session: m.session, fresh: true, sessUp: -1, sessDown: -1, lastUp: -1, lastDown: -1}
}

// produce appends n records to k after a hole of gap offsets.
func (m *model) produce(k tpKey, n, gap int64) {
	for i := range gap {
		m.holes[k][m.srcEnd[k]+i] = true
	}
	m.srcEnd[k] += gap + n
}

// replicate copies up to n records of k, writing runs and syncs as
// kmirror's replicator does: a sync on the first record of a run and on
// the last one copied, a run record for every run that grew.
func (m *model) replicate(k tpKey, n int) {
	r := m.repl[k]
	hs := []kgo.RecordHeader{{Key: TargetClusterHeader, Value: []byte(m.cluster)}}
	if m.tagIDs {
		hs = targetID{cluster: m.cluster, topic: m.remote["src."+k.topic]}.headers()
	}
	copied := 0
	for r.cur < m.srcEnd[k] && copied < n {
		u := r.cur
		r.cur++
		if m.holes[k][u] {
			continue
		}
		d := r.down
		r.down++
		copied++
		lk := cpKeyTP{"src." + k.topic, k.partition}
		m.logs[lk] = append(m.logs[lk], [2]int64{u, d})
		if r.sessUp < 0 {
			r.sessUp, r.sessDown = u, d
		}
		if r.run != nil && r.lastUp == u-1 && r.lastDown == d-1 {
			r.run.Count++
		} else {
			r.run = &OffsetRun{Topic: k.topic, Partition: k.partition, Session: r.session, Fresh: r.fresh,
				SessionUpstreamOffset: r.sessUp, SessionOffset: r.sessDown, PrevUpstreamOffset: r.lastUp, PrevOffset: r.lastDown,
				FirstUpstreamOffset: u, FirstOffset: d, Count: 1, EndUpstreamOffset: -1, Committed: -1}
			s := OffsetSync{Topic: k.topic, Partition: k.partition, UpstreamOffset: u, DownstreamOffset: d}
			m.feed = append(m.feed, feedRec{sync: &s, headers: hs})
		}
		r.lastUp, r.lastDown = u, d
	}
	if copied == 0 {
		return
	}
	run := *r.run
	m.feed = append(m.feed, feedRec{run: &run, headers: hs})
	s := OffsetSync{Topic: k.topic, Partition: k.partition, UpstreamOffset: r.lastUp, DownstreamOffset: r.lastDown}
	m.feed = append(m.feed, feedRec{sync: &s, headers: hs})
	m.ends[cpKeyTP{"src." + k.topic, k.partition}] = r.down
}

// recreateRemote deletes and re-creates a remote topic: empty, a new ID,
// refilled from the source's start by new sessions.
func (m *model) recreateRemote(topic string) {
	m.remote["src."+topic] = m.newID()
	for p := range m.parts {
		m.ends[cpKeyTP{"src." + topic, p}] = 0
		m.logs[cpKeyTP{"src." + topic, p}] = nil
		m.newSession(tpKey{topic, p})
	}
}

// exactAt returns the target offset a consumer of remote partition ck
// resumes at to read every record from source offset up on: the target
// offset of the first record copied from up or later, else the log end.
// A checkpoint above it skips records.
func (m *model) exactAt(ck cpKeyTP, up int64) int64 {
	for _, r := range m.logs[ck] {
		if r[0] >= up {
			return r[1]
		}
	}
	return m.ends[ck]
}

// rebuildTarget replaces the target cluster by an empty one under the same
// alias.
func (m *model) rebuildTarget() {
	m.cluster = fmt.Sprintf("dst-%d", m.nextID)
	for _, t := range m.topics {
		m.recreateRemote(t)
	}
}

// side is one emitter with its view of the target's groups (each emitter
// commits into its own copy, so that their commits can be compared).
type side struct {
	m         *model
	e         *Emitter
	tgroups   map[string]string            // target group -> state
	toffsets  map[string]map[cpKeyTP]int64 // target group offsets
	failEvery int                          // every failEvery-th checkpoint write fails (0: none)
	writes    int
	emitted   []Checkpoint // written by the current emission
	// written is every checkpoint record written to the target's
	// checkpoints topic, with the headers the emitter gave it, in order:
	// what a restarted emitter loads.
	written   []writtenCp
	committed []string
	// skips are the commits above the model's exact offset (exactAt) of
	// the group's source offset: commits that skip records.
	skips []string
	mu    sync.Mutex
	// quiet: write and commit keep no record of what they were given
	// (BenchmarkEmitterMemory measures the emitter, not the model).
	quiet bool
	// metaErr fails topicMeta (the target's topic IDs) while set.
	metaErr error
	// listErr fails listTarget (the emission's listing) while set.
	listErr error
	// edit, when set, changes fetchOffsets' response before it is returned.
	edit func([]kmsg.OffsetFetchResponseGroup) []kmsg.OffsetFetchResponseGroup
	// onList, when set, runs as listTarget starts (records the syncs
	// tailer adds while an emission lists the target).
	onList func()
}

func newSide(t testing.TB, m *model, full bool) *side {
	t.Helper()
	pol, err := policy.NewDefault()
	var e *Emitter
	if err != nil {
		t.Fatal(err)
	}
	e, err = NewEmitter(EmitterConfig{SourceAlias: "src", TargetAlias: "dst", Policy: pol,
		SourceOpts: []kgo.Opt{kgo.SeedBrokers("x")}, TargetOpts: []kgo.Opt{kgo.SeedBrokers("x")}, OffsetSyncsOpts: []kgo.Opt{kgo.SeedBrokers("x")},
		OffsetSyncsTopic: "mm2-offset-syncs.dst.internal", OffsetRunsTopic: "mm2-kmirror-runs.dst.internal",
		SyncGroupOffsets: true, Interval: time.Second, TopicFilter: func(t string) bool { return !m.skipped[t] }})
	if err != nil {
		t.Fatal(err)
	}
	e.full = full
	e.sweepEvery = time.Hour // sweeps only when the model asks
	e.store = NewOffsetSyncStore(WithMustReadToEnd(false), WithRecentHistory(8))
	e.runs = NewRunStore(WithRunsPerPartition(16))
	e.store.MarkReadToEnd()
	return &side{m: m, e: e, tgroups: map[string]string{}, toffsets: map[string]map[cpKeyTP]int64{}}
}

// read feeds the model's new sync and run records to the emitter, as the
// syncs tailer does.
func (s *side) read(feed []feedRec) {
	s.e.storeMu.Lock()
	defer s.e.storeMu.Unlock()
	for _, r := range feed {
		if r.sync != nil {
			s.e.addSync(*r.sync, r.headers)
		} else {
			s.e.addRun(*r.run, r.headers)
		}
	}
}

func (s *side) listGroups(context.Context) ([]string, error) {
	var out []string
	for g := range s.m.commits {
		out = append(out, g)
	}
	sort.Strings(out)
	return out, nil
}

func (s *side) fetchOffsets(_ context.Context, groups []string) ([]kmsg.OffsetFetchResponseGroup, map[string]error) {
	var out []kmsg.OffsetFetchResponseGroup
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g
		byTopic := map[string][]kmsg.OffsetFetchResponseGroupTopicPartition{}
		for k, o := range s.m.commits[g] {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.Metadata = k.partition, o, kmsg.StringPtr("m")
			byTopic[k.topic] = append(byTopic[k.topic], rp)
		}
		for _, t := range sortedKeys(byTopic) {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.Partitions = t, byTopic[t]
			rg.Topics = append(rg.Topics, rt)
		}
		out = append(out, rg)
	}
	if s.edit != nil {
		out = s.edit(out)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (s *side) topicIDs(_ context.Context, topics []string) (map[string][16]byte, error) {
	out := map[string][16]byte{}
	for _, t := range topics {
		out[t] = [16]byte{0xff, byte(len(t))} // source topics are never re-created here
	}
	return out, nil
}

func (s *side) listTarget(_ context.Context, topics []string) (*targetView, error) {
	if s.onList != nil {
		s.onList()
	}
	if s.listErr != nil {
		return nil, s.listErr
	}
	return s.view(topics), nil
}

// view is the model target's view of topics.
func (s *side) view(topics []string) *targetView {
	v := &targetView{cluster: s.m.cluster, ids: map[string][16]byte{}, missing: map[string]bool{}, ends: kadm.ListedOffsets{}}
	for _, t := range topics {
		id, ok := s.m.remote[t]
		if !ok {
			v.missing[t] = true
			continue
		}
		v.ids[t] = id
		v.ends[t] = map[int32]kadm.ListedOffset{}
		for p := range s.m.parts {
			v.ends[t][p] = kadm.ListedOffset{Topic: t, Partition: p, Offset: s.m.ends[cpKeyTP{t, p}]}
		}
	}
	return v
}

func (s *side) createTopic(context.Context) error { return nil }

func (s *side) write(_ context.Context, _ time.Time, cps []Checkpoint) []Checkpoint {
	if s.quiet {
		s.writes += len(cps)
		return nil
	}
	var failed []Checkpoint
	var ok []Checkpoint
	for _, cp := range cps {
		s.writes++
		if s.failEvery > 0 && s.writes%s.failEvery == 0 {
			failed = append(failed, cp)
			if last, has := s.e.cps.Last(cp.Group, cp.Topic, cp.Partition); has && last == cp {
				s.e.cps.Forget(cp.Group, cp.Topic, cp.Partition)
			}
			continue
		}
		ok = append(ok, cp)
		s.written = append(s.written, writtenCp{cp: cp, target: s.e.cps.Target(cp.Group, cp.Topic, cp.Partition), exact: s.e.cps.Exact(cp.Group, cp.Topic, cp.Partition)})
	}
	s.emitted = append(s.emitted, ok...)
	return failed
}

// writtenCp is a checkpoint record as written: the checkpoint and what its
// headers record (target identity, exact translation).
type writtenCp struct {
	cp     Checkpoint
	target targetID
	exact  bool
}

// restarted returns a new side for s's world: a new emitter, as a member
// starting does, that loads the checkpoints s wrote (the last per key,
// with the headers written) and reads every sync and run record in
// history; the target's groups and their offsets are kept. legacy: the
// checkpoints written so far were MM2's or an older release's (no target
// identity, not exact). compact: the offset-syncs topic was compacted to
// the newest sync per source partition.
func (s *side) restarted(t testing.TB, history []feedRec, legacy, compact bool) *side {
	t.Helper()
	n := newSide(t, s.m, s.e.full)
	n.e.syncBatch = s.e.syncBatch
	n.failEvery, n.writes = s.failEvery, s.writes
	n.tgroups, n.toffsets = s.tgroups, s.toffsets
	if legacy {
		old := make([]writtenCp, len(s.written))
		for i, w := range s.written {
			old[i] = writtenCp{cp: w.cp}
		}
		s.written = old
	}
	n.written = s.written
	for _, w := range s.written {
		if !n.e.cps.Load(w.cp) {
			continue
		}
		n.e.cps.SetTarget(w.cp.Group, w.cp.Topic, w.cp.Partition, w.target)
		n.e.cps.SetExact(w.cp.Group, w.cp.Topic, w.cp.Partition, w.exact)
	}
	if compact {
		newest := map[tpKey]int{}
		for i, r := range history {
			if r.sync != nil {
				newest[tpKey{r.sync.Topic, r.sync.Partition}] = i
			}
		}
		var kept []feedRec
		for i, r := range history {
			if r.sync == nil || newest[tpKey{r.sync.Topic, r.sync.Partition}] == i {
				kept = append(kept, r)
			}
		}
		history = kept
	}
	n.read(history)
	return n
}

func (s *side) listTargetGroups(context.Context) (kadm.ListedGroups, error) {
	out := kadm.ListedGroups{}
	for g, st := range s.tgroups {
		out[g] = kadm.ListedGroup{Group: g, State: st, ProtocolType: "consumer"}
	}
	return out, nil
}

func (s *side) fetchTargetOffsets(_ context.Context, groups []string) ([]kmsg.OffsetFetchResponseGroup, map[string]error) {
	var out []kmsg.OffsetFetchResponseGroup
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g
		if _, ok := s.tgroups[g]; !ok {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			out = append(out, rg)
			continue
		}
		byTopic := map[string][]kmsg.OffsetFetchResponseGroupTopicPartition{}
		for k, o := range s.toffsets[g] {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset = k.partition, o
			byTopic[k.remote] = append(byTopic[k.remote], rp)
		}
		for _, t := range sortedKeys(byTopic) {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.Partitions = t, byTopic[t]
			rg.Topics = append(rg.Topics, rt)
		}
		out = append(out, rg)
	}
	return out, nil
}

func (s *side) listEnds(_ context.Context, topics []string) (kadm.ListedOffsets, error) {
	v := s.view(topics)
	out := v.ends
	for t := range v.missing {
		out[t] = map[int32]kadm.ListedOffset{-1: {Topic: t, Partition: -1, Err: kerr.UnknownTopicOrPartition}}
	}
	return out, nil
}

// listStarts lists the remote partitions' log starts: 0, the model's
// remote logs keep every record.
func (s *side) listStarts(ctx context.Context, topics []string) (kadm.ListedOffsets, error) {
	ends, err := s.listEnds(ctx, topics)
	out := kadm.ListedOffsets{}
	for t, ps := range ends {
		for p, o := range ps {
			if p >= 0 && o.Err == nil {
				if out[t] == nil {
					out[t] = map[int32]kadm.ListedOffset{}
				}
				out[t][p] = kadm.ListedOffset{Topic: t, Partition: p, Offset: 0, LeaderEpoch: -1}
			}
		}
	}
	return out, err
}

func (s *side) topicMeta(_ context.Context, topics []string) (kadm.TopicDetails, error) {
	if s.metaErr != nil {
		return nil, s.metaErr
	}
	out := kadm.TopicDetails{}
	for _, t := range topics {
		out[t] = kadm.TopicDetail{Topic: t, ID: s.m.remote[t]}
	}
	return out, nil
}

func (s *side) commit(_ context.Context, plan *commitPlan, _ kadm.TopicDetails) {
	s.mu.Lock() // commits run concurrently
	defer s.mu.Unlock()
	plan.errs = make([]error, len(plan.parts))
	st, exists := s.tgroups[plan.group]
	if exists && !idleOnTarget(st, true) {
		for i := range plan.errs {
			plan.errs[i] = kerr.UnknownMemberID
		}
		return
	}
	if !exists {
		s.tgroups[plan.group] = "Empty"
	}
	if s.toffsets[plan.group] == nil {
		s.toffsets[plan.group] = map[cpKeyTP]int64{}
	}
	for _, p := range plan.parts {
		s.toffsets[plan.group][p.key] = p.offset
		if s.quiet {
			continue
		}
		// The oracle: a target group offset above the first record copied
		// from the group's source offset on skips records for good.
		if g := s.e.groups[plan.group]; g != nil {
			if pe := g.parts.get(tpKey{topic: s.e.sourceOf[p.key.remote], partition: p.key.partition}); pe != nil {
				if x := s.m.exactAt(p.key, pe.srcOffset); p.offset > x {
					s.skips = append(s.skips, fmt.Sprintf("%s %s-%d=%d at source offset %d, whose first record is at target offset %d",
						plan.group, p.key.remote, p.key.partition, p.offset, pe.srcOffset, x))
				}
			}
		}
		s.committed = append(s.committed, fmt.Sprintf("%s %s-%d=%d", plan.group, p.key.remote, p.key.partition, p.offset))
	}
}

// statusesOf returns the emitter's statuses without their fetch times.
func statusesOf(e *Emitter) []GroupStatus {
	out := e.Status()
	for i := range out {
		out[i].Updated, out[i].LastCheckpoint = time.Time{}, time.Time{}
	}
	return out
}

// TestIncrementalEqualsFull is the property test of issue 22: over random
// sequences of commits, syncs, runs and target changes, the incremental
// emitter writes the same checkpoints, commits the same group offsets and
// reports the same statuses as a full recomputation, at every step; and
// neither writes a checkpoint past the target's log end nor a checkpoint or
// group offset above the first record copied from its source offset on.
func TestIncrementalEqualsFull(t *testing.T) {
	seeds, steps := 60, 250
	if testing.Short() {
		seeds = 10
	}
	if n, err := strconv.Atoi(os.Getenv("KMIRROR_INCREMENTAL_SEEDS")); err == nil && n > 0 {
		seeds, steps = n, 600 // a longer search: KMIRROR_INCREMENTAL_SEEDS=2000
	}
	for seed := range uint64(seeds) {
		// Odd seeds: syncs and runs record the remote topic's ID too.
		// Seeds 2-3 modulo 4: retention moves the source's log start, and
		// deleting a remote topic deletes its target group offsets.
		// Seeds 4-7 modulo 8: the member restarts now and then.
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runIncrementalVsFull(t, seed, steps, seed%2 == 1, seed%4 >= 2, seed%8 >= 4) })
	}
}

// TestIncrementalEqualsFullSmallChunks is TestIncrementalEqualsFull with
// emissions queued and written 3 group partitions at a time (writeChunk),
// with every seventh checkpoint write failing in half the seeds as there: chunked writing
// gives the same checkpoints, commits and statuses as a full recomputation.
func TestIncrementalEqualsFullSmallChunks(t *testing.T) {
	old := writeChunk
	writeChunk = 3
	t.Cleanup(func() { writeChunk = old })
	seeds := 24
	if testing.Short() {
		seeds = 8
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runIncrementalVsFull(t, seed, 250, seed%2 == 1, seed%4 >= 2, seed%8 >= 4) })
	}
}

// runIncrementalVsFull runs one seed of TestIncrementalEqualsFull: tagIDs
// has syncs and runs record the remote topic's ID; retention adds source
// log starts that move (replacing one sweep event in four), and makes a
// remote topic's re-creation delete its target group offsets, as Kafka
// does; restarts (an optional last argument) replaces half the other sweep
// events by a member restart, and restarts one re-creation in three at
// once (both emitters start again from the checkpoints written, untagged
// unless tagIDs, and every sync and run read). All off, a seed replays
// the sequence it had before they existed.
func runIncrementalVsFull(t *testing.T, seed uint64, steps int, tagIDs, retention bool, restarts ...bool) {
	m := newModel(seed)
	restart := len(restarts) > 0 && restarts[0]
	var history []feedRec // every sync and run record the emitters read
	// aux draws the restarts' details, so that the model's own sequence
	// stays the one each seed had before they existed.
	aux := rand.New(rand.NewPCG(seed, 23))
	recreatedUnread := false // a re-creation since the emitters last read every sync
	m.tagIDs = tagIDs
	inc, full := newSide(t, m, false), newSide(t, m, true)
	// The incremental side plans its sync rounds a few groups at a time:
	// batched planning must commit what one plan of every group does.
	inc.e.syncBatch = 1 + int(seed%3)
	sides := []*side{inc, full}
	restartBoth := func() {
		legacy := !m.tagIDs && aux.IntN(2) == 0 // MM2 or an older release wrote the checkpoints so far
		compact := aux.IntN(2) == 0
		inc, full = inc.restarted(t, history, legacy, compact), full.restarted(t, history, legacy, compact)
		sides = []*side{inc, full}
		if !m.tagIDs && aux.IntN(4) == 0 {
			m.tagIDs = true // kmirror's replicator takes over from MM2's (or an older release's)
		}
	}
	if m.rng.IntN(2) == 0 {
		for _, s := range sides {
			s.failEvery = 7
		}
	}
	groups := []string{"ga", "gb", "gc", "gd", "ge"}
	ctx := context.Background()
	var trace []string
	// unseen: a target change the incremental emitter has not swept yet
	// (0), swept by an emission but not by a sync round (1), or none (2):
	// statuses are compared only then (the full sync round plans every
	// group with fresh log ends at once).
	unseen := 2
	anyKey := func() tpKey { return tpKey{m.topics[m.rng.IntN(len(m.topics))], int32(m.rng.IntN(int(m.parts)))} }
	for step := range steps {
		var ev string
		switch r := m.rng.IntN(100); {
		case r < 20:
			k := anyKey()
			n, gap := int64(1+m.rng.IntN(20)), int64(0)
			if m.rng.IntN(4) == 0 {
				gap = int64(1 + m.rng.IntN(3))
			}
			m.produce(k, n, gap)
			ev = fmt.Sprintf("produce %v n=%d gap=%d", k, n, gap)
		case r < 38:
			k := anyKey()
			n := 1 + m.rng.IntN(30)
			m.replicate(k, n)
			ev = fmt.Sprintf("replicate %v n=%d", k, n)
		case r < 58:
			g, k := groups[m.rng.IntN(len(groups))], anyKey()
			if m.commits[g] == nil {
				m.commits[g] = map[tpKey]int64{}
			}
			o := m.rng.Int64N(m.srcEnd[k] + 1)
			m.commits[g][k] = o
			ev = fmt.Sprintf("commit %s %v=%d", g, k, o)
		case r < 60:
			g := groups[m.rng.IntN(len(groups))]
			if c := m.commits[g]; len(c) > 0 && m.rng.IntN(2) == 0 {
				for k := range c {
					delete(c, k)
					ev = fmt.Sprintf("offset deleted %s %v", g, k)
					break
				}
			} else {
				delete(m.commits, g)
				ev = "group deleted " + g
			}
		case r < 62:
			topic := m.topics[m.rng.IntN(len(m.topics))]
			m.recreateRemote(topic)
			inc.e.forceSweep = true
			unseen = 0
			// Kafka deletes the committed offsets of a deleted topic's
			// partitions: the next sync round may commit afresh.
			for _, s := range sides {
				if !retention {
					break
				}
				for _, offs := range s.toffsets {
					for ck := range offs {
						if ck.remote == "src."+topic {
							delete(offs, ck)
						}
					}
				}
			}
			if retention {
				inc.e.forceSyncSweep = true
			}
			ev = "remote re-created " + topic
			recreatedUnread = true
			if restart && m.rng.IntN(3) == 0 {
				// The member restarts before any emission saw it: its
				// first listing has no earlier ID to compare with.
				restartBoth()
				ev += ", restart"
			}
		case r < 63:
			m.rebuildTarget()
			for _, s := range sides {
				s.written = nil // the checkpoints topic was on the old target
			}
			inc.e.forceSweep = true
			// Every target group's offsets are gone: a group idle before
			// and after (deleted by the rebuild, created Empty again before
			// the next round) shows no state change, and is found at the
			// next sync sweep, as after a deletion.
			inc.e.forceSyncSweep = true
			unseen = 0
			for _, s := range sides {
				s.tgroups, s.toffsets = map[string]string{}, map[string]map[cpKeyTP]int64{}
			}
			ev = "target rebuilt " + m.cluster
			recreatedUnread = true
		case r < 70:
			g := groups[m.rng.IntN(len(groups))]
			st := []string{"Stable", "Empty", "PreparingRebalance", ""}[m.rng.IntN(4)]
			for _, s := range sides {
				if st == "" {
					delete(s.tgroups, g)
					delete(s.toffsets, g)
					inc.e.forceSyncSweep = true // its offsets are gone: seen at a sweep if it comes back meanwhile
				} else {
					s.tgroups[g] = st
				}
			}
			ev = fmt.Sprintf("target group %s -> %q", g, st)
		case r < 73:
			g := groups[m.rng.IntN(len(groups))]
			k := anyKey()
			ck := cpKeyTP{"src." + k.topic, k.partition}
			o := m.rng.Int64N(m.ends[ck] + 1)
			for _, s := range sides {
				if s.toffsets[g] == nil {
					s.toffsets[g] = map[cpKeyTP]int64{}
				}
				s.toffsets[g][ck] = o
				if _, ok := s.tgroups[g]; !ok {
					s.tgroups[g] = "Empty"
				}
			}
			inc.e.forceSyncSweep = true // found at the next sync sweep
			ev = fmt.Sprintf("target group %s reset %v=%d", g, ck, o)
		case r == 74 && restart:
			// The member restarts: new emitters load the checkpoints
			// written and read the syncs and runs from the start.
			restartBoth()
			unseen = 0 // the new incremental emitter lists the target at its first emission
			ev = "restart"
		case r < 75 || (r < 76 && !retention):
			inc.e.forceSweep = true
			ev = "sweep"
		case r < 76:
			// Retention deletes the head of a source partition: a refill
			// of its remote topic maps source offsets lower than before.
			k := anyKey()
			n := m.rng.Int64N(m.srcEnd[k] + 1)
			for o := range n {
				m.holes[k][o] = true
			}
			ev = fmt.Sprintf("source log start %v=%d", k, n)
		case r < 77:
			topic := m.topics[m.rng.IntN(len(m.topics))]
			m.skipped[topic] = !m.skipped[topic]
			ev = fmt.Sprintf("topic %s skipped=%v", topic, m.skipped[topic])
		case r < 90:
			feed := m.feed
			m.feed = nil
			lagging := ""
			if restart && len(feed) > 0 && aux.IntN(3) == 0 {
				// The syncs tailer is behind the replicator: the
				// emission reads part of what was written.
				p := aux.IntN(len(feed))
				feed, m.feed = feed[:p], append([]feedRec(nil), feed[p:]...)
				lagging = fmt.Sprintf(" (lagging: %d of %d sync and run records read)", p, p+len(m.feed))
			}
			// window: a remote topic was re-created (or the target
			// rebuilt) and syncs recording no remote topic ID are still
			// unread, so the emission may have translated its partitions
			// with the old log's syncs within the new log's end
			// (DESIGN.md's limit for MM2-written syncs).
			window := !m.tagIDs && recreatedUnread && len(m.feed) > 0
			if len(m.feed) == 0 {
				recreatedUnread = false
			}
			history = append(history, feed...)
			for _, s := range sides {
				s.emitted = nil
				s.read(feed)
				s.e.emit(ctx, s)
			}
			ev = "emit" + lagging
			if unseen == 0 {
				unseen = 1
			}
			a, b := inc.emitted, full.emitted
			if d := cmp.Diff(b, a, cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("step %d: checkpoints of the emission (-full +incremental):\n%s\ntrace:\n%s", step, d, strings.Join(trace, "\n"))
			}
			for _, cp := range a {
				if end := m.ends[cpKeyTP{cp.Topic, cp.Partition}]; cp.DownstreamOffset > end {
					t.Fatalf("step %d: checkpoint %+v past the target log end %d\ntrace:\n%s", step, cp, end, strings.Join(trace, "\n"))
				}
				if x := m.exactAt(cpKeyTP{cp.Topic, cp.Partition}, cp.UpstreamOffset); cp.DownstreamOffset > x && !window {
					t.Fatalf("step %d: checkpoint %+v skips records: the first record from source offset %d is at target offset %d\ntrace:\n%s",
						step, cp, cp.UpstreamOffset, x, strings.Join(trace, "\n"))
				}
			}
			if len(m.feed) == 0 {
				// Every sync read: a last checkpoint recording the
				// current remote topic ID (group offset sync falls back
				// on those) is of the current log.
				for _, s := range sides {
					for _, g := range s.e.groups {
						for _, pe := range g.parts {
							last, ok := s.e.cps.Last(g.name, pe.remote, pe.partition)
							if !ok || s.e.cps.Target(g.name, pe.remote, pe.partition).topic != m.remote[pe.remote] {
								continue
							}
							if x := m.exactAt(cpKeyTP{pe.remote, pe.partition}, last.UpstreamOffset); last.DownstreamOffset > x {
								t.Fatalf("step %d: last checkpoint %+v, recording the current remote topic ID, skips records: the first record from source offset %d is at target offset %d\ntrace:\n%s",
									step, last, last.UpstreamOffset, x, strings.Join(trace, "\n"))
							}
						}
					}
				}
			}
		default:
			for _, s := range sides {
				s.committed = nil
				s.e.sync(ctx, s)
				s.e.publish()
			}
			ev = "sync"
			if unseen == 1 {
				unseen = 2
			}
			for _, s := range sides {
				if !m.tagIDs && recreatedUnread && len(m.feed) > 0 {
					s.skips = nil // inside the window of the documented limit (see window above)
				}
				if len(s.skips) > 0 {
					t.Fatalf("step %d: group commits skip records: %v\ntrace:\n%s", step, s.skips, strings.Join(trace, "\n"))
				}
			}
			sort.Strings(inc.committed)
			sort.Strings(full.committed)
			if d := cmp.Diff(full.committed, inc.committed, cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("step %d: group commits (-full +incremental):\n%s\ntrace:\n%s", step, d, strings.Join(trace, "\n"))
			}
		}
		trace = append(trace, fmt.Sprintf("%d %s", step, ev))
		if (strings.HasPrefix(ev, "emit") || ev == "sync") && unseen == 2 {
			if d := cmp.Diff(statusesOf(full.e), statusesOf(inc.e), cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("step %d: statuses (-full +incremental):\n%s\ntrace:\n%s", step, d, strings.Join(trace, "\n"))
			}
		}
	}
	if inc.e.work.translations.Load() >= full.e.work.translations.Load() && full.e.work.translations.Load() > 100 {
		t.Errorf("incremental emitter translated %d times, the full one %d: no saving", inc.e.work.translations.Load(), full.e.work.translations.Load())
	}
}
