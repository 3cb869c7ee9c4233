package remoteclusterutils_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestTranslateBack: positions on a remote topic translated back to the
// source topic from the forward flow's offset runs (exact) and offset
// syncs (safe); runs and syncs recorded for another target cluster are
// ignored; a position neither covers is absent.
func TestTranslateBack(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	syncsTopic := "mm2-offset-syncs." + p.Target.Alias + ".internal" // unique on a shared real cluster
	runsTopic := checkpoint.OffsetRunsTopic(syncsTopic)
	createTopics(t, &p.Source, syncsTopic, runsTopic)
	tag := func(r *kgo.Record, cluster string) *kgo.Record {
		r.Headers = []kgo.RecordHeader{{Key: checkpoint.TargetClusterHeader, Value: []byte(cluster)}}
		return r
	}
	run := func(partition int32, prevUp, prevDown, up, down, count int64) *kgo.Record {
		r := checkpoint.OffsetRun{Topic: "orders", Partition: partition, Session: 7, SessionUpstreamOffset: 0, SessionOffset: 0,
			PrevUpstreamOffset: prevUp, PrevOffset: prevDown, FirstUpstreamOffset: up, FirstOffset: down, Count: count,
			EndUpstreamOffset: -1, Committed: -1}
		return tag(encoded(t, runsTopic, r), "dst")
	}
	sync := func(partition int32, up, down int64) *kgo.Record {
		return encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "orders", Partition: partition, UpstreamOffset: up, DownstreamOffset: down})
	}
	// Partition 0: 0-99 at 0-99, a source gap 100-109, 110-149 at 100-139.
	old := run(0, -1, -1, 0, 0, 500)
	old.Headers[0].Value = []byte("rebuilt-away") // a previous target log: ignored
	testcluster.Produce(t, &p.Source, old, run(0, -1, -1, 0, 0, 100), run(0, 99, 99, 110, 100, 40),
		sync(0, 0, 0), sync(0, 110, 100),
		// Partition 1: syncs only (MM2, or runs deleted by retention).
		sync(1, 0, 0), sync(1, 30, 25), tag(sync(1, 60, 50), "rebuilt-away"))
	for _, d := range []int64{50, 100, 105, 140} {
		got, err := remoteclusterutils.TranslateBack(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic,
			map[string]map[int32]int64{"orders": {0: d}}, "dst")
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]int64{50: 50, 100: 110, 105: 115, 140: 150}[d] // 100: the run links 99 to 110 (a source gap)
		if b := got["orders"][0]; b.Offset != want || !b.Exact || b.Record != checkpoint.KindRun {
			t.Errorf("position %d on partition 0: %+v, want offset %d from a run", d, b, want)
		}
	}
	got, err := remoteclusterutils.TranslateBack(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic,
		map[string]map[int32]int64{"orders": {1: 25, 2: 10}}, "dst")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]remoteclusterutils.BackTranslation{"orders": {
		1: {Topic: "orders", Partition: 1, Position: 25, Offset: 30, Record: checkpoint.KindSync},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("syncs only (-want +got):\n%s", d)
	}
	got, err = remoteclusterutils.TranslateBack(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic,
		map[string]map[int32]int64{"orders": {1: 40}}, "dst")
	if err != nil {
		t.Fatal(err)
	}
	if b := got["orders"][1]; b.Offset != 31 || b.Exact {
		t.Errorf("position 40 on partition 1: %+v, want 31 (one past the sync 30->25; the sync for another target ignored)", b)
	}
}

