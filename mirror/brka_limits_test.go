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

// TestBrkATooLargeGroupsNeverTranslatedPast: a record too large for the
// remote topic stops its partition; groups committed on the source before,
// at and past it are never translated on the target past the copy of the
// record that was not replicated, and once the limit is raised and the
// partition restarted, every group lands on its exact target offset.
func TestBrkATooLargeGroupsNeverTranslatedPast(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"at-least-once", "exactly-once", "shallow"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("big")
			remote := p.Source.Alias + "." + topic
			limit := "3145728"
			testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
			var recs []*kgo.Record
			for i := range 10 {
				v := []byte(fmt.Sprintf("v%d", i))
				if i == 5 {
					v = randomBytes(1536*1024, 9)
				}
				recs = append(recs, &kgo.Record{Topic: topic, Value: v})
			}
			produceLarge(t, &p.Source, recs...)
			at := map[string]int64{p.Group("ga"): 3, p.Group("gb"): 5, p.Group("gc"): 7, p.Group("gd"): 10}
			var groups []string
			for g, o := range at {
				trCommit(t, &p.Source, g, topic, map[int32]int64{0: o})
				groups = append(groups, g)
			}
			fc := trFlow(p)
			fc.Topics = []string{topic}
			fc.Tasks = 1
			fc = limitMode(fc, mode)
			s := sampleInvariants(t, &p.Target, remote, groups...)
			m, _ := runMirror(t, recoveryOpts(p, fc)...)
			want := map[string]int64{p.Group("ga"): 3, p.Group("gb"): 5, p.Group("gc"): 5, p.Group("gd"): 5}
			for g, lim := range want {
				s.limit(g, lim)
			}
			testcluster.Eventually(t, 30*time.Second, "partition FAILED at the big record, groups translated", func() (bool, string) {
				ps := partStatus(m, 0)
				ga := committed(t, &p.Target, p.Group("ga"), remote)[0]
				return ps.State == StateFailed && ps.Replicated == 5 && ga == 3, fmt.Sprintf("%+v; ga %d", ps, ga)
			})
			time.Sleep(time.Second) // more checkpoints and group syncs while FAILED
			for _, g := range groups {
				if got, ok := committed(t, &p.Target, g, remote)[0]; ok && got > want[g] {
					t.Errorf("group %s (source %d) at %d on the target while FAILED, want at most %d", g, at[g], got, want[g])
				}
			}
			s.mu.Lock()
			s.limits = nil
			s.mu.Unlock()
			setTopicConfig(t, &p.Target, remote, "max.message.bytes", "4194304")
			if _, err := m.RestartFailed(p.Source.Alias+"->"+p.Target.Alias, topic, 0); err != nil {
				t.Fatal(err)
			}
			testcluster.Eventually(t, 30*time.Second, "groups at their exact offsets", func() (bool, string) {
				got := map[string]int64{}
				for _, g := range groups {
					got[g] = committed(t, &p.Target, g, remote)[0]
				}
				ok := true
				for g, o := range at {
					if mode == "exactly-once" {
						continue
					}
					ok = ok && got[g] == o
				}
				return ok && partStatus(m, 0).Replicated == 10, fmt.Sprintf("%v; %+v", got, partStatus(m, 0))
			})
			if got := remoteValues(t, p, remote); len(got) != 10 {
				t.Errorf("target holds %v, want 10 records", got)
			}
		})
	}
}

