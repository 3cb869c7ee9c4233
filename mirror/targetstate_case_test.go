package mirror

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestHandWrittenLowercaseStopApplied: an operator writes the target state
// by hand, `{"state":"stopped"}` (statustopic.ParseTargetState accepts any
// case). The flow applies STOPPED: its units and its singleton duties stop
// and it reports STOPPED. Before, the state stayed "stopped": the units
// stopped, the heartbeats went on, and the member reported "stopped",
// which a failover waiting for STOPPED never accepts.
func TestHandWrittenLowercaseStopApplied(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("lower")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceValues(t, &p.Source, topic, valuesOf("v", 0, 5))
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 5)
	testcluster.Produce(t, &p.Target, &kgo.Record{Topic: statustopic.Topic(p.Source.Alias), Key: []byte(statustopic.TargetStateKey),
		Value: []byte(`{"flow":"` + fc.Name() + `","state":"stopped","by":"operator"}`)})
	testcluster.Eventually(t, 10*time.Second, "STOPPED applied", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.AppliedState == TargetStopped && fs.TargetState == TargetStopped, memberStates(m)
	})
}
