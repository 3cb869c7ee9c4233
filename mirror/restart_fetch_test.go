package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// longFetchWait is the source consumer's fetch.max.wait.ms in the restart
// tests: longer than they wait for the restarted partition, so a restart
// that waited for an idle unit's fetch in flight fails them.
const longFetchWait = 60 * time.Second

// restartWithIdleNeighbour fails partition 0 of a two-partition topic once
// (one TOPIC_AUTHORIZATION_FAILED) while partition 1 is idle, with a
// source fetch.max.wait.ms of longFetchWait, and checks that partition 0
// restarts by itself and replicates its records well before an idle
// fetch would end: every record once, in order.
func restartWithIdleNeighbour(t *testing.T, name string, shallow, eos bool) {
	restartWithIdleNeighbourOpts(t, name, restartCase{shallow: shallow, eos: eos, retryFirst: 200 * time.Millisecond})
}

// restartCase is restartWithIdleNeighbourOpts's setting: shallow copy,
// exactly once, the first automatic restart's delay, and a hook run on
// the pair before the refusal (slow metadata answers, say).
type restartCase struct {
	shallow, eos bool
	retryFirst   time.Duration
	before       func(p *testcluster.Pair)
}

// restartWithIdleNeighbourOpts is restartWithIdleNeighbour with c.
func restartWithIdleNeighbourOpts(t *testing.T, name string, c restartCase) {
	shallow, eos := c.shallow, c.eos
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's request control")
	}
	topic := p.Topic(name)
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	a0, b1 := partRecords(topic, "a", 0, 0, 10), partRecords(topic, "b", 1, 0, 10)
	testcluster.Produce(t, &p.Source, append(a0, b1...)...)
	fc := recoveryFlow(p, topic)
	fc.ShallowCopy, fc.DisableProvenanceHeader = shallow, shallow
	fc.ExactlyOnce = eos
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
		Consumer: []kgo.Opt{kgo.FetchMaxWait(longFetchWait)}}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
		WithFlow(fc), withPartRetryFirst(c.retryFirst))
	if eos {
		waitReplicatedCommitted(t, m, 20)
	} else {
		waitReplicated(t, m, 20)
	}

	if c.before != nil {
		c.before(p)
	}
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: 1})
	c0 := partRecords(topic, "c", 0, 0, 10)
	testcluster.Produce(t, &p.Source, c0...)
	testcluster.Eventually(t, longFetchWait/3, "partition 0 restarted and caught up while partition 1 is idle", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 20 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	for part, want := range map[int32][]string{0: wantValues(a0, c0), 1: wantValues(b1)} {
		got := targetValues(t, p, remote, part)
		if eos {
			// Transaction markers (and the aborted transaction) take
			// offsets on the target: the values, once each, in order.
			got, want = valuesOnly(got), valuesOnly(want)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("target partition %d:\n got %v\nwant %v", part, got, want)
		}
	}
}

// valuesOnly strips the offsets off targetValues' "offset:value" entries.
func valuesOnly(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		_, out[i], _ = strings.Cut(v, ":")
	}
	return out
}

// TestRestartDoesNotWaitForIdleFetch (regression): a partition restarted
// by itself after a transient produce refusal was removed from the unit's
// consumer and added back, and kgo named it only in the fetch after the
// one in flight, which in an idle unit waits fetch.max.wait.ms (5 s by
// default): every automatic retry and operator restart took that long to
// move a record. The restart now moves the consumer's cursor (SetOffsets),
// which ends the fetch in flight.
func TestRestartDoesNotWaitForIdleFetch(t *testing.T) {
	t.Parallel()
	restartWithIdleNeighbour(t, "rfetch", false, false)
}

// TestRestartDoesNotWaitForIdleFetchExactlyOnce: exactly once, the
// refusal aborts the transaction and ends the session; the failed
// partition is carried into the next session unconsumed and added to the
// running consumer at its retry, which the poll loop gets fetched at once
// (pollKicks).
func TestRestartDoesNotWaitForIdleFetchExactlyOnce(t *testing.T) {
	t.Parallel()
	restartWithIdleNeighbour(t, "rfetchx", false, true)
}

