// Package benchproc runs a system under test as a child process with its
// output in a log file, and reads its resource use from /proc: CPU seconds
// (sampled every 50 ms), peak RSS, write system calls, and the machine's
// load average. The side-by-side and scale benchmarks of internal/bench
// share it.
package benchproc

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one system under test: a child process whose output goes to a
// log file. Its resource use is read from /proc/<pid>.
type Proc struct {
	Name    string // as given to Start
	cmd     *exec.Cmd
	LogPath string // the process output
	logFile *os.File
	done    chan struct{}
	waitErr error
	Started time.Time // when it was started
	stopped sync.Once

	mu      sync.Mutex
	samples []cpuSample // CPU seconds every 50 ms while the process runs
}

type cpuSample struct {
	at  time.Time
	cpu float64
}

// Start starts argv with its output in logPath, in its own process group,
// and samples its CPU time every 50 ms until it exits. The process
// inherits the driver's environment, with env (KEY=VALUE entries) added
// after it, so that env's entries win.
func Start(name string, argv, env []string, logPath string) (*Proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group: a ^C at the terminal reaches only this driver,
	// which then stops the child itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Proc{Name: name, cmd: cmd, LogPath: logPath, logFile: f, done: make(chan struct{})}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	go p.sample()
	return p, nil
}

// EnvEntry checks one KEY=VALUE entry of a driver's -kmirror-env flag
// (repeatable; the value may hold commas and '=', as in
// GODEBUG=gctrace=1,madvdontneed=1) and returns it.
func EnvEntry(e string) (string, error) {
	k, _, ok := strings.Cut(e, "=")
	if !ok || k == "" || strings.ContainsAny(k, " \t,") {
		return "", fmt.Errorf("environment entry %q: want KEY=VALUE, e.g. GOMEMLIMIT=180MiB", e)
	}
	return e, nil
}

// KmirrorEnv is the drivers' -kmirror-env flag: environment entries for
// the kmirror systems only, so that one build runs with and without a
// setting (GOMEMLIMIT, say) in one invocation.
type KmirrorEnv []string

// Register adds the repeatable -kmirror-env flag to fs, each entry
// checked by [EnvEntry].
func (e *KmirrorEnv) Register(fs *flag.FlagSet) {
	fs.Func("kmirror-env", "a KEY=VALUE `entry` added to the environment of systems kmirror and kmirror-shallow only (not kmirror-base, bare or mm2), e.g. GOMEMLIMIT=180MiB; repeatable", func(v string) error {
		entry, err := EnvEntry(v)
		if err == nil {
			*e = append(*e, entry)
		}
		return err
	})
}

// For returns the entries to add to system's environment (Start's env):
// all of them for "kmirror" and "kmirror-shallow", none for the others.
func (e KmirrorEnv) For(system string) []string {
	if system == "kmirror" || system == "kmirror-shallow" {
		return e
	}
	return nil
}

// sample records the CPU seconds of the process every 50 ms until it
// exits: the copy's CPU time is read off these samples afterwards, at the
// append times of its first and last record, without asking a broker.
func (p *Proc) sample() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)); err == nil {
			if cpu, err := StatCPU(stat); err == nil {
				p.mu.Lock()
				p.samples = append(p.samples, cpuSample{time.Now(), cpu})
				p.mu.Unlock()
			}
		}
		select {
		case <-p.done:
			return
		case <-t.C:
		}
	}
}

// CPUAt returns the CPU seconds of the last sample taken at or before t
// (0 before the first sample).
func (p *Proc) CPUAt(t time.Time) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return cpuAt(p.samples, t)
}

func cpuAt(samples []cpuSample, t time.Time) float64 {
	var cpu float64
	for _, s := range samples {
		if s.at.After(t) {
			break
		}
		cpu = s.cpu
	}
	return cpu
}

// Exited reports whether the process has ended, with its wait error.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Usage is what /proc says about a process.
type Usage struct {
	PeakRSSKB int64   // VmHWM, kB
	CPU       float64 // utime+stime, seconds
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// ReadUsage reads a process's peak RSS (VmHWM) and CPU seconds.
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	if u.PeakRSSKB, err = StatusKB(status, "VmHWM:"); err != nil {
		return u, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	if u.CPU, err = StatCPU(stat); err != nil {
		return u, err
	}
	return u, nil
}

// StatusKB returns the kB value of a /proc/<pid>/status line.
func StatusKB(status []byte, key string) (int64, error) {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s line in /proc status", key)
}

// StatCPU returns utime+stime in seconds from /proc/<pid>/stat (fields 14
// and 15; the command name in field 2 may hold spaces and parentheses).
func StatCPU(stat []byte) (float64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(ut+st) / clockTicks, nil
}

// Usage reads the process's peak RSS and CPU seconds.
func (p *Proc) Usage() (Usage, error) { return ReadUsage(p.cmd.Process.Pid) }

// Pid returns the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// WriteSyscalls returns the process's write system calls so far (syscw of
// /proc/<pid>/io): with one write per request, as the Kafka clients of Go
// and Java do for small requests, the difference over an idle minute
// approximates the requests it sent.
func WriteSyscalls(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "syscw:"); ok {
			return strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		}
	}
	return 0, errors.New("no syscw line in /proc io")
}

// Stop sends SIGTERM and waits up to grace, then SIGKILL. Only this pid is
// signaled.
func (p *Proc) Stop(grace time.Duration) {
	p.stopped.Do(func() {
		defer p.logFile.Close()
		if done, _ := p.Exited(); done {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}

// LogTail returns the last n lines of the log.
func (p *Proc) LogTail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LoadAvg1 returns the 1-minute load average, or -1.
func LoadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
