package verify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/verify"
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
			e := envOn(t, p, 1, nil)
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

// TestBrkOLastProgressIsComplete: the estimate of the records to read is
// the offset spans, which count transaction markers and aborted records,
// so the last progress snapshot of a complete run said 4 of 7 (57%)
// here, where the source partition holds an aborted transaction (0 of 3
// with nothing but one); the last snapshot's estimate is what was read.
func TestBrkOLastProgressIsComplete(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	e := envOn(t, p, 1, nil)
	e.produceSource(t, 0, 2) // offsets 0-1
	txn := testcluster.Client(t, &p.Source, kgo.TransactionalID(p.Topic("verify-txn")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, e.rec(0, 2), e.rec(0, 3)).FirstErr(); err != nil { // offsets 2-3
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil { // marker 4
		t.Fatal(err)
	}
	e.produceTarget(t, 0, 0, 1)
	var snaps []verify.Progress
	cfg := e.config()
	cfg.ProgressInterval = time.Hour
	cfg.Progress = func(p verify.Progress) { snaps = append(snaps, p) }
	rep := run(t, cfg)
	checkPart(t, rep, 0, summary{Compared: 2, Matched: 2, TargetRecords: 2})
	if len(snaps) != 1 {
		t.Fatalf("%d progress snapshots, want 1 (the last): %+v", len(snaps), snaps)
	}
	if s := snaps[0]; s.SourceRecords != 2 || s.TargetRecords != 2 || s.Estimate != 4 || s.Partitions != 1 || s.PartitionsDone != 1 {
		t.Errorf("last snapshot %+v, want 2 source + 2 target records read of an estimate of 4, 1/1 partitions", s)
	}
}

// TestBrkOJSONPartitionsAlwaysAList: the JSON report of a topic that
// could not be compared had "partitions": null, which a script iterating
// over the partitions (jq '.topics[].partitions[]') fails on; it is [].
func TestBrkOJSONPartitionsAlwaysAList(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	e := &env{p: p, topic: topic}
	cfg := e.config()
	cfg.Topics = []string{"nope"}
	rep, err := verify.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep.Topics)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"topic":"nope","remote_topic":"src.nope","timestamps_compared":true,"partitions":[],"error":"the source topic does not exist"}]`
	if string(b) != want {
		t.Errorf("topics in JSON\n%s\nwant\n%s", b, want)
	}
}

// TestBrkOAbortedRecordsCopiedAreUnexpected: a mirror that reads the
// source read_uncommitted copies the records of aborted transactions.
// Without headers, each resembled the next committed record: reported
// as 2 alterations of source offsets 5-6 whose real copies then counted
// as duplicates. They are 2 unexpected records at their target offsets,
// and the copies after them first copies.
func TestBrkOAbortedRecordsCopiedAreUnexpected(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	e := envOn(t, p, 1, nil)
	mk := func(topic string, i int) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i)), Timestamp: e.base.Add(time.Duration(i) * time.Second)}
	}
	testcluster.Produce(t, &p.Source, mk(e.topic, 0), mk(e.topic, 1)) // offsets 0-1
	txn := testcluster.Client(t, &p.Source, kgo.TransactionalID(p.Topic("verify-txn")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, mk(e.topic, 2), mk(e.topic, 3)).FirstErr(); err != nil { // offsets 2-3, aborted
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil { // marker 4
		t.Fatal(err)
	}
	testcluster.Produce(t, &p.Source, mk(e.topic, 4), mk(e.topic, 5)) // offsets 5-6
	var dst []*kgo.Record
	for i := range 6 { // the aborted records copied too, at target offsets 2-3
		dst = append(dst, mk(e.remote, i))
	}
	testcluster.Produce(t, &p.Target, dst...)
	rep := run(t, e.config())
	checkPart(t, rep, 0, summary{Compared: 4, Matched: 4, TargetRecords: 6, Unexpected: 2, UnexpectedOffsets: []int64{2, 3}})
	if v, want := rep.Verdict(), "MISMATCH: 2 unexpected of 4 source records compared"; !strings.HasPrefix(v, want) {
		t.Errorf("verdict %q, want it to start with %q", v, want)
	}
}

// TestBrkOStampOfAnotherClusterIsNone: the offset element of a provenance
// header is an offset in the cluster its last ID names. A copy by Apache
// MM2, which keeps the header as it is, of a source record kmirror had
// copied there from a third cluster C ("C,#17") was taken as stamped with
// source offset 17: a stamp disagreement for every such copy, and a
// mapping of offsets that are no source offsets. It is unstamped; a
// kmirror copy ("C,<source ID>,#2") is stamped.
func TestBrkOStampOfAnotherClusterIsNone(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	e := envOn(t, p, 1, nil)
	srcID := testcluster.ClusterID(t, &p.Source)
	var src, dst []*kgo.Record
	for i := range 4 {
		r := e.rec(0, i)
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: verify.ProvenanceHeader, Value: []byte(fmt.Sprintf("C,#%d", 17+i))})
		src = append(src, r)
		c := *r
		c.Topic = e.remote
		if i >= 2 { // kmirror's copies: the source's ID and offset appended
			c.Headers = []kgo.RecordHeader{r.Headers[0], {Key: verify.ProvenanceHeader, Value: []byte(fmt.Sprintf("C,%s,#%d", srcID, i))}}
		}
		dst = append(dst, &c)
	}
	testcluster.Produce(t, &p.Source, src...)
	testcluster.Produce(t, &p.Target, dst...)
	rep := run(t, e.config())
	got := checkPart(t, rep, 0, summary{Compared: 4, Matched: 4, TargetRecords: 4})
	want := &verify.StampMap{Stamped: 2, Unstamped: 2, Runs: []verify.StampRun{{SourceFrom: 2, SourceTo: 3, TargetFrom: 2, TargetTo: 3, Records: 2}}}
	if d := cmp.Diff(want, got.Stamps, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("stamps (-want +got):\n%s", d)
	}
	if rep.Totals.StampDisagreements != 0 {
		t.Errorf("%d stamp disagreements, want 0", rep.Totals.StampDisagreements)
	}
}

// TestBrkOLogAppendTimeTargetRetention: on a remote topic with
// message.timestamp.type=LogAppendTime whose oldest copies retention
// deleted, the source was read from the offset of the target's oldest
// record's timestamp, less MaxReplay: a time the target broker stamped
// when it copied the record (a backfill: long after the source record),
// so the source records whose copies the target still holds were left
// out (not_compared) and a record missing among them passed as OK. The
// oldest copy's provenance offset places the start when it has one; an
// unstamped copy's restamped time does not, and the source is read from
// its start.
func TestBrkOLogAppendTimeTargetRetention(t *testing.T) {
	for _, stamped := range []bool{false, true} {
		t.Run(fmt.Sprintf("stamped=%v", stamped), func(t *testing.T) {
			p := testcluster.NewFakePair(t, "src", "dst")
			e := &env{p: p, topic: p.Topic("orders"), base: time.Now().Add(-time.Hour).Truncate(time.Second)}
			e.remote = p.Source.Alias + "." + e.topic
			lat := "LogAppendTime"
			testcluster.CreateTopic(t, &p.Source, e.topic, 1, nil)
			testcluster.CreateTopic(t, &p.Target, e.remote, 1, map[string]*string{"message.timestamp.type": &lat})
			e.produceSource(t, 0, 10)
			srcID := testcluster.ClusterID(t, &p.Source)
			now := time.Now()
			var dst []*kgo.Record
			for _, i := range cat(ids(0, 4), ids(6, 9)) { // source offset 5 lost
				c := e.copyOf(0, i)
				c.Timestamp = now // the target broker's append time
				if stamped {
					c.Headers = append(c.Headers, kgo.RecordHeader{Key: verify.ProvenanceHeader, Value: []byte(fmt.Sprintf("%s,#%d", srcID, i))})
				}
				dst = append(dst, c)
			}
			testcluster.Produce(t, &p.Target, dst...)
			deleteRecords(t, &p.Target, e.remote, 0, 3) // copies of 0-2 deleted
			cfg := e.config()
			cfg.MaxReplay = 2
			rep := run(t, cfg)
			want := summary{Compared: 10, Matched: 6, Missing: 1, DeletedOnTarget: 3, TargetRecords: 6,
				MissingRanges:         []verify.Range{{From: 5, To: 5, Records: 1}},
				DeletedOnTargetRanges: []verify.Range{{From: 0, To: 2, Records: 3}}}
			if stamped { // read from source offset 3 - MaxReplay
				want.Compared, want.DeletedOnTarget, want.DeletedOnTargetRanges = 9, 2, []verify.Range{{From: 1, To: 2, Records: 2}}
			}
			got := checkPart(t, rep, 0, want)
			var nc *verify.Range
			if stamped {
				nc = &verify.Range{From: 0, To: 0}
			}
			if d := cmp.Diff(nc, got.NotCompared); d != "" {
				t.Errorf("not compared (-want +got):\n%s", d)
			}
			if v := rep.Verdict(); !strings.HasPrefix(v, "MISMATCH: 1 missing of ") {
				t.Errorf("verdict %q, want 1 missing", v)
			}
		})
	}
}
