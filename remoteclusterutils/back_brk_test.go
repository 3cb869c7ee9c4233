package remoteclusterutils_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestBrk1207TranslateBackMaxOffsetNoOverflow: an offset sync with upstream
// offset math.MaxInt64 (no Kafka log reaches it: garbage, like the
// negative syncs already skipped) and a copy whose provenance header
// carries source offset math.MaxInt64 translated a position back to
// "one past" them: math.MinInt64, a negative offset returned as a valid
// translation. Neither is a translation: the position is absent (or
// answered by a valid sync).
func TestBrk1207TranslateBackMaxOffsetNoOverflow(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	syncsTopic := p.Topic("mm2-offset-syncs.dst.internal")
	remote := p.Topic("src.orders")
	createTopics(t, &p.Source, syncsTopic)
	createTopicsWith(t, &p.Target, 1, nil, remote)
	k, err := checkpoint.OffsetSync{Topic: "orders", Partition: 0}.Key()
	if err != nil {
		t.Fatal(err)
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(math.MaxInt64))
	v = binary.BigEndian.AppendUint64(v, 10)
	testcluster.Produce(t, &p.Source, raw(syncsTopic, k, v))
	testcluster.Produce(t, &p.Target, &kgo.Record{Topic: remote, Value: []byte("a"),
		Headers: []kgo.RecordHeader{{Key: "kmirror-provenance", Value: []byte("SRC-ID,#9223372036854775807")}}})

	got, err := remoteclusterutils.TranslateBack(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic,
		map[string]map[int32]int64{"orders": {0: 20}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := got["orders"][0]; ok {
		t.Errorf("TranslateBack from a sync with upstream offset MaxInt64 = %+v, want no translation", b)
	}

	idx, err := remoteclusterutils.ReadBackIndex(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic, "")
	if err != nil {
		t.Fatal(err)
	}
	with, err := idx.WithRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC-ID", map[string]string{"orders": remote},
		map[string]map[int32]int64{"orders": {0: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := with.Translate("orders", 0, 1); ok && b.Offset < 0 {
		t.Errorf("Translate from a copy of source offset MaxInt64 = %+v: a negative offset", b)
	}
}
