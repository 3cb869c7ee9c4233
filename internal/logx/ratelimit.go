// Package logx holds log/slog helpers of kmirror's engine and runner.
//
// [RateLimit] wraps a slog.Handler so that a failure repeating every
// second (a cluster down, a topic refused) logs one line, then one
// summary per window with the count of the repeats, instead of a line per
// attempt.
package logx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultWindow is the rate-limit window when Options.Window is zero.
const DefaultWindow = 30 * time.Second

// DefaultMaxKeys bounds the kinds of records tracked at once when
// Options.MaxKeys is zero; records of further kinds pass unlimited.
const DefaultMaxKeys = 10000

// Attribute keys of a summary record.
const (
	// RepeatedKey counts the records of the kind dropped since the one
	// logged: an int64.
	RepeatedKey = "repeated"
	// InLastKey is the span those repeats were counted over: the window,
	// or less when the limiter closed early; a time.Duration.
	InLastKey = "in_last"
)

// Clock is the time source of a rate limiter; tests inject a fake one.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once, on its own goroutine, after d; stop
	// cancels the call and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Options configure [RateLimit].
type Options struct {
	// Window is how long repeats of a record are counted instead of
	// logged. Default DefaultWindow (30 s).
	Window time.Duration
	// Level: records below it pass unlimited. Default slog.LevelInfo
	// (debug records are never limited).
	Level slog.Leveler
	// IgnoreKeys are attribute keys left out of a record's kind, because
	// their values vary between repeats of one failure. Default "err" and
	// "error". Attributes whose value is an error are always left out.
	IgnoreKeys []string
	// MaxKeys bounds the kinds tracked at once. Default DefaultMaxKeys.
	MaxKeys int
	// Exempt are messages never limited: records of what an operator
	// did (a target state written or applied, a restart asked), each of
	// which must be logged when it happens, not summarized at the end of
	// a window.
	Exempt []string
	// Clock defaults to the real time.
	Clock Clock
}

// Limiter is a slog.Handler that rate-limits repeated records; see
// [RateLimit]. Its methods are safe for concurrent use.
type Limiter struct {
	st     *limitState
	next   slog.Handler
	prefix string // kind of the handler's attributes and groups (WithAttrs, WithGroup)
}

// limitState is shared by a Limiter and the handlers derived from it.
type limitState struct {
	window  time.Duration
	level   slog.Leveler
	ignore  map[string]bool
	exempt  map[string]bool
	maxKeys int
	clock   Clock

	mu     sync.Mutex
	kinds  map[string]*kind
	closed bool
	// summaries counts the summaries being logged outside mu, by a window
	// timer or by Handle, which Close waits for: a summary still being
	// written when Close returned was written after it (under -race in
	// CI, 75 of 4 000 repeats missing from the lines read after Close).
	// Added to under mu while not closed.
	summaries sync.WaitGroup
}

// kind is one kind of record seen within its window.
type kind struct {
	start    time.Time    // when the logged record of the kind was seen
	repeated int64        // records of the kind dropped since
	last     slog.Record  // the last one dropped (a clone): the summary carries its attributes
	next     slog.Handler // the handler the kind's records go to
	stop     func() bool  // cancels the window-end timer
}

// RateLimit returns a handler that passes records to next, except repeats:
// a record of the same kind as one logged less than a window ago is
// counted, not logged. When the window ends, if repeats were counted, one
// summary record is logged: the last repeat's level, message and
// attributes plus RepeatedKey (the count) and InLastKey (the window), e.g.
//
//	level=WARN msg="flow state" flow=a->b state=RETRYING err="target cluster b unreachable" repeated=52 in_last=30s
//
// (Under a logger's WithGroup, RepeatedKey and InLastKey are in the group,
// as every attribute added to its records.) The next record of the kind
// after the window is logged and starts a new
// window, so a failure that repeats forever logs at most two lines per
// window. A record's kind is its level, message and attributes (those of
// the record and of the logger's With and WithGroup), except the
// attributes named in Options.IgnoreKeys and those whose value is an
// error.
//
// Close logs the pending summaries and stops the window timers; records
// after Close pass unlimited.
func RateLimit(next slog.Handler, o Options) *Limiter {
	st := &limitState{window: o.Window, level: o.Level, maxKeys: o.MaxKeys, clock: o.Clock,
		ignore: map[string]bool{}, exempt: map[string]bool{}, kinds: map[string]*kind{}}
	for _, m := range o.Exempt {
		st.exempt[m] = true
	}
	if st.window <= 0 {
		st.window = DefaultWindow
	}
	if st.level == nil {
		st.level = slog.LevelInfo
	}
	if st.maxKeys <= 0 {
		st.maxKeys = DefaultMaxKeys
	}
	if st.clock == nil {
		st.clock = realClock{}
	}
	keys := o.IgnoreKeys
	if keys == nil {
		keys = []string{"err", "error"}
	}
	for _, k := range keys {
		st.ignore[k] = true
	}
	return &Limiter{st: st, next: next}
}

