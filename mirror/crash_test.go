package mirror

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/kread"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// Environment of the child process of TestCrashSIGKILLChildProcess.
const (
	envCrashChild   = "KMIRROR_CRASH_CHILD"
	envCrashSource  = "KMIRROR_CRASH_SOURCE"
	envCrashTarget  = "KMIRROR_CRASH_TARGET"
	envCrashFlow    = "KMIRROR_CRASH_FLOW"    // source alias, target alias, topics regex
	envCrashStatus  = "KMIRROR_CRASH_STATUS"  // file the child writes its replicated offsets to
	envCrashSession = "KMIRROR_CRASH_SESSION" // the flow group's session timeout (empty: the default)
	envCrashNoTail  = "KMIRROR_CRASH_NO_TAIL" // "1": resume from stored resume points only (DisableTailResume)
)

func TestMain(m *testing.M) {
	if os.Getenv(envCrashChild) != "" {
		os.Exit(crashChild())
	}
	if spec := os.Getenv(envMemberChild); spec != "" {
		os.Exit(memberChild(spec))
	}
	// The tests wait far more than they compute: on kfake, 8 of them run
	// side by side (4 with -race) unless -parallel says otherwise (see
	// TESTING.md).
	flag.Parse()
	testcluster.SetDefaultParallel(8, 4)
	code := m.Run()
	if code == 0 && !checkpointInvariantHeld() {
		fmt.Fprintln(os.Stderr, "FAIL: checkpoints written past the target log end after their test ended (see above)")
		code = 1
	}
	os.Exit(code)
}

