package mirror

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// exactCopy checks that target partition d holds the source partition s
// exactly once, in order (by value), and returns the number of duplicates
// (0 when exact) or fails the test on a lost or reordered record.
func exactCopy(t *testing.T, part int32, s, d []*kgo.Record) int {
	t.Helper()
	next, dups := 0, 0
	for i, r := range d {
		if next < len(s) && string(r.Value) == string(s[next].Value) {
			next++
			continue
		}
		j := indexOf(s, r.Value)
		if j < 0 || j >= next {
			t.Fatalf("partition %d: target record %d (%q) is neither the next source record nor a replay", part, i, r.Value)
		}
		dups += next - j
		next = j + 1
	}
	if next != len(s) {
		t.Fatalf("partition %d: target ends at source record %d of %d: records lost", part, next, len(s))
	}
	return dups
}

// ledger creates topic "ledger" (the test's name of it is returned) on
// p's source with 2 partitions of n records each.
func ledger(t *testing.T, p *testcluster.Pair, n int) string {
	t.Helper()
	topic := p.Topic("ledger")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produceN(t, &p.Source, topic, 0, n)
	produceN(t, &p.Source, topic, 1, n)
	return topic
}

// eosLedger runs an exactly-once flow (one task, no heartbeats or
// checkpoints) over a ledger of 100 records per partition, and waits
// until the 200 are committed.
func eosLedger(t *testing.T, p *testcluster.Pair) (m *Mirror, stop func() error, fc FlowConfig, topic string) {
	t.Helper()
	topic = ledger(t, p, 100)
	fc = fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 1
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, stop = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicatedCommitted(t, m, 200)
	return m, stop, fc, topic
}

// replicatedSum returns the records st's partitions replicated.
func replicatedSum(st FlowStatus) int64 {
	n := int64(0)
	for _, ps := range st.Partitions {
		n += ps.Replicated
	}
	return n
}

// checkLedgerCopied checks that a read_committed reader of topic's remote
// topic sees each of the source's records of both partitions once, in
// order.
func checkLedgerCopied(t *testing.T, p *testcluster.Pair, topic string) {
	t.Helper()
	src := testcluster.ReadAll(t, &p.Source, topic)
	dst, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), p.Source.Alias+"."+topic, true)
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 2; part++ {
		if dups := exactCopy(t, part, src[part], dst[part]); dups != 0 {
			t.Errorf("partition %d: %d duplicates", part, dups)
		}
	}
}

