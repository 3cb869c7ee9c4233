package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/mirror"
)

// targetHandler is the runner's handler over a Mirror (not running) of the
// flows fcs between src (nothing listens) and dst (an embedded cluster):
// the PUT endpoints write the target state on dst, which the returned
// options reach. h.flows is the first flow alone.
func targetHandler(t *testing.T, fcs ...mirror.FlowConfig) (*httptest.Server, []kgo.Opt) {
	t.Helper()
	return targetHandlerOf(t, fcs[:1], fcs...)
}

// targetHandlerOf is targetHandler with h.flows (the flows of the file
// the REST API knows) served.
func targetHandlerOf(t *testing.T, served []mirror.FlowConfig, fcs ...mirror.FlowConfig) (*httptest.Server, []kgo.Opt) {
	t.Helper()
	dst, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Close)
	opts := []mirror.Opt{mirror.WithCluster(mirror.ClusterConfig{Alias: "src", Client: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: "dst", Client: []kgo.Opt{kgo.SeedBrokers(dst.ListenAddrs()...)}})}
	for _, fc := range fcs {
		opts = append(opts, mirror.WithFlow(fc))
	}
	m, err := mirror.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	h := newHandler(m, http.NotFoundHandler(), time.Minute)
	h.worker, h.flows = "w1:8083", served
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, []kgo.Opt{kgo.SeedBrokers(dst.ListenAddrs()...)}
}

// targetStateOn reads the flow's target state from src's status topic.
func targetStateOn(t *testing.T, opts []kgo.Opt) (statustopic.TargetState, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, found, err := statustopic.ReadTargetState(ctx, opts, "src")
	if err != nil {
		t.Fatal(err)
	}
	return rec.State, found
}

// connectError decodes Connect's error shape.
func connectError(t *testing.T, body []byte) (code int, msg string) {
	t.Helper()
	var e struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not Connect's error shape: %v: %s", err, body)
	}
	return e.ErrorCode, e.Message
}

// refusal sends method to url with body and returns the answer's status,
// Allow header and Connect error (code and message).
func refusal(t *testing.T, method, url, body string) (status int, allow string, code int, msg string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	code, msg = connectError(t, b)
	return resp.StatusCode, resp.Header.Get("Allow"), code, msg
}

// TestTargetStateAnswersLikeConnect: PUT pause and resume answer 202
// Accepted, stop 204 No Content (Connect's stop is a void method; kmirror
// answered 202 to all three), all with no body, and each writes its state.
func TestTargetStateAnswersLikeConnect(t *testing.T) {
	srv, opts := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, c := range []struct {
		verb  string
		code  int
		state statustopic.TargetState
	}{
		{"pause", http.StatusAccepted, statustopic.Paused},
		{"stop", http.StatusNoContent, statustopic.Stopped},
		{"resume", http.StatusAccepted, statustopic.Running},
	} {
		code, body := put(t, srv.URL+"/connectors/src-%3Edst/"+c.verb)
		if code != c.code || len(body) != 0 {
			t.Errorf("PUT /connectors/src->dst/%s: HTTP %d %q; want %d, no body", c.verb, code, body, c.code)
		}
		if st, found := targetStateOn(t, opts); !found || st != c.state {
			t.Errorf("after %s: target state %s (found %v), want %s", c.verb, st, found, c.state)
		}
	}
}

