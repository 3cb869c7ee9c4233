package mirror

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestGroupJoinErrSaysTargetUnreachable: a member that cannot join the
// flow's group because the target refuses connections says the target is
// unreachable, as the cluster probe does. The probe's error comes up to a
// probe interval later; meanwhile /readyz read only "joining the flow's
// group ...: unable to dial: ... connection refused" (a CI run of
// TestReadyzTargetOutage). A timeout stays a plain group error, and the
// session-timeout advice is kept.
func TestGroupJoinErrSaysTargetUnreachable(t *testing.T) {
	f := &flow{groupID: "kmirror.src->dst", dst: ClusterConfig{Alias: "dst"}}
	refused := fmt.Errorf("unable to join group session: unable to dial: %w",
		&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"connection refused", refused,
			"joining the flow's group kmirror.src->dst on dst: target cluster dst unreachable: unable to join group session: unable to dial: dial tcp: connect: connection refused"},
		{"credentials rejected", kerr.SaslAuthenticationFailed,
			"joining the flow's group kmirror.src->dst on dst: target cluster dst unreachable: " + kerr.SaslAuthenticationFailed.Error() +
				" (the broker rejected the credentials: check dst.sasl.jaas.config and dst.sasl.mechanism)"},
		{"coordinator not available", kerr.CoordinatorNotAvailable,
			"joining the flow's group kmirror.src->dst on dst: " + kerr.CoordinatorNotAvailable.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := f.groupJoinErr(c.err)
			if got.Error() != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
			if !errors.Is(got, c.err) {
				t.Errorf("%v does not wrap %v", got, c.err)
			}
		})
	}
}
