package main

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel SIGKILL the runner when the soak dies
// (a CI timeout, a crash), so no runner outlives it. The soak also stops
// every runner itself at the end.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
