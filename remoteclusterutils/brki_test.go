package remoteclusterutils_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestBrkIAnswersFromTheBrokersNotACache: a long-lived Client (MirrorClient
// style) answered its topic listings and its checkpoints topic's lookups
// from franz-go's metadata cache, which kadm's listings use for up to the
// client's MetadataMinAge (5 s by default). Right after the checkpoints
// topic appeared on the target, TranslateOffsets said "does not exist on
// this cluster" (without asking the cluster); right after "src.heartbeats"
// appeared, ReplicationHops("src") said -1; right after it was deleted, 1;
// and a call with a cancelled context answered from the cache. Java's
// MirrorClient lists topics with a request each call. Every listing now
// asks the brokers.
func TestBrkIAnswersFromTheBrokersNotACache(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	rc := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target))
	ctx := ctxT(t)

	if _, err := rc.TranslateOffsets(ctx, p.Source.Alias, "g1"); !errors.Is(err, remoteclusterutils.ErrNoCheckpointsTopic) {
		t.Fatalf("TranslateOffsets before the checkpoints topic exists: %v; want ErrNoCheckpointsTopic", err)
	}
	if n, err := rc.ReplicationHops(ctx, p.Source.Alias); n != -1 || err != nil {
		t.Fatalf("ReplicationHops before src.heartbeats exists = %d, %v; want -1", n, err)
	}

	createTopics(t, &p.Target, topic, "src.heartbeats")
	testcluster.Produce(t, &p.Target, raw(topic, mm2Key("g1", "src.orders", 0), mm2Value(0, 10, 8, "")))

	got, err := rc.TranslateOffsets(ctx, p.Source.Alias, "g1")
	if err != nil {
		t.Fatalf("TranslateOffsets once the checkpoints topic exists: %v", err)
	}
	if diff := cmp.Diff(remoteclusterutils.Offsets{"src.orders": {0: off("src.orders", 0, 8, "")}}, got); diff != "" {
		t.Errorf("TranslateOffsets once the checkpoints topic exists (-want +got):\n%s", diff)
	}
	if n, err := rc.ReplicationHops(ctx, p.Source.Alias); n != 1 || err != nil {
		t.Errorf("ReplicationHops once src.heartbeats exists = %d, %v; want 1", n, err)
	}
	if u, err := rc.UpstreamClusters(ctx); !cmp.Equal(u, []string{"src"}) || err != nil {
		t.Errorf("UpstreamClusters once src.heartbeats exists = %q, %v; want [src]", u, err)
	}

	if _, err := testcluster.Admin(t, &p.Target).DeleteTopics(ctx, "src.heartbeats"); err != nil {
		t.Fatal(err)
	}
	if n, err := rc.ReplicationHops(ctx, p.Source.Alias); n != -1 || err != nil {
		t.Errorf("ReplicationHops once src.heartbeats is deleted = %d, %v; want -1", n, err)
	}
	if h, err := rc.HeartbeatTopics(ctx); h != nil || err != nil {
		t.Errorf("HeartbeatTopics once src.heartbeats is deleted = %q, %v; want none", h, err)
	}

	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() error{
		"ReplicationHops":  func() error { _, err := rc.ReplicationHops(cctx, "src"); return err },
		"UpstreamClusters": func() error { _, err := rc.UpstreamClusters(cctx); return err },
		"HeartbeatTopics":  func() error { _, err := rc.HeartbeatTopics(cctx); return err },
		"CheckpointTopics": func() error { _, err := rc.CheckpointTopics(cctx); return err },
		"RemoteTopics":     func() error { _, err := rc.RemoteTopics(cctx); return err },
		"RemoteTopicsFor":  func() error { _, err := rc.RemoteTopicsFor(cctx, "src"); return err },
		"TranslateOffsets": func() error { _, err := rc.TranslateOffsets(cctx, "src", "g1"); return err },
		"TranslateGroups":  func() error { _, err := rc.TranslateGroups(cctx, "src", nil); return err },
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s(cancelled context) = %v; want an error wrapping context.Canceled", name, err)
		}
	}
}

