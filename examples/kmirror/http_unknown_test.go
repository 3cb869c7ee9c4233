package main

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
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

// TestConnectorsUnknownExpandIgnored: Connect's GET /connectors ignores an
// expand value other than status and info (it logs "Ignoring unknown
// expansion type") and answers 200 with each connector's known
// expansions; kmirror answered 400, so a client sending an expansion of a
// newer Connect, or expand=STATUS, got no list at all.
func TestConnectorsUnknownExpandIgnored(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, c := range []struct {
		query string
		want  []string // the keys of the flow's entry
	}{
		{"?expand=foo", []string{}},
		{"?expand=STATUS", []string{}},
		{"?expand=info&expand=foo", []string{"info"}},
		{"?expand=foo&expand=status", []string{"status"}},
	} {
		resp, err := http.Get(srv.URL + "/connectors" + c.query)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got map[string]map[string]json.RawMessage
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Errorf("GET /connectors%s: HTTP %d %s; want 200 and the map of connectors, as Connect", c.query, resp.StatusCode, body)
			continue
		}
		entry, ok := got["src->dst"]
		keys := []string{}
		for k := range entry {
			keys = append(keys, k)
		}
		if !ok || !slices.Equal(keys, c.want) {
			t.Errorf("GET /connectors%s: %s; want src->dst with the expansions %v", c.query, body, c.want)
		}
	}
}

// TestMethodNotAllowedListsHead: a 405's Allow header lists HEAD with GET,
// which every GET route serves (it listed GET alone); a POST-only route
// lists POST alone.
func TestMethodNotAllowedListsHead(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodPost, "/status", "GET, HEAD"},
		{http.MethodDelete, "/connectors/src-%3Edst/status", "GET, HEAD"},
		{http.MethodGet, "/connectors/src-%3Edst/restart", "POST"},
		{http.MethodPost, "/connectors/src-%3Edst/pause", "PUT"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: HTTP %d Allow %q, want 405 Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
	// HEAD of a GET route is served, not refused.
	resp, err := http.Head(srv.URL + "/connectors")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD /connectors: HTTP %d, want 200", resp.StatusCode)
	}
}

// TestConnectConfigKeys: a flow's settings are keyed as MM2 hands them to
// MirrorSourceConnector (GET /connectors/{flow}/config answered the file's
// own keys, "A->B.topics", so a script reading config["topics"] found
// nothing).
func TestConnectConfigKeys(t *testing.T) {
	got := connectConfig("A->B", "A", "B", map[string]string{
		"A->B.topics": "orders.*", "A->B.tasks.max": "4",
		"A.security.protocol": "SASL_SSL", "A.consumer.fetch.max.bytes": "1024",
		"B.sasl.jaas.config": "[hidden]", "B.producer.buffer.memory": "8",
		"C.bootstrap.servers": "elsewhere:9092", // another cluster's: not the flow's
	})
	want := map[string]string{
		"topics": "orders.*", "tasks.max": "4",
		"source.cluster.security.protocol": "SASL_SSL", "source.consumer.fetch.max.bytes": "1024",
		"target.cluster.sasl.jaas.config": "[hidden]", "target.producer.buffer.memory": "8",
		"name": "A->B", "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
		"source.cluster.alias": "A", "target.cluster.alias": "B",
	}
	if !maps.Equal(got, want) {
		t.Errorf("connectConfig = %v\nwant %v", got, want)
	}
	// One alias a dotted prefix of the other: each key goes to its own.
	got = connectConfig("a->a.b", "a", "a.b", map[string]string{"a.security.protocol": "SSL", "a.b.security.protocol": "PLAINTEXT"})
	if got["source.cluster.security.protocol"] != "SSL" || got["target.cluster.security.protocol"] != "PLAINTEXT" {
		t.Errorf("aliases a and a.b: %v; want the source's SSL and the target's PLAINTEXT", got)
	}
}

// TestRootIsServerInfo: GET / answers Connect's server information
// (version, commit) where it answered 404; other paths stay 404.
func TestRootIsServerInfo(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var d rootDoc
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &d) != nil || d.Version != readVersion().Version {
		t.Errorf("GET /: HTTP %d %s, want 200 with the version %q", resp.StatusCode, body, readVersion().Version)
	}
	resp, err = http.Get(srv.URL + "/connector-plugins")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /connector-plugins: HTTP %d, want 404", resp.StatusCode)
	}
}

// TestNuMM2ConnectorConfigIsItsOwn: GET /connectors/MirrorCheckpointConnector/config
// answered the flow's name and MirrorSourceConnector's class, and GET
// /connectors/MirrorHeartbeatConnector answered an info whose name was the
// connector's and whose config's name was the flow's. MM2 (and Connect)
// name each connector's configuration after it, with its own class: a
// script checking connector.class under MirrorCheckpointConnector found
// MirrorSourceConnector. A flow name keeps MirrorSourceConnector's.
func TestNuMM2ConnectorConfigIsItsOwn(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	for _, c := range []struct{ name, path, class string }{
		{"src->dst", "src-%3Edst", mm2SourceClass},
		{mm2Source, mm2Source, mm2SourceClass},
		{mm2Checkpoint, mm2Checkpoint, "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"},
		{mm2Heartbeat, mm2Heartbeat, "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"},
	} {
		var cfg map[string]string
		if code := getJSON(t, srv.URL+"/connectors/"+c.path+"/config", &cfg); code != http.StatusOK ||
			cfg["name"] != c.name || cfg["connector.class"] != c.class || cfg["source.cluster.alias"] != "src" {
			t.Errorf("GET /connectors/%s/config: HTTP %d %v; want name %s, connector.class %s and the flow's aliases", c.path, code, cfg, c.name, c.class)
		}
		var info infoDoc
		if code := getJSON(t, srv.URL+"/connectors/"+c.path, &info); code != http.StatusOK ||
			info.Name != c.name || info.Config["name"] != c.name || info.Config["connector.class"] != c.class {
			t.Errorf("GET /connectors/%s: HTTP %d name %q config %v; want name %s in both, connector.class %s", c.path, code, info.Name, info.Config, c.name, c.class)
		}
	}
}

// TestNuUnknownConnectorShowsTheFlowEncoded: the 404 for an unknown
// connector showed the arrow's encoding on "a-%3Eb" whatever the flows
// ("kmirror's connectors are its flows: A->B (URL-encode the arrow:
// a-%3Eb)"), which a new user read as flow names in lower case; it shows
// it on one of the flows.
func TestNuUnknownConnectorShowsTheFlowEncoded(t *testing.T) {
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst"})
	resp, err := http.Get(srv.URL + "/connectors/nope/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Message string `json:"message"`
	}
	if resp.StatusCode != http.StatusNotFound || json.Unmarshal(body, &e) != nil ||
		!strings.Contains(e.Message, "its flows: src->dst (URL-encode the arrow: src-%3Edst)") {
		t.Errorf("GET /connectors/nope/status: HTTP %d %s; want 404 showing src-%%3Edst", resp.StatusCode, body)
	}
}
