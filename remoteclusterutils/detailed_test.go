package remoteclusterutils_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestTranslateDetailed: per partition the offset TranslateOffsets gives,
// the source offset, how it was translated (the kmirror-translation
// header; unknown without it, as Apache MM2 writes) and when; the
// partitions the group never committed on its topics are marked, a topic it
// never committed on is not listed.
func TestTranslateDetailed(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopics(t, &p.Target, topic)
	createTopicsWith(t, &p.Target, 3, nil, "src.orders")
	createTopicsWith(t, &p.Target, 2, nil, "src.payments")
	createTopicsWith(t, &p.Target, 2, nil, "src.other")
	g, h := p.Group("g"), p.Group("h")
	at := time.UnixMilli(1_700_000_000_000)
	with := func(r *kgo.Record, header string, ts time.Time) *kgo.Record {
		if header != "" {
			r.Headers = []kgo.RecordHeader{{Key: checkpoint.TranslationHeader, Value: []byte(header)}}
		}
		r.Timestamp = ts
		return r
	}
	testcluster.Produce(t, &p.Target,
		with(raw(topic, mm2Key(g, "src.orders", 0), mm2Value(0, 100, 95, "")), "", at),
		with(cp(t, topic, checkpoint.Checkpoint{Group: g, Topic: "src.orders", Partition: 1, UpstreamOffset: 40, DownstreamOffset: 38, Metadata: "m"}), "exact", at.Add(time.Second)),
		with(cp(t, topic, checkpoint.Checkpoint{Group: g, Topic: "src.payments", Partition: 0, UpstreamOffset: 30, DownstreamOffset: 21}), "safe;sync;reread<=9", at.Add(2*time.Second)),
		with(cp(t, topic, checkpoint.Checkpoint{Group: h, Topic: "src.orders", Partition: 0, UpstreamOffset: 7, DownstreamOffset: 7}), "safe;run", at),
		with(cp(t, topic, checkpoint.Checkpoint{Group: h, Topic: "src.orders", Partition: 1, UpstreamOffset: 7, DownstreamOffset: 7}), "bogus", at),
	)
	rc := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target))
	ctx := ctxT(t)
	got, err := rc.TranslateDetailed(ctx, p.Source.Alias, g)
	if err != nil {
		t.Fatal(err)
	}
	never := func(topic string, partition int32) remoteclusterutils.PartitionTranslation {
		return remoteclusterutils.PartitionTranslation{Topic: topic, Partition: partition, SourceOffset: -1, Offset: -1,
			Translation: remoteclusterutils.TranslationNone, Reread: -1, NeverCommitted: true}
	}
	want := []remoteclusterutils.PartitionTranslation{
		{Topic: "src.orders", Partition: 0, SourceOffset: 100, Offset: 95, Translation: remoteclusterutils.TranslationUnknown, Reread: -1, CheckpointTime: at},
		{Topic: "src.orders", Partition: 1, SourceOffset: 40, Offset: 38, Metadata: "m", Translation: remoteclusterutils.TranslationExact, CheckpointTime: at.Add(time.Second)},
		never("src.orders", 2),
		{Topic: "src.payments", Partition: 0, SourceOffset: 30, Offset: 21, Translation: remoteclusterutils.TranslationSafe, Record: checkpoint.KindSync, Reread: 9, CheckpointTime: at.Add(2 * time.Second)},
		never("src.payments", 1),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("TranslateDetailed(%s) (-want +got):\n%s", g, d)
	}
	plain, err := rc.TranslateOffsets(ctx, p.Source.Alias, g)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(plain, remoteclusterutils.TranslatedOffsets(got)); d != "" {
		t.Errorf("TranslatedOffsets differs from TranslateOffsets (-TranslateOffsets +detailed):\n%s", d)
	}

	all, err := rc.TranslateGroups(ctx, p.Source.Alias, func(group string) bool { return group == h })
	if err != nil {
		t.Fatal(err)
	}
	wantH := map[string][]remoteclusterutils.PartitionTranslation{h: {
		{Topic: "src.orders", Partition: 0, SourceOffset: 7, Offset: 7, Translation: remoteclusterutils.TranslationSafe, Record: checkpoint.KindRun, Reread: -1, CheckpointTime: at},
		{Topic: "src.orders", Partition: 1, SourceOffset: 7, Offset: 7, Translation: remoteclusterutils.TranslationUnknown, Reread: -1, CheckpointTime: at},
		never("src.orders", 2),
	}}
	if d := cmp.Diff(wantH, all); d != "" {
		t.Errorf("TranslateGroups (-want +got):\n%s", d)
	}
	none, err := rc.TranslateDetailed(ctx, p.Source.Alias, p.Group("nobody"))
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("TranslateDetailed(unknown group) = %v, %v; want empty, nil", none, err)
	}
}