// TestTranslateBackSyncs (moved from examples/failover, where the function
// was private): for a group at downstream offset D, the newest sync (u, d)
// with d <= D gives u when d == D and u+1 otherwise; other topics'
// syncs, undecodable records and partitions without a usable sync are
// ignored.
func TestTranslateBackSyncs(t *testing.T) {
	p := testcluster.New(t, "us-east-1", "ap-northeast-2")
	syncsTopic := p.Topic("mm2-offset-syncs.us-east-1.internal")
	createTopics(t, &p.Source, syncsTopic)
	var recs []*kgo.Record
	for _, s := range []checkpoint.OffsetSync{
		{Topic: "orders", Partition: 0, UpstreamOffset: 100, DownstreamOffset: 0},
		{Topic: "orders", Partition: 0, UpstreamOffset: 150, DownstreamOffset: 50},
		{Topic: "payments", Partition: 0, UpstreamOffset: 9000, DownstreamOffset: 60},
		{Topic: "orders", Partition: 0, UpstreamOffset: 220, DownstreamOffset: 120},
		{Topic: "orders", Partition: 1, UpstreamOffset: 10, DownstreamOffset: 5},
	} {
		k, _ := s.Key()
		v, _ := s.Value()
		recs = append(recs, raw(syncsTopic, k, v))
	}
	recs = append(recs, raw(syncsTopic, []byte("garbage"), []byte{1})) // skipped
	testcluster.Produce(t, &p.Source, recs...)
	for _, tc := range []struct {
		name      string
		committed int64
		want      int64
	}{
		{"exactly at the first sync", 0, 100},
		{"between syncs", 30, 101},
		{"exactly at a later sync", 50, 150},
		{"other topics' syncs ignored", 61, 151},
		{"past the newest sync", 500, 221},
	} {
		got, err := remoteclusterutils.TranslateBack(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic,
			map[string]map[int32]int64{"orders": {0: tc.committed, 1: 4, 2: 7}}, "")
		if err != nil {
			t.Fatal(err)
		}
		// Partition 1 is at 4, before its only sync (d=5); partition 2
		// has no sync: neither is translated.
		offs := map[int32]int64{}
		for part, b := range got["orders"] {
			offs[part] = b.Offset
		}
		if diff := cmp.Diff(map[int32]int64{0: tc.want}, offs); diff != "" || len(got) != 1 {
			t.Errorf("%s: TranslateBack(%d) (-want +got):\n%s (%v)", tc.name, tc.committed, diff, got)
		}
	}
}

// TestTranslateBackNegativeSyncs: an offset-sync record with a negative
// offset (never written by MM2 or kmirror: garbage, or another writer's)
// is not a sync: it must not translate a position back. Such a sync with
// downstream offset -1 counted as "at or before" every position, so a
// position before the partition's only valid sync (compaction keeps the
// newest) went back to one past its upstream offset: 9001 here, records
// 0-9000 skipped on failback.
func TestTranslateBackNegativeSyncs(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	syncsTopic := p.Topic("mm2-offset-syncs.dst.internal")
	createTopics(t, &p.Source, syncsTopic)
	// Hand-built values: the codec refuses to write negative offsets.
	negative := func(partition int32, up, down int64) *kgo.Record {
		k, err := checkpoint.OffsetSync{Topic: "orders", Partition: partition}.Key()
		if err != nil {
			t.Fatal(err)
		}
		v := binary.BigEndian.AppendUint64(nil, uint64(up))
		return raw(syncsTopic, k, binary.BigEndian.AppendUint64(v, uint64(down)))
	}
	testcluster.Produce(t, &p.Source,
		encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "orders", Partition: 0, UpstreamOffset: 120, DownstreamOffset: 100}),
		negative(0, 9000, -1),
		encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "orders", Partition: 1, UpstreamOffset: 10, DownstreamOffset: 10}),
		negative(1, -5, 20),
	)
	got, err := remoteclusterutils.TranslateBack(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic,
		map[string]map[int32]int64{"orders": {0: 50, 1: 30}}, "")
	if err != nil {
		t.Fatal(err)
	}
	// Partition 0 at 50 is before its only valid sync (100): no answer.
	// Partition 1 at 30: one past the valid sync 10->10, not the negative
	// upstream offset of the sync at 20.
	want := map[string]map[int32]remoteclusterutils.BackTranslation{"orders": {
		1: {Topic: "orders", Partition: 1, Position: 30, Offset: 11, Record: checkpoint.KindSync},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("TranslateBack with negative-offset syncs (-want +got):\n%s", d)
	}
}