// Enabled reports whether next handles level.
func (h *Limiter) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// WithAttrs returns a handler sharing this one's windows whose records
// carry attrs.
func (h *Limiter) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range attrs {
		h.st.writeAttr(&b, a)
	}
	return &Limiter{st: h.st, next: h.next.WithAttrs(attrs), prefix: b.String()}
}

// WithGroup returns a handler sharing this one's windows whose attributes
// are in group name.
func (h *Limiter) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &Limiter{st: h.st, next: h.next.WithGroup(name), prefix: h.prefix + "\x00g" + name + "{"}
}

// Handle logs r, counts it as a repeat, or logs the summary of the
// kind's ended window and then r.
func (h *Limiter) Handle(ctx context.Context, r slog.Record) error {
	st := h.st
	if r.Level < st.level.Level() || st.exempt[r.Message] {
		return h.next.Handle(ctx, r)
	}
	key := h.kindOf(r)
	now := st.clock.Now()
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return h.next.Handle(ctx, r)
	}
	k := st.kinds[key]
	var ended *kind
	if k != nil && now.Sub(k.start) >= st.window {
		// The window ended and its timer has not run yet.
		delete(st.kinds, key)
		k.stop()
		ended, k = k, nil
		st.summaries.Add(1)
	}
	if k != nil {
		k.repeated++
		k.last = r.Clone()
		st.mu.Unlock()
		return nil
	}
	if len(st.kinds) < st.maxKeys {
		nk := &kind{start: now, next: h.next}
		nk.stop = st.clock.AfterFunc(st.window, func() { st.windowEnded(key, nk) })
		st.kinds[key] = nk
	}
	st.mu.Unlock()
	var errs []error
	if ended != nil {
		errs = append(errs, ended.summarize(ctx, now, st.window))
		st.summaries.Done()
	}
	errs = append(errs, h.next.Handle(ctx, r))
	return errors.Join(errs...)
}

// windowEnded is the timer of kind k: it logs k's summary.
func (st *limitState) windowEnded(key string, k *kind) {
	st.mu.Lock()
	if st.kinds[key] != k {
		st.mu.Unlock()
		return // already summarized by Handle or Close
	}
	delete(st.kinds, key)
	st.summaries.Add(1)
	st.mu.Unlock()
	defer st.summaries.Done()
	_ = k.summarize(context.Background(), st.clock.Now(), st.window)
}

// summarize logs the summary of k, if it counted repeats.
func (k *kind) summarize(ctx context.Context, now time.Time, span time.Duration) error {
	if k.repeated == 0 {
		return nil
	}
	s := slog.NewRecord(now, k.last.Level, k.last.Message, k.last.PC)
	k.last.Attrs(func(a slog.Attr) bool {
		s.AddAttrs(a)
		return true
	})
	s.AddAttrs(slog.Int64(RepeatedKey, k.repeated), slog.Duration(InLastKey, span))
	return k.next.Handle(ctx, s)
}

// Close logs the summary of every window with repeats (over the time
// elapsed since each window started), waits for the summaries being logged
// when it was called, stops the timers, and lets later records pass
// unlimited. It returns the handlers' errors.
func (h *Limiter) Close() error {
	st := h.st
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil
	}
	st.closed = true
	kinds := st.kinds
	st.kinds = nil
	st.mu.Unlock()
	now := st.clock.Now()
	var errs []error
	for _, k := range kinds {
		k.stop()
		errs = append(errs, k.summarize(context.Background(), now, now.Sub(k.start)))
	}
	st.summaries.Wait() // those a window timer or Handle began before the close
	return errors.Join(errs...)
}

// kindOf is r's identity: level, message, the handler's attributes and
// r's attributes but the ignored ones.
func (h *Limiter) kindOf(r slog.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\x00%s\x00%s", r.Level, r.Message, h.prefix)
	r.Attrs(func(a slog.Attr) bool {
		h.st.writeAttr(&b, a)
		return true
	})
	return b.String()
}

func (st *limitState) writeAttr(b *strings.Builder, a slog.Attr) {
	if st.ignore[a.Key] {
		return
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		b.WriteString("\x00g" + a.Key + "{")
		for _, ga := range v.Group() {
			st.writeAttr(b, ga)
		}
		b.WriteString("}")
		return
	case slog.KindAny:
		if _, isErr := v.Any().(error); isErr {
			return
		}
	}
	fmt.Fprintf(b, "\x00%s=%s", a.Key, v)
}
