package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
)

// reqCounter counts the requests a client writes, by API key (a kgo
// HookBrokerWrite).
type reqCounter struct {
	mu sync.Mutex
	n  map[int16]int
}

func (c *reqCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[int16]int{}
	}
	c.n[key]++
}

// take returns the counts since the last call and resets them.
func (c *reqCounter) take() map[int16]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = nil
	if out == nil {
		out = map[int16]int{}
	}
	return out
}

// work is a snapshot of an emitter's work counters.
type work struct{ translations, checks, statuses, written, planned int64 }

func (e *Emitter) workSnapshot() work {
	return work{e.work.translations.Load(), e.work.checks.Load(), e.work.statuses.Load(), e.work.written.Load(), e.work.planned.Load()}
}

func (w work) minus(o work) work {
	return work{w.translations - o.translations, w.checks - o.checks, w.statuses - o.statuses, w.written - o.written, w.planned - o.planned}
}

// TestIdleEmissionWork is issue 22's integration test: 300 groups, each
// committed on the 4 partitions of a topic, on a source of 3 brokers (so
// several group coordinators), checkpointed and synced into the target.
// Then, with nothing changing, an emission sends exactly one OffsetFetch
// per coordinator to the source and nothing to the target, and does no
// per-group-partition work (translation, target check, status, write); a
// sync round sends one ListGroups per broker and one OffsetFetch per
// coordinator to the target, plans no group and commits nothing. When one
// group moves, only its partitions are translated, checked and written.
func TestIdleEmissionWork(t *testing.T) {
	const groups, parts = 300, 4
	p := testcluster.New(t, "src", "dst", kfake.NumBrokers(3))
	pol, err := policy.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	topic := p.Topic("orders")
	remote := pol.FormatRemoteTopic(p.Source.Alias, topic)
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	testcluster.CreateTopic(t, &p.Target, remote, parts, nil)
	var recs []*kgo.Record
	for part := range int32(parts) {
		for i := range 100 {
			recs = append(recs, &kgo.Record{Topic: remote, Partition: part, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	testcluster.Produce(t, &p.Target, recs...)
	adm := testcluster.Admin(t, &p.Source)
	names := make([]string, groups)
	var wg sync.WaitGroup
	errc := make(chan error, groups)
	sem := make(chan struct{}, 16)
	for i := range groups {
		names[i] = p.Group(fmt.Sprintf("g%03d", i))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var os kadm.Offsets
			for part := range int32(parts) {
				os.Add(kadm.Offset{Topic: topic, Partition: part, At: int64(i % 100), LeaderEpoch: -1})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			errc <- adm.CommitAllOffsets(ctx, names[i], os)
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	coords := adm.FindGroupCoordinators(ctx, names...)
	srcCoords := map[int32]bool{}
	for _, c := range coords {
		if c.Err != nil {
			t.Fatalf("coordinator of %s: %v", c.Name, c.Err)
		}
		srcCoords[c.NodeID] = true
	}

	mine := func(s string) bool { return strings.HasSuffix(s, p.Topic("")) }
	e, err := NewEmitter(EmitterConfig{
		SourceAlias: p.Source.Alias, TargetAlias: p.Target.Alias, Policy: pol,
		SourceOpts: p.Source.Opts(), TargetOpts: p.Target.Opts(), OffsetSyncsOpts: p.Source.Opts(),
		OffsetSyncsTopic: pol.OffsetSyncsTopic(p.Target.Alias), SyncGroupOffsets: true, AdminTimeout: 30 * time.Second,
		GroupFilter: mine, TopicFilter: func(s string) bool { return s == topic },
	})
	if err != nil {
		t.Fatal(err)
	}
	e.sweepEvery = time.Hour // the first emission sweeps; the idle ones must not
	e.store = NewOffsetSyncStore(WithMustReadToEnd(false), WithRecentHistory(DefaultRecentHistory))
	e.runs = NewRunStore()
	for part := range int32(parts) {
		for u := int64(0); u < 100; u += 10 {
			e.addSync(OffsetSync{Topic: topic, Partition: part, UpstreamOffset: u, DownstreamOffset: u}, nil)
		}
	}
	e.store.MarkReadToEnd()
	var srcReqs, dstReqs reqCounter
	srcCl := testcluster.Client(t, &p.Source, kgo.WithHooks(&srcReqs))
	dstCl := testcluster.Client(t, &p.Target, kgo.WithHooks(&dstReqs), kgo.DefaultProduceTopic(e.cpTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	r := &run{e: e, src: kadm.NewClient(srcCl), srcCl: srcCl, dst: kadm.NewClient(dstCl), dstCl: dstCl}
	if err := r.createTopic(ctx); err != nil {
		t.Fatal(err)
	}

	// The first emission and sync: everything is new.
	if !r.emit(ctx) {
		t.Fatal("first emission failed")
	}
	// The first sync plans every group. On a fresh real cluster the
	// target's group coordinators may still be loading (its offsets topic
	// is created by the first commit), so the groups it could not commit
	// are planned again by the next rounds until all are synced.
	synced := func() int {
		n := 0
		for _, gs := range e.Status() {
			if gs.State == StateSynced {
				n++
			}
		}
		return n
	}
	r.sync(ctx)
	e.publish()
	first := e.workSnapshot()
	if first.translations != groups*parts || first.written != groups*parts || first.planned != groups {
		t.Fatalf("first emission and sync: %+v, want %d translations and checkpoints, %d groups planned", first, groups*parts, groups)
	}
	testcluster.Eventually(t, 30*time.Second, "every group synced", func() (bool, string) {
		if n := synced(); n != groups {
			r.sync(ctx)
			e.publish()
			return false, fmt.Sprintf("%d of %d groups synced", n, groups)
		}
		return true, ""
	})

	// Idle: three emissions and sync rounds.
	srcReqs.take()
	dstReqs.take()
	before := e.workSnapshot()
	const rounds = 3
	for range rounds {
		if !r.emit(ctx) {
			t.Fatal("idle emission failed")
		}
		e.publish()
	}
	if d := e.workSnapshot().minus(before); d != (work{}) {
		t.Errorf("idle emissions did per-group-partition work: %+v, want none", d)
	}
	src, dst := srcReqs.take(), dstReqs.take()
	if got, want := src[kmsg.OffsetFetch.Int16()], rounds*len(srcCoords); got != want {
		t.Errorf("idle emissions sent %d OffsetFetch requests to the source, want %d (one per coordinator, %d coordinators, %d emissions)",
			got, want, len(srcCoords), rounds)
	}
	for _, key := range []kmsg.Key{kmsg.ListOffsets, kmsg.Produce, kmsg.OffsetCommit, kmsg.OffsetFetch} {
		if n := dst[key.Int16()]; n != 0 {
			t.Errorf("idle emissions sent %d %s requests to the target, want 0", n, key.Name())
		}
	}
	dstCoords := map[int32]bool{}
	tcoords := testcluster.Admin(t, &p.Target).FindGroupCoordinators(ctx, names...)
	for _, c := range tcoords {
		dstCoords[c.NodeID] = true
	}
	before = e.workSnapshot()
	for range rounds {
		r.sync(ctx)
		e.publish()
	}
	if d := e.workSnapshot().minus(before); d != (work{}) {
		t.Errorf("idle sync rounds did per-group work: %+v, want none", d)
	}
	dst = dstReqs.take()
	brokers, err := testcluster.Admin(t, &p.Target).ListBrokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dst[kmsg.ListGroups.Int16()], rounds*len(brokers); got != want {
		t.Errorf("idle sync rounds sent %d ListGroups requests to the target, want %d (one per broker, %d brokers, %d rounds)", got, want, len(brokers), rounds)
	}
	for _, key := range []kmsg.Key{kmsg.OffsetFetch, kmsg.ListOffsets, kmsg.OffsetCommit} {
		if n := dst[key.Int16()]; n != 0 {
			t.Errorf("idle sync rounds sent %d %s requests to the target, want 0", n, key.Name())
		}
	}
	// A sync sweep (every minute) fetches every idle group's target
	// offsets: one OffsetFetch per coordinator, still nothing planned.
	before = e.workSnapshot()
	e.forceSyncSweep = true
	r.sync(ctx)
	e.publish()
	if d := e.workSnapshot().minus(before); d != (work{}) {
		t.Errorf("idle sync sweep did per-group work: %+v, want none", d)
	}
	dst = dstReqs.take()
	if got, want := dst[kmsg.OffsetFetch.Int16()], len(dstCoords); got != want {
		t.Errorf("idle sync sweep sent %d OffsetFetch requests to the target, want %d (one per coordinator)", got, want)
	}
	for _, key := range []kmsg.Key{kmsg.ListOffsets, kmsg.OffsetCommit} {
		if n := dst[key.Int16()]; n != 0 {
			t.Errorf("idle sync sweep sent %d %s requests to the target, want 0", n, key.Name())
		}
	}

	// One group moves: only its partitions are translated, checked,
	// written and planned.
	var os kadm.Offsets
	for part := range int32(parts) {
		os.Add(kadm.Offset{Topic: topic, Partition: part, At: 95, LeaderEpoch: -1})
	}
	if err := adm.CommitAllOffsets(ctx, names[7], os); err != nil {
		t.Fatal(err)
	}
	before = e.workSnapshot()
	if !r.emit(ctx) {
		t.Fatal("emission failed")
	}
	r.sync(ctx)
	e.publish()
	want := work{translations: parts, checks: parts, statuses: 1, written: parts, planned: 1}
	if d := e.workSnapshot().minus(before); d.translations != want.translations || d.checks != want.checks ||
		d.written != want.written || d.planned != want.planned || d.statuses > 2 {
		t.Errorf("one group moved: work %+v, want %+v (statuses at most 2: the emission's and the sync's)", d, want)
	}
	got := groupOffsets(t, &p.Target, names[7], remote)
	for part := range int32(parts) {
		if got[part] != 91 { // MM2's rule on the sync at 90: 90+1
			t.Errorf("target offset of %s partition %d = %d, want 91", names[7], part, got[part])
		}
	}
}

// TestCheckpointsTopicMustKeepRecords: the emitter never rewrites an
// unchanged checkpoint, so a checkpoints topic created in advance whose
// records expire is refused at start, naming the fix; a compacted one,
// also compact,delete without retention, is accepted.
func TestCheckpointsTopicMustKeepRecords(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	pol, err := policy.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		configs map[string]*string
		want    string // "" accepted, else the error's type
	}{
		{"compact", map[string]*string{"cleanup.policy": str("compact")}, ""},
		{"compact,delete without retention", map[string]*string{"cleanup.policy": str("compact,delete"), "retention.ms": str("-1")}, ""},
		{"compact,delete with retention", map[string]*string{"cleanup.policy": str("compact,delete"), "retention.ms": str("604800000")}, "retention"},
		{"delete", map[string]*string{"cleanup.policy": str("delete"), "retention.ms": str("-1")}, "policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := p.Topic(strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", ""), ",", ""))
			e, err := NewEmitter(EmitterConfig{SourceAlias: src, TargetAlias: p.Target.Alias, Policy: pol,
				SourceOpts: p.Source.Opts(), TargetOpts: p.Target.Opts(), OffsetSyncsOpts: p.Source.Opts(),
				OffsetSyncsTopic: "mm2-offset-syncs.dst.internal", AdminTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			testcluster.CreateTopic(t, &p.Target, e.CheckpointsTopic(), 1, tc.configs)
			r := &run{e: e, dst: testcluster.Admin(t, &p.Target)}
			err = r.createTopic(context.Background())
			var re *RetentionError
			var pe *ensuretopic.PolicyError
			switch tc.want {
			case "":
				if err != nil {
					t.Errorf("createTopic: %v, want the topic accepted", err)
				}
			case "retention":
				if !errors.As(err, &re) || re.Topic != e.CheckpointsTopic() || re.Retention != "604800000" {
					t.Errorf("createTopic: %v, want a RetentionError for %s with retention.ms 604800000", err, e.CheckpointsTopic())
				} else if !strings.Contains(err.Error(), "cleanup.policy=compact") {
					t.Errorf("error %q does not name the fix", err)
				}
			case "policy":
				if !errors.As(err, &pe) {
					t.Errorf("createTopic: %v, want ensuretopic's PolicyError", err)
				}
			}
		})
	}
}
