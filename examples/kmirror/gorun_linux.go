package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// watchGoRun makes `go run ./examples/kmirror` stop the runner when the go
// command is stopped: if this process's parent is the go command, it calls
// stop (once) when that parent exits. It returns at once; the watch ends
// when ctx is done.
//
// Why it is needed: `go run` builds the binary and runs it as a child
// process. The go command ignores SIGINT and SIGQUIT while the child runs
// (a terminal's Ctrl-C reaches the whole process group, so the child gets
// it directly), but it does not catch SIGTERM: `kill <go pid>`, a process
// manager or a CI timeout ends the go command at once, and the child, never
// signaled, keeps replicating as an orphan.
//
// How: a pidfd of the parent (pidfd_open, Linux 5.3) becomes readable when
// the parent process exits; where pidfd_open is not available, the parent
// pid is checked every second (an orphan is re-parented, so its parent pid
// changes). The kernel's parent-death signal (prctl PR_SET_PDEATHSIG) is
// not used: it fires when the parent's forking thread exits, and again for
// each thread of a multi-threaded parent such as the go command, so the
// runner would take the second SIGTERM for "stop at once".
//
// Only the go command is watched: `nohup kmirror &`, systemd or a container
// runtime keep their usual semantics.
func watchGoRun(ctx context.Context, stop func()) {
	ppid := os.Getppid()
	if !isGoCommand(ppid) {
		return
	}
	go func() {
		pidfd, err := unix.PidfdOpen(ppid, 0)
		if err == nil {
			defer unix.Close(pidfd)
		}
		for ctx.Err() == nil {
			// Checked after opening the pidfd too: if the parent died
			// before, the pidfd may name another process.
			if os.Getppid() != ppid {
				stop()
				return
			}
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
			// A timeout lets the loop see ctx; EINTR is a signal.
			n, perr := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 1000)
			if perr != nil && !errors.Is(perr, unix.EINTR) {
				err = perr // fall back to checking the parent pid
			}
			if n > 0 {
				stop()
				return
			}
		}
	}()
}

// isGoCommand reports whether process pid runs the go command (its
// command name, /proc/<pid>/comm, is "go").
func isGoCommand(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return err == nil && strings.TrimSpace(string(b)) == "go"
}
