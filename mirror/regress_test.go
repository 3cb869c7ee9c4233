package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// Regression tests for the faults an adversarial review found.

func valueRecords(topic, prefix string, from, to int) []*kgo.Record {
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s%d", prefix, i))})
	}
	return rs
}

// missingValues returns how many of prefix<from..to) are not on the target
// topic and how many records there are more than once.
func missingValues(t *testing.T, p *testcluster.Pair, remote string, want []*kgo.Record) (lost, dups int) {
	t.Helper()
	cnt := map[string]int{}
	for _, r := range testcluster.ReadAll(t, &p.Target, remote)[0] {
		cnt[string(r.Value)]++
	}
	for _, r := range want {
		switch c := cnt[string(r.Value)]; {
		case c == 0:
			lost++
		case c > 1:
			dups += c - 1
		}
	}
	return lost, dups
}

// TestSlowTargetStillLoadsResumePoints: a target that answers the
// resume-point topic's ListOffsets slowly (700 ms, a remote region) must
// not make the engine start without its resume points (which replayed
// everything, or with StartLatest skipped what arrived while it was down).
func TestSlowTargetStillLoadsResumePoints(t *testing.T) {
	t.Parallel()
	for _, latest := range []bool{false, true} {
		t.Run(fmt.Sprint("latest=", latest), func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			if p.Target.Fake == nil {
				t.Skip("needs kfake request control: runs on the embedded backend, not with KMIRROR_*_BROKERS")
			}
			orders := p.Topic("orders")
			testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
			all := valueRecords(orders, "a", 0, 100)
			testcluster.Produce(t, &p.Source, all...)
			fc := fastFlow(p)
			m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
			waitReplicated(t, m, 100)
			stop()
			more := valueRecords(orders, "b", 0, 50)
			testcluster.Produce(t, &p.Source, more...)
			all = append(all, more...)
			rtopic := connectoffsets.TopicName(p.Source.Alias)
			p.Target.Fake.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
				for _, tt := range req.(*kmsg.ListOffsetsRequest).Topics {
					if tt.Topic == rtopic {
						p.Target.Fake.SleepControl(func() { time.Sleep(700 * time.Millisecond) })
					}
				}
				return nil, nil, false
			})
			if latest {
				fc.StartOffset = StartLatest
			}
			m, stop = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
			testcluster.Eventually(t, 30*time.Second, "caught up", func() (bool, string) {
				ps := m.Status().Flows[0].Partitions
				return len(ps) == 1 && ps[0].Replicated == 150, fmt.Sprintf("%+v", ps)
			})
			stop()
			if lost, dups := missingValues(t, p, p.Source.Alias+"."+orders, all); lost != 0 || dups != 0 {
				t.Errorf("graceful restart against a slow target: %d lost, %d duplicates; want 0 and 0", lost, dups)
			}
		})
	}
}

// TestRecreatedSourceTopicWhileRunningAndDown: a source topic deleted and
// re-created is reported as a gap, then every record of the new topic is
// replicated, while kmirror runs and across a restart (the resume point
// follows the new topic's offsets down).
func TestRecreatedSourceTopicWhileRunningAndDown(t *testing.T) {
	t.Parallel()
	for _, whileRunning := range []bool{true, false} {
		t.Run(fmt.Sprint("running=", whileRunning), func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			orders := p.Topic("orders")
			remote := p.Source.Alias + "." + orders
			testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
			testcluster.Produce(t, &p.Source, valueRecords(orders, "old", 0, 100)...)
			m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
			waitReplicated(t, m, 100)
			testcluster.Eventually(t, 10*time.Second, "resume point stored", func() (bool, string) {
				ps := m.Status().Flows[0].Partitions
				return len(ps) == 1 && ps[0].Committed == 99, fmt.Sprintf("%+v", ps)
			})
			if !whileRunning {
				stop()
			}
			if _, err := testcluster.Admin(t, &p.Source).DeleteTopic(context.Background(), orders); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
			newer := valueRecords(orders, "new", 0, 50)
			testcluster.Produce(t, &p.Source, newer...)
			if !whileRunning {
				m, stop = runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
			}
			testcluster.Eventually(t, 30*time.Second, "new topic replicated and stored", func() (bool, string) {
				ps := m.Status().Flows[0].Partitions
				return len(ps) == 1 && ps[0].Replicated == 50 && ps[0].Committed == 49, fmt.Sprintf("%+v", ps)
			})
			if gaps := m.Status().Flows[0].Gaps; len(gaps) == 0 {
				t.Errorf("no gap reported for the re-created topic")
			}
			stop()
			more := valueRecords(orders, "new", 50, 200)
			testcluster.Produce(t, &p.Source, more...)
			m2, stop2 := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
			testcluster.Eventually(t, 30*time.Second, "caught up after restart", func() (bool, string) {
				ps := m2.Status().Flows[0].Partitions
				return len(ps) == 1 && ps[0].Replicated == 200, fmt.Sprintf("%+v", ps)
			})
			stop2()
			if lost, _ := missingValues(t, p, remote, append(newer, more...)); lost != 0 {
				t.Errorf("%d of 200 records of the re-created topic never reached the target", lost)
			}
		})
	}
}

