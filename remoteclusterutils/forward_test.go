package remoteclusterutils_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// logItem is one step of a hand-built remote partition log.
type logItem struct {
	// prov is the provenance header value ("" none).
	prov string
	// txn: 0 none; 1 in a committed transaction; 2 in an aborted one.
	// Consecutive items with the same txn share one transaction.
	txn int
}

func stamped(u int64) logItem { return logItem{prov: fmt.Sprintf("SRC,#%d", u)} }

var (
	mm2Copy   = logItem{}                 // no provenance header: MM2, another producer
	noOffset  = logItem{prov: "SRC"}      // a kmirror with tail resume off
	otherCopy = logItem{prov: "OTHER,#5"} // a copy from another cluster
)

// writeLog produces items to topic's partition in order (transactions
// add their markers).
func writeLog(t *testing.T, c *testcluster.Cluster, topic string, partition int32, items []logItem) {
	t.Helper()
	plain := testcluster.Client(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	txn := testcluster.Client(t, c, kgo.TransactionalID(fmt.Sprintf("w-%s-%d", topic, partition)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxT(t)
	rec := func(it logItem, i int) *kgo.Record {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "v%d", i)}
		if it.prov != "" {
			r.Headers = []kgo.RecordHeader{{Key: "kmirror-provenance", Value: []byte(it.prov)}}
		}
		return r
	}
	for i := 0; i < len(items); {
		j := i + 1
		for j < len(items) && items[j].txn == items[i].txn {
			j++
		}
		var rs []*kgo.Record
		for k := i; k < j; k++ {
			rs = append(rs, rec(items[k], k))
		}
		if items[i].txn == 0 {
			if err := plain.ProduceSync(ctx, rs...).FirstErr(); err != nil { // in order, consecutive offsets
				t.Fatal(err)
			}
		} else {
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := txn.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			end := kgo.TryCommit
			if items[i].txn == 2 {
				end = kgo.TryAbort
			}
			if err := txn.EndTransaction(ctx, end); err != nil {
				t.Fatal(err)
			}
		}
		i = j
	}
}

// TestTranslateFromRecords: exact offsets on a hand-built remote log with
// MM2 copies, copies without offsets, another cluster's copy, an aborted
// transaction, a committed one and a source gap; a log start moved by
// DeleteRecords; a re-created source topic (non-monotonic); empty and
// unstamped partitions; the source cluster ID inferred.
func TestTranslateFromRecords(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		// The table's offsets are kfake's layout of the hand-written
		// transactions (a real broker lays out partition 0 one offset
		// shorter after its abort); TestTranslateFromRecordsEngine checks
		// the answers on real brokers against the engine's own copies.
		t.Skip("hand-laid offsets of kfake's transaction markers (KMIRROR_*_BROKERS name real brokers)")
	}
	remote := p.Topic("src.orders")
	createTopicsWith(t, &p.Target, 5, nil, remote)
	ab := func(it logItem) logItem { it.txn = 2; return it }
	cm := func(it logItem) logItem { it.txn = 1; return it }
	// Partition 0, offsets:
	// 0 MM2 copy | 1 #10 | 2 #11 | 3 #12 aborted, 4 abort marker |
	// 5 #12, 6 #13 committed, 7 commit marker | 8 #20 (source 14-19 never
	// copied) | 9 no offset | 10 MM2 copy | 11 #23 | 12 other cluster's
	// copy | 13 #24 | end 14.
	writeLog(t, &p.Target, remote, 0, []logItem{mm2Copy, stamped(10), stamped(11), ab(stamped(12)),
		cm(stamped(12)), cm(stamped(13)), stamped(20), noOffset, mm2Copy, stamped(23), otherCopy, stamped(24)})
	// Partition 1: #0-#9 at 0-9, then the log start moved to 5.
	var p1 []logItem
	for u := int64(0); u < 10; u++ {
		p1 = append(p1, stamped(u))
	}
	writeLog(t, &p.Target, remote, 1, p1)
	ctx := ctxT(t)
	adm := testcluster.Admin(t, &p.Target)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: remote, Partition: 1, At: 5, LeaderEpoch: -1})
	if res, err := adm.DeleteRecords(ctx, del); err != nil || res.Error() != nil {
		t.Fatalf("delete records: %v %v", err, res.Error())
	}
	// Partition 2: #0-#4 at 0-4, then a re-created source topic's #0-#2.
	writeLog(t, &p.Target, remote, 2, []logItem{stamped(0), stamped(1), stamped(2), stamped(3), stamped(4),
		stamped(0), stamped(1), stamped(2)})
	// Partition 3 empty; partition 4 MM2 copies only.
	writeLog(t, &p.Target, remote, 4, []logItem{mm2Copy, mm2Copy, noOffset})

	type want struct {
		off    int64
		exact  bool
		reread int64
		err    error
	}
	ok := func(off int64) want { return want{off: off, exact: true} }
	safe := func(off, reread int64) want { return want{off: off, reread: reread} }
	fail := func(err error) want { return want{off: -1, err: err} }
	for _, tc := range []struct {
		name string
		part int32
		x    int64
		src  string
		want want
	}{
		{"X 0: everything is read", 0, 0, "SRC", ok(0)},
		{"before the first copy, an MM2 copy before it", 0, 5, "SRC", safe(0, 1)},
		{"at the first copy, an MM2 copy before it", 0, 10, "SRC", safe(0, 1)},
		{"next copy", 0, 11, "SRC", ok(2)},
		{"aborted copy and marker between", 0, 12, "SRC", ok(5)},
		{"in a committed transaction", 0, 13, "SRC", ok(6)},
		{"source gap after a commit marker", 0, 14, "SRC", ok(8)},
		{"source gap, end of it", 0, 20, "SRC", ok(8)},
		{"unstamped records before the copy", 0, 21, "SRC", safe(9, 2)},
		{"another cluster's copy before the copy", 0, 24, "SRC", safe(12, 1)},
		{"past the last copy, caught up", 0, 25, "SRC", ok(14)},
		{"not caught up", 0, 26, "SRC", fail(remoteclusterutils.ErrNotCaughtUp)},
		{"source inferred, two last hops", 0, 11, "", fail(remoteclusterutils.ErrMixedSources)},
		{"log start moved: before it", 1, 3, "SRC", ok(5)},
		{"log start moved: after it", 1, 7, "SRC", ok(7)},
		{"log start moved: caught up", 1, 10, "SRC", ok(10)},
		{"source inferred", 1, 8, "", ok(8)},
		{"another source's copies only", 1, 8, "OTHER", fail(remoteclusterutils.ErrNoStampedCopy)},
		{"re-created source topic", 2, 3, "SRC", fail(remoteclusterutils.ErrNotMonotonic)},
		{"re-created source topic, in the first run", 2, 1, "SRC", fail(remoteclusterutils.ErrNotMonotonic)},
		{"empty partition", 3, 0, "SRC", fail(remoteclusterutils.ErrNoStampedCopy)},
		{"unstamped copies only", 4, 1, "SRC", fail(remoteclusterutils.ErrNoStampedCopy)},
	} {
		got, err := remoteclusterutils.TranslateFromRecords(ctx, testcluster.Client(t, &p.Target), tc.src,
			map[string]map[int32]int64{remote: {tc.part: tc.x}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r, found := got[remote][tc.part]
		if !found || r.Topic != remote || r.Partition != tc.part || r.SourceOffset != tc.x {
			t.Errorf("%s: %+v (%v)", tc.name, r, found)
			continue
		}
		if tc.want.err != nil {
			if !errors.Is(r.Err, tc.want.err) || r.Offset != -1 || r.Record != "" {
				t.Errorf("%s: %+v, want no offset and %v", tc.name, r, tc.want.err)
			}
			continue
		}
		if r.Err != nil || r.Offset != tc.want.off || r.Exact != tc.want.exact || r.Reread != tc.want.reread || r.Record != remoteclusterutils.KindRecord {
			t.Errorf("%s: X %d: %+v, want %+v", tc.name, tc.x, r, tc.want)
		}
	}
	// Partition 0 not caught up names where the replication is.
	got, err := remoteclusterutils.TranslateFromRecords(ctx, testcluster.Client(t, &p.Target), "SRC",
		map[string]map[int32]int64{remote: {0: 30, 9: 1}, "no-such-topic": {0: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if r := got[remote][0]; r.LastCopied != 24 || !errors.Is(r.Err, remoteclusterutils.ErrNotCaughtUp) {
		t.Errorf("not caught up: %+v, want last copied 24", r)
	}
	if r := got[remote][9]; r.Err == nil || r.Offset != -1 {
		t.Errorf("no such partition: %+v", r)
	}
	if r := got["no-such-topic"][0]; r.Err == nil || r.Offset != -1 {
		t.Errorf("no such topic: %+v", r)
	}
}

// TestTranslateFromRecordsProperty: on long random remote logs (stamped
// copies with source gaps, unstamped records, aborted and committed
// transactions), the binary search answers what a full read of the log
// gives, for every kind of X.
func TestTranslateFromRecordsProperty(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	remote := p.Topic("src.big")
	const parts = 3
	createTopicsWith(t, &p.Target, parts, nil, remote)
	rng := rand.New(rand.NewPCG(7, 23))
	queries := map[int32][]int64{}
	for part := int32(0); part < parts; part++ {
		var items []logItem
		u := int64(rng.IntN(5))
		n := 400 + rng.IntN(300)
		if part == 2 {
			n = 6000 // probes extend their window
		}
		for len(items) < n {
			switch k := rng.IntN(20); {
			case k == 0:
				items = append(items, mm2Copy)
			case k == 1:
				items = append(items, noOffset)
			case k == 2: // an aborted batch of copies, then the same committed
				for i := 0; i < 3; i++ {
					it := stamped(u + int64(i))
					it.txn = 2
					items = append(items, it)
				}
				for i := 0; i < 3; i++ {
					it := stamped(u)
					it.txn = 1
					items = append(items, it)
					u++
				}
			case k == 3:
				u += int64(1 + rng.IntN(10)) // a source gap
			case k == 4 && part == 2:
				for i := 0; i < 300; i++ { // a long unstamped stretch
					items = append(items, mm2Copy)
				}
			default:
				items = append(items, stamped(u))
				u++
			}
		}
		if part == 2 {
			writeBulk(t, &p.Target, remote, part, items)
		} else {
			writeLog(t, &p.Target, remote, part, items)
		}
		for i := 0; i < 20; i++ {
			queries[part] = append(queries[part], int64(rng.IntN(int(u)+3)))
		}
		queries[part] = append(queries[part], 0, 1, u-1, u, u+1)
	}
	all, err := testcluster.ReadTopic(ctxT(t), p.Target.Opts(), remote, true)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int32]int64{}
	for part := int32(0); part < parts; part++ {
		o, err := testcluster.Admin(t, &p.Target).ListCommittedOffsets(ctxT(t), remote)
		if err != nil {
			t.Fatal(err)
		}
		lo, _ := o.Lookup(remote, part)
		ends[part] = lo.Offset
	}
	for part := int32(0); part < parts; part++ {
		for _, x := range queries[part] {
			got, err := remoteclusterutils.TranslateFromRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC",
				map[string]map[int32]int64{remote: {part: x}})
			if err != nil {
				t.Fatal(err)
			}
			r := got[remote][part]
			wantOff, wantExact, wantReread, wantErr := oracle(all[part], ends[part], x)
			if wantErr != nil {
				if !errors.Is(r.Err, wantErr) {
					t.Errorf("partition %d X %d: %+v, want %v", part, x, r, wantErr)
				}
				continue
			}
			if r.Err != nil || r.Offset != wantOff || r.Exact != wantExact || r.Reread != wantReread {
				t.Errorf("partition %d X %d: %+v, want offset %d exact %v reread %d", part, x, r, wantOff, wantExact, wantReread)
			}
		}
	}
}

// writeBulk produces items (no transactions) in batches.
func writeBulk(t *testing.T, c *testcluster.Cluster, topic string, partition int32, items []logItem) {
	t.Helper()
	var rs []*kgo.Record
	for i, it := range items {
		if it.txn == 2 {
			continue // aborted: left out (committed ones written plainly)
		}
		r := &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "v%d", i)}
		if it.prov != "" {
			r.Headers = []kgo.RecordHeader{{Key: "kmirror-provenance", Value: []byte(it.prov)}}
		}
		rs = append(rs, r)
	}
	testcluster.Produce(t, c, rs...)
}

