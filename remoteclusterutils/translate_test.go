package remoteclusterutils_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

func off(topic string, partition int32, at int64, metadata string) kadm.Offset {
	return kadm.Offset{Topic: topic, Partition: partition, At: at, LeaderEpoch: -1, Metadata: metadata}
}

// TestTranslateOffsets writes checkpoint records the way MM2 does (partition
// 0 of "<src>.checkpoints.internal" on the target) and checks the exact
// result: last record in log order wins, bad records are skipped and counted.
func TestTranslateOffsets(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	// Not compacted: real brokers reject the nil-key record below on a
	// compacted topic (someone may still have created it this way).
	createTopicsWith(t, &p.Target, 1, nil, topic)
	g1, g2 := p.Group("g1"), p.Group("g2")

	recs := []*kgo.Record{
		/* 0 */ raw(topic, mm2Key(g1, "src.orders", 0), mm2Value(0, 100, 95, "")),
		/* 1 */ cp(t, topic, checkpoint.Checkpoint{Group: g1, Topic: "src.orders", Partition: 1, UpstreamOffset: 10, DownstreamOffset: 10, Metadata: "m1"}),
		/* 2 */ cp(t, topic, checkpoint.Checkpoint{Group: g2, Topic: "src.orders", Partition: 0, UpstreamOffset: 7, DownstreamOffset: 7}),
		/* 3 */ raw(topic, mm2Key(g1, "src.orders", 0), mm2Value(0, 200, 190, "")),
		/* 4 malformed key */ raw(topic, []byte{0, 9, 'x'}, mm2Value(0, 1, 1, "")),
		/* 5 later but LOWER: wins */ raw(topic, mm2Key(g1, "src.orders", 0), mm2Value(0, 150, 140, "rewound")),
		/* 6 */ raw(topic, mm2Key(g1, "src.orders", 2), mm2Value(0, 5, 5, "")),
		/* 7 tombstone: removes 6 */ raw(topic, mm2Key(g1, "src.orders", 2), nil),
		/* 8 negative downstream: skipped, 1 stays */ raw(topic, mm2Key(g1, "src.orders", 1), mm2Value(0, 11, -1, "")),
		/* 9 version 1 + trailing bytes: accepted */ raw(topic, mm2Key(g1, "src.payments", 0), mm2Value(1, 3, 3, "v1", 0xde, 0xad, 0xbe, 0xef)),
		/* 10 short value */ raw(topic, mm2Key(g1, "src.orders", 1), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 99}),
		/* 11 nil key */ raw(topic, nil, mm2Value(0, 1, 1, "")),
		/* 12 tombstone, bad key */ raw(topic, []byte{1}, nil),
		/* 13 empty value */ raw(topic, mm2Key(g1, "src.orders", 1), []byte{}),
		/* 14 negative partition */ raw(topic, mm2Key(g1, "src.orders", -1), mm2Value(0, 1, 1, "")),
	}
	testcluster.Produce(t, &p.Target, recs...)

	rc := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target))
	ctx := ctxT(t)

	got, err := rc.TranslateOffsets(ctx, p.Source.Alias, g1)
	if err != nil {
		t.Fatal(err)
	}
	want := remoteclusterutils.Offsets{
		"src.orders": {
			0: off("src.orders", 0, 140, "rewound"),
			1: off("src.orders", 1, 10, "m1"),
		},
		"src.payments": {0: off("src.payments", 0, 3, "v1")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TranslateOffsets(%s) (-want +got):\n%s", g1, diff)
	}

	got2, err := rc.TranslateOffsets(ctx, p.Source.Alias, g2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(remoteclusterutils.Offsets{"src.orders": {0: off("src.orders", 0, 7, "")}}, got2); diff != "" {
		t.Errorf("TranslateOffsets(%s) (-want +got):\n%s", g2, diff)
	}

	// Unknown group: empty, non-nil, no error (MM2 returns an empty map).
	none, err := rc.TranslateOffsets(ctx, p.Source.Alias, p.Group("nobody"))
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("TranslateOffsets(unknown group) = %v, %v; want empty non-nil map, nil", none, err)
	}

	all, err := rc.Checkpoints(ctx, p.Source.Alias)
	if err != nil {
		t.Fatal(err)
	}
	wantStats := remoteclusterutils.ReadStats{
		Topic: topic, StartOffset: 0, EndOffset: 15, Records: 15,
		Checkpoints: 7, Undecodable: 5, Tombstones: 1, Invalid: 2, UnknownVersion: 1,
	}
	if diff := cmp.Diff(wantStats, all.Stats); diff != "" {
		t.Errorf("Checkpoints stats (-want +got):\n%s", diff)
	}
	if s := all.Stats.Skipped(); s != 8 {
		t.Errorf("Skipped() = %d, want 8", s)
	}
	wantGroups := map[string][]checkpoint.Checkpoint{
		g1: {
			{Group: g1, Topic: "src.orders", Partition: 0, UpstreamOffset: 150, DownstreamOffset: 140, Metadata: "rewound"},
			{Group: g1, Topic: "src.orders", Partition: 1, UpstreamOffset: 10, DownstreamOffset: 10, Metadata: "m1"},
			{Group: g1, Topic: "src.payments", Partition: 0, UpstreamOffset: 3, DownstreamOffset: 3, Metadata: "v1"},
		},
		g2: {{Group: g2, Topic: "src.orders", Partition: 0, UpstreamOffset: 7, DownstreamOffset: 7}},
	}
	if diff := cmp.Diff(wantGroups, all.Groups); diff != "" {
		t.Errorf("Checkpoints groups (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{g1, g2}, all.GroupIDs()); diff != "" {
		t.Errorf("GroupIDs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, all.Offsets(g1)); diff != "" {
		t.Errorf("Checkpoints.Offsets(%s) differs from TranslateOffsets (-want +got):\n%s", g1, diff)
	}

	// The package-level call (RemoteClusterUtils style) gives the same.
	pkg, err := remoteclusterutils.TranslateOffsets(ctx, p.Source.Alias, g1,
		remoteclusterutils.WithClientOpts(p.Target.Opts()...))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, pkg); diff != "" {
		t.Errorf("package TranslateOffsets (-want +got):\n%s", diff)
	}
}

// TestTranslateOffsetsSpecBytes reads the worked example of
// docs/mm2-compat.md §2.3, byte for byte what Java's
// Checkpoint.serializeValue produces.
func TestTranslateOffsetsSpecBytes(t *testing.T) {
	p := testcluster.New(t, "us-west", "us-east")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopics(t, &p.Target, topic)
	key := []byte("\x00\x02g1\x00\x10us-east-1.orders\x00\x00\x00\x00")
	val := []byte("\x00\x00" + "\x00\x00\x00\x00\x00\x00\x00\x64" + "\x00\x00\x00\x00\x00\x00\x00\x5f" + "\x00\x00")
	testcluster.Produce(t, &p.Target, raw(topic, key, val))
	got, err := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target)).TranslateOffsets(ctxT(t), p.Source.Alias, "g1")
	if err != nil {
		t.Fatal(err)
	}
	want := remoteclusterutils.Offsets{"us-east-1.orders": {0: off("us-east-1.orders", 0, 95, "")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestEmptyCheckpointsTopic: an existing topic without any checkpoint is
// "not yet" for TranslateOffsets (a typed error, checkable with errors.Is),
// and no groups for Checkpoints; once another group has a checkpoint, a
// group without one is unknown: empty offsets, no error.
func TestEmptyCheckpointsTopic(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopics(t, &p.Target, topic)
	rc := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target))
	got, err := rc.Checkpoints(ctxT(t), p.Source.Alias)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Groups) != 0 || got.Stats.Records != 0 || got.Stats.EndOffset != 0 {
		t.Errorf("Checkpoints on empty topic = %+v, want no groups and no records", got)
	}
	offs, err := rc.TranslateOffsets(ctxT(t), p.Source.Alias, "g1")
	var ny *remoteclusterutils.NoCheckpointYetError
	if !errors.Is(err, remoteclusterutils.ErrNoCheckpointYet) || !errors.As(err, &ny) || ny.Topic != topic || ny.Alias != p.Source.Alias || offs != nil {
		t.Fatalf("TranslateOffsets on an empty topic = %v, %v; want nil and a *NoCheckpointYetError for %s", offs, err, topic)
	}
	// Only an unusable record: still not yet.
	testcluster.Produce(t, &p.Target, &kgo.Record{Topic: topic, Partition: 0, Key: []byte{1}, Value: []byte{2}})
	if _, err := rc.TranslateOffsets(ctxT(t), p.Source.Alias, "g1"); !errors.Is(err, remoteclusterutils.ErrNoCheckpointYet) {
		t.Errorf("TranslateOffsets with only an undecodable record: %v, want ErrNoCheckpointYet", err)
	}
	cp := checkpoint.Checkpoint{Group: "other", Topic: p.Source.Alias + ".orders", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 5}
	k, _ := cp.Key()
	v, _ := cp.Value()
	testcluster.Produce(t, &p.Target, &kgo.Record{Topic: topic, Partition: 0, Key: k, Value: v})
	offs, err = rc.TranslateOffsets(ctxT(t), p.Source.Alias, "g1")
	if err != nil || offs == nil || len(offs) != 0 {
		t.Errorf("TranslateOffsets(unknown group) = %v, %v; want empty non-nil offsets and no error", offs, err)
	}
}

