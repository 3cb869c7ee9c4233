package interop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestMM2ToKmirrorClient runs Apache MM2 4.x on the real clusters and reads
// what it wrote with kmirror: remoteclusterutils.TranslateOffsets must give
// exactly what Java's RemoteClusterUtils.translateOffsets gives for the same
// groups, and kmirror's codecs must decode MM2's checkpoints, offset syncs
// and heartbeats to the same values as MM2's own classes (docs/mm2-compat.md §2, 8.3).
func TestMM2ToKmirrorClient(t *testing.T) {
	e := setup(t, "ia", "ib")
	p := e.p
	src, dst := p.Source.Alias, p.Target.Alias
	topic := p.Topic("orders")
	remote := src + "." + topic
	billing, audit := p.Group("billing"), p.Group("audit")

	// Partitions of different lengths so that each group offset at a
	// partition's end translates to a known value (offset.lag.max=0 gives a
	// sync per record; remote offsets equal source offsets on a new topic).
	testcluster.CreateTopic(t, &p.Source, topic, 3, nil)
	produceN(t, &p.Source, topic, map[int32]int{0: 10, 1: 25, 2: 40})
	commit(t, &p.Source, billing, topic, map[int32]int64{0: 10, 1: 25, 2: 40})
	// audit sits inside the history: its translation depends on the syncs
	// MM2's OffsetSyncStore kept; Java and kmirror must still agree.
	commit(t, &p.Source, audit, topic, map[int32]int64{0: 5, 2: 17})
	// MM2 replicates the source's "heartbeats" topic (listed in topics) to
	// src.heartbeats, which topology discovery needs (docs/mm2-compat.md §7).
	ensureTopic(t, &p.Source, "heartbeats")

	start := time.Now()
	m := e.startMM2(t, "mm2", mm2Properties(p, []string{topic, "heartbeats"}, []string{billing, audit}))
	t.Logf("MM2 ready after %v", time.Since(start).Round(time.Millisecond))

	rc := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target))
	waitCheckpoints := func(want map[string]map[int32]int64) {
		t.Helper()
		testcluster.Eventually(t, 60*time.Second, "MM2 checkpoints", func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cps, err := rc.Checkpoints(ctx, src)
			if err != nil {
				return false, err.Error()
			}
			got := map[string]map[int32]int64{}
			for g, list := range cps.Groups {
				for _, c := range list {
					if c.Topic == remote {
						if got[g] == nil {
							got[g] = map[int32]int64{}
						}
						got[g][c.Partition] = c.DownstreamOffset
					}
				}
			}
			for g, parts := range want {
				for part, off := range parts {
					if got[g][part] != off {
						return false, fmt.Sprintf("%v", got)
					}
				}
			}
			return true, ""
		})
	}
	waitCheckpoints(map[string]map[int32]int64{billing: {0: 10, 1: 25, 2: 40}})
	t.Logf("first checkpoints after %v", time.Since(start).Round(time.Millisecond))

	// The group moves on: MM2 emits a newer checkpoint for partition 0 and
	// both readers must take the last one in log order.
	produceN(t, &p.Source, topic, map[int32]int{0: 20})
	commit(t, &p.Source, billing, topic, map[int32]int64{0: 30})
	waitCheckpoints(map[string]map[int32]int64{billing: {0: 30, 1: 25, 2: 40}})
	t.Logf("second checkpoints after %v", time.Since(start).Round(time.Millisecond))
	// Stopped, MM2 writes nothing more: both sides read the same topics.
	m.stop(t)
	topBefore := goTopology(t, &p.Target, func(s string) bool { return strings.Contains(s, src) || strings.Contains(s, dst) }, src, dst)

	pol, _ := policy.NewDefault()
	checkpoints := pol.CheckpointsTopic(src)
	offsetSyncs := pol.OffsetSyncsTopic(dst)
	out := e.java(t,
		javaCall{"Translate", []string{strings.Join(p.Target.Brokers, ","), src, "20000", billing, audit}},
		javaCall{"Decode", []string{strings.Join(p.Target.Brokers, ","), "checkpoint:" + checkpoints, "heartbeat:heartbeats"}},
		javaCall{"Decode", []string{strings.Join(p.Source.Brokers, ","), "offsetsync:" + offsetSyncs}},
		javaCall{"Topology", []string{strings.Join(p.Target.Brokers, ","), src, dst}},
	)
	t.Logf("Java programs done after %v", time.Since(start).Round(time.Millisecond))

	// Translation: exactly Java's answer, and the known values.
	javaTr := parseTranslate(t, out[0])
	goTr := goTranslate(t, &p.Target, src, billing, audit)
	if diff := cmp.Diff(javaTr, goTr); diff != "" {
		t.Errorf("kmirror TranslateOffsets differs from Java RemoteClusterUtils.translateOffsets (-java +kmirror):\n%s", diff)
	}
	if diff := cmp.Diff(map[int32]int64{0: 30, 1: 25, 2: 40}, goTr[billing][remote]); diff != "" {
		t.Errorf("billing translated offsets (-want +got):\n%s", diff)
	}
	for part, committed := range map[int32]int64{0: 5, 2: 17} {
		if got, ok := goTr[audit][remote][part]; ok && (got < 0 || got > committed) {
			t.Errorf("audit partition %d: translated %d, want within [0, %d] (at-least-once)", part, got, committed)
		}
	}
	t.Logf("translated: %v", goTr)

	// Records: MM2's classes and kmirror's codecs agree record by record.
	javaDec := parseDecode(t, append(out[1], out[2]...))
	cps := compareDecodes(t, checkpoints, javaDec[checkpoints], goDecode(t, &p.Target, checkpoints, "checkpoint"))
	if len(cps) < 4 {
		t.Errorf("%s: %d checkpoints decoded by both, want at least 4 (billing x3 + the move)", checkpoints, len(cps))
	}
	for _, d := range cps {
		if c := d.Checkpoint; c.Topic != remote || (c.Group != billing && c.Group != audit) || c.DownstreamOffset > c.UpstreamOffset {
			t.Errorf("unexpected MM2 checkpoint %+v", *c)
		}
	}
	syncs := compareDecodes(t, offsetSyncs, javaDec[offsetSyncs], goDecode(t, &p.Source, offsetSyncs, "offsetsync"))
	last := map[int32]int64{}
	for _, d := range syncs {
		s := d.Sync
		if s.Topic == "heartbeats" {
			continue // the replicated heartbeats topic has its syncs too
		}
		if s.Topic != topic || s.UpstreamOffset != s.DownstreamOffset {
			t.Errorf("unexpected MM2 offset sync %+v", *s)
		}
		last[s.Partition] = max(last[s.Partition], s.UpstreamOffset)
	}
	if diff := cmp.Diff(map[int32]int64{0: 29, 1: 24, 2: 39}, last); diff != "" {
		t.Errorf("highest synced upstream offset per partition (-want +got):\n%s", diff)
	}
	hbs := compareDecodes(t, "heartbeats", javaDec["heartbeats"], goDecode(t, &p.Target, "heartbeats", "heartbeat"))
	var ours int
	for _, d := range hbs {
		if h := d.Heartbeat; h.SourceClusterAlias == src {
			ours++
			if h.TargetClusterAlias != dst || h.Timestamp < start.Add(-time.Minute).UnixMilli() || h.Timestamp > time.Now().UnixMilli() {
				t.Errorf("unexpected MM2 heartbeat %+v", *h)
			}
		}
	}
	if ours == 0 {
		t.Errorf("no heartbeat from %s->%s decoded by both sides (of %d heartbeats)", src, dst, len(hbs))
	}
	t.Logf("decoded by both: %d checkpoints, %d offset syncs, %d heartbeats (%d from this flow)", len(cps), len(syncs), len(hbs), ours)

	// Topology: MirrorClient and kmirror's Client see the same, from the
	// topics MM2 created.
	keep := func(s string) bool { return strings.Contains(s, src) || strings.Contains(s, dst) }
	got := compareTopology(t, &p.Target, out[3], topBefore, keep, src, dst)
	want := topology{Hops: map[string]int{src: 1, dst: -1}, Upstream: []string{src},
		Heartbeats: []string{src + ".heartbeats"}, Checkpoints: []string{checkpoints}}
	if diff := cmp.Diff(want, got.restrict(src, dst)); diff != "" {
		t.Errorf("topology (-want +got):\n%s", diff)
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}
