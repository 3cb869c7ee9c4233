package mirror

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestFetchSizer checks the sizes a replication consumer asks for: its
// budget counted in decompressed bytes.
func TestFetchSizer(t *testing.T) {
	const mib = 1 << 20
	type batch struct{ wire, decoded, records int }
	for _, c := range []struct {
		name    string
		budget  int32
		batches []batch
		want    int32 // FetchMaxBytes in force after the batches
		moves   int   // times it moved
	}{
		{name: "nothing read yet: the floor", budget: 8 * mib, want: fetchFloor},
		{name: "a budget under the floor is used as is", budget: 32 << 10, want: 32 << 10},
		{
			// Uncompressed records of 1 KiB: the budget on the wire, less
			// what the records cost held (256 B each): 8 MiB × 1024/1280.
			name: "uncompressed records", budget: 8 * mib,
			batches: []batch{{1_024_000, 1_024_000, 1000}},
			want:    6_710_886, moves: 1,
		},
		{
			// Records of 100 B (125 on the wire): each costs 381 bytes
			// held, three times its bytes (issue 22's scale benchmark
			// fetched its whole backlog in one response per unit).
			name: "small records", budget: 8 * mib,
			batches: []batch{{125_000, 125_000, 1000}},
			want:    2_752_167, moves: 1,
		},
		{
			// lz4 JSON of about 1 KiB compressed 3.3 times:
			// 8 MiB × 310 000 / (1 024 000 + 256 000).
			name: "compressed 3.3 times", budget: 8 * mib,
			batches: []batch{{310_000, 1_024_000, 1000}},
			want:    2_031_616, moves: 1,
		},
		{
			// Compressed 400 times: 19 710 bytes, under the floor.
			name: "very compressible records: the floor", budget: 8 * mib,
			batches: []batch{{10_000, 4_000_000, 1000}},
			want:    fetchFloor,
		},
		{
			// Issue 22's scale benchmark: batches of 20 zero-filled
			// records of 100 B, about 250 bytes on the wire, held as 7 320
			// (their 2 200 bytes decompressed and 256 a record): 29 times
			// their size. A first request of 1 MiB held up to 29 MiB (a
			// unit's backlog was 22 MB at 6 000 partitions, 66 MB at
			// 18 000); the floor's holds about 1.9 MB, and the size then
			// follows:
			// 8 MiB × 250 / 7 320 = 286 496.
			name: "zero-filled small records", budget: 8 * mib,
			batches: []batch{{250, 2_200, 20}},
			want:    286_496, moves: 1,
		},
		{
			name: "a budget under the floor is kept", budget: 32 << 10,
			batches: []batch{{10_000, 1_000_000, 1000}},
			want:    32 << 10,
		},
		{
			// 70 021 bytes wanted against the floor's 65 536 in force:
			// within an eighth.
			name: "small moves are not applied", budget: 8 * mib,
			batches: []batch{{10_000, 942_000, 1000}},
			want:    fetchFloor,
		},
		{
			// The sums halve once they cover four budgets: a topic that
			// turns from compressible to not is followed.
			name: "follows a change of data", budget: 4 * mib,
			batches: []batch{
				{4 * mib, 16 * mib, 16384}, {4 * mib, 16 * mib, 16384}, // r=4 and 1 KiB records: 0.8 MiB
				{8 * mib, 8 * mib, 8192}, {8 * mib, 8 * mib, 8192}, {8 * mib, 8 * mib, 8192}, {8 * mib, 8 * mib, 8192}, {8 * mib, 8 * mib, 8192},
			},
			want: 2_852_126, moves: 6,
		},
		{name: "an empty batch changes nothing", budget: 8 * mib, batches: []batch{{0, 0, 0}}, want: fetchFloor},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newFetchSizer(c.budget)
			moves := 0
			for _, b := range c.batches {
				if _, moved := s.read(b.wire, b.decoded, b.records); moved {
					moves++
				}
			}
			if s.cur != c.want || moves != c.moves {
				t.Errorf("FetchMaxBytes %d after %d moves, want %d after %d", s.cur, moves, c.want, c.moves)
			}
		})
	}
}

// batchLog records the batches a consumer reads.
type batchLog struct {
	mu  sync.Mutex
	got []kgo.FetchBatchMetrics
}

func (l *batchLog) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	l.mu.Lock()
	l.got = append(l.got, m)
	l.mu.Unlock()
}