// crashRounds replicates a stream in rounds, killing the engine (no flush,
// no commit) mid-stream after each round but the last, and returns the
// duplicates a read_committed reader of the target sees.
func crashRounds(t *testing.T, p *testcluster.Pair, topic string, exactlyOnce bool) int {
	t.Helper()
	const parts, rounds, perRound = 4, 6, 600
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	producer := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce = exactlyOnce
	fc.Tasks = 2
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	remote := p.Source.Alias + "." + topic
	replicated := func() int {
		n := 0
		recs, _ := testcluster.ReadTopic(ctx, p.Target.Opts(), remote, false) // progress, not content; 0 before the topic exists
		for _, rs := range recs {
			n += len(rs)
		}
		return n
	}
	for round := 0; round < rounds; round++ {
		m, err := newMirror(t, append(clusterOpts(p), WithFlow(fc))...)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		base := round * perRound
		produced := make(chan struct{})
		go func() { // a steady stream, about 3000 records/s
			defer close(produced)
			for i := 0; i < perRound; i++ {
				part := int32(i % parts)
				producer.Produce(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(fmt.Sprintf("%d-%d", round, i))}, nil)
				if i%30 == 29 {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
		if round == rounds-1 {
			<-produced
			if err := producer.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			waitReplicatedCommitted(t, m, int64(perRound)) // this run's own records at least
			// Every partition acknowledged up to the source's end: neither
			// a zero lag (0 until a partition's fetch is answered) nor the
			// target's record count (duplicates and aborted records count
			// too) proves that every record was copied.
			end, err := testcluster.Admin(t, &p.Source).ListEndOffsets(ctx, topic)
			if err != nil || end.Error() != nil {
				t.Fatalf("end offsets of %s: %v %v", topic, err, end.Error())
			}
			testcluster.Eventually(t, 60*time.Second, "everything replicated", func() (bool, string) {
				st := m.Status().Flows[0]
				done := 0
				for _, ps := range st.Partitions {
					if e, ok := end.Lookup(topic, ps.Partition); ok && ps.Topic == topic && ps.Replicated == e.Offset {
						done++
					}
				}
				return done == parts, fmt.Sprintf("%d of %d partitions at their end offsets: %+v", done, parts, st.Partitions)
			})
			m.Close()
		} else {
			// Kill mid-stream: once this round's records are partly
			// replicated, at an instant that varies per round.
			testcluster.Eventually(t, 30*time.Second, "replication progressed", func() (bool, string) {
				n := replicated()
				return n > base+perRound/4, fmt.Sprint(n)
			})
			time.Sleep(time.Duration(20+round*37%90) * time.Millisecond)
			m.kill()
			<-produced
			if err := producer.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("round %d: Run: %v", round, err)
		}
	}
	src := testcluster.ReadAll(t, &p.Source, topic)
	dst, err := testcluster.ReadTopic(ctx, p.Target.Opts(), remote, true)
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for part := int32(0); part < parts; part++ {
		dups += exactCopy(t, part, src[part], dst[part])
	}
	return dups
}

// waitReplicatedCommitted waits until the member replicated want records
// and has no lag.
func waitReplicatedCommitted(t *testing.T, m *Mirror, want int64) {
	t.Helper()
	testcluster.Eventually(t, 60*time.Second, "records replicated", func() (bool, string) {
		st := m.Status().Flows[0]
		var parts []string
		for _, ps := range st.Partitions {
			parts = append(parts, fmt.Sprintf("%s[%d] %s %q end %d replicated %d committed %d lag %d records %d",
				ps.Topic, ps.Partition, ps.State, ps.Error, ps.SourceEnd, ps.Replicated, ps.Committed, ps.Lag, ps.Records))
		}
		return st.Records >= want && st.Lag == 0, fmt.Sprintf("state %s %s, %d records, lag %d; partitions %v", st.State, st.Error, st.Records, st.Lag, parts)
	})
}

// TestExactlyOnceCrashesNoDuplicates kills the engine five times at
// arbitrary instants mid-stream (no flush, open transactions left behind):
// a read_committed reader of the target sees every source record exactly
// once, in order. The same run at least once reports its duplicates.
func TestExactlyOnceCrashesNoDuplicates(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if dups := crashRounds(t, p, p.Topic("eos"), true); dups != 0 {
		t.Errorf("exactly once: %d duplicates after 5 crashes, want 0", dups)
	}
	p2 := testcluster.New(t, "src", "dst")
	t.Logf("at least once, same workload: %d duplicates after 5 crashes", crashRounds(t, p2, p2.Topic("alo"), false))
}

// TestAbortedSourceTransactionsNeverReplicated interleaves committed and
// aborted source transactions with plain records on the same partitions:
// with default settings, at least once and exactly once, the target holds
// exactly the committed and plain records, in order.
func TestAbortedSourceTransactionsNeverReplicated(t *testing.T) {
	t.Parallel()
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("exactly_once=%t", eos), func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("txns")
			testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
			ctx := context.Background()
			tcl := testcluster.Client(t, &p.Source, kgo.TransactionalID(p.Topic("source-app")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			plain := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			var want [2][]string
			for round := 0; round < 12; round++ {
				if err := tcl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				commit := round%3 != 1
				for i := 0; i < 6; i++ {
					part := int32(i % 2)
					v := fmt.Sprintf("txn%d-%d", round, i)
					if err := tcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
						t.Fatal(err)
					}
					if commit {
						want[part] = append(want[part], v)
					}
				}
				if err := tcl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					t.Fatal(err)
				}
				for part := int32(0); part < 2; part++ {
					v := fmt.Sprintf("plain%d-%d", round, part)
					if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
						t.Fatal(err)
					}
					want[part] = append(want[part], v)
				}
			}
			fc := fastFlow(p)
			fc.Topics = []string{topic}
			fc.ExactlyOnce = eos
			m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
			waitReplicatedCommitted(t, m, int64(len(want[0])+len(want[1])))
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			// Offsets skipped by read_committed (aborted records, markers)
			// are holes, not gaps.
			if gaps := m.Status().Flows[0].Gaps; len(gaps) != 0 {
				t.Errorf("gaps reported across aborted ranges: %+v", gaps)
			}
			// read_uncommitted: an aborted source record copied as a plain
			// record would show here.
			got := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+topic)
			for part := int32(0); part < 2; part++ {
				var vs []string
				for _, r := range got[part] {
					vs = append(vs, string(r.Value))
				}
				if fmt.Sprint(vs) != fmt.Sprint(want[part]) {
					t.Errorf("partition %d:\n got %v\nwant %v", part, vs, want[part])
				}
			}
		})
	}
}

