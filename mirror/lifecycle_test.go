package mirror

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// harness drives a lifecycle as the control goroutine does, without a
// cluster or a clock: it applies events and carries out the actions that
// concern the lifecycle itself (a feed per started or restarted
// partition; a stop confirmed at once with evStopped), and records every
// action as a line (act).
type harness struct {
	t    *testing.T
	m    *lifecycle
	now  time.Time
	acts []string
	// answers to the questions the lifecycle asks (actCheckRemote);
	// unset: the same ID as known.
	remoteAnswer func(topic string) (id [16]byte, err error)
	// holdStops keeps the confirmations of stops (evStopped) in stops
	// instead of applying them at once.
	holdStops bool
	stops     []*feed
}

func newHarness(t *testing.T, cfg lifeConfig) *harness {
	h := &harness{t: t, m: newLifecycle(cfg), now: time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)}
	h.m.apply(event{kind: evTick, a: h.now.UnixNano()}, nil)
	return h
}

// post applies ev, then the decisions, carrying out the actions.
func (h *harness) post(ev event) {
	h.m.apply(event{kind: evTick, a: h.now.UnixNano()}, nil)
	h.m.apply(ev, nil)
	h.run()
}

// advance moves the clock by d and lets the lifecycle decide again.
func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.m.redecide = true
	h.post(event{kind: evTick, a: h.now.UnixNano()})
}

func (h *harness) run() {
	for range 100 {
		h.m.decide()
		acts := h.m.take()
		if len(acts) == 0 {
			return
		}
		acts = append([]action(nil), acts...)
		for _, a := range acts {
			h.acts = append(h.acts, actString(a))
			switch a.kind {
			case actStart, actRestart:
				h.feed(a.p, a.off == atNone)
			case actRecreate:
				for _, p := range a.parts {
					h.feed(p, false)
				}
			case actStop:
				a.p.f.stopped.Store(true)
				if h.holdStops {
					h.stops = append(h.stops, a.p.f)
					continue
				}
				h.m.apply(event{kind: evStopped, f: a.p.f}, nil)
			case actCheckRemote:
				var id [16]byte
				var err error
				if h.remoteAnswer != nil {
					id, err = h.remoteAnswer(a.topic)
				} else {
					id = h.m.remoteIDs[a.topic]
				}
				h.m.apply(event{kind: evRemoteID, err: err, x: &evExtra{topic: a.topic, remote: a.remote, id: id}}, nil)
			}
		}
	}
	h.t.Fatal("the lifecycle does not settle")
}

func (h *harness) feed(p *partState, stopped bool) *feed {
	f := &feed{k: tp{p.topic, p.partition}, remote: p.remote, partition: p.partition, gate: newProduceGate(), next: -1, p: p}
	f.stopped.Store(stopped)
	p.f = f
	return f
}

// start starts partition k at st and returns its feed.
func (h *harness) start(k tp, st startPos) *feed {
	h.post(event{kind: evStart, x: &evExtra{k: k, start: st}})
	return h.m.parts[k].f
}

// cur returns the current feed of k.
func (h *harness) cur(k tp) *feed { return h.m.parts[k].f }

// fetch hands records at the source offsets ups of f to the producer, as
// the poll loop does (refused once f is stopped: nil).
func (h *harness) fetch(f *feed, ups ...int64) []*kgo.Record {
	if !f.live() {
		return nil
	}
	var recs []*kgo.Record
	var batch []inflight
	for _, up := range ups {
		r := &kgo.Record{Value: []byte(fmt.Sprint(up))}
		recs = append(recs, r)
		batch = append(batch, inflight{up: up, size: 1, rec: r})
	}
	h.post(event{kind: evFetched, f: f, a: ups[len(ups)-1] + 1, b: -1, x: &evExtra{recs: batch}})
	return recs
}

// ack acknowledges r of f at target offset down; fail fails it with err.
func (h *harness) ack(f *feed, r *kgo.Record, down int64) {
	r.Offset = down
	h.post(event{kind: evResult, f: f, rec: r})
}

func (h *harness) fail(f *feed, r *kgo.Record, err error) {
	h.post(event{kind: evResult, f: f, rec: r, err: err})
}

func (h *harness) status(k tp) PartitionStatus {
	return h.m.parts[k].status(h.now, time.Hour)
}

// took returns the actions recorded since the last call, joined.
func (h *harness) took() string {
	s := strings.Join(h.acts, "; ")
	h.acts = nil
	return s
}

func actString(a action) string {
	k := func(p *partState) string { return fmt.Sprintf("%s/%d", p.topic, p.partition) }
	off := func(o int64) string {
		switch o {
		case atStart:
			return "start"
		case atEnd:
			return "end"
		case atNone:
			return "none"
		}
		return fmt.Sprint(o)
	}
	switch a.kind {
	case actStart:
		return "start " + k(a.p) + " at " + off(a.off)
	case actStop:
		return "stop " + k(a.p)
	case actPause:
		return "pause " + k(a.p)
	case actFailed:
		return "failed " + k(a.p)
	case actEndSession:
		return "end-session " + k(a.p)
	case actCheckRemote:
		return "check " + a.topic
	case actRefreshLimits:
		return "limits " + a.remote
	case actRestart:
		return "restart " + k(a.p) + " at " + off(a.off)
	case actRefill:
		return "refill " + a.topic
	case actGap:
		return fmt.Sprintf("gap %s [%d,%d)", k(a.p), a.gap.From, a.gap.To)
	case actRecreate:
		var ps []string
		for _, p := range a.parts {
			ps = append(ps, k(p))
		}
		return "recreate " + a.topic + " " + strings.Join(ps, ",")
	}
	return fmt.Sprint("action ", a.kind)
}

// TestProduceResultMatchedToItsRecord (regression, issue 18 part 1): kgo
// fails a record it refuses before buffering at once, ahead of the
// acknowledgements of the records produced before it. The result used to be
// charged to the oldest record in flight (record 0): the resume point never
// advanced, and the records acknowledged after the failure were ignored.
// Each result is now matched to its own record and applied in produce
// order: record 0 counts, the partition fails at record 1, record 2's late
// acknowledgement does not move the resume point past the failure, and
// the partition takes no record once the failure is known.
func TestProduceResultMatchedToItsRecord(t *testing.T) {
	t.Parallel()
	h := newHarness(t, lifeConfig{flow: "a->b"})
	k := tp{"t", 0}
	f := h.start(k, startPos{remote: "a.t", committed: 9})
	recs := h.fetch(f, 10, 11, 12)
	tooLarge := &RecordTooLargeError{Offset: 11, Size: 2 << 20, Limit: 1 << 20, Setting: "max.message.bytes of a.t on b (1048576 bytes)"}
	h.fail(f, recs[1], tooLarge) // before record 0's acknowledgement
	if st := h.status(k); st.State != StateRunning || st.Replicated != 10 {
		t.Fatalf("after the early failure: %+v, want RUNNING, replicated up to the resume point (record 10 in flight)", st)
	}
	if h.fetch(f, 13) != nil {
		t.Fatal("the partition took a record after the failure was known")
	}
	h.ack(f, recs[0], 100)
	st := h.status(k)
	if st.State != StateFailed || st.Replicated != 11 || !strings.Contains(st.Error, "at offset 11 is 2097152 bytes") {
		t.Fatalf("after record 10's ack: %+v, want FAILED at offset 11 with record 10 replicated", st)
	}
	h.ack(f, recs[2], 101)
	p := h.m.parts[k]
	if st := h.status(k); st.State != StateFailed || st.Replicated != 11 || p.acked != 10 || p.inFlight() != 0 {
		t.Fatalf("after record 12's ack: %+v (acked %d, %d in flight), want FAILED, acked 10, none in flight", st, p.acked, p.inFlight())
	}
	h.took()
	h.post(event{kind: evRestart, a: -1, x: &evExtra{topic: "t"}})
	if got, want := h.took(), "limits a.t; restart t/0 at 11"; got != want {
		t.Fatalf("restart: %s, want %s", got, want)
	}
	if n := h.m.parts[k]; n.acked != 10 || n.committed != 9 || n.err != nil {
		t.Fatalf("successor acked %d committed %d err %v, want 10, 9, none", n.acked, n.committed, n.err)
	}
}

// expect checks the actions recorded since the last check.
func (h *harness) expect(step, want string) {
	h.t.Helper()
	if got := h.took(); got != want {
		h.t.Errorf("%s: actions %q, want %q", step, got, want)
	}
}

