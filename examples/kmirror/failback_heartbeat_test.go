package main

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/heartbeat"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestNewestHeartbeatReadsFutureVersions: failback judges a reverse flow
// run by Apache MM2 by its newest heartbeat. A heartbeat value with a
// version other than 0 (a newer writer appending fields) was passed over,
// although Java's readers parse it with the v0 layout and
// heartbeat.Decode returns it as usable: the reverse flow's newest
// heartbeat was an older version-0 one, or "none" when all were newer
// (failback then refused: "its newest heartbeat on A is none"). Such
// records count now; garbage, tombstones and other pairs' heartbeats still
// do not.
func TestNewestHeartbeatReadsFutureVersions(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "a", "b")
	topic := p.Topic("heartbeats")
	testcluster.CreateTopic(t, &p.Target, topic, 1, nil)
	at := func(d time.Duration) time.Time { return time.UnixMilli(time.Now().Add(d).UnixMilli()) }
	v0At, v1At, otherAt := at(-time.Minute), at(-time.Second), at(0)
	rec := func(src, dst string, ts time.Time, version int16, extra ...byte) *kgo.Record {
		k, err := heartbeat.Heartbeat{SourceClusterAlias: src, TargetClusterAlias: dst}.Key()
		if err != nil {
			t.Fatal(err)
		}
		v := binary.BigEndian.AppendUint16(nil, uint16(version))
		v = binary.BigEndian.AppendUint64(v, uint64(ts.UnixMilli()))
		return &kgo.Record{Topic: topic, Partition: 0, Key: k, Value: append(v, extra...)}
	}
	good := rec("B", "A", v0At, 0)
	testcluster.Produce(t, &p.Target,
		good,
		rec("B", "A", v1At, 1, 0, 0, 0, 7), // a future version with an appended field
		rec("C", "A", otherAt, 0),          // another pair
		&kgo.Record{Topic: topic, Partition: 0, Key: good.Key, Value: []byte{0, 0, 1}}, // truncated
		&kgo.Record{Topic: topic, Partition: 0, Key: []byte{0xff, 0xff}, Value: good.Value},
		&kgo.Record{Topic: topic, Partition: 0, Key: good.Key}, // tombstone
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := newestHeartbeat(ctx, p.Target.Opts(), topic, "B", "A")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(v1At) {
		t.Errorf("newest heartbeat B->A = %v, want %v (the version-1 record's; the version-0 one is %v)", got, v1At, v0At)
	}
}