// oracle is the translation of x from a full read of a monotonic log (the
// data records rs, log start at the first record's offset or later, end
// the last stable offset), by the rules TranslateFromRecords documents.
func oracle(rs []*kgo.Record, end, x int64) (off int64, exact bool, reread int64, err error) {
	type st struct {
		i    int
		d, u int64
	}
	var ss []st
	for i, r := range rs {
		for _, h := range r.Headers {
			if h.Key == "kmirror-provenance" {
				var u int64
				if _, e := fmt.Sscanf(string(h.Value), "SRC,#%d", &u); e == nil {
					ss = append(ss, st{i, r.Offset, u})
				}
			}
		}
	}
	if len(ss) == 0 {
		return -1, false, 0, remoteclusterutils.ErrNoStampedCopy
	}
	first, last := ss[0], ss[len(ss)-1]
	switch {
	case x <= first.u:
		if first.i == 0 {
			return first.d, true, 0, nil
		}
		if x == 0 {
			return 0, true, 0, nil
		}
		return 0, false, int64(first.i), nil
	case x > last.u:
		if last.u < x-1 {
			return -1, false, 0, remoteclusterutils.ErrNotCaughtUp
		}
		if after := len(rs) - 1 - last.i; after > 0 {
			return last.d + 1, false, int64(after), nil
		}
		return end, true, 0, nil
	}
	for k := 1; k < len(ss); k++ {
		if ss[k].u >= x {
			below, next := ss[k-1], ss[k]
			if gap := next.i - below.i - 1; gap > 0 {
				return below.d + 1, false, int64(gap), nil
			}
			return next.d, true, 0, nil
		}
	}
	panic("unreachable")
}

