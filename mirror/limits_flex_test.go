package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBatchAtFlexibleLengthPrefixNotAboveLimit (regression, found by the
// side-by-side benchmark: a partition of 100-byte records stalled for good
// at 4.44 M of 5 M records, its batch of 1 048 589 bytes refused by a
// remote topic accepting 1 048 588): franz-go measures a batch with the
// length prefix of the produce request it goes in, 4 bytes before it knows
// the broker's produce version and, for Kafka's flexible versions (Kafka
// 2.8 and later), a varint of 1-3 bytes counted at the batch's length
// before the record being added. The limit kmirror hands it is the broker's
// plus 4 (a record whose batch is exactly the limit must fit): once the
// version is known, a batch of many records could end 1-3 bytes above the
// limit, the target refused it at every retry, and the partition never
// moved again. After such a refusal at an unchanged limit, the unit hands
// franz-go the limit plus 1 for that remote topic (its least length
// prefix: never above the limit in either measure) and reopens its
// producer.
//
// The records: a remote topic accepting 4000-byte batches, copied records
// of 100 bytes (109 in a batch) and 117 bytes (126), all with one
// timestamp and no key; 35 of the first and one of the second make a
// batch of exactly 4002 bytes, which franz-go counted as 4004.
func TestBatchAtFlexibleLengthPrefixNotAboveLimit(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"at-least-once", "exactly-once"} {
		t.Run(mode, func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("flex")
			remote := p.Source.Alias + "." + topic
			limit := "4000"
			testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
			testcluster.CreateTopic(t, &p.Target, remote, 1, map[string]*string{"max.message.bytes": &limit})
			ts := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			var vals [][]byte
			rec := func(n int) *kgo.Record {
				v := randomBytes(n, byte(len(vals)))
				vals = append(vals, v)
				return &kgo.Record{Topic: topic, Value: v, Timestamp: ts}
			}
			// First a few records: their produce answer tells franz-go the
			// target's produce version, which sizes the batches after.
			testcluster.Produce(t, &p.Source, rec(10), rec(10), rec(10))
			fc := recoveryFlow(p, topic)
			fc.DisableProvenanceHeader = true
			fc.ConfigPropertiesExclude = append(append([]string{}, DefaultConfigPropertiesExclude...), `max\.message\.bytes`)
			fc.ExactlyOnce = mode == "exactly-once"
			m, _ := runMirror(t, recoveryOpts(p, fc)...)
			testcluster.Eventually(t, 30*time.Second, "the first records copied", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.Replicated == 3 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
			})
			var more []*kgo.Record
			for range 4 {
				for range 35 {
					more = append(more, rec(100))
				}
				more = append(more, rec(117))
			}
			if b := recordBatchSize(more[0]); b != 61+109 {
				t.Fatalf("a 100-byte record is %d bytes as a batch, want %d", b, 61+109)
			}
			testcluster.Produce(t, &p.Source, more...)
			want := int64(len(vals))
			testcluster.Eventually(t, 30*time.Second, "every record copied", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.State == StateRunning && ps.Replicated == want && ps.Lag == 0, fmt.Sprintf("%+v", ps)
			})
			if got, want := valuesOnly(targetContents(t, p, remote)), valuesOnly(wantContents(vals...)); !equalStrings(got, want) {
				t.Fatalf("target holds %d records %v, want exactly the %d source records in order", len(got), got, len(want))
			}
		})
	}
}
