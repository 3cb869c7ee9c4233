package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// brkQRefusal is how a target that rejects the file's SASL credentials
// refuses the client: name, the error its clients end with, after
// "target[ cluster] B unreachable: ".
type brkQRefusal struct {
	name   string
	answer bool // answer SASL_AUTHENTICATION_FAILED, as a Kafka broker does, instead of closing the connection (kfake's way)
	err    string
}

// brkQRefusals are both ways.
var brkQRefusals = []brkQRefusal{
	{"closes", false, "EOF (the broker closed the connection: a broker stopping does that; if this cluster never answered, " +
		"a security.protocol the listener does not speak, or SASL credentials it rejects, look like this: check B.security.protocol and B.sasl.*)"},
	{"answers", true, "SASL_AUTHENTICATION_FAILED: SASL Authentication failed.: Authentication failed: Invalid username or password " +
		"(the broker rejected the credentials: check B.sasl.jaas.config and B.sasl.mechanism)"},
}

// brkQRejectingTarget starts clusters A and B with SASL, B refusing as r
// says, and writes a file of flow A->B whose B password ("stale-secret")
// B rejects.
func brkQRejectingTarget(t *testing.T, r brkQRefusal) string {
	t.Helper()
	p := testcluster.NewFakePair(t, "A", "B", kfake.EnableSASL(), kfake.Superuser("PLAIN", "u", "right"))
	if r.answer {
		refuseSASL(p.Target.Fake)
	}
	return saslProps(t, p, "right", "stale-secret")
}

// refuseSASL makes c answer every SASL authentication with Kafka's
// SASL_AUTHENTICATION_FAILED, as a broker rejecting the password does
// (kfake itself closes the connection instead).
func refuseSASL(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := kr.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.Version = kr.GetVersion()
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("Authentication failed: Invalid username or password")
		return resp, nil, true
	})
}

// saslProps writes the properties file of flow A->B (topic orders) over
// p's SASL/PLAIN listeners as user "u", with password aPW on A and bPW on B.
func saslProps(t *testing.T, p *testcluster.Pair, aPW, bPW string) string {
	t.Helper()
	jaas := func(pw string) string {
		return `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + pw + `";`
	}
	return writeProps(t, "clusters = A, B\nA.bootstrap.servers = "+p.Source.Brokers[0]+"\nB.bootstrap.servers = "+p.Target.Brokers[0]+"\n"+
		"security.protocol = SASL_PLAINTEXT\nsasl.mechanism = PLAIN\nA.sasl.jaas.config = "+jaas(aPW)+"\nB.sasl.jaas.config = "+jaas(bPW)+"\n"+
		"A->B.enabled = true\nA->B.topics = orders\n")
}

// TestBrkQDRTargetRejectingCredentialsSaysSo: failover and failback
// against a target that rejects the file's SASL credentials ended with
// "reading the status topic of A->B on B: reading
// mm2-kmirror-status.A.internal: EOF" (kfake, like a listener that closes
// the connection) or with the broker's SASL_AUTHENTICATION_FAILED, with no
// word of the keys to fix, where translate and verify name them. All three
// now probe the target first (refusedBy, kclient.Refusal) and say that it
// refused the client, naming the cluster alias and the keys to check,
// never the password; exit 3.
func TestBrkQDRTargetRejectingCredentialsSaysSo(t *testing.T) {
	for _, r := range brkQRefusals {
		props := brkQRejectingTarget(t, r)
		for _, c := range []struct {
			cmd, prefix string
			main        func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) int
		}{
			{"failover", "reading the status topic of A->B on B: ", func(ctx context.Context, a []string, o, e *bytes.Buffer) int { return failoverMain(ctx, a, o, e) }},
			{"failback", "", func(ctx context.Context, a []string, o, e *bytes.Buffer) int { return failbackMain(ctx, a, o, e) }},
			{"translate", "reading the checkpoints of A->B on B: ", func(ctx context.Context, a []string, o, e *bytes.Buffer) int { return translateMain(ctx, a, o, e) }},
		} {
			args := []string{"-config", props, "-flow", "A->B", "-groups", "g", "-timeout", "1m"}
			if c.cmd != "translate" {
				args = append(args, "-dry-run")
			}
			var out, errOut bytes.Buffer
			code := c.main(context.Background(), args, &out, &errOut)
			want := "kmirror " + c.cmd + ": " + c.prefix + "target B unreachable: cluster B: " + r.err + "\n"
			if code != drUnreachable || errOut.String() != want || strings.Contains(out.String()+errOut.String(), "stale-secret") {
				t.Errorf("%s, target that %s: exit %d, stderr\n%s\nwant exit %d, stderr\n%s\nstdout:\n%s", c.cmd, r.name, code, errOut.String(), drUnreachable, want, out.String())
			}
		}
	}
}

// TestBrkQRestartTargetRejectingCredentialsSaysSo: POST
// /connectors/{flow}/restart to a runner whose target rejects its SASL
// credentials answered, after its 30 s write deadline, "creating
// mm2-kmirror-status.A.internal on B: context deadline exceeded" (and PUT
// resume, after 25 s, a bare EOF had it not been for its hint). Every
// write to the status topic (restart, task restart, pause, resume, stop)
// probes the target first and answers at once that it refused the client,
// with the keys to check and never the password.
func TestBrkQRestartTargetRejectingCredentialsSaysSo(t *testing.T) {
	for _, r := range brkQRefusals {
		base, _, _, _ := started(t, "-config", brkQRejectingTarget(t, r))
		for _, c := range []struct {
			method, path, want string
		}{
			{http.MethodPost, "/connectors/A-%3EB/restart?onlyFailed=true&includeTasks=true", "mirror: RestartFailedInCluster: this member restarted 0 partition(s); " +
				"the other members may not have been asked (the restart request was not acknowledged): target cluster B unreachable: " + r.err +
				"; the restart request is stored in the flow's status topic on its target (cluster B), which must answer: retry the POST once it does " +
				"(GET /connectors/A-%3EB/status shows the flow's state)"},
			{http.MethodPut, "/connectors/A-%3EB/resume", "mirror: SetTargetState: target cluster B unreachable: " + r.err +
				"; the flow's target state was not stored (or its write not acknowledged), so no member resumes yet: it is stored in the flow's status topic " +
				"on its target (cluster B), which must answer: retry the PUT once it does (GET /connectors/A-%3EB/status shows the flow's state)"},
		} {
			var code int
			var body []byte
			if c.method == http.MethodPost {
				code, body = post(t, base+c.path)
			} else {
				code, body = put(t, base+c.path)
			}
			var doc struct {
				Message string `json:"message"`
			}
			if err := json.Unmarshal(body, &doc); err != nil || code != http.StatusInternalServerError || doc.Message != c.want || strings.Contains(string(body), "stale-secret") {
				t.Errorf("%s %s, target that %s: %d %s (%v)\nwant 500 with message\n%s", c.method, c.path, r.name, code, body, err, c.want)
			}
		}
	}
}
