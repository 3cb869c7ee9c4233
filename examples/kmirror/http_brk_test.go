package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/mirror"
)

// TestBrk1207ConfigChangeRefusalSaysWhy: a Connect client creating,
// reconfiguring or deleting a connector (POST /connectors, PUT
// /connectors/{flow}/config, DELETE /connectors/{flow}) was answered only
// "method not allowed; use GET", which reads as a typo in the method (the
// same finding as TestAlterOffsetsRefusalSaysWhy for the offsets). The
// 405 must say that the flows come from the properties file, and what to
// do instead.
func TestBrk1207ConfigChangeRefusalSaysWhy(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, c := range []struct{ method, path, want string }{
		{http.MethodPost, "/connectors", "properties file"},
		{http.MethodPut, "/connectors/src-%3Edst/config", "properties file"},
		{http.MethodDelete, "/connectors/src-%3Edst", "/stop"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(`{"name":"src->dst","config":{"tasks.max":"2"}}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code, msg := connectError(t, body)
		if resp.StatusCode != http.StatusMethodNotAllowed || code != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: HTTP %d Allow %q: %s; want 405, Allow GET, HEAD, and a message with %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), msg, c.want)
		}
	}
}
