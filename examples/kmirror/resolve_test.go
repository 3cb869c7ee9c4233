package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kmirror/kmirror/mirror"
)

// TestResolveAmbiguousMM2NameIsConflict: an MM2 connector name that
// several flows run, asked without ?flow=, answers 409 Conflict (a new
// user's script took the 404 it answered before for "not deployed"); one
// flow, ?flow= and unknown names keep their answers; a flow -clusters
// leaves to other nodes says so.
func TestResolveAmbiguousMM2NameIsConflict(t *testing.T) {
	h := &handler{flows: []mirror.FlowConfig{
		{Source: "a", Target: "b"},
		{Source: "b", Target: "a"},
		{Source: "c", Target: "b", DisableHeartbeats: true},
	}, elsewhere: []string{"a->d"}, onlyTargets: []string{"a", "b"}}
	for _, tc := range []struct {
		path     string
		want     string // the flow resolved; "" when an error is answered
		code     int    // the error's status when want is ""
		errorMsg string
	}{
		{"/connectors/MirrorSourceConnector/status", "", http.StatusConflict,
			"Connector MirrorSourceConnector runs for 3 flows (a->b, b->a, c->b): select one with ?flow=<source->target> (URL-encoded: ?flow=a-%3Eb)"},
		{"/connectors/MirrorHeartbeatConnector/status", "", http.StatusConflict,
			"Connector MirrorHeartbeatConnector runs for 2 flows (a->b, b->a): select one with ?flow=<source->target> (URL-encoded: ?flow=a-%3Eb)"},
		{"/connectors/MirrorSourceConnector/status?flow=b-%3Ea", "b->a", 0, ""},
		{"/connectors/MirrorHeartbeatConnector/status?flow=c-%3Eb", "", http.StatusNotFound,
			`Connector MirrorHeartbeatConnector of flow "c->b" not found: the flows running MirrorHeartbeatConnector are: a->b, b->a`},
		{"/connectors/a-%3Eb/status", "a->b", 0, ""},
		// A flow of the file that -clusters leaves to other nodes.
		{"/connectors/a-%3Ed/status", "", http.StatusNotFound,
			"Connector a->d not found on this member: -clusters a,b runs only the flows into a, b (a->b, b->a, c->b); a->d runs on the members started with its target in -clusters"},
		{"/connectors/MirrorSourceConnector/status?flow=a-%3Ed", "", http.StatusNotFound,
			`Connector MirrorSourceConnector of flow "a->d" not found on this member: -clusters a,b runs only the flows into a, b (a->b, b->a, c->b); a->d runs on the members started with its target in -clusters`},
	} {
		mux := http.NewServeMux()
		var got string
		mux.HandleFunc("GET /connectors/{name}/status", func(w http.ResponseWriter, r *http.Request) { got = h.resolve(w, r) })
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if got != tc.want {
			t.Errorf("%s: resolved %q, want %q", tc.path, got, tc.want)
		}
		if tc.want != "" {
			continue
		}
		var e struct {
			ErrorCode int    `json:"error_code"`
			Message   string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != tc.code || e.ErrorCode != tc.code || e.Message != tc.errorMsg {
			t.Errorf("%s: HTTP %d %s; want %d %q", tc.path, rec.Code, rec.Body.Bytes(), tc.code, tc.errorMsg)
		}
	}
}
