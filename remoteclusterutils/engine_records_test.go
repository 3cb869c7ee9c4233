package remoteclusterutils_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestTranslateFromRecordsEngine: the real engine copies a source
// partition holding committed and aborted transactions (markers and
// aborted records are source offsets never copied), at least once and
// exactly once (the copies then sit in the engine's own transactions);
// for every source offset X up to the source's end, the answer is exact
// and the copy there has the content of the first committed source record
// at or after X (the log end for X at the end).
func TestTranslateFromRecordsEngine(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("exactly_once=%v", eos), func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("tx")
			createTopicsWith(t, &p.Source, 1, nil, topic)
			txn := testcluster.Client(t, &p.Source, kgo.TransactionalID(p.Topic("src-tx")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			plain := testcluster.Client(t, &p.Source, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			ctx := ctxT(t)
			n := 0
			rec := func() *kgo.Record {
				n++
				return &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", n)}
			}
			for i := 0; i < 6; i++ {
				if err := plain.ProduceSync(ctx, rec(), rec()).FirstErr(); err != nil {
					t.Fatal(err)
				}
				if err := txn.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				if err := txn.ProduceSync(ctx, rec(), rec(), rec()).FirstErr(); err != nil {
					t.Fatal(err)
				}
				end := kgo.TryCommit
				if i%2 == 1 {
					end = kgo.TryAbort
				}
				if err := txn.EndTransaction(ctx, end); err != nil {
					t.Fatal(err)
				}
			}
			if err := plain.ProduceSync(ctx, rec()).FirstErr(); err != nil { // the log ends with a data record
				t.Fatal(err)
			}
			src, err := testcluster.ReadTopic(ctx, p.Source.Opts(), topic, true)
			if err != nil {
				t.Fatal(err)
			}
			committed := src[0]
			srcEnd := committed[len(committed)-1].Offset + 1

			remote := p.Source.Alias + "." + topic
			copies := copyAll(t, p, topic, eos, len(committed))
			ends, err := testcluster.Admin(t, &p.Target).ListCommittedOffsets(ctx, remote)
			if err != nil {
				t.Fatal(err)
			}
			remoteEnd, _ := ends.Lookup(remote, 0)
			value := map[int64]string{}
			for _, r := range copies {
				value[r.Offset] = string(r.Value)
			}
			srcID := testcluster.ClusterID(t, &p.Source) // what the copies' provenance names
			for x := int64(0); x <= srcEnd; x++ {
				got, err := remoteclusterutils.TranslateFromRecords(ctx, testcluster.Client(t, &p.Target), srcID,
					map[string]map[int32]int64{remote: {0: x}})
				if err != nil {
					t.Fatal(err)
				}
				r := got[remote][0]
				want := ""
				for _, c := range committed {
					if c.Offset >= x {
						want = string(c.Value)
						break
					}
				}
				switch {
				case r.Err != nil || !r.Exact:
					t.Errorf("X %d: %+v, want exact", x, r)
				case want == "" && r.Offset != remoteEnd.Offset:
					t.Errorf("X %d (the source's end): offset %d, want the log end %d", x, r.Offset, remoteEnd.Offset)
				case want != "" && value[r.Offset] != want:
					t.Errorf("X %d: offset %d holds %q, want the copy of %q", x, r.Offset, value[r.Offset], want)
				}
			}
		})
	}
}

// copyAll runs a Mirror replicating p's topics (exactly once when eos)
// until partition 0 of topic's remote topic holds want records
// (read_committed), stops it, and returns those copies.
func copyAll(t *testing.T, p *testcluster.Pair, topic string, eos bool, want int) []*kgo.Record {
	t.Helper()
	m, err := mirror.New(
		mirror.WithCluster(mirror.ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
		mirror.WithFlow(mirror.FlowConfig{Source: p.Source.Alias, Target: p.Target.Alias,
			Topics: []string{p.TopicsPattern()}, DisableHeartbeatsReplication: true, ExactlyOnce: eos,
			RefreshTopicsInterval: 200 * time.Millisecond, OffsetFlushInterval: 100 * time.Millisecond,
			EmitCheckpointsInterval: time.Second, AdminTimeout: 10 * time.Second}),
	)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- m.Run(context.Background()) }()
	remote := p.Source.Alias + "." + topic
	var copies []*kgo.Record
	testcluster.Eventually(t, 60*time.Second, "every committed record copied", func() (bool, string) {
		got, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), remote, true)
		copies = got[0]
		return err == nil && len(copies) == want, fmt.Sprintf("%d of %d (%v)", len(copies), want, err)
	})
	m.Close()
	if err := <-errc; err != nil {
		t.Errorf("mirror Run: %v", err)
	}
	return copies
}