// TestExactlyOnceTargetStallAborts stalls the target's answer to one
// transactional produce for longer than admin.timeout.ms: the unit aborts
// the transaction (never commits a part of it), restarts from its last
// committed resume points, and a read_committed reader sees every record
// once.
func TestExactlyOnceTargetStallAborts(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("ledger")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	produce := func(from, to int) {
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))})
		}
		testcluster.Produce(t, &p.Source, rs...)
	}
	produce(0, 100)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 1
	fc.AdminTimeout = time.Second
	var logs syncBuffer
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))...)
	waitReplicatedCommitted(t, m, 100)

	remote := p.Source.Alias + "." + topic
	var armed atomic.Bool
	armed.Store(true)
	c := p.Target.Fake
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ProduceRequest)
		if req.TransactionID != nil && armed.CompareAndSwap(true, false) { // Produce v13 names topics by ID: any transactional produce
			c.SleepControl(func() { time.Sleep(3 * time.Second) })
		}
		return nil, nil, false
	})
	produce(100, 200)
	testcluster.Eventually(t, 60*time.Second, "all 200 committed after the stall", func() (bool, string) {
		n := replicatedSum(m.Status().Flows[0])
		return !armed.Load() && n == 200, fmt.Sprintf("stalled %t, replicated %d", !armed.Load(), n)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "unit restarts from its last committed resume points") ||
		!strings.Contains(logs.String(), "transaction aborted") {
		t.Errorf("no aborted transaction logged:\n%s", logs.String())
	}
	copiedOnceInOrder(t, p, topic, remote, 2)
}

