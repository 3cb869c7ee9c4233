package checkpoint

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestWriteFailedNextToUnencodable writes, in one emission, a checkpoint
// the target client refuses followed by one that cannot be encoded (a
// group id over 32767 bytes). The client refuses the first (its metadata
// is over the client's MaxBufferedBytes, a TargetOpts setting) in a
// produce callback on one of its goroutines, while write handles the
// unencodable one on its own: both land in the emission's failed list,
// and the next emission writes both again. Under -race this test reported
// a data race on that list (go test -race -count=20 -run
// TestWriteFailedNextToUnencodable ./checkpoint).
func TestWriteFailedNextToUnencodable(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	var mu sync.Mutex
	var written []int
	var ops []string
	e, err := NewEmitter(EmitterConfig{
		SourceAlias: p.Source.Alias, TargetAlias: p.Target.Alias,
		SourceOpts: p.Source.Opts(), TargetOpts: p.Target.Opts(), OffsetSyncsOpts: p.Source.Opts(),
		OffsetSyncsTopic: "mm2-offset-syncs.dst.internal", AdminTimeout: 5 * time.Second,
		OnCheckpoints: func(n int) { mu.Lock(); written = append(written, n); mu.Unlock() },
		OnError:       func(op string, _ error) { mu.Lock(); ops = append(ops, op); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	const maxBuffered = 10000
	dstCl := testcluster.Client(t, &p.Target, kgo.DefaultProduceTopic(e.cpTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedBytes(maxBuffered))
	srcCl := testcluster.Client(t, &p.Source)
	r := &run{e: e, src: kadm.NewClient(srcCl), srcCl: srcCl, dst: kadm.NewClient(dstCl), dstCl: dstCl}

	// Refused checkpoints of n partitions, then the unencodable one.
	const n = 16
	var cps []Checkpoint
	for part := range int32(n) {
		cps = append(cps, Checkpoint{Group: "g", Topic: "src.orders", Partition: part, UpstreamOffset: 10, DownstreamOffset: 10,
			Metadata: strings.Repeat("m", 2*maxBuffered)})
	}
	unencodable := Checkpoint{Group: strings.Repeat("g", 40000), Topic: "src.orders", Partition: 0, UpstreamOffset: 10, DownstreamOffset: 10}
	if _, err := unencodable.Key(); !errors.Is(err, ErrStringTooLong) {
		t.Fatalf("unencodable checkpoint encodes: %v", err)
	}
	cps = append(cps, unencodable)
	for _, cp := range cps {
		if !e.cps.Next(cp) {
			t.Fatalf("checkpoint %.20s/%d not new", cp.Group, cp.Partition)
		}
	}
	r.write(context.Background(), time.Now(), cps)

	mu.Lock()
	defer mu.Unlock()
	if len(written) != 1 || written[0] != 0 {
		t.Errorf("OnCheckpoints calls = %v, want [0] (all %d failed)", written, len(cps))
	}
	if len(ops) != 1 || ops[0] != "write_checkpoints" {
		t.Errorf("OnError ops = %v, want [write_checkpoints]", ops)
	}
	for _, cp := range cps {
		if last, ok := e.cps.Last(cp.Group, cp.Topic, cp.Partition); ok {
			t.Errorf("failed checkpoint %.20s/%d still the last one written (offset %d): the next emission would not write it again",
				cp.Group, cp.Partition, last.DownstreamOffset)
		}
	}
}

// inflight counts the records a client has buffered and not yet
// acknowledged, and the most at once.
type inflight struct {
	mu              sync.Mutex
	now, max, total int
	// at, when set, is called with the count of records buffered so far.
	at func(total int)
}

func (h *inflight) OnProduceRecordBuffered(*kgo.Record) {
	h.mu.Lock()
	h.now++
	h.total++
	h.max = max(h.max, h.now)
	total, at := h.total, h.at
	h.mu.Unlock()
	if at != nil {
		at(total)
	}
}

func (h *inflight) OnProduceRecordUnbuffered(*kgo.Record, error) {
	h.mu.Lock()
	h.now--
	h.mu.Unlock()
}

// chunkWrite sets up an emitter whose checkpoints client counts its
// records in flight (h), with writeChunk at 100 until the test ends, and
// 1 050 new checkpoints of one group, one per partition: more than ten
// chunks. onCheckpoints is the emitter's OnCheckpoints (nil for none).
func chunkWrite(t *testing.T, h *inflight, onCheckpoints func(int)) (*testcluster.Pair, *Emitter, *run, []Checkpoint) {
	t.Helper()
	old := writeChunk
	writeChunk = 100
	t.Cleanup(func() { writeChunk = old })
	p := testcluster.New(t, "src", "dst")
	e, err := NewEmitter(EmitterConfig{
		SourceAlias: p.Source.Alias, TargetAlias: p.Target.Alias,
		SourceOpts: p.Source.Opts(), TargetOpts: p.Target.Opts(), OffsetSyncsOpts: p.Source.Opts(),
		OffsetSyncsTopic: "mm2-offset-syncs.dst.internal", AdminTimeout: 5 * time.Second,
		OnCheckpoints: onCheckpoints,
	})
	if err != nil {
		t.Fatal(err)
	}
	testcluster.CreateTopic(t, &p.Target, e.cpTopic, 1, nil)
	dstCl := testcluster.Client(t, &p.Target, kgo.DefaultProduceTopic(e.cpTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(h))
	srcCl := testcluster.Client(t, &p.Source)
	r := &run{e: e, src: kadm.NewClient(srcCl), srcCl: srcCl, dst: kadm.NewClient(dstCl), dstCl: dstCl}
	var cps []Checkpoint
	for part := range int32(1050) {
		cp := Checkpoint{Group: "g", Topic: "src.orders", Partition: part, UpstreamOffset: int64(part) + 5, DownstreamOffset: int64(part)}
		if !e.cps.Next(cp) {
			t.Fatalf("checkpoint of partition %d not new", part)
		}
		cps = append(cps, cp)
	}
	return p, e, r, cps
}

// TestWriteInChunks: an emission of more checkpoints than writeChunk has
// at most writeChunk records in flight, and writes every checkpoint, in
// order (issue 22: the first emission at 2 000 groups built all 80 000
// records before the first was acknowledged).
func TestWriteInChunks(t *testing.T) {
	var mu sync.Mutex
	var written []int
	h := &inflight{}
	p, e, r, cps := chunkWrite(t, h, func(n int) { mu.Lock(); written = append(written, n); mu.Unlock() })
	n := len(cps)
	if failed := r.write(context.Background(), time.Now(), cps); len(failed) != 0 {
		t.Fatalf("%d checkpoints failed, want none", len(failed))
	}
	if h.max == 0 || h.max > writeChunk {
		t.Errorf("at most %d checkpoint records in flight, want 1 to %d (writeChunk)", h.max, writeChunk)
	}
	mu.Lock()
	if len(written) != 1 || written[0] != n {
		t.Errorf("OnCheckpoints calls = %v, want [%d]", written, n)
	}
	mu.Unlock()
	recs := testcluster.ReadAll(t, &p.Target, e.cpTopic)[0]
	if len(recs) != n {
		t.Fatalf("%d checkpoint records on the target, want %d", len(recs), n)
	}
	for i, rec := range recs {
		got, err := DecodeCheckpoint(rec.Key, rec.Value)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got != cps[i] {
			t.Fatalf("record %d = %+v, want %+v", i, got, cps[i])
		}
	}
}

// TestWriteInChunksCancelled: the emission's context ends in its second
// chunk (the member stopping). write returns without building the chunks
// after it, reports every checkpoint not acknowledged as failed and
// forgets it, so that the next run writes it again. Before, the loop went
// on adding to a WaitGroup whose Wait had not returned (a panic of the
// sync package in the waiting goroutine).
func TestWriteInChunksCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &inflight{}
	_, e, r, cps := chunkWrite(t, h, nil)
	n := len(cps)
	h.mu.Lock()
	h.at = func(total int) {
		if total == writeChunk+10 {
			cancel()
		}
	}
	h.mu.Unlock()
	failed := r.write(ctx, time.Now(), cps)
	h.mu.Lock()
	total := h.total
	h.mu.Unlock()
	if total > 2*writeChunk {
		t.Errorf("%d records built and buffered, want at most %d (two chunks): the chunks after the cancellation were built", total, 2*writeChunk)
	}
	if len(failed) < n-2*writeChunk {
		t.Fatalf("%d checkpoints failed, want at least the %d never sent", len(failed), n-2*writeChunk)
	}
	for _, cp := range failed {
		if last, ok := e.cps.Last(cp.Group, cp.Topic, cp.Partition); ok && last == cp {
			t.Fatalf("failed checkpoint of partition %d still the last one written: the next run would not write it", cp.Partition)
		}
	}
	// Every checkpoint not failed was acknowledged and is remembered.
	bad := map[int32]bool{}
	for _, cp := range failed {
		bad[cp.Partition] = true
	}
	for _, cp := range cps {
		if bad[cp.Partition] {
			continue
		}
		if last, ok := e.cps.Last(cp.Group, cp.Topic, cp.Partition); !ok || last != cp {
			t.Fatalf("checkpoint of partition %d not failed but not remembered (%+v, %v)", cp.Partition, last, ok)
		}
	}
}