// expectState checks partition k's acknowledged and committed offsets
// and state.
func (h *harness) expectState(step string, k tp, state State, acked, committed int64) {
	h.t.Helper()
	p := h.m.parts[k]
	if st := h.status(k); st.State != state || p.acked != acked || p.committed != committed {
		h.t.Errorf("%s: %s acked %d committed %d (%s), want %s acked %d committed %d", step, st.State, p.acked, p.committed, st.Error, state, acked, committed)
	}
}

// TestLifecycleRules: every rule of a partition's recovery as a sequence
// of events, with the actions expected after each and the offsets where it
// ends (DESIGN.md, "Partition lifecycle"). No cluster, no clock.
func TestLifecycleRules(t *testing.T) {
	t.Parallel()
	t0, t1 := tp{"t", 0}, tp{"t", 1}
	start := func(h *harness, k tp, committed int64) *feed {
		f := h.start(k, startPos{remote: "a.t", committed: committed, topicID: [16]byte{1}, remoteID: [16]byte{2}})
		h.took()
		return f
	}
	cases := []struct {
		name string
		cfg  lifeConfig
		run  func(h *harness)
	}{{
		name: "the record's own error waits for a restart request, which resumes at the failed record",
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11, 12)
			h.ack(f, r[0], 100)
			h.fail(f, r[1], kerr.InvalidRecord)
			h.expect("failed", "failed t/0; stop t/0; pause t/0")
			h.ack(f, r[2], 101) // written after the failure? it is not counted
			h.expectState("drained", t0, StateFailed, 10, 9)
			if st := h.status(t0); !st.NextRetry.IsZero() {
				t.Errorf("a record error schedules no retry: NextRetry %v", st.NextRetry)
			}
			h.advance(time.Hour)
			h.expect("an hour later", "")
			if n := h.m.requestRestart("t", 0); n != 1 {
				t.Errorf("requestRestart = %d, want 1", n)
			}
			h.run()
			h.expect("restart requested", "restart t/0 at 11")
			h.expectState("restarted", t0, StateRunning, 10, 9)
		},
	}, {
		name: "an error that can go away restarts automatically, with backoff reset by a replicated record",
		cfg:  lifeConfig{retryFirst: 5 * time.Second},
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			h.fail(f, r[0], kerr.TopicAuthorizationFailed)
			h.expect("failed", "failed t/0; stop t/0; pause t/0")
			if st := h.status(t0); st.NextRetry.Sub(st.Since) != 5*time.Second {
				t.Errorf("first retry after %v, want 5s", st.NextRetry.Sub(st.Since))
			}
			h.advance(4 * time.Second)
			h.expect("4 s", "")
			h.advance(time.Second)
			h.expect("5 s", "restart t/0 at 10")
			f = h.cur(t0)
			r = h.fetch(f, 10)
			h.fail(f, r[0], kerr.TopicAuthorizationFailed)
			h.expect("failed again", "failed t/0; stop t/0; pause t/0")
			if st := h.status(t0); st.NextRetry.Sub(st.Since) != 10*time.Second || st.Retries != 1 {
				t.Errorf("second retry after %v (retries %d), want 10s, 1", st.NextRetry.Sub(st.Since), st.Retries)
			}
			h.advance(10 * time.Second)
			h.expect("10 s", "restart t/0 at 10")
			f = h.cur(t0)
			r = h.fetch(f, 10, 11)
			h.ack(f, r[0], 100)
			h.fail(f, r[1], kerr.TopicAuthorizationFailed)
			h.expect("failed after a record", "failed t/0; stop t/0; pause t/0")
			if st := h.status(t0); st.NextRetry.Sub(st.Since) != 5*time.Second {
				t.Errorf("retry after a replicated record: %v, want 5s again", st.NextRetry.Sub(st.Since))
			}
		},
	}, {
		name: "a transient failure ends the session; later acknowledgements and resume points stay before it",
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11, 12)
			h.ack(f, r[0], 100)
			h.fail(f, r[1], kgo.ErrRecordRetries)
			h.expect("transient", "end-session t/0")
			h.ack(f, r[2], 101)
			h.expectState("after", t0, StateRunning, 10, 9)
			if ups := h.m.flushable(); len(ups) != 0 {
				t.Errorf("resume points to store after a transient failure: %+v, want none", ups)
			}
		},
	}, {
		name: "a failure that arrives before the acknowledgements of earlier records fails the partition at its record",
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11, 12)
			h.fail(f, r[2], &RecordTooLargeError{Offset: 12, Size: 2 << 20, Limit: 1 << 20, Setting: "x"})
			h.expect("early failure", "stop t/0")
			if h.fetch(f, 13) != nil {
				t.Error("records taken after an early failure")
			}
			h.ack(f, r[0], 100)
			h.expectState("10 acknowledged", t0, StateRunning, 10, 9)
			h.ack(f, r[1], 101)
			h.expect("11 acknowledged", "limits a.t; failed t/0; pause t/0")
			h.expectState("failed at 12", t0, StateFailed, 11, 9)
			h.post(event{kind: evRestart, a: 0, x: &evExtra{topic: "t"}})
			h.expect("restart", "limits a.t; restart t/0 at 12")
		},
	}, {
		name: "a gap with GapStop stops the partition until the loss is accepted",
		cfg:  lifeConfig{gapStop: true},
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			h.ack(f, r[0], 100)
			f.stopped.Store(true) // the poll loop stops it at the gap
			h.post(event{kind: evFailed, f: f, err: &GapError{Topic: "t", Partition: 0, From: 11, To: 20}})
			h.expect("gap", "stop t/0; pause t/0")
			h.expectState("stopped", t0, StateFailed, 10, 9)
			h.advance(time.Hour)
			h.expect("an hour later", "")
			h.post(event{kind: evRestart, a: -1, x: &evExtra{}})
			got := h.took()
			if got != "restart t/0 at 11" {
				t.Errorf("restart: %q", got)
			}
		},
	}, {
		name: "a partition stopped on a record too large restarts once its limit was read, beside one still draining",
		run: func(h *harness) {
			f := start(h, t0, 9)
			g := start(h, t1, 4)
			s := h.fetch(g, 5, 6)
			h.fail(g, s[0], kerr.InvalidRecord) // record 6 still in flight
			r := h.fetch(f, 10)
			h.fail(f, r[0], &RecordTooLargeError{Offset: 10, Size: 2, Limit: 1, Setting: "x"})
			h.took()
			h.post(event{kind: evRestart, a: -1, x: &evExtra{}})
			h.expect("asked", "limits a.t; restart t/0 at 10")
			h.ack(g, s[1], 50)
			h.expect("t/1 drained", "restart t/1 at 5")
		},
	}, {
		// Regression (CI of 987a26d, TestRecordTooLargeMatchedToItsRecord/
		// exactly-once): the operator raised the limit and restarted the
		// partition before the unit read the new limit; the raise was
		// noted while the partition ran (nothing failed to restart), and
		// the partition then failed again at the old limit, in the
		// session that ends to reopen the producer. It stayed FAILED.
		name: "a partition that fails at a limit already raised restarts by itself, in the next session",
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			tooLarge := &RecordTooLargeError{Offset: 10, Size: 2 << 20, Limit: 1 << 20, Setting: "x"}
			h.fail(f, r[0], tooLarge)
			h.took()
			h.post(event{kind: evRestart, a: -1, x: &evExtra{}}) // the operator, before the unit read the new limit
			h.expect("asked", "limits a.t; restart t/0 at 10")
			h.post(event{kind: evLimitRaised, a: 4 << 20, x: &evExtra{remote: "a.t"}})
			h.expect("raised while running", "")
			f = h.cur(t0)
			r = h.fetch(f, 10)
			// The old producer's limit, applied alone: the unit ends the
			// session (a rebuild is pending), and whatever its last
			// decisions do there, the partition is FAILED or stopped
			// when the next session takes it over.
			h.m.apply(event{kind: evResult, f: f, rec: r[0], err: tooLarge}, nil)
			if p := h.m.parts[t0]; p.err == nil || !p.restartAsked {
				t.Errorf("failed at a limit already raised: err %v, restart asked %v; want failed, restart asked", p.err, p.restartAsked)
			}
			h.m.take()
			h.post(event{kind: evSession}) // the unit reopens its producer
			h.took()
			h.start(t0, startPos{remote: "a.t", committed: 9, topicID: [16]byte{1}, remoteID: [16]byte{2}})
			h.expect("next session", "start t/0 at none; pause t/0; limits a.t; restart t/0 at 10")
			f = h.cur(t0)
			r = h.fetch(f, 10)
			h.fail(f, r[0], &RecordTooLargeError{Offset: 10, Size: 5 << 20, Limit: 4 << 20, Setting: "x"})
			h.expect("too large for the new producer's limit too", "limits a.t; failed t/0; stop t/0; pause t/0")
			h.expectState("failed at the raised limit", t0, StateFailed, 9, 9)
		},
	}, {
		name: "a partition carried over FAILED below the next session's limit restarts; at or above it, it stays FAILED",
		run: func(h *harness) {
			f, g := start(h, t0, 9), start(h, t1, 4)
			r, q := h.fetch(f, 10), h.fetch(g, 5)
			h.fail(f, r[0], &RecordTooLargeError{Offset: 10, Size: 2 << 20, Limit: 1 << 20, Setting: "x"})
			h.fail(g, q[0], &RecordTooLargeError{Offset: 5, Size: 8 << 20, Limit: 1 << 20, Setting: "x"})
			h.post(event{kind: evSession}) // the limit was raised to 4 MiB between sessions: no evLimitRaised
			h.took()
			h.start(t0, startPos{remote: "a.t", committed: 9, topicID: [16]byte{1}, remoteID: [16]byte{2}, limit: 4 << 20})
			h.expect("t/0 carried", "start t/0 at none; pause t/0; limits a.t; restart t/0 at 10")
			h.start(t1, startPos{remote: "a.t", committed: 4, topicID: [16]byte{1}, remoteID: [16]byte{2}, limit: 1 << 20})
			h.expect("t/1 carried at the same limit", "start t/1 at none; pause t/1")
			h.expectState("t/1 stays failed", t1, StateFailed, 4, 4)
		},
	}, {
		name: "a raise noted before the session starts its partitions marks the carried ones",
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			h.fail(f, r[0], &RecordTooLargeError{Offset: 10, Size: 2 << 20, Limit: 1 << 20, Setting: "x"})
			h.post(event{kind: evSession})
			h.post(event{kind: evLimitRaised, a: 4 << 20, x: &evExtra{remote: "a.t"}}) // the offer's noteLimits, before any start
			h.post(event{kind: evSession})                                             // the session ends at once to reopen the producer
			h.took()
			h.start(t0, startPos{remote: "a.t", committed: 9, topicID: [16]byte{1}, remoteID: [16]byte{2}})
			h.expect("carried twice", "start t/0 at none; pause t/0; limits a.t; restart t/0 at 10")
		},
	}, {
		name: "a lowered limit restarts nothing, and a new session forgets the limits",
		run: func(h *harness) {
			f := start(h, t0, 9)
			h.post(event{kind: evLimitRaised, a: 1 << 19, x: &evExtra{remote: "a.t"}})
			r := h.fetch(f, 10)
			h.fail(f, r[0], &RecordTooLargeError{Offset: 10, Size: 1 << 20, Limit: 1 << 19, Setting: "x"})
			h.expect("failed at the lowered limit", "limits a.t; failed t/0; stop t/0; pause t/0")
			h.post(event{kind: evLimitRaised, a: 1 << 20, x: &evExtra{remote: "a.t"}})
			h.expect("raised again", "limits a.t; restart t/0 at 10")
			h.post(event{kind: evSession})
			if len(h.m.limits) != 0 {
				t.Errorf("limits after a new session: %v, want none", h.m.limits)
			}
		},
	}, {
		name: "restart requests count the failed partitions only",
		run: func(h *harness) {
			f := start(h, t0, 9)
			start(h, t1, 4)
			r := h.fetch(f, 10)
			h.fail(f, r[0], kerr.InvalidTimestamp)
			h.took()
			for _, c := range []struct {
				topic string
				part  int32
				want  int
			}{{"", -1, 1}, {"t", 1, 0}, {"u", -1, 0}, {"t", 0, 1}} {
				if n := h.m.requestRestart(c.topic, c.part); n != c.want {
					t.Errorf("requestRestart(%q, %d) = %d, want %d", c.topic, c.part, n, c.want)
				}
			}
			h.run()
			h.expect("asked", "restart t/0 at 10")
		},
	}, {
		name: "an unknown remote topic still missing after the quiet retries is reported, then retried with backoff; found again, the partition restarts",
		cfg:  lifeConfig{retryFirst: time.Second},
		run: func(h *harness) {
			h.m.remoteIDs["t"] = [16]byte{2}
			missing := true
			h.remoteAnswer = func(string) ([16]byte, error) {
				if missing {
					return [16]byte{}, kerr.UnknownTopicOrPartition
				}
				return [16]byte{2}, nil
			}
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			h.fail(f, r[0], kerr.UnknownTopicOrPartition)
			h.expect("quiet", "stop t/0; pause t/0")
			h.expectState("quiet", t0, StateRetrying, 9, 9)
			for i, d := range []time.Duration{200, 400, 800, 1600} {
				h.advance(d * time.Millisecond)
				h.expect(fmt.Sprintf("quiet check %d, missing", i+1), "check t")
				h.expectState("still quiet", t0, StateRetrying, 9, 9)
			}
			h.advance(3200 * time.Millisecond)
			h.expect("the fifth check, still missing: reported", "check t; failed t/0")
			if st := h.status(t0); st.State != StateFailed || st.NextRetry.Sub(h.now) != time.Second || st.Retries != 1 ||
				!strings.Contains(st.Error, "remote topic a.t not found on the target") {
				t.Errorf("missing: %+v, want FAILED, retried in 1s, retries 1", st)
			}
			h.advance(time.Second)
			h.expect("due: asked, missing", "check t")
			if st := h.status(t0); st.State != StateFailed || st.NextRetry.Sub(h.now) != 2*time.Second || st.Retries != 2 {
				t.Errorf("missing: %+v, want FAILED, retried in 2s, retries 2", st)
			}
			missing = false
			h.advance(2 * time.Second)
			h.expect("due: found", "check t; restart t/0 at 10")
			if a := h.m.parts[t0]; a.remoteID != [16]byte{2} {
				t.Errorf("remote ID %v", a.remoteID)
			}
		},
	}, {
		// Regression (issue 22, 20 000 partitions on two brokers per
		// cluster): a broker that did not know a remote topic just created
		// failed 727 partitions, reported and restarted after 5 s.
		name: "a remote topic a target broker does not know yet is retried quietly after the last acknowledged record, and reported after five tries in a row",
		run: func(h *harness) {
			h.m.remoteIDs["t"] = [16]byte{2} // the target lists it with the ID the partition writes to
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11)
			h.ack(f, r[0], 100)
			h.fail(f, r[1], kerr.UnknownTopicOrPartition)
			h.expect("quiet", "stop t/0; pause t/0")
			if st := h.status(t0); st.State != StateRetrying || !strings.Contains(st.Error, "UNKNOWN_TOPIC_OR_PARTITION") ||
				st.NextRetry.Sub(h.now) != unknownQuietFirst {
				t.Errorf("quiet: %+v, want RETRYING on UNKNOWN_TOPIC_OR_PARTITION in %v", st, unknownQuietFirst)
			}
			h.advance(unknownQuietFirst)
			h.expect("due: the same ID", "check t; restart t/0 at 11")
			f = h.cur(t0)
			r = h.fetch(f, 11)
			h.fail(f, r[0], kerr.UnknownTopicID)
			h.expect("again", "stop t/0; pause t/0")
			h.advance(2 * unknownQuietFirst)
			h.expect("due after twice the delay", "check t; restart t/0 at 11")
			f = h.cur(t0)
			r = h.fetch(f, 11, 12)
			h.ack(f, r[0], 101)
			h.expectState("replicating again", t0, StateRunning, 11, 9)
			h.fail(f, r[1], kerr.UnknownTopicOrPartition)
			h.expect("after an acknowledgement, quiet anew", "stop t/0; pause t/0")
			for i := range unknownQuietTries {
				h.advance(unknownQuietFirst << i)
				h.expect(fmt.Sprintf("quiet restart %d", i+1), "check t; restart t/0 at 12")
				f = h.cur(t0)
				h.fail(f, h.fetch(f, 12)[0], kerr.UnknownTopicOrPartition)
				if i < unknownQuietTries-1 {
					h.expect(fmt.Sprintf("quiet failure %d", i+2), "stop t/0; pause t/0")
				}
			}
			h.expect("the sixth in a row: reported", "failed t/0; stop t/0; pause t/0")
			h.expectState("reported", t0, StateFailed, 11, 9)
		},
	}, {
		// Shallow copy acknowledges batches (evBatchAck), not records: an
		// acknowledged batch resets the quiet tries as a record does, or
		// a partition quietly retried at each of a few remote topic
		// creations over its life would be reported on the next.
		name: "an acknowledged shallow-copy batch resets the quiet tries of an unknown remote topic",
		run: func(h *harness) {
			h.m.remoteIDs["t"] = [16]byte{2}
			f := start(h, t0, 10)
			for i := range unknownQuietTries - 1 {
				h.fail(f, h.fetch(f, 11)[0], kerr.UnknownTopicOrPartition)
				h.expect(fmt.Sprintf("quiet failure %d", i+1), "stop t/0; pause t/0")
				h.advance(unknownQuietFirst << i)
				h.expect(fmt.Sprintf("quiet restart %d", i+1), "check t; restart t/0 at 11")
				f = h.cur(t0)
			}
			h.post(event{kind: evFetched, f: f, a: 12, b: 12, x: &evExtra{recs: []inflight{{up: 11, size: 10, n: 1}}}})
			r := h.fetch(f, 12)
			h.m.apply(event{kind: evBatchAck, f: f, a: 11, b: 100, c: 1, d: 10, x: &evExtra{ts: h.now}}, nil)
			h.expectState("the batch acknowledged", t0, StateRunning, 11, 10)
			h.fail(f, r[0], kerr.UnknownTopicOrPartition)
			h.expect("after an acknowledged batch, quiet anew", "stop t/0; pause t/0")
			h.advance(unknownQuietFirst)
			h.expect("quiet restart after the batch", "check t; restart t/0 at 12")
			f = h.cur(t0)
			h.fail(f, h.fetch(f, 12)[0], kerr.UnknownTopicOrPartition)
			h.expect("still quiet: two in a row since the batch", "stop t/0; pause t/0")
			if st := h.status(t0); st.State != StateRetrying {
				t.Errorf("after the batch: %+v, want RETRYING", st)
			}
		},
	}, {
		name: "a re-created remote topic is refilled from the source's log start, once its records came back",
		run: func(h *harness) {
			h.m.remoteIDs["t"] = [16]byte{2}
			h.remoteAnswer = func(string) ([16]byte, error) { return [16]byte{3}, nil }
			f := start(h, t0, 9)
			g := start(h, t1, 4)
			r := h.fetch(f, 10, 11)
			h.ack(f, r[0], 100)
			h.fail(f, r[1], kerr.UnknownTopicID)
			h.expect("quiet", "stop t/0; pause t/0")
			h.advance(unknownQuietFirst)
			h.expect("due: a new ID", "check t; stop t/1; pause t/1; refill t; restart t/0 at start; restart t/1 at start")
			for _, k := range []tp{t0, t1} {
				n := h.m.parts[k]
				if n.committed != -1 || n.acked != -1 || n.remoteID != [16]byte{3} || n.sw.prevUp != -1 {
					t.Errorf("%v refilled: committed %d acked %d remote ID %v", k, n.committed, n.acked, n.remoteID)
				}
			}
			_ = g
		},
	}, {
		name: "exactly once: a failed record's partition restarts only after its transaction aborted, after the committed resume point",
		cfg:  lifeConfig{eos: true, syncs: true},
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11)
			h.ack(f, r[0], 100)
			h.fail(f, r[1], kerr.InvalidRecord)
			h.expect("failed", "failed t/0; stop t/0; pause t/0")
			if _, err := h.m.txnPrepare(); err == nil {
				t.Error("the transaction would commit")
			}
			h.post(event{kind: evRestart, a: -1, x: &evExtra{}})
			h.expect("asked, transaction open", "")
			h.post(event{kind: evTxnAborted})
			h.expect("aborted", "restart t/0 at 10")
			h.expectState("restarted", t0, StateRunning, 9, 9)
		},
	}, {
		// Review of be3702f: a state restarted after a re-creation has
		// newLog set before any record of the new log is acknowledged;
		// its stored resume point (the old log's offset, the old ID) was
		// taken for one whose ID moved, and the next transaction stored
		// the old log's offset under the new ID: the next session would
		// resume there in the new log, skipping its first records.
		name: "exactly once: a partition restarted after a re-creation stores nothing before a record of the new log is in a transaction",
		cfg:  lifeConfig{eos: true, syncs: true},
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			h.fail(f, h.fetch(f, 10)[0], kerr.InvalidRecord)
			h.post(event{kind: evTxnAborted})
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{9}}})
			h.post(event{kind: evRestart, a: 0, x: &evExtra{topic: "t"}})
			h.took()
			if ups, err := h.m.txnPrepare(); err != nil || len(ups) != 0 {
				t.Fatalf("prepare before the new log's first record: %+v %v, want nothing to store (resume point 9 of topic 1 stays)", ups, err)
			}
			nf := h.cur(t0)
			n := h.fetch(nf, 0)
			h.ack(nf, n[0], 100)
			ups, err := h.m.txnPrepare()
			if err != nil || len(ups) != 1 || ups[0].off != 0 || ups[0].srcID != [16]byte{9} {
				t.Fatalf("prepare after the new log's first record: %+v %v, want offset 0 of topic 9", ups, err)
			}
		},
	}, {
		// Review of 2fb292f: a partition stopped at a gap (GapStop)
		// ignored the acks of its records in flight, all before the gap,
		// and the transaction skipped it: its records committed without
		// their resume point, and RestartFailed copied them again.
		name: "exactly once: a partition stopped at a gap commits what it acknowledged before the gap",
		cfg:  lifeConfig{eos: true, syncs: true},
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11)
			h.post(event{kind: evFailed, f: f, err: &GapError{Topic: "t", Partition: 0, From: 12, To: 20}})
			h.took()
			h.ack(f, r[0], 100)
			h.ack(f, r[1], 101)
			ups, err := h.m.txnPrepare()
			if err != nil || len(ups) != 1 || ups[0].off != 11 {
				t.Fatalf("prepare: %+v %v, want resume point 11 (both records are in the transaction)", ups, err)
			}
			h.post(event{kind: evTxnCommitted, x: &evExtra{ups: ups}})
			h.expectState("committed", t0, StateFailed, 11, 11)
			h.post(event{kind: evRestart, a: 0, x: &evExtra{topic: "t"}})
			h.expect("the operator accepts the gap: after the committed offset (the accepted gap skips to the log start)", "restart t/0 at 12")
		},
	}, {
		// Review of 4ce9e3b: RestartFailed before the transaction holding
		// a gap-stopped partition's acknowledged records committed
		// replaced the state, and the transaction stored no resume point
		// for them: the restart copied them again.
		name: "exactly once: a partition stopped at a gap restarts after the transaction holding its acknowledged records commits",
		cfg:  lifeConfig{eos: true, syncs: true},
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11)
			h.post(event{kind: evFailed, f: f, err: &GapError{Topic: "t", Partition: 0, From: 12, To: 20}})
			h.took()
			h.ack(f, r[0], 100)
			h.ack(f, r[1], 101)
			h.post(event{kind: evRestart, a: 0, x: &evExtra{topic: "t"}})
			h.expect("asked before the commit: waits", "")
			ups, err := h.m.txnPrepare()
			if err != nil || len(ups) != 1 || ups[0].off != 11 {
				t.Fatalf("prepare: %+v %v, want resume point 11", ups, err)
			}
			h.post(event{kind: evTxnCommitted, x: &evExtra{ups: ups}})
			h.expect("committed: restarts after it", "restart t/0 at 12")
		},
	}, {
		// Review of 4ce9e3b: the acks of records in flight at a stop
		// count when the stop is a gap in the log, not when it is a
		// re-creation's gap (their offsets are the old log's) or after
		// one of them failed.
		name: "acks after a stop: a gap in the log counts them, a re-creation or a failed record in flight does not",
		cfg:  lifeConfig{gapStop: true, syncs: true},
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11)
			h.post(event{kind: evFetched, f: f, a: 12, b: 30, x: &evExtra{}})
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{2}}})
			h.took()
			h.ack(f, r[0], 100)
			if p := h.m.parts[t0]; p.err == nil || p.acked != 9 {
				t.Fatalf("re-creation gap stop: err %v, acked %d; want stopped at 9 (the old log's acks do not count)", p.err, p.acked)
			}
			g := start(h, t1, 4)
			s := h.fetch(g, 5, 6, 7)
			h.post(event{kind: evFailed, f: g, err: &GapError{Topic: "t", Partition: 1, From: 8, To: 20}})
			h.took()
			h.ack(g, s[0], 200)
			h.fail(g, s[1], kerr.InvalidRecord)
			h.ack(g, s[2], 202)
			if p := h.m.parts[t1]; p.acked != 5 {
				t.Errorf("gap stop with a failed record in flight: acked %d, want 5 (before the failed record)", p.acked)
			}
		},
	}, {
		// Review of 85409d1: after a re-creation the old log's feed
		// shares the state until its stop is seen; a gap it found stopped
		// the partition already reading the new log (with GapStop), and
		// the gap the operator then accepted skipped the new log's start
		// check.
		name: "a gap the old log's feed finds after a re-creation does not stop the partition reading the new log",
		cfg:  lifeConfig{gapStop: true},
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			h.ack(f, h.fetch(f, 10)[0], 100)
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{2}}})
			h.took()
			if h.cur(t0) == f {
				t.Fatal("no new feed for the new log")
			}
			h.post(event{kind: evFailed, f: f, err: &GapError{Topic: "t", Partition: 0, From: 11, To: 20}})
			if p := h.m.parts[t0]; p.err != nil {
				t.Errorf("the old feed's gap stopped the partition: %v", p.err)
			}
		},
	}, {
		// Review of 85409d1: txnPrepare returned the first error it met
		// walking a map: a partition's own failure could hide another's
		// fencing, which tells the unit it lost the slot.
		name: "exactly once: a fencing error ends the transaction whatever other partition failed",
		cfg:  lifeConfig{eos: true},
		run: func(h *harness) {
			for i := range int32(8) {
				k := tp{"t", i}
				f := start(h, k, 9)
				h.fail(f, h.fetch(f, 10)[0], kerr.InvalidRecord)
			}
			k := tp{"u", 0}
			f := start(h, k, 9)
			h.fail(f, h.fetch(f, 10)[0], kerr.ProducerFenced)
			if _, err := h.m.txnPrepare(); !errors.Is(err, kerr.ProducerFenced) {
				t.Errorf("prepare: %v, want the fencing error", err)
			}
		},
	}, {
		// Review of b2e327f: a transaction-level error of a record in
		// flight at a gap stop is the transaction's (fencing tells the
		// unit it lost the slot), not the partition's failure.
		name: "exactly once: a fencing error of a record in flight at a gap stop ends the transaction as fenced",
		cfg:  lifeConfig{eos: true, syncs: true},
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11)
			h.post(event{kind: evFailed, f: f, err: &GapError{Topic: "t", Partition: 0, From: 12, To: 20}})
			h.took()
			h.ack(f, r[0], 100)
			h.fail(f, r[1], kerr.InvalidProducerEpoch)
			if _, err := h.m.txnPrepare(); !errors.Is(err, kerr.InvalidProducerEpoch) {
				t.Errorf("prepare: %v, want the fencing error", err)
			}
		},
	}, {
		// Review of 2fb292f: restarted after its old log's record in
		// flight failed, the state kept the sync writer, which still
		// waited for that record's ack before the new log's session: the
		// new log's offset runs were tagged with the old topic's ID.
		name: "a partition failed after a re-creation, before the new log's first ack, starts the new log's offset-run session at its first ack",
		cfg:  lifeConfig{syncs: true},
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{9}}})
			h.took()
			f1 := h.cur(t0)
			n0 := h.fetch(f1, 0) // the new log's first record: its session waits for the old one's ack
			h.fail(f, r[0], kerr.InvalidRecord)
			h.ack(f1, n0[0], 101) // after the failure: not applied
			h.expect("failed", "failed t/0; stop t/0; pause t/0")
			h.post(event{kind: evRestart, a: 0, x: &evExtra{topic: "t"}})
			h.expect("restarted by the operator", "restart t/0 at start")
			nf := h.cur(t0)
			h.ack(nf, h.fetch(nf, 0)[0], 100)
			if w := &h.m.parts[t0].sw.runs; w.pending || w.topicID != [16]byte{9} || w.sessUp != 0 {
				t.Errorf("after the new log's first ack: session of topic %v from %d (pending %v), want topic 9's from 0", w.topicID, w.sessUp, w.pending)
			}
		},
	}, {
		name: "exactly once: a committed transaction stores its resume points and feeds the sync writer",
		cfg:  lifeConfig{eos: true, syncs: true},
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11)
			h.ack(f, r[0], 100)
			h.ack(f, r[1], 101)
			if due := h.m.parts[t0].sw.due; len(due) != 0 {
				t.Errorf("syncs before the commit: %v", due)
			}
			ups, err := h.m.txnPrepare()
			if err != nil || len(ups) != 1 || ups[0].off != 11 {
				t.Fatalf("prepare: %+v %v, want resume point 11", ups, err)
			}
			h.post(event{kind: evTxnCommitted, x: &evExtra{ups: ups}})
			h.expectState("committed", t0, StateRunning, 11, 11)
			if due := h.m.parts[t0].sw.due; fmt.Sprint(due) != "[[10 100] [11 101]]" {
				t.Errorf("syncs after the commit: %v, want [[10 100] [11 101]] (offset.lag.max 0)", due)
			}
		},
	}, {
		name: "a re-created source topic: gaps reported, the running partition read from the new log start, the failed one restarts there",
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			g := start(h, t1, 4)
			r := h.fetch(f, 10)
			h.post(event{kind: evFetched, f: f, a: 11, b: 30, x: &evExtra{}})
			s := h.fetch(g, 5)
			h.fail(g, s[0], kerr.InvalidRecord)
			h.took()
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{9}}})
			// The failed one's record is the old topic's: it restarts at
			// the new log's start without the operator.
			h.expect("re-created", "gap t/0 [10,30); gap t/1 [5,5); recreate t t/0; restart t/1 at start")
			h.ack(f, r[0], 100) // the old topic's record in flight
			nf := h.cur(t0)
			if nf == f || !h.m.parts[t0].reincarnate {
				t.Fatal("no new feed for the new topic")
			}
			h.fetch(nf, 0)
			if p := h.m.parts[t0]; p.reincarnate || !p.sw.runs.pending || p.sw.runs.pendID != [16]byte{9} {
				t.Errorf("the new topic's first records do not start a new offset-run session")
			}
		},
	}, {
		// Left by the note of 87c0d8a: the sync writer's new session was
		// told how many entries were in flight, but a shallow-copy entry
		// is a batch acknowledged record by record: the old log's records
		// after the batch's first were tagged with the new topic's ID.
		name: "shallow copy: the new log's offset-run session starts after every record of the old log's batches in flight",
		cfg:  lifeConfig{syncs: true},
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			h.post(event{kind: evFetched, f: f, a: 13, b: 13, x: &evExtra{recs: []inflight{{up: 10, size: 30, n: 3}}}})
			h.took()
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{9}}})
			h.took()
			nf := h.cur(t0)
			h.post(event{kind: evFetched, f: nf, a: 2, b: 2, x: &evExtra{recs: []inflight{{up: 0, size: 20, n: 2}}}})
			w := &h.m.parts[t0].sw.runs
			if !w.pending || w.pendAcks != 3 {
				t.Fatalf("new session pending after %d acknowledgements (pending %v), want after the old batch's 3", w.pendAcks, w.pending)
			}
			h.m.apply(event{kind: evBatchAck, f: f, a: 10, b: 100, c: 3, d: 30, x: &evExtra{ts: h.now}}, nil)
			if !w.pending || w.topicID != [16]byte{1} {
				t.Errorf("after the old log's batch: session of topic %v (pending %v), want still topic 1's", w.topicID, w.pending)
			}
			h.m.apply(event{kind: evBatchAck, f: nf, a: 0, b: 103, c: 2, d: 20, x: &evExtra{ts: h.now}}, nil)
			if w.pending || w.topicID != [16]byte{9} || w.sessUp != 0 {
				t.Errorf("after the new log's batch: session of topic %v from %d (pending %v), want topic 9's from 0", w.topicID, w.sessUp, w.pending)
			}
		},
	}, {
		// An ack for a batch that is not the head of the queue (never sent
		// by shallow copy: a partition has one batch in flight at most)
		// leaves the queue as it is instead of popping the head.
		name: "shallow copy: a batch ack that is not for the queue's head pops nothing",
		cfg:  lifeConfig{syncs: true},
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			h.m.apply(event{kind: evBatchAck, f: f, a: 10, b: 100, c: 1, d: 10, x: &evExtra{ts: h.now}}, nil)
			p := h.m.parts[t0]
			if p.inFlight() != 1 || p.queue[p.head].rec != r[0] || p.acked != 9 {
				t.Fatalf("after a batch ack for the record's offset: %d in flight, acked %d; want the record still in flight, 9", p.inFlight(), p.acked)
			}
			h.ack(f, r[0], 100)
			h.post(event{kind: evFetched, f: f, a: 14, b: 14, x: &evExtra{recs: []inflight{{up: 11, size: 30, n: 3}}}})
			h.m.apply(event{kind: evBatchAck, f: f, a: 12, b: 101, c: 2, d: 20, x: &evExtra{ts: h.now}}, nil)
			if p.inFlight() != 1 || p.acked != 10 {
				t.Fatalf("after a batch ack for another first offset: %d in flight, acked %d; want the batch still in flight, 10", p.inFlight(), p.acked)
			}
			h.m.apply(event{kind: evBatchAck, f: f, a: 11, b: 101, c: 3, d: 30, x: &evExtra{ts: h.now}}, nil)
			if p.inFlight() != 0 || p.acked != 13 || p.ackedDown != 103 {
				t.Errorf("after the batch's ack: %d in flight, acked %d -> %d; want 0, 13 -> 103", p.inFlight(), p.acked, p.ackedDown)
			}
		},
	}, {
		// Review of 078d28e: after a re-creation the old feed's batch and
		// the new feed's records share the state; a new record's result
		// that came before the batch's ack waited in early, and batchAck
		// never applied it: the partition's acks stopped for good.
		name: "shallow copy: a new log's record acknowledged before the old log's batch is applied after the batch",
		cfg:  lifeConfig{syncs: true},
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			h.post(event{kind: evFetched, f: f, a: 13, b: 13, x: &evExtra{recs: []inflight{{up: 10, size: 30, n: 3}}}})
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{9}}})
			h.took()
			nf := h.cur(t0)
			n := h.fetch(nf, 0, 1)
			h.ack(nf, n[0], 103) // before the old batch's ack
			h.m.apply(event{kind: evBatchAck, f: f, a: 10, b: 100, c: 3, d: 30, x: &evExtra{ts: h.now}}, nil)
			if p := h.m.parts[t0]; p.acked != 0 || len(p.early) != 0 || p.inFlight() != 1 {
				t.Fatalf("after the old batch's ack: acked %d, %d early, %d in flight; want 0 (the new record's early ack applied), 0, 1", p.acked, len(p.early), p.inFlight())
			}
			h.ack(nf, n[1], 104)
			if p := h.m.parts[t0]; p.acked != 1 || p.ackedID != [16]byte{9} {
				t.Errorf("acked %d of topic %v, want 1 of topic 9", p.acked, p.ackedID)
			}
		},
	}, {
		// Review of 078d28e: the target refused the old log's batch with
		// a new record queued behind it: the last entry (the new record)
		// was removed instead, and the old log's counts stayed.
		name: "shallow copy: the old log's batch the target did not take leaves the queue, not the new log's record behind it",
		cfg:  lifeConfig{syncs: true},
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			h.post(event{kind: evFetched, f: f, a: 13, b: 13, x: &evExtra{recs: []inflight{{up: 10, size: 30, n: 3}}}})
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{9}}})
			h.took()
			nf := h.cur(t0)
			n := h.fetch(nf, 0)
			h.m.apply(event{kind: evUnpush, f: f, a: 10}, nil)
			p := h.m.parts[t0]
			if p.inFlight() != 1 || p.queue[p.head].rec != n[0] || p.oldLeft != 0 || p.sw.runs.pendAcks != 0 {
				t.Fatalf("after the unpush: %d in flight (head %+v), oldLeft %d, sync writer waits for %d; want the new record alone, 0, 0",
					p.inFlight(), p.queue[p.head], p.oldLeft, p.sw.runs.pendAcks)
			}
			h.ack(nf, n[0], 100)
			if w := &p.sw.runs; p.acked != 0 || w.pending || w.topicID != [16]byte{9} {
				t.Errorf("after the new record's ack: acked %d, session of topic %v (pending %v); want 0, topic 9's", p.acked, w.topicID, w.pending)
			}
		},
	}, {
		name: "a resume point names the source topic whose log its offset is of, across a re-creation",
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			r := h.fetch(f, 10, 11)
			h.ack(f, r[0], 100)
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{9}}})
			h.ack(f, r[1], 101) // the old topic's record in flight
			if ups := h.m.flushable(); len(ups) != 1 || ups[0].off != 11 || ups[0].srcID != [16]byte{1} {
				t.Errorf("resume point after the old log's last ack: %+v, want offset 11 of topic ID 1", ups)
			}
			nf := h.cur(t0)
			n := h.fetch(nf, 0)
			h.ack(nf, n[0], 102)
			if ups := h.m.flushable(); len(ups) != 1 || ups[0].off != 0 || ups[0].srcID != [16]byte{9} {
				t.Errorf("resume point after the new log's first ack: %+v, want offset 0 of topic ID 9", ups)
			}
		},
	}, {
		// Left by the note of 87c0d8a: flushable skipped a partition whose
		// acked offset equalled the stored one, so a new log reaching the
		// old log's stored offset kept the old ID (the next owner: a false
		// gap, and the partition copied again).
		name: "a new log's ack at the stored offset stores the resume point again, with the new ID",
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 0)
			r := h.fetch(f, 1)
			h.ack(f, r[0], 100)
			h.post(event{kind: evFlushed, x: &evExtra{ups: h.m.flushable()}})
			if ups := h.m.flushable(); len(ups) != 0 {
				t.Fatalf("stored: %+v, want nothing to store", ups)
			}
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{9}}})
			nf := h.cur(t0)
			n := h.fetch(nf, 0, 1)
			h.ack(nf, n[0], 101)
			h.ack(nf, n[1], 102)
			ups := h.m.flushable()
			if len(ups) != 1 || ups[0].off != 1 || ups[0].srcID != [16]byte{9} {
				t.Fatalf("resume point at the new log's offset 1: %+v, want offset 1 of topic ID 9", ups)
			}
			h.post(event{kind: evFlushed, x: &evExtra{ups: ups}})
			if ups := h.m.flushable(); len(ups) != 0 {
				t.Errorf("stored again: %+v, want nothing to store", ups)
			}
		},
	}, {
		// Review of 3d05b1f: a re-creation seen between sessions (the
		// offer's ID differs, no partition running) was applied to no
		// partition: the carried ones resumed at the old log's offset.
		name: "a source topic re-created between sessions: gap, the carried partition starts at the new log's start",
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			h.ack(f, r[0], 100)
			h.post(event{kind: evSession})
			h.took()
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{9}}})
			h.expect("re-created", "gap t/0 [11,11); recreate t ")
			nf := h.start(t0, startPos{remote: "a.t", committed: 10, topicID: [16]byte{9}, remoteID: [16]byte{2}})
			h.expect("carried", "start t/0 at start")
			n := h.fetch(nf, 0)
			h.ack(nf, n[0], 101)
			if ups := h.m.flushable(); len(ups) != 1 || ups[0].off != 0 || ups[0].srcID != [16]byte{9} {
				t.Errorf("resume point: %+v, want offset 0 of topic ID 9", ups)
			}
		},
	}, {
		// Review of 9c66366: a state restarted after a re-creation keeps
		// newLog; held (not failed) when a second re-creation came, the
		// late acks of its records tagged them with the newest topic.
		name: "records of the second log acknowledged after a third was seen keep the second log's ID",
		run: func(h *harness) {
			h.m.topicIDs["t"] = [16]byte{1}
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			h.fail(f, r[0], kerr.InvalidRecord)
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{2}}})
			h.post(event{kind: evRestart, a: 0, x: &evExtra{topic: "t"}})
			h.took()
			nf := h.cur(t0)
			n := h.fetch(nf, 0, 1, 2)
			h.ack(nf, n[0], 100)
			h.fail(nf, n[2], &RecordTooLargeError{Offset: 2, Size: 2, Limit: 1, Setting: "x"}) // held: record 1 still in flight
			h.post(event{kind: evSourceRecreated, x: &evExtra{topic: "t", id: [16]byte{3}}})
			h.ack(nf, n[1], 101)
			if ups := h.m.flushable(); len(ups) != 1 || ups[0].off != 1 || ups[0].srcID != [16]byte{2} {
				t.Errorf("resume point: %+v, want offset 1 of topic ID 2 (the log it is an offset of)", ups)
			}
		},
	}, {
		name: "a failed partition stays failed across sessions, with its schedule",
		cfg:  lifeConfig{retryFirst: time.Minute},
		run: func(h *harness) {
			f := start(h, t0, 9)
			r := h.fetch(f, 10)
			h.fail(f, r[0], kerr.PolicyViolation)
			h.took()
			since := h.status(t0).Since
			h.post(event{kind: evSession})
			h.start(t0, startPos{remote: "a.t", committed: 9})
			h.expect("next session", "start t/0 at none; pause t/0")
			if st := h.status(t0); st.State != StateFailed || !st.Since.Equal(since) || st.NextRetry.Sub(since) != time.Minute {
				t.Errorf("carried: %+v", st)
			}
			h.advance(time.Minute)
			h.expect("due", "restart t/0 at 10")
		},
	}, {
		// Exactly once, a quiet failure aborts the transaction, which ends
		// the unit's session (commitTxn): the partition is carried into
		// the next one. It stays a quiet retry there (RETRYING, not
		// FAILED), and its tries in a row still count, so that a topic
		// the target never knows is reported after unknownQuietTries.
		name: "exactly once: a quiet retry stays quiet across the session its aborted transaction ended, and its tries still count",
		cfg:  lifeConfig{eos: true},
		run: func(h *harness) {
			h.m.remoteIDs["t"] = [16]byte{2}
			f := start(h, t0, 9)
			h.fail(f, h.fetch(f, 10)[0], kerr.UnknownTopicOrPartition)
			h.expect("quiet", "stop t/0; pause t/0")
			if _, err := h.m.txnPrepare(); err == nil {
				t.Error("the transaction would commit")
			}
			h.post(event{kind: evTxnAborted})
			h.took()
			h.post(event{kind: evSession})
			h.start(t0, startPos{remote: "a.t", committed: 9, topicID: [16]byte{1}, remoteID: [16]byte{2}})
			h.took()
			if st := h.status(t0); st.State != StateRetrying {
				t.Errorf("carried into the next session: %s (%s), want RETRYING", st.State, st.Error)
			}
			if p := h.m.parts[t0]; p.unknownTries != 1 {
				t.Errorf("carried: %d quiet tries, want 1", p.unknownTries)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.cfg.flow == "" {
				c.cfg.flow = "a->b"
			}
			c.run(newHarness(t, c.cfg))
		})
	}
}

