package mirror

// Exact translation end to end: the cases of the issue "Offset translation
// that is exact, and a SafeToSwitch that tells the truth", each with its
// exact expected offsets, on the test-cluster harness (kfake, or the real
// brokers of KMIRROR_SOURCE_BROKERS / KMIRROR_TARGET_BROKERS).

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// translated returns TranslateOffsets of group from the target as
// "topic-partition" -> offset, and the error.
func translated(t *testing.T, p *testcluster.Pair, group string) (map[string]int64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := remoteclusterutils.TranslateOffsets(ctx, p.Source.Alias, group, remoteclusterutils.WithClientOpts(p.Target.Opts()...))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	offs.Each(func(o kadm.Offset) { out[fmt.Sprintf("%s-%d", o.Topic, o.Partition)] = o.At })
	return out, nil
}

// tryCommitted is committed for polling loops: a failed fetch (a group
// coordinator still loading on real brokers) gives no offsets.
func tryCommitted(c *testcluster.Cluster, group, topic string) map[int32]int64 {
	cl, err := kgo.NewClient(c.Opts()...)
	if err != nil {
		return nil
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	out := map[int32]int64{}
	if err != nil {
		return out
	}
	for p, o := range resp[topic] {
		if o.Err == nil && o.At >= 0 {
			out[p] = o.At
		}
	}
	return out
}

// safeWatcher samples Status and TranslateOffsets of group until stopped and
// fails the test if, at a sample, the group is SafeToSwitch while the
// checkpoints (read after the status) are not the exact offsets want.
type safeWatcher struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	bad     []string
	samples int
}

func watchSafe(t *testing.T, m *Mirror, p *testcluster.Pair, group string, want map[string]int64) *safeWatcher {
	w := &safeWatcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			gs, ok := groupStatusOf(m, 0, group)
			if !ok || !gs.SafeToSwitch {
				continue
			}
			got, err := translated(t, p, group)
			w.mu.Lock()
			w.samples++
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				w.bad = append(w.bad, fmt.Sprintf("SafeToSwitch at %v while TranslateOffsets = %v, %v", gs.Updated.Format(time.StampMilli), got, err))
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.finish(t) })
	return w
}

func (w *safeWatcher) finish(t *testing.T) {
	select {
	case <-w.stop:
		return
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bad {
		t.Error(b)
	}
	if w.samples == 0 {
		t.Error("SafeToSwitch was never observed")
	}
}

// TestIssueQuietTopicGroupAt86: a quiet topic of 300 records replicated
// with lag 0; group billing committed 86 on the source. Whenever Status says
// SafeToSwitch, TranslateOffsets returns 86 -> 86 (it said SafeToSwitch with
// 86 -> 1, and 86 -> 86 only seconds later); never a checkpoint past 86.
func TestIssueQuietTopicGroupAt86(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders, billing := p.Topic("orders"), p.Group("billing")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 300)
	trCommit(t, &p.Source, billing, orders, map[int32]int64{0: 86})
	remote := p.Source.Alias + "." + orders
	want := map[string]int64{remote + "-0": 86}
	fc := trFlow(p)
	fc.SyncGroupOffsets = false // the target offset is the checkpoint
	m, _ := trStart(t, p, fc)
	w := watchSafe(t, m, p, billing, want)
	testcluster.Eventually(t, 30*time.Second, "billing safe to switch", func() (bool, string) {
		gs, _ := groupStatusOf(m, 0, billing)
		return gs.SafeToSwitch && len(gs.Partitions) == 1 && gs.Partitions[0].Exact, fmt.Sprintf("%+v", gs)
	})
	time.Sleep(300 * time.Millisecond) // more emissions while watched
	w.finish(t)
	got, err := translated(t, p, billing)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TranslateOffsets = %v, %v; want %v", got, err, want)
	}
	for _, cp := range readCheckpoints(t, p) {
		if cp.Group == billing && cp.DownstreamOffset > 86 {
			t.Errorf("checkpoint %+v past 86", cp)
		}
	}
}

