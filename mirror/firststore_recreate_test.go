package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestFirstResumePointOfRecreatedTopic (a breaker's attack): a source
// topic deleted and re-created after the session's early resume-point
// stores stopped is a new log under the old name: the first resume point
// of the records copied from it is stored within about a second, as for
// a new topic (lifecycle.added), not at the next regular store (here 10
// minutes later). Until then the only stored resume point names the old
// topic ID, and a crash meanwhile replays the new log from its start:
// here a crash 3 s after the copy doubled the new log's 5 records.
func TestFirstResumePointOfRecreatedTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("recreatestore")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "old", 0, 0, 10)...)
	fc := recoveryFlow(p, topic)
	fc.OffsetFlushInterval = 10 * time.Minute
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	waitReplicated(t, m, 10)
	testcluster.Eventually(t, 10*time.Second, "the old log's resume point stored", func() (bool, string) {
		stored := storedResumePoints(t, p, topic)
		return stored[0][9], fmt.Sprintf("stored %v", stored)
	})
	time.Sleep(2 * time.Second) // the early stores stopped
	if _, err := testcluster.Admin(t, &p.Source).DeleteTopic(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "new", 0, 0, 5)...)
	testcluster.Eventually(t, 20*time.Second, "the new log copied", func() (bool, string) {
		got := targetValues(t, p, p.Source.Alias+"."+topic, 0)
		return len(got) == 15 && got[14] == "14:new4", fmt.Sprint(got)
	})
	// Stored by the early stores, long before the 10-minute flush
	// interval (waited for: load delays them).
	testcluster.Eventually(t, 30*time.Second, "the new log's resume point 4 stored", func() (bool, string) {
		stored := storedResumePoints(t, p, topic)
		return stored[0][4], fmt.Sprintf("stored %v", stored)
	})
	// A crash now, and a restart: the new log is replayed from its start
	// unless its resume point was stored.
	m.kill()
	m2, _ := runMirror(t, recoveryOpts(p, fc)...)
	testcluster.Produce(t, &p.Source, partRecords(topic, "new", 0, 5, 6)...)
	waitReplicated(t, m2, 1)
	testcluster.Eventually(t, 20*time.Second, "new5 copied", func() (bool, string) {
		got := targetValues(t, p, p.Source.Alias+"."+topic, 0)
		return len(got) > 0 && strings.HasSuffix(got[len(got)-1], ":new5"), fmt.Sprint(got)
	})
	got := targetValues(t, p, p.Source.Alias+"."+topic, 0)
	want := wantValues(partRecords(topic, "old", 0, 0, 10), partRecords(topic, "new", 0, 0, 6))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target after a crash 3 s after the copy (%d duplicates):\n got %v\nwant %v", len(got)-len(want), got, want)
	}
}
