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
	r := &run{e: e, src: testcluster.Admin(t, &p.Source), dst: kadm.NewClient(dstCl), dstCl: dstCl}

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