// TestIssueTenRecordsGroupAt7: 10 records replicated, group at 7, group
// offset sync on: the offset syncs are 0->0 and 9->9, MM2's rule gives
// 7 -> 1 forever; kmirror checkpoints 7 -> 7 and commits 7 into the target
// group, and a consumer there reads exactly the records 7, 8, 9.
func TestIssueTenRecordsGroupAt7(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders, g := p.Topic("orders"), p.Group("g7")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 10)
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 7})
	remote := p.Source.Alias + "." + orders
	s := sampleInvariants(t, &p.Target, remote, g)
	s.limit(g, 7)
	m, _ := trStart(t, p, trFlow(p))
	testcluster.Eventually(t, 30*time.Second, "target group at 7, checkpoint 7 -> 7", func() (bool, string) {
		got, err := translated(t, p, g)
		gs, _ := groupStatusOf(m, 0, g)
		return tryCommitted(&p.Target, g, remote)[0] == 7 && err == nil && got[remote+"-0"] == 7 &&
			gs.SafeToSwitch && gs.State == checkpoint.StateSynced, fmt.Sprintf("translated %v %v, status %+v", got, err, gs)
	})
	if cp := readCheckpoints(t, p)[g+"/"+remote+"/0"]; cp.UpstreamOffset != 7 || cp.DownstreamOffset != 7 {
		t.Errorf("checkpoint %+v, want 7 -> 7", cp)
	}
	time.Sleep(300 * time.Millisecond)
	if got := committed(t, &p.Target, g, remote)[0]; got != 7 {
		t.Errorf("target group offset = %d later, want 7", got)
	}
	s.finish()
	if recs := consume(t, &p.Target, g, remote, kgo.NewOffset().AtStart()); fmt.Sprint(offsetsOf(recs)) != "[7 8 9]" {
		t.Errorf("a consumer of the target group read offsets %v, want [7 8 9]", offsetsOf(recs))
	}
}

// TestIssueRecreatedTopic: a source topic of 100 records is replicated,
// deleted and re-created; the new topic's records follow the old ones in the
// remote topic (offsets 100 on). A group at 20 of the new topic is waiting
// (never translated with the old topic's syncs, which give 20 -> 1) until
// the new topic is replicated, then checkpointed 20 -> 120.
func TestIssueRecreatedTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders, g := p.Topic("orders"), p.Group("g")
	remote := p.Source.Alias + "." + orders
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	testcluster.Produce(t, &p.Source, valueRecords(orders, "old", 0, 100)...)
	fc := trFlow(p)
	fc.Topics = []string{regexp.QuoteMeta(orders)}
	m, _ := trStart(t, p, fc)
	waitReplicated(t, m, 100)
	if _, err := testcluster.Admin(t, &p.Source).DeleteTopic(context.Background(), orders); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 20})
	testcluster.Eventually(t, 30*time.Second, "group waiting for the new topic", func() (bool, string) {
		gs, _ := groupStatusOf(m, 0, g)
		return gs.State == checkpoint.StateSkipped && gs.Reason == checkpoint.ReasonNewIncarnation, fmt.Sprintf("%+v", gs)
	})
	time.Sleep(300 * time.Millisecond) // several emissions while waiting
	if cp, ok := readCheckpoints(t, p)[g+"/"+remote+"/0"]; ok {
		t.Fatalf("checkpoint %+v written before the new topic was replicated", cp)
	}
	testcluster.Produce(t, &p.Source, valueRecords(orders, "new", 0, 30)...)
	testcluster.Eventually(t, 30*time.Second, "20 -> 120", func() (bool, string) {
		cp := readCheckpoints(t, p)[g+"/"+remote+"/0"]
		gs, _ := groupStatusOf(m, 0, g)
		return cp.DownstreamOffset == 120 && tryCommitted(&p.Target, g, remote)[0] == 120 && gs.SafeToSwitch,
			fmt.Sprintf("checkpoint %+v status %+v", cp, gs)
	})
	recs := consume(t, &p.Target, g, remote, kgo.NewOffset().AtStart())
	if len(recs) != 10 || string(recs[0].Value) != "new20" {
		t.Errorf("a consumer of the target group read %d records starting with %q, want 10 from new20", len(recs), firstValue(recs))
	}
}

