package remoteclusterutils_test

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// Hand-built MM2 wire primitives (docs/mm2-compat.md §2.1), independent of
// the codec, so tests also check the bytes MM2 writes rather than only our
// own encoder.
func u16(n int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(n)) }

func mm2Key(group, topic string, partition int32) []byte {
	b := append(u16(len(group)), group...)
	b = append(append(b, u16(len(topic))...), topic...)
	return binary.BigEndian.AppendUint32(b, uint32(partition))
}

func mm2Value(version int16, upstream, downstream int64, metadata string, trailing ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(version))
	b = binary.BigEndian.AppendUint64(b, uint64(upstream))
	b = binary.BigEndian.AppendUint64(b, uint64(downstream))
	b = append(append(b, u16(len(metadata))...), metadata...)
	return append(b, trailing...)
}

// cp encodes c with the checkpoint codec.
func cp(t testing.TB, topic string, c checkpoint.Checkpoint) *kgo.Record {
	t.Helper()
	return encoded(t, topic, c)
}

// encoded is a record for partition 0 of topic holding r's key and value
// (a checkpoint, an offset sync or an offset run).
func encoded(t testing.TB, topic string, r interface {
	Key() ([]byte, error)
	Value() ([]byte, error)
}) *kgo.Record {
	t.Helper()
	k, err := r.Key()
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Value()
	if err != nil {
		t.Fatal(err)
	}
	return raw(topic, k, v)
}

// raw is a record for partition 0 of topic, as MM2 writes checkpoints.
func raw(topic string, key, value []byte) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: 0, Key: key, Value: value}
}

// compact is the topic config MM2 gives its internal topics.
var compact = map[string]*string{"cleanup.policy": ptr("compact")}

// createTopics creates single-partition compacted topics on c (as MM2
// creates its internal topics), tolerating topics that already exist
// (shared real brokers), and waits until they are visible in metadata.
func createTopics(t testing.TB, c *testcluster.Cluster, names ...string) {
	t.Helper()
	createTopicsWith(t, c, 1, compact, names...)
}

func createTopicsWith(t testing.TB, c *testcluster.Cluster, partitions int32, configs map[string]*string, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := testcluster.Admin(t, c)
	resps, err := adm.CreateTopics(ctx, partitions, -1, configs, names...)
	if err != nil {
		t.Fatalf("create topics %q on %s: %v", names, c.Alias, err)
	}
	for _, r := range resps {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			t.Fatalf("create topic %s on %s: %v", r.Topic, c.Alias, r.Err)
		}
	}
	// Real brokers publish new topics to their metadata asynchronously.
	testcluster.Eventually(t, 30*time.Second, "topics visible in metadata", func() (bool, string) {
		tds, err := adm.ListTopics(ctx, names...)
		if err != nil {
			return false, err.Error()
		}
		for _, n := range names {
			if td, ok := tds[n]; !ok || td.Err != nil || len(td.Partitions) != int(partitions) {
				return false, n + " not visible"
			}
		}
		return true, ""
	})
}

func ptr[T any](v T) *T { return &v }

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// offlinePartitions makes the kfake cluster c answer ListOffsets for topic
// as if every partition but 0 had no leader (NOT_LEADER_FOR_PARTITION),
// partition 0 having the log start offset start and the end offset end.
func offlinePartitions(t testing.TB, c *testcluster.Cluster, topic string, start, end int64) {
	t.Helper()
	c.Fake.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.ListOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		resp.Version = req.Version
		for _, rt := range req.Topics {
			if rt.Topic != topic {
				return nil, nil, false
			}
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.Timestamp, sp.LeaderEpoch = rp.Partition, -1, -1
				switch {
				case rp.Partition != 0:
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				case rp.Timestamp == -2: // the log start
					sp.Offset = start
				default: // the end
					sp.Offset = end
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		c.Fake.KeepControl()
		return resp, nil, true
	})
}