// TestRestartWaitsForTheFeedsStop: a failed partition due for a restart
// is not restarted before the stop of its feed is confirmed (evStopped,
// which the control goroutine posts after the stop, so that it follows
// every batch the poll loop handed over before it): a batch still on its
// way would otherwise be produced for the old state after its successor
// started, twice and out of order.
func TestRestartWaitsForTheFeedsStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, lifeConfig{flow: "a->b"})
	h.holdStops = true
	k := tp{"t", 0}
	f := h.start(k, startPos{remote: "a.t", committed: 9})
	r := h.fetch(f, 10)
	h.fail(f, r[0], kerr.InvalidRecord)
	h.took()
	h.post(event{kind: evRestart, a: -1, x: &evExtra{}})
	if got := h.took(); got != "" {
		t.Fatalf("restarted before the stop was confirmed: %s", got)
	}
	// A batch the poll loop handed over before the stop reached it.
	late := &kgo.Record{}
	h.post(event{kind: evFetched, f: f, a: 12, b: -1, x: &evExtra{recs: []inflight{{up: 11, size: 1, rec: late}}}})
	for _, sf := range h.stops {
		h.post(event{kind: evStopped, f: sf})
	}
	if got := h.took(); got != "" {
		t.Fatalf("restarted with the late batch in flight: %s", got)
	}
	h.fail(f, late, errPartitionStopped)
	if got, want := h.took(), "restart t/0 at 10"; got != want {
		t.Fatalf("after the late batch's result: %s, want %s", got, want)
	}
}