// TestBrkIReplicationHopsAliasHoldingTheSeparator: MM2 accepts an alias
// holding the separator ("us.west"), whose heartbeats topic
// "us.west.heartbeats" then parses as coming from "us". ReplicationHops
// answered -1, "not upstream", for a cluster that does replicate into this
// one (as MirrorClient does). kmirror now says, with -1, that the alias
// cannot be found from topic names and what to write instead; under a
// separator the alias does not hold, its hops are counted.
func TestBrkIReplicationHopsAliasHoldingTheSeparator(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	createTopics(t, &p.Target, "us.west.heartbeats", "us.west__heartbeats", "eu___heartbeats")
	cl := testcluster.Client(t, &p.Target)
	ctx := ctxT(t)

	n, err := remoteclusterutils.NewClient(cl).ReplicationHops(ctx, "us.west")
	if n != -1 || err == nil {
		t.Fatalf(`ReplicationHops("us.west"), separator ".": %d, %v; want -1 and an error`, n, err)
	}
	for _, want := range []string{`"us.west"`, `separator "."`, "us.west.heartbeats", `coming from "us"`, "replication.policy.separator"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	// The pieces are what MirrorClient finds upstream, as before.
	if u, err := remoteclusterutils.NewClient(cl).UpstreamClusters(ctx); !cmp.Equal(u, []string{"us", "west"}) || err != nil {
		t.Errorf(`UpstreamClusters, separator ".": %q, %v; want [us west] (MM2's parse)`, u, err)
	}

	under, err := policy.NewDefault(policy.WithSeparator("__"))
	if err != nil {
		t.Fatal(err)
	}
	rc := remoteclusterutils.NewClient(cl, remoteclusterutils.WithPolicy(under))
	if n, err := rc.ReplicationHops(ctx, "us.west"); n != 1 || err != nil {
		t.Errorf(`ReplicationHops("us.west"), separator "__": %d, %v; want 1 (us.west__heartbeats)`, n, err)
	}
	// "eu_" ends with the start of "__": "eu___heartbeats" parses as
	// coming from "eu".
	if n, err := rc.ReplicationHops(ctx, "eu_"); n != -1 || err == nil || !strings.Contains(err.Error(), `coming from "eu"`) {
		t.Errorf(`ReplicationHops("eu_"), separator "__": %d, %v; want -1 and an error naming "eu"`, n, err)
	}
}

// TestBrkITranslateDetailedTopicNotDescribable keeps, with the listing of
// the target topics' partitions now asked of the brokers, what kadm's
// listing did: a target topic the client may not describe fails
// TranslateDetailed, naming the topic and the ACL, instead of leaving its
// never-committed partitions unaccounted for.
func TestBrkITranslateDetailedTopicNotDescribable(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopics(t, &p.Target, topic)
	testcluster.CreateTopic(t, &p.Target, "src.orders", 3, nil)
	testcluster.Produce(t, &p.Target, raw(topic, mm2Key("g1", "src.orders", 1), mm2Value(0, 10, 8, "")))
	ctx := ctxT(t)
	rc, got := translateDetailed(t, &p.Target, p.Source.Alias, "g1")
	var never []int32
	for _, pt := range got {
		if pt.NeverCommitted {
			never = append(never, pt.Partition)
		}
	}
	if !cmp.Equal(never, []int32{0, 2}) || len(got) != 3 {
		t.Fatalf("TranslateDetailed = %+v; want partition 1 translated, 0 and 2 never committed", got)
	}

	p.Target.Fake.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.MetadataRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic == nil || *req.Topics[0].Topic != "src.orders" {
			return nil, nil, false
		}
		p.Target.Fake.KeepControl()
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr("src.orders"), kerr.TopicAuthorizationFailed.Code
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	_, err := rc.TranslateDetailed(ctx, p.Source.Alias, "g1")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || !strings.Contains(err.Error(), "src.orders") || !strings.Contains(err.Error(), "Describe") {
		t.Errorf("TranslateDetailed with src.orders not describable: %v; want TOPIC_AUTHORIZATION_FAILED naming src.orders and the ACL", err)
	}
}

// TestBrkICheckpointsOfPartitionsTheTargetLacks: checkpoints outlive the
// partitions they name (they are never deleted): a remote topic deleted,
// or re-created with fewer partitions, keeps its old checkpoints.
// TranslateDetailed reported them as ordinary translations (an "exact"
// one too) and TranslatedOffsets returned them, so committing its result
// failed with UNKNOWN_TOPIC_OR_PARTITION. They are now marked
// MissingOnTarget and left out of TranslatedOffsets; TranslateOffsets
// returns them as MM2's MirrorClient does.
func TestBrkICheckpointsOfPartitionsTheTargetLacks(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopics(t, &p.Target, topic)
	testcluster.CreateTopic(t, &p.Target, "src.orders", 2, nil) // re-created with 2 of its 4 partitions
	testcluster.Produce(t, &p.Target,
		raw(topic, mm2Key("g1", "src.orders", 0), mm2Value(0, 10, 8, "")),
		raw(topic, mm2Key("g1", "src.orders", 3), mm2Value(0, 30, 28, "")),
		raw(topic, mm2Key("g1", "src.gone", 0), mm2Value(0, 5, 5, "")), // deleted on the target
	)
	ctx := ctxT(t)
	rc, got := translateDetailed(t, &p.Target, p.Source.Alias, "g1")
	type row struct {
		Topic                           string
		Partition                       int32
		Offset                          int64
		NeverCommitted, MissingOnTarget bool
	}
	var rows []row
	for _, pt := range got {
		rows = append(rows, row{pt.Topic, pt.Partition, pt.Offset, pt.NeverCommitted, pt.MissingOnTarget})
	}
	want := []row{
		{"src.gone", 0, 5, false, true},
		{"src.orders", 0, 8, false, false},
		{"src.orders", 1, -1, true, false},
		{"src.orders", 3, 28, false, true},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("TranslateDetailed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(remoteclusterutils.Offsets{"src.orders": {0: off("src.orders", 0, 8, "")}},
		remoteclusterutils.TranslatedOffsets(got)); diff != "" {
		t.Errorf("TranslatedOffsets (-want +got):\n%s", diff)
	}
	// What it leaves out is what the broker refuses to commit.
	adm := testcluster.Admin(t, &p.Target)
	all, err := rc.TranslateOffsets(ctx, p.Source.Alias, "g1")
	if err != nil || len(all["src.orders"]) != 2 || len(all["src.gone"]) != 1 {
		t.Fatalf("TranslateOffsets = %v, %v; want the three checkpoints, as MM2 returns them", all, err)
	}
	if err := adm.CommitAllOffsets(ctx, "g1", all); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("committing every checkpoint: %v; want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if err := adm.CommitAllOffsets(ctx, "g1", remoteclusterutils.TranslatedOffsets(got)); err != nil {
		t.Errorf("committing TranslatedOffsets: %v", err)
	}
}

// TestTranslateDetailedBelowTargetLogStart: a checkpoint below its target
// partition's log start (the target's retention removed the copies from
// it on) is marked BelowLogStart with the log start, and TranslatedOffsets
// gives the log start: committed at the checkpoint, a consumer gets
// OFFSET_OUT_OF_RANGE and, with auto.offset.reset=latest, skips every
// record the target still holds. TranslateOffsets returns the checkpoint
// as MM2 does.
func TestTranslateDetailedBelowTargetLogStart(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopics(t, &p.Target, topic)
	testcluster.CreateTopic(t, &p.Target, "src.orders", 2, nil)
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "src.orders", Partition: int32(i % 2), Value: []byte{byte(i)}})
	}
	testcluster.Produce(t, &p.Target, recs...) // 10 records in each partition
	testcluster.Produce(t, &p.Target,
		raw(topic, mm2Key("g1", "src.orders", 0), mm2Value(0, 4, 4, "m0")),
		raw(topic, mm2Key("g1", "src.orders", 1), mm2Value(0, 9, 9, "m1")),
	)
	ctx := ctxT(t)
	adm := testcluster.Admin(t, &p.Target)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "src.orders", Partition: 0, At: 7})
	del.Add(kadm.Offset{Topic: "src.orders", Partition: 1, At: 7})
	if _, err := adm.DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	rc, got := translateDetailed(t, &p.Target, p.Source.Alias, "g1")
	type row struct {
		Partition     int32
		Offset        int64
		BelowLogStart bool
		LogStart      int64
	}
	var rows []row
	for _, pt := range got {
		rows = append(rows, row{pt.Partition, pt.Offset, pt.BelowLogStart, pt.LogStart})
	}
	if diff := cmp.Diff([]row{{0, 4, true, 7}, {1, 9, false, 0}}, rows); diff != "" {
		t.Errorf("TranslateDetailed (-want +got):\n%s", diff)
	}
	want := remoteclusterutils.Offsets{"src.orders": {0: off("src.orders", 0, 7, "m0"), 1: off("src.orders", 1, 9, "m1")}}
	offsetsToCommit(t, rc, got, p.Source.Alias, want, 0, 4)
}