// TestCheckpointAndHeartbeatConnectorsCannotPause: MM2 pauses, resumes or
// stops MirrorCheckpointConnector and MirrorHeartbeatConnector alone;
// kmirror's target state is the whole flow's, and resolving those names to
// the flow paused replication (while checkpoints, which PAUSED keeps, went
// on): the opposite of what was asked. They are refused, 400 naming the
// endpoints to use, and nothing is written; MirrorSourceConnector pauses
// the flow.
func TestCheckpointAndHeartbeatConnectorsCannotPause(t *testing.T) {
	srv, opts := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, name := range []string{mm2Checkpoint, mm2Heartbeat} {
		for _, verb := range []string{"pause", "resume", "stop"} {
			code, body := put(t, srv.URL+"/connectors/"+name+"/"+verb)
			ecode, msg := connectError(t, body)
			want := "PUT /connectors/" + name + "/" + verb + ": kmirror cannot " + verb + " " + name + " alone: a flow's target state is the whole flow's " +
				"(PAUSED stops replication while checkpoints, heartbeats and group offset sync go on; STOPPED stops them too). " +
				"Use PUT /connectors/src->dst/" + verb + " (URL-encode the arrow: src-%3Edst) or PUT /connectors/MirrorSourceConnector/" + verb
			if code != http.StatusBadRequest || ecode != http.StatusBadRequest || msg != want {
				t.Errorf("PUT /connectors/%s/%s: HTTP %d %s; want 400 %q", name, verb, code, body, want)
			}
		}
	}
	if st, found := targetStateOn(t, opts); found {
		t.Fatalf("target state %s written by a refused request", st)
	}
	if code, body := put(t, srv.URL+"/connectors/"+mm2Source+"/pause"); code != http.StatusAccepted {
		t.Fatalf("PUT /connectors/MirrorSourceConnector/pause: HTTP %d %s", code, body)
	}
	if st, found := targetStateOn(t, opts); !found || st != statustopic.Paused {
		t.Errorf("after MirrorSourceConnector/pause: %s (found %v), want PAUSED", st, found)
	}
}

// TestTargetStateOfInertFlowIs409: a flow that neither replicates nor
// emits heartbeats cannot be paused; SetTargetState refuses the request
// (ErrTargetStateRefused), answered 409 Conflict (it was 500, a server
// fault), and nothing is written.
func TestTargetStateOfInertFlowIs409(t *testing.T) {
	srv, opts := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst", Disabled: true, DisableHeartbeats: true},
		mirror.FlowConfig{Source: "dst", Target: "src"})
	code, body := put(t, srv.URL+"/connectors/src-%3Edst/pause")
	ecode, msg := connectError(t, body)
	want := "mirror: SetTargetState: flow src->dst neither replicates nor emits heartbeats: it runs nothing to pause or stop"
	if code != http.StatusConflict || ecode != http.StatusConflict || msg != want {
		t.Errorf("PUT pause of a flow that runs nothing: HTTP %d %s; want 409 %q", code, body, want)
	}
	if st, found := targetStateOn(t, opts); found {
		t.Errorf("target state %s written by a refused request", st)
	}
}

// TestRestartQueryLikeConnect: POST /connectors/{flow}/restart reads
// onlyFailed and includeTasks as Connect does (default false). A bare POST
// is Connect's restart of the connector object alone: 204, nothing
// restarted (it restarted the FAILED partitions, as onlyFailed=true,
// while an explicit onlyFailed=false was refused). onlyFailed=true
// restarts the FAILED partitions (202); every task (includeTasks alone),
// an unreadable flag, and a partition filter without onlyFailed=true are
// refused with the way to ask.
func TestRestartQueryLikeConnect(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, c := range []struct {
		query string
		code  int
		msg   string // the error's message, "" for none
	}{
		{"", http.StatusNoContent, ""},
		{"?onlyFailed=false&includeTasks=false", http.StatusNoContent, ""},
		{"?includeTasks=true", http.StatusBadRequest, "includeTasks=true without onlyFailed=true restarts every task: kmirror never restarts a RUNNING partition; add onlyFailed=true to restart the FAILED ones"},
		{"?onlyFailed=yes", http.StatusBadRequest, "onlyFailed=yes: want true or false"},
		{"?topic=orders", http.StatusBadRequest, "topic= and partition= select FAILED partitions to restart: add onlyFailed=true"},
		// In the query's terms, not the Go call's (a new user's try, stop 42).
		{"?partition=1&onlyFailed=true", http.StatusBadRequest, "partition=1 without topic=: name the source topic of the partition (&topic=<source topic>&partition=1), or leave partition= out to restart every FAILED partition"},
	} {
		resp, err := http.Post(srv.URL+"/connectors/src-%3Edst/restart"+c.query, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if c.msg == "" {
			if resp.StatusCode != c.code || len(body) != 0 {
				t.Errorf("POST restart%s: HTTP %d %q; want %d, no body", c.query, resp.StatusCode, body, c.code)
			}
			continue
		}
		if ecode, msg := connectError(t, body); resp.StatusCode != c.code || ecode != c.code || msg != c.msg {
			t.Errorf("POST restart%s: HTTP %d %s; want %d %q", c.query, resp.StatusCode, body, c.code, c.msg)
		}
	}
}
