package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
)

// fixture is a source/target pair prepared for the emitter: a source topic
// and its remote topic with records, and an offset-syncs topic on the
// source that the test fills by hand (the replicator is not running).
type fixture struct {
	t          *testing.T
	p          *testcluster.Pair
	topic      string // source topic
	remote     string // its remote name on the target
	syncsTopic string
	runsTopic  string
	pol        policy.ReplicationPolicy
}

func newFixture(t *testing.T, partitions int32, targetRecords int) *fixture {
	t.Helper()
	return newFixtureOn(t, testcluster.New(t, "src", "dst"), partitions, targetRecords)
}

// newFixtureOn is newFixture on the pair p (testcluster.NewFakePair for a
// test of kfake's hooks).
func newFixtureOn(t *testing.T, p *testcluster.Pair, partitions int32, targetRecords int) *fixture {
	t.Helper()
	pol, err := policy.NewDefault()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, p: p, topic: p.Topic("orders"), pol: pol}
	f.remote = pol.FormatRemoteTopic(p.Source.Alias, f.topic)
	f.syncsTopic = pol.OffsetSyncsTopic(p.Target.Alias)
	f.runsTopic = OffsetRunsTopic(f.syncsTopic)
	compact := "compact"
	testcluster.CreateTopic(t, &p.Source, f.topic, partitions, nil)
	testcluster.CreateTopic(t, &p.Target, f.remote, partitions, nil)
	testcluster.CreateTopic(t, &p.Source, f.syncsTopic, 1, map[string]*string{"cleanup.policy": &compact})
	testcluster.CreateTopic(t, &p.Source, f.runsTopic, 1, map[string]*string{"cleanup.policy": &compact})
	if targetRecords > 0 {
		var recs []*kgo.Record
		for part := range partitions {
			for i := range targetRecords {
				recs = append(recs, &kgo.Record{Topic: f.remote, Partition: part, Value: fmt.Appendf(nil, "%d", i)})
			}
		}
		testcluster.Produce(t, &p.Target, recs...)
	}
	return f
}

// syncs writes offset syncs for partition part of the source topic.
func (f *fixture) syncs(part int32, pairs ...[2]int64) {
	f.t.Helper()
	var recs []*kgo.Record
	for _, pr := range pairs {
		s := OffsetSync{Topic: f.topic, Partition: part, UpstreamOffset: pr[0], DownstreamOffset: pr[1]}
		k, err := s.Key()
		if err != nil {
			f.t.Fatal(err)
		}
		v, err := s.Value()
		if err != nil {
			f.t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: f.syncsTopic, Partition: 0, Key: k, Value: v})
	}
	testcluster.Produce(f.t, &f.p.Source, recs...)
}

// runs writes offset runs of session 1 for partition part of the source
// topic: each run is {prevUp, prevDown, firstUp, firstDown, count}; the
// session's first record is the first run's.
func (f *fixture) runs(part int32, runs ...[5]int64) {
	f.t.Helper()
	var recs []*kgo.Record
	for _, r := range runs {
		run := OffsetRun{Topic: f.topic, Partition: part, Session: 1, Fresh: true,
			SessionUpstreamOffset: runs[0][2], SessionOffset: runs[0][3],
			PrevUpstreamOffset: r[0], PrevOffset: r[1], FirstUpstreamOffset: r[2], FirstOffset: r[3], Count: r[4],
			EndUpstreamOffset: -1}
		k, err := run.Key()
		if err != nil {
			f.t.Fatal(err)
		}
		v, err := run.Value()
		if err != nil {
			f.t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: f.runsTopic, Partition: 0, Key: k, Value: v})
	}
	testcluster.Produce(f.t, &f.p.Source, recs...)
}

// commit commits offsets (partition -> offset) of f.topic for group on c.
func (f *fixture) commit(c *testcluster.Cluster, group, topic string, offsets map[int32]int64) {
	f.t.Helper()
	var os kadm.Offsets
	for p, o := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := testcluster.Admin(f.t, c).CommitAllOffsets(ctx, group, os); err != nil {
		f.t.Fatalf("commit %s on %s: %v", group, c.Alias, err)
	}
}

// groupOffsets returns the committed offsets of group for topic on c
// (partition -> offset), empty when none.
func groupOffsets(t testing.TB, c *testcluster.Cluster, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := testcluster.Admin(t, c).FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{} // kfake's answer for an unknown group
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s on %s: %v", group, c.Alias, err)
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.Err == nil && o.At >= 0 {
			out[p] = o.At
		}
	}
	return out
}

