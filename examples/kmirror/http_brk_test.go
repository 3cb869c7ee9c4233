package main

import (
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
		status, allow, code, msg := refusal(t, c.method, srv.URL+c.path, `{"name":"src->dst","config":{"tasks.max":"2"}}`)
		if status != http.StatusMethodNotAllowed || code != http.StatusMethodNotAllowed || allow != "GET, HEAD" || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: HTTP %d Allow %q: %s; want 405, Allow GET, HEAD, and a message with %q", c.method, c.path, status, allow, msg, c.want)
		}
	}
}
