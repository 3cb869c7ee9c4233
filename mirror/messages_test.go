package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestUnreachableHints: a broker that closes the connection or rejects
// the credentials is not reported as a cluster that is down without a
// word (a new user's try, stop 38: "cluster east unreachable: EOF").
func TestUnreachableHints(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		// A new user saw the hint for a broker that had stopped: it now says
		// that first.
		{io.EOF, "source cluster east unreachable: EOF (the broker closed the connection: a broker stopping does that; if this cluster never answered, " +
			"a security.protocol the listener does not speak, or SASL credentials it rejects, look like this: check east.security.protocol and east.sasl.*)"},
		{fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), "source cluster east unreachable: reading: unexpected EOF (the broker closed the connection:"},
		{kerr.SaslAuthenticationFailed, "source cluster east unreachable: SASL_AUTHENTICATION_FAILED: " + kerr.SaslAuthenticationFailed.Description +
			" (the broker rejected the credentials: check east.sasl.jaas.config and east.sasl.mechanism)"},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), "source cluster east unreachable: dial tcp 127.0.0.1:1: connect: connection refused"},
	} {
		got := kclient.Unreachable("source cluster", "east", tc.err)
		if !strings.HasPrefix(got.Error(), tc.want) || (!strings.Contains(tc.want, "(") && got.Error() != tc.want) {
			t.Errorf("unreachable(%v):\n got %s\nwant %s", tc.err, got, tc.want)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("unreachable(%v) does not wrap it", tc.err)
		}
	}
}

// wrongSASLPassword is the SASL password wrongSASLTarget's flow uses.
const wrongSASLPassword = "Wr0ngPassw0rd"

// wrongSASLTarget returns a kfake source src and the options of a Mirror
// with the flow src->dst, whose target dst (kfake with SASL PLAIN, user u)
// rejects its password (wrongSASLPassword); extra are added to the target's client
// options.
func wrongSASLTarget(t *testing.T, extra ...kgo.Opt) (testcluster.Cluster, []Opt) {
	src := testcluster.NewFake(t, "src")
	dst, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("dst"), kfake.EnableSASL(), kfake.Superuser("PLAIN", "u", "right"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Close)
	dstOpts := append([]kgo.Opt{kgo.SeedBrokers(dst.ListenAddrs()...), kgo.SASL(plain.Auth{User: "u", Pass: wrongSASLPassword}.AsMechanism()), kgo.DialTimeout(time.Second)}, extra...)
	return src, []Opt{WithCluster(ClusterConfig{Alias: "src", Client: src.Opts()}), WithCluster(ClusterConfig{Alias: "dst", Client: dstOpts}),
		WithFlow(FlowConfig{Source: "src", Target: "dst", AdminTimeout: 2 * time.Second})}
}

// TestWrongSASLPasswordNamed: a flow whose target rejects its SASL
// password is RETRYING with an error that points at the credentials, and
// never shows the password.
func TestWrongSASLPasswordNamed(t *testing.T) {
	t.Parallel()
	src, opts := wrongSASLTarget(t)
	testcluster.CreateTopic(t, &src, "orders", 1, nil)
	m, _ := runMirror(t, opts...)
	testcluster.Eventually(t, 30*time.Second, "RETRYING pointing at the credentials", func() (bool, string) {
		st := m.Status().Flows[0]
		ok := st.State == StateRetrying && strings.Contains(st.Error, "cluster dst unreachable") &&
			(strings.Contains(st.Error, "check dst.security.protocol and dst.sasl.*") || strings.Contains(st.Error, "the broker rejected the credentials"))
		return ok, fmt.Sprintf("%s: %s", st.State, st.Error)
	})
	if st := m.Status().Flows[0]; strings.Contains(st.Error, wrongSASLPassword) {
		t.Errorf("the error shows the password: %s", st.Error)
	}
}