// TestTransactionalSourceLagReachesZero: transaction markers and aborted
// records occupy source offsets; once everything is replicated, the lag is
// 0 (it stayed at the number of markers/aborted records).
func TestTransactionalSourceLagReachesZero(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	txn := p.Topic("txn")
	testcluster.CreateTopic(t, &p.Source, txn, 1, nil)
	tcl := testcluster.Client(t, &p.Source, kgo.TransactionalID(p.Topic("tx1")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	committedRecs := 0
	for round := 0; round < 4; round++ {
		if err := tcl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			tcl.Produce(ctx, &kgo.Record{Topic: txn, Value: []byte(fmt.Sprintf("r%d-%d", round, i))}, nil)
		}
		if err := tcl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		commit := round%2 == 0
		if commit {
			committedRecs += 5
		}
		if err := tcl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	fc := fastFlow(p)
	fc.Isolation = ReadCommitted
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "lag 0 past markers and aborted records", func() (bool, string) {
		ps := m.Status().Flows[0].Partitions
		return len(ps) == 1 && ps[0].Records == int64(committedRecs) && ps[0].Lag == 0 && ps[0].SourceEnd > int64(committedRecs),
			fmt.Sprintf("%+v", ps)
	})
	if got := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+txn)[0]; len(got) != committedRecs {
		t.Errorf("target has %d records, want the %d committed ones", len(got), committedRecs)
	}
}

// TestShutdownBoundedWithDeadTarget: the target dies while heartbeats,
// checkpoints and replication are writing to it; a bounded Shutdown
// returns (the heartbeat producer used to wait forever for a batch sent to
// the dead broker).
func TestShutdownBoundedWithDeadTarget(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("kills the target cluster: runs on the embedded backend, not with KMIRROR_*_BROKERS")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	testcluster.Produce(t, &p.Source, workload(orders, 2, 100, time.Now())...)
	fc := fastFlow(p)
	fc.SyncGroupOffsets = true
	m, err := newMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	waitReplicated(t, m, 200)
	p.Target.Fake.Close()
	testcluster.Produce(t, &p.Source, workload(orders, 2, 500, time.Now())...)
	time.Sleep(time.Second)
	// With the target dead nothing can be flushed: the bound ends the
	// graceful part and Shutdown abandons the rest (what the test is
	// about), however long the bound.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m.Shutdown(ctx)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60 s of a 1 s Shutdown with a dead target")
	}
}

// TestShutdownBoundedWithSilentTarget (regression): the target stops
// answering (every request held, as a blackholed or frozen cluster does)
// while records, heartbeats, checkpoints and group offsets flow; a
// Shutdown bounded by 1 s returns within the liveness bound. The member's
// Close waited for its LeaveGroup, sent on the client's own context, until
// kgo's read timeout ended it (70 s with kgo's default
// request.timeout overhead of 10 s, here 10 minutes).
func TestShutdownBoundedWithSilentTarget(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("holds the target's requests with kfake's control hooks: runs on the embedded backend, not with KMIRROR_*_BROKERS")
	}
	orders, g := p.Topic("orders"), p.Group("g")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	testcluster.Produce(t, &p.Source, workload(orders, 2, 100, time.Now())...)
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 10, 1: 20})
	fc := fastFlow(p)
	fc.SyncGroupOffsets = true
	fc.AdminTimeout = 10 * time.Minute
	fc.RebalanceTimeout = 10 * time.Minute
	m, err := newMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: append(p.Target.Opts(), kgo.RequestTimeoutOverhead(10*time.Minute))}),
		WithFlow(fc))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	waitReplicated(t, m, 200)
	// From now on every request to the target is held, unanswered, until
	// the test ends.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the clusters close (cleanups run last first)
	dst := p.Target.Fake
	dst.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		dst.SleepControl(func() { <-release })
		return nil, nil, false
	})
	testcluster.Produce(t, &p.Source, workload(orders, 2, 100, time.Now())...)
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	go m.Shutdown(ctx) // waits for Run to return
	select {
	case <-done:
		t.Logf("Run returned %v after a 1 s Shutdown with the target silent", time.Since(start).Round(time.Millisecond))
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60 s of a 1 s Shutdown with the target silent (request timeout overhead, rebalance and admin timeouts 10 minutes)")
	}
}