type emitterOpt func(*EmitterConfig)

// mine reports whether a topic or group name was made by f.p.
func (f *fixture) mine(name string) bool { return strings.HasSuffix(name, f.p.Topic("")) }

// start runs an emitter until the returned stop function is called (also at
// cleanup); stop waits for Run to return.
func (f *fixture) start(opts ...emitterOpt) (*Emitter, func()) {
	f.t.Helper()
	cfg := EmitterConfig{
		SourceAlias:      f.p.Source.Alias,
		TargetAlias:      f.p.Target.Alias,
		Policy:           f.pol,
		SourceOpts:       f.p.Source.Opts(),
		TargetOpts:       f.p.Target.Opts(),
		OffsetSyncsOpts:  f.p.Source.Opts(),
		OffsetSyncsTopic: f.syncsTopic,
		OffsetRunsTopic:  f.runsTopic,
		Interval:         100 * time.Millisecond,
		SyncInterval:     100 * time.Millisecond,
		AdminTimeout:     5 * time.Second,
		// Shared real brokers hold other tests' groups and topics: keep
		// the pair's own (every name on kfake).
		GroupFilter: f.mine,
		TopicFilter: f.mine,
	}
	for _, o := range opts {
		o(&cfg)
	}
	e, err := NewEmitter(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				f.t.Errorf("Run: %v", err)
			}
		})
	}
	f.t.Cleanup(stop)
	return e, stop
}

// checkpoints reads the checkpoints topic on the target in log order.
func (f *fixture) checkpoints() []Checkpoint {
	f.t.Helper()
	topic := f.pol.CheckpointsTopic(f.p.Source.Alias)
	recs, err := testcluster.ReadTopic(context.Background(), f.p.Target.Opts(), topic, false)
	if err != nil {
		return nil
	}
	var out []Checkpoint
	for _, r := range recs[0] {
		cp, err := DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			f.t.Fatalf("checkpoint record at offset %d: %v", r.Offset, err)
		}
		out = append(out, cp)
	}
	return out
}

// latest returns the last checkpoint per (group, topic, partition).
func latest(cps []Checkpoint) map[string]Checkpoint {
	out := map[string]Checkpoint{}
	for _, cp := range cps {
		out[fmt.Sprintf("%s/%s/%d", cp.Group, cp.Topic, cp.Partition)] = cp
	}
	return out
}

func groupStatus(e *Emitter, group string) (GroupStatus, bool) {
	for _, g := range e.Status() {
		if g.Group == group {
			return g, true
		}
	}
	return GroupStatus{}, false
}

