package mirror

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// goroutinesIn returns the dumps of the goroutines running code of this
// package (not its tests) whose ids are not in skip.
func goroutinesIn(skip map[string]bool) (ids map[string]bool, leaked []string) {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	ids = map[string]bool{}
	head := regexp.MustCompile(`^goroutine (\d+) `)
	for _, g := range strings.Split(buf.String(), "\n\n") {
		m := head.FindStringSubmatch(g)
		if m == nil {
			continue
		}
		ids[m[1]] = true
		if skip == nil || skip[m[1]] {
			continue
		}
		ours := false
		for _, line := range strings.Split(g, "\n") {
			if strings.Contains(line, "kmirror/kmirror/mirror.") && !strings.Contains(line, "_test.go") &&
				!strings.Contains(line, "mirror.Test") && !strings.Contains(line, "mirror.goroutinesIn") {
				ours = true
			}
		}
		if ours {
			leaked = append(leaked, g)
		}
	}
	return ids, leaked
}

// TestMembersChurnExactlyOnceNoLeak: three members in exactly-once mode
// started at the same instant while records stream in; one is closed
// while its partitions are in flight, one has its context cancelled
// while the group rebalances for a member just started, and two more
// join. Every record reaches the target exactly once (read_committed),
// ClusterStatus reports each partition once, and no goroutine of the
// package outlives Close.
func TestMembersChurnExactlyOnceNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("a long churn; skipped in -short mode")
	}
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	topic := p.Topic("churn")
	remote := p.Source.Alias + "." + topic
	const parts, tasks, total = 6, 4, 12000
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = tasks
	fc.ExactlyOnce = true
	fc.DisableCheckpoints = true
	fc.SessionTimeout, fc.HeartbeatInterval, fc.RebalanceTimeout = 3*time.Second, 300*time.Millisecond, 20*time.Second
	base, _ := goroutinesIn(nil)

	type runner struct {
		m      *Mirror
		cancel context.CancelFunc
		done   chan error
	}
	start := func(w string) *runner {
		m, err := newMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID(w), WithStatusInterval(200*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &runner{m: m, cancel: cancel, done: make(chan error, 1)}
		go func() { r.done <- m.Run(ctx) }()
		return r
	}
	stop := func(r *runner, how string) {
		if how == "close" {
			r.m.Close()
		} else {
			r.cancel()
		}
		if err := <-r.done; err != nil && !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("Run after %s: %v", how, err)
		}
		r.cancel()
	}
	// Three at the same instant.
	rs := make([]*runner, 3)
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() { rs[i] = start(fmt.Sprintf("w%d", i)) })
	}
	wg.Wait()
	prod := produceSteadily(t, &p.Source, topic, parts, total, 3000)
	progress := func(n int64) {
		testcluster.Eventually(t, 60*time.Second, fmt.Sprintf("%d records on the target", n), func() (bool, string) {
			got := targetEnd(t, &p.Target, remote)
			return got >= n, fmt.Sprint(got)
		})
	}
	progress(1000)
	stop(rs[0], "close") // closed mid-copy
	rs[0] = start("w3")
	progress(3000)
	rs = append(rs, start("w4"))
	stop(rs[1], "cancel") // context cancelled while the group rebalances for w4
	rs[1] = nil
	<-prod.done
	src := testcluster.ReadAll(t, &p.Source, topic)
	testcluster.Eventually(t, 120*time.Second, "every record replicated, each partition reported once", func() (bool, string) {
		for _, r := range rs {
			if r == nil {
				continue
			}
			cf := r.m.ClusterStatus().Flows[0]
			seen := map[int32]int{}
			for _, s := range cf.Slots {
				for _, ps := range s.Partitions {
					seen[ps.Partition]++
					if s.WorkerID == "" || ps.Lag != 0 {
						return false, fmt.Sprintf("slot %d on %q: %s[%d] lag %d %s", s.Slot, s.WorkerID, ps.Topic, ps.Partition, ps.Lag, ps.State)
					}
				}
			}
			for pt := range int32(parts) {
				if seen[pt] != 1 {
					return false, fmt.Sprintf("partition %d reported %d times: %+v", pt, seen[pt], cf.Slots)
				}
			}
			if cf.Lag != 0 || cf.LagUnknown {
				return false, fmt.Sprintf("lag %d unknown %v", cf.Lag, cf.LagUnknown)
			}
		}
		return true, ""
	})
	for _, r := range rs {
		if r != nil {
			stop(r, "close")
		}
	}
	dst := readSettled(t, &p.Target, remote, true, 60*time.Second)
	n := 0
	for pt := range int32(parts) {
		if d := exactCopy(t, pt, src[pt], dst[pt]); d != 0 {
			t.Errorf("partition %d: %d duplicates, want 0", pt, d)
		}
		n += len(src[pt])
	}
	if n != total {
		t.Fatalf("source holds %d records, want %d", n, total)
	}
	var leaked []string
	testcluster.Eventually(t, 20*time.Second, "no goroutine of the package left after Close", func() (bool, string) {
		_, leaked = goroutinesIn(base)
		return len(leaked) == 0, fmt.Sprint(len(leaked))
	})
	_ = leaked
}

