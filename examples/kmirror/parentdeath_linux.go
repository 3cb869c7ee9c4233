package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopWithGoRun makes `go run ./examples/kmirror` stop the runner when the
// go command is stopped.
//
// Why it is needed: `go run` builds the binary and runs it as a child
// process. The go command ignores SIGINT and SIGQUIT while the child runs
// (a terminal's Ctrl-C reaches the whole process group, so the child gets
// it directly), but it does not catch SIGTERM: `kill <go pid>`, a process
// manager or a CI timeout ends the go command at once, and the child, never
// signaled, keeps replicating as an orphan.
//
// The fix: when the parent process is the go command, ask the kernel to
// send this process SIGTERM when its parent dies (prctl
// PR_SET_PDEATHSIG), which starts the same graceful stop as a SIGTERM sent
// directly. Call it after the SIGTERM handler is installed. It is not done under any other parent, so `nohup kmirror &`,
// systemd or a container runtime keep their usual semantics. If the parent
// died before the request was made (the parent pid changed), the process
// signals itself.
func stopWithGoRun() {
	ppid := os.Getppid()
	if !isGoCommand(ppid) {
		return
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return
	}
	if os.Getppid() != ppid {
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
}

// isGoCommand reports whether process pid runs the go command (its
// command name, /proc/<pid>/comm, is "go").
func isGoCommand(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return err == nil && strings.TrimSpace(string(b)) == "go"
}
