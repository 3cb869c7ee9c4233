package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/mirror"
)

// TestBrkJTrailingSlash: Connect's REST API (JAX-RS) serves a path with one
// trailing slash as the path without it, and scripts written against it
// say "curl $CONNECT/connectors/" or ".../status/"; kmirror answered 404
// "no such endpoint" for them. One trailing slash is now ignored: the
// same answer as without it, 405 for a method the path does not take, and
// 404 for an unknown connector.
func TestBrkJTrailingSlash(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	var names []string
	if code := getJSON(t, srv.URL+"/connectors/", &names); code != http.StatusOK || len(names) != 1 || names[0] != "src->dst" {
		t.Errorf("GET /connectors/: HTTP %d %v; want 200 [src->dst]", code, names)
	}
	var cfg map[string]string
	if code := getJSON(t, srv.URL+"/connectors/src-%3Edst/config/", &cfg); code != http.StatusOK || cfg["name"] != "src->dst" || cfg["source.cluster.alias"] != "src" {
		t.Errorf("GET /connectors/src-%%3Edst/config/: HTTP %d %v; want 200 with name src->dst", code, cfg)
	}
	var info infoDoc
	if code := getJSON(t, srv.URL+"/connectors/src-%3Edst/", &info); code != http.StatusOK || info.Name != "src->dst" {
		t.Errorf("GET /connectors/src-%%3Edst/: HTTP %d %+v; want 200 with name src->dst", code, info)
	}
	var ready readinessDoc
	if code := getJSON(t, srv.URL+"/readyz/", &ready); code != http.StatusServiceUnavailable || ready.GracePeriod != "1m0s" {
		t.Errorf("GET /readyz/: HTTP %d %+v; want /readyz's document (503: the Mirror does not run)", code, ready)
	}
	status, allow, code, msg := refusal(t, http.MethodPost, srv.URL+"/connectors/src-%3Edst/status/", "")
	if status != http.StatusMethodNotAllowed || code != http.StatusMethodNotAllowed || allow != "GET, HEAD" || msg != "POST /connectors/src->dst/status: method not allowed; use GET" {
		t.Errorf("POST .../status/: HTTP %d Allow %q code %d %q; want 405 Allow GET, HEAD", status, allow, code, msg)
	}
	var e struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	resp, err := http.Get(srv.URL + "/connectors/nope/status/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusNotFound || e.ErrorCode != http.StatusNotFound {
		t.Errorf("GET /connectors/nope/status/: HTTP %d %+v (%v); want 404 for the unknown connector", resp.StatusCode, e, err)
	}
}

// TestBrkJRestartHintNamesTheFlow: a restart sent to MirrorSourceConnector
// with ?flow= (two flows run it) answered a hint pointing at
// "GET /connectors/MirrorSourceConnector/status" (or ".../resume" for a
// paused flow), without the ?flow=: following it answered 409 "runs for 2
// flows". The hint names the flow's own endpoint.
func TestBrkJRestartHintNamesTheFlow(t *testing.T) {
	srv, _ := targetHandlerOf(t, []mirror.FlowConfig{{Source: "src", Target: "dst"}, {Source: "dst", Target: "src"}},
		mirror.FlowConfig{Source: "src", Target: "dst"}, mirror.FlowConfig{Source: "dst", Target: "src"})
	code, body := post(t, srv.URL+"/connectors/MirrorSourceConnector/restart?onlyFailed=true&flow=src-%3Edst")
	var d restartDoc
	if err := json.Unmarshal(body, &d); err != nil || code != http.StatusAccepted {
		t.Fatalf("POST restart: HTTP %d %s (%v); want 202", code, body, err)
	}
	want := "this member replicates no partition of the flow now; GET /connectors/src-%3Edst/status lists every member's partitions and their states"
	if d.Name != "src->dst" || d.Hint != want {
		t.Errorf("restart of MirrorSourceConnector?flow=src->dst: name %q hint %q; want src->dst and %q", d.Name, d.Hint, want)
	}
	// The endpoint the hint names answers for the flow.
	var st flowDoc
	if code := getJSON(t, srv.URL+"/connectors/src-%3Edst/status", &st); code != http.StatusOK || st.Flow != "src->dst" {
		t.Errorf("GET /connectors/src-%%3Edst/status: HTTP %d flow %q; want 200 src->dst", code, st.Flow)
	}
}