// TestRefineFromRecords: checkpoints that are not exact (an MM2 one, a safe
// sync one) become exact from the copies when the copies answer exactly;
// a not-caught-up one and one whose copies answer only safely keep their
// checkpoint with the reason; exact partitions are not looked at;
// never-committed ones are translated (exact or safe) from the group's
// source commit when given, kept with the reason when the copies do not
// answer, untouched without a commit; groups at different source offsets
// of one partition are answered each.
func TestRefineFromRecords(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	remote := p.Topic("src.orders")
	createTopicsWith(t, &p.Target, 2, nil, remote)
	// Partition 0: #0-#9 at 0-9, an MM2 copy at 10, #10-#14 at 11-15.
	var p0 []logItem
	for u := int64(0); u < 10; u++ {
		p0 = append(p0, stamped(u))
	}
	p0 = append(p0, mm2Copy)
	for u := int64(10); u < 15; u++ {
		p0 = append(p0, stamped(u))
	}
	writeLog(t, &p.Target, remote, 0, p0)
	writeLog(t, &p.Target, remote, 1, []logItem{stamped(100), stamped(101)})
	pt := func(part int32, x, off int64, tr remoteclusterutils.TranslationKind, kind string, reread int64) remoteclusterutils.PartitionTranslation {
		return remoteclusterutils.PartitionTranslation{Topic: remote, Partition: part, SourceOffset: x, Offset: off, Translation: tr, Record: kind, Reread: reread}
	}
	in := map[string][]remoteclusterutils.PartitionTranslation{
		"g": {
			pt(0, 7, 5, remoteclusterutils.TranslationUnknown, "", -1),   // MM2's checkpoint: 7 -> 5
			pt(1, 102, 1, remoteclusterutils.TranslationSafe, "sync", 1), // caught up: 102 -> 2
			{Topic: remote, Partition: 2, SourceOffset: -1, Offset: -1, Translation: remoteclusterutils.TranslationNone, Reread: -1, NeverCommitted: true},
		},
		"h": {
			pt(0, 12, 11, remoteclusterutils.TranslationSafe, "sync", 2), // 12 -> 13
			pt(1, 101, 1, remoteclusterutils.TranslationExact, "", 0),    // exact: kept
		},
		"i": {
			pt(0, 10, 9, remoteclusterutils.TranslationSafe, "sync", 5),  // the MM2 copy before #10: safe only
			pt(1, 150, 1, remoteclusterutils.TranslationSafe, "sync", 5), // not caught up
		},
	}
	never := func(part int32) remoteclusterutils.PartitionTranslation {
		return remoteclusterutils.PartitionTranslation{Topic: remote, Partition: part, SourceOffset: -1, Offset: -1,
			Translation: remoteclusterutils.TranslationNone, Reread: -1, NeverCommitted: true}
	}
	// Groups j and k have no checkpoint on partitions 0 and 1: their
	// commits on the source are given (k's partition 1: none).
	in["j"] = []remoteclusterutils.PartitionTranslation{never(0), never(1)}
	in["k"] = []remoteclusterutils.PartitionTranslation{never(0), never(1)}
	commits := map[string]map[string]map[int32]int64{"j": {remote: {0: 10, 1: 150}}, "k": {remote: {0: 12}}}
	got, err := remoteclusterutils.RefineFromRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC", in, commits)
	if err != nil {
		t.Fatal(err)
	}
	exact := func(part int32, x, off, cpOff int64) remoteclusterutils.PartitionTranslation {
		r := pt(part, x, off, remoteclusterutils.TranslationExact, remoteclusterutils.KindRecord, 0)
		r.CheckpointOffset = cpOff
		return r
	}
	kept := func(r remoteclusterutils.PartitionTranslation, why string) remoteclusterutils.PartitionTranslation {
		r.RecordFallback = why
		return r
	}
	want := map[string][]remoteclusterutils.PartitionTranslation{
		"g": {exact(0, 7, 7, 5), exact(1, 102, 2, 1), in["g"][2]},
		"h": {exact(0, 12, 13, 11), in["h"][1]},
		"i": {kept(in["i"][0], "the copies give 10, safe, re-read <= 1: checkpoint kept"),
			kept(in["i"][1], "the remote partition has not caught up with the source offset: the newest copy at 1 is of source offset 101, below 149")},
		"j": {
			{Topic: remote, Partition: 0, SourceOffset: 10, Offset: 10, Translation: remoteclusterutils.TranslationSafe,
				Record: remoteclusterutils.KindRecord, Reread: 1, CheckpointOffset: -1}, // the MM2 copy at 10 before #10 at 11
			kept(never(1), "the remote partition has not caught up with the source offset: the newest copy at 1 is of source offset 101, below 149"),
		},
		"k": {
			{Topic: remote, Partition: 0, SourceOffset: 12, Offset: 13, Translation: remoteclusterutils.TranslationExact,
				Record: remoteclusterutils.KindRecord, CheckpointOffset: -1},
			never(1),
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("RefineFromRecords (-want +got):\n%s", d)
	}
	if in["g"][0].Offset != 5 || in["g"][0].Record != "" {
		t.Errorf("the input changed: %+v", in["g"][0])
	}
}

// TestTranslateFromRecordsLongStretches: stretches of unstamped records
// longer than a probe's scan bound (an MM2 history before kmirror, a
// switch back, tail resume turned off) are searched across, the answers
// around them safe with the stretch as the re-read bound.
func TestTranslateFromRecordsLongStretches(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	remote := p.Topic("src.long")
	createTopicsWith(t, &p.Target, 3, nil, remote)
	unstamped := func(n int) []logItem { return make([]logItem, n) }
	stamps := func(from, to int64) []logItem {
		var out []logItem
		for u := from; u <= to; u++ {
			out = append(out, stamped(u))
		}
		return out
	}
	// Partition 0: 0-5999 MM2 copies; #3-#22 at 6000-6019; 6020-11019
	// unstamped; #25-#44 at 11020-11039; 11040-17039 unstamped; end 17040.
	// (A probe scans at least 4096 offsets, at most 5440.)
	var p0 []logItem
	for _, part := range [][]logItem{unstamped(6000), stamps(3, 22), unstamped(5000), stamps(25, 44), unstamped(6000)} {
		p0 = append(p0, part...)
	}
	writeBulk(t, &p.Target, remote, 0, p0)
	// Partition 1: #0 at 0, 6000 unstamped, #1 at 6001.
	writeBulk(t, &p.Target, remote, 1, append(append(stamps(0, 0), unstamped(6000)...), stamps(1, 1)...))
	// Partition 2: stretches longer than a probe's scan on both sides of
	// the first block: 0-5999 unstamped, #3-#7 at 6000-6004,
	// 6005-12004 unstamped, #8-#12 at 12005-12009, end 12010.
	var p2 []logItem
	for _, part := range [][]logItem{unstamped(6000), stamps(3, 7), unstamped(6000), stamps(8, 12)} {
		p2 = append(p2, part...)
	}
	writeBulk(t, &p.Target, remote, 2, p2)
	type want struct {
		off    int64
		exact  bool
		reread int64
	}
	for _, tc := range []struct {
		part int32
		x    int64
		want want
	}{
		{0, 0, want{0, true, 0}},
		{0, 2, want{0, false, 6000}},
		{0, 3, want{0, false, 6000}},
		{0, 10, want{6007, true, 0}},
		{0, 23, want{6020, false, 5000}},
		{0, 25, want{6020, false, 5000}},
		{0, 26, want{11021, true, 0}},
		{0, 30, want{11025, true, 0}},
		{0, 45, want{11040, false, 6000}},
		{1, 1, want{1, false, 6000}},
		{1, 2, want{6002, true, 0}},
	} {
		got, err := remoteclusterutils.TranslateFromRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC",
			map[string]map[int32]int64{remote: {tc.part: tc.x}})
		if err != nil {
			t.Fatal(err)
		}
		r := got[remote][tc.part]
		if r.Err != nil || r.Offset != tc.want.off || r.Exact != tc.want.exact || r.Reread != tc.want.reread {
			t.Errorf("partition %d X %d: %+v, want %+v", tc.part, tc.x, r, tc.want)
		}
	}
	// Partition 2: the search may pass over the first block; whatever it
	// answers never skips a copy of X or later, and is exact only when it
	// is the first copy of X or later.
	for x, first := range map[int64]int64{3: 6000, 5: 6002, 8: 12005, 10: 12007, 13: 12010} {
		got, err := remoteclusterutils.TranslateFromRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC",
			map[string]map[int32]int64{remote: {2: x}})
		if err != nil {
			t.Fatal(err)
		}
		r := got[remote][2]
		if r.Err == nil && (r.Offset > first || (r.Exact && r.Offset != first)) {
			t.Errorf("partition 2 X %d: %+v, the first copy of X or later is at %d", x, r, first)
		}
		if x >= 10 && (r.Err != nil || r.Offset != first || !r.Exact) {
			t.Errorf("partition 2 X %d: %+v, want %d exact (past the first block)", x, r, first)
		}
	}
	got, err := remoteclusterutils.TranslateFromRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC",
		map[string]map[int32]int64{remote: {0: 46}})
	if err != nil {
		t.Fatal(err)
	}
	if r := got[remote][0]; !errors.Is(r.Err, remoteclusterutils.ErrNotCaughtUp) || r.LastCopied != 44 {
		t.Errorf("X 46: %+v, want not caught up at 44", r)
	}
}

