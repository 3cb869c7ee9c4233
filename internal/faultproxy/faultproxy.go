// Package faultproxy is a TCP proxy for loopback tests that injects network
// faults between a client and a server: it forwards every connection it
// accepts to one target address, and on command cuts the link (resetting
// every connection and refusing new ones), blackholes it (connections stay
// open but nothing passes, as when packets are dropped), throttles it to a
// number of bytes per second, or delays it.
//
// It is built for fault soaks of Kafka clients against real brokers: the
// broker advertises the proxy's address on a listener of its own, so that
// the clients reach the broker through the proxy only (Kafka clients connect
// to the advertised addresses they learn from metadata, not to their seed
// address).
//
//	p, err := faultproxy.New("127.0.0.1:26094", "127.0.0.1:26096")
//	...
//	p.Cut()     // every connection reset, new ones reset at once
//	p.Restore() // forwarding again
//	p.Close()
//
// A Proxy is safe for concurrent use. Close stops every goroutine it started.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// State is the fault a Proxy injects.
type State int

const (
	// Forwarding: connections are forwarded (possibly throttled or delayed).
	Forwarding State = iota
	// Cut: every connection was reset when the cut began; new connections
	// are accepted and reset at once, so clients see a reset connection
	// without reaching the target.
	Cut
	// Blackholed: nothing passes in either direction; open connections stay
	// open and stall, new connections are accepted and stall without being
	// connected to the target. Restore resumes them all.
	Blackholed
)

func (s State) String() string {
	switch s {
	case Forwarding:
		return "forwarding"
	case Cut:
		return "cut"
	case Blackholed:
		return "blackholed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Stats counts what a Proxy did since New.
type Stats struct {
	Accepted  int64 // connections accepted from clients
	Reset     int64 // connections reset by Cut or refused while cut
	DialFails int64 // connections closed because the target could not be reached
	Active    int64 // connections open now (stalled ones included)
	BytesUp   int64 // bytes delivered to the target
	BytesDown int64 // bytes delivered to clients
}

// Proxy forwards TCP connections from its listen address to a target
// address and injects faults on command. Create one with New.
type Proxy struct {
	ln     net.Listener
	target string
	dialer net.Dialer

	mu      sync.Mutex
	state   State
	open    chan struct{} // closed while the state is Forwarding; gates every write
	links   map[*link]struct{}
	closed  bool
	latency time.Duration
	up      *limiter // client -> target
	down    *limiter // target -> client

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	live   atomic.Int64 // goroutines started and not yet returned

	accepted, reset, dialFails, bytesUp, bytesDown atomic.Int64
}

// New listens on listen ("127.0.0.1:0" picks a free port; Addr tells
// which) and forwards every accepted connection to target (host:port). It
// returns an error when listen cannot be bound or target is not host:port.
// Only loopback addresses are expected, but none is refused.
func New(listen, target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: want host:port, e.g. 127.0.0.1:19094: %w", target, err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen on %q: %w", listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		ln: ln, target: target, dialer: net.Dialer{Timeout: 10 * time.Second},
		open: make(chan struct{}), links: map[*link]struct{}{},
		up: newLimiter(), down: newLimiter(), ctx: ctx, cancel: cancel,
	}
	close(p.open)
	p.spawn(p.acceptLoop)
	return p, nil
}

// Addr returns the address the proxy listens on, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address connections are forwarded to.
func (p *Proxy) Target() string { return p.target }

// State returns the fault in force.
func (p *Proxy) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	active := int64(len(p.links))
	p.mu.Unlock()
	return Stats{Accepted: p.accepted.Load(), Reset: p.reset.Load(), DialFails: p.dialFails.Load(), Active: active,
		BytesUp: p.bytesUp.Load(), BytesDown: p.bytesDown.Load()}
}

// Cut resets every open connection (TCP RST to the client, the target's
// side closed) and, until Restore, accepts new connections only to reset
// them at once. Cutting a cut proxy does nothing; cutting a blackholed one
// resets the stalled connections.
func (p *Proxy) Cut() {
	p.mu.Lock()
	if p.closed || p.state == Cut {
		p.mu.Unlock()
		return
	}
	p.closeGate()
	p.state = Cut
	links := p.takeLinks()
	p.mu.Unlock()
	for _, l := range links {
		l.abort()
		p.reset.Add(1)
	}
}