// TestIssueMultiRegionDR is the multi-region disaster-recovery story of the
// user's source article: us-east-1 -> ap-northeast-2, topics orders,
// payments and events, groups order-processor (orders-0 at 40) and
// payment-handler (payments-0 at 77, payments-1 at 13), every record
// replicated 1:1. MM2 checkpointed them -> 1 (a fail-over re-reading 39, 76
// and 12 records); kmirror checkpoints and commits 40, 77 and 13.
func TestIssueMultiRegionDR(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "us-east-1", "ap-northeast-2")
	orders, payments, events := p.Topic("orders"), p.Topic("payments"), p.Topic("events")
	op, ph := p.Group("order-processor"), p.Group("payment-handler")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	testcluster.CreateTopic(t, &p.Source, payments, 2, nil)
	testcluster.CreateTopic(t, &p.Source, events, 1, nil)
	produceN(t, &p.Source, orders, 0, 100)
	produceN(t, &p.Source, payments, 0, 100)
	produceN(t, &p.Source, payments, 1, 100)
	produceN(t, &p.Source, events, 0, 50)
	trCommit(t, &p.Source, op, orders, map[int32]int64{0: 40})
	trCommit(t, &p.Source, ph, payments, map[int32]int64{0: 77, 1: 13})
	fc := trFlow(p)
	fc.Topics = []string{regexp.QuoteMeta(orders), regexp.QuoteMeta(payments), regexp.QuoteMeta(events)}
	fc.Groups = []string{regexp.QuoteMeta(op), regexp.QuoteMeta(ph)}
	m, _ := trStart(t, p, fc)
	src := p.Source.Alias + "."
	want := map[string]map[string]int64{
		op: {src + orders + "-0": 40},
		ph: {src + payments + "-0": 77, src + payments + "-1": 13},
	}
	for _, g := range []string{op, ph} {
		testcluster.Eventually(t, 30*time.Second, g+" translated exactly", func() (bool, string) {
			got, err := translated(t, p, g)
			gs, _ := groupStatusOf(m, 0, g)
			return err == nil && fmt.Sprint(got) == fmt.Sprint(want[g]) && gs.SafeToSwitch, fmt.Sprintf("%v %v %+v", got, err, gs)
		})
	}
	for topic, ws := range map[string]map[int32]int64{src + orders: {0: 40}, src + payments: {0: 77, 1: 13}} {
		g := op
		if strings.Contains(topic, payments) {
			g = ph
		}
		if got := committed(t, &p.Target, g, topic); fmt.Sprint(got) != fmt.Sprint(ws) {
			t.Errorf("%s on %s: target offsets %v, want %v", g, topic, got, ws)
		}
	}
}

// TestIssueNotYetRightAfterStart: before the first checkpoint exists,
// TranslateOffsets says "not yet" with a typed error (it returned an empty
// map and no error, like "nothing to translate"); then the offsets.
func TestIssueNotYetRightAfterStart(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders, g := p.Topic("orders"), p.Group("g")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 0}) // nothing to replicate yet: no offset sync, no checkpoint
	fc := trFlow(p)
	fc.EmitCheckpointsInterval, fc.SyncGroupOffsets = 0, false // MM2's default interval: 60 s
	trStart(t, p, fc)
	var err error
	testcluster.Eventually(t, 30*time.Second, "checkpoints topic created", func() (bool, string) {
		_, err = translated(t, p, g)
		return !errors.Is(err, remoteclusterutils.ErrNoCheckpointsTopic), fmt.Sprint(err)
	})
	var ny *remoteclusterutils.NoCheckpointYetError
	if !errors.As(err, &ny) || !errors.Is(err, remoteclusterutils.ErrNoCheckpointYet) {
		t.Fatalf("TranslateOffsets right after start: %v, want a *NoCheckpointYetError", err)
	}
	produceN(t, &p.Source, orders, 0, 5)
	remote := p.Source.Alias + "." + orders
	testcluster.Eventually(t, 30*time.Second, "translated", func() (bool, string) {
		got, err := translated(t, p, g)
		return err == nil && got[remote+"-0"] == 0 && len(got) == 1, fmt.Sprintf("%v %v", got, err)
	})
}

