package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one system under test: a child process whose output goes to a
// log file. Its resource use is read from /proc/<pid>.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{}
	waitErr error
	started time.Time
	stopped sync.Once

	mu      sync.Mutex
	samples []cpuSample // CPU seconds every 50 ms while the process runs
}

type cpuSample struct {
	at  time.Time
	cpu float64
}

func startProc(name string, argv []string, logPath string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group: a ^C at the terminal reaches only this driver,
	// which then stops the child itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	p.started = time.Now()
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

// sample records the CPU seconds of the process every 50 ms until it
// exits: the copy's CPU time is read off these samples afterwards, at the
// append times of its first and last record, without asking a broker.
func (p *proc) sample() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)); err == nil {
			if cpu, err := statCPU(stat); err == nil {
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

// cpuAt returns the CPU seconds of the last sample taken at or before t
// (0 before the first sample).
func (p *proc) cpuAt(t time.Time) float64 {
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

// exited reports whether the process has ended, with its wait error.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// usage is what /proc says about the process.
type usage struct {
	PeakRSSKB int64   // VmHWM, kB
	CPU       float64 // utime+stime, seconds
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func readUsage(pid int) (usage, error) {
	var u usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	if u.PeakRSSKB, err = statusKB(status, "VmHWM:"); err != nil {
		return u, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	if u.CPU, err = statCPU(stat); err != nil {
		return u, err
	}
	return u, nil
}

// statusKB returns the kB value of a /proc/<pid>/status line.
func statusKB(status []byte, key string) (int64, error) {
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

// statCPU returns utime+stime in seconds from /proc/<pid>/stat (fields 14
// and 15; the command name in field 2 may hold spaces and parentheses).
func statCPU(stat []byte) (float64, error) {
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

func (p *proc) usage() (usage, error) { return readUsage(p.cmd.Process.Pid) }

// stop sends SIGTERM and waits up to grace, then SIGKILL. Only this pid is
// signaled.
func (p *proc) stop(grace time.Duration) {
	p.stopped.Do(func() {
		defer p.logFile.Close()
		if done, _ := p.exited(); done {
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

// logTail returns the last n lines of the log.
func (p *proc) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// loadAvg1 returns the 1-minute load average, or -1.
func loadAvg1() float64 {
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