// copiedOnceInOrder reads topic on p's source and its remote topic on the
// target (read_committed) and checks that each of the first parts
// partitions is copied in order with no duplicate (exactCopy).
func copiedOnceInOrder(t *testing.T, p *testcluster.Pair, topic, remote string, parts int32) {
	t.Helper()
	src := testcluster.ReadAll(t, &p.Source, topic)
	dst, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), remote, true)
	if err != nil {
		t.Fatal(err)
	}
	for part := range parts {
		if dups := exactCopy(t, part, src[part], dst[part]); dups != 0 {
			t.Errorf("partition %d: %d duplicates visible to read_committed", part, dups)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (a log sink).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExactlyOnceCheckpointsFollowTheStream: in exactly-once mode the
// offset runs are written at every transaction flush, so a group committed
// at the end of a steady stream is checkpointed exactly at the copy of its
// last record. Before, the runs stopped a few hundred records into the
// stream (they were written only when a sync fell due by itself, which the
// flushes' promoted syncs prevented), and the group stayed checkpointed
// there, "beyond what was replicated" (a helper trying to break
// exactly-once mode, stop 38: 4 000 records per partition re-read on
// failover).
func TestExactlyOnceCheckpointsFollowTheStream(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("orders")
	remote := p.Source.Alias + "." + topic
	g := p.Group("g")
	const parts, records = 2, 3000
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	fc := fastFlow(p)
	fc.Topics, fc.Groups = []string{topic}, []string{g}
	fc.ExactlyOnce = true
	fc.DisableHeartbeats = true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	defer stop()
	sp := produceSteadily(t, &p.Source, topic, parts, records, 1500)
	<-sp.done
	waitReplicatedCommitted(t, m, records)
	trCommit(t, &p.Source, g, topic, map[int32]int64{0: records / parts, 1: records / parts})
	copies := testcluster.ReadAll(t, &p.Target, remote)
	want := map[string]int64{}
	for part := range int32(parts) {
		rs := copies[part]
		if len(rs) != records/parts {
			t.Fatalf("%s[%d] holds %d records, want %d", remote, part, len(rs), records/parts)
		}
		want[fmt.Sprintf("%s/%s/%d", g, remote, part)] = rs[len(rs)-1].Offset + 1 // past the last copy
	}
	testcluster.Eventually(t, 30*time.Second, "the group checkpointed at the copies of its last records", func() (bool, string) {
		cps := readCheckpoints(t, p)
		for k, down := range want {
			if cp := cps[k]; cp.UpstreamOffset != records/parts || cp.DownstreamOffset != down {
				return false, fmt.Sprintf("%s: checkpoint %d -> %d, want %d -> %d", k, cp.UpstreamOffset, cp.DownstreamOffset, records/parts, down)
			}
		}
		return true, ""
	})
}

// TestExactlyOnceRefusedTopicLeavesOthersFlowing: exactly once, one slot,
// two topics; the target refuses every produce to one remote topic (an
// ACL being rolled out), a failure retried automatically. Each retry that
// fails aborts the transaction the slot's topics share and restarts its
// session; the other topic still commits between them, and once the ACL
// is fixed both topics end exactly once. Before, the retries came due as
// each session started, and the other topic committed nothing while the
// refusal lasted (a helper trying to break exactly-once mode, stop 38).
func TestExactlyOnceRefusedTopicLeavesOthersFlowing(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	good, bad := p.Topic("good"), p.Topic("bad")
	// Half the records before the refusal, half during it: the good
	// topic must get all of its second half while the bad one is refused
	// (an assertion on records, not on a time window: a 6 s window failed
	// on a loaded machine, and once the producers had finished before it).
	const parts, half = 3, 3000
	const records = 2 * half
	testcluster.CreateTopic(t, &p.Source, good, parts, nil)
	testcluster.CreateTopic(t, &p.Source, bad, parts, nil)
	fc := fastFlow(p)
	fc.Topics, fc.Tasks, fc.ExactlyOnce = []string{good, bad}, 1, true
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc), withPartRetryFirst(200*time.Millisecond))...)
	pg := produceSteadily(t, &p.Source, good, parts, half, 1000)
	pb := produceSteadily(t, &p.Source, bad, parts, half, 1000)
	<-pg.done
	<-pb.done
	rg, rb := p.Source.Alias+"."+good, p.Source.Alias+"."+bad
	committed := func(remote string) int { return committedRecords(p, remote) }
	testcluster.Eventually(t, 60*time.Second, "both topics' first halves", func() (bool, string) {
		a, b := committed(rg), committed(rb)
		return a == half && b == half, fmt.Sprint(a, b)
	})
	h := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: rb, Err: kerr.TopicAuthorizationFailed, Count: -1})
	pg = produceSteadilyFrom(t, &p.Source, good, parts, half, 1000, half/parts)
	pb = produceSteadilyFrom(t, &p.Source, bad, parts, half, 1000, half/parts)
	<-pg.done
	<-pb.done
	testcluster.Eventually(t, 90*time.Second, "the good topic's second half while the other is refused", func() (bool, string) {
		a := committed(rg)
		return a == records, fmt.Sprintf("%d of %d: %+v", a, records, m.Status().Flows[0].Partitions)
	})
	if b := committed(rb); b != half {
		t.Fatalf("the refused topic has %d records read_committed, want its first half, %d", b, half)
	}
	h.Remove()
	testcluster.Eventually(t, 90*time.Second, "everything replicated", func() (bool, string) {
		a, b := committed(rg), committed(rb)
		return a >= records && b >= records, fmt.Sprint(a, b)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, tp := range [][2]string{{good, rg}, {bad, rb}} {
		src := testcluster.ReadAll(t, &p.Source, tp[0])
		dst, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), tp[1], true)
		if err != nil {
			t.Fatal(err)
		}
		for part := range int32(parts) {
			if dups := exactCopy(t, part, src[part], dst[part]); dups != 0 {
				t.Errorf("%s[%d]: %d duplicates read_committed, exactly once", tp[1], part, dups)
			}
		}
	}
}

