package mirror

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTLSClientOnPlaintextListenerReported (an operator's find): a source
// configured for TLS (security.protocol=SSL) on a plaintext listener never
// answers; the flow stayed STARTING with no error for as long as it ran
// (40 s seen). Its first request is bounded now: the flow is RETRYING,
// naming the cluster and security.protocol. kfake in both passes (a
// plaintext listener of our own).
func TestTLSClientOnPlaintextListenerReported(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: append(p.Source.Opts(), kgo.DialTLSConfig(&tls.Config{}))}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}), WithFlow(fastFlow(p)))
	testcluster.Eventually(t, 60*time.Second, "the flow RETRYING, naming security.protocol", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.State == StateRetrying && strings.Contains(st.Error, "cluster src unreachable") &&
			strings.Contains(st.Error, "check src.security.protocol"), fmt.Sprintf("%s %q", st.State, st.Error)
	})
}
