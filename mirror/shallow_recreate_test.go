package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestShallowCopyRecreatedSourceNewLogOnce: a source topic deleted and
// re-created while the flow's topic listing lagged (a real broker deletes a
// topic asynchronously; here the listing is refused meanwhile). Shallow
// copy's fetcher learned the new topic ID from its own metadata request
// and fetched the new log at the old log's position: out of range, it
// restarted at the new log's start and copied it. When the listing then
// saw the re-creation, the lifecycle restarted the partition at the new
// log's start, and the new log was copied a second time (CI, Kafka 4.3.1:
// offsets 6-9 and 10-13). A feed now reads only the topic ID its partition
// state was started on, as kgo's consumer does until the topic is purged:
// the new log is copied once, after the re-creation is seen, and the
// re-creation is reported once, with nothing lost.
func TestShallowCopyRecreatedSourceNewLogOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"at-least-once", "shallow"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			// kfake: the listing is refused by a control function.
			p := testcluster.NewFakePair(t, "src", "dst")
			topic, remote, old := sixOld(t, p)
			m, _ := runMirror(t, recoveryOpts(p, limitedFlow(p, topic, mode))...)
			waitReplicated(t, m, 6)

			refuse := refuseListing(p)
			n := recreateWithFour(t, p, topic)
			// The listing stays refused for several of the fetcher's
			// metadata retries (250 ms apart).
			time.Sleep(time.Second)
			refuse.Store(false)

			testcluster.Eventually(t, 30*time.Second, "the re-creation seen", func() (bool, string) {
				gaps := m.Status().Flows[0].Gaps
				return len(gaps) > 0 && strings.Contains(gaps[len(gaps)-1].Reason, "deleted and re-created"), fmt.Sprintf("gaps %+v", gaps)
			})
			want := strings.Join(wantValues(old, n), " ")
			testcluster.Eventually(t, 30*time.Second, "the new log copied", func() (bool, string) {
				got := strings.Join(remoteValuesOf(t, p, remote, 0), " ")
				return got == want, fmt.Sprintf("got %v; %+v", got, partStatus(m, 0))
			})
			time.Sleep(500 * time.Millisecond)
			if got := strings.Join(remoteValuesOf(t, p, remote, 0), " "); got != want {
				t.Errorf("remote topic holds %v, want %v", got, want)
			}
			if ps := partStatus(m, 0); ps.State != StateRunning || ps.Replicated != 4 || ps.Records != 10 {
				t.Errorf("status %+v, want RUNNING, 4 of the new log replicated, 10 records copied", ps)
			}
			// Nothing of the old log was lost: one report of the
			// re-creation, of no records (before, also "offsets went
			// back" and a false loss of offsets 4-6).
			if gaps := m.Status().Flows[0].Gaps; len(gaps) != 1 || gaps[0].From != 6 || gaps[0].To != 6 {
				t.Errorf("gaps %+v, want one of offsets 6 to 6 (none lost)", gaps)
			}
		})
	}
}

// TestRecreatedSourceSeenBeforeTheNextRefresh: a source topic deleted and
// re-created under the same name was replicated again only after the
// flow's next topic discovery, refresh.topics.interval.seconds later (600 s
// by default): until then the old log's position was fetched under the
// old topic ID and refused. A fetch that finds the topic gone (or, in
// shallow copy, metadata naming another topic ID) now wakes discovery,
// which restarts the partition on the new log at once.
func TestRecreatedSourceSeenBeforeTheNextRefresh(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"at-least-once", "exactly-once", "shallow"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			// kfake: a real broker deletes a topic asynchronously, which
			// the listing may not show yet when the fetch wakes it.
			p := testcluster.NewFakePair(t, "src", "dst")
			topic, remote, old := sixOld(t, p)
			fc := limitedFlow(p, topic, mode)
			fc.RefreshTopicsInterval = time.Hour
			m, _ := runMirror(t, recoveryOpts(p, fc)...)
			waitReplicatedCommitted(t, m, 6)
			n := recreateWithFour(t, p, topic)
			want := strings.Join(wantValues(old, n), " ")
			testcluster.Eventually(t, 30*time.Second, "the new log copied", func() (bool, string) {
				got := strings.Join(remoteValuesOf(t, p, remote, 0), " ")
				return got == want, fmt.Sprintf("got %v; %+v", got, partStatus(m, 0))
			})
		})
	}
}

// sixOld creates topic "recreated" (one partition) on p's source with
// records old0 to old5, and returns its name, its remote topic's and the
// records.
func sixOld(t *testing.T, p *testcluster.Pair) (topic, remote string, old []*kgo.Record) {
	t.Helper()
	topic = p.Topic("recreated")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	old = partRecords(topic, "old", 0, 0, 6)
	testcluster.Produce(t, &p.Source, old...)
	return topic, p.Source.Alias + "." + topic, old
}

// recreateWithFour deletes topic on p's source, creates it again (one
// partition) and produces new0 to new3 to it, which it returns.
func recreateWithFour(t *testing.T, p *testcluster.Pair, topic string) []*kgo.Record {
	t.Helper()
	if _, err := testcluster.Admin(t, &p.Source).DeleteTopic(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	n := partRecords(topic, "new", 0, 0, 4)
	testcluster.Produce(t, &p.Source, n...)
	return n
}
