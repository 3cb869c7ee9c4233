package mirror

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestFirstKicksManyPartitions (a breaker's attack, held): a session's
// first partitions get idle kicks. Here 120 of them, some with records,
// some empty, one busy (a record every 20 ms), the first listings of half
// of them failing, and a source fetch.max.wait.ms of longFetchWait, over
// two runs: the second resumes from stored resume points, some of them
// below a log start that DeleteRecords moved while the mirror was stopped
// (kgo resets there; each kick moves it back to the resume point). Every
// record present on the source is copied once, in order (exactly once:
// for a read_committed reader), none of the deleted ones, and every
// partition is caught up well before an idle fetch would end.
func TestFirstKicksManyPartitions(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("exactly once %v", eos), func(t *testing.T) {
			t.Parallel()
			firstKicksMany(t, eos)
		})
	}
}

func firstKicksMany(t *testing.T, eos bool) {
	const n = 120
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's faults")
	}
	topic := p.Topic(fmt.Sprintf("kickmany%v", eos))
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, n, nil)
	want := map[int32][]string{} // the values each target partition must hold, in order
	var wantMu sync.Mutex
	produce := func(part int32, prefix string, k int) {
		var rs []*kgo.Record
		wantMu.Lock()
		for i := 0; i < k; i++ {
			v := fmt.Sprintf("%s%d-%d", prefix, part, i)
			rs = append(rs, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)})
			want[part] = append(want[part], v)
		}
		wantMu.Unlock()
		testcluster.Produce(t, &p.Source, rs...)
	}
	var total int64
	for part := int32(1); part < n; part++ {
		if part >= 40 && part < 80 {
			continue // empty at the first run's start
		}
		produce(part, "a", 5)
		total += 5
	}
	faults := func() {
		var ps []int32
		for part := int32(1); part < n; part += 2 {
			ps = append(ps, part)
		}
		p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: topic, Partitions: ps,
			Err: kerr.NotLeaderForPartition, Count: 3})
	}
	// The busy partition 0: a record every 20 ms while busy runs.
	busy := func() (stop func() int) {
		cl := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		done, stopped := make(chan struct{}), make(chan struct{})
		var sent int
		go func() {
			defer close(stopped)
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				case <-time.After(20 * time.Millisecond):
				}
				wantMu.Lock()
				v := fmt.Sprintf("busy-%d-%d", len(want[0]), i)
				if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}).FirstErr(); err == nil {
					want[0] = append(want[0], v)
					sent++
				}
				wantMu.Unlock()
			}
		}()
		return func() int { close(done); <-stopped; return sent }
	}
	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = eos
	fc.OffsetFlushInterval = 500 * time.Millisecond
	run := func() (*Mirror, func() error) {
		return runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
			Consumer: []kgo.Opt{kgo.FetchMaxWait(longFetchWait)}}),
			WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
			WithFlow(fc))
	}
	caughtUp := func(m *Mirror, records int64, msg string) {
		t.Helper()
		testcluster.Eventually(t, longFetchWait/3, msg, func() (bool, string) {
			st := m.Status().Flows[0]
			var behind []string
			for _, ps := range st.Partitions {
				if ps.Lag != 0 || ps.State != StateRunning {
					behind = append(behind, fmt.Sprintf("%d:%s lag %d", ps.Partition, ps.State, ps.Lag))
				}
			}
			return len(st.Partitions) == n && len(behind) == 0 && st.Records >= records,
				fmt.Sprintf("%d partitions, %d records, behind %v", len(st.Partitions), st.Records, behind)
		})
	}

	faults()
	stopBusy := busy()
	m, stop := run()
	start := time.Now()
	time.Sleep(time.Second)
	// Records come to the empty partitions while partition 0 is busy.
	for part := int32(40); part < 80; part++ {
		produce(part, "b", 2)
		total += 2
	}
	sent := stopBusy()
	caughtUp(m, total+int64(sent), "the first run caught up")
	t.Logf("first run caught up in %v", time.Since(start))
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	// While the mirror is stopped: more records on 80..99, everything
	// deleted on 100..109 (the resume points below the log start, the log
	// empty), and on 110..119 deleted then 2 more records.
	for part := int32(80); part < 100; part++ {
		produce(part, "c", 3)
	}
	adm := testcluster.Admin(t, &p.Source)
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(100); part < n; part++ {
		o, _ := ends.Lookup(topic, part)
		if err := p.Source.Fake.DeleteRecords(topic, part, o.Offset); err != nil {
			t.Fatal(err)
		}
	}
	for part := int32(110); part < n; part++ {
		produce(part, "d", 2)
	}
	faults()
	stopBusy = busy()
	m, stop = run()
	start = time.Now()
	time.Sleep(time.Second)
	sent2 := stopBusy()
	caughtUp(m, 20*3+10*2+int64(sent2), "the second run caught up")
	t.Logf("second run caught up in %v", time.Since(start))
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	got, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), remote, eos)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for part := int32(0); part < n; part++ {
		var vs []string
		for _, r := range got[part] {
			vs = append(vs, string(r.Value))
		}
		if strings.Join(vs, " ") != strings.Join(want[part], " ") {
			if bad++; bad <= 5 {
				t.Errorf("target partition %d:\n got %v\nwant %v", part, vs, want[part])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d partitions differ", bad, n)
	}
}
