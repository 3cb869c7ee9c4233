package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestRecordOverProducerRequestLimitNamed: the target producer's
// kgo.BrokerMaxWriteBytes (2 MiB) below the remote topic's
// max.message.bytes (4 MiB, copied from the source) and a record of 3
// MiB between two small ones. franz-go refuses such a record itself,
// without sending it; kmirror's size check counted the topic's limit only,
// so the partition was retried automatically forever, each time with an
// error saying the remote topic's limit had probably been lowered (a
// breaker's find). The partition now stops on the record, with an error
// naming the producer's request limit and how to raise it, and no
// automatic retry; the record before it is copied, nothing after it.
func TestRecordOverProducerRequestLimitNamed(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("big")
	remote := p.Source.Alias + "." + topic
	limit := "4194304"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
	big := randomBytes(3<<20, 4)
	produceLarge(t, &p.Source, &kgo.Record{Topic: topic, Value: []byte("a")}, &kgo.Record{Topic: topic, Value: big},
		&kgo.Record{Topic: topic, Value: []byte("c")})
	fc := recoveryFlow(p, topic)
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
		Consumer: []kgo.Opt{kgo.FetchMaxBytes(16 << 20), kgo.FetchMaxPartitionBytes(16 << 20)}}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.BrokerMaxWriteBytes(2 << 20)}}),
		WithFlow(fc), withPartRetryFirst(200*time.Millisecond))
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at the 3 MiB record", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && ps.Replicated == 1, fmt.Sprintf("%+v", ps)
	})
	ps := partStatus(m, 0)
	for _, want := range []string{"MESSAGE_TOO_LARGE: the record at offset 1 is ", "the " + p.Target.Alias + " producer's request limit (",
		"BrokerMaxWriteBytes, 2097152,", "kgo.BrokerMaxWriteBytes raised in ClusterConfig.Producer"} {
		if !strings.Contains(ps.Error, want) {
			t.Errorf("partition 0 error %q does not hold %q", ps.Error, want)
		}
	}
	if strings.Contains(ps.Error, "probably lowered") || !ps.NextRetry.IsZero() || ps.Retries != 0 {
		t.Errorf("partition 0: %+v; want no automatic retry and no word of a lowered topic limit", ps)
	}
	if got, want := targetContents(t, p, remote), wantContents([]byte("a")); !equalStrings(got, want) {
		t.Errorf("target holds %v, want exactly %v (nothing after the failed record)", got, want)
	}
}