// Blackhole stops every byte in both directions without closing anything:
// open connections stall, and new connections are accepted and stall
// without being connected to the target, until Restore (or a Cut). Clients
// see timeouts, as on a link that drops packets.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.state == Blackholed {
		return
	}
	p.closeGate()
	p.state = Blackholed
}

// Restore ends a Cut or a Blackhole: new connections are forwarded again,
// and connections stalled by a blackhole resume where they stopped.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.state == Forwarding {
		return
	}
	p.state = Forwarding
	close(p.open)
}

// closeGate makes writers wait; p.mu is held.
func (p *Proxy) closeGate() {
	if p.state == Forwarding {
		p.open = make(chan struct{})
	}
}

// takeLinks empties the link set and returns its links; p.mu is held.
func (p *Proxy) takeLinks() []*link {
	out := make([]*link, 0, len(p.links))
	for l := range p.links {
		out = append(out, l)
		delete(p.links, l)
	}
	return out
}

// Throttle limits each direction (client to target, target to client) to
// bytesPerSecond, summed over all connections, with bursts of at most a
// tenth of a second's worth (and at least 1 byte). 0 (or less) removes the
// limit. It applies at once, also to writes already waiting.
func (p *Proxy) Throttle(bytesPerSecond int64) {
	p.up.setRate(bytesPerSecond)
	p.down.setRate(bytesPerSecond)
}

// Latency delays every chunk of bytes by d in each direction (so a request
// and its response take at least 2d more), without limiting throughput. 0
// (or less) removes the delay. Bytes read before the change keep the delay
// they were read with.
func (p *Proxy) Latency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

func (p *Proxy) currentLatency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

// Close stops listening, closes every connection and waits until every
// goroutine of the proxy has returned. It returns the listener's close
// error, if any; closing twice returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := p.takeLinks()
	p.mu.Unlock()
	p.cancel()
	err := p.ln.Close()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
	return err
}

// spawn runs fn on a goroutine that Close waits for.
func (p *Proxy) spawn(fn func()) {
	p.wg.Add(1)
	p.live.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.live.Add(-1)
		fn()
	}()
}

func (p *Proxy) acceptLoop() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (e.g. too many open files): back off.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		p.accepted.Add(1)
		p.mu.Lock()
		if p.closed || p.state == Cut {
			closed := p.closed
			p.mu.Unlock()
			if !closed {
				p.reset.Add(1)
			}
			resetConn(c)
			continue
		}
		l := &link{p: p, client: c, done: make(chan struct{})}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.spawn(l.run)
	}
}

// resetConn closes c with a TCP RST instead of a FIN where it can.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// waitOpen blocks while the proxy is cut or blackholed; false when the link
// ended (or the proxy closed) meanwhile.
func (p *Proxy) waitOpen(done <-chan struct{}) bool {
	for {
		p.mu.Lock()
		gate := p.open
		p.mu.Unlock()
		select {
		case <-gate:
			return true
		case <-done:
			return false
		case <-p.ctx.Done():
			return false
		}
	}
}

// link is one client connection and its connection to the target.
type link struct {
	p        *Proxy
	client   net.Conn
	mu       sync.Mutex
	upstream net.Conn
	done     chan struct{} // closed when the link ends
	once     sync.Once
}

// abort resets both sides.
func (l *link) abort() { l.end(true) }

// close closes both sides normally.
func (l *link) close() { l.end(false) }

func (l *link) end(rst bool) {
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		up := l.upstream
		l.mu.Unlock()
		if rst {
			resetConn(l.client)
		} else {
			_ = l.client.Close()
		}
		if up != nil {
			_ = up.Close()
		}
	})
}

