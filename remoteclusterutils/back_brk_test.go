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

// TestBrk1207WithRecordsPositionPastLogEnd: a position past the end of
// the remote partition (a stale commit after the remote topic was
// re-created or truncated, a wrong partition map) has no record before it
// to translate from. BackIndex.WithRecords read the whole partition from
// its start looking for it, then, after kread's 10 s idle stop, failed the
// whole call, for every other position too, with an error naming no
// position. Such a position keeps the other rules; the rest are still
// translated from their records.
func TestBrk1207WithRecordsPositionPastLogEnd(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	syncsTopic := p.Topic("mm2-offset-syncs.dst.internal")
	remote := p.Topic("src.orders")
	remote2 := p.Topic("src.payments")
	createTopics(t, &p.Source, syncsTopic)
	createTopicsWith(t, &p.Target, 1, nil, remote, remote2)
	testcluster.Produce(t, &p.Source,
		encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "orders", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 0}),
		encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "payments", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 0}))
	for _, r := range []string{remote, remote2} {
		for _, off := range []string{"5", "6", "7"} {
			testcluster.Produce(t, &p.Target, &kgo.Record{Topic: r, Value: []byte("a"),
				Headers: []kgo.RecordHeader{{Key: "kmirror-provenance", Value: []byte("SRC-ID,#" + off)}}})
		}
	}
	idx, err := remoteclusterutils.ReadBackIndex(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic, "")
	if err != nil {
		t.Fatal(err)
	}
	with, err := idx.WithRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC-ID",
		map[string]string{"orders": remote, "payments": remote2},
		map[string]map[int32]int64{"orders": {0: 1000}, "payments": {0: 2}})
	if err != nil {
		t.Fatalf("WithRecords with a position past the log end: %v", err)
	}
	if b, ok := with.Translate("payments", 0, 2); !ok || b.Record != remoteclusterutils.KindRecord || b.Offset != 7 {
		t.Errorf("payments position 2 = %+v (%v), want 7 from the record", b, ok)
	}
	if b, ok := with.Translate("orders", 0, 1000); ok && b.Record == remoteclusterutils.KindRecord {
		t.Errorf("orders position 1000, past the log end = %+v, want no record translation", b)
	}
}