// TestTranslationLatency measures the time from a source commit to its
// exact translation on the target (a checkpoint TranslateOffsets returns,
// and the target group offset), with EmitCheckpointsInterval 1 s,
// OffsetFlushInterval 1 s and SyncGroupOffsetsInterval 1 s, for a quiet
// topic (the committed position replicated long before) and a busy one (the
// committed position just replicated). No timed assertion: it reports the
// numbers. The bound to compare them with is one checkpoint interval plus
// one flush interval (2 s), plus the sync interval for the target group.
func TestTranslationLatency(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	quiet, busy, g := p.Topic("quiet"), p.Topic("busy"), p.Group("lat")
	testcluster.CreateTopic(t, &p.Source, quiet, 1, nil)
	testcluster.CreateTopic(t, &p.Source, busy, 1, nil)
	produceN(t, &p.Source, quiet, 0, 1000)
	fc := trFlow(p)
	fc.EmitCheckpointsInterval, fc.OffsetFlushInterval, fc.SyncGroupOffsetsInterval = time.Second, time.Second, time.Second
	started := time.Now()
	m, _ := trStart(t, p, fc)
	waitReplicated(t, m, 1000)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var produced atomicInt
	wg.Go(func() { // about 200 records/s on busy
		n := int64(0)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			produceN(t, &p.Source, busy, 0, 10)
			n += 10
			produced.set(n)
		}
	})
	defer func() { close(stop); wg.Wait() }()
	remoteQ, remoteB := p.Source.Alias+"."+quiet, p.Source.Alias+"."+busy
	var first time.Duration
	measure := func(topic, remote string, at int64) (cp, grp time.Duration) {
		trCommit(t, &p.Source, g, topic, map[int32]int64{0: at})
		t0 := time.Now()
		testcluster.Eventually(t, 60*time.Second, fmt.Sprintf("%s at %d translated", topic, at), func() (bool, string) {
			got, err := translated(t, p, g)
			if err == nil && got[remote+"-0"] == at && cp == 0 {
				cp = time.Since(t0)
				if first == 0 {
					first = time.Since(started)
				}
			}
			if tryCommitted(&p.Target, g, remote)[0] == at && grp == 0 {
				grp = time.Since(t0)
			}
			return cp > 0 && grp > 0, fmt.Sprintf("%v %v", got, err)
		})
		return cp, grp
	}
	var cps, grps []time.Duration
	for i := range 4 {
		c, gr := measure(quiet, remoteQ, int64(100+200*i))
		cps, grps = append(cps, c), append(grps, gr)
		for produced.get() < int64(200*(i+1)) {
			time.Sleep(20 * time.Millisecond)
		}
		c, gr = measure(busy, remoteB, produced.get()-5) // a position just produced
		cps, grps = append(cps, c), append(grps, gr)
	}
	sort.Slice(cps, func(i, j int) bool { return cps[i] < cps[j] })
	sort.Slice(grps, func(i, j int) bool { return grps[i] < grps[j] })
	t.Logf("first exact checkpoint %v after start; commit -> exact checkpoint: min %v median %v max %v; commit -> target group offset: min %v median %v max %v (8 commits, bound 1 checkpoint interval + 1 flush interval = 2s, + 1 s group sync)",
		first.Round(time.Millisecond), cps[0].Round(time.Millisecond), cps[len(cps)/2].Round(time.Millisecond), cps[len(cps)-1].Round(time.Millisecond),
		grps[0].Round(time.Millisecond), grps[len(grps)/2].Round(time.Millisecond), grps[len(grps)-1].Round(time.Millisecond))
}
