package mirror

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestIdleNonUniformRequestsBounded (issue 22: idle cost proportional to
// what changes): a flow in a non-uniform steady state, then counted over
// an idle window: every request either cluster receives must be one of an
// idle flow's, at the rate of the interval it belongs to, and none may
// grow with the groups, the failed partitions or the group partitions
// that wait for a translation. The shape: a topic with two empty
// partitions (12 groups committed 0 on them, as Java consumers do), one
// of them committed past the replicated data on another partition; a
// topic whose partition 0 the target refuses for good (INVALID_RECORD:
// FAILED until an operator restarts it); a topic excluded by
// topics.exclude that every group also committed on; a group deleted on
// the source once checkpointed. With the flow PAUSED, the same plus the
// lag refreshed from the source's end offsets at each status publication.
//
// The bounds are counts of intervals in the window, plus one for the phase
// (kfake, one broker a cluster, so one request per broker is one request).
func TestIdleNonUniformRequestsBounded(t *testing.T) {
	t.Parallel()
	for _, paused := range []bool{false, true} {
		t.Run(map[bool]string{false: "running", true: "paused"}[paused], func(t *testing.T) {
			t.Parallel()
			testIdleNonUniform(t, paused)
		})
	}
}

func testIdleNonUniform(t *testing.T, paused bool) {
	const groups = 12
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("counts requests with kfake's control hook (KMIRROR_*_BROKERS name real brokers)")
	}
	a, f, x := p.Topic("a"), p.Topic("f"), p.Topic("x")
	scoped(t, func(tb testing.TB) {
		testcluster.CreateTopic(tb, &p.Source, a, 4, nil)
		testcluster.CreateTopic(tb, &p.Source, f, 2, nil)
		testcluster.CreateTopic(tb, &p.Source, x, 2, nil)
		produceN(tb, &p.Source, a, 0, 10)
		produceN(tb, &p.Source, a, 1, 10)
		produceN(tb, &p.Source, f, 0, 5)
		produceN(tb, &p.Source, f, 1, 5)
		produceN(tb, &p.Source, x, 0, 5)
		produceN(tb, &p.Source, x, 1, 5)
		for i := range groups {
			g := p.Group(fmt.Sprintf("g%02d", i))
			trCommit(tb, &p.Source, g, a, map[int32]int64{0: 10, 1: int64(50 * (i % 2)), 2: 0, 3: 0})
			trCommit(tb, &p.Source, g, f, map[int32]int64{0: 3, 1: 5})
			trCommit(tb, &p.Source, g, x, map[int32]int64{0: 5, 1: 5})
		}
		trCommit(tb, &p.Source, p.Group("gone"), a, map[int32]int64{0: 4, 1: 4})
	})
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "src." + f, Partitions: []int32{0}, Err: kerr.InvalidRecord, Count: -1})

	fc := idleFlow(p)
	fc.Tasks = 2
	fc.TopicsExclude = []string{".*" + x}
	src, dst := tallyRequests(p.Source.Fake), tallyRequests(p.Target.Fake)
	m, _ := runMirror(t, append(idleClusterOpts(p), WithFlow(fc))...)
	waitPartState(t, m, 1, StateFailed)
	waitCheckpointed(t, m, map[string]int{p.Group("g00"): 3, p.Group("g11"): 2, p.Group("gone"): 2})
	// g00's three checkpoints are every partition that can be translated
	// (a[0], a[1], f[1]): the last of them became translatable at or before
	// the emission that wrote them.
	translatable := time.Now()
	scoped(t, func(tb testing.TB) {
		if _, err := testcluster.Admin(tb, &p.Source).DeleteGroup(context.Background(), p.Group("gone")); err != nil {
			t.Fatal(err)
		}
	})
	if paused {
		if err := m.SetTargetState(t.Context(), m.Status().Flows[0].Name, TargetPaused, "test", ""); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "paused", func() (bool, string) {
			fs := m.Status().Flows[0]
			return fs.State == StatePaused, string(fs.State)
		})
	}
	// Past the checkpoint emitter's eager window (15 s after the last
	// partition became translatable, not after the start: measured from the
	// start, a set-up slowed by a loaded machine left the window's first
	// seconds eager, one emission a second each with a group sync round,
	// and the target's ListGroups went over its bound) and the group
	// deletion's first emission.
	time.Sleep(max(16*time.Second-time.Since(translatable), 2*fc.EmitCheckpointsInterval))
	const window = 10 * time.Second
	s, g, span := idleWindow(t, src, dst, window)

	// n is how many times something every d happens in the window, at
	// most: in the span measured, which a loaded machine's late wake-up
	// makes longer than window.
	n := func(d time.Duration) int { return int(span/d) + 1 }
	probe := n(max(fc.OffsetFlushInterval, time.Second)) // flow.probe: one broker-only Metadata per cluster
	discover := n(fc.RefreshTopicsInterval)              // Metadata of all topics on both clusters, the remote topics' configs
	emit := n(fc.EmitCheckpointsInterval)                // source: ListGroups (with its broker-only Metadata), one batched OffsetFetch
	syncRound := n(fc.SyncGroupOffsetsInterval)          // target: ListGroups (with its broker-only Metadata)
	status := n(5 * time.Second)                         // status interval: the member record; paused, the lag's end offsets
	heartbeats := n(fc.EmitHeartbeatsInterval)
	// Each replication consumer (at most Tasks), the offset-syncs
	// tailer, the status topic's consumer and the coordination topic's
	// (member) long-poll 5 s (the tailer waited 500 ms and the status
	// consumer 1 s before 2026-12-05: 20 and 10 fetches in this window).
	wantSrc := map[string]int{
		"ListGroups":         emit,
		"OffsetFetch":        emit,
		"OffsetFetch.groups": emit * groups, // "gone" no longer asked about
		"Metadata[]":         probe + emit,
		"Metadata[ALL]":      discover,
		"Fetch(wait=5000)":   (fc.Tasks + 1) * n(5*time.Second),
	}
	// Each unit's open-transaction check every openTxnCheckEvery (30 s
	// here): the high watermarks and last stable offsets, and the log
	// starts (with their topics' Metadata) of partitions that polled
	// nothing; each unit's replication producer refreshes the metadata of
	// its remote topics and the resume points' topic every
	// replicationProducerMetadataMaxAge (30 s). Rarer than the window,
	// they fall in it only when the set-up took long (a loaded machine):
	// left out, the test failed then.
	txnCheck := fc.Tasks * n(openTxnCheckEvery(&fc))
	srcTopics := "Metadata[" + strings.Join(slices.Sorted(slices.Values([]string{a, f})), ",") + "]"
	prodMeta := "Metadata[" + strings.Join(slices.Sorted(slices.Values([]string{"src." + a, "src." + f, "mm2-offsets.src.internal"})), ",") + "]"
	if !paused {
		wantSrc["ApiVersions"] = txnCheck // its connection, idle longer than kgo's 20 s, opened again
		wantSrc["ListOffsets"] = 3 * txnCheck
		wantSrc[srcTopics] = txnCheck
	}
	wantSrc["Metadata"] = wantSrc["Metadata[]"] + wantSrc["Metadata[ALL]"] + wantSrc[srcTopics]
	wantSrc["Fetch"] = wantSrc["Fetch(wait=5000)"]
	if paused {
		// No replication consumer; the lag of the paused partitions from
		// the source's end and start offsets, per publication.
		wantSrc["Fetch(wait=5000)"] = n(5 * time.Second) // the offset-syncs tailer alone
		wantSrc["Fetch"] = wantSrc["Fetch(wait=5000)"]
		wantSrc["ListOffsets"] = 2 * status
		wantSrc[srcTopics] = status
		wantSrc["Metadata"] += status
	}
	wantDst := map[string]int{
		"ListGroups":       syncRound,
		"Metadata[]":       probe + syncRound,
		"Metadata[ALL]":    discover,
		"DescribeConfigs":  discover,
		"Produce":          heartbeats + status,
		"Heartbeat":        n(DefaultHeartbeatInterval),
		"Fetch(wait=5000)": 2 * n(5*time.Second),
		"Fetch+parts":      2, // kgo's session of the status topic's consumer renewed
	}
	if !paused {
		wantDst[prodMeta] = fc.Tasks * n(replicationProducerMetadataMaxAge)
	}
	wantDst["Metadata"] = wantDst["Metadata[]"] + wantDst["Metadata[ALL]"] + wantDst[prodMeta]
	wantDst["Fetch"] = wantDst["Fetch(wait=5000)"]
	check := func(side string, got, want map[string]int) {
		for k, v := range got {
			if w, ok := want[k]; !ok || v > w {
				t.Errorf("%s: %d %s requests in an idle %v, want at most %d (%s)", side, v, k, window, w, fmtCounts(want))
			}
		}
	}
	check("source", s, wantSrc)
	check("target", g, wantDst)
	// The emissions ran: every group but the deleted one was asked about.
	if s["OffsetFetch.groups"] < 2*groups {
		t.Errorf("source: %d group offset fetches in %v, want at least %d (the emissions stopped?)", s["OffsetFetch.groups"], window, 2*groups)
	}
}