// TestPauseRefusedByTargetSaysWhatToCheck (a breaker's finding): a pause
// written to a target that rejects the member's SASL credentials failed
// with "...: EOF" alone; it says, as the flow's status does, that the
// broker closed the connection or rejected the credentials and what to
// check, without the password.
func TestPauseRefusedByTargetSaysWhatToCheck(t *testing.T) {
	t.Parallel()
	_, opts := wrongSASLTarget(t, kgo.RequestRetries(2))
	m, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = m.SetTargetState(ctx, "src->dst", TargetPaused, "test", "")
	if err == nil || !strings.Contains(err.Error(), "target cluster dst unreachable") ||
		!(strings.Contains(err.Error(), "check dst.security.protocol and dst.sasl.*") || strings.Contains(err.Error(), "the broker rejected the credentials")) ||
		strings.Contains(err.Error(), wrongSASLPassword) {
		t.Errorf("SetTargetState against a target rejecting the credentials: %v; want the unreachable target and what to check, without the password", err)
	}
}

// TestSameKfakeIDWarningsAgree: two in-process kfake clusters left with
// kfake's default cluster ID draw two warnings, and both say to give each
// its own ID (the provenance one said only to turn the header off, for a
// copy within one cluster: a new user's try, stop 38).
func TestSameKfakeIDWarningsAgree(t *testing.T) {
	t.Parallel()
	var clusters [2]*kfake.Cluster
	for i := range clusters {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		clusters[i] = c
	}
	var logs lockedBuffer
	runMirror(t, WithCluster(ClusterConfig{Alias: "src", Client: []kgo.Opt{kgo.SeedBrokers(clusters[0].ListenAddrs()...)}}),
		WithCluster(ClusterConfig{Alias: "dst", Client: []kgo.Opt{kgo.SeedBrokers(clusters[1].ListenAddrs()...)}}),
		WithFlow(FlowConfig{Source: "src", Target: "dst"}), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	testcluster.Eventually(t, 20*time.Second, "both warnings logged", func() (bool, string) {
		s := logs.String()
		return strings.Contains(s, "provenance header off") && strings.Contains(s, "several cluster aliases name the same cluster"), s
	})
	for _, line := range strings.Split(logs.String(), "\n") {
		if (strings.Contains(line, "provenance header off") || strings.Contains(line, "several cluster aliases")) &&
			!strings.Contains(line, "give each its own ID with kfake.ClusterID(alias)") {
			t.Errorf("a warning lacks the kfake hint: %s", line)
		}
	}
}

// TestLeaveLogsRevokedOnce: a member that stops logs its slots' release
// once (the group's revocation during LeaveGroup, of slots the member had
// released already, logged it a second time with took=0s).
func TestLeaveLogsRevokedOnce(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	fc := fastFlow(p)
	fc.Tasks = 2
	var logs lockedBuffer
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))...)
	testcluster.Eventually(t, 30*time.Second, "both slots owned", func() (bool, string) {
		st := m.Status().Flows[0]
		return len(st.Member.Slots) == 2, fmt.Sprintf("slots %v", st.Member.Slots)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), `msg="slots revoked"`); n != 1 {
		t.Errorf("%d \"slots revoked\" lines, want 1:\n%s", n, logs.String())
	}
}

// TestGroupJoinRefusedIsRetrying: a session timeout the target's brokers
// refuse (below group.min.session.timeout.ms) keeps the member out of the
// flow's group: the flow is RETRYING, naming the setting to change, where
// it said RUNNING with no error and replicated nothing (a helper trying to
// break exactly-once mode, stop 38).
func TestGroupJoinRefusedIsRetrying(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(20*time.Second))
	if p.Real {
		t.Skip("needs kfake's group.min.session.timeout.ms of 20 s (the test brokers accept 3 s)")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	fc := fastFlow(p)
	fc.SessionTimeout, fc.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	want := "joining the flow's group kmirror." + fc.Name() + " on " + p.Target.Alias + ": "
	testcluster.Eventually(t, 30*time.Second, "RETRYING naming the session timeout", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.State == StateRetrying && strings.Contains(st.Error, want) && strings.Contains(st.Error, "INVALID_SESSION_TIMEOUT") &&
				strings.Contains(st.Error, "refuse session.timeout.ms 3s") && strings.Contains(st.Error, "set "+p.Target.Alias+".session.timeout.ms within them"),
			fmt.Sprintf("%s: %s", st.State, st.Error)
	})
}
