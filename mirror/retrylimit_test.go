package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestRetryLimitFailureLosesNothing (adversarial round on issue 23): with
// the target producer's retries limited (MM2's target.producer.retries),
// a produce the target refuses until the retries run out fails the
// partition's buffered records. The test holds franz-go's promise goroutine
// at the failure's result while the poll loop fetches ten more records,
// then lets it go: those records must not land after the hole (the produce
// gate), and the session that follows (tail resume is off with limited
// retries: TestTailResumeOffWithLimitedRetries) must leave the target with
// every source record, in order.
func TestRetryLimitFailureLosesNothing(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("retries")
	// Two refusals: the first try and its one retry.
	m, remote, heldEnd := heldFailure(t, p, topic, kerr.NotEnoughReplicas, 2, []kgo.Opt{kgo.RecordRetries(1)})
	if heldEnd > 10 {
		t.Errorf("records produced after the retries ran out reached the target while the failure's result was held: end offset %d, want 10", heldEnd)
	}
	want := probeValues(t, p, topic, 0)
	testcluster.Eventually(t, 60*time.Second, "every source record on the target", func() (bool, string) {
		got := probeTargetValues(t, p, remote, 0, false)
		return strings.Join(got, " ") == strings.Join(want, " "), fmt.Sprintf("%s; status %+v; got %v",
			probeDiff(got, want), m.Status().Flows[0].TailResume, got)
	})
}

// TestTailResumeOffWithLimitedRetries: resume from the target's tail needs
// a producer that never leaves a hole behind a record it wrote: idempotent,
// acks=all and unlimited retries. franz-go fails a partition's buffered
// records when their retries run out while it builds a request, without
// the log line that closes the produce gate, so with limited retries later
// records may be written after the hole and the tail cannot be trusted.
func TestTailResumeOffWithLimitedRetries(t *testing.T) {
	tests := []struct {
		name string
		opts []kgo.Opt
		want bool
	}{
		{"defaults", nil, true},
		{"retries limited", []kgo.Opt{kgo.RecordRetries(5)}, false},
		{"not idempotent", []kgo.Opt{kgo.DisableIdempotentWrite()}, false},
		{"acks=1", []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck())}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if got := tailProducer(cl); got != tc.want {
				t.Errorf("tailProducer = %v, want %v", got, tc.want)
			}
		})
	}
}