// TestTranslateBackOtherPartitionOffline: an offset-syncs topic created
// with more than one partition whose partition 1 has no leader (its broker
// is down) is read like MM2 reads it: partition 0 only. Its end offsets
// were listed for every partition and partition 1's error failed
// TranslateBack.
func TestTranslateBackOtherPartitionOffline(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("fakes a partition without a leader (kfake)")
	}
	syncsTopic := p.Topic("mm2-offset-syncs.dst.internal")
	createTopicsWith(t, &p.Source, 3, compact, syncsTopic)
	testcluster.Produce(t, &p.Source,
		encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "orders", Partition: 0, UpstreamOffset: 10, DownstreamOffset: 10}))
	offlinePartitions(t, &p.Source, syncsTopic, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := remoteclusterutils.TranslateBack(ctx, testcluster.Client(t, &p.Source), syncsTopic,
		map[string]map[int32]int64{"orders": {0: 30}}, "")
	if err != nil {
		t.Fatalf("TranslateBack with partition 1 of %s offline: %v", syncsTopic, err)
	}
	want := map[string]map[int32]remoteclusterutils.BackTranslation{"orders": {
		0: {Topic: "orders", Partition: 0, Position: 30, Offset: 11, Record: checkpoint.KindSync},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestBackIndexWithRecords: a position whose previous record on the remote
// topic is a kmirror copy carrying its source offset translates exactly
// from that record (KindRecord), ahead of the syncs; records of MM2 or of a
// kmirror without offsets, local records and other sources' copies leave
// the position to the runs and syncs; position 0 reads nothing.
func TestBackIndexWithRecords(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	syncsTopic := "mm2-offset-syncs." + p.Target.Alias + ".internal" // unique on a shared real cluster
	remote := p.Topic("src.orders")
	createTopics(t, &p.Source, syncsTopic, checkpoint.OffsetRunsTopic(syncsTopic))
	createTopicsWith(t, &p.Target, 1, nil, remote) // not compacted: its records have no key
	s := checkpoint.OffsetSync{Topic: "orders", Partition: 0, UpstreamOffset: 0, DownstreamOffset: 0}
	k, _ := s.Key()
	v, _ := s.Value()
	testcluster.Produce(t, &p.Source, raw(syncsTopic, k, v))
	prov := func(value string) []kgo.RecordHeader {
		return []kgo.RecordHeader{{Key: "kmirror-provenance", Value: []byte(value)}}
	}
	testcluster.Produce(t, &p.Target,
		&kgo.Record{Topic: remote, Value: []byte("a"), Headers: prov("SRC-ID,#100")},   // 0
		&kgo.Record{Topic: remote, Value: []byte("b"), Headers: prov("X,SRC-ID,#101")}, // 1: a second hop
		&kgo.Record{Topic: remote, Value: []byte("local")},                             // 2
		&kgo.Record{Topic: remote, Value: []byte("c"), Headers: prov("SRC-ID")},        // 3: no offset
		&kgo.Record{Topic: remote, Value: []byte("d"), Headers: prov("OTHER,#7")},      // 4: another source
	)
	idx, err := remoteclusterutils.ReadBackIndex(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic, "")
	if err != nil {
		t.Fatal(err)
	}
	positions := map[string]map[int32]int64{"orders": {0: 1}}
	for _, d := range []int64{0, 2, 3, 4, 5} {
		with, err := idx.WithRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC-ID", map[string]string{"orders": remote},
			map[string]map[int32]int64{"orders": {0: d}})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := with.Translate("orders", 0, d)
		var want remoteclusterutils.BackTranslation
		switch d {
		case 2: // record 1 is a copy of SRC-ID's offset 101
			want = remoteclusterutils.BackTranslation{Topic: "orders", Partition: 0, Position: 2, Offset: 102, Record: remoteclusterutils.KindRecord, Exact: true}
		default: // the sync 0->0: one past it, safe
			want = remoteclusterutils.BackTranslation{Topic: "orders", Partition: 0, Position: d, Offset: 1, Record: checkpoint.KindSync}
			if d == 0 {
				want.Offset = 0 // the sync names position 0 itself
			}
		}
		if !ok || !cmp.Equal(want, got) {
			t.Errorf("position %d: %+v (%v), want %+v", d, got, ok, want)
		}
	}
	with, err := idx.WithRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC-ID", map[string]string{"orders": remote}, positions)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := with.Translate("orders", 0, 1); got.Offset != 101 || got.Record != remoteclusterutils.KindRecord || !got.Exact {
		t.Errorf("position 1: %+v, want 101 exact from the record", got)
	}
	if got, _ := idx.Translate("orders", 0, 1); got.Record != checkpoint.KindSync {
		t.Errorf("the index WithRecords was called on changed: %+v", got)
	}
}

// TestBackIndexForRemoteTopicIDs: the remote topic was deleted and
// re-created on B. Its first log held source offsets 100-199 at 0-99 (the
// replication had started at 100); the refill holds 50-149 at 0-99 (from
// the source's log start). A group at position 60 on the new log consumed
// up to source 109. The old log's run maps it to 160: failing back there
// skips 50 records, and without the remote topic's current ID the index
// cannot tell (TranslateBack's answer). ForRemoteTopicIDs keeps the
// current log's run and sync, and the sync that records no ID.
func TestBackIndexForRemoteTopicIDs(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	syncsTopic := "mm2-offset-syncs." + p.Target.Alias + ".internal"
	runsTopic := checkpoint.OffsetRunsTopic(syncsTopic)
	createTopics(t, &p.Source, syncsTopic, runsTopic)
	oldID, newID := [16]byte{1}, [16]byte{2}
	tag := func(r *kgo.Record, id [16]byte) *kgo.Record {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: checkpoint.TargetTopicIDHeader, Value: id[:]})
		return r
	}
	run := func(up, down, count int64) *kgo.Record {
		return encoded(t, runsTopic, checkpoint.OffsetRun{Topic: "orders", Partition: 0, Session: 7, PrevUpstreamOffset: -1, PrevOffset: -1,
			FirstUpstreamOffset: up, FirstOffset: down, Count: count, EndUpstreamOffset: -1, Committed: -1})
	}
	sync := func(up, down int64) *kgo.Record {
		return encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "orders", Partition: 0, UpstreamOffset: up, DownstreamOffset: down})
	}
	testcluster.Produce(t, &p.Source, tag(run(100, 0, 100), oldID), tag(sync(100, 0), oldID), tag(sync(150, 50), oldID),
		tag(run(50, 0, 100), newID), tag(sync(50, 0), newID), sync(95, 45))
	idx, err := remoteclusterutils.ReadBackIndex(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := idx.Translate("orders", 0, 60); b.Offset != 160 {
		t.Fatalf("unfiltered: %+v, want offset 160 from the old log's run (what this test guards against)", b)
	}
	cur := idx.ForRemoteTopicIDs(map[string][16]byte{"orders": newID})
	want := remoteclusterutils.BackTranslation{Topic: "orders", Partition: 0, Position: 60, Offset: 110, Record: checkpoint.KindRun, Exact: true}
	if b, ok := cur.Translate("orders", 0, 60); !ok || b != want {
		t.Errorf("current log: %+v, %v, want %+v", b, ok, want)
	}
	// Past the new run: the newest kept sync at or before 120 is the
	// untagged (95, 45), not the old log's (150, 50).
	want = remoteclusterutils.BackTranslation{Topic: "orders", Partition: 0, Position: 120, Offset: 96, Record: checkpoint.KindSync}
	if b, ok := cur.Translate("orders", 0, 120); !ok || b != want {
		t.Errorf("past the run: %+v, %v, want %+v", b, ok, want)
	}
	// Another topic's ID, and a zero one, filter nothing.
	for _, ids := range []map[string][16]byte{{"payments": newID}, {"orders": {}}} {
		if b, _ := idx.ForRemoteTopicIDs(ids).Translate("orders", 0, 60); b.Offset != 160 {
			t.Errorf("ForRemoteTopicIDs(%v): %+v, want the unfiltered 160", ids, b)
		}
	}
}

