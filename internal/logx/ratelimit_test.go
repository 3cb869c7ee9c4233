package logx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock runs AfterFunc callbacks synchronously from Advance, in due
// order; jump moves the time without running them (a timer that is late).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Advance moves the time by d, running every timer due on the way.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) {
				due = t
				break
			}
		}
		if due == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		due.stopped = true
		c.now = due.at
		c.mu.Unlock()
		due.f()
	}
}

// jump moves the time by d without running timers.
func (c *fakeClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// lines renders records as "LEVEL msg k=v ..." (time left out).
type lines struct {
	mu  sync.Mutex
	out []string
	buf bytes.Buffer
	h   slog.Handler
}

func newLines() *lines {
	l := &lines{}
	l.h = slog.NewTextHandler(&l.buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	return l
}

// sink is a handler writing into l; it keeps With attributes through the
// text handler.
type sink struct {
	l *lines
	h slog.Handler
}

func (s sink) Enabled(context.Context, slog.Level) bool { return true }
func (s sink) Handle(ctx context.Context, r slog.Record) error {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.l.buf.Reset()
	if err := s.h.Handle(ctx, r); err != nil {
		return err
	}
	s.l.out = append(s.l.out, strings.TrimSuffix(s.l.buf.String(), "\n"))
	return nil
}
func (s sink) WithAttrs(as []slog.Attr) slog.Handler { return sink{s.l, s.h.WithAttrs(as)} }
func (s sink) WithGroup(n string) slog.Handler       { return sink{s.l, s.h.WithGroup(n)} }

func (l *lines) handler() slog.Handler { return sink{l, l.h} }

func (l *lines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.out
	l.out = nil
	return out
}

func setup(o Options) (*fakeClock, *lines, *Limiter, *slog.Logger) {
	c := newFakeClock()
	l := newLines()
	o.Clock = c
	h := RateLimit(l.handler(), o)
	return c, l, h, slog.New(h)
}

func diffLines(t *testing.T, what string, want, got []string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// TestRateLimitWindow: the first record is logged, the next 51 within the
// window are counted, and the window's end logs one summary with the last
// repeat's attributes and the exact count.
func TestRateLimitWindow(t *testing.T) {
	c, l, _, log := setup(Options{})
	log.Warn("flow state", "flow", "a->b", "state", "RETRYING", "err", errors.New("attempt 0"))
	for i := 1; i <= 51; i++ {
		c.Advance(500 * time.Millisecond)
		log.Warn("flow state", "flow", "a->b", "state", "RETRYING", "err", fmt.Errorf("attempt %d", i))
	}
	diffLines(t, "within the window", []string{`level=WARN msg="flow state" flow=a->b state=RETRYING err="attempt 0"`}, l.take())
	c.Advance(30*time.Second - 51*500*time.Millisecond - time.Nanosecond)
	diffLines(t, "just before the window's end", nil, l.take())
	c.Advance(time.Nanosecond)
	diffLines(t, "at the window's end", []string{`level=WARN msg="flow state" flow=a->b state=RETRYING err="attempt 51" repeated=51 in_last=30s`}, l.take())
	// The next one starts a new window.
	c.Advance(time.Second)
	log.Warn("flow state", "flow", "a->b", "state", "RETRYING", "err", errors.New("attempt 52"))
	log.Warn("flow state", "flow", "a->b", "state", "RETRYING", "err", errors.New("attempt 53"))
	c.Advance(30 * time.Second)
	diffLines(t, "second window", []string{
		`level=WARN msg="flow state" flow=a->b state=RETRYING err="attempt 52"`,
		`level=WARN msg="flow state" flow=a->b state=RETRYING err="attempt 53" repeated=1 in_last=30s`,
	}, l.take())
}

// TestRateLimitNoRepeat: a window without repeats ends without a summary.
func TestRateLimitNoRepeat(t *testing.T) {
	c, l, _, log := setup(Options{Window: 10 * time.Second})
	log.Info("created heartbeats topic", "topic", "heartbeats")
	c.Advance(10 * time.Second)
	log.Info("created heartbeats topic", "topic", "heartbeats")
	c.Advance(time.Minute)
	diffLines(t, "lines", []string{
		`level=INFO msg="created heartbeats topic" topic=heartbeats`,
		`level=INFO msg="created heartbeats topic" topic=heartbeats`,
	}, l.take())
}

// TestRateLimitLateTimer: when a record comes after the window ended but
// before its timer ran, the summary is logged first, then the record.
func TestRateLimitLateTimer(t *testing.T) {
	c, l, _, log := setup(Options{Window: 10 * time.Second})
	for range 4 {
		log.Warn("fetch failed", "cluster", "a")
	}
	c.jump(12 * time.Second)
	log.Warn("fetch failed", "cluster", "a")
	diffLines(t, "lines", []string{
		`level=WARN msg="fetch failed" cluster=a`,
		`level=WARN msg="fetch failed" cluster=a repeated=3 in_last=10s`,
		`level=WARN msg="fetch failed" cluster=a`,
	}, l.take())
	c.Advance(time.Hour) // the stopped timer and the new window's: nothing to say
	diffLines(t, "after", nil, l.take())
}

// TestRateLimitKinds: level, message and every non-error attribute (of
// the record and of With/WithGroup) tell kinds apart; "err"/"error" keys
// and error values do not.
func TestRateLimitKinds(t *testing.T) {
	c, l, _, log := setup(Options{Window: time.Minute})
	ab, ba := log.With("flow", "a->b"), log.With("flow", "b->a")
	for i := range 3 {
		ab.Warn("unreachable", "cluster", "b", "err", fmt.Errorf("dial %d", i))
		ba.Warn("unreachable", "cluster", "b", "error", fmt.Sprintf("dial %d", i))
		ab.Error("unreachable", "cluster", "b")
		ab.Warn("unreachable", "cluster", "a", "cause", fmt.Errorf("io %d", i))
		ab.WithGroup("task").Warn("unreachable", "cluster", "b")
		ab.Warn("unreachable", slog.Group("target", "cluster", "b", "err", fmt.Errorf("g %d", i)))
	}
	diffLines(t, "first of each kind", []string{
		`level=WARN msg=unreachable flow=a->b cluster=b err="dial 0"`,
		`level=WARN msg=unreachable flow=b->a cluster=b error="dial 0"`,
		`level=ERROR msg=unreachable flow=a->b cluster=b`,
		`level=WARN msg=unreachable flow=a->b cluster=a cause="io 0"`,
		`level=WARN msg=unreachable flow=a->b task.cluster=b`,
		`level=WARN msg=unreachable flow=a->b target.cluster=b target.err="g 0"`,
	}, l.take())
	c.Advance(time.Minute)
	got := l.take()
	sort.Strings(got)
	diffLines(t, "summaries", []string{
		`level=ERROR msg=unreachable flow=a->b cluster=b repeated=2 in_last=1m0s`,
		`level=WARN msg=unreachable flow=a->b cluster=a cause="io 2" repeated=2 in_last=1m0s`,
		`level=WARN msg=unreachable flow=a->b cluster=b err="dial 2" repeated=2 in_last=1m0s`,
		`level=WARN msg=unreachable flow=a->b target.cluster=b target.err="g 2" repeated=2 in_last=1m0s`,
		// Under WithGroup, the summary's attributes are in the group too.
		`level=WARN msg=unreachable flow=a->b task.cluster=b task.repeated=2 task.in_last=1m0s`,
		`level=WARN msg=unreachable flow=b->a cluster=b error="dial 2" repeated=2 in_last=1m0s`,
	}, got)
}

// TestRateLimitLevel: records below Options.Level pass unlimited.
func TestRateLimitLevel(t *testing.T) {
	c, l, _, log := setup(Options{Level: slog.LevelWarn})
	for range 3 {
		log.Debug("poll")
		log.Info("poll")
		log.Warn("poll")
	}
	c.Advance(time.Minute)
	diffLines(t, "lines", []string{
		"level=DEBUG msg=poll", "level=INFO msg=poll", "level=WARN msg=poll",
		"level=DEBUG msg=poll", "level=INFO msg=poll",
		"level=DEBUG msg=poll", "level=INFO msg=poll",
		"level=WARN msg=poll repeated=2 in_last=30s",
	}, l.take())
}

// TestRateLimitClose: Close logs pending summaries over the time elapsed,
// and later records pass unlimited.
func TestRateLimitClose(t *testing.T) {
	c, l, h, log := setup(Options{})
	log.Warn("a")
	log.Warn("a")
	log.Warn("a")
	log.Warn("b")
	c.Advance(12 * time.Second)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	log.Warn("a")
	log.Warn("a")
	c.Advance(time.Minute)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "lines", []string{
		"level=WARN msg=a", "level=WARN msg=b",
		"level=WARN msg=a repeated=2 in_last=12s",
		"level=WARN msg=a", "level=WARN msg=a",
	}, l.take())
}

// TestRateLimitMaxKeys: kinds beyond MaxKeys pass unlimited.
func TestRateLimitMaxKeys(t *testing.T) {
	c, l, _, log := setup(Options{MaxKeys: 2})
	for range 2 {
		log.Warn("x", "p", 1)
		log.Warn("x", "p", 2)
		log.Warn("x", "p", 3)
	}
	c.Advance(30 * time.Second)
	diffLines(t, "lines", []string{
		"level=WARN msg=x p=1", "level=WARN msg=x p=2", "level=WARN msg=x p=3",
		"level=WARN msg=x p=3",
		"level=WARN msg=x p=1 repeated=1 in_last=30s", "level=WARN msg=x p=2 repeated=1 in_last=30s",
	}, sortTail(l.take(), 4))
}

func sortTail(s []string, from int) []string {
	if len(s) > from {
		sort.Strings(s[from:])
	}
	return s
}

// TestRateLimitOutage replays what an outage of 21 s logged before the
// limiter (issue 13: about 104 WARN lines, a few kinds every 200 ms to a
// second): with a 30 s window, one line per kind, then one summary each.
func TestRateLimitOutage(t *testing.T) {
	c, l, h, log := setup(Options{})
	flow := log.With("flow", "src->dst")
	sent := 0
	for ms := 0; ms < 21000; ms += 200 {
		flow.Warn("unable to open connection to broker", "cluster", "dst", "addr", "127.0.0.1:9092", "err", fmt.Errorf("dial: refused at %dms", ms))
		sent++
		if ms%1000 == 0 {
			flow.Warn("flow state", "state", "RETRYING", "err", fmt.Errorf("target cluster dst unreachable (%d)", ms))
			flow.Info("creating heartbeats topic", "topic", "heartbeats", "cluster", "dst")
			sent += 2
		}
		c.Advance(200 * time.Millisecond)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	got := l.take()
	if sent != 147 || len(got) != 6 {
		t.Fatalf("%d records logged as %d lines, want 147 as 6:\n%s", sent, len(got), strings.Join(got, "\n"))
	}
	var repeated int
	for _, line := range got[3:] {
		var n int
		if _, err := fmt.Sscanf(line[strings.Index(line, "repeated="):], "repeated=%d", &n); err != nil {
			t.Fatalf("summary %q: %v", line, err)
		}
		repeated += n
	}
	if repeated != 147-3 {
		t.Errorf("summaries count %d repeats, want %d", repeated, 147-3)
	}
}

// TestRateLimitConcurrent: with the real clock and concurrent loggers,
// every record is either logged or counted in exactly one summary.
func TestRateLimitConcurrent(t *testing.T) {
	l := newLines()
	h := RateLimit(l.handler(), Options{Window: 2 * time.Millisecond})
	log := slog.New(h)
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				log.Warn("retry", "kind", (g+i)%3)
			}
		}()
	}
	wg.Wait()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range l.take() {
		if i := strings.Index(line, " repeated="); i >= 0 {
			var n int
			if _, err := fmt.Sscanf(line[i:], " repeated=%d", &n); err != nil {
				t.Fatalf("summary %q: %v", line, err)
			}
			total += n
		} else {
			total++
		}
	}
	if total != goroutines*each {
		t.Errorf("logged plus counted: %d, want %d", total, goroutines*each)
	}
}

// TestRateLimitExempt (a new user's finding): the second resume within 30
// s was logged only at the window's end, as "repeated=1 in_last=30s", after
// a later pause: an exempt message is logged every time, in order, and
// the others are still limited.
func TestRateLimitExempt(t *testing.T) {
	c, l, _, log := setup(Options{Exempt: []string{"target state applied"}})
	for _, st := range []string{"RUNNING", "PAUSED", "RUNNING"} {
		log.Info("target state applied", "state", st)
		log.Info("target state applied", "state", st)
		c.Advance(time.Second)
	}
	log.Warn("flow state", "state", "RETRYING")
	log.Warn("flow state", "state", "RETRYING")
	diffLines(t, "lines", []string{
		`level=INFO msg="target state applied" state=RUNNING`,
		`level=INFO msg="target state applied" state=RUNNING`,
		`level=INFO msg="target state applied" state=PAUSED`,
		`level=INFO msg="target state applied" state=PAUSED`,
		`level=INFO msg="target state applied" state=RUNNING`,
		`level=INFO msg="target state applied" state=RUNNING`,
		`level=WARN msg="flow state" state=RETRYING`,
	}, l.take())
}