// TestTranslateFromRecordsOtherPartitionOffline: a remote topic whose
// partition 1 has no leader (its broker down) does not stop the
// translation of partition 0: the log start and end offsets were listed
// for every partition of the topic, and the listing waited for partition 1
// until the deadline and failed the whole call.
func TestTranslateFromRecordsOtherPartitionOffline(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("fakes a partition without a leader (kfake)")
	}
	remote := p.Topic("src.orders")
	createTopicsWith(t, &p.Target, 3, nil, remote)
	writeLog(t, &p.Target, remote, 0, []logItem{stamped(0), stamped(1), stamped(2)})
	offlinePartitions(t, &p.Target, remote, 0, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := remoteclusterutils.TranslateFromRecords(ctx, testcluster.Client(t, &p.Target), "SRC",
		map[string]map[int32]int64{remote: {0: 2}})
	if err != nil {
		t.Fatalf("TranslateFromRecords with partition 1 of %s offline: %v", remote, err)
	}
	r := got[remote][0]
	if r.Err != nil || r.Offset != 2 || !r.Exact || r.LastCopied != 2 {
		t.Errorf("partition 0: %+v, want offset 2, exact, last copied 2", r)
	}
}

// TestRefineFromRecordsManyGroupsOneScan: many groups at different source
// offsets of one partition (any busy topic read by many groups) are
// refined from one listing and one search of the partition, each probe's
// records read once. Each distinct offset was asked in its own round of
// TranslateFromRecords: two ListOffsets requests and a new search of the
// partition (a fresh reader per probe) per group, so the call grew with
// the number of groups (300 groups: 7.4 s on an in-process cluster, about
// 25 ms each, far more on a real one with TLS) until DefaultTimeout failed
// it as a whole with no result: a failover of many groups with -records
// got nothing.
func TestRefineFromRecordsManyGroupsOneScan(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("counts the requests kfake receives")
	}
	remote := p.Topic("src.orders")
	createTopicsWith(t, &p.Target, 1, nil, remote)
	var items []logItem
	for u := range int64(500) {
		items = append(items, stamped(u))
	}
	writeLog(t, &p.Target, remote, 0, items)
	const groups = 40
	in := map[string][]remoteclusterutils.PartitionTranslation{}
	for g := range groups {
		x := int64(g*10 + 3)
		in[fmt.Sprint("g", g)] = []remoteclusterutils.PartitionTranslation{{Topic: remote, Partition: 0, SourceOffset: x, Offset: x - 3,
			Translation: remoteclusterutils.TranslationSafe, Record: "sync", Reread: 3}}
	}
	var listings, fetches atomic.Int64
	f := p.Target.Fake
	f.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		f.KeepControl()
		listings.Add(1)
		return nil, nil, false
	})
	f.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		f.KeepControl()
		fetches.Add(1)
		return nil, nil, false
	})
	got, err := remoteclusterutils.RefineFromRecords(ctxT(t), testcluster.Client(t, &p.Target), "SRC", in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for g := range groups {
		x := int64(g*10 + 3)
		want := []remoteclusterutils.PartitionTranslation{{Topic: remote, Partition: 0, SourceOffset: x, Offset: x,
			Translation: remoteclusterutils.TranslationExact, Record: remoteclusterutils.KindRecord, CheckpointOffset: x - 3}}
		if d := cmp.Diff(want, got[fmt.Sprint("g", g)]); d != "" {
			t.Errorf("group g%d (-want +got):\n%s", g, d)
		}
	}
	// The log start and end, listed once (one request each).
	if n := listings.Load(); n != 2 {
		t.Errorf("%d ListOffsets requests for %d groups on one partition, want 2 (one listing)", n, groups)
	}
	// 500 offsets: the probes' windows cover the log once; kgo's readers
	// fetch each window in a few requests, not a search per group.
	if n := fetches.Load(); n > 100 {
		t.Errorf("%d fetch requests for %d groups on one 500-record partition, want one search (< 100)", n, groups)
	}
}