// TestMembersStartStopStormNoLeak: members started and stopped at short
// random instants (during their start, their join, a rebalance), by Close,
// by cancelling Run's context, or both at once, while one member keeps
// running. Every record arrives, and no goroutine outlives Close.
func TestMembersStartStopStormNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("a long churn; skipped in -short mode")
	}
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	topic := p.Topic("storm")
	remote := p.Source.Alias + "." + topic
	const parts, total = 4, 4000
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 3
	fc.DisableCheckpoints = true
	fc.SessionTimeout, fc.HeartbeatInterval, fc.RebalanceTimeout = 3*time.Second, 300*time.Millisecond, 20*time.Second
	base, _ := goroutinesIn(nil)
	rng := newRand(t)
	run := func(w string, ctx context.Context) (*Mirror, chan error) {
		m, err := newMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID(w))...)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		return m, done
	}
	keep, keepDone := run("keep", context.Background())
	prod := produceSteadily(t, &p.Source, topic, parts, total, 2000)
	for i := 0; i < 12; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		m, done := run(fmt.Sprintf("s%d", i), ctx)
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		switch i % 3 {
		case 0:
			m.Close()
		case 1:
			cancel()
		default:
			go cancel()
			m.Close()
		}
		<-done
		cancel()
	}
	<-prod.done
	testcluster.Eventually(t, 60*time.Second, "every record replicated", func() (bool, string) {
		st := keep.Status().Flows[0]
		got := targetEnd(t, &p.Target, remote)
		return got >= total && st.Lag == 0, fmt.Sprintf("target %d, %s lag %d", got, st.State, st.Lag)
	})
	keep.Close()
	if err := <-keepDone; err != nil {
		t.Errorf("Run: %v", err)
	}
	src := testcluster.ReadAll(t, &p.Source, topic)
	dst := readSettled(t, &p.Target, remote, true, 60*time.Second)
	dups := 0
	for pt := range int32(parts) {
		dups += everyRecordCopied(t, pt, src[pt], dst[pt])
	}
	t.Logf("%d duplicates", dups)
	var leaked []string
	testcluster.Eventually(t, 20*time.Second, "no goroutine of the package left after Close", func() (bool, string) {
		_, leaked = goroutinesIn(base)
		return len(leaked) == 0, fmt.Sprint(len(leaked), leaked)
	})
}

