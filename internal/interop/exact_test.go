package interop

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestKmirrorExactTranslationToJava runs kmirror on the real clusters with
// MM2's default offset.lag.max (100) on the cases of the issue "Offset
// translation that is exact": a quiet topic of 300 records with billing at
// 86; 10 records with a group at 7 (offset syncs 0->0 and 9->9 only); the
// multi-region DR story (order-processor at 40 on orders-0, payment-handler
// at 77 and 13 on payments-0/1); a transactional topic (five transactions of
// ten, markers at 10, 21, ..., 54) with groups at 55 and 33. Apache MM2's
// rule on those syncs gives 1 (or 31) for most of them. Java's
// RemoteClusterUtils.translateOffsets reads kmirror's checkpoints and must
// return the same exact offsets as kmirror's own client; MM2's OffsetSync
// deserializer must still read every record of the offset-syncs topic, and
// the offset-runs topic beside it must be internal for MM2's policy.
func TestKmirrorExactTranslationToJava(t *testing.T) {
	e := setup(t, "ex", "ey")
	p := e.p
	src, dst := p.Source.Alias, p.Target.Alias
	quiet, tiny, orders, payments, txn := p.Topic("quiet"), p.Topic("tiny"), p.Topic("orders"), p.Topic("payments"), p.Topic("txn")
	billing, g7, op, ph, gEnd, g33 := p.Group("billing"), p.Group("g7"), p.Group("order-processor"),
		p.Group("payment-handler"), p.Group("txn-end"), p.Group("txn-33")
	half := p.Group("payments-half") // commits payments-0 only: payments-1 is never committed

	testcluster.CreateTopic(t, &p.Source, quiet, 1, nil)
	testcluster.CreateTopic(t, &p.Source, tiny, 1, nil)
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	testcluster.CreateTopic(t, &p.Source, payments, 2, nil)
	testcluster.CreateTopic(t, &p.Source, txn, 1, nil)
	produceN(t, &p.Source, quiet, map[int32]int{0: 300})
	produceN(t, &p.Source, tiny, map[int32]int{0: 10})
	produceN(t, &p.Source, orders, map[int32]int{0: 100})
	produceN(t, &p.Source, payments, map[int32]int{0: 100, 1: 100})
	commit(t, &p.Source, billing, quiet, map[int32]int64{0: 86})
	commit(t, &p.Source, g7, tiny, map[int32]int64{0: 7})
	commit(t, &p.Source, op, orders, map[int32]int64{0: 40})
	commit(t, &p.Source, ph, payments, map[int32]int64{0: 77, 1: 13})
	commit(t, &p.Source, half, payments, map[int32]int64{0: 50})

	topics := []string{quiet, tiny, orders, payments, txn}
	fc := fastFlow(src, dst)
	for _, tp := range topics {
		fc.Topics = append(fc.Topics, regexp.QuoteMeta(tp))
	}
	fc.OffsetLagMax = mirror.DefaultOffsetLagMax
	fc.Groups = []string{regexp.QuoteMeta(billing), regexp.QuoteMeta(g7), regexp.QuoteMeta(op), regexp.QuoteMeta(ph),
		regexp.QuoteMeta(gEnd), regexp.QuoteMeta(g33), regexp.QuoteMeta(half)}
	m, stop := e.runMirror(t, "kmirror-exact", clusterOpt(src, &p.Source), clusterOpt(dst, &p.Target), mirror.WithFlow(fc))

	// Five transactions of ten records, each replicated before the next.
	cl := testcluster.Client(t, &p.Source, kgo.TransactionalID(p.Topic("exact-txn")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	remoteTxn := src + "." + txn
	for n := range 5 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: txn, Partition: 0, Value: fmt.Appendf(nil, "%d", n*10+i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 60*time.Second, "transaction replicated", func() (bool, string) {
			ends, err := testcluster.Admin(t, &p.Target).ListEndOffsets(ctx, remoteTxn)
			if err != nil {
				return false, err.Error()
			}
			o, _ := ends.Lookup(remoteTxn, 0)
			return o.Offset == int64(10*(n+1)), fmt.Sprint(o.Offset)
		})
	}
	commit(t, &p.Source, gEnd, txn, map[int32]int64{0: 55})
	commit(t, &p.Source, g33, txn, map[int32]int64{0: 33})

	want := translation{}
	want.add(billing, src+"."+quiet, 0, 86)
	want.add(g7, src+"."+tiny, 0, 7)
	want.add(op, src+"."+orders, 0, 40)
	want.add(ph, src+"."+payments, 0, 77)
	want.add(ph, src+"."+payments, 1, 13)
	want.add(gEnd, remoteTxn, 0, 50)
	want.add(g33, remoteTxn, 0, 30)
	want.add(half, src+"."+payments, 0, 50)
	groups := []string{billing, g7, op, ph, gEnd, g33, half}
	start := time.Now()
	testcluster.Eventually(t, 60*time.Second, "kmirror's exact checkpoints", func() (bool, string) {
		got, err := tryGoTranslate(&p.Target, src, groups...)
		if err != nil {
			return false, err.Error()
		}
		safe := 0
		for _, g := range m.Status().Flows[0].Groups {
			if g.SafeToSwitch && g.CheckpointExact {
				safe++
			}
		}
		return cmp.Equal(want, got) && safe == len(groups), fmt.Sprintf("safe %d of %d: %s", safe, len(groups), cmp.Diff(want, got))
	})
	t.Logf("exact checkpoints of %d groups after %v", len(groups), time.Since(start).Round(time.Millisecond))
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	pol, _ := policy.NewDefault()
	offsetSyncs := pol.OffsetSyncsTopic(dst)
	runs := checkpoint.OffsetRunsTopic(offsetSyncs)
	if !pol.IsInternalTopic(runs) {
		t.Errorf("%s is not internal for MM2's DefaultReplicationPolicy", runs)
	}
	out := e.java(t,
		javaCall{"Translate", append([]string{strings.Join(p.Target.Brokers, ","), src, "20000"}, groups...)},
		javaCall{"Decode", []string{strings.Join(p.Source.Brokers, ","), "offsetsync:" + offsetSyncs}},
	)
	javaTr := parseTranslate(t, out[0])
	if d := cmp.Diff(want, javaTr); d != "" {
		t.Errorf("Java RemoteClusterUtils.translateOffsets (-want +java):\n%s", d)
	}
	if d := cmp.Diff(goTranslate(t, &p.Target, src, groups...), javaTr); d != "" {
		t.Errorf("Java differs from kmirror's TranslateOffsets (-kmirror +java):\n%s", d)
	}
	// The detailed translation (kmirror translate, failover): the same
	// offsets as Java where Java answers, each marked exact, plus the
	// partition Java leaves out, marked never committed.
	rc := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target))
	detailed, exact := translation{}, 0
	var never, notExact []string
	for _, g := range groups {
		ps, err := rc.TranslateDetailed(ctx, src, g)
		if err != nil {
			t.Fatalf("TranslateDetailed(%s): %v", g, err)
		}
		for _, x := range ps {
			switch {
			case x.NeverCommitted:
				never = append(never, fmt.Sprintf("%s %s[%d]", g, x.Topic, x.Partition))
			default:
				detailed.add(g, x.Topic, x.Partition, x.Offset)
				if x.Translation == remoteclusterutils.TranslationExact && x.Reread == 0 {
					exact++
				} else {
					notExact = append(notExact, fmt.Sprintf("%s %s[%d]: %v, reread %d", g, x.Topic, x.Partition, x.Translation, x.Reread))
				}
			}
		}
	}
	if d := cmp.Diff(javaTr, detailed); d != "" {
		t.Errorf("TranslateDetailed differs from Java (-java +detailed):\n%s", d)
	}
	if n := len(groups) + 1; exact != n { // payment-handler has two partitions
		t.Errorf("%d exact translations, want %d (every checkpoint's header says exact); not exact: %q", exact, n, notExact)
	}
	if d := cmp.Diff([]string{fmt.Sprintf("%s %s.%s[1]", half, src, payments)}, never); d != "" {
		t.Errorf("never-committed partitions (-want +got):\n%s", d)
	}
	syncs := compareDecodes(t, offsetSyncs, parseDecode(t, out[1])[offsetSyncs], goDecode(t, &p.Source, offsetSyncs, "offsetsync"))
	mine := 0
	for _, d := range syncs {
		for _, tp := range topics {
			if d.Sync.Topic == tp {
				mine++
			}
		}
	}
	if mine == 0 {
		t.Errorf("no offset sync of the test's topics decoded by MM2's OffsetSync")
	}
	t.Logf("Java translated %v; MM2 decoded %d offset syncs of these topics", javaTr, mine)
}
