package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestFirstKicksAtAbortedSourceTransactions (a breaker's attack, held):
// exactly once, a restarted mirror's first partitions resume exactly where
// the source has aborted transactions (kgo's read_committed fetch returns
// only their abort markers), or an open one (nothing to fetch until it
// ends): the idle kicks move the cursors of partitions that polled nothing
// back to their resume points, over and over. With a source
// fetch.max.wait.ms of longFetchWait, every committed and plain record is
// copied once, in order, the aborted ones never, and the transaction that
// was open at the start is copied soon after it commits.
func TestFirstKicksAtAbortedSourceTransactions(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("kickabort")
	remote := p.Source.Alias + "." + topic
	const parts = 3
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	ctx := context.Background()
	plain := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var want [parts][]string
	txn := func(id string, commit bool, recs map[int32]int) *kgo.Client {
		t.Helper()
		tcl := testcluster.Client(t, &p.Source, kgo.TransactionalID(p.Topic(id)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := tcl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for part, n := range recs {
			for i := 0; i < n; i++ {
				v := fmt.Sprintf("%s-%d-%d", id, part, i)
				if err := tcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
				if commit {
					want[part] = append(want[part], v)
				}
			}
		}
		return tcl
	}
	end := func(tcl *kgo.Client, commit bool) {
		t.Helper()
		if err := tcl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	plainRecs := func(prefix string, part int32, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			v := fmt.Sprintf("%s-%d-%d", prefix, part, i)
			if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			want[part] = append(want[part], v)
		}
	}
	total := func() int64 {
		n := 0
		for _, w := range want {
			n += len(w)
		}
		return int64(n)
	}
	plainRecs("a", 0, 5)
	plainRecs("a", 1, 5)
	end(txn("t1", true, map[int32]int{0: 3, 1: 3}), true)

	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = true
	run := func() (*Mirror, func() error) {
		return runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
			Consumer: []kgo.Opt{kgo.FetchMaxWait(longFetchWait)}}),
			WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
			WithFlow(fc))
	}
	m, stop := run()
	waitReplicatedCommitted(t, m, total())
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// While the mirror is stopped: aborted transactions right at the
	// resume points of partitions 0 and 1 (and on the empty partition 2),
	// and a transaction left open on partition 2.
	end(txn("t2", false, map[int32]int{0: 4, 1: 4, 2: 4}), false)
	end(txn("t3", false, map[int32]int{1: 2}), false)
	open := txn("t4", true, map[int32]int{2: 3})
	m, stop = run()
	start := time.Now()
	time.Sleep(1500 * time.Millisecond) // the first kicks come and go
	end(open, true)
	plainRecs("b", 0, 2)
	plainRecs("b", 1, 2)
	plainRecs("b", 2, 2)
	values := func() [parts][]string {
		got, err := testcluster.ReadTopic(ctx, p.Target.Opts(), remote, true)
		if err != nil {
			t.Fatal(err)
		}
		var vs [parts][]string
		for part := int32(0); part < parts; part++ {
			for _, r := range got[part] {
				vs[part] = append(vs[part], string(r.Value))
			}
		}
		return vs
	}
	testcluster.Eventually(t, longFetchWait/3, "every committed record copied (read_committed)", func() (bool, string) {
		vs := values()
		return fmt.Sprint(vs) == fmt.Sprint(want), fmt.Sprintf("got %v, want %v", vs, want)
	})
	t.Logf("copied %v after the restart", time.Since(start))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if vs := values(); fmt.Sprint(vs) != fmt.Sprint(want) {
		t.Errorf("after the stop (read_committed):\n got %v\nwant %v", vs, want)
	}
	if gaps := m.Status().Flows[0].Gaps; len(gaps) != 0 {
		t.Errorf("gaps reported: %+v", gaps)
	}
}