// TestInboxKeepsOrder: the inbox keeps produce results (in chunks of
// their own) in order with the other events: a result posted before an
// event is applied before it, across chunk boundaries, and the results of
// records queued in produce order are applied without waiting (early).
func TestInboxKeepsOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, lifeConfig{flow: "a->b"})
	k := tp{"t", 0}
	f := h.start(k, startPos{remote: "a.t", committed: -1})
	b := newInbox()
	const n = 2*resChunk + 500
	var batch []inflight
	var recs []*kgo.Record
	for i := range n {
		r := &kgo.Record{Offset: int64(1000 + i)}
		recs = append(recs, r)
		batch = append(batch, inflight{up: int64(i), size: 1, rec: r})
	}
	if !b.postFetched(f, batch, n, n) {
		t.Fatal("postFetched refused a live feed")
	}
	for _, r := range recs[:1500] {
		b.postResult(f, r, nil)
	}
	reply := make(chan int, 1)
	b.post(event{kind: evRestart, a: -1, x: &evExtra{reply: reply}})
	for _, r := range recs[1500:] {
		b.postResult(f, r, nil)
	}
	evs, res, arena := b.take()
	if len(evs) != 2 || evs[0].res != 0 || evs[1].res != 1500 || res.n != n || len(res.chunks) != 3 {
		t.Fatalf("events %d (marks %d, %d), results %d in %d chunks; want 2 (0, 1500), %d in 3", len(evs), evs[0].res, evs[1].res, res.n, len(res.chunks), n)
	}
	m := h.m
	rc := resCursor{rs: &res}
	for _, ev := range evs {
		rc.applyTo(ev.res, m)
		if ev.kind == evRestart {
			if p := m.parts[k]; p.acked != 1499 {
				t.Errorf("at the event: acked %d, want 1499 (the results posted before it)", p.acked)
			}
			continue
		}
		m.apply(ev, arena)
	}
	rc.applyTo(res.n, m)
	if p := m.parts[k]; p.acked != n-1 || p.ackedDown != 1000+n-1 || p.early != nil || p.inFlight() != 0 {
		t.Errorf("acked %d (down %d), early %v, %d in flight; want %d, %d, none, 0", p.acked, p.ackedDown, p.early != nil, p.inFlight(), n-1, 1000+n-1)
	}
	b.giveBack(evs, res, arena)
	if len(b.freeRes) != 3 {
		t.Errorf("%d chunks kept for reuse, want 3", len(b.freeRes))
	}
}

