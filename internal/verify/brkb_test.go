package verify_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/verify"
)

// TestBrkBCompactedSourceNoFalseDifference: the source topic is
// compacted after the mirror copied it, removing the older record of key
// k1 (offset 1): its copy is still on the target, between the copies of
// records the source holds. It is no difference: it was reported
// unexpected (MISMATCH), and without headers as an alteration of source
// offset 2 whose real copy then counted as a duplicate. A record of
// another key in that hole stays unexpected.
func TestBrkBCompactedSourceNoFalseDifference(t *testing.T) {
	for _, tc := range []struct {
		name     string
		headers  bool
		stamp    string // provenance header value of the copies (the source cluster ID, the offset), "" none
		stranger bool   // the copy of offset 1 replaced by a record of a key the source never had
		want     summary
		removed  int64
	}{
		{name: "headers", headers: true, want: summary{Compared: 6, Matched: 6, TargetRecords: 7}, removed: 1},
		{name: "no headers", want: summary{Compared: 6, Matched: 6, TargetRecords: 7}, removed: 1},
		{name: "stamped", stamp: "%s,#%d", want: summary{Compared: 6, Matched: 6, TargetRecords: 7}, removed: 1},
		{name: "stranger", headers: true, stranger: true, want: summary{Compared: 6, Matched: 6, TargetRecords: 7, Unexpected: 1, UnexpectedOffsets: []int64{1}}},
		{name: "stamped stranger", headers: true, stamp: "%s,#%d", stranger: true, want: summary{Compared: 6, Matched: 6, TargetRecords: 7, Unexpected: 1, UnexpectedOffsets: []int64{1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testcluster.NewFakePair(t, "src", "dst")
			e := &env{p: p, topic: p.Topic("orders"), base: time.Now().Add(-time.Hour).Truncate(time.Second)}
			e.remote = p.Source.Alias + "." + e.topic
			compact := "compact"
			testcluster.CreateTopic(t, &p.Source, e.topic, 1, map[string]*string{"cleanup.policy": &compact})
			srcID := testcluster.ClusterID(t, &p.Source) // the stamps' cluster
			testcluster.CreateTopic(t, &p.Target, e.remote, 1, nil)
			// Compaction removes offset 1 only (k1 again at 3).
			keys := []string{"k0", "k1", "k2", "k1", "k3", "k4", "k5"}
			var dst []*kgo.Record
			for i, k := range keys {
				r := e.rec(0, i)
				r.Key = []byte(k)
				if !tc.headers {
					r.Headers = nil
				}
				c := *r
				testcluster.Produce(t, &p.Source, r) // one batch each: compaction keeps the last batch
				c.Topic = e.remote
				if i == 1 && tc.stranger {
					c.Key, c.Value = []byte("other"), []byte("other")
				}
				if tc.stamp != "" {
					stamp := i
					if i == 1 && tc.stranger {
						stamp = 4 // a source offset the source holds
					}
					c.Headers = append(append([]kgo.RecordHeader(nil), c.Headers...), kgo.RecordHeader{Key: verify.ProvenanceHeader, Value: []byte(fmt.Sprintf(tc.stamp, srcID, stamp))})
				}
				dst = append(dst, &c)
			}
			testcluster.Produce(t, &p.Target, dst...)
			p.Source.Fake.Compact()
			var offs []int64
			for _, r := range testcluster.ReadAll(t, &p.Source, e.topic)[0] {
				offs = append(offs, r.Offset)
			}
			if fmt.Sprint(offs) != "[0 2 3 4 5 6]" {
				t.Fatalf("source offsets after compaction %v, want [0 2 3 4 5 6]", offs)
			}
			rep := run(t, e.config())
			got := checkPart(t, rep, 0, tc.want)
			if got.CompactedOnSource != tc.removed || rep.Totals.CompactedOnSource != tc.removed {
				t.Errorf("compacted on source %d (totals %d), want %d", got.CompactedOnSource, rep.Totals.CompactedOnSource, tc.removed)
			}
			if rep.Mismatch() != tc.stranger {
				t.Errorf("mismatch %v, want %v: %s", rep.Mismatch(), tc.stranger, rep.Verdict())
			}
		})
	}
}
