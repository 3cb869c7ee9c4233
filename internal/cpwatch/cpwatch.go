// Package cpwatch lets tests observe every batch of checkpoint records the
// checkpoint emitter wrote, to check invariants across the whole test
// suite (for example, that no checkpoint points past the target log end).
// It is internal: production code never sets a hook, and the emitter's
// cost without one is one atomic load per emission.
package cpwatch

import (
	"context"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Written is one checkpoint record the target acknowledged: its group,
// remote (target) topic, partition and downstream offset.
type Written struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// Hook observes one emission's acknowledged checkpoints. target is the
// emitter's admin client of the target cluster, usable during the call
// only. It runs on the emitter's goroutine, after the write and before the
// next emission, so anything it reads from the target is at least as new
// as the target was when the checkpoints were written.
type Hook func(ctx context.Context, target *kadm.Client, written []Written)

var hook atomic.Pointer[Hook]

// Set installs h (nil removes the hook). Tests call it once, in TestMain.
func Set(h Hook) {
	if h == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&h)
}

// Active reports whether a hook is installed.
func Active() bool { return hook.Load() != nil }

// Call runs the installed hook, if any, with written.
func Call(ctx context.Context, target *kadm.Client, written []Written) {
	if h := hook.Load(); h != nil && len(written) > 0 {
		(*h)(ctx, target, written)
	}
}