// TestLifecycleTailStart (issue 23): a partition started at a verified
// tail of the target resumes after it, reports it replicated, stores it as
// its resume point at the first flush (the stored one stays until then),
// and its offset-sync writer starts a run at the next record; exactly
// once, or when the tail is not ahead, the resume point wins.
func TestLifecycleTailStart(t *testing.T) {
	t.Parallel()
	k := tp{"t", 0}
	h := newHarness(t, lifeConfig{flow: "a->b", syncs: true, lagMax: 100})
	f := h.start(k, startPos{remote: "a.t", committed: 9, byTail: true, tail: 20, tailDown: 120})
	h.expect("start at the tail", "start t/0 at 21")
	h.expectState("started", k, StateRunning, 20, 9)
	if st := h.status(k); st.Replicated != 21 || st.Committed != 9 {
		t.Fatalf("status %+v, want replicated 21 (the tail), resume point 9", st)
	}
	if ups := h.m.flushable(); len(ups) != 1 || ups[0].off != 20 {
		t.Fatalf("flushable %+v, want the tail 20", ups)
	}
	h.post(event{kind: evFlushed, x: &evExtra{ups: h.m.flushable()}})
	h.expectState("flushed", k, StateRunning, 20, 20)
	recs := h.fetch(f, 21, 22)
	h.ack(f, recs[0], 121)
	h.ack(f, recs[1], 122)
	h.expectState("copying", k, StateRunning, 22, 20)
	outs := h.m.syncs(true)
	if len(outs) != 1 || len(outs[0].due) == 0 || outs[0].due[0] != [2]int64{21, 121} {
		t.Fatalf("offset syncs %+v, want the first one 21->121 (a new run after the tail)", outs)
	}

	for _, c := range []struct {
		name string
		cfg  lifeConfig
		st   startPos
		want string
	}{
		{"exactly once", lifeConfig{flow: "a->b", eos: true}, startPos{remote: "a.t", committed: 9, byTail: true, tail: 20, tailDown: 120}, "start t/0 at 10"},
		{"tail not ahead", lifeConfig{flow: "a->b"}, startPos{remote: "a.t", committed: 30, byTail: true, tail: 20, tailDown: 120}, "start t/0 at 31"},
		{"refill", lifeConfig{flow: "a->b"}, startPos{remote: "a.t", committed: 9, fromStart: true, byTail: true, tail: 20, tailDown: 120}, "start t/0 at start"},
		{"no resume point", lifeConfig{flow: "a->b", startLatest: true}, startPos{remote: "a.t", committed: -1, byTail: true, tail: 4, tailDown: 4}, "start t/0 at 5"},
	} {
		h := newHarness(t, c.cfg)
		h.start(k, c.st)
		h.expect(c.name, c.want)
	}
}