// TestBrkJOptionsListsMethods: an OPTIONS request (a client or a browser
// asking what a path takes) answered 405 "method not allowed; use GET",
// where Connect's REST API (JAX-RS) answers with the methods in Allow. It
// answers 204 with Allow now; an unknown path stays 404.
func TestBrkJOptionsListsMethods(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, c := range []struct{ path, allow string }{
		{"/connectors", "GET, HEAD, OPTIONS"},
		{"/connectors/src-%3Edst/status", "GET, HEAD, OPTIONS"},
		{"/connectors/src-%3Edst/restart", "POST, OPTIONS"},
		{"/connectors/src-%3Edst/pause", "PUT, OPTIONS"},
		{"/readyz", "GET, HEAD, OPTIONS"},
	} {
		req, _ := http.NewRequest(http.MethodOptions, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Allow") != c.allow {
			t.Errorf("OPTIONS %s: HTTP %d Allow %q; want 204 Allow %q", c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
	status, _, code, _ := refusal(t, http.MethodOptions, srv.URL+"/connector-plugins", "")
	if status != http.StatusNotFound || code != http.StatusNotFound {
		t.Errorf("OPTIONS /connector-plugins: HTTP %d code %d; want 404", status, code)
	}
}

// TestBrkJConnectHealthEndpoint: Kafka Connect 3.9 answers GET /health
// (KIP-1017: 200 {"status":"healthy",...}, 500 "unhealthy"), which
// probes and scripts written against Connect call; kmirror answered 404,
// which a liveness probe takes for a dead worker and restarts in a loop.
// It answers /healthz's liveness in Connect's shape: healthy while the
// engine runs (also with a flow retrying, and during a graceful stop),
// unhealthy with /healthz's reason once Run returned on its own.
func TestBrkJConnectHealthEndpoint(t *testing.T) {
	h := newHandler(nil, http.NotFoundHandler(), time.Minute)
	h.probe.status = func() mirror.Status {
		return mirror.Status{Flows: []mirror.FlowStatus{{Name: "a->b", State: mirror.StateRetrying, Since: time.Now()}}}
	}
	check := func(wantCode int, want connectHealthDoc) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
		var got connectHealthDoc
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != wantCode || got != want {
			t.Errorf("GET /health: HTTP %d %s (%v); want %d %+v", rec.Code, rec.Body, err, wantCode, want)
		}
	}
	check(http.StatusOK, connectHealthDoc{Status: "healthy", Message: "kmirror is running its flows (GET /readyz says whether they replicate)"})
	h.stopping.Store(true)
	check(http.StatusOK, connectHealthDoc{Status: "healthy", Message: "kmirror is stopping gracefully"})
	h.stopping.Store(false) // Run returned on its own
	h.runReturned(fmt.Errorf("mirror: flow a->b: boom"))
	check(http.StatusInternalServerError, connectHealthDoc{Status: "unhealthy", Message: "engine stopped: Run returned: mirror: flow a->b: boom"})
}

// TestBrkJTopicsReset: Connect's PUT /connectors/{name}/topics/reset
// (KIP-558) answered 404 "no such endpoint", which a script reads as an
// unknown connector. kmirror's active topics are always those the flow
// writes now, so the reset has nothing to do: 202, as Connect answers, and
// GET .../topics answers as before; an unknown connector stays 404.
func TestBrkJTopicsReset(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, c := range []struct {
		path string
		want int
	}{
		{"/connectors/src-%3Edst/topics/reset", http.StatusAccepted},
		{"/connectors/MirrorSourceConnector/topics/reset", http.StatusAccepted},
		{"/connectors/nope/topics/reset", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("PUT %s: HTTP %d, want %d", c.path, resp.StatusCode, c.want)
		}
	}
	var topics map[string]map[string][]string
	if code := getJSON(t, srv.URL+"/connectors/src-%3Edst/topics", &topics); code != http.StatusOK || topics["src->dst"]["topics"] == nil {
		t.Errorf("GET .../topics after the reset: HTTP %d %v; want 200 {\"src->dst\":{\"topics\":[]}}", code, topics)
	}
	status, allow, code, _ := refusal(t, http.MethodPost, srv.URL+"/connectors/src-%3Edst/topics/reset", "")
	if status != http.StatusMethodNotAllowed || code != http.StatusMethodNotAllowed || allow != "PUT" {
		t.Errorf("POST .../topics/reset: HTTP %d Allow %q; want 405 Allow PUT", status, allow)
	}
}

// TestBrkJTargetStateWriteFailureSaysWhatToDo: a pause whose write the
// flow's target did not take answered 500 with the client's error alone
// ("... dial tcp 127.0.0.1:1: connect: connection refused"), which did not
// say whether the flow was paused nor what to do. It says that nothing
// was stored, where the state goes, and to retry once that cluster
// answers.
func TestBrkJTargetStateWriteFailureSaysWhatToDo(t *testing.T) {
	// dst->src: its target, src, has nothing listening.
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "dst", Target: "src"})
	code, body := put(t, srv.URL+"/connectors/dst-%3Esrc/pause")
	ec, msg := connectError(t, body)
	want := "; the flow's target state was not stored (or its write not acknowledged), so no member pauses yet: it is stored in the flow's status topic on its target (cluster src), " +
		"which must answer: retry the PUT once it does (GET /connectors/dst-%3Esrc/status shows the flow's state)"
	if code != http.StatusInternalServerError || ec != http.StatusInternalServerError || !strings.HasPrefix(msg, "mirror: SetTargetState: ") || !strings.HasSuffix(msg, want) {
		t.Errorf("PUT pause with the target down: HTTP %d %s; want 500 ending %q", code, body, want)
	}
}