func TestEmitterWritesTranslatedCheckpoints(t *testing.T) {
	f := newFixture(t, 2, 200)
	// Partition 0: target offsets trail source offsets by 5 from 100 on.
	f.syncs(0, [2]int64{0, 0}, [2]int64{100, 95})
	f.syncs(1, [2]int64{0, 0})
	// The runs behind these syncs: source 0-94 at 0-94, 95-99 not copied
	// (compacted away), 100-199 at 95-194; partition 1 copied 1:1.
	f.runs(0, [5]int64{-1, -1, 0, 0, 95}, [5]int64{94, 94, 100, 95, 100})
	f.runs(1, [5]int64{-1, -1, 0, 0, 200})
	g1, g2 := f.p.Group("g1"), f.p.Group("g2")
	f.commit(&f.p.Source, g1, f.topic, map[int32]int64{0: 100, 1: 7})
	f.commit(&f.p.Source, g2, f.topic, map[int32]int64{0: 50, 1: 0})
	e, _ := f.start()

	want := map[string]Checkpoint{
		g1 + "/" + f.remote + "/0": {Group: g1, Topic: f.remote, Partition: 0, UpstreamOffset: 100, DownstreamOffset: 95},
		g1 + "/" + f.remote + "/1": {Group: g1, Topic: f.remote, Partition: 1, UpstreamOffset: 7, DownstreamOffset: 7},
		g2 + "/" + f.remote + "/0": {Group: g2, Topic: f.remote, Partition: 0, UpstreamOffset: 50, DownstreamOffset: 50},
		g2 + "/" + f.remote + "/1": {Group: g2, Topic: f.remote, Partition: 1, UpstreamOffset: 0, DownstreamOffset: 0},
	}
	testcluster.Eventually(t, 20*time.Second, "checkpoints", func() (bool, string) {
		d := cmp.Diff(want, latest(f.checkpoints()))
		return d == "", d
	})
	testcluster.Eventually(t, 10*time.Second, "status", func() (bool, string) {
		gs, ok := groupStatus(e, g1)
		return ok && gs.SafeToSwitch && gs.State == StateCheckpointed, fmt.Sprintf("%+v", gs)
	})
	gs, _ := groupStatus(e, g1)
	wantParts := []PartitionStatus{
		{Topic: f.topic, RemoteTopic: f.remote, Partition: 0, SourceOffset: 100, Translated: 95, Exact: true, Checkpointed: 95, TargetOffset: -1, CheckpointExact: true},
		{Topic: f.topic, RemoteTopic: f.remote, Partition: 1, SourceOffset: 7, Translated: 7, Exact: true, Checkpointed: 7, TargetOffset: -1, CheckpointExact: true},
	}
	if d := cmp.Diff(wantParts, gs.Partitions); d != "" {
		t.Errorf("g1 partitions (-want +got):\n%s", d)
	}

	// Unchanged positions are not re-emitted (docs/mm2-compat.md §6.4 step 5).
	n := len(f.checkpoints())
	time.Sleep(500 * time.Millisecond)
	if got := len(f.checkpoints()); got != n {
		t.Errorf("checkpoint records after idle intervals = %d, want %d (no re-emission)", got, n)
	}

	// The group moves: a new checkpoint (exact: MM2's rule on the syncs
	// would give 96); it rewinds upstream: emitted too.
	f.commit(&f.p.Source, g1, f.topic, map[int32]int64{0: 150})
	testcluster.Eventually(t, 10*time.Second, "g1 at 150", func() (bool, string) {
		cp := latest(f.checkpoints())[g1+"/"+f.remote+"/0"]
		return cp.UpstreamOffset == 150 && cp.DownstreamOffset == 145, fmt.Sprintf("%+v", cp)
	})
	f.commit(&f.p.Source, g1, f.topic, map[int32]int64{0: 0})
	testcluster.Eventually(t, 10*time.Second, "g1 rewound to 0", func() (bool, string) {
		cp := latest(f.checkpoints())[g1+"/"+f.remote+"/0"]
		return cp.UpstreamOffset == 0 && cp.DownstreamOffset == 0, fmt.Sprintf("%+v", cp)
	})
}

func TestEmitterSkipsUntranslatable(t *testing.T) {
	f := newFixture(t, 1, 10)
	other := f.p.Topic("scratch")
	testcluster.CreateTopic(t, &f.p.Source, other, 1, nil)
	f.syncs(0, [2]int64{100, 0})
	gOld, gNone, gOther := f.p.Group("old"), f.p.Group("none"), f.p.Group("other")
	f.commit(&f.p.Source, gOld, f.topic, map[int32]int64{0: 40}) // older than every sync
	f.commit(&f.p.Source, gOther, other, map[int32]int64{0: 5})  // topic filtered out
	noSyncs := f.p.Topic("nosyncs")
	testcluster.CreateTopic(t, &f.p.Source, noSyncs, 1, nil)
	f.commit(&f.p.Source, gNone, noSyncs, map[int32]int64{0: 3}) // no offset sync at all
	e, _ := f.start(func(c *EmitterConfig) { c.TopicFilter = func(t string) bool { return t != other && f.mine(t) } })

	want := map[string]GroupStatus{
		gOld:   {Group: gOld, State: StateSkipped, Reason: ReasonOlderThanSyncs},
		gNone:  {Group: gNone, State: StateSkipped, Reason: ReasonNoOffsetSync},
		gOther: {Group: gOther, State: StateSkipped, Reason: ReasonTopicNotReplicated},
	}
	testcluster.Eventually(t, 20*time.Second, "statuses", func() (bool, string) {
		got := map[string]GroupStatus{}
		for _, g := range e.Status() {
			got[g.Group] = GroupStatus{Group: g.Group, State: g.State, Reason: g.Reason, SafeToSwitch: g.SafeToSwitch}
		}
		d := cmp.Diff(want, got)
		return d == "", d
	})
	if cps := f.checkpoints(); len(cps) != 0 {
		t.Errorf("checkpoints written: %+v, want none", cps)
	}
}