// TestNewSessionDefersExactlyOnceRetries: exactly once, a failed
// partition's automatic retry comes no sooner than its retry delay after a
// new session starts, so that the healthy partitions of its unit commit
// before a retry that fails again aborts their transaction; an operator's
// restart and at-least-once partitions keep their schedule. (A retry due
// when the next session started ran at once, and a topic refused by an ACL
// stopped every other topic of its slot: a helper trying to break
// exactly-once mode, stop 38.)
func TestNewSessionDefersExactlyOnceRetries(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name      string
		eos       bool
		asked     bool
		nextRetry time.Time
		want      time.Time
	}{
		{"due before the session", true, false, t0.Add(-time.Second), t0.Add(2 * time.Second)},
		{"due after the session's retry delay", true, false, t0.Add(5 * time.Second), t0.Add(5 * time.Second)},
		{"an operator asked", true, true, t0.Add(-time.Second), t0.Add(-time.Second)},
		{"at least once", false, false, t0.Add(-time.Second), t0.Add(-time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newLifecycle(lifeConfig{flow: "a->b", eos: tc.eos})
			k := tp{"orders", 0}
			p := newPartState("orders", "a.orders", 0, 9, [16]byte{}, tc.eos, t0)
			p.err, p.autoRetry, p.retryDelay, p.nextRetry, p.restartAsked = errors.New("refused"), true, 2*time.Second, tc.nextRetry, tc.asked
			m.parts[k] = p
			m.apply(event{kind: evSession, a: t0.UnixNano()}, nil)
			if got := m.carry[k].nextRetry; !got.Equal(tc.want) {
				t.Errorf("next retry %v after the session started, want %v", got.Sub(t0), tc.want.Sub(t0))
			}
		})
	}
}