// TestPauseDuringRebalanceExactlyOnce: exactly once, records streaming,
// a pause written through one member while a third member joins (the
// group rebalancing) and a fourth leaves: once every live member applied
// PAUSED, nothing more reaches the target; after the resume every record
// arrives exactly once.
func TestPauseDuringRebalanceExactlyOnce(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	topic := p.Topic("pausereb")
	remote := p.Source.Alias + "." + topic
	const parts, total = 6, 6000
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 4
	fc.ExactlyOnce = true
	fc.DisableCheckpoints = true
	fc.SessionTimeout, fc.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
	start := func(w string) (*Mirror, func() error) {
		return runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID(w), WithStatusInterval(200*time.Millisecond))...)
	}
	m1, _ := start("w1")
	m2, _ := start("w2")
	m4, stop4 := start("w4")
	prod := produceSteadily(t, &p.Source, topic, parts, total, 2000)
	testcluster.Eventually(t, 60*time.Second, "records flowing", func() (bool, string) {
		n := targetEnd(t, &p.Target, remote)
		return n >= 500, fmt.Sprint(n)
	})
	flow := fc.Name()
	var m3 *Mirror
	var wg sync.WaitGroup
	wg.Go(func() { m3, _ = start("w3") })
	wg.Go(func() { _ = stop4() })
	if err := m2.SetTargetState(context.Background(), flow, TargetPaused, "", "attack"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	_ = m4
	live := []*Mirror{m1, m2, m3}
	testcluster.Eventually(t, 30*time.Second, "every live member PAUSED", func() (bool, string) {
		for _, m := range live {
			fs := m.Status().Flows[0]
			if fs.AppliedState != TargetPaused {
				return false, memberStates(live...)
			}
		}
		return true, ""
	})
	<-prod.done
	testcluster.Eventually(t, 30*time.Second, "ClusterStatus: every partition once, PAUSED, on a live member", func() (bool, string) {
		for i, m := range live {
			cf := m.ClusterStatus().Flows[0]
			seen := map[int32]int{}
			for _, s := range cf.Slots {
				for _, ps := range s.Partitions {
					seen[ps.Partition]++
					if s.WorkerID == "" || ps.State != StatePaused || s.State != StatePaused {
						return false, fmt.Sprintf("m%d: slot %d on %q %s: partition %d %s", i+1, s.Slot, s.WorkerID, s.State, ps.Partition, ps.State)
					}
				}
			}
			for pt := range int32(parts) {
				if seen[pt] != 1 {
					return false, fmt.Sprintf("m%d: partition %d reported %d times", i+1, pt, seen[pt])
				}
			}
			if cf.State != StatePaused || len(cf.Members) != 3 {
				return false, fmt.Sprintf("m%d: flow %s, %d members", i+1, cf.State, len(cf.Members))
			}
		}
		return true, ""
	})
	paused := targetEnd(t, &p.Target, remote)
	time.Sleep(2 * time.Second)
	if n := targetEnd(t, &p.Target, remote); n != paused {
		t.Fatalf("the target's end moved from %d to %d while every member was PAUSED", paused, n)
	}
	if err := m1.SetTargetState(context.Background(), flow, TargetRunning, "", "attack over"); err != nil {
		t.Fatal(err)
	}
	src := testcluster.ReadAll(t, &p.Source, topic)
	testcluster.Eventually(t, 60*time.Second, "every record replicated", func() (bool, string) {
		var lag int64
		for _, m := range live {
			fs := m.Status().Flows[0]
			if fs.AppliedState != TargetRunning {
				return false, memberStates(live...)
			}
			lag += fs.Lag
		}
		got, err := testcluster.ReadTopic(t.Context(), p.Target.Opts(), remote, true)
		if err != nil {
			return false, err.Error()
		}
		for pt := range int32(parts) {
			if len(got[pt]) < len(src[pt]) {
				return false, fmt.Sprintf("partition %d: %d of %d; lag %d", pt, len(got[pt]), len(src[pt]), lag)
			}
		}
		return lag == 0, fmt.Sprint("lag ", lag)
	})
	got := readSettled(t, &p.Target, remote, true, 60*time.Second)
	for pt := range int32(parts) {
		if d := exactCopy(t, pt, src[pt], got[pt]); d != 0 {
			t.Errorf("partition %d: %d duplicates, want 0", pt, d)
		}
	}
}