// translateDetailed returns a translation client of c and its
// TranslateDetailed of group from alias.
func translateDetailed(t *testing.T, c *testcluster.Cluster, alias, group string) (*remoteclusterutils.Client, []remoteclusterutils.PartitionTranslation) {
	t.Helper()
	rc := remoteclusterutils.NewClient(testcluster.Client(t, c))
	got, err := rc.TranslateDetailed(ctxT(t), alias, group)
	if err != nil {
		t.Fatal(err)
	}
	return rc, got
}

// TestTranslateDetailedCheckpointOfAnEarlierLog: a kmirror checkpoint
// records the remote topic ID its translation was made for; one made for
// an earlier log of the topic (deleted and re-created since, before the
// emitter checkpointed the group again, as when the source died) is marked
// OtherLog, and TranslatedOffsets gives the current log's start instead of
// a position of the earlier log (here 9, past the new log's end of 4: a
// consumer there reset to the log end, skipping the 4 records).
func TestTranslateDetailedCheckpointOfAnEarlierLog(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopics(t, &p.Target, topic)
	testcluster.CreateTopic(t, &p.Target, "src.orders", 2, nil)
	ctx := ctxT(t)
	md, err := testcluster.Admin(t, &p.Target).Metadata(ctx, "src.orders")
	if err != nil {
		t.Fatal(err)
	}
	current := md.Topics["src.orders"].ID
	earlier := [16]byte{1, 2, 3}
	var recs []*kgo.Record
	for i := range 8 {
		recs = append(recs, &kgo.Record{Topic: "src.orders", Partition: int32(i % 2), Value: []byte{byte(i)}})
	}
	testcluster.Produce(t, &p.Target, recs...) // 4 records in each partition
	from := func(r *kgo.Record, id [16]byte) *kgo.Record {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: checkpoint.TranslatedFromHeader, Value: id[:]})
		return r
	}
	testcluster.Produce(t, &p.Target,
		from(raw(topic, mm2Key("g1", "src.orders", 0), mm2Value(0, 3, 3, "")), current),
		from(raw(topic, mm2Key("g1", "src.orders", 1), mm2Value(0, 9, 9, "")), earlier),
	)
	rc, got := translateDetailed(t, &p.Target, p.Source.Alias, "g1")
	type row struct {
		Partition      int32
		Offset         int64
		TranslatedFrom [16]byte
		OtherLog       bool
		LogStart       int64
	}
	var rows []row
	for _, pt := range got {
		rows = append(rows, row{pt.Partition, pt.Offset, pt.TranslatedFrom, pt.OtherLog, pt.LogStart})
	}
	if diff := cmp.Diff([]row{{0, 3, current, false, 0}, {1, 9, earlier, true, 0}}, rows); diff != "" {
		t.Errorf("TranslateDetailed (-want +got):\n%s", diff)
	}
	want := remoteclusterutils.Offsets{"src.orders": {0: off("src.orders", 0, 3, ""), 1: off("src.orders", 1, 0, "")}}
	offsetsToCommit(t, rc, got, p.Source.Alias, want, 1, 9)
}

// offsetsToCommit checks TranslatedOffsets(got) against want, and that
// TranslateOffsets of group g1 from alias still returns the checkpoint of
// src.orders[part] as written (at), as MM2's translateOffsets does.
func offsetsToCommit(t *testing.T, rc *remoteclusterutils.Client, got []remoteclusterutils.PartitionTranslation, alias string, want remoteclusterutils.Offsets, part int32, at int64) {
	t.Helper()
	if diff := cmp.Diff(want, remoteclusterutils.TranslatedOffsets(got)); diff != "" {
		t.Errorf("TranslatedOffsets (-want +got):\n%s", diff)
	}
	all, err := rc.TranslateOffsets(ctxT(t), alias, "g1")
	if err != nil || all["src.orders"][part].At != at {
		t.Errorf("TranslateOffsets = %v, %v; want the checkpoint's %d on partition %d, as MM2 returns it", all, err, at, part)
	}
}
