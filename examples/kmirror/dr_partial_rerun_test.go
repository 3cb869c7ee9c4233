package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFailoverPartialRerunCommitsRefusedPartitionBelowSync: before the
// failover, group offset sync left g's A.orders[1] on B at 9, ahead of
// its translation 5 (the group was rewound on A; sync never moves a group
// back). The failover's commit of A.orders[1] is refused (partial); run
// again once the cause is fixed, it kept 9 on A.orders[1] as "ahead",
// taking the synced offset for the consumers' progress: the group skipped
// the 4 rewound records. A partition the failover never committed must get
// its translation; the partition it committed stays kept where consumers
// moved it.
func TestFailoverPartialRerunCommitsRefusedPartitionBelowSync(t *testing.T) {
	w := newRerunWorldN(t, 2)
	commitAt(t, w.ctx, w.cl, "g", "A.orders", map[int32]int64{1: 9}) // group offset sync, before a rewind on A
	w.b.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Topic: "A.orders", Partitions: []int32{1}, Err: kerr.TopicAuthorizationFailed, Count: 1})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	if rep := decodeFailover(t, out); code != drRefused || rep.Groups[0].Action != actionPartial {
		t.Fatalf("first failover: exit %d, groups %+v; want partial\n%s", code, rep.Groups, errOut)
	}
	commitAt(t, w.ctx, w.cl, "g", "A.orders", map[int32]int64{0: 7}) // consumers moved partition 0 on
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	if got := committedOn(t, w.ctx, w.cl, "g"); code != drOK || got[0] != 7 || got[1] != 5 {
		t.Fatalf("failover again: exit %d, g on B %v; want 0, partition 0 kept at 7, partition 1 at its translation 5\n%s\n%s", code, got, out, errOut)
	}
	// A third run keeps both where the consumers move them.
	commitAt(t, w.ctx, w.cl, "g", "A.orders", map[int32]int64{0: 8, 1: 8})
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	if got := committedOn(t, w.ctx, w.cl, "g"); code != drOK || got[0] != 8 || got[1] != 8 {
		t.Fatalf("failover a third time: exit %d, g on B %v; want both kept at 8\n%s\n%s", code, got, out, errOut)
	}
}

// TestFailbackPartialRerunCommitsRefusedPartitionBelowOld: the same for
// failback: g's offset on A's orders[1] from before the failover is 9,
// ahead of the translation 5 (g was rewound on B). The failback's commit
// of orders[1] is refused (partial); run again, it kept 9 as "ahead". It
// must commit the translation there and keep orders[0] where the
// consumers moved it at home.
func TestFailbackPartialRerunCommitsRefusedPartitionBelowOld(t *testing.T) {
	w := newBackWorld(t, 2, "g")
	commitAt(t, w.ctx, w.aCl, "g", "orders", map[int32]int64{1: 9}) // from before the failover
	w.a.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Topic: "orders", Partitions: []int32{1}, Err: kerr.TopicAuthorizationFailed, Count: 1})
	code, out, errOut, _ := runDR(t, failbackMain, "-config", w.props, "-flow", "A->B", "-groups", "g", "-wait", "2s")
	if code != drRefused || !strings.Contains(out, "group g: partial") {
		t.Fatalf("first failback: exit %d; want 1, g partial\n%s\n%s", code, out, errOut)
	}
	commitAt(t, w.ctx, w.aCl, "g", "orders", map[int32]int64{0: 7}) // consumers at home moved partition 0 on
	code, out, errOut, _ = runDR(t, failbackMain, "-config", w.props, "-flow", "A->B", "-groups", "g", "-wait", "2s")
	if got := committedOn(t, w.ctx, w.aCl, "g"); code != drOK || got[0] != 7 || got[1] != 5 {
		t.Fatalf("failback again: exit %d, g on A %v; want 0, orders[0] kept at 7, orders[1] at its translation 5\n%s\n%s", code, got, out, errOut)
	}
}
