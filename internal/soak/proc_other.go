//go:build !linux

package main

import "os/exec"

// setDeathSignal does nothing outside Linux (the soak reads /proc and runs
// on Linux only).
func setDeathSignal(*exec.Cmd) {}
