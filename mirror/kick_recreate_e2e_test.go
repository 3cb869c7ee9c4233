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

// TestSourceRecreatedWhileFirstKicksQueued (a breaker's attack, held): a
// source topic is deleted and re-created (80 records from offset 0) while
// the session's first partitions' idle kicks are queued: kicks at the log
// start, which the poll loop lists (the old log emptied by DeleteRecords:
// its start is 50), or at the exact resume point 50 of a restarted
// mirror that had copied the old log. The new log is copied whole after
// whatever of the old one was, once, in order, and soon, with a source
// fetch.max.wait.ms of longFetchWait.
func TestSourceRecreatedWhileFirstKicksQueued(t *testing.T) {
	for _, resumed := range []bool{false, true} {
		t.Run(fmt.Sprintf("resumed %v", resumed), func(t *testing.T) {
			t.Parallel()
			recreatedWhileKicksQueued(t, resumed)
		})
	}
}

func recreatedWhileKicksQueued(t *testing.T, resumed bool) {
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's DeleteRecords")
	}
	topic := p.Topic(fmt.Sprintf("recreatefirst%v", resumed))
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	o0, o1 := partRecords(topic, "old", 0, 0, 50), partRecords(topic, "old", 1, 0, 50)
	testcluster.Produce(t, &p.Source, append(o0, o1...)...)
	fc := recoveryFlow(p, topic)
	run := func() *Mirror {
		m, stop := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
			Consumer: []kgo.Opt{kgo.FetchMaxWait(longFetchWait)}}),
			WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
			WithFlow(fc))
		if resumed {
			resumed = false
			waitReplicated(t, m, 100)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			return nil
		}
		return m
	}
	var want0, want1 []*kgo.Record
	if resumed {
		run()
		want0, want1 = o0, o1
	} else {
		for part := int32(0); part < 2; part++ {
			if err := p.Source.Fake.DeleteRecords(topic, part, 50); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := run()
	testcluster.Eventually(t, 10*time.Second, "the partitions started", func() (bool, string) {
		ps := m.Status().Flows[0].Partitions
		return len(ps) == 2 && ps[0].State == StateRunning && ps[1].State == StateRunning, fmt.Sprintf("%+v", ps)
	})
	time.Sleep(200 * time.Millisecond) // the first kicks are due
	if _, err := testcluster.Admin(t, &p.Source).DeleteTopic(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	n0, n1 := partRecords(topic, "new", 0, 0, 80), partRecords(topic, "new", 1, 0, 80)
	testcluster.Produce(t, &p.Source, append(n0, n1...)...)
	start := time.Now()
	for part, want := range map[int32][]string{0: wantValues(want0, n0), 1: wantValues(want1, n1)} {
		testcluster.Eventually(t, longFetchWait/3, fmt.Sprintf("partition %d's new log copied", part), func() (bool, string) {
			got := targetValues(t, p, remote, part)
			return strings.Join(got, " ") == strings.Join(want, " "), fmt.Sprintf("got %v", got)
		})
	}
	t.Logf("copied %v after the re-creation", time.Since(start))
}
