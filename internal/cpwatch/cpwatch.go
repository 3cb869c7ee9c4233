// Package cpwatch lets tests observe every batch of checkpoint records a
// checkpoint emitter wrote, to check invariants (for example, that no
// checkpoint points past the target log end).
//
// The hook travels in the context given to the emitter's Run ([With]), so
// each Mirror (each emitter) has its own, and tests that run side by side
// each see only their own emitters' checkpoints. The mirror package's tests
// install one per Mirror (its unexported option withCheckpointWatch). It is
// internal: production code never sets a hook, and the emitter's cost
// without one is one context lookup per emission.
package cpwatch

import (
	"context"

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

type ctxKey struct{}

// With returns a context that carries h: an emitter whose Run is given
// that context (or one derived from it) calls h after each batch of
// checkpoints it wrote. A nil h returns ctx unchanged.
func With(ctx context.Context, h Hook) context.Context {
	if h == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, h)
}

// Active reports whether ctx carries a hook.
func Active(ctx context.Context) bool {
	h, _ := ctx.Value(ctxKey{}).(Hook)
	return h != nil
}

// Call runs the hook ctx carries, if any, with written (not when written
// is empty).
func Call(ctx context.Context, target *kadm.Client, written []Written) {
	if h, _ := ctx.Value(ctxKey{}).(Hook); h != nil && len(written) > 0 {
		h(ctx, target, written)
	}
}
