package remoteclusterutils_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestUnknownVersionCountedWhenInvalid: ReadStats.UnknownVersion counts
// every record whose version is not 0, "also counted in Checkpoints, or in
// Invalid when the parsed checkpoint cannot be used". A version-1 record
// with a negative downstream offset was counted in Invalid only, so the
// warn summary and the stats hid that the topic holds records of an
// unknown version.
func TestUnknownVersionCountedWhenInvalid(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	topic := p.Source.Alias + ".checkpoints.internal"
	createTopics(t, &p.Target, topic)
	testcluster.Produce(t, &p.Target,
		raw(topic, mm2Key("g", "src.a", 0), mm2Value(1, 5, -3, "")), // v1, negative downstream: invalid
		raw(topic, mm2Key("g", "src.b", -1), mm2Value(1, 5, 3, "")), // v1, negative partition: invalid
		raw(topic, mm2Key("g", "src.c", 0), mm2Value(-1, 5, 4, "")), // v-1: used
	)
	all, err := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target)).Checkpoints(ctxT(t), p.Source.Alias)
	if err != nil {
		t.Fatal(err)
	}
	want := remoteclusterutils.ReadStats{Topic: topic, EndOffset: 3, Records: 3, Checkpoints: 1, Invalid: 2, UnknownVersion: 3}
	if diff := cmp.Diff(want, all.Stats); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}