// TestMissingCheckpointsTopic: a clear, typed error naming the topic, the
// alias and the aliases that do have checkpoints topics; never a hang.
func TestMissingCheckpointsTopic(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	other, x := p.Target.Alias+"up", p.Target.Alias+"x"
	createTopics(t, &p.Target, other+".checkpoints.internal", x+"__checkpoints__internal", p.Topic("orders"))
	rc := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target))

	_, err := rc.TranslateOffsets(ctxT(t), p.Source.Alias, "g1")
	if !errors.Is(err, remoteclusterutils.ErrNoCheckpointsTopic) {
		t.Fatalf("err = %v, want ErrNoCheckpointsTopic", err)
	}
	var ne *remoteclusterutils.NoCheckpointsTopicError
	if !errors.As(err, &ne) {
		t.Fatalf("err %T is not a *NoCheckpointsTopicError", err)
	}
	if ne.Alias != p.Source.Alias || ne.Topic != p.Source.Alias+".checkpoints.internal" {
		t.Errorf("Alias, Topic = %q, %q", ne.Alias, ne.Topic)
	}
	if p.Real {
		if !contains(ne.KnownAliases, other) || !contains(ne.OtherCandidates, x+"__checkpoints__internal") {
			t.Errorf("KnownAliases %q / OtherCandidates %q miss this test's topics", ne.KnownAliases, ne.OtherCandidates)
		}
		return
	}
	const want = `remoteclusterutils: checkpoints topic "src.checkpoints.internal" for remote cluster alias "src" does not exist on this cluster; ` +
		`checkpoints topics exist for aliases ["dstup"]; ` +
		`topics ["dstx__checkpoints__internal"] look like checkpoints topics written with other separator settings ` +
		`(MM2's replication.policy.separator and replication.policy.internal.topic.separator.enabled; WithPolicy: policy.WithSeparator, policy.WithInternalTopicSeparator)`
	if got := err.Error(); got != want {
		t.Errorf("error text:\n got %s\nwant %s", got, want)
	}

	// No checkpoints topic at all: the hint says so.
	empty := testcluster.NewFake(t, "lonely")
	_, err = remoteclusterutils.NewClient(testcluster.Client(t, &empty)).TranslateOffsets(ctxT(t), "src", "g1")
	const want2 = `remoteclusterutils: checkpoints topic "src.checkpoints.internal" for remote cluster alias "src" does not exist on this cluster; ` +
		`no alias has a checkpoints topic on this cluster: the mirror creates it when its flow starts, so retry if it has just started; otherwise check that the client reaches the target cluster`
	if err == nil || err.Error() != want2 {
		t.Errorf("error text:\n got %v\nwant %s", err, want2)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestCheckpointsTopicOtherPartitionOffline: a checkpoints topic created
// with more than one partition (by hand, or with the broker's default
// partition count) whose partition 1 has no leader (its broker is down, as
// in a disaster) is read like MM2 reads it: partition 0 only, so the other
// partition's error does not matter. The end offsets were listed for every
// partition and any partition's error failed the call (retried until the
// deadline).
func TestCheckpointsTopicOtherPartitionOffline(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("fakes a partition without a leader (kfake)")
	}
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopicsWith(t, &p.Target, 3, compact, topic)
	testcluster.Produce(t, &p.Target,
		raw(topic, mm2Key("g", "src.t", 0), mm2Value(0, 10, 9, "")),
		raw(topic, mm2Key("g", "src.t", 1), mm2Value(0, 20, 19, "")))
	offlinePartitions(t, &p.Target, topic, 0, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target)).TranslateOffsets(ctx, p.Source.Alias, "g")
	if err != nil {
		t.Fatalf("TranslateOffsets with partition 1 offline: %v", err)
	}
	want := remoteclusterutils.Offsets{"src.t": {0: off("src.t", 0, 9, ""), 1: off("src.t", 1, 19, "")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestContextEnds: a cancelled context fails the call with no partial
// result.
func TestContextEnds(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopics(t, &p.Target, topic)
	testcluster.Produce(t, &p.Target, raw(topic, mm2Key("g", "src.t", 0), mm2Value(0, 1, 1, "")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target)).TranslateOffsets(ctx, p.Source.Alias, "g")
	if !errors.Is(err, context.Canceled) || got != nil {
		t.Errorf("TranslateOffsets(cancelled ctx) = %v, %v; want nil, context.Canceled", got, err)
	}
}

// TestCaseB29CustomSeparator: with separator "__" the checkpoints topic is
// "<src>__checkpoints__internal" (internal separator on, MM2 3.1+ default)
// or "<src>.checkpoints.internal" (off, MM2 <= 3.0 or KIP-949 false); the
// remote topic is "<src>__orders" either way. The wrong setting gets an
// error pointing at the topic that does exist.
func TestCaseB29CustomSeparator(t *testing.T) {
	for _, tc := range []struct {
		name        string
		internalSep bool
		suffix      string
	}{
		{"internal separator on", true, "__checkpoints__internal"},
		{"internal separator off", false, ".checkpoints.internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			topic := p.Source.Alias + tc.suffix
			pol, err := policy.NewDefault(policy.WithSeparator("__"), policy.WithInternalTopicSeparator(tc.internalSep))
			if err != nil {
				t.Fatal(err)
			}
			if got := pol.CheckpointsTopic(p.Source.Alias); got != topic {
				t.Fatalf("policy checkpoints topic = %q, want %q", got, topic)
			}
			remote := pol.FormatRemoteTopic(p.Source.Alias, "orders")
			if want := p.Source.Alias + "__orders"; remote != want {
				t.Fatalf("remote topic = %q, want %q", remote, want)
			}
			createTopics(t, &p.Target, topic)
			testcluster.Produce(t, &p.Target, raw(topic, mm2Key("g1", remote, 0), mm2Value(0, 50, 48, "")))
			cl := testcluster.Client(t, &p.Target)
			ctx := ctxT(t)

			want := remoteclusterutils.Offsets{remote: {0: off(remote, 0, 48, "")}}
			got, err := remoteclusterutils.NewClient(cl, remoteclusterutils.WithPolicy(pol)).TranslateOffsets(ctx, p.Source.Alias, "g1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}

			// The opposite internal-separator setting misses the topic
			// and names it as a candidate.
			other, err := policy.NewDefault(policy.WithSeparator("__"), policy.WithInternalTopicSeparator(!tc.internalSep))
			if err != nil {
				t.Fatal(err)
			}
			_, err = remoteclusterutils.NewClient(cl, remoteclusterutils.WithPolicy(other)).TranslateOffsets(ctx, p.Source.Alias, "g1")
			var ne *remoteclusterutils.NoCheckpointsTopicError
			if !errors.As(err, &ne) {
				t.Fatalf("opposite setting: err = %v, want *NoCheckpointsTopicError", err)
			}
			if !contains(ne.OtherCandidates, topic) || !strings.Contains(err.Error(), topic) {
				t.Errorf("opposite setting: error %q does not point at %q", err, topic)
			}
		})
	}
}

// TestCaseB08IdentityPolicy: with IdentityReplicationPolicy the checkpoints
// name the source topic ("orders"); the translated offsets commit on the
// target as they are, and the client lists "orders" as remote from src.
func TestCaseB08IdentityPolicy(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	ckpt := p.Source.Alias + ".checkpoints.internal" // same name as under the default policy
	createTopicsWith(t, &p.Target, 2, nil, orders)
	createTopics(t, &p.Target, ckpt)
	g1 := p.Group("g1")
	testcluster.Produce(t, &p.Target,
		raw(ckpt, mm2Key(g1, orders, 0), mm2Value(0, 50, 50, "")),
		raw(ckpt, mm2Key(g1, orders, 1), mm2Value(0, 50, 50, "")),
	)
	cl := testcluster.Client(t, &p.Target)
	id, err := policy.NewIdentity(p.Source.Alias)
	if err != nil {
		t.Fatal(err)
	}
	rc := remoteclusterutils.NewClient(cl, remoteclusterutils.WithPolicy(id))
	ctx := ctxT(t)

	got, err := rc.TranslateOffsets(ctx, p.Source.Alias, g1)
	if err != nil {
		t.Fatal(err)
	}
	want := remoteclusterutils.Offsets{orders: {0: off(orders, 0, 50, ""), 1: off(orders, 1, 50, "")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	adm := kadm.NewClient(cl)
	if err := adm.CommitAllOffsets(ctx, g1, got); err != nil {
		t.Fatalf("commit translated offsets: %v", err)
	}
	fetched, err := adm.FetchOffsets(ctx, g1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[int32]int64{0: 50, 1: 50}, committedAt(fetched, orders)); diff != "" {
		t.Errorf("committed offsets of %s on target (-want +got):\n%s", orders, diff)
	}
	if _, ok := fetched.Lookup("src."+orders, 0); ok {
		t.Errorf("unexpected offsets for src.%s", orders)
	}
	remote, err := rc.RemoteTopicsFor(ctx, p.Source.Alias)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(remote, orders) {
		t.Errorf("RemoteTopicsFor(%s) = %q, want it to contain %q", p.Source.Alias, remote, orders)
	}
}

func committedAt(r kadm.OffsetResponses, topic string) map[int32]int64 {
	out := map[int32]int64{}
	for p, o := range r[topic] {
		out[p] = o.At
	}
	return out
}

// TestCallerClientUntouched: a client that is itself consuming (in a
// group) can be wrapped; its consumption is not disturbed and the
// checkpoints topic is not added to it.
func TestCallerClientUntouched(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	ckpt := p.Source.Alias + ".checkpoints.internal"
	data := p.Topic("data")
	createTopics(t, &p.Target, ckpt)
	createTopicsWith(t, &p.Target, 1, nil, data)
	testcluster.Produce(t, &p.Target,
		raw(ckpt, mm2Key("g", "src.t", 0), mm2Value(0, 9, 9, "")),
		&kgo.Record{Topic: data, Value: []byte("one")})
	cl := testcluster.Client(t, &p.Target, kgo.ConsumerGroup(p.Group("app")), kgo.ConsumeTopics(data),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t)

	got, err := remoteclusterutils.NewClient(cl).TranslateOffsets(ctx, p.Source.Alias, "g")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(remoteclusterutils.Offsets{"src.t": {0: off("src.t", 0, 9, "")}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var values []string
	for len(values) == 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record from %s: %v", data, err)
		}
		fs.EachRecord(func(r *kgo.Record) { values = append(values, r.Topic+"="+string(r.Value)) })
	}
	if diff := cmp.Diff([]string{data + "=one"}, values); diff != "" {
		t.Errorf("caller's consumption (-want +got):\n%s", diff)
	}
}

// TestNuMissingCheckpointsTopicOnlyOtherSeparator: the only checkpoints
// topic on the cluster was written with another separator. The error said
// "no alias has a checkpoints topic on this cluster: the mirror creates it
// when its flow starts, so retry ..." and then listed that topic, and named
// only the Go options (WithPolicy), where kmirror translate's user has a
// properties file: it says neither "retry" nor "on this cluster" now, and
// names MM2's separator keys.
func TestNuMissingCheckpointsTopicOnlyOtherSeparator(t *testing.T) {
	dst := testcluster.NewFake(t, "dst")
	createTopics(t, &dst, "src_checkpoints_internal")
	_, err := remoteclusterutils.NewClient(testcluster.Client(t, &dst)).TranslateOffsets(ctxT(t), "src", "g1")
	const want = `remoteclusterutils: checkpoints topic "src.checkpoints.internal" for remote cluster alias "src" does not exist on this cluster; ` +
		`no alias has a checkpoints topic named with these separator settings; ` +
		`topics ["src_checkpoints_internal"] look like checkpoints topics written with other separator settings ` +
		`(MM2's replication.policy.separator and replication.policy.internal.topic.separator.enabled; WithPolicy: policy.WithSeparator, policy.WithInternalTopicSeparator)`
	if err == nil || err.Error() != want {
		t.Errorf("error text:\n got %v\nwant %s", err, want)
	}
}
