package checkpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
)

// emitBenchGroups and emitBenchPartitions size the scale benchmarks: 10 000
// groups committed on every partition of a 4-partition topic
// (docs/field-failures.md case B36).
const (
	emitBenchGroups     = 10000
	emitBenchPartitions = 4
)

// benchEnv is a source with emitBenchGroups groups and a target with the remote
// topic, shared by the iterations of one benchmark.
type benchEnv struct {
	f      *fixture
	groups []string
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	p := testcluster.New(b, "src", "dst")
	f := &fixture{p: p, topic: p.Topic("orders")}
	pol, err := policy.NewDefault()
	if err != nil {
		b.Fatal(err)
	}
	f.pol = pol
	f.remote = pol.FormatRemoteTopic(p.Source.Alias, f.topic)
	f.syncsTopic = pol.OffsetSyncsTopic(p.Target.Alias)
	testcluster.CreateTopic(b, &p.Source, f.topic, emitBenchPartitions, nil)
	testcluster.CreateTopic(b, &p.Target, f.remote, emitBenchPartitions, nil)
	var recs []*kgo.Record
	for part := range int32(emitBenchPartitions) {
		for i := range 1000 {
			recs = append(recs, &kgo.Record{Topic: f.remote, Partition: part, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	testcluster.Produce(b, &p.Target, recs...)
	env := &benchEnv{f: f}
	adm := testcluster.Admin(b, &p.Source)
	sem := make(chan struct{}, 16)
	errc := make(chan error, emitBenchGroups)
	for i := range emitBenchGroups {
		g := p.Group(fmt.Sprintf("g%05d", i))
		env.groups = append(env.groups, g)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			var os kadm.Offsets
			for part := range int32(emitBenchPartitions) {
				os.Add(kadm.Offset{Topic: f.topic, Partition: part, At: int64(i % 1000), LeaderEpoch: -1})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			errc <- adm.CommitAllOffsets(ctx, g, os)
		}()
	}
	for range emitBenchGroups {
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
	return env
}

// newRun builds an emitter and its clients without starting Run; its store
// holds one sync every 10 offsets of every partition.
func (env *benchEnv) newRun(b *testing.B, target *testcluster.Cluster, sync bool) (*run, func()) {
	b.Helper()
	f := env.f
	e, err := NewEmitter(EmitterConfig{
		SourceAlias: f.p.Source.Alias, TargetAlias: f.p.Target.Alias, Policy: f.pol,
		SourceOpts: f.p.Source.Opts(), TargetOpts: target.Opts(), OffsetSyncsOpts: f.p.Source.Opts(),
		OffsetSyncsTopic: f.syncsTopic, SyncGroupOffsets: sync, AdminTimeout: 30 * time.Second,
	})
	if err != nil {
		b.Fatal(err)
	}
	e.store = NewOffsetSyncStore(WithMustReadToEnd(false), WithRecentHistory(DefaultRecentHistory))
	for part := range int32(emitBenchPartitions) {
		for u := int64(0); u < 1000; u += 10 {
			e.store.Add(OffsetSync{Topic: f.topic, Partition: part, UpstreamOffset: u, DownstreamOffset: u})
		}
	}
	e.store.MarkReadToEnd()
	srcCl, err := kgo.NewClient(f.p.Source.Opts()...)
	if err != nil {
		b.Fatal(err)
	}
	dstCl, err := kgo.NewClient(append(target.Opts(), kgo.DefaultProduceTopic(e.cpTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		b.Fatal(err)
	}
	r := &run{e: e, src: kadm.NewClient(srcCl), srcCl: srcCl, dst: kadm.NewClient(dstCl), dstCl: dstCl}
	if err := r.createTopic(context.Background()); err != nil {
		b.Fatal(err)
	}
	return r, func() { srcCl.Close(); dstCl.Close() }
}

// BenchmarkEmitCheckpoints10kGroups measures one checkpoint emission for
// 10 000 groups x 4 partitions on kfake: list groups, fetch offsets in one
// batched request, and (first) translate, check and write 40 000
// checkpoint records and wait for their acknowledgement (a full
// recomputation), or (steady) find nothing changed: no translation, no
// target listing, no write.
func BenchmarkEmitCheckpoints10kGroups(b *testing.B) {
	env := newBenchEnv(b)
	ctx := context.Background()
	b.Run("first", func(b *testing.B) {
		r, closeFn := env.newRun(b, &env.f.p.Target, false)
		defer closeFn()
		r.e.full = true // every emission translates and checks everything
		for b.Loop() {
			r.e.cps = newCheckpointState() // every checkpoint is new
			if !r.emit(ctx) {
				b.Fatal("emission failed")
			}
		}
		if n := len(r.e.groups); n != emitBenchGroups {
			b.Fatalf("%d groups emitted, want %d", n, emitBenchGroups)
		}
		b.ReportMetric(float64(emitBenchGroups*emitBenchPartitions)*float64(b.N)/b.Elapsed().Seconds(), "checkpoints/s")
	})
	b.Run("steady", func(b *testing.B) {
		r, closeFn := env.newRun(b, &env.f.p.Target, false)
		defer closeFn()
		r.emit(ctx)
		for b.Loop() {
			if !r.emit(ctx) {
				b.Fatal("emission failed")
			}
		}
		b.ReportMetric(float64(emitBenchGroups)*float64(b.N)/b.Elapsed().Seconds(), "groups/s")
	})
}

// BenchmarkSyncGroupOffsets10kGroups measures one group-offset sync round
// committing 10 000 absent groups x 4 partitions into a fresh target
// (target cluster set-up excluded).
func BenchmarkSyncGroupOffsets10kGroups(b *testing.B) {
	env := newBenchEnv(b)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		target := testcluster.NewFake(b, "dst")
		testcluster.CreateTopic(b, &target, env.f.remote, emitBenchPartitions, nil)
		var recs []*kgo.Record
		for part := range int32(emitBenchPartitions) {
			for i := range 1000 {
				recs = append(recs, &kgo.Record{Topic: env.f.remote, Partition: part, Value: fmt.Appendf(nil, "%d", i)})
			}
		}
		testcluster.Produce(b, &target, recs...)
		r, closeFn := env.newRun(b, &target, true)
		r.emit(ctx)
		b.StartTimer()
		r.sync(ctx)
		b.StopTimer()
		synced := 0
		r.e.publish()
		for _, g := range r.e.Status() {
			if g.State == StateSynced {
				synced++
			}
		}
		closeFn()
		if synced != emitBenchGroups {
			b.Fatalf("%d groups synced, want %d", synced, emitBenchGroups)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(emitBenchGroups)*float64(b.N)/b.Elapsed().Seconds(), "groups/s")
}
