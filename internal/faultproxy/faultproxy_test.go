package faultproxy

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer is a TCP server on loopback that writes back every byte it
// reads and counts them.
type echoServer struct {
	ln       net.Listener
	received atomic.Int64
	conns    atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	open     []net.Conn
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.mu.Lock()
			s.open = append(s.open, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				buf := make([]byte, 16<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						s.received.Add(int64(n))
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

func (s *echoServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.open {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads len(msg) bytes back within 10 s.
func roundTrip(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() { _, err := c.Write(msg); errc <- err }()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read back %d bytes: %v", len(msg), err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("write %d bytes: %v", len(msg), err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echoed bytes differ from the %d sent", len(msg))
	}
}

// expectNothing asserts that no byte arrives on c within d.
func expectNothing(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes (%q), err %v; want nothing until the deadline", n, buf[:n], err)
	}
}

// expectRefused asserts that a new connection to addr is reset, when the
// client connects or on its first read.
func expectRefused(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		if !strings.Contains(err.Error(), "reset") {
			t.Fatalf("dial: %v, want a reset", err)
		}
		return
	}
	defer c.Close()
	_, _ = c.Write([]byte("are you there"))
	expectClosed(t, c)
}

// expectClosed asserts that c is closed or reset by the other side within
// 10 s: a read returns EOF or a reset error, not data and not a timeout.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if n > 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes, err %v; want EOF or a reset", n, err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func TestForwardsBytesBothWays(t *testing.T) {
	echo := newEchoServer(t)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	msg := randomBytes(1 << 20)
	roundTrip(t, c, msg)
	roundTrip(t, c, []byte("hello"))
	st := p.Stats()
	want := int64(len(msg) + 5)
	if st.BytesUp != want || st.BytesDown != want || st.Accepted != 1 || st.Active != 1 || echo.received.Load() != want {
		t.Fatalf("stats %+v, echo received %d; want %d bytes each way, 1 accepted and active", st, echo.received.Load(), want)
	}
	if p.State() != Forwarding || p.Target() != echo.addr() {
		t.Fatalf("state %v, target %q", p.State(), p.Target())
	}
}

// TestHalfClose: a client that closes its writing side still gets every
// byte of the reply (the proxy forwards the FIN, not a close).
func TestHalfClose(t *testing.T) {
	echo := newEchoServer(t)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	msg := randomBytes(200 << 10)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("read %d of %d bytes after half-close, err %v", len(got), len(msg), err)
	}
}

func TestCutResetsAndRefusesUntilRestore(t *testing.T) {
	echo := newEchoServer(t)
	p := newProxy(t, echo.addr())
	c1 := dial(t, p.Addr())
	roundTrip(t, c1, []byte("before"))
	received := echo.received.Load()

	p.Cut()
	if p.State() != Cut {
		t.Fatalf("state %v, want cut", p.State())
	}
	expectClosed(t, c1)
	// New connections are accepted and reset: nothing reaches the target.
	for range 3 {
		expectRefused(t, p.Addr())
	}
	if got := echo.received.Load(); got != received {
		t.Fatalf("the target received %d bytes during the cut", got-received)
	}
	if conns := echo.conns.Load(); conns != 1 {
		t.Fatalf("the target saw %d connections, want only the one before the cut", conns)
	}
	st := p.Stats()
	if st.Reset != 4 || st.Active != 0 || st.Accepted != 4 {
		t.Fatalf("stats %+v: want 4 accepted, 4 reset (1 open + 3 new), 0 active", st)
	}

	p.Cut() // no-op
	p.Restore()
	c2 := dial(t, p.Addr())
	roundTrip(t, c2, []byte("after"))
	if p.State() != Forwarding {
		t.Fatalf("state %v after Restore", p.State())
	}
}

func TestBlackholeStallsAndResumes(t *testing.T) {
	echo := newEchoServer(t)
	p := newProxy(t, echo.addr())
	c1 := dial(t, p.Addr())
	roundTrip(t, c1, []byte("before"))
	received := echo.received.Load()

	p.Blackhole()
	if _, err := c1.Write([]byte("stalled")); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, p.Addr()) // accepted, not connected to the target
	if _, err := c2.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	expectNothing(t, c1, 300*time.Millisecond)
	expectNothing(t, c2, 10*time.Millisecond)
	if got := echo.received.Load(); got != received {
		t.Fatalf("the target received %d bytes while blackholed", got-received)
	}
	if conns := echo.conns.Load(); conns != 1 {
		t.Fatalf("the target saw %d connections while blackholed, want 1", conns)
	}

	p.Restore()
	for _, tc := range []struct {
		c    net.Conn
		want string
	}{{c1, "stalled"}, {c2, "new"}} {
		_ = tc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got := make([]byte, len(tc.want))
		if _, err := io.ReadFull(tc.c, got); err != nil || string(got) != tc.want {
			t.Fatalf("after Restore read %q, %v; want %q", got, err, tc.want)
		}
	}
	roundTrip(t, c1, []byte("still open"))
}

func TestCutAfterBlackholeResetsStalledConnections(t *testing.T) {
	echo := newEchoServer(t)
	p := newProxy(t, echo.addr())
	c1 := dial(t, p.Addr())
	roundTrip(t, c1, []byte("x"))
	p.Blackhole()
	c2 := dial(t, p.Addr())
	p.Cut()
	expectClosed(t, c1)
	expectClosed(t, c2)
	p.Restore()
	roundTrip(t, dial(t, p.Addr()), []byte("y"))
}