// TestExactlyOnceRetryNotStarvedBySessionRestarts: exactly once, partition
// bad/0 fails on an error that can go away (TOPIC_AUTHORIZATION_FAILED,
// automatic retry 2 s later). The unit's session then restarts every
// second for a reason that has nothing to do with bad/0 (another
// partition's transient failures, a limit rebuild, a fencing, ...).
// newSession pushed bad/0's retry to now+retryDelay at every session, so
// it never came (a review, stop 38); it now pushes only a retry already
// due.
func TestExactlyOnceRetryNotStarvedBySessionRestarts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, lifeConfig{flow: "a->b", eos: true, retryFirst: 2 * time.Second})
	bad, good := tp{"bad", 0}, tp{"good", 0}
	fb := h.start(bad, startPos{remote: "a.bad", committed: 9})
	h.start(good, startPos{remote: "a.good", committed: 9})
	recs := h.fetch(fb, 10)
	h.fail(fb, recs[0], kerr.TopicAuthorizationFailed)
	h.post(event{kind: evTxnAborted}) // the transaction holding it aborts: the session ends
	h.took()
	restarted := false
	for i := 0; i < 60; i++ {
		h.advance(time.Second)
		// A new session, ended a second later by something else.
		h.post(event{kind: evSession, a: h.now.UnixNano()})
		h.start(bad, startPos{remote: "a.bad", committed: 9})
		h.start(good, startPos{remote: "a.good", committed: 9})
		if strings.Contains(h.took(), "restart bad/0") {
			restarted = true
			break
		}
		h.advance(500 * time.Millisecond)
		if strings.Contains(h.took(), "restart bad/0") {
			restarted = true
			break
		}
	}
	if !restarted {
		ps := h.status(bad)
		t.Fatalf("bad/0 never retried in 90 s of sessions 1.5 s apart (retry delay 2 s): state %s, next retry in %v, retries %d",
			ps.State, ps.NextRetry.Sub(h.now), ps.Retries)
	}
}