// crashChild is the child process of TestCrashSIGKILLChildProcess: it runs
// the engine until SIGTERM (graceful stop) or SIGKILL (crash).
func crashChild() int {
	flow := strings.Split(os.Getenv(envCrashFlow), ",")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	session, _ := time.ParseDuration(os.Getenv(envCrashSession))
	m, err := New(
		WithCluster(ClusterConfig{Alias: flow[0], Client: []kgo.Opt{kgo.SeedBrokers(strings.Split(os.Getenv(envCrashSource), ";")...)}}),
		WithCluster(ClusterConfig{Alias: flow[1], Client: []kgo.Opt{kgo.SeedBrokers(strings.Split(os.Getenv(envCrashTarget), ";")...)}}),
		WithFlow(FlowConfig{Source: flow[0], Target: flow[1], Topics: []string{flow[2]}, DisableHeartbeatsReplication: true,
			OffsetFlushInterval: time.Second, RefreshTopicsInterval: 500 * time.Millisecond,
			SessionTimeout: session, HeartbeatInterval: session / 5, DisableTailResume: os.Getenv(envCrashNoTail) == "1"}),
	)
	if err == nil {
		go func() { // report progress: "partition=next offset" lines
			for ctx.Err() == nil {
				var b strings.Builder
				for _, ps := range m.Status().Flows[0].Partitions {
					fmt.Fprintf(&b, "%d=%d,%d\n", ps.Partition, ps.Replicated, ps.Committed)
				}
				_ = os.WriteFile(os.Getenv(envCrashStatus)+".tmp", []byte(b.String()), 0o644)
				_ = os.Rename(os.Getenv(envCrashStatus)+".tmp", os.Getenv(envCrashStatus))
				time.Sleep(50 * time.Millisecond)
			}
		}()
		err = m.Run(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 1
	}
	return 0
}

// TestCrashSIGKILLChildProcess runs the engine in a child process and
// kills it with SIGKILL mid-stream, several times, while records keep
// arriving; then a last child catches up and is stopped with SIGTERM.
// No record may be lost, and every duplicate must be a replay that starts
// at an earlier position (the resume point stored before the crash). Tail
// resume is off: this is the resume points' guarantee.
func TestCrashSIGKILLChildProcess(t *testing.T) {
	testcluster.ParallelOnFake(t) // child processes: alone on shared real brokers
	dups := crashKills(t, false)
	t.Logf("duplicates per partition with resume points only: %v", dups)
}

// TestCrashSIGKILLNoDuplicates (issue 23): the same kills mid-stream at
// least once, with resume from the target's tail (the default): every
// child resumes after the last record the previous one wrote, so the
// target holds each source record exactly once.
func TestCrashSIGKILLNoDuplicates(t *testing.T) {
	testcluster.ParallelOnFake(t)
	for part, n := range crashKills(t, true) {
		if n != 0 {
			t.Errorf("partition %d: %d duplicates after the SIGKILLs, want 0", part, n)
		}
	}
}

// crashKills runs the SIGKILL rounds and returns the duplicates per
// partition (the target checked against the source: nothing lost, every
// replay from a stored resume point).
func crashKills(t *testing.T, tail bool) []int {
	if testing.Short() {
		t.Skip("spawns child processes; skipped in -short mode")
	}
	// Each new child joins while the group still counts the member killed
	// before it, until that member's session expires: a session of 1.5 s
	// instead of the default 10 s, as in the members tests, on kfake and on
	// real brokers (internal/realkafka/kafka.sh sets
	// group.min.session.timeout.ms=500; Kafka's default minimum, 6 s,
	// refuses the members tests' sessions as well).
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	session := (1500 * time.Millisecond).String()
	orders := p.Topic("orders")
	const parts, rounds, perRound = 2, 4, 1500
	testcluster.CreateTopic(t, &p.Source, orders, parts, nil)
	producer := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()

	statusFile := t.TempDir() + "/status"
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envCrashChild+"=1",
			envCrashSource+"="+strings.Join(p.Source.Brokers, ";"),
			envCrashTarget+"="+strings.Join(p.Target.Brokers, ";"),
			envCrashFlow+"="+p.Source.Alias+","+p.Target.Alias+","+orders,
			envCrashStatus+"="+statusFile, envCrashSession+"="+session, envCrashNoTail+"="+map[bool]string{true: "0", false: "1"}[tail])
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A failing test must not leave a child running.
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	remote := p.Source.Alias + "." + orders
	// committed reads the child's status: the resume point it stored for
	// partition 0 (-1 if none yet).
	committed := func() int64 {
		b, _ := os.ReadFile(statusFile)
		var part int32
		var rep, com int64 = -1, -1
		fmt.Sscanf(string(b), "%d=%d,%d", &part, &rep, &com)
		return com
	}
	for round := 0; round < rounds; round++ {
		cmd := child()
		// Keep producing while the child runs, and kill it once it has
		// stored a resume point and keeps replicating past it: the crash
		// lands between two flushes, mid-stream.
		stopProducing := make(chan struct{})
		produced := make(chan struct{})
		go func() {
			defer close(produced)
			for i := 0; i < perRound; i++ {
				for part := int32(0); part < parts; part++ {
					producer.Produce(ctx, &kgo.Record{Topic: orders, Partition: part, Value: []byte(fmt.Sprintf("%d-%d-%d", round, part, i))}, nil)
				}
				if i%5 == 4 {
					select {
					case <-stopProducing:
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}()
		start := committed()
		testcluster.Eventually(t, 60*time.Second, "child stored a resume point", func() (bool, string) {
			c := committed()
			return c > start, fmt.Sprint(c)
		})
		time.Sleep(time.Duration(100+round*150) * time.Millisecond) // replicate past it
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		close(stopProducing)
		<-produced
		if err := producer.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Last child: catch up (it reports its own replicated offsets), then
	// a graceful SIGTERM.
	cmd := child()
	src := testcluster.ReadAll(t, &p.Source, orders)
	want := ""
	for part := int32(0); part < parts; part++ {
		last := src[part][len(src[part])-1].Offset
		want += fmt.Sprintf("%d=%d,%d\n", part, last+1, last)
	}
	testcluster.Eventually(t, 60*time.Second, "last child caught up", func() (bool, string) {
		b, _ := os.ReadFile(statusFile)
		return string(b) == want, string(b)
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child after SIGTERM: %v", err)
	}
	dst := testcluster.ReadAll(t, &p.Target, remote)
	stored := storedResumePoints(t, p, orders)
	var out []int
	for part := int32(0); part < parts; part++ {
		dups := checkReplays(t, part, src[part], dst[part], stored[part])
		t.Logf("partition %d: %d source records, %d target records, %d duplicates after %d SIGKILLs (tail resume %v)", part, len(src[part]), len(dst[part]), dups, rounds, tail)
		out = append(out, dups)
	}
	return out
}

// storedResumePoints returns every resume point ever stored for topic's
// partitions (the mm2-offsets topic is not compacted during a test).
func storedResumePoints(t *testing.T, p *testcluster.Pair, topic string) map[int32]map[int64]bool {
	t.Helper()
	recs, err := kread.ReadToEnd(context.Background(), p.Target.Opts(), connectoffsets.TopicName(p.Source.Alias), kread.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]map[int64]bool{}
	for _, r := range recs {
		_, alias, tp, part, err := connectoffsets.ParseSourceKey(r.Key)
		if err != nil || alias != p.Source.Alias || tp != topic {
			continue
		}
		off, err := connectoffsets.ParseSourceValue(r.Value)
		if err != nil {
			t.Fatalf("malformed resume point %q: %v", r.Value, err)
		}
		if out[part] == nil {
			out[part] = map[int64]bool{}
		}
		out[part][off] = true
	}
	return out
}

// checkReplays walks the target log d of one partition against the source
// log s: every record is the next source record or starts a replay, and a
// replay starts exactly one past a resume point that was stored (or at the
// start, if none was): duplicates are bounded by what was replicated after
// the last stored resume point. It returns the number of duplicates.
func checkReplays(t *testing.T, part int32, s, d []*kgo.Record, stored map[int64]bool) int {
	t.Helper()
	next, dups := 0, 0
	for i, r := range d {
		if next < len(s) && bytes.Equal(r.Value, s[next].Value) {
			next++
			continue
		}
		j := indexOf(s, r.Value)
		if j < 0 || j >= next {
			t.Fatalf("partition %d: target record %d (%q) is neither the next source record nor a replay", part, i, r.Value)
		}
		if j > 0 && !stored[s[j-1].Offset] {
			t.Errorf("partition %d: replay at source offset %d does not start one past a stored resume point", part, s[j].Offset)
		}
		dups += next - j
		next = j + 1
	}
	if next != len(s) {
		t.Fatalf("partition %d: target ends at source record %d of %d: records lost", part, next, len(s))
	}
	return dups
}
