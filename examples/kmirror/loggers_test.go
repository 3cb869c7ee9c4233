package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBrkJAdminLoggers: Connect's /admin/loggers (KIP-495), which an
// operator uses to raise MM2's log level without a restart (PUT
// /admin/loggers/org.apache.kafka.connect.mirror {"level":"DEBUG"}),
// answered 404 "no such endpoint". kmirror has one logger, root: GET
// lists it at -log-level, a PUT naming any logger sets the process's
// level (the answer lists ["root"], the logger changed), and the runner's
// log shows DEBUG lines from then on; a bad level, a bad body and
// ?scope=cluster are 400, another logger's GET 404.
func TestBrkJAdminLoggers(t *testing.T) {
	src := fakeCluster(t, "src")
	dst := fakeCluster(t, "dst")
	if err := src.CreateTopic("orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	cfg := writeProps(t, fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = %s\nsrc->dst.enabled = true\nsrc->dst.topics = orders\n",
		src.ListenAddrs()[0], dst.ListenAddrs()[0]))
	base, stderr, _, _ := started(t, "-config", cfg, "-log-level", "warn", "-status-interval", "200ms")

	var all map[string]loggerDoc
	if code := getJSON(t, base+"/admin/loggers", &all); code != http.StatusOK || len(all) != 1 || all["root"].Level != "WARN" {
		t.Errorf("GET /admin/loggers: HTTP %d %v; want 200 {\"root\":{\"level\":\"WARN\"}} (-log-level warn)", code, all)
	}
	if strings.Contains(stderr.String(), "level=DEBUG") {
		t.Fatalf("DEBUG lines under -log-level warn:\n%s", stderr)
	}
	for _, c := range []struct {
		path, body string
		want       int
		msg        string
	}{
		{"/admin/loggers/root", `{"level":"VERBOSE"}`, http.StatusBadRequest, `level "VERBOSE": want TRACE, DEBUG, INFO, WARN, ERROR or FATAL (TRACE is DEBUG, FATAL is ERROR in kmirror)`},
		{"/admin/loggers/root", `{"lvl":"DEBUG"}`, http.StatusBadRequest, `the body must be {"level": "<level>"}, the level one of TRACE, DEBUG, INFO, WARN, ERROR or FATAL`},
		{"/admin/loggers/root?scope=cluster", `{"level":"DEBUG"}`, http.StatusBadRequest, "scope=cluster: kmirror sets the level of the member asked only (scope=worker, the default): PUT /admin/loggers/root on each member"},
	} {
		code, body := put(t, base+c.path, c.body)
		if ec, msg := connectError(t, body); code != c.want || ec != c.want || msg != c.msg {
			t.Errorf("PUT %s %s: HTTP %d %s; want %d %q", c.path, c.body, code, body, c.want, c.msg)
		}
	}
	code, body := get(t, base+"/admin/loggers/org.apache.kafka.connect.mirror")
	if ec, msg := connectError(t, body); code != http.StatusNotFound || ec != http.StatusNotFound || !strings.Contains(msg, "kmirror has one logger, root") {
		t.Errorf("GET /admin/loggers/org.apache.kafka.connect.mirror: HTTP %d %s; want 404 naming root", code, body)
	}

	code, body = put(t, base+"/admin/loggers/org.apache.kafka.connect.mirror", `{"level":"debug"}`)
	var changed []string
	if err := json.Unmarshal(body, &changed); err != nil || code != http.StatusOK || len(changed) != 1 || changed[0] != "root" {
		t.Fatalf("PUT /admin/loggers/org.apache.kafka.connect.mirror: HTTP %d %s; want 200 [\"root\"]", code, body)
	}
	var root loggerDoc
	if code := getJSON(t, base+"/admin/loggers/root", &root); code != http.StatusOK || root.Level != "DEBUG" {
		t.Errorf("GET /admin/loggers/root: HTTP %d %+v; want 200 DEBUG", code, root)
	}
	eventually(t, "the change logged and DEBUG lines written", func() string {
		log := stderr.String()
		if !strings.Contains(log, `msg="log level set" level=DEBUG was=WARN logger=org.apache.kafka.connect.mirror`) || !strings.Contains(log, "level=DEBUG") {
			return "not yet:\n" + log
		}
		return ""
	})
}