// TestExactlyOnceBackoffGrowsWithoutCommits: exactly once, the target refuses
// (MESSAGE_TOO_LARGE) the batch holding the record at offset 12 although
// it fits the producer's limit (batchRefusedError: retried
// automatically), after acknowledging records 10 and 11 of the same
// transaction in an earlier batch. Every retry acknowledges 10 and 11
// again, which resets the partition's backoff (retries, retryDelay) even
// though their transaction aborts with the failure: nothing is ever
// committed, yet the retry delay never grew past the first one, and each
// retry aborted the slot's transaction and ended its session: the slot
// restarted every first retry delay (5 s in production) for ever (a
// review, stop 38). Exactly once, only a commit resets the backoff now.
func TestExactlyOnceBackoffGrowsWithoutCommits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, lifeConfig{flow: "a->b", eos: true, retryFirst: time.Second})
	k := tp{"t", 0}
	f := h.start(k, startPos{remote: "a.t", committed: 9})
	var delays []time.Duration
	for round := 0; round < 6; round++ {
		recs := h.fetch(f, 10, 11, 12)
		h.ack(f, recs[0], 100)
		h.ack(f, recs[1], 101)
		h.fail(f, recs[2], &batchRefusedError{offset: 12, size: 100, setting: "max.message.bytes of a.t on b (1048588 bytes)", err: kerr.MessageTooLarge})
		p := h.m.parts[k]
		if p.committed != 9 {
			t.Fatalf("committed %d", p.committed)
		}
		delays = append(delays, p.nextRetry.Sub(p.failedAt))
		h.post(event{kind: evTxnAborted})
		h.post(event{kind: evSession, a: h.now.UnixNano()})
		h.start(k, startPos{remote: "a.t", committed: 9})
		h.took()
		for i := 0; i < 1000 && !strings.Contains(h.took(), "restart t/0"); i++ {
			h.advance(100 * time.Millisecond)
		}
		f = h.cur(k)
	}
	if delays[len(delays)-1] <= delays[0] {
		t.Fatalf("retry delays of a partition that never commits a record: %v (the backoff never grows: acks of aborted transactions reset it)", delays)
	}
}

// TestLifecycleForgetDeletedTopic: a source topic deleted while the unit
// replicated it is forgotten at the next session's start: its carried
// partitions and its IDs go, the other topic's stay (a cluster whose
// topics come and go does not grow the unit's state).
func TestLifecycleForgetDeletedTopic(t *testing.T) {
	h := newHarness(t, lifeConfig{flow: "a->b"})
	gone, kept := [16]byte{1}, [16]byte{2}
	for _, k := range []tp{{"gone", 0}, {"gone", 1}, {"kept", 0}} {
		id := kept
		if k.topic == "gone" {
			id = gone
		}
		h.m.topicIDs[k.topic], h.m.remoteIDs[k.topic] = id, id
		h.start(k, startPos{remote: "a." + k.topic, committed: 9, topicID: id, remoteID: id})
	}
	h.post(event{kind: evSession, a: h.now.UnixNano()})
	h.m.forget("gone")
	var carried []string
	for k := range h.m.carry {
		carried = append(carried, fmt.Sprintf("%s[%d]", k.topic, k.partition))
	}
	if fmt.Sprint(carried) != "[kept[0]]" || len(h.m.parts) != 0 {
		t.Errorf("carried %v, running %d; want [kept[0]] and none", carried, len(h.m.parts))
	}
	if _, ok := h.m.topicIDs["gone"]; ok || h.m.topicIDs["kept"] != kept || h.m.remoteIDs["kept"] != kept {
		t.Errorf("topic IDs %v, remote IDs %v; want only kept's", h.m.topicIDs, h.m.remoteIDs)
	}
	if _, ok := h.m.remoteIDs["gone"]; ok {
		t.Errorf("remote IDs %v still name the deleted topic", h.m.remoteIDs)
	}
}
