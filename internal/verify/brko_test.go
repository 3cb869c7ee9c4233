package verify_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrkOInsertedRecordsNotAlterations: records an application wrote
// into the remote topic between two copies, without headers as the
// copies, resembled the copy expected next (equal headers) and were
// reported as alterations of that source record, whose real copy right
// after them then counted as a duplicate (a replay): "MISMATCH: 1 altered"
// for a complete, uncorrupted copy with one foreign record. They are
// unexpected records, and the copy after them a first copy.
func TestBrkOInsertedRecordsNotAlterations(t *testing.T) {
	for _, tc := range []struct {
		name     string
		at       int // the foreign records stand before the copy of this source record
		extras   int
		want     summary
		firstHit int64
	}{
		{name: "one in the middle", at: 3, extras: 1, firstHit: 0,
			want: summary{Compared: 6, Matched: 6, TargetRecords: 7, Unexpected: 1, UnexpectedOffsets: []int64{3}}},
		{name: "two in the middle", at: 3, extras: 2, firstHit: 0,
			want: summary{Compared: 6, Matched: 6, TargetRecords: 8, Unexpected: 2, UnexpectedOffsets: []int64{3, 4}}},
		{name: "before the first copy", at: 0, extras: 1, firstHit: 1,
			want: summary{Compared: 6, Matched: 6, TargetRecords: 7, Unexpected: 1, UnexpectedOffsets: []int64{0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testcluster.NewFakePair(t, "src", "dst")
			e := &env{p: p, topic: p.Topic("orders"), base: time.Now().Add(-time.Hour).Truncate(time.Second)}
			e.remote = p.Source.Alias + "." + e.topic
			testcluster.CreateTopic(t, &p.Source, e.topic, 1, nil)
			testcluster.CreateTopic(t, &p.Target, e.remote, 1, nil)
			var src, dst []*kgo.Record
			for i := range 6 {
				r := e.rec(0, i)
				r.Headers = nil
				src = append(src, r)
				if i == tc.at {
					for j := range tc.extras {
						dst = append(dst, &kgo.Record{Topic: e.remote, Key: []byte(fmt.Sprint("app", j)), Value: []byte("x"), Timestamp: e.base.Add(time.Hour)})
					}
				}
				c := *r
				c.Topic = e.remote
				dst = append(dst, &c)
			}
			testcluster.Produce(t, &p.Source, src...)
			testcluster.Produce(t, &p.Target, dst...)
			for _, eo := range []bool{false, true} {
				cfg := e.config()
				cfg.ExactlyOnce = eo
				rep := run(t, cfg)
				got := checkPart(t, rep, 0, tc.want)
				if got.TargetFirstMatch != tc.firstHit {
					t.Errorf("exactly-once %v: target first match %d, want %d", eo, got.TargetFirstMatch, tc.firstHit)
				}
				want := fmt.Sprintf("MISMATCH: %d unexpected of 6 source records compared", tc.extras)
				if v := rep.Verdict(); !strings.HasPrefix(v, want) {
					t.Errorf("exactly-once %v: verdict %q, want it to start with %q", eo, v, want)
				}
			}
		})
	}
}