// committedRecords counts the records of remote on the target that
// read_committed consumers see, in all its partitions (-1 when it cannot
// be read yet).
func committedRecords(p *testcluster.Pair, remote string) int {
	recs, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), remote, true)
	if err != nil {
		return -1
	}
	n := 0
	for _, rs := range recs {
		n += len(rs)
	}
	return n
}

// TestExactlyOnceFencingUsesConfiguredTransactionTimeout: the target's
// brokers allow transactions of at most 30 s (transaction.max.timeout.ms)
// and the target's producer options set transaction.timeout.ms = 20 s. The
// units asked for 20 s, but the leader's fencing of every slot before a
// fresh assignment (fenceSlots) asked for the default 60 s, which the
// coordinator refused: the member never joined its group and replicated
// nothing. Every InitProducerId of the flow's transactional ids now asks for
// the configured 20 s, and the records arrive exactly once.
func TestExactlyOnceFencingUsesConfiguredTransactionTimeout(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "30000"}))
	if p.Target.Fake == nil {
		t.Skip("needs kfake's broker configuration (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("txntimeout")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 2
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	prefix := transactionalID(defaultGroupID(fc.Source, fc.Target), 0)
	prefix = prefix[:len(prefix)-1]
	var mu sync.Mutex
	asked := map[int32]int{} // transaction timeout (ms) -> InitProducerId requests of the flow's ids
	c := p.Target.Fake
	c.ControlKey(int16(kmsg.InitProducerID), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if req := kreq.(*kmsg.InitProducerIDRequest); req.TransactionalID != nil && strings.HasPrefix(*req.TransactionalID, prefix) {
			mu.Lock()
			asked[req.TransactionTimeoutMillis]++
			mu.Unlock()
		}
		return nil, nil, false
	})
	m, stop := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.TransactionTimeout(20 * time.Second)}}),
		WithFlow(fc))
	var in []*kgo.Record
	var want [2][]string
	for i := 0; i < 20; i++ {
		part := int32(i % 2)
		v := fmt.Sprintf("r%d", i)
		in = append(in, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)})
		want[part] = append(want[part], v)
	}
	testcluster.Produce(t, &p.Source, in...)
	waitReplicatedCommitted(t, m, 20)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), p.Source.Alias+"."+topic, true)
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 2; part++ {
		var vs []string
		for _, r := range got[part] {
			vs = append(vs, string(r.Value))
		}
		if fmt.Sprint(vs) != fmt.Sprint(want[part]) {
			t.Errorf("partition %d: read_committed %v, want %v", part, vs, want[part])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[20000] < 2 {
		t.Errorf("InitProducerId transaction timeouts (ms -> requests) %v, want only 20000 (the fencing and both units)", asked)
	}
}

// TestExactlyOnceTransactionMaxRecordsCaps: TransactionMaxRecords caps the
// records of one transaction. With 60 records waiting on the source and a
// cap of 7, the unit's first poll returned all 60 (kgo's polls take up to
// 10 000 records) and they went into one transaction, committed only after
// the whole poll. Now a poll takes no more than the open transaction has
// room for: the target's log holds the 60 records in transactions of at
// most 7 data records each, every one followed by its COMMIT marker.
func TestExactlyOnceTransactionMaxRecordsCaps(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("txncap")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	var in []*kgo.Record
	var want []string
	for i := 0; i < 60; i++ {
		v := fmt.Sprintf("r%d", i)
		in = append(in, &kgo.Record{Topic: topic, Value: []byte(v)})
		want = append(want, v)
	}
	testcluster.Produce(t, &p.Source, in...)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 1
	fc.TransactionBoundary, fc.TransactionInterval = TransactionBoundaryInterval, 200*time.Millisecond
	fc.TransactionMaxRecords = 7
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicatedCommitted(t, m, 60)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	remote := p.Source.Alias + "." + topic
	var vs []string
	data, txns := 0, 0
	for _, b := range readRawBatches(t, &p.Target, remote, 0) {
		if b.control {
			if data > 7 {
				t.Errorf("transaction %d holds %d records, more than TransactionMaxRecords (7)", txns, data)
			}
			txns++
			data = 0
			continue
		}
		data += int(b.count)
		for _, r := range b.recs {
			vs = append(vs, string(r.Value))
		}
	}
	if data != 0 {
		t.Errorf("%d records after the last transaction marker", data)
	}
	if fmt.Sprint(vs) != fmt.Sprint(want) {
		t.Errorf("target records %v, want %v", vs, want)
	}
	if txns < 9 {
		t.Errorf("%d transactions for 60 records of at most 7, want 9 or more", txns)
	}
}

// TestExactlyOnceGracefulStopDuringCommit: a graceful stop (here the end
// of Run's context; Close and a revocation are the same) that comes while
// the unit commits a transaction, its records still in flight to the
// target, lets that commit finish, as the stop's own final commit does.
// The commit ran on the context the stop cancels: it aborted the
// transaction, the stop stored no resume point for its records, and the
// next owner replayed them (resume point 49 and 50 records visible instead
// of 59 and 60).
func TestExactlyOnceGracefulStopDuringCommit(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("stopcommit")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	var want []string
	produce := func(from, to int) {
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
			want = append(want, fmt.Sprint(i))
		}
		testcluster.Produce(t, &p.Source, rs...)
	}
	produce(0, 50)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 1
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	var logs syncBuffer
	m, err := newMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	waitReplicatedCommitted(t, m, 50)

	// The next transactional produce (records 50..59) is answered only
	// after the stop began.
	var armed atomic.Bool
	armed.Store(true)
	stalled, release := make(chan struct{}), make(chan struct{})
	c := p.Target.Fake
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if req := kreq.(*kmsg.ProduceRequest); req.TransactionID != nil && armed.CompareAndSwap(true, false) {
			close(stalled)
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	produce(50, 60)
	select {
	case <-stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("records 50..59 were never produced to the target")
	}
	cancel() // graceful: the contexts it cancels are canceled on return
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "transaction aborted") {
		t.Errorf("the graceful stop aborted a transaction:\n%s", logs.String())
	}
	rp, _, err := readResumePoints(context.Background(), p.Target.Opts(), connectoffsets.TopicName(p.Source.Alias), p.Source.Alias, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if got := rp[tp{topic, 0}]; got != 59 {
		t.Errorf("resume point after the graceful stop %d, want 59 (the last record)", got)
	}
	dst, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), p.Source.Alias+"."+topic, true)
	if err != nil {
		t.Fatal(err)
	}
	var vs []string
	for _, r := range dst[0] {
		vs = append(vs, string(r.Value))
	}
	if fmt.Sprint(vs) != fmt.Sprint(want) {
		t.Errorf("read_committed target %v, want %v", vs, want)
	}
}