func TestEmitterRestartNeverGoesBackwards(t *testing.T) {
	f := newFixture(t, 1, 300)
	var pairs [][2]int64
	for u := int64(0); u <= 200; u += 10 {
		pairs = append(pairs, [2]int64{u, u})
	}
	f.syncs(0, pairs...)
	g := f.p.Group("g")
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 55})
	_, stop := f.start()
	key := g + "/" + f.remote + "/0"
	testcluster.Eventually(t, 20*time.Second, "first checkpoint", func() (bool, string) {
		cp := latest(f.checkpoints())[key]
		return cp.DownstreamOffset == 51, fmt.Sprintf("%+v", cp)
	})
	stop()
	first := len(f.checkpoints())

	// Second run on a fresh offset-syncs topic holding only the newest sync,
	// as compaction leaves it: 55 is older than it, so nothing is emitted
	// (never a lower checkpoint); unchanged positions are not re-emitted.
	f.syncsTopic = f.p.Topic("compacted-syncs")
	testcluster.CreateTopic(t, &f.p.Source, f.syncsTopic, 1, nil)
	f.syncs(0, [2]int64{200, 200})
	e2, _ := f.start()
	testcluster.Eventually(t, 20*time.Second, "status after restart", func() (bool, string) {
		gs, ok := groupStatus(e2, g)
		return ok && gs.Reason == ReasonOlderThanSyncs, fmt.Sprintf("%+v", gs)
	})
	gs, _ := groupStatus(e2, g)
	if gs.Partitions[0].Checkpointed != 51 {
		t.Errorf("checkpoint loaded at restart = %d, want 51", gs.Partitions[0].Checkpointed)
	}
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 250})
	testcluster.Eventually(t, 20*time.Second, "checkpoint after restart", func() (bool, string) {
		cp := latest(f.checkpoints())[key]
		return cp.DownstreamOffset == 201, fmt.Sprintf("%+v", cp)
	})
	cps := f.checkpoints()
	if len(cps) != first+1 {
		t.Errorf("checkpoint records = %d, want %d: %+v", len(cps), first+1, cps)
	}
	var prev int64 = -1
	for _, cp := range cps {
		if cp.DownstreamOffset < prev {
			t.Errorf("checkpoints went backwards: %+v", cps)
		}
		prev = cp.DownstreamOffset
	}
}

func TestEmitterFindsNewGroupsWithinOneInterval(t *testing.T) {
	f := newFixture(t, 1, 10)
	f.syncs(0, [2]int64{0, 0}, [2]int64{9, 9})
	early := f.p.Group("early")
	f.commit(&f.p.Source, early, f.topic, map[int32]int64{0: 0})
	f.start(func(c *EmitterConfig) { c.RefreshGroupsInterval = time.Hour })
	testcluster.Eventually(t, 20*time.Second, "early group checkpointed", func() (bool, string) {
		_, ok := latest(f.checkpoints())[early+"/"+f.remote+"/0"]
		return ok, ""
	})
	g := f.p.Group("late")
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 9})
	testcluster.Eventually(t, 10*time.Second, "late group checkpointed", func() (bool, string) {
		cp, ok := latest(f.checkpoints())[g+"/"+f.remote+"/0"]
		return ok && cp.DownstreamOffset == 9, fmt.Sprintf("%+v", cp)
	})
}

func TestEmitterGroupFilter(t *testing.T) {
	f := newFixture(t, 1, 10)
	f.syncs(0, [2]int64{0, 0})
	keep, drop := f.p.Group("keep"), f.p.Group("console-consumer-1")
	f.commit(&f.p.Source, keep, f.topic, map[int32]int64{0: 0})
	f.commit(&f.p.Source, drop, f.topic, map[int32]int64{0: 0})
	e, _ := f.start(func(c *EmitterConfig) { c.GroupFilter = func(g string) bool { return g != drop && f.mine(g) } })
	testcluster.Eventually(t, 20*time.Second, "keep checkpointed", func() (bool, string) {
		_, ok := latest(f.checkpoints())[keep+"/"+f.remote+"/0"]
		return ok, ""
	})
	if _, ok := latest(f.checkpoints())[drop+"/"+f.remote+"/0"]; ok {
		t.Errorf("filtered group %s was checkpointed", drop)
	}
	var names []string
	for _, g := range e.Status() {
		names = append(names, g.Group)
	}
	sort.Strings(names)
	if d := cmp.Diff([]string{keep}, names); d != "" {
		t.Errorf("status groups (-want +got):\n%s", d)
	}
}
