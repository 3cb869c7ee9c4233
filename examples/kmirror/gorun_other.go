//go:build !linux

package main

import "context"

// watchGoRun does nothing outside Linux: there, stop the runner itself
// (Ctrl-C reaches it under `go run` too), or run the built binary.
func watchGoRun(context.Context, func()) {}
