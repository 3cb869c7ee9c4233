package remoteclusterutils

import (
	"strings"
	"testing"
)

// TestNoCheckpointYetSaysWhenItLasts: the error said only "the checkpoint
// emitter has not written its first checkpoints; retry after its first
// emission", but it also lasts for good when the emitter runs and has
// nothing to write: every group committed only on topics the flow does not
// replicate, or beyond what was replicated (a new user's failover loop
// retried forever while the mirror's status said "skipped: topic not
// replicated"). The message says so and where to look.
func TestNoCheckpointYetSaysWhenItLasts(t *testing.T) {
	t.Parallel()
	msg := (&NoCheckpointYetError{Alias: "A", Topic: "A.checkpoints.internal"}).Error()
	for _, w := range []string{`"A.checkpoints.internal"`, "retry", "if it lasts", "no group has a commit", "GroupStatus"} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q does not mention %q", msg, w)
		}
	}
}
