package testcontainers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	tcgo "github.com/testcontainers/testcontainers-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
)

// startPair starts the two containers for t, or skips t when no Docker
// daemon answers; the containers are removed by t.Cleanup.
func startPair(t *testing.T) *Pair {
	t.Helper()
	t.Log("this test needs a Docker daemon (testcontainers-go); it pulls " + DefaultImage)
	tcgo.SkipIfProviderIsNotHealthy(t)
	start := time.Now()
	p, err := StartPair(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Terminate(context.Background()); err != nil {
			t.Error(err)
		}
	})
	t.Logf("containers ready in %v: source %v (%s), target %v (%s)", time.Since(start).Round(time.Millisecond),
		p.SourceBrokers, p.SourceClusterID, p.TargetBrokers, p.TargetClusterID)
	return p
}

func TestStartPairOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"empty image", []Option{WithImage("")}, "testcontainers: empty image name"},
		{"zero timeout", []Option{WithStartTimeout(0)}, "testcontainers: start timeout 0s is not positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := StartPair(context.Background(), tc.opts...)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("StartPair error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestClusterIDsAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, err := newClusterID()
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != 22 || seen[id] {
			t.Fatalf("cluster id %q: want 22 base64url characters, all distinct", id)
		}
		seen[id] = true
	}
}

// TestReplicationOnContainers replicates a 3-partition topic from one
// container to the other through the kmirror engine and checks the remote
// topic record by record.
func TestReplicationOnContainers(t *testing.T) {
	replicate(t, startPair(t), "tcsrc", "tcdst", "orders")
}

// replicate runs the replication check on p with the given names.
func replicate(t *testing.T, p *Pair, srcAlias, dstAlias, topic string) {
	src := testcluster.Cluster{Alias: srcAlias, Brokers: p.SourceBrokers}
	dst := testcluster.Cluster{Alias: dstAlias, Brokers: p.TargetBrokers}

	// Two clusters, not one.
	if p.SourceClusterID == "" || p.SourceClusterID == p.TargetClusterID {
		t.Fatalf("cluster IDs %q and %q: want two distinct", p.SourceClusterID, p.TargetClusterID)
	}

	testcluster.CreateTopic(t, &src, topic, 3, nil)
	var in []*kgo.Record
	want := map[int32][]string{}
	for i := range 30 {
		part := int32(i % 3)
		v := fmt.Sprintf("order-%d", i)
		in = append(in, &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)})
		want[part] = append(want[part], v)
	}
	testcluster.Produce(t, &src, in...)

	m, err := mirror.New(
		mirror.WithCluster(mirror.ClusterConfig{Alias: src.Alias, Client: src.Opts()}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: dst.Alias, Client: dst.Opts()}),
		mirror.WithFlow(mirror.FlowConfig{Source: src.Alias, Target: dst.Alias, Topics: []string{topic},
			RefreshTopicsInterval: 500 * time.Millisecond, OffsetFlushInterval: 200 * time.Millisecond,
			EmitCheckpointsInterval: time.Second, AdminTimeout: 30 * time.Second,
			DisableTopicACLSync: true}),
	)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- m.Run(context.Background()) }()
	testcluster.Eventually(t, 60*time.Second, "replicated", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.Records >= int64(len(in)) && st.Lag == 0, fmt.Sprintf("state %s %v, %d records, lag %d", st.State, st.Error, st.Records, st.Lag)
	})
	m.Close()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}

	got := map[int32][]string{}
	for part, rs := range testcluster.ReadAll(t, &dst, src.Alias+"."+topic) {
		for _, r := range rs {
			got[part] = append(got[part], string(r.Value))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("remote topic %s.%s (-want +got):\n%s", src.Alias, topic, diff)
	}
}
