package connectoffsets

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestResumePoints: the fold keeps the newest point per partition of the
// one source alias, with the IDs of its own headers only, deletes at a
// nil or JSON-null value, and skips (and reports) a value that does not
// parse, keeping the point before it.
func TestResumePoints(t *testing.T) {
	id := func(b byte) []byte {
		v := make([]byte, 16)
		for i := range v {
			v[i] = b
		}
		return v
	}
	var id1, id2 [16]byte
	copy(id1[:], id(1))
	copy(id2[:], id(2))
	rec := func(off int64, key, value []byte, hs ...kgo.RecordHeader) *kgo.Record {
		return &kgo.Record{Offset: off, Key: key, Value: value, Headers: hs}
	}
	remote := func(v []byte) kgo.RecordHeader { return kgo.RecordHeader{Key: RemoteTopicIDHeader, Value: v} }
	source := func(v []byte) kgo.RecordHeader { return kgo.RecordHeader{Key: SourceTopicIDHeader, Value: v} }
	recs := []*kgo.Record{
		rec(0, SourceKey("A", "orders", 0), SourceValue(5), remote(id(1)), source(id(2))),
		rec(1, SourceKey("A", "orders", 0), SourceValue(9)), // newer, no IDs (MM2 wrote it)
		rec(2, SourceKey("A", "orders", 1), SourceValue(3), source(id(2)), remote([]byte("short"))),
		rec(3, SourceKey("A", "orders", 1), []byte(`{"offset":"x"}`)), // malformed: 3 kept
		rec(4, SourceKey("A", "orders", 2), SourceValue(7)),
		rec(5, SourceKey("A", "orders", 2), nil), // tombstone
		rec(6, SourceKey("A", "orders", 3), SourceValue(8), remote(id(1))),
		rec(7, SourceKey("A", "orders", 3), []byte(" null ")), // JSON null: deleted too
		rec(8, SourceKey("B", "orders", 0), SourceValue(99)),  // another source alias
		rec(9, CheckpointKey("g", "orders", 0), SourceValue(99)),
		rec(10, []byte("not json"), SourceValue(99)),
		rec(11, SourceKey("A", "payments", 0), SourceValue(0), remote(id(1))),
	}
	var malformed []int64
	got := ResumePoints(recs, "A", func(r *kgo.Record, err error) { malformed = append(malformed, r.Offset) })
	want := map[SourcePartition]ResumePoint{
		{"orders", 0}:   {Offset: 9},
		{"orders", 1}:   {Offset: 3, SourceTopicID: id2},
		{"payments", 0}: {Offset: 0, RemoteTopicID: id1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ResumePoints (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int64{3}, malformed); d != "" {
		t.Errorf("malformed offsets reported (-want +got):\n%s", d)
	}
	if got := ResumePoints(recs, "A", nil); len(got) != 3 {
		t.Errorf("with a nil malformed callback: %d points, want 3", len(got))
	}
}
