package remoteclusterutils

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/policy"
)

func mustDefault(t testing.TB, opts ...policy.Opt) *policy.Default {
	t.Helper()
	p, err := policy.NewDefault(opts...)
	if err != nil {
		t.Fatalf("NewDefault: %v", err)
	}
	return p
}

func mustIdentity(t testing.TB, alias string, opts ...policy.Opt) *policy.Identity {
	t.Helper()
	p, err := policy.NewIdentity(alias, opts...)
	if err != nil {
		t.Fatalf("NewIdentity(%q): %v", alias, err)
	}
	return p
}

// loopPolicy claims every topic comes from "x" and is its own upstream,
// with upstream names that differ from their input, so that only the
// visited-source checks (and the hop bound) stop the walks.
type loopPolicy struct{ policy.Default }

func (loopPolicy) TopicSource(string) (string, bool) { return "x", true }
func (loopPolicy) UpstreamTopic(t string) (string, bool) {
	if t == "heartbeats" {
		return "x.heartbeats", true
	}
	return "heartbeats", true
}
func (loopPolicy) OriginalTopic(string) string       { return "heartbeats" }
func (p loopPolicy) IsHeartbeatsTopic(t string) bool { return policy.DefaultIsHeartbeatsTopic(p, t) }

func TestMirrorClientFilters(t *testing.T) {
	dot := mustDefault(t)
	// CT:MirrorClientTest heartbeatTopicsTest / checkpointsTopicsTest.
	topics := []string{"topic1", "topic2", "heartbeats", "source1.heartbeats", "source2.source1.heartbeats",
		"source3.heartbeats", "checkpoints.internal", "source1.checkpoints.internal",
		"source2.source1.checkpoints.internal", "source3.checkpoints.internal", "source3.heartbeats"}
	if diff := cmp.Diff([]string{"heartbeats", "source1.heartbeats", "source2.source1.heartbeats", "source3.heartbeats"},
		heartbeatTopics(dot, topics)); diff != "" {
		t.Errorf("HeartbeatTopics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"source1.checkpoints.internal", "source2.source1.checkpoints.internal", "source3.checkpoints.internal"},
		checkpointTopics(dot, topics)); diff != "" {
		t.Errorf("CheckpointTopics (-want +got):\n%s", diff)
	}

	// remoteTopicsTest and remoteTopicsSeparatorTest, plus remote heartbeats
	// (included, unlike MirrorClient's Javadoc says) and internal topics.
	remote := []string{"topic1", "topic2", "topic3", "source1.topic4", "source1.source2.topic5",
		"source3.source4.source5.topic6", "source1.heartbeats", "heartbeats", "source1.checkpoints.internal", "__x.y", ".hidden"}
	if diff := cmp.Diff([]string{"source1.heartbeats", "source1.source2.topic5", "source1.topic4", "source3.source4.source5.topic6"},
		remoteTopics(dot, remote)); diff != "" {
		t.Errorf("RemoteTopics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"source1.heartbeats", "source1.source2.topic5", "source1.topic4"},
		remoteTopicsFor(dot, remote, "source1")); diff != "" {
		t.Errorf("RemoteTopicsFor(source1) (-want +got):\n%s", diff)
	}
	if got := remoteTopicsFor(dot, remote, "source2"); got != nil {
		t.Errorf("RemoteTopicsFor(source2) = %q, want nil (direct hop only)", got)
	}
	us := mustDefault(t, policy.WithSeparator("__"))
	usTopics := []string{"topic1", "topic2", "topic3", "source1__topic4", "source1__source2__topic5", "source3__source4__source5__topic6", "a.b"}
	if diff := cmp.Diff([]string{"source1__source2__topic5", "source1__topic4", "source3__source4__source5__topic6"},
		remoteTopics(us, usTopics)); diff != "" {
		t.Errorf("RemoteTopics sep __ (-want +got):\n%s", diff)
	}

	// Identity: every non-internal topic is remote when the alias is known,
	// only prefixed heartbeats otherwise.
	idTopics := []string{"orders", "B.heartbeats", "heartbeats", "A.checkpoints.internal", "__consumer_offsets"}
	if diff := cmp.Diff([]string{"B.heartbeats", "orders"}, remoteTopics(mustIdentity(t, "A"), idTopics)); diff != "" {
		t.Errorf("RemoteTopics identity with alias (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"orders"}, remoteTopicsFor(mustIdentity(t, "A"), idTopics, "A")); diff != "" {
		t.Errorf("RemoteTopicsFor identity A (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"B.heartbeats"}, remoteTopics(mustIdentity(t, ""), idTopics)); diff != "" {
		t.Errorf("RemoteTopics identity without alias (-want +got):\n%s", diff)
	}

	for name, got := range map[string][]string{
		"HeartbeatTopics":  heartbeatTopics(dot, []string{"a"}),
		"CheckpointTopics": checkpointTopics(dot, nil),
		"RemoteTopics":     remoteTopics(dot, []string{"orders"}),
		"UpstreamClusters": upstreamClusters(dot, []string{"heartbeats"}),
	} {
		if got != nil {
			t.Errorf("%s = %q, want nil", name, got)
		}
	}
}

func TestReplicationHops(t *testing.T) {
	dot := mustDefault(t)
	// CT:MirrorClientTest replicationHopsTest.
	topics := []string{"topic1", "topic2", "heartbeats", "source1.heartbeats", "source1.source2.heartbeats", "source3.heartbeats"}
	for alias, want := range map[string]int{"source1": 1, "source2": 2, "source3": 1, "source4": -1, "": -1} {
		if got := replicationHops(dot, topics, alias); got != want {
			t.Errorf("ReplicationHops(%q) = %d, want %d", alias, got, want)
		}
	}
	// countHopsForTopicTest, expressed through heartbeats topics (the only
	// topics replicationHops looks at): non-heartbeat topics never count.
	tests := []struct {
		topic, alias string
		want         int
	}{
		{"topic", "source", -1},
		{"source1.topic", "source1", -1},
		{"heartbeats", "source", -1},
		{"source1.heartbeats", "source2", -1},
		{"source1.heartbeats", "source1", 1},
		{"source2.source1.heartbeats", "source2", 1},
		{"source2.source1.heartbeats", "source1", 2},
		{"source3.source2.source1.heartbeats", "source1", 3},
		{"source3.source2.source1.heartbeats", "source4", -1},
		{".heartbeats", "", 1},
		{"a.b.a.heartbeats", "c", -1},
	}
	for _, tt := range tests {
		if got := replicationHops(dot, []string{tt.topic}, tt.alias); got != tt.want {
			t.Errorf("ReplicationHops([%q], %q) = %d, want %d", tt.topic, tt.alias, got, tt.want)
		}
	}
	// Minimum over several paths.
	if got := replicationHops(dot, []string{"c.b.a.heartbeats", "c.a.heartbeats"}, "a"); got != 2 {
		t.Errorf("ReplicationHops min = %d, want 2", got)
	}
	// Identity: heartbeats keep default rules.
	if got := replicationHops(mustIdentity(t, "z"), []string{"orders", "b.a.heartbeats"}, "a"); got != 2 {
		t.Errorf("identity ReplicationHops = %d, want 2", got)
	}
	// A policy whose upstream names loop: the repeated source stops the walk.
	if got := replicationHops(loopPolicy{}, []string{"heartbeats"}, "nowhere"); got != -1 {
		t.Errorf("loop policy ReplicationHops = %d, want -1", got)
	}
}

func TestUpstreamClusters(t *testing.T) {
	dot := mustDefault(t)
	// CT:MirrorClientTest upstreamClustersTest.
	topics := []string{"topic1", "topic2", "heartbeats", "source1.heartbeats", "source1.source2.heartbeats", "source3.source4.source5.heartbeats"}
	if diff := cmp.Diff([]string{"source1", "source2", "source3", "source4", "source5"}, upstreamClusters(dot, topics)); diff != "" {
		t.Errorf("UpstreamClusters (-want +got):\n%s", diff)
	}
	// Java quirks kept: ".heartbeats" contributes the empty alias; a chain
	// that revisits an alias stops there.
	if diff := cmp.Diff([]string{"", "a", "b"}, upstreamClusters(dot, []string{".heartbeats", "a.b.a.heartbeats"})); diff != "" {
		t.Errorf("UpstreamClusters quirks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x"}, upstreamClusters(loopPolicy{}, []string{"heartbeats"})); diff != "" {
		t.Errorf("UpstreamClusters loop policy (-want +got):\n%s", diff)
	}
}

// FuzzTopicLists: the topic-list rules never panic and keep their
// invariants on any topic name, under the default and identity policies
// with any separator: every list is sorted, de-duplicated and a subset of
// its input; a remote topic from source is remote; hops are -1 or within
// the number of sources a name can carry.
func FuzzTopicLists(f *testing.F) {
	f.Add("a.b.heartbeats", "a", uint8(0), false)
	f.Add("x__heartbeats", "x", uint8(1), true)
	f.Add(".heartbeats", "", uint8(0), false)
	seps := []string{".", "__", "-", "_"}
	f.Fuzz(func(t *testing.T, topic, alias string, sepIdx uint8, identity bool) {
		sep := seps[int(sepIdx)%len(seps)]
		var p policy.ReplicationPolicy
		var err error
		if identity {
			p, err = policy.NewIdentity(alias, policy.WithSeparator(sep))
		} else {
			p, err = policy.NewDefault(policy.WithSeparator(sep))
		}
		if err != nil {
			t.Fatal(err)
		}
		topics := []string{topic, "heartbeats", p.FormatRemoteTopic("a", topic), p.FormatRemoteTopic(alias, "heartbeats"), topic}
		in := map[string]bool{}
		for _, tp := range topics {
			in[tp] = true
		}
		for name, list := range map[string][]string{
			"heartbeatTopics":  heartbeatTopics(p, topics),
			"checkpointTopics": checkpointTopics(p, topics),
			"remoteTopics":     remoteTopics(p, topics),
			"remoteTopicsFor":  remoteTopicsFor(p, topics, alias),
		} {
			for i, tp := range list {
				if !in[tp] || i > 0 && list[i-1] >= tp {
					t.Fatalf("%s = %q: not a sorted, de-duplicated subset of %q", name, list, topics)
				}
			}
		}
		for _, tp := range remoteTopicsFor(p, topics, alias) {
			if !isRemote(p, tp) {
				t.Fatalf("remoteTopicsFor(%q) lists %q, which is not remote", alias, tp)
			}
		}
		if h := replicationHops(p, topics, alias); h < -1 || h == 0 || h > maxHops {
			t.Fatalf("replicationHops(%q) = %d", alias, h)
		}
		upstreamClusters(p, topics)
	})
}