// TestExactlyOnceInitProducerIDErrorRecovers: a session that ends (here a
// produce answered INVALID_PRODUCER_EPOCH) fences again with InitProducerId,
// and the coordinator answers it once UNKNOWN_SERVER_ERROR. kgo keeps a
// non-retriable InitProducerId error as its producer's state, so the unit,
// which retried ProducerID on the same producer, got the kept error forever
// without a request: the slot replicated nothing until the process was
// restarted (flow RETRYING "fencing the previous producer of
// kmirror.src->dst-0: UNKNOWN_SERVER_ERROR"). Now the session ends and the
// next one fences with a new producer: every record arrives exactly once.
func TestExactlyOnceInitProducerIDErrorRecovers(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	m, stop, fc, topic := eosLedger(t, p)
	remote := p.Source.Alias + "." + topic
	h := p.Target.Fake.Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Err: kerr.InvalidProducerEpoch},
		kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, TxnID: transactionalID(defaultGroupID(fc.Source, fc.Target), 0), Err: kerr.UnknownServerError},
	)
	produceN(t, &p.Source, topic, 0, 100)
	produceN(t, &p.Source, topic, 1, 100)
	testcluster.Eventually(t, 60*time.Second, "all 400 records committed after the failed fencing", func() (bool, string) {
		st := m.Status().Flows[0]
		n := replicatedSum(st)
		return h.Hits() == 2 && n == 400, fmt.Sprintf("fault hits %d, replicated %d, state %s %s", h.Hits(), n, st.State, st.Error)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	src := testcluster.ReadAll(t, &p.Source, topic)
	for part := int32(0); part < 2; part++ {
		if len(src[part]) != 200 {
			t.Fatalf("source partition %d holds %d records, want 200", part, len(src[part]))
		}
	}
	checkLedgerCopied(t, p, topic)
}

// TestExactlyOnceResumePointsRefusedNamesTopic: the target refuses the
// transactional writes to the resume-points topic (no WRITE ACL on
// mm2-offsets.src.internal). The flow's error said only "transaction
// aborted: TOPIC_AUTHORIZATION_FAILED", its partitions RUNNING without an
// error: it read as a refusal of the remote topic. It now names the
// resume-points topic; once the target accepts the writes, every record
// is on the target exactly once.
func TestExactlyOnceResumePointsRefusedNamesTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	m, stop, _, topic := eosLedger(t, p)
	resumeTopic := "mm2-offsets." + p.Source.Alias + ".internal"
	h := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: resumeTopic, Err: kerr.TopicAuthorizationFailed, Count: -1})
	produceN(t, &p.Source, topic, 0, 100)
	want := "transaction aborted: writing the resume points to " + resumeTopic + " on " + p.Target.Alias + ": TOPIC_AUTHORIZATION_FAILED"
	testcluster.Eventually(t, 30*time.Second, "the flow's error names the resume-points topic", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.State == StateRetrying && strings.Contains(st.Error, want), fmt.Sprintf("%s %q", st.State, st.Error)
	})
	h.Remove()
	testcluster.Eventually(t, 60*time.Second, "all 300 records committed", func() (bool, string) {
		st := m.Status().Flows[0]
		n := replicatedSum(st)
		return st.State == StateRunning && n == 300, fmt.Sprintf("%s %q, replicated %d", st.State, st.Error, n)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkLedgerCopied(t, p, topic)
}

// intervalEOSFlow creates topic name (p.Topic, 1 partition) on p's source
// and returns it with a flow replicating it exactly once on one slot,
// transactions bounded by interval, heartbeats and checkpoints off.
func intervalEOSFlow(t *testing.T, p *testcluster.Pair, name string, interval time.Duration) (string, FlowConfig) {
	t.Helper()
	topic := p.Topic(name)
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 1
	fc.TransactionBoundary, fc.TransactionInterval = TransactionBoundaryInterval, interval
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	return topic, fc
}
