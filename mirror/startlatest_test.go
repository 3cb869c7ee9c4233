package mirror

import (
	"testing"

	"github.com/kmirror/kmirror/checkpoint"
)

// TestStartLatestSessionReadsFromItsFirstRecord (found by a review): with
// StartLatest and no resume point, a session starts at the source's log
// end. Session 1 copies source 100..109 to target 0..9, and its member is
// killed before the partition's first resume point is stored; session 2,
// again without one, starts at the end (120) and copies to target 10 on.
// Session 2's offset runs claimed it read the partition from 0: the exact
// translator took session 1's copies for superseded and translated a group
// at source 105, whose copy is at target 5, to 10 (exact, safe to switch):
// a failover skipped five records the target holds. Its runs now say it
// read from its first record.
func TestStartLatestSessionReadsFromItsFirstRecord(t *testing.T) {
	t.Parallel()
	k := tp{"t", 0}
	id := [16]byte{7}
	tr := checkpoint.Translator{Syncs: checkpoint.NewOffsetSyncStore(checkpoint.WithMustReadToEnd(false)), Runs: checkpoint.NewRunStore()}
	tr.Syncs.MarkReadToEnd()
	session := func(firstUp, firstDown, n int64) {
		h := newHarness(t, lifeConfig{flow: "a->b", syncs: true, lagMax: 100, startLatest: true})
		h.m.topicIDs["t"] = id
		f := h.start(k, startPos{remote: "a.t", committed: -1, topicID: id})
		h.expect("no resume point", "start t/0 at end")
		for i := range n {
			h.ack(f, h.fetch(f, firstUp+i)[0], firstDown+i)
		}
		for _, o := range h.m.syncs(true) {
			for _, d := range o.due {
				tr.Syncs.Add(checkpoint.OffsetSync{Topic: "t", Partition: 0, UpstreamOffset: d[0], DownstreamOffset: d[1]})
			}
			for _, r := range o.runs {
				if r.ReadFrom != firstUp || !r.Fresh {
					t.Errorf("session from %d: run %+v reads from %d (fresh %v), want %d, fresh", firstUp, r, r.ReadFrom, r.Fresh, firstUp)
				}
				r.Topic, r.Partition = "t", 0
				tr.Runs.Add(r)
			}
		}
	}
	session(100, 0, 10)
	if got := tr.Translate("t", 0, id, 105); !got.OK || got.Offset != 5 || !got.Exact {
		t.Fatalf("after session 1: source 105 translated to %+v, want 5, exact", got)
	}
	session(120, 10, 5)
	if got := tr.Translate("t", 0, id, 105); !got.OK || got.Offset != 5 || !got.Exact {
		t.Errorf("after session 2: source 105 translated to %+v, want 5, exact (its copy is at target 5)", got)
	}
	if got := tr.Translate("t", 0, id, 122); !got.OK || got.Offset != 12 || !got.Exact {
		t.Errorf("after session 2: source 122 translated to %+v, want 12, exact", got)
	}
}