// TestTranslateBackNoSyncsTopic: regression test for a helper's finding
// (stop 40). TranslateBack given an offset-syncs topic the cluster does
// not have (the wrong cluster, alias or offset-syncs.topic.location)
// returned an empty result and no error, which reads as "positions too old
// to translate". It now returns ErrNoOffsetSyncsTopic naming the topic;
// ReadBackIndex still reads (Found false) for callers that translate from
// the copies alone.
func TestTranslateBackNoSyncsTopic(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	syncsTopic := p.Topic("mm2-offset-syncs.dst.internal")
	cl := testcluster.Client(t, &p.Source)
	got, err := remoteclusterutils.TranslateBack(ctxT(t), cl, syncsTopic, map[string]map[int32]int64{"orders": {0: 5}}, "")
	if !errors.Is(err, remoteclusterutils.ErrNoOffsetSyncsTopic) || !strings.Contains(err.Error(), syncsTopic) || got != nil {
		t.Fatalf("TranslateBack without the topic: %v, %v; want ErrNoOffsetSyncsTopic naming %s", got, err, syncsTopic)
	}
	idx, err := remoteclusterutils.ReadBackIndex(ctxT(t), cl, syncsTopic, "")
	if err != nil || idx.Found() {
		t.Fatalf("ReadBackIndex without the topic: found %v, %v; want an empty index, not found", idx != nil && idx.Found(), err)
	}
	createTopics(t, &p.Source, syncsTopic)
	if idx, err = remoteclusterutils.ReadBackIndex(ctxT(t), cl, syncsTopic, ""); err != nil || !idx.Found() {
		t.Fatalf("ReadBackIndex of an empty topic: found %v, %v; want found", idx != nil && idx.Found(), err)
	}
	if got, err = remoteclusterutils.TranslateBack(ctxT(t), cl, syncsTopic, map[string]map[int32]int64{"orders": {0: 5}}, ""); err != nil || len(got) != 0 {
		t.Fatalf("TranslateBack of an empty topic: %v, %v; want nothing translated, no error", got, err)
	}
}

