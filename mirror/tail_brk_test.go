package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// Adversarial tests of resume from the target's tail (issue 23).

// TestTailBrkNoReadACLWarnsAndFallsBack: the remote topic refuses Fetch
// (TOPIC_AUTHORIZATION_FAILED: no READ, as a least-privilege writer); the
// restart after a crash (resume point 9 of 30 copied) warns once, falls
// back to the resume point ("unreadable") and never fails the partition:
// records 10-29 are copied again, then the new ones.
func TestTailBrkNoReadACLWarnsAndFallsBack(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("injects fetch errors: kfake only")
	}
	topic := p.Topic("noread")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceValues(t, &p.Source, topic, valuesOf("v", 0, 30))
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 30)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	rewindResumePoint(t, p, topic, 9)
	produceValues(t, &p.Source, topic, valuesOf("v", 30, 35))
	h := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: remote, Err: kerr.TopicAuthorizationFailed, Count: -1})
	var lb logBuf
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	testcluster.Eventually(t, 30*time.Second, "started and caught up", func() (bool, string) {
		st := m.Status().Flows[0]
		return len(st.TailResume) > 0 && st.Lag == 0 && st.Records >= 25, fmt.Sprint(st.TailResume, st.Records, st.Lag)
	})
	h.Remove()
	want := append(valuesOf("v", 0, 30), valuesOf("v", 10, 35)...)
	if got := tailValues(t, &p.Target, remote); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target holds %v, want %v", got, want)
	}
	if c := tailCounts(m); c["unreadable"] != 1 || c["ahead"] != 0 {
		t.Errorf("outcomes %v, want unreadable 1", c)
	}
	if l := lb.lines("level=WARN", "resume from the target's tail"); len(l) != 1 {
		t.Errorf("%d WARN lines about the tail read, want 1: %v", len(l), l)
	}
	for _, ps := range m.Status().Flows[0].Partitions {
		if ps.State == StateFailed {
			t.Errorf("partition failed: %+v", ps)
		}
	}
}

// TestTailBrkNewTopicBesideCrashedOne: a session starts a partition whose
// resume point is behind its tail (a crash) together with the partition of
// a topic created while kmirror was down (its remote topic does not exist
// yet): the crashed partition still resumes after its tail.
func TestTailBrkNewTopicBesideCrashedOne(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	a, b := p.Topic("crashed"), p.Topic("fresh")
	testcluster.CreateTopic(t, &p.Source, a, 1, nil)
	produceValues(t, &p.Source, a, valuesOf("a", 0, 30))
	fc := fastFlow(p)
	fc.Topics = []string{a, b}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 30)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	rewindResumePoint(t, p, a, 9)
	testcluster.CreateTopic(t, &p.Source, b, 1, nil)
	produceValues(t, &p.Source, b, valuesOf("b", 0, 5))
	var lb logBuf
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	testcluster.Eventually(t, 30*time.Second, "b copied", func() (bool, string) {
		td, _ := testcluster.Admin(t, &p.Target).ListTopics(t.Context(), p.Source.Alias+"."+b)
		if !td.Has(p.Source.Alias + "." + b) {
			return false, "no remote b"
		}
		got := tailValues(t, &p.Target, p.Source.Alias+"."+b)
		return len(got) == 5 && m.Status().Flows[0].Lag == 0, fmt.Sprint(got)
	})
	if got, want := tailValues(t, &p.Target, p.Source.Alias+"."+a), valuesOf("a", 0, 30); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target a holds %v, want %v (outcomes %v)", got, want, tailCounts(m))
	}
	t.Logf("outcomes %v; warn %v", tailCounts(m), lb.lines("level=WARN"))
}

