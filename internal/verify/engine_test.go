package verify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/verify"
	"github.com/kmirror/kmirror/mirror"
)

// startEngine runs a kmirror engine for p's flow and returns a function
// that stops it gracefully.
func startEngine(t *testing.T, p *testcluster.Pair) func() {
	t.Helper()
	m, err := mirror.New(
		mirror.WithCluster(mirror.ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
		mirror.WithFlow(mirror.FlowConfig{
			Source: p.Source.Alias, Target: p.Target.Alias,
			Topics:                       []string{p.TopicsPattern()},
			DisableHeartbeatsReplication: true,
			RefreshTopicsInterval:        200 * time.Millisecond,
			OffsetFlushInterval:          100 * time.Millisecond,
			EmitCheckpointsInterval:      time.Second,
			AdminTimeout:                 10 * time.Second,
		}),
	)
	if err != nil {
		t.Fatalf("mirror.New: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- m.Run(context.Background()) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		m.Close()
		if err := <-errc; err != nil {
			t.Errorf("mirror Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// workload returns n records per partition with keys, null keys,
// tombstones, headers (one with a null value) and explicit timestamps.
func workload(topic string, partitions int32, from, n int, base time.Time) []*kgo.Record {
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		for p := range partitions {
			r := &kgo.Record{Topic: topic, Partition: p, Timestamp: base.Add(time.Duration(i) * time.Millisecond),
				Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(fmt.Sprintf("%s/%d/%d", topic, p, i))}
			switch i % 5 {
			case 1:
				r.Value = nil
			case 2:
				r.Key = nil
				r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte{0, 1, 2}}, {Key: "empty", Value: nil}}
			}
			rs = append(rs, r)
		}
	}
	return rs
}

// TestEngineCopyVerifies runs the real engine, stops it, produces more,
// restarts it, and verifies the remote topic: nothing missing, altered or
// out of order.
func TestEngineCopyVerifies(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("events")
	testcluster.CreateTopic(t, &p.Source, topic, 3, nil)
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)

	testcluster.Produce(t, &p.Source, workload(topic, 3, 0, 200, base)...)
	stop := startEngine(t, p)
	cfg := verify.Config{
		Source:  verify.Cluster{Alias: p.Source.Alias, Opts: p.Source.Opts()},
		Target:  verify.Cluster{Alias: p.Target.Alias, Opts: p.Target.Opts()},
		Topics:  []string{topic},
		CatchUp: 30 * time.Second, // the engine creates the remote topic and copies meanwhile
	}
	// The remote topic appears once the engine created it.
	testcluster.Eventually(t, 30*time.Second, "remote topic created", func() (bool, string) {
		recs, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), p.Source.Alias+"."+topic, true)
		return err == nil && len(recs) > 0, fmt.Sprint(err)
	})
	rep, err := verify.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mismatch() || rep.Incomplete() || rep.Totals.Compared != 600 || rep.Totals.Matched != 600 {
		t.Fatalf("first pass: %s; totals %+v", rep.Verdict(), rep.Totals)
	}

	stop()
	testcluster.Produce(t, &p.Source, workload(topic, 3, 200, 100, base)...)
	startEngine(t, p)
	rep, err = verify.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mismatch() || rep.Incomplete() || rep.Totals.Compared != 900 || rep.Totals.Matched != 900 || rep.Totals.Missing != 0 {
		t.Fatalf("after a restart: %s; totals %+v", rep.Verdict(), rep.Totals)
	}
	// The engine stamps every copy with its source offset: per partition
	// the mapping is one run, source 0-299 at target 0-(copies-1)
	// (duplicates of a restart extend no run: they start one), and no
	// stamp disagrees with the content match.
	if rep.Totals.StampDisagreements != 0 {
		t.Errorf("stamp disagreements: %d", rep.Totals.StampDisagreements)
	}
	for _, pr := range rep.Topics[0].Partitions {
		st := pr.Stamps
		if st == nil || st.Stamped != pr.TargetRecords || st.Unstamped != 0 || len(st.Runs) == 0 ||
			st.Runs[0].SourceFrom != 0 || st.Runs[0].TargetFrom != 0 {
			t.Errorf("partition %d: stamps %+v, want every one of %d copies stamped from source 0 at target 0", pr.Partition, st, pr.TargetRecords)
			continue
		}
		if pr.Duplicated == 0 && (len(st.Runs) != 1 || st.Runs[0].SourceTo != 299 || st.Runs[0].TargetTo != 299 || st.Runs[0].Records != 300) {
			t.Errorf("partition %d without duplicates: runs %+v, want source 0-299 -> target 0-299", pr.Partition, st.Runs)
		}
	}
	t.Logf("%s", rep.Verdict())
}
