package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestListedKickOfReplacedFeedNotApplied (found by a breaker): the poll
// loop lists the log start of a session's first partitions added at the
// log start before kicking them (kick: one ListOffsets, up to 2 s with
// kgo's retries). kickOffsets checked that each kick's feed was still its
// partition's feed before the listing, not after: when a source topic was
// re-created while the listing was out (actRecreate: a new feed, the topic
// purged from the consumer and added back at the new log's start), the
// poll loop moved the new incarnation's cursor to an offset of the old
// log (the start it had listed, or the exact offset of another kick taken
// with the listed one), and the new log's records below it were never
// fetched, with no gap reported (the new feed expects offset 0 and the log
// start is 0: compaction, not a gap). Here the listing's answer (the old
// log's start, as the broker had it when the request came) arrives a
// second after the unit carried out the re-creation.
func TestListedKickOfReplacedFeedNotApplied(t *testing.T) {
	for _, c := range []struct {
		name  string
		exact bool // the re-created partition's kick is exact; another topic's start is listed
	}{{"the listed partition re-created", false}, {"an exact kick taken with a listed one", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			listedKickOfReplacedFeed(t, c.exact)
		})
	}
}

func listedKickOfReplacedFeed(t *testing.T, exact bool) {
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic, other := p.Topic(fmt.Sprintf("listrecreate%v", exact)), p.Topic(fmt.Sprintf("listother%v", exact))
	listed := topic // the topic whose start the poll loop lists
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	if exact {
		listed = other
		testcluster.CreateTopic(t, &p.Source, other, 1, nil)
	}
	// The old log: 120 records, all deleted (log start = log end = 120):
	// kgo's fetch finds nothing, the poll is idle and the kick is due.
	testcluster.Produce(t, &p.Source, partRecords(topic, "old", 0, 0, 120)...)
	if err := p.Source.Fake.DeleteRecords(topic, 0, 120); err != nil {
		t.Fatal(err)
	}

	cons := testcluster.Client(t, &p.Source,
		kgo.FetchMaxWait(time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}))
	u := &unit{env: &unitEnv{name: "t", gap: func(*GapError) {}, cfg: FlowConfig{AdminTimeout: 10 * time.Second}},
		log: slog.New(slog.DiscardHandler), cons: cons, box: newInbox(), life: newLifecycle(lifeConfig{})}
	u.feeds.Store(&map[tp]*feed{})

	// The session's first partitions: idle kicks, at the log start
	// (listed by the poll loop) or at the resume point 120.
	ps := newPartState(topic, "src."+topic, 0, -1, [16]byte{}, false, time.Now())
	acts := []action{{kind: actStart, p: ps, off: atStart}}
	if exact {
		ps = newPartState(topic, "src."+topic, 0, 119, [16]byte{}, false, time.Now())
		acts = []action{{kind: actStart, p: ps, off: 120},
			{kind: actStart, p: newPartState(other, "src."+other, 0, -1, [16]byte{}, false, time.Now()), off: atStart}}
	}
	u.carryOut(context.Background(), acts)
	time.Sleep(300 * time.Millisecond) // kgo resolves the offsets and fetches (nothing)

	// The source topic is deleted and re-created (200 records); the unit
	// learns it while the poll loop's listing of the start is out.
	adm := testcluster.Admin(t, &p.Source)
	if _, err := adm.DeleteTopics(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "new", 0, 0, 200)...)
	// The consumer's client learns the new topic's leader (the listing
	// below would fail before it is sent otherwise).
	testcluster.Eventually(t, 5*time.Second, "the new topic listed", func() (bool, string) {
		st, err := listOffsets(context.Background(), u.cons, map[string][]int32{topic: {0}}, 0, -2)
		return err == nil && len(st) == 1, fmt.Sprint(st, err)
	})
	var held atomic.Bool
	recreated := make(chan struct{})
	p.Source.Fake.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.ListOffsetsRequest)
		if len(r.Topics) != 1 || r.Topics[0].Topic != listed || !held.CompareAndSwap(false, true) {
			p.Source.Fake.KeepControl()
			return nil, nil, false
		}
		p.Source.Fake.SleepControl(func() {
			u.carryOut(context.Background(), []action{{kind: actRecreate, topic: topic, parts: []*partState{ps}}})
			close(recreated)
			time.Sleep(time.Second) // the answer's way back: kgo assigns the re-added partition meanwhile
		})
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		resp.Version = r.Version
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = listed
		rp := kmsg.NewListOffsetsResponseTopicPartition()
		rp.Partition, rp.Offset, rp.Timestamp, rp.LeaderEpoch = 0, 120, -1, 0
		if exact {
			rp.Offset = 0
		}
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	// What pollLoop does after a poll that returned nothing.
	u.kick(context.Background(), u.kicks.take(time.Now().Add(kickDelay), false))
	select {
	case <-recreated:
	default:
		t.Fatal("the poll loop's listing did not reach the source")
	}
	if cur := (*u.feeds.Load())[tp{topic, 0}]; cur == nil || cur.next != 0 {
		t.Fatalf("feed after recreate: %+v", cur)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := int64(-1)
	for first < 0 && ctx.Err() == nil {
		u.cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if first < 0 && r.Topic == topic {
				first = r.Offset
			}
		})
	}
	if first != 0 {
		t.Errorf("the re-created topic is consumed from offset %d, want 0: %d records of the new log skipped (an offset of the old log applied to the new feed), no gap reported", first, first)
	}
}
