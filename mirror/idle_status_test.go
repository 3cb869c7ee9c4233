package mirror

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestIdleMemberWritesNoPartitionStatus (issue 22: an idle member's cost
// grew with its partitions every few seconds): once its partitions are
// replicated and nothing moves, a member takes no status snapshot of its
// partitions (no resume point to store, no open-transaction check that
// changed a status) and writes no slot record, only its member record
// every interval; the cluster view still shows the slot RUNNING with its
// partitions from the record written before. A new record writes the slot
// record again, with the partition's new counts.
func TestIdleMemberWritesNoPartitionStatus(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("idlestatus")
	testcluster.CreateTopic(t, &p.Source, topic, 4, nil)
	for part := range int32(4) {
		testcluster.Produce(t, &p.Source, partRecords(topic, "a", part, 0, 5)...)
	}
	var snapshots atomic.Int64
	fc := recoveryFlow(p, topic)
	fc.OpenTransactionAfter = 400 * time.Millisecond // a check every second
	const interval = 200 * time.Millisecond
	m, _ := runMirror(t, recoveryOpts(p, fc, WithStatusInterval(interval), withUnitHooks(&unitHooks{snapshot: func() { snapshots.Add(1) }}))...)
	waitReplicated(t, m, 20)
	// The last changes published: under load the final resume point can
	// be stored (a change: Committed) well after the records are
	// replicated, so wait until a second passes without a snapshot (a
	// full run saw 1 snapshot in the window once).
	for quiet, last, limit := time.Now(), snapshots.Load(), time.Now().Add(15*time.Second); time.Since(quiet) < time.Second && time.Now().Before(limit); {
		time.Sleep(50 * time.Millisecond)
		if n := snapshots.Load(); n != last {
			last, quiet = n, time.Now()
		}
	}

	// The window starts at the status topic's end offsets, read before
	// it: a consumer reset to the end finds its end only once it has
	// loaded metadata and listed offsets, which under load came after
	// most of the window's member records (CI counted 3 of about 10).
	statusTopic := statustopic.Topic(p.Source.Alias)
	ends, err := testcluster.Admin(t, &p.Target).ListEndOffsets(t.Context(), statusTopic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("listing the end offsets of %s: %v %v", statusTopic, err, ends.Error())
	}
	from := map[string]map[int32]kgo.Offset{statusTopic: {}}
	ends.Each(func(o kadm.ListedOffset) { from[statusTopic][o.Partition] = kgo.NewOffset().At(o.Offset) })
	before, start := snapshots.Load(), time.Now()
	cl := testcluster.Client(t, &p.Target, kgo.ConsumePartitions(from))
	// The window is the member's next wantMembers member records, by their
	// timestamps: the publisher and the reader are both slowed by load
	// (CI once read 3 member records in a 2 s wall-clock window at a
	// 200 ms interval), so the window is bounded by what was written, not
	// by the reader's clock. An unchanged slot record is rewritten every
	// slotRewriteEvery intervals, so a window of span s may hold
	// 1+s/(slotRewriteEvery*interval) slot records and no more.
	const wantMembers = 5
	var memberAt, slotAt []time.Time
	limit := time.Now().Add(30 * time.Second)
	for len(memberAt) < wantMembers && time.Now().Before(limit) {
		ctx, cancel := context.WithDeadline(t.Context(), limit)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if r.Timestamp.Before(start) {
				return // written between the listed end and the window's start
			}
			switch k := string(r.Key); {
			case strings.HasPrefix(k, statustopic.MemberPrefix):
				memberAt = append(memberAt, r.Timestamp)
			case strings.HasPrefix(k, statustopic.SlotPrefix):
				slotAt = append(slotAt, r.Timestamp)
			}
		})
	}
	if len(memberAt) < wantMembers {
		t.Fatalf("idle: %d member records written in 30 s (status interval %v), want %d: the member stopped publishing", len(memberAt), interval, wantMembers)
	}
	end := memberAt[wantMembers-1]
	slots := 0
	for _, at := range slotAt {
		if !at.After(end) {
			slots++
		}
	}
	span := end.Sub(start)
	if n := snapshots.Load() - before; n != 0 {
		t.Errorf("idle: %d status snapshots taken in %v, want 0", n, time.Since(start))
	}
	if allowed := 1 + int(span/(slotRewriteEvery*interval)); slots > allowed {
		t.Errorf("idle for %v (%d member records, status interval %v): %d slot records written, want at most %d", span, wantMembers, interval, slots, allowed)
	}
	cf := m.ClusterStatus().Flows[0]
	if len(cf.Slots) != 1 || cf.Slots[0].State != StateRunning || len(cf.Slots[0].Partitions) != 4 || cf.Lag != 0 || cf.Records != 20 {
		t.Fatalf("cluster view while idle: %+v", cf)
	}

	testcluster.Produce(t, &p.Source, partRecords(topic, "b", 2, 0, 1)...)
	waitReplicated(t, m, 21)
	testcluster.Eventually(t, 30*time.Second, "the slot record written again with the new count", func() (bool, string) {
		for _, ps := range m.ClusterStatus().Flows[0].Slots[0].Partitions {
			if ps.Partition == 2 {
				return ps.Records == 6, fmt.Sprintf("partition 2: %d records", ps.Records)
			}
		}
		return false, "partition 2 not in the view"
	})
	if snapshots.Load() == before {
		t.Error("no status snapshot after a record was replicated")
	}
}

// TestChangeSig: the change signature names the flow's state, applied
// target state and the offset of its record, slots, singleton and waiting
// reason, and each partition's state in order; an equal status gives an
// equal signature, and a changed partition state or the same target state
// applied again from a later record a different one.
func TestChangeSig(t *testing.T) {
	fs := FlowStatus{State: StateRunning, AppliedState: TargetRunning, appliedOffset: 3, Member: MemberStatus{Slots: []int32{0, 2}, Singleton: true},
		Partitions: []PartitionStatus{{Topic: "t", Partition: 0, State: StateRunning}, {Topic: "u", Partition: 11, State: StateFailed}}}
	want := "RUNNING|RUNNING@3|[0 2]|true||t/0=RUNNING;u/11=FAILED;"
	if got := changeSig(fs); got != want {
		t.Fatalf("changeSig = %q, want %q", got, want)
	}
	fs.appliedOffset = 4
	if got := changeSig(fs); got == want {
		t.Error("the same target state applied from a later record gives the same signature")
	}
	fs.appliedOffset = 3
	fs.Partitions[1].State = StateRetrying
	if got := changeSig(fs); got == want {
		t.Fatal("a changed partition state gives the same signature")
	}
}
