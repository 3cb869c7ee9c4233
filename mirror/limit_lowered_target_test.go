package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestLimitLoweredOnTargetQuotedAndRaiseRecovers (a new user's finding):
// the remote topic's max.message.bytes lowered on the target to 100 bytes,
// below a record's size. kmirror ignored any limit read below 512 bytes:
// the partition retried for ever, each time quoting the producer's old
// limit (1048588) as "within" it, and a raised limit was not noticed
// either. It now fails at the record, quoting 100 and waiting for the
// operator, and the raised limit, read at the next topic refresh, restarts
// it by itself.
func TestLimitLoweredOnTargetQuotedAndRaiseRecovers(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("lowt")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	fc := recoveryFlow(p, topic)
	fc.RefreshTopicsInterval = 2 * time.Second // a raised limit is read at the next refresh
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	produceN(t, &p.Source, topic, 0, 3)
	testcluster.Eventually(t, 30*time.Second, "first records", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.Replicated == 3, fmt.Sprintf("%+v", ps)
	})
	setTopicConfig(t, &p.Target, remote, "max.message.bytes", "100")
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: topic, Partition: 0, Value: make([]byte, 150)})
	var last PartitionStatus
	testcluster.Eventually(t, 30*time.Second, "the partition FAILED, quoting the limit of 100", func() (bool, string) {
		last = partStatus(m, 0)
		return last.State == StateFailed && last.NextRetry.IsZero() &&
				strings.Contains(last.Error, "above max.message.bytes of "+remote+" on "+p.Target.Alias+" (100 bytes)") && !strings.Contains(last.Error, "1048588"),
			fmt.Sprintf("%s next_retry %v: %s", last.State, last.NextRetry, last.Error)
	})
	setTopicConfig(t, &p.Target, remote, "max.message.bytes", "2000000")
	testcluster.Eventually(t, 30*time.Second, "the raised limit restarts it by itself", func() (bool, string) {
		last = partStatus(m, 0)
		return last.Replicated == 4 && last.State == StateRunning, fmt.Sprintf("%s next_retry %v replicated %d: %s", last.State, last.NextRetry, last.Replicated, last.Error)
	})
}
