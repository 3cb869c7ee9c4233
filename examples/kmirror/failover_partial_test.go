package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// TestFailoverPartialCommitRecorded: B's broker refuses the commit of one
// partition of a group (an OffsetCommit answers per partition: a topic's
// authorization, metadata too large) and accepts the other. The report
// said "commit refused" for the whole group, and the DR record left the
// group out, though one partition was committed: once its consumers moved
// that partition on, a run again moved it back (the group read as never
// committed by failover). Now the group is "partial", the refused
// partition carries the broker's error, the DR record names the group, and
// the run again commits the refused partition and keeps the other where
// the consumers moved it.
func TestFailoverPartialCommitRecorded(t *testing.T) {
	w := newRerunWorldN(t, 2)
	followMember(t, w.addrs, "m1")
	w.b.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Topic: "A.orders", Partitions: []int32{1}, Err: kerr.TopicAuthorizationFailed, Count: 1})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	rep := decodeFailover(t, out)
	committed := func() map[int32]int64 {
		t.Helper()
		offs, err := kadm.NewClient(w.cl).FetchOffsets(w.ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		got := map[int32]int64{}
		offs.Each(func(o kadm.OffsetResponse) { got[o.Partition] = o.At })
		return got
	}
	if got := committed(); code != drRefused || len(rep.Groups) != 1 || rep.Groups[0].Action != actionPartial || got[0] != 5 || len(got) != 1 {
		t.Fatalf("failover with partition 1's commit refused: exit %d, committed on B %v; want exit %d, group partial, partition 0 at 5 only\n%s\n%s", code, got, drRefused, out, errOut)
	}
	for _, p := range rep.Groups[0].Partitions {
		want := ""
		if p.Partition == 1 {
			want = kerr.TopicAuthorizationFailed.Error()
		}
		if p.CommitError != want {
			t.Errorf("partition %d: commit_error %q, want %q", p.Partition, p.CommitError, want)
		}
	}
	if len(rep.Problems) != 1 || rep.Problems[0] != "group g: commit refused on 1 of 2 partitions (A.orders[1]: "+kerr.TopicAuthorizationFailed.Error()+
		"); the other 1 were committed: fix the cause and run kmirror failover again (it keeps the committed partitions where the group's consumers moved them)" {
		t.Errorf("problems %q: want the one naming A.orders[1] and its error", rep.Problems)
	}
	dr, found, err := statustopic.ReadDR(w.ctx, w.opts(), "A")
	if err != nil || !found || dr.Groups["g"] != drFailover {
		t.Fatalf("DR record after a partial commit: %+v found %v err %v; want g committed by failover", dr, found, err)
	}

	// The consumers on B move partition 0 on; failover again (the broker
	// now accepts both).
	w.commitB(9)
	code, out, errOut, _ = runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	rep = decodeFailover(t, out)
	if got := committed(); code != drOK || !rep.Rerun || got[0] != 9 || got[1] != 5 {
		t.Fatalf("failover again: exit %d, rerun %v, committed on B %v; want exit 0, a rerun, partition 0 kept at 9, partition 1 at 5\n%s\n%s", code, rep.Rerun, got, out, errOut)
	}
}

// TestFailoverCommitRefusedForMembersSaysWhy (a breaker's suspicion): a
// group that gets members on the target between the check and the commit
// is refused by the broker (UNKNOWN_MEMBER_ID for an offset commit
// without a member); the report quoted the raw error alone. It now says
// the group became active and what to do.
func TestFailoverCommitRefusedForMembersSaysWhy(t *testing.T) {
	w := newRerunWorld(t)
	followMember(t, w.addrs, "m1")
	w.b.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: "g", Err: kerr.UnknownMemberID, Count: 1})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", w.props, "-groups", "g", "-source-timeout", "500ms", "-wait", "5s", "-json")
	rep := decodeFailover(t, out)
	if code != drRefused || len(rep.Groups) != 1 || rep.Groups[0].Action != actionRefused ||
		!strings.Contains(rep.Groups[0].Reason, "UNKNOWN_MEMBER_ID") ||
		!strings.Contains(rep.Groups[0].Reason, "the group has members on the target now (it became active after it was checked): stop its consumers there, then run kmirror failover again") {
		t.Fatalf("failover with the commit refused for members: exit %d, groups %+v; want exit %d, g refused saying it became active\n%s\n%s", code, rep.Groups, drRefused, out, errOut)
	}
}