// TestBackTranslationSourceTopicID: a translation carries the source topic
// ID the offset run holding the copy before the position recorded (the
// incarnation of the source topic it names an offset of), whatever the
// answer came from; zero where no run with an ID covers it (syncs alone,
// MM2's).
func TestBackTranslationSourceTopicID(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	syncsTopic := "mm2-offset-syncs." + p.Target.Alias + ".internal"
	runsTopic := checkpoint.OffsetRunsTopic(syncsTopic)
	createTopics(t, &p.Source, syncsTopic, runsTopic)
	id := [16]byte{9}
	testcluster.Produce(t, &p.Source,
		encoded(t, runsTopic, checkpoint.OffsetRun{Topic: "orders", Partition: 0, Session: 7, TopicID: id, PrevUpstreamOffset: -1, PrevOffset: -1,
			FirstUpstreamOffset: 0, FirstOffset: 0, Count: 100, EndUpstreamOffset: -1, Committed: -1}),
		encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "orders", Partition: 0, UpstreamOffset: 150, DownstreamOffset: 150}))
	idx, err := remoteclusterutils.ReadBackIndex(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := idx.Translate("orders", 0, 100); !ok || b.Offset != 100 || b.SourceTopicID != id {
		t.Errorf("position 100 (the run's last copy before it): %+v, %v; want offset 100, source topic ID %v", b, ok, id)
	}
	if b, ok := idx.Translate("orders", 0, 160); !ok || b.Offset != 151 || b.SourceTopicID != ([16]byte{}) {
		t.Errorf("position 160 (the sync alone): %+v, %v; want offset 151, no source topic ID", b, ok)
	}
}

// TestTranslateBackPositionAfterTransactionMarker: with exactly-once
// replication each transaction ends with a marker on the remote topic, and
// the forward flow's next offset run links to the previous record across
// it (PrevOffset is the last record before the marker, FirstOffset the
// first after it). A consumer that read through the marker (its position
// is after the marker, as every read_committed consumer's is at the end of
// a transaction) translates back exactly to the run's first source offset.
// Only a position right after PrevOffset was linked, so such a position
// fell back to the newest offset sync: 10 instead of 40 here, not exact,
// 30 records re-read on failback and its source topic ID unknown.
func TestTranslateBackPositionAfterTransactionMarker(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	syncsTopic := "mm2-offset-syncs." + p.Target.Alias + ".internal"
	runsTopic := checkpoint.OffsetRunsTopic(syncsTopic)
	createTopics(t, &p.Source, syncsTopic, runsTopic)
	id := [16]byte{7}
	run := func(prevUp, prevDown, up, down, count int64) *kgo.Record {
		return encoded(t, runsTopic, checkpoint.OffsetRun{Topic: "orders", Partition: 0, Session: 3, TopicID: id,
			PrevUpstreamOffset: prevUp, PrevOffset: prevDown, FirstUpstreamOffset: up, FirstOffset: down, Count: count,
			EndUpstreamOffset: -1, Committed: -1})
	}
	// Source 0-39 at 0-39, a marker at 40; source 40-59 at 41-60, a
	// marker at 61; source 60-69 at 62-71. The syncs are older (offset
	// syncs are written every offset.lag.max records and at flushes).
	testcluster.Produce(t, &p.Source,
		run(-1, -1, 0, 0, 40), run(39, 39, 40, 41, 20), run(59, 60, 60, 62, 10),
		encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "orders", Partition: 0, UpstreamOffset: 0, DownstreamOffset: 0}),
		encoded(t, syncsTopic, checkpoint.OffsetSync{Topic: "orders", Partition: 0, UpstreamOffset: 9, DownstreamOffset: 9}))
	idx, err := remoteclusterutils.ReadBackIndex(ctxT(t), testcluster.Client(t, &p.Source), syncsTopic, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ position, want int64 }{
		{40, 40}, // at the marker: read 0-39
		{41, 40}, // after the marker
		{60, 59}, // inside the second run
		{61, 60}, // at the second marker
		{62, 60}, // after it
		{72, 70}, // after the last run
	} {
		b, ok := idx.Translate("orders", 0, tc.position)
		if !ok || b.Offset != tc.want || !b.Exact || b.Record != checkpoint.KindRun || b.SourceTopicID != id {
			t.Errorf("position %d: %+v, %v; want offset %d, exact from a run, source topic ID %v", tc.position, b, ok, tc.want, id)
		}
	}
}