// TestRefineFromRecordsGroupUnaffectedByOthers: a group's refinement does
// not depend on which other groups are refined in the same call, nor on
// the order they are searched in. The partition's copies replay source
// offsets 600-699 at remote offsets 700-799 (a replication restarted from
// an older resume point); group a, at source offset 100, is answered
// exactly from copies far from the replay, while the search of some group
// near it reads the replay and is declined (not monotonic). One search
// serves every group, and its monotonicity check looked at every copy
// read so far, for any group: group a was declined whenever a group near
// the replay happened to be searched first (Go's map order), and exact
// otherwise, from one call to the next.
func TestRefineFromRecordsGroupUnaffectedByOthers(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	remote := p.Topic("src.orders")
	createTopicsWith(t, &p.Target, 1, nil, remote)
	var items []logItem
	for d := range int64(1000) {
		u := d
		if d >= 700 {
			u = d - 100 // source offsets 600-699 copied again at 700-799
		}
		items = append(items, stamped(u))
	}
	writeLog(t, &p.Target, remote, 0, items)
	cl := testcluster.Client(t, &p.Target)
	in := map[string][]remoteclusterutils.PartitionTranslation{}
	alone := map[string]remoteclusterutils.PartitionTranslation{}
	for g, x := range map[string]int64{"a": 100, "n0": 650, "n1": 651, "n2": 652, "n3": 653, "n4": 654} {
		in[g] = []remoteclusterutils.PartitionTranslation{{Topic: remote, Partition: 0, SourceOffset: x, Offset: x - 3,
			Translation: remoteclusterutils.TranslationSafe, Record: "sync", Reread: 3}}
		got, err := remoteclusterutils.RefineFromRecords(ctxT(t), cl, "SRC", map[string][]remoteclusterutils.PartitionTranslation{g: in[g]}, nil)
		if err != nil {
			t.Fatal(err)
		}
		alone[g] = got[g][0]
	}
	want := remoteclusterutils.PartitionTranslation{Topic: remote, Partition: 0, SourceOffset: 100, Offset: 100,
		Translation: remoteclusterutils.TranslationExact, Record: remoteclusterutils.KindRecord, CheckpointOffset: 97}
	if d := cmp.Diff(want, alone["a"]); d != "" {
		t.Fatalf("group a refined alone (-want +got):\n%s", d)
	}
	declined := 0
	for _, r := range alone {
		if strings.Contains(r.RecordFallback, remoteclusterutils.ErrNotMonotonic.Error()) {
			declined++
		}
	}
	if declined == 0 {
		t.Fatalf("no group near the replay declined alone: the test does not read the replay (%+v)", alone)
	}
	for try := range 10 {
		got, err := remoteclusterutils.RefineFromRecords(ctxT(t), cl, "SRC", in, nil)
		if err != nil {
			t.Fatal(err)
		}
		for g, r := range alone {
			if d := cmp.Diff([]remoteclusterutils.PartitionTranslation{r}, got[g]); d != "" {
				t.Fatalf("try %d: group %s refined with the others, not as alone (-alone +together):\n%s", try, g, d)
			}
		}
	}
}
