package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/topicname"
)

// TestOddAliasHeartbeatsOnlyFlowRuns: MM2 accepts a cluster alias that is
// no legal topic name ("eu+prod") as long as no topic is named after it; a
// disabled reverse flow eu+prod->primary only emits heartbeats. kmirror named
// its coordination and status topics after the source alias
// (mm2-kmirror-units.eu+prod.internal), which the target refused with
// INVALID_TOPIC_EXCEPTION: the flow retried for ever and never emitted a
// heartbeat.
func TestOddAliasHeartbeatsOnlyFlowRuns(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	odd := "eu+prod/" + p.Target.Alias // '+' and '/' are not legal in topic names
	refuseIllegalTopicNames(p.Source.Fake)
	m, err := newMirror(t,
		WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: odd, Client: p.Target.Opts()}),
		WithFlow(FlowConfig{Source: odd, Target: p.Source.Alias, Disabled: true, EmitHeartbeatsInterval: 100 * time.Millisecond}),
	)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	errc := make(chan error, 1)
	ctx := t.Context()
	go func() { errc <- m.Run(ctx) }()
	t.Cleanup(func() {
		m.Close()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	testcluster.Eventually(t, 30*time.Second, "heartbeats of the odd alias", func() (bool, string) {
		st := m.Status()
		f := st.Flows[0]
		return !f.LastHeartbeat.IsZero() && f.State == StateDisabled && f.Started, fmt.Sprintf("state %s started %v error %v", f.State, f.Started, f.Error)
	})
	want := map[[2]string]bool{{odd, p.Source.Alias}: true}
	got := heartbeatKeys(t, &p.Source, "heartbeats", odd, p.Source.Alias)
	if len(got) != 1 || !got[[2]string{odd, p.Source.Alias}] {
		t.Fatalf("heartbeat keys %v, want %v", got, want)
	}
}

// refuseIllegalTopicNames makes kfake refuse to create a topic whose name a
// Kafka broker refuses (INVALID_TOPIC_EXCEPTION), as real brokers do; kfake
// creates any name. c nil (real brokers): nothing to do.
func refuseIllegalTopicNames(c *kfake.Cluster) {
	if c == nil {
		return
	}
	c.ControlKey(int16(kmsg.CreateTopics), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.CreateTopicsRequest)
		bad := false
		for _, t := range req.Topics {
			bad = bad || !topicname.Legal(t.Topic) || len(t.Topic) > topicname.MaxLength
		}
		if !bad {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			if !topicname.Legal(t.Topic) || len(t.Topic) > topicname.MaxLength {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			} else {
				rt.ErrorCode = kerr.InvalidRequest.Code // not created: one bad name fails the test's request
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}
