package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestFailedPartitionLagRefreshed: a partition FAILED on a record's own
// error fetches nothing while it waits for an operator; its source end,
// and so its lag, came only from the periodic open-transaction check,
// which ran only when reading read_committed. Reading read_uncommitted,
// the lag stayed what it was when the partition stopped, however many
// records came after (a breaker's finding). Both isolation levels now
// refresh it every OpenTransactionAfter/2.
func TestFailedPartitionLagRefreshed(t *testing.T) {
	t.Parallel()
	for _, iso := range []Isolation{ReadUncommitted, ReadCommitted} {
		t.Run(iso.String(), func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst")
			if p.Target.Fake == nil {
				t.Skip("needs kfake's Fault (KMIRROR_*_BROKERS name real brokers)")
			}
			topic := p.Topic("lag")
			testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
			remote := p.Source.Alias + "." + topic
			produceN(t, &p.Source, topic, 0, 5)
			fc := recoveryFlow(p, topic)
			fc.Isolation, fc.OpenTransactionAfter = iso, 2*time.Second
			m, _ := runMirror(t, recoveryOpts(p, fc)...)
			testcluster.Eventually(t, 30*time.Second, "5 records copied", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.Replicated == 5, fmt.Sprintf("%+v", ps)
			})
			p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0}, Err: kerr.InvalidRecord, Count: 1})
			produceN(t, &p.Source, topic, 0, 1)
			testcluster.Eventually(t, 30*time.Second, "partition FAILED at offset 5", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.State == StateFailed && ps.Replicated == 5, fmt.Sprintf("%+v", ps)
			})
			produceN(t, &p.Source, topic, 0, 50)
			testcluster.Eventually(t, 15*time.Second, "the lag counts the 51 records not copied", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.State == StateFailed && ps.SourceEnd == 56 && ps.Lag == 51, fmt.Sprintf("%+v", ps)
			})
		})
	}
}