// TestBrkJRestartWriteFailureSaysWhatToDo: a restart whose request the
// flow's target did not take answered 500 with what happened alone
// ("... the restart request was not acknowledged): ... context deadline
// exceeded" with the target rejecting the credentials); it says where the
// request goes and to retry once that cluster answers, for the flow's
// restart and a task's.
func TestBrkJRestartWriteFailureSaysWhatToDo(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "dst", Target: "src"})
	want := "; the restart request is stored in the flow's status topic on its target (cluster src), which must answer: retry the POST once it does (GET /connectors/dst-%3Esrc/status shows the flow's state)"
	for _, path := range []string{"/connectors/dst-%3Esrc/restart?onlyFailed=true", "/connectors/dst-%3Esrc/tasks/0/restart"} {
		code, body := post(t, srv.URL+path)
		ec, msg := connectError(t, body)
		if code != http.StatusInternalServerError || ec != http.StatusInternalServerError || !strings.Contains(msg, "the restart request was not acknowledged") || !strings.HasSuffix(msg, want) {
			t.Errorf("POST %s with the target down: HTTP %d %s; want 500 ending %q", path, code, body, want)
		}
	}
}

// TestBrkJTrailingEncodedSlashIsTheName: the trailing slash ignored is the
// path's, not an encoded one ending a connector name: /connectors/src-%3Edst%2F
// names the connector "src->dst/", unknown (404), not src->dst.
func TestBrkJTrailingEncodedSlashIsTheName(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	code, body := get(t, srv.URL+"/connectors/src-%3Edst%2F")
	if ec, msg := connectError(t, body); code != http.StatusNotFound || ec != http.StatusNotFound || !strings.HasPrefix(msg, "Connector src->dst/ not found.") {
		t.Errorf("GET /connectors/src-%%3Edst%%2F: HTTP %d %s; want 404 for the connector src->dst/", code, body)
	}
}