// TestRestartDoesNotWaitForIdleFetchShallowCopy: shallow copy's raw fetch
// to the partition's leader, long-polling for the idle partition 1, is
// cut short when the restarted partition is ready to join it.
func TestRestartDoesNotWaitForIdleFetchShallowCopy(t *testing.T) {
	t.Parallel()
	restartWithIdleNeighbour(t, "rfetchsh", true, false)
}

// TestRestartInPlace: the cursor of a restarted partition moves in place
// only on the normal path, at an exact offset, when its previous feed
// polled records from the consumer.
func TestRestartInPlace(t *testing.T) {
	polled, fresh := &feed{}, &feed{}
	polled.cursor.Store(true)
	for _, c := range []struct {
		name    string
		shallow bool
		off     int64
		old     *feed
		want    bool
	}{
		{"polled, exact offset", false, 42, polled, true},
		{"polled, offset 0", false, 0, polled, true},
		{"shallow copy", true, 42, polled, false},
		{"from the log start", false, atStart, polled, false},
		{"at the log end", false, atEnd, polled, false},
		{"never polled (not assigned yet, or carried over unconsumed)", false, 42, fresh, false},
		{"no previous feed", false, 42, nil, false},
	} {
		if got := restartInPlace(c.shallow, c.off, c.old); got != c.want {
			t.Errorf("%s: restartInPlace = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPollKicks: each kick is due kickDelay after its add, wakes a
// waiting poll, and moves only the cursor of a live partition that polled
// nothing and is still its partition's feed, at the offset it was added
// at; a moved kick is tried again after twice its delay, kickTries times
// in all.
func TestPollKicks(t *testing.T) {
	var k pollKicks
	t0 := time.Unix(1000, 0)
	mk := func(topic string, part int32) *feed {
		return &feed{k: tp{topic, part}, partition: part, gate: newProduceGate()}
	}
	idle, polled, stopped, replaced, late, fromStart := mk("t", 0), mk("t", 1), mk("u", 2), mk("u", 3), mk("v", 0), mk("t", 3)
	polled.cursor.Store(true)
	stopped.stopped.Store(true)
	feeds := map[tp]*feed{idle.k: idle, polled.k: polled, stopped.k: stopped, late.k: late, fromStart.k: fromStart,
		replaced.k: mk("u", 3)} // replaced: a re-created topic's new feed
	woken := 0
	if due := k.waiting(func() { woken++ }); !due.IsZero() {
		t.Fatalf("due %v with nothing queued, want zero", due)
	}
	k.add(t0, []kick{{f: idle, off: 7}, {f: polled, off: 9}, {f: replaced, off: 150}})
	k.add(t0.Add(50*time.Millisecond), []kick{{f: stopped, off: 3}, {f: fromStart, off: atStart}, {f: late, off: 4}})
	if woken != 2 {
		t.Errorf("woken %d times, want 2 (once per add while the poll waits)", woken)
	}
	if due := k.waiting(nil); !due.Equal(t0.Add(kickDelay)) {
		t.Errorf("due %v, want %v (kickDelay after the first add)", due, t0.Add(kickDelay))
	}
	if ks := k.take(t0.Add(kickDelay-time.Millisecond), false); ks != nil {
		t.Errorf("took %d kicks before they were due", len(ks))
	}
	now := t0.Add(kickDelay)
	ks := k.take(now, true)
	if len(ks) != 2 {
		t.Fatalf("took %d kicks at %v, want the first add's 3 but the polled one (dropped)", len(ks), kickDelay)
	}
	set, moved, unlisted := kickOffsets(ks, feeds)
	if want := map[string]map[int32]kgo.EpochOffset{"t": {0: {Epoch: -1, Offset: 7}}}; fmt.Sprint(set) != fmt.Sprint(want) || unlisted != nil {
		t.Errorf("kickOffsets = %v, %d unlisted, want %v and none (the idle partition only: not the polled one, nor the replaced feed)", set, len(unlisted), want)
	}
	k.again(now, moved)
	if due := k.waiting(nil); !due.Equal(t0.Add(50*time.Millisecond + kickDelay)) {
		t.Errorf("due %v, want the second add's kicks at %v", due, t0.Add(50*time.Millisecond+kickDelay))
	}
	ks = k.take(t0.Add(50*time.Millisecond+kickDelay), true)
	set, _, unlisted = kickOffsets(ks, feeds)
	if want := map[string]map[int32]kgo.EpochOffset{"v": {0: {Epoch: -1, Offset: 4}}}; fmt.Sprint(set) != fmt.Sprint(want) {
		t.Errorf("second add: kickOffsets = %v, want %v (not the stopped one; the one at the log start is listed first)", set, want)
	}
	if len(unlisted) != 1 || unlisted[0].f.k != (tp{"t", 3}) {
		t.Errorf("second add: unlisted %v, want t/3 (added at the log start)", unlisted)
	}
	// The idle partition is tried again at 2, 4, 8, 16, 32 and 64 delays
	// after each try: kickTries tries in all, then dropped.
	var tries []time.Duration
	for range 10 {
		due := k.waiting(nil)
		if due.IsZero() {
			break
		}
		ks := k.take(due, true)
		_, moved, _ := kickOffsets(ks, feeds)
		for _, m := range moved {
			if m.f == idle {
				tries = append(tries, due.Sub(t0))
			}
		}
		k.again(due, moved)
	}
	if want := []time.Duration{300 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond, 3100 * time.Millisecond,
		6300 * time.Millisecond, 12700 * time.Millisecond}; fmt.Sprint(tries) != fmt.Sprint(want) {
		t.Errorf("idle partition tried again at %v, want %v", tries, want)
	}
	// One that polls meanwhile is not tried again.
	k.add(now, []kick{{f: idle, off: 7}})
	idle.cursor.Store(true)
	if ks := k.take(now.Add(kickDelay), true); ks != nil {
		t.Errorf("a partition that polled is taken: %v", ks)
	}
	if due := k.waiting(nil); !due.IsZero() {
		t.Errorf("a partition that polled is still queued, due %v", due)
	}
}

// TestPollKicksIdle: a kick marked idle (a session's first partitions, a
// start not listed) is made early only after a poll that returned
// nothing; a busy poll counts its first idleBusySkips tries without making
// them (twice the delay each time, as a try), and makes the later ones;
// one added at the log start is moved to its listed start (not moved, but
// tried again, when the listing missed it).
func TestPollKicksIdle(t *testing.T) {
	var k pollKicks
	t0 := time.Unix(1000, 0)
	mk := func(topic string, part int32) *feed {
		return &feed{k: tp{topic, part}, partition: part, gate: newProduceGate()}
	}
	exact, atLogStart, missed, eager := mk("t", 0), mk("t", 1), mk("t", 2), mk("u", 0)
	feeds := map[tp]*feed{exact.k: exact, atLogStart.k: atLogStart, missed.k: missed, eager.k: eager}
	k.add(t0, []kick{{f: exact, off: 5, idle: true}, {f: atLogStart, off: atStart, idle: true},
		{f: missed, off: atStart, idle: true}, {f: eager, off: 9}})
	now := t0.Add(kickDelay)
	ks := k.take(now, true)
	if len(ks) != 1 || ks[0].f != eager {
		t.Fatalf("a busy poll took %v, want the kick not marked idle only", ks)
	}
	// Busy polls at each due time: the idle kicks' first idleBusySkips
	// tries are skipped (0.1, 0.3, 0.7 s), the next is taken (1.5 s).
	var skipped []time.Duration
	for range idleBusySkips + 1 {
		due := k.waiting(nil)
		ks = k.take(due, true)
		if len(ks) > 0 {
			if len(ks) != 3 {
				t.Fatalf("a busy poll at %v took %d kicks, want the 3 idle ones", due.Sub(t0), len(ks))
			}
			now = due
			break
		}
		skipped = append(skipped, due.Sub(t0))
	}
	if want := []time.Duration{300 * time.Millisecond, 700 * time.Millisecond}; fmt.Sprint(skipped) != fmt.Sprint(want) {
		t.Errorf("busy polls skipped the idle kicks at %v (and at 100ms), want %v", skipped, want)
	}
	if got := now.Sub(t0); got != 1500*time.Millisecond {
		t.Errorf("a busy poll made the idle kicks at %v, want 1.5s (their fourth try)", got)
	}
	for _, n := range ks {
		if n.tries != idleBusySkips {
			t.Errorf("%v: %d tries counted, want %d (the skipped ones)", n.f.k, n.tries, idleBusySkips)
		}
	}
	set, moved, unlisted := kickOffsets(ks, feeds)
	set, tried := listedMoves(set, unlisted, map[tp]int64{atLogStart.k: 40})
	want := map[string]map[int32]kgo.EpochOffset{"t": {0: {Epoch: -1, Offset: 5}, 1: {Epoch: -1, Offset: 40}}}
	if fmt.Sprint(set) != fmt.Sprint(want) {
		t.Errorf("moves %v, want %v (the exact one, and the one at the log start at its listed start)", set, want)
	}
	if len(moved)+len(tried) != 3 {
		t.Errorf("%d kicks to try again, want 3 (the one whose start was not listed too)", len(moved)+len(tried))
	}
	// A fresh idle kick is made at once after an idle poll.
	var k2 pollKicks
	k2.add(t0, []kick{{f: exact, off: 5, idle: true}})
	if ks := k2.take(t0.Add(kickDelay), false); len(ks) != 1 || ks[0].tries != 0 {
		t.Errorf("an idle poll took %v, want the idle kick, no try counted yet", ks)
	}
}

// TestFirstPartitionsListedApartFetchedAtOnce (regression, found by CI's
// race run): a session's first partitions went to the consumer at the log
// start unkicked, on the view that they all join its first fetch. When
// kgo resolved their log starts apart (here partition 1's first listing
// fails once), partition 0 was fetched, went idle, and partition 1 waited
// for that idle fetch to end, fetch.max.wait.ms (here longFetchWait). The
// session's first partitions are now kicked when a poll finds nothing, at
// their exact offsets or, added at the log start, at the start the poll
// loop lists (pollKicks).
func TestFirstPartitionsListedApartFetchedAtOnce(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("exactly once %v", eos), func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst")
			if p.Source.Fake == nil {
				t.Skip("needs kfake's request control")
			}
			topic := p.Topic(fmt.Sprintf("firstapart%v", eos))
			remote := p.Source.Alias + "." + topic
			testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
			a0, b1 := partRecords(topic, "a", 0, 0, 10), partRecords(topic, "b", 1, 0, 10)
			testcluster.Produce(t, &p.Source, append(a0, b1...)...)
			// The first listing of partition 1 by the mirror's clients
			// fails (a leader move), whichever client lists it.
			p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: topic, Partitions: []int32{1},
				Err: kerr.NotLeaderForPartition, Count: 1})
			fc := recoveryFlow(p, topic)
			fc.ExactlyOnce = eos
			m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(),
				Consumer: []kgo.Opt{kgo.FetchMaxWait(longFetchWait)}}),
				WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
				WithFlow(fc))
			testcluster.Eventually(t, longFetchWait/3, "both partitions replicated", func() (bool, string) {
				st := m.Status().Flows[0]
				var reps []int64
				for _, ps := range st.Partitions {
					reps = append(reps, ps.Replicated)
				}
				return len(reps) == 2 && reps[0] == 10 && reps[1] == 10, fmt.Sprintf("replicated %v", reps)
			})
			for part, want := range map[int32][]string{0: wantValues(a0), 1: wantValues(b1)} {
				got := targetValues(t, p, remote, part)
				if eos {
					got, want = valuesOnly(got), valuesOnly(want)
				}
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("target partition %d:\n got %v\nwant %v", part, got, want)
				}
			}
		})
	}
}
