package mirror

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestKickOfReplacedFeedNotApplied (regression, found in review): a
// partition added to a running session at an exact offset is queued for a
// kick (pollKicks). When its source topic was re-created before the kick
// was due (actRecreate: the topic purged from the consumer and the
// partition added back at the new log's start with a new feed), the kick
// still named the old feed, which actRecreate does not stop and the poll
// loop never polls again: it moved the new incarnation's cursor to the old
// log's offset, and the new log's records before it were never fetched
// (no gap reported: log start 0). A kick now applies only to its
// partition's current feed.
func TestKickOfReplacedFeedNotApplied(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake")
	}
	topic := p.Topic("recreatekick")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "old", 0, 0, 150)...)

	cons := testcluster.Client(t, &p.Source,
		kgo.FetchMaxWait(time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}))
	u := &unit{env: &unitEnv{name: "t", gap: func(*GapError) {}}, log: slog.New(slog.DiscardHandler),
		cons: cons, box: newInbox(), life: newLifecycle(lifeConfig{})}
	u.feeds.Store(&map[tp]*feed{})
	u.kickAdds = true // a running session: its first partitions were added already

	// The partition (re)joins the running session at its resume point 150.
	ps := newPartState(topic, "src."+topic, 0, 149, [16]byte{}, false, time.Now())
	u.carryOut(context.Background(), []action{{kind: actStart, p: ps, off: 150}})

	// Before the kick is due, the source topic is deleted and re-created
	// (200 records in the new log) and the unit carries out actRecreate.
	adm := testcluster.Admin(t, &p.Source)
	if _, err := adm.DeleteTopics(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "new", 0, 0, 200)...)
	u.carryOut(context.Background(), []action{{kind: actRecreate, topic: topic, parts: []*partState{ps}}})
	cur := (*u.feeds.Load())[tp{topic, 0}]
	if cur == nil || cur.next != 0 {
		t.Fatalf("feed after recreate: %+v", cur)
	}
	time.Sleep(kickDelay + 50*time.Millisecond) // kgo re-assigns the re-created topic at its start

	// What pollLoop does after each poll.
	set, _, _ := kickOffsets(u.kicks.take(time.Now(), false), *u.feeds.Load())
	if set != nil {
		t.Errorf("a kick of the replaced feed is still applied after the re-creation: %v", set)
		u.cons.SetOffsets(set)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := int64(-1)
	for first < 0 && ctx.Err() == nil {
		fs := u.cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if first < 0 {
				first = r.Offset
			}
		})
	}
	if first != 0 {
		// checkGapAt(cur, first, logStart 0): first > next and the log
		// start is not above next: compaction, no gap reported.
		t.Errorf("the re-created topic is consumed from offset %d, want 0: %d records of the new log skipped, no gap reported", first, first)
	}
}