// TestBrkARecreatedWhileFailedOnTooLarge: partition 0 stops on a record too
// large for the remote topic; the source topic is then deleted and
// re-created (offsets restart at 0) with small records. The failed
// partition replicates the new log from its start, the other partition
// goes on, and nothing of the old log after the failed record arrives.
// With GapStop the loss of the old log's records is the operator's to
// accept: the partition stays FAILED until restarted.
func TestBrkARecreatedWhileFailedOnTooLarge(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"at-least-once", "exactly-once", "shallow", "gapstop"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			// On real Kafka 4.3.1 the shallow copy of the other partition's
			// new log was once seen twice: TestShallowCopyRecreatedSourceNewLogOnce.
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("big")
			remote := p.Source.Alias + "." + topic
			limit := "3145728"
			testcluster.CreateTopic(t, &p.Source, topic, 2, map[string]*string{"max.message.bytes": &limit})
			o0 := partRecords(topic, "old", 0, 0, 6)
			o0[3].Value = randomBytes(1536*1024, 3)
			o1 := partRecords(topic, "old", 1, 0, 6)
			cl := testcluster.Client(t, &p.Source, kgo.ProducerBatchMaxBytes(8<<20), kgo.MaxBufferedBytes(64<<20),
				kgo.RecordPartitioner(kgo.ManualPartitioner()))
			for _, r := range append(o0, o1...) {
				if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			fc := limitedFlow(p, topic, mode)
			m, _ := runMirror(t, recoveryOpts(p, fc)...)
			testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 3", func() (bool, string) {
				ps0, ps1 := partStatus(m, 0), partStatus(m, 1)
				return ps0.State == StateFailed && ps0.Replicated == 3 && ps1.Replicated == 6, fmt.Sprintf("%+v / %+v", ps0, ps1)
			})
			if _, err := testcluster.Admin(t, &p.Source).DeleteTopic(context.Background(), topic); err != nil {
				t.Fatal(err)
			}
			testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
			n0, n1 := partRecords(topic, "new", 0, 0, 4), partRecords(topic, "new", 1, 0, 4)
			testcluster.Produce(t, &p.Source, append(n0, n1...)...)
			want := map[int32][]string{0: wantValues(o0[:3], n0), 1: wantValues(o1, n1)}
			if mode == "gapstop" {
				testcluster.Eventually(t, 30*time.Second, "partition 1's new log copied", func() (bool, string) {
					got := remoteValuesOf(t, p, remote, 1)
					return strings.Join(got, " ") == strings.Join(want[1], " "), fmt.Sprintf("got %v", got)
				})
				time.Sleep(500 * time.Millisecond) // automatic restarts would come after 200 ms
				if got, ps := remoteValuesOf(t, p, remote, 0), partStatus(m, 0); len(got) != 3 || ps.State != StateFailed {
					t.Fatalf("GapStop: partition 0 holds %v, status %+v; want the 3 old records, FAILED", got, ps)
				}
				if n, err := m.RestartFailed(p.Source.Alias+"->"+p.Target.Alias, topic, 0); n != 1 || err != nil {
					t.Fatalf("RestartFailed = %d, %v; want 1, nil", n, err)
				}
			}
			for part, w := range want {
				testcluster.Eventually(t, 30*time.Second, fmt.Sprintf("partition %d's new log copied", part), func() (bool, string) {
					got := remoteValuesOf(t, p, remote, part)
					return strings.Join(got, " ") == strings.Join(w, " "), fmt.Sprintf("got %v; %+v", got, partStatus(m, part))
				})
			}
			time.Sleep(500 * time.Millisecond)
			for part, w := range want {
				if got := remoteValuesOf(t, p, remote, part); strings.Join(got, " ") != strings.Join(w, " ") {
					t.Errorf("partition %d holds %v, want %v", part, got, w)
				}
			}
		})
	}
}

// remoteValuesOf is targetValues read committed, renumbered from 0 (exactly
// once, transaction markers take offsets).
func remoteValuesOf(t *testing.T, p *testcluster.Pair, remote string, part int32) []string {
	t.Helper()
	recs, err := testcluster.ReadTopic(context.Background(), append(p.Target.Opts(), kgo.FetchMaxBytes(64<<20)), remote, true)
	if err != nil {
		t.Fatalf("reading %s: %v", remote, err)
	}
	var out []string
	for i, r := range recs[part] {
		out = append(out, fmt.Sprintf("%d:%s", i, describeValue(r.Value)))
	}
	return out
}