// TestTailBrkReadTailStartsAdversarial reads real tails (kfake) written
// to trip the start decision, each partition one case:
//
//	0: copies of 0..19, then records whose last hop is another cluster
//	   (one from this flow's source through OTHER, one OTHER's own):
//	   ahead 19.
//	1: copies of 0..9, then malformed offset elements naming the source
//	   ("#abc", "#", "#+5", "#-3", an escaped comma, "#15" alone, an
//	   element after the offset): ahead 9.
//	2: copies of 0..29, the source truncated (DeleteRecords) to 20, below
//	   the tail: ahead 29.
//	3: an empty remote partition: none.
//	4: copies of 0..4, then 600 local writes (past both windows): none.
//	5: copies of 0..4, then 510 local writes (inside the wide window):
//	   ahead 4.
//	6: copies of source records that carry an upstream hop's provenance
//	   (a chain): ahead 29.
//	7: copies of 0..9, the source truncated to 12, above the tail:
//	   truncated, the resume point.
//	8: copies of 0..9, then a forged copy claiming offset MaxInt64:
//	   past_end, the resume point.
func TestTailBrkReadTailStartsAdversarial(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("writes a remote topic by hand: kfake only (names are shared on real brokers)")
	}
	const parts = 9
	topic, remote := p.Topic("adv"), p.Topic("src.adv")
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	testcluster.CreateTopic(t, &p.Target, remote, parts, nil)
	pv := mustProv(t, "SRCID", "DSTID")
	var srcRecs []*kgo.Record
	for part := int32(0); part < parts; part++ {
		for i := 0; i < 30; i++ {
			r := &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d-%d", part, i))}
			if part == 6 {
				r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("x")}, {Key: ProvenanceHeader, Value: []byte(fmt.Sprintf("UPSTREAM,#%d", 100+i))}}
			}
			srcRecs = append(srcRecs, r)
		}
	}
	testcluster.Produce(t, &p.Source, srcRecs...)
	srcOf := map[[2]int64]*kgo.Record{}
	for _, r := range testcluster.ReadAll(t, &p.Source, topic) {
		for _, x := range r {
			srcOf[[2]int64{int64(x.Partition), x.Offset}] = x
		}
	}
	copyOf := func(part int32, off int64) *kgo.Record {
		s := srcOf[[2]int64{int64(part), off}]
		h := append([]kgo.RecordHeader{}, s.Headers...)
		idx := -1
		for i := range h {
			if h[i].Key == ProvenanceHeader {
				idx = i
			}
		}
		r := &kgo.Record{Topic: remote, Partition: part, Key: s.Key, Value: s.Value, Timestamp: s.Timestamp}
		_, _, r.Headers = pv.stampAt(nil, nil, h, idx, off)
		return r
	}
	copies := func(part int32, from, to int64) (out []*kgo.Record) {
		for i := from; i < to; i++ {
			out = append(out, copyOf(part, i))
		}
		return out
	}
	withProv := func(part int32, off int64, prov string) *kgo.Record {
		r := copyOf(part, off)
		r.Headers = []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte(prov)}}
		return r
	}
	local := func(part int32, n int) (out []*kgo.Record) {
		for i := 0; i < n; i++ {
			out = append(out, &kgo.Record{Topic: remote, Partition: part, Value: []byte("local")})
		}
		return out
	}
	var dst []*kgo.Record
	dst = append(dst, copies(0, 0, 20)...)
	dst = append(dst, withProv(0, 25, "SRCID,OTHER,#90"), withProv(0, 26, "OTHER,#5"))
	dst = append(dst, copies(1, 0, 10)...)
	for _, v := range []string{"SRCID,#abc", "SRCID,#", "SRCID,#+15", "SRCID,#-3", `SRCID\,#15`, "#15", "SRCID,#15,X", "SRCID,#1 5", "SRCID,# 15"} {
		dst = append(dst, withProv(1, 15, v))
	}
	dst = append(dst, copies(2, 0, 30)...)
	dst = append(dst, copies(4, 0, 5)...)
	dst = append(dst, local(4, 600)...)
	dst = append(dst, copies(5, 0, 5)...)
	dst = append(dst, local(5, 510)...)
	dst = append(dst, copies(6, 0, 30)...)
	dst = append(dst, copies(7, 0, 10)...)
	dst = append(dst, copies(8, 0, 10)...)
	dst = append(dst, withProv(8, 10, "SRCID,#9223372036854775807"))
	testcluster.Produce(t, &p.Target, dst...)
	adm := testcluster.Admin(t, &p.Source)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 2, At: 20})
	del.Add(kadm.Offset{Topic: topic, Partition: 7, At: 12})
	if res, err := adm.DeleteRecords(context.Background(), del); err != nil || res.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, res.Error())
	}

	var tps []tailPart
	stored := []int64{5, 2, 3, 7, 2, 2, 10, 3, 1}
	for part := int32(0); part < parts; part++ {
		tps = append(tps, tailPart{tp{topic, part}, remote, stored[part]})
	}
	got, err := readTailStarts(context.Background(), p.Target.Opts(), p.Source.Opts(), pv.src, true, tps)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]tailStart{
		0: {after: 19, out: tailAhead, down: 19},
		1: {after: 9, out: tailAhead, down: 9},
		2: {after: 29, out: tailAhead, down: 29},
		3: {after: 7, out: tailNone, down: -1},
		4: {after: 2, out: tailNone, down: -1},
		5: {after: 4, out: tailAhead, down: 4},
		6: {after: 29, out: tailAhead, down: 29},
		7: {after: 3, out: tailTruncated, down: -1},
		8: {after: 1, out: tailPastEnd, down: -1},
	}
	for part, w := range want {
		if g := got[tp{topic, part}]; g != w {
			t.Errorf("partition %d: %+v (%v), want %+v (%v)", part, g, g.out, w, w.out)
		}
	}
}

