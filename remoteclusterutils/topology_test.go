package remoteclusterutils_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestTopology checks MirrorClient's topic-name discovery on a cluster
// holding heartbeats, src.heartbeats and other.src.heartbeats
// (docs/mm2-compat.md §7, §8.2).
func TestTopology(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	src, other := p.Source.Alias, p.Target.Alias+"o"
	orders := src + "." + p.Topic("orders")
	names := []string{src + ".heartbeats", other + "." + src + ".heartbeats", orders, src + ".checkpoints.internal", p.Topic("local")}
	if !p.Real {
		names = append(names, "heartbeats") // shared real brokers: leave the MM2-owned name alone
	}
	createTopics(t, &p.Target, names...)
	rc := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target))
	ctx := ctxT(t)

	for _, tc := range []struct {
		alias string
		want  int
	}{
		{src, 1},   // src.heartbeats
		{other, 1}, // other.src.heartbeats: other is the first hop
		{p.Target.Alias + "nope", -1},
	} {
		got, err := rc.ReplicationHops(ctx, tc.alias)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("ReplicationHops(%q) = %d, want %d", tc.alias, got, tc.want)
		}
	}

	mine := func(names []string) []string { // on shared brokers: only this test's names
		var out []string
		for _, n := range names {
			if n == src || n == other || strings.Contains(n, src) {
				out = append(out, n)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		call func() ([]string, error)
		want []string
	}{
		{"UpstreamClusters", func() ([]string, error) { return rc.UpstreamClusters(ctx) }, []string{other, src}},
		{"HeartbeatTopics", func() ([]string, error) { return rc.HeartbeatTopics(ctx) },
			[]string{other + "." + src + ".heartbeats", "heartbeats", src + ".heartbeats"}},
		{"CheckpointTopics", func() ([]string, error) { return rc.CheckpointTopics(ctx) }, []string{src + ".checkpoints.internal"}},
		// Like Java, remote heartbeats topics count as remote topics
		// (docs/mm2-compat.md §11 item 4).
		{"RemoteTopics", func() ([]string, error) { return rc.RemoteTopics(ctx) },
			[]string{other + "." + src + ".heartbeats", src + ".heartbeats", orders}},
		{"RemoteTopicsFor(src)", func() ([]string, error) { return rc.RemoteTopicsFor(ctx, src) },
			[]string{src + ".heartbeats", orders}},
		{"RemoteTopicsFor(other)", func() ([]string, error) { return rc.RemoteTopicsFor(ctx, other) },
			[]string{other + "." + src + ".heartbeats"}},
	} {
		got, err := tc.call()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := tc.want
		if p.Real {
			got, want = mine(got), mine(want)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}

	// Two hops only: on a cluster with just b.a.heartbeats, a is 2 hops away.
	p2 := testcluster.New(t, "a", "c")
	a, b := p2.Source.Alias, p2.Target.Alias+"b"
	createTopics(t, &p2.Target, b+"."+a+".heartbeats")
	opts := []remoteclusterutils.Opt{remoteclusterutils.WithClientOpts(p2.Target.Opts()...)}
	if got, err := remoteclusterutils.ReplicationHops(ctx, a, opts...); err != nil || got != 2 {
		t.Errorf("ReplicationHops(%q) = %d, %v; want 2", a, got, err)
	}
	if got, err := remoteclusterutils.UpstreamClusters(ctx, opts...); err != nil || (!p2.Real && !cmp.Equal(got, []string{a, b})) {
		t.Errorf("UpstreamClusters = %q, %v; want [%s %s]", got, err, a, b)
	}
	if got, err := remoteclusterutils.HeartbeatTopics(ctx, opts...); err != nil || !contains(got, b+"."+a+".heartbeats") {
		t.Errorf("HeartbeatTopics = %q, %v", got, err)
	}
	if got, err := remoteclusterutils.CheckpointTopics(ctx, opts...); err != nil || (!p2.Real && got != nil) {
		t.Errorf("CheckpointTopics = %q, %v; want none", got, err)
	}
}

// TestOptions covers option validation: errors are returned by every call,
// never a panic, and no I/O happens for a bad configuration.
func TestOptions(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1")) // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	d, _ := policy.NewDefault()
	id, err := policy.NewIdentity("src", policy.WithSeparator("__"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cl   *kgo.Client
		opts []remoteclusterutils.Opt
		want string // substring of the error; "" = valid
	}{
		{"defaults", cl, nil, ""},
		{"nil options are ignored", cl, []remoteclusterutils.Opt{nil}, ""},
		{"policy", cl, []remoteclusterutils.Opt{remoteclusterutils.WithPolicy(d)}, ""},
		{"identity policy", cl, []remoteclusterutils.Opt{remoteclusterutils.WithPolicy(id)}, ""},
		{"nil policy", cl, []remoteclusterutils.Opt{remoteclusterutils.WithPolicy(nil)}, "WithPolicy(nil)"},
		{"zero timeout", cl, []remoteclusterutils.Opt{remoteclusterutils.WithTimeout(0)}, "timeout 0s must be positive"},
		{"client opts on NewClient", cl, []remoteclusterutils.Opt{remoteclusterutils.WithClientOpts(kgo.ClientID("x"))}, "WithClientOpts has no effect on NewClient"},
		{"nil client", nil, nil, "nil *kgo.Client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := remoteclusterutils.NewClient(tc.cl, tc.opts...)
			if tc.want == "" {
				if err := remoteclusterutils.ValidateOpts(tc.opts...); err != nil {
					t.Errorf("ValidateOpts = %v", err)
				}
				if rc.Policy() == nil {
					t.Error("Policy() = nil")
				}
				return
			}
			ctx := ctxT(t)
			_, err := rc.TranslateOffsets(ctx, "src", "g")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("TranslateOffsets err = %v, want it to contain %q", err, tc.want)
			}
			if _, err2 := rc.UpstreamClusters(ctx); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("UpstreamClusters err = %v, want %v", err2, err)
			}
		})
	}

	// Package-level calls need client options and report bad ones.
	if _, err := remoteclusterutils.TranslateOffsets(ctxT(t), "src", "g"); err == nil || !strings.Contains(err.Error(), "WithClientOpts") {
		t.Errorf("TranslateOffsets without client opts: err = %v", err)
	}
	_, err = remoteclusterutils.ReplicationHops(ctxT(t), "src", remoteclusterutils.WithClientOpts(kgo.SeedBrokers("host:notaport")))
	if err == nil || !strings.Contains(err.Error(), "building the client") {
		t.Errorf("bad seed: err = %v", err)
	}
	if err := remoteclusterutils.ValidateOpts(remoteclusterutils.WithPolicy(nil)); err == nil {
		t.Error("ValidateOpts(WithPolicy(nil)) = nil")
	}
	// The default timeout bounds an unreachable cluster.
	rc := remoteclusterutils.NewClient(cl, remoteclusterutils.WithTimeout(200*time.Millisecond))
	if _, err := rc.TranslateOffsets(t.Context(), "src", "g"); err == nil {
		t.Error("unreachable cluster: no error")
	}
}
