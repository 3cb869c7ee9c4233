package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
)

// syncsTopicChurn: the offset-syncs or offset-runs topic on the source is
// deleted (and re-created empty when recreate) while the flow runs;
// records replicated after that and a group's new commit must still be
// checkpointed exactly, and the topic written again.
func syncsTopicChurn(t *testing.T, which string, recreate bool) {
	p := testcluster.New(t, "src", "dst") // the offset-syncs topics are this test's own (named after its target alias)
	orders, g := p.Topic("orders"), p.Group("g")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 50)
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 50})
	remote := p.Source.Alias + "." + orders
	fc := trFlow(p)
	fc.SyncGroupOffsets = false
	m, _ := trStart(t, p, fc)
	key := g + "/" + remote + "/0"
	testcluster.Eventually(t, 30*time.Second, "first checkpoint", func() (bool, string) {
		cp := tryCheckpoints(p)[key]
		return cp.DownstreamOffset == 50, fmt.Sprintf("%+v", cp)
	})
	pol, _ := policy.NewDefault()
	syncs := pol.OffsetSyncsTopic(p.Target.Alias)
	runs := checkpoint.OffsetRunsTopic(syncs)
	adm := testcluster.Admin(t, &p.Source)
	// One of the two: kfake (this version) panics answering a produce
	// request naming two unknown topic IDs (its per-partition answer map
	// is keyed by the name, empty in v13 requests).
	topic := syncs
	if which == "runs" {
		topic = runs
	}
	if _, err := adm.DeleteTopics(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	if recreate {
		compact := "compact"
		testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"cleanup.policy": &compact})
	}
	t0 := time.Now()
	produceN(t, &p.Source, orders, 0, 50)
	testcluster.Eventually(t, 30*time.Second, "replicated", func() (bool, string) {
		e := endOffsets(t, &p.Target, remote)[0]
		return e == 100, fmt.Sprint(e)
	})
	trCommit(t, &p.Source, g, orders, map[int32]int64{0: 80})
	testcluster.Eventually(t, 60*time.Second, "new commit checkpointed exactly", func() (bool, string) {
		cp := tryCheckpoints(p)[key]
		gs, _ := groupStatusOf(m, 0, g)
		recs, err := testcluster.ReadTopic(context.Background(), p.Source.Opts(), topic, false)
		return cp.UpstreamOffset == 80 && cp.DownstreamOffset == 80 && gs.SafeToSwitch, fmt.Sprintf("%+v; %+v; %s: %d records %v", cp, gs, topic, len(recs[0]), err)
	})
	t.Logf("exact checkpoint %v after the deletion", time.Since(t0))
	// The topic holds the flow's records again (MM2's readers and
	// kmirror's translation client read it).
	testcluster.Eventually(t, 30*time.Second, topic+" written again", func() (bool, string) {
		recs, err := testcluster.ReadTopic(context.Background(), p.Source.Opts(), topic, false)
		return err == nil && len(recs[0]) > 0, fmt.Sprintf("%d records, %v", len(recs[0]), err)
	})
}

// TestOffsetSyncTopicsRestored: the offset-syncs or the offset-runs topic
// on the source is deleted (and re-created empty by someone, when
// recreate) while the flow runs. Both were created only at the start, and
// written by a producer that keeps the topic ID it knows: a deleted topic
// was never written again until a restart, a re-created one failed every
// record with UNKNOWN_TOPIC_ID; and the emitter's reader of a re-created
// topic failed every fetch with UNKNOWN_TOPIC_ID in a busy loop (180 000
// WARNs in 40 s), reading nothing. With the runs topic gone, a group's
// checkpoint stayed at the last position the lost runs covered for good
// ("group offset beyond what was replicated"). Now the flow creates the
// topics again and takes a new producer, the units write their newest
// syncs and current runs again, and the emitter reads a re-created topic
// from its start: the new commit is checkpointed exactly in about a
// second.
func TestOffsetSyncTopicsRestored(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"syncs", "runs"} {
		for _, recreate := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/recreate=%v", which, recreate), func(t *testing.T) {
				t.Parallel()
				syncsTopicChurn(t, which, recreate)
			})
		}
	}
}

// TestSyncProducerInitProducerIDErrorReplaced: the source answers the
// offset-sync producer's InitProducerId UNKNOWN_SERVER_ERROR, once. kgo
// keeps that error as the producer's state and failed every later offset
// sync and run at once, without a request ("offset sync not written"), for
// as long as the process ran: the group stayed "no offset sync yet", never
// checkpointed nor synced, the flow RUNNING. Now the refresh loop finds the
// producer's id failed and replaces the producer.
func TestSyncProducerInitProducerIDErrorReplaced(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic, g := p.Topic("ledger"), p.Group("g")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceN(t, &p.Source, topic, 0, 50)
	trCommit(t, &p.Source, g, topic, map[int32]int64{0: 40})
	// The offset-sync producer is the flow's only idempotent producer on
	// the source.
	h := p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.UnknownServerError})
	fc := trFlow(p)
	fc.Topics = []string{topic}
	trStart(t, p, fc)
	remote := p.Source.Alias + "." + topic
	key := g + "/" + remote + "/0"
	testcluster.Eventually(t, 30*time.Second, "the group synced to 40 on the target", func() (bool, string) {
		got := committed(t, &p.Target, g, remote)
		return h.Hits() == 1 && got[0] == 40, fmt.Sprintf("fault hits %d, target group %v", h.Hits(), got)
	})
	if c := readCheckpoints(t, p)[key]; c.UpstreamOffset != 40 || c.DownstreamOffset != 40 {
		t.Fatalf("checkpoint %+v, want 40 -> 40", c)
	}
}