// TestFetchSizeFollowsDecodedBytes replicates a compressed topic and
// checks that the unit's consumer asks for what its budget holds decoded:
// the size found by replaying the batches the source serves to a
// fetchSizer, and every record copied.
func TestFetchSizeFollowsDecodedBytes(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("compressible")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	var in []*kgo.Record
	// Half random, half repeated: compressed about twice, so that the
	// size falls between the floor and the budget.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 6000 {
		value := bytes.Repeat([]byte("kmirror "), 64)
		for j := range 256 {
			value[j] = byte(rng.Uint32())
		}
		in = append(in, &kgo.Record{Topic: topic, Key: []byte{byte(i), byte(i >> 8)}, Value: value})
	}
	testcluster.Produce(t, &p.Source, in...)
	want := testcluster.ReadAll(t, &p.Source, topic)[0]

	// The batches as the source serves them, read from the start.
	var log batchLog
	cl := testcluster.Client(t, &p.Source, kgo.WithHooks(&log),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n := 0; n < len(want); {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading the source: %d of %d records: %v", n, len(want), err)
		}
		n += fs.NumRecords()
	}
	cl.Close()
	if len(log.got) < 2 || log.got[0].CompressedBytes >= log.got[0].UncompressedBytes {
		t.Fatalf("the source served %d batches (%+v): want several compressed ones", len(log.got), log.got)
	}
	const budget = 8 << 20
	s := newFetchSizer(budget)
	start := s.cur
	for _, m := range log.got {
		s.read(m.CompressedBytes, m.UncompressedBytes, m.NumRecords)
	}
	t.Logf("%d batches, first %+v: replayed FetchMaxBytes %d of %d", len(log.got), log.got[0], s.cur, budget)
	if s.cur >= budget || s.cur <= fetchFloor || s.cur == start {
		t.Fatalf("replayed size %d: want one between the floor and the budget %d, not the first fetches' %d, for records compressed about twice", s.cur, budget, start)
	}

	fc := fastFlow(p)
	fc.Tasks, fc.FetchMaxBytes = 1, budget
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, int64(len(in)))
	f := m.flows[0]
	f.unitsMu.Lock()
	var got []int32
	for _, u := range f.units {
		if p := u.fetchSize.Load(); p != nil {
			got = append(got, p.Load())
		}
	}
	f.unitsMu.Unlock()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int32{s.cur}, got); diff != "" {
		t.Errorf("the unit's FetchMaxBytes (-replayed +unit):\n%s", diff)
	}
	copied := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+topic)[0]
	if diff := cmp.Diff(recsOf(want), copiesOf(t, copied, clusterID(t, &p.Source), want), bytesExact); diff != "" {
		t.Errorf("%s differs from the source (-want +got):\n%s", topic, diff)
	}
}

// TestFetchHookAppliesSize checks what the hook sets on the client: the
// sizer's size as FetchMaxBytes and the per-partition limit clamped to it,
// nothing before attach.
func TestFetchHookAppliesSize(t *testing.T) {
	const mib = 1 << 20
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.FetchMaxBytes(8*mib), kgo.FetchMaxPartitionBytes(mib))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	h := new(fetchHook)
	batch := func(wire, decoded int) {
		h.OnFetchBatchRead(kgo.BrokerMetadata{}, "t", 0, kgo.FetchBatchMetrics{CompressedBytes: wire, UncompressedBytes: decoded, NumRecords: 10})
	}
	limits := func() [2]int32 {
		return [2]int32{cl.OptValue(kgo.FetchMaxBytes).(int32), cl.OptValue(kgo.FetchMaxPartitionBytes).(int32)}
	}
	batch(1000, 100_000) // before attach: ignored
	if got, want := limits(), [2]int32{8 * mib, mib}; got != want {
		t.Fatalf("before attach: limits %v, want the client's %v", got, want)
	}
	h.attach(cl)
	for _, step := range []struct {
		name          string
		wire, decoded int
		want          [2]int32
	}{
		{"attached: the first fetches ask for the floor", 0, 0, [2]int32{fetchFloor, fetchFloor}},
		// 8 MiB × 1 MiB / (4 MiB + 10 records × 256 B).
		{"compressed 4 times", mib, 4 * mib, [2]int32{2_095_872, mib}},
		// Sums 1 MiB + 10 000 wire against 4 MiB + 400 MB
		// decompressed and 20 records: 21 969 bytes, under the floor.
		{"very compressible: the floor clamps the partition limit", 10_000, 400_000_000, [2]int32{fetchFloor, fetchFloor}},
	} {
		if step.wire > 0 {
			batch(step.wire, step.decoded)
		}
		if got := limits(); got != step.want {
			t.Errorf("%s: FetchMaxBytes, FetchMaxPartitionBytes %v, want %v", step.name, got, step.want)
		}
		if got := h.size.Load(); got != step.want[0] {
			t.Errorf("%s: size %d, want %d", step.name, got, step.want[0])
		}
	}
}