// TestThrottle: at 2000 bytes/s nothing near the 200 KB written gets
// through in half a second (bursts are a tenth of a second's worth); once
// the limit is lifted, the rest arrives at once.
func TestThrottle(t *testing.T) {
	echo := newEchoServer(t)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	roundTrip(t, c, []byte("warm"))
	p.Throttle(2000)
	msg := randomBytes(200 << 10)
	go func() { _, _ = c.Write(msg) }()
	got := make([]byte, 0, len(msg))
	buf := make([]byte, 64<<10)
	deadline := time.Now().Add(500 * time.Millisecond)
	_ = c.SetReadDeadline(deadline)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
	}
	// Upper bound only (a loaded machine passes less, never more): up to
	// 0.5 s x 2000 B/s plus a burst per direction, doubled for slack.
	if len(got) > 5000 {
		t.Fatalf("%d bytes came back through a 2000 B/s throttle within 0.5 s", len(got))
	}
	if up := p.Stats().BytesUp - 4; up > 5000 {
		t.Fatalf("%d bytes went up through a 2000 B/s throttle within 0.5 s", up)
	}
	p.Throttle(0)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest := make([]byte, len(msg)-len(got))
	if _, err := io.ReadFull(c, rest); err != nil {
		t.Fatalf("after lifting the throttle: %v", err)
	}
	if !bytes.Equal(append(got, rest...), msg) {
		t.Fatal("throttled bytes came back altered")
	}
}

// TestLatency: with 1 s each way, a reply cannot be back within 0.5 s,
// and arrives later; the delay can be removed again.
func TestLatency(t *testing.T) {
	echo := newEchoServer(t)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	p.Latency(time.Second)
	if _, err := c.Write([]byte("slow")); err != nil {
		t.Fatal(err)
	}
	expectNothing(t, c, 500*time.Millisecond)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "slow" {
		t.Fatalf("read %q, %v", got, err)
	}
	p.Latency(0)
	roundTrip(t, c, []byte("fast"))
}

func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, ln.Addr().String()) // the proxy's port differs from ln's
	ln.Close()                           // nothing listens at the target now
	expectRefused(t, p.Addr())
	if st := p.Stats(); st.DialFails != 1 {
		t.Fatalf("stats %+v, want 1 dial failure", st)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New("127.0.0.1:0", "no-port"); err == nil || !strings.Contains(err.Error(), `target "no-port": want host:port`) {
		t.Errorf("bad target: %v", err)
	}
	p := newProxy(t, "127.0.0.1:1")
	if _, err := New(p.Addr(), "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Errorf("taken port: %v", err)
	}
}

// TestCloseStopsEverything: Close ends the client connections, stops
// listening and returns only when every goroutine of the proxy returned.
func TestCloseStopsEverything(t *testing.T) {
	echo := newEchoServer(t)
	p, err := New("127.0.0.1:0", echo.addr())
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	for range 3 {
		c := dial(t, p.Addr())
		roundTrip(t, c, []byte("x"))
		conns = append(conns, c)
	}
	p.Blackhole()
	stalled := dial(t, p.Addr())
	p.Latency(time.Hour)
	p.Throttle(1)
	_, _ = conns[0].Write([]byte("pending"))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := p.live.Load(); n != 0 {
		t.Fatalf("%d goroutines still running after Close", n)
	}
	for _, c := range append(conns, stalled) {
		expectClosed(t, c)
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("the proxy still accepts connections after Close")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Controls after Close do nothing and do not panic.
	p.Cut()
	p.Restore()
	p.Blackhole()
	p.Throttle(5)
	p.Latency(time.Second)
}

// TestConcurrentControl flips every control from several goroutines while
// clients echo through the proxy (run with -race); afterwards the proxy
// forwards normally and no goroutine is left behind.
func TestConcurrentControl(t *testing.T) {
	echo := newEchoServer(t)
	p, err := New("127.0.0.1:0", echo.addr())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			msg := bytes.Repeat([]byte{byte('a' + i)}, 4096)
			buf := make([]byte, len(msg))
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
				if err != nil {
					continue
				}
				_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := c.Write(msg); err == nil {
					if n, err := io.ReadFull(c, buf); err == nil && !bytes.Equal(buf, msg) {
						t.Errorf("client %d: %d bytes echoed altered", i, n)
					}
				}
				c.Close()
			}
		})
	}
	controls := []func(){p.Cut, p.Restore, p.Blackhole, p.Restore, func() { p.Throttle(100_000) }, func() { p.Throttle(0) },
		func() { p.Latency(5 * time.Millisecond) }, func() { p.Latency(0) }, func() { _ = p.Stats(); _ = p.State() }}
	for g := range 3 {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				case <-time.After(3 * time.Millisecond):
				}
				controls[(k*7+g)%len(controls)]()
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	p.Restore()
	p.Throttle(0)
	p.Latency(0)
	c := dial(t, p.Addr())
	roundTrip(t, c, randomBytes(100<<10))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := p.live.Load(); n != 0 {
		t.Fatalf("%d goroutines still running after Close", n)
	}
}
