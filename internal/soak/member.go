package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// member is one runner process of a scenario (kmirror -config FILE
// -listen 127.0.0.1:0), started again after each SIGKILL.
type member struct {
	sc  *scenario
	idx int

	mu       sync.Mutex
	cmd      *exec.Cmd
	addr     string        // HTTP address, from the "http listening" log line
	alive    bool          // started and not seen exiting
	expected bool          // the soak killed or stopped it: an exit is expected
	exited   chan struct{} // closed when the current process has exited
	exitErr  error
	starts   int
	tail     []string // last log lines

	// Held-records baseline, owned by the scenario's sampler.
	rebase     atomic.Bool // set at a fault's start: take the next sample as baseline
	heldBase   int64
	baseStarts int
}

var httpClient = &http.Client{Timeout: 3 * time.Second}

// start launches the runner and waits until its HTTP server answers.
func (m *member) start(ctx context.Context) error {
	m.mu.Lock()
	if m.alive {
		m.mu.Unlock()
		return fmt.Errorf("member %d is already running", m.idx)
	}
	m.starts++
	n := m.starts
	m.mu.Unlock()

	logf, err := os.OpenFile(filepath.Join(m.sc.s.dir, fmt.Sprintf("%s-member%d.log", m.sc.id, m.idx)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== soak: start %d of member %d at %s\n", n, m.idx, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(m.sc.s.bin, "-config", m.sc.props, "-listen", "127.0.0.1:0", "-summary-interval", "0")
	setDeathSignal(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return err
	}
	cmd.Stdout = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start the runner: %w", err)
	}
	addrCh := make(chan string, 1)
	exited := make(chan struct{})
	m.mu.Lock()
	m.cmd, m.alive, m.expected, m.exited, m.exitErr, m.addr = cmd, true, false, exited, nil, ""
	m.mu.Unlock()
	scanned := make(chan struct{})
	go func() { // owner: this process's lifetime; ends when its stderr closes
		defer close(scanned)
		m.scan(stderr, logf, addrCh)
	}()
	go func() { // owner: this process's lifetime
		<-scanned
		err := cmd.Wait()
		logf.Close()
		m.mu.Lock()
		m.alive, m.exitErr = false, err
		expected := m.expected
		tail := strings.Join(m.tail, "\n")
		m.mu.Unlock()
		close(exited)
		if !expected {
			m.sc.fail(fmt.Sprintf("member %d (pid %d) exited on its own: %v; last log lines:\n%s", m.idx, cmd.Process.Pid, err, tail))
		}
	}()

	select {
	case addr := <-addrCh:
		m.mu.Lock()
		m.addr = addr
		m.mu.Unlock()
	case <-exited:
		return fmt.Errorf("member %d exited at start: %v", m.idx, m.exitErr)
	case <-time.After(60 * time.Second):
		_ = m.kill()
		return fmt.Errorf("member %d did not log its HTTP address within 60s", m.idx)
	case <-ctx.Done():
		_ = m.kill()
		return ctx.Err()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := m.status(ctx); err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("member %d: /status did not answer within 30s", m.idx)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scan copies the runner's stderr to its log file, finds the HTTP
// address, and records the gaps the runner logs.
func (m *member) scan(r io.Reader, logf *os.File, addrCh chan<- string) {
	br := bufio.NewScanner(r)
	br.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for br.Scan() {
		line := br.Text()
		fmt.Fprintln(logf, line)
		m.mu.Lock()
		m.tail = append(m.tail, line)
		if len(m.tail) > 30 {
			m.tail = m.tail[len(m.tail)-30:]
		}
		m.mu.Unlock()
		if !sent && strings.Contains(line, `msg="http listening"`) {
			if a := logValue(line, "addr"); a != "" {
				addrCh <- a
				sent = true
			}
		}
		if strings.Contains(line, `msg="source gap"`) {
			if g, ok := parseGapLine(line); ok {
				m.sc.gapSeen(g, fmt.Sprintf("member %d log", m.idx))
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// logValue returns the value of key=value in a slog text line ("" if
// absent); quoted values are unquoted.
func logValue(line, key string) string {
	i := 0
	for {
		j := strings.Index(line[i:], key+"=")
		if j < 0 {
			return ""
		}
		j += i
		if j == 0 || line[j-1] == ' ' {
			v := line[j+len(key)+1:]
			if strings.HasPrefix(v, `"`) {
				if s, err := strconv.QuotedPrefix(v); err == nil {
					u, _ := strconv.Unquote(s)
					return u
				}
				return ""
			}
			if k := strings.IndexByte(v, ' '); k >= 0 {
				v = v[:k]
			}
			return v
		}
		i = j + 1
	}
}

// parseGapLine reads the engine's `msg="source gap"` log line.
func parseGapLine(line string) (gap, bool) {
	p, err1 := strconv.ParseInt(logValue(line, "partition"), 10, 32)
	from, err2 := strconv.ParseInt(logValue(line, "from"), 10, 64)
	to, err3 := strconv.ParseInt(logValue(line, "to"), 10, 64)
	topic := logValue(line, "topic")
	if err1 != nil || err2 != nil || err3 != nil || topic == "" {
		return gap{}, false
	}
	return gap{Topic: topic, Partition: int32(p), From: from, To: to}, true
}

// kill sends SIGKILL and waits for the process to be gone; its RSS peak
// is recorded first.
func (m *member) kill() error {
	if pid := m.pid(); pid > 0 {
		m.sc.recordPeak(pid)
	}
	return m.signal(syscall.SIGKILL, 10*time.Second)
}

// stop sends SIGTERM and waits for a clean exit (code 0).
func (m *member) stop() error {
	if err := m.signal(syscall.SIGTERM, 60*time.Second); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exitErr != nil {
		return fmt.Errorf("member %d: graceful stop: %v; last log lines:\n%s", m.idx, m.exitErr, strings.Join(m.tail, "\n"))
	}
	return nil
}

func (m *member) signal(sig syscall.Signal, wait time.Duration) error {
	m.mu.Lock()
	if !m.alive {
		m.mu.Unlock()
		return nil
	}
	m.expected = true
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("member %d did not exit within %s of %v", m.idx, wait, sig)
	}
}

// pid returns the process id while it runs, else 0.
func (m *member) pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.alive || m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// startCount returns how many times the member was started.
func (m *member) startCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.starts
}

func (m *member) httpAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.alive {
		return ""
	}
	return m.addr
}

// statusDoc is the part of the runner's GET /status the soak reads: per
// flow, its tasks (the slots, Connect's tasks) and each one's partitions.
type statusDoc struct {
	State string `json:"state"`
	Flows []struct {
		Name  string `json:"name"`
		Tasks []struct {
			Partitions []statusPartition `json:"partitions"`
		} `json:"tasks"`
		Gaps []gap `json:"gaps"`
	} `json:"flows"`
}

// statusPartition is one source partition of a task on /status.
type statusPartition struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	State      string `json:"state"`
	Replicated int64  `json:"replicated"`
	SourceEnd  int64  `json:"source_end"`
	Committed  int64  `json:"committed"`
}

// partitions returns the partitions of flow i's tasks.
func (d *statusDoc) partitions(i int) []statusPartition {
	var out []statusPartition
	for _, t := range d.Flows[i].Tasks {
		out = append(out, t.Partitions...)
	}
	return out
}

func (m *member) status(ctx context.Context) (*statusDoc, error) {
	addr := m.httpAddr()
	if addr == "" {
		return nil, fmt.Errorf("member %d is not running", m.idx)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status?groups=false", nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /status: %s", resp.Status)
	}
	var d statusDoc
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return nil, err
	}
	return &d, nil
}

// heldRecords returns the records this runner process fetched from the
// source minus those it produced to the target since it started
// (franz-go's counters on /metrics): its fetch buffers, its producer
// buffer and its requests in flight, plus a small drift of the engine's
// own records (heartbeats and resume points written, offset syncs read),
// which a fault's baseline removes.
func (m *member) heldRecords(ctx context.Context) (int64, error) {
	addr := m.httpAddr()
	if addr == "" {
		return 0, fmt.Errorf("member %d is not running", m.idx)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	fetched, produced, err := metricSums(resp.Body, "kmirror_client_fetch_records_total", m.sc.src, "kmirror_client_produce_records_total", m.sc.dst)
	if err != nil {
		return 0, err
	}
	return fetched - produced, nil
}

// metricSums sums, in a Prometheus text exposition, the series of metric a
// with label cluster=ca and those of metric b with cluster=cb.
func metricSums(r io.Reader, a, ca, b, cb string) (sa, sb int64, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	la, lb := `cluster="`+ca+`"`, `cluster="`+cb+`"`
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, a+"{") && strings.Contains(line, la):
			dst = &sa
		case strings.HasPrefix(line, b+"{") && strings.Contains(line, lb):
			dst = &sb
		default:
			continue
		}
		f := strings.Fields(line)
		v, perr := strconv.ParseFloat(f[len(f)-1], 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("metrics line %q: %w", line, perr)
		}
		*dst += int64(v)
	}
	return sa, sb, sc.Err()
}

// rss reads a process's resident set size in bytes from /proc: the
// current one (VmRSS), or with peak its high-water mark (VmHWM) since it
// started or since resetPeak.
func rss(pid int, peak bool) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	key := "VmRSS:"
	if peak {
		key = "VmHWM:"
	}
	kb, err := procKB(b, key)
	return kb << 10, err
}

// resetPeak resets a process's RSS high-water mark (VmHWM) to its current
// RSS (Linux: "5" written to /proc/<pid>/clear_refs).
func resetPeak(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}
