package remoteclusterutils_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestBrkBTranslateBackExactlyOnceEveryPosition: an exactly-once forward
// flow writes its copies in transactions (a marker after each); every
// position on the remote topic, up to its end past the last marker (where
// a consumer that commits its position, as Java's does, stands once it
// read everything), translates back exactly, to one past the source
// offset of the last copy before it.
func TestBrkBTranslateBackExactlyOnceEveryPosition(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("orders")
	createTopicsWith(t, &p.Source, 1, nil, topic)
	plain := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxT(t)
	for i := range 30 {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	remote := p.Source.Alias + "." + topic
	copies := copyAll(t, p, topic, true, 30)
	ends, err := testcluster.Admin(t, &p.Target).ListEndOffsets(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(remote, 0)
	if last := copies[len(copies)-1].Offset; end.Offset != last+2 {
		t.Fatalf("remote end %d, last copy at %d: want a transaction marker after it", end.Offset, last)
	}
	pol, _ := policy.NewDefault()
	src := testcluster.Client(t, &p.Source)
	idx, err := remoteclusterutils.ReadBackIndex(ctx, src, pol.OffsetSyncsTopic(p.Target.Alias), "")
	if err != nil {
		t.Fatal(err)
	}
	positions := map[string]map[int32]int64{topic: {}}
	for d := int64(1); d <= end.Offset; d++ {
		positions[topic][0] = d
		ridx, err := idx.WithRecords(ctx, testcluster.Client(t, &p.Target), testcluster.ClusterID(t, &p.Source), map[string]string{topic: remote}, positions)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		for _, c := range copies {
			if c.Offset < d {
				want, _ = mirror.ProvenanceOffset(c.Headers[len(c.Headers)-1].Value)
				want++
			}
		}
		b, ok := ridx.Translate(topic, 0, d)
		if !ok || b.Offset != want || !b.Exact {
			t.Errorf("position %d: %+v, %v; want offset %d, exact", d, b, ok, want)
		}
	}
}