// run connects to the target (once the proxy is open) and pumps both
// directions until both end, then closes the link.
func (l *link) run() {
	p := l.p
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	// A connection accepted while blackholed is connected to the target
	// only on Restore.
	if !p.waitOpen(l.done) {
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	p.spawn(func() {
		select {
		case <-l.done:
		case <-ctx.Done():
		}
		cancel()
	})
	up, err := p.dialer.DialContext(ctx, "tcp", p.target)
	if err != nil {
		select {
		case <-l.done: // cut or closed while dialing
		default:
			p.dialFails.Add(1)
			l.abort()
		}
		return
	}
	l.mu.Lock()
	l.upstream = up
	l.mu.Unlock()
	select {
	case <-l.done: // cut or closed while dialing
		_ = up.Close()
		return
	default:
	}
	var pumps sync.WaitGroup
	pumps.Add(2)
	p.spawn(func() { defer pumps.Done(); l.pump(l.client, up, p.up, &p.bytesUp) })
	p.spawn(func() { defer pumps.Done(); l.pump(up, l.client, p.down, &p.bytesDown) })
	pumps.Wait()
}

// chunk is bytes read from one side, due on the other side at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pump copies src to dst: a reader goroutine reads chunks and stamps them
// with the latency in force, this goroutine delivers each chunk when it is
// due, through the gate and the throttle. On EOF from src it half-closes
// dst; on any error it ends the link.
func (l *link) pump(src, dst net.Conn, lim *limiter, counter *atomic.Int64) {
	p := l.p
	// Up to 64 chunks of 32 KiB in flight per direction: with a latency d
	// the throughput is at most 2 MiB per d.
	chunks := make(chan chunk, 64)
	readerDone := make(chan struct{})
	var readErr error
	p.spawn(func() {
		defer close(readerDone)
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- chunk{b: buf[:n], due: time.Now().Add(p.currentLatency())}:
				case <-l.done:
					return
				}
			}
			if err != nil {
				readErr = err
				return
			}
		}
	})
	for c := range chunks {
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.done:
				t.Stop()
			}
		}
		b := c.b
		for len(b) > 0 {
			if !p.waitOpen(l.done) {
				l.abort()
				drain(chunks)
				return
			}
			n := lim.take(len(b), l.done)
			if n == 0 {
				drain(chunks)
				return
			}
			// The gate may have closed while the throttle waited.
			if !p.waitOpen(l.done) {
				drain(chunks)
				return
			}
			// Counted before the write, so that a peer never sees bytes
			// the counters do not show yet; the unwritten part is taken
			// back on an error.
			counter.Add(int64(n))
			w, err := dst.Write(b[:n])
			if w < n {
				counter.Add(int64(w - n))
			}
			if err != nil {
				l.close()
				drain(chunks)
				return
			}
			b = b[n:]
		}
	}
	<-readerDone
	if errors.Is(readErr, io.EOF) {
		// Half-close: the other side learns there is nothing more to read,
		// and may keep sending the other way.
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
			return
		}
	}
	l.close()
}

// drain empties chunks until the reader closes it (the reader stops once
// the link is done).
func drain(chunks <-chan chunk) {
	for range chunks {
	}
}

// limiter is a token bucket shared by every connection in one direction.
type limiter struct {
	mu      sync.Mutex
	rate    int64 // bytes per second; 0: unlimited
	tokens  float64
	last    time.Time
	changed chan struct{} // closed and replaced by setRate, wakes waiters
}

func newLimiter() *limiter { return &limiter{changed: make(chan struct{})} }

func (l *limiter) setRate(bps int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rate = max(bps, 0)
	l.tokens, l.last = 0, time.Now()
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *limiter) burst() float64 { return float64(max(l.rate/10, 1)) }

// take waits until it may pass up to want bytes (want > 0) and returns how
// many (at least 1), or 0 when done closed first.
func (l *limiter) take(want int, done <-chan struct{}) int {
	for {
		l.mu.Lock()
		if l.rate == 0 {
			l.mu.Unlock()
			return want
		}
		now := time.Now()
		l.tokens = min(l.tokens+now.Sub(l.last).Seconds()*float64(l.rate), l.burst())
		l.last = now
		// Pass want bytes, or a burst's worth when want is more: waiting
		// for that many tokens keeps writes few at low rates.
		need := min(float64(want), l.burst())
		if l.tokens >= need {
			n := int(need)
			l.tokens -= need
			l.mu.Unlock()
			return n
		}
		wait := time.Duration((need - l.tokens) / float64(l.rate) * float64(time.Second))
		changed := l.changed
		l.mu.Unlock()
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-t.C:
		case <-changed:
			t.Stop()
		case <-done:
			t.Stop()
			return 0
		}
	}
}