// TestTailBrkSourceTransactionsAtTail: the source partition holds a
// committed transaction, an aborted one, another committed one, then a
// transaction left open (the last stable offset stops before it). The
// flow (read_committed) copies the 20 committed records; the resume point
// goes back to offset 4 (a crash). The restart verifies the tail against
// the source read committed (the tail's offset is past the aborted
// records and their markers) and resumes after it: the target holds each
// committed record once, no aborted one, and the open transaction's
// records once it commits.
func TestTailBrkSourceTransactionsAtTail(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("srctxn")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	ctx := context.Background()
	txn := testcluster.Client(t, &p.Source, kgo.TransactionalID(p.Topic("srctxn-writer")), kgo.DefaultProduceTopic(topic))
	write := func(vals []string, end kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	write(valuesOf("c", 0, 10), kgo.TryCommit)
	write(valuesOf("a", 0, 10), kgo.TryAbort)
	write(valuesOf("c", 10, 20), kgo.TryCommit)
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range valuesOf("o", 0, 5) {
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "the committed records copied", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.Records >= 20, fmt.Sprint(st.Records)
	})
	want := valuesOf("c", 0, 20)
	if got := tailValues(t, &p.Target, remote); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("target holds %v, want %v", got, want)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	rewindResumePoint(t, p, topic, 4)
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "started", func() (bool, string) {
		return len(tailCounts(m)) > 0, ""
	})
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	want = append(want, valuesOf("o", 0, 5)...)
	testcluster.Eventually(t, 30*time.Second, "the open transaction's records copied after it committed", func() (bool, string) {
		got := tailValues(t, &p.Target, remote)
		return strings.Join(got, " ") == strings.Join(want, " "), fmt.Sprint(got)
	})
	if c := tailCounts(m); c["ahead"] != 1 {
		t.Errorf("outcomes %v, want ahead 1", c)
	}
}

// TestTailFallbackLogBounded: a failed tail read of many partitions logs
// the first tailFallbackLines partitions one by one and the rest in one
// line with the count by reason (one INFO line per partition was
// thousands of lines at thousands of partitions).
func TestTailFallbackLogBounded(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("injects fetch errors: kfake only")
	}
	topic := p.Topic("many")
	remote := p.Source.Alias + "." + topic
	const parts = 14
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	var recs []*kgo.Record
	for i := range parts {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i))})
	}
	testcluster.Produce(t, &p.Source, recs...)
	fc := fastFlow(p)
	fc.Topics, fc.Tasks = []string{topic}, 1
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, parts)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	h := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: remote, Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer h.Remove()
	var lb logBuf
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	testcluster.Eventually(t, 30*time.Second, "every partition started", func() (bool, string) {
		var n int64
		for _, c := range tailCounts(m) {
			n += c
		}
		return n == parts, fmt.Sprint(tailCounts(m))
	})
	one := lb.lines("level=INFO", "resume from the target's tail: falling back to the stored resume point")
	rest := lb.lines("level=INFO", "resume from the target's tail: more partitions fall back")
	if len(one) != tailFallbackLines || len(rest) != 1 || !strings.Contains(rest[0], fmt.Sprintf("partitions=%d of=%d", parts-tailFallbackLines, parts)) {
		t.Errorf("%d per-partition lines (want %d) and summary %q (want one, %d of %d)", len(one), tailFallbackLines, rest, parts-tailFallbackLines, parts)
	}
	// by_reason counts the partitions of the summary, not those logged
	// one by one above it (it counted all 14).
	if len(rest) == 1 && !strings.Contains(rest[0], fmt.Sprintf("by_reason=map[unreadable:%d]", parts-tailFallbackLines)) {
		t.Errorf("summary %q: want by_reason=map[unreadable:%d]", rest[0], parts-tailFallbackLines)
	}
}
