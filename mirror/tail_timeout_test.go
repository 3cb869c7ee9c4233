package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTailResumeReadTimeoutWarns: the remote partition never answers a fetch
// (NOT_LEADER_OR_FOLLOWER on every Fetch: kgo retries it silently), so the
// tail read runs into its time bound. The partition falls back to its
// stored resume point ("unreadable"), and, as for any other failed read,
// one WARN says so: a read that timed out is a failed read too.
func TestTailResumeReadTimeoutWarns(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("injects fetch errors: kfake only")
	}
	topic := p.Topic("slowtail")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceValues(t, &p.Source, topic, valuesOf("v", 0, 30))
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.AdminTimeout = 3 * time.Second // the tail read's bound: min(AdminTimeout, 10 s)
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 30)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	rewindResumePoint(t, p, topic, 9)
	h := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: remote, Err: kerr.NotLeaderForPartition, Count: -1})
	var lb logBuf
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	testcluster.Eventually(t, 30*time.Second, "started and caught up", func() (bool, string) {
		st := m.Status().Flows[0]
		return len(st.TailResume) > 0 && st.Lag == 0 && st.Records >= 20, fmt.Sprint(st.TailResume, st.Records, st.Lag)
	})
	h.Remove()
	want := append(valuesOf("v", 0, 30), valuesOf("v", 10, 30)...)
	if got := tailValues(t, &p.Target, remote); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("target holds %v, want %v", got, want)
	}
	if c := tailCounts(m); c["unreadable"] != 1 || c["ahead"] != 0 {
		t.Errorf("outcomes %v, want unreadable 1", c)
	}
	if l := lb.lines("level=WARN", "resume from the target's tail"); len(l) != 1 {
		t.Errorf("%d WARN lines about the tail read, want 1: %v", len(l), l)
	}
}
