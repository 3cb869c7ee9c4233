package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/kmirror/kmirror/mirror"
)

// TestUnknownConnectorIs404WhateverTheQuery (regression, found in review): Connect answers 404 for a restart
// of a connector it does not know, whatever the flags. kmirror checked
// includeTasks / topic before it resolved the name, so an unknown flow
// answered 400 ("includeTasks=true without onlyFailed=true ...") and a
// client probing for the connector was told to change its query instead;
// likewise PUT pause on MirrorCheckpointConnector for an unknown flow. The
// name is resolved first now.
func TestUnknownConnectorIs404WhateverTheQuery(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/connectors/nope-%3Edst/restart?includeTasks=true"},
		{http.MethodPost, "/connectors/nope-%3Edst/restart?topic=orders"},
		{http.MethodPut, "/connectors/MirrorCheckpointConnector/pause?flow=nope-%3Edst"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: HTTP %d %s; want 404 (unknown connector, as Connect)", c.method, c.path, resp.StatusCode, body)
		}
	}
}
