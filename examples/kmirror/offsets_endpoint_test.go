package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
)

// TestConnectorOffsetsAndTopics: GET /connectors/{flow}/offsets answers
// Connect's KIP-875 document with MirrorSourceConnector's partition maps
// and the last source offset replicated of every partition (MM2 resumes at
// offset+1), and GET /connectors/{flow}/topics (KIP-558) the remote
// topics; the MM2 connector name answers the same, the checkpoint
// connector's offsets are refused with the endpoint to use, and altering
// offsets is 405.
func TestConnectorOffsetsAndTopics(t *testing.T) {
	t.Parallel()
	src := fakeCluster(t, "src")
	dst := fakeCluster(t, "dst")
	for _, tp := range []string{"orders", "audit"} {
		if err := src.CreateTopic(tp, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// orders: 7 records in partition 0, 3 in 1; audit: 5 in partition 1,
	// none in 0 (no resume point: not listed, as in MM2).
	for _, c := range []struct {
		topic string
		part  int32
		n     int
	}{{"orders", 0, 7}, {"orders", 1, 3}, {"audit", 1, 5}} {
		for i := range c.n {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: c.topic, Partition: c.part, Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := filepath.Join(t.TempDir(), "mm2.properties")
	props := fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = %s\nsrc->dst.enabled = true\nsrc->dst.topics = orders, audit\n"+
		"tasks.max = 2\nemit.heartbeats.enabled = false\nsrc->dst.emit.checkpoints.enabled = false\n", src.ListenAddrs()[0], dst.ListenAddrs()[0])
	if err := os.WriteFile(cfg, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	base, logs, cancel, wait := started(t, "-config", cfg)
	want := offsetsDoc{Offsets: []offsetDoc{}}
	for _, e := range []struct {
		topic string
		part  int32
		off   int64
	}{{"audit", 1, 4}, {"orders", 0, 6}, {"orders", 1, 2}} {
		var o offsetDoc
		o.Partition.Cluster, o.Partition.Topic, o.Partition.Partition, o.Offset.Offset = "src", e.topic, e.part, e.off
		want.Offsets = append(want.Offsets, o)
	}
	var got offsetsDoc
	eventually(t, "every resume point stored and published", func() string {
		got = offsetsDoc{}
		getJSON(t, base+"/connectors/src-%3Edst/offsets", &got)
		return cmp.Diff(want, got)
	})
	var viaMM2 offsetsDoc
	getJSON(t, base+"/connectors/MirrorSourceConnector/offsets", &viaMM2)
	if d := cmp.Diff(want, viaMM2); d != "" {
		t.Errorf("GET /connectors/MirrorSourceConnector/offsets differs from the flow's (-want +got):\n%s", d)
	}
	// The raw body keeps MM2's key order in the partition map.
	code, body := get(t, base+"/connectors/src-%3Edst/offsets")
	if code != http.StatusOK || !strings.Contains(strings.Join(strings.Fields(string(body)), ""), `{"partition":{"cluster":"src","partition":0,"topic":"orders"},"offset":{"offset":6}}`) {
		t.Errorf("GET offsets: HTTP %d %s; want MM2's partition map {cluster, partition, topic} and offset 6 for orders-0", code, body)
	}

	var topics map[string]map[string][]string
	getJSON(t, base+"/connectors/src-%3Edst/topics", &topics)
	if d := cmp.Diff(map[string]map[string][]string{"src->dst": {"topics": {"src.audit", "src.orders"}}}, topics); d != "" {
		t.Errorf("GET topics (-want +got):\n%s", d)
	}

	// The checkpoint connector writes no remote topic (and, its
	// checkpoints disabled here, no checkpoints topic either).
	topics = nil
	getJSON(t, base+"/connectors/MirrorCheckpointConnector/topics", &topics)
	if d := cmp.Diff(map[string]map[string][]string{"MirrorCheckpointConnector": {"topics": {}}}, topics); d != "" {
		t.Errorf("GET checkpoint connector topics (-want +got):\n%s", d)
	}

	if code, body := get(t, base+"/connectors/MirrorCheckpointConnector/offsets"); code != http.StatusBadRequest ||
		!strings.Contains(string(body), "kmirror keeps no Connect offsets for MirrorCheckpointConnector") || !strings.Contains(string(body), "src-%3Edst") {
		t.Errorf("GET checkpoint connector offsets: HTTP %d %s; want 400 naming the flow's endpoint", code, body)
	}
	req, _ := http.NewRequest(http.MethodPatch, base+"/connectors/src-%3Edst/offsets", strings.NewReader(`{"offsets":[]}`))
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("PATCH offsets: HTTP %d Allow %q, want 405 Allow GET, HEAD", resp.StatusCode, resp.Header.Get("Allow"))
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("stop: %v\nlog:\n%s", err, logs)
	}
}

// TestAlterOffsetsRefusalSaysWhy: Connect's KIP-875 reset and alter
// (DELETE and PATCH /connectors/{flow}/offsets, after PUT .../stop)
// answered only "method not allowed; use GET", which reads as a typo in
// the method; the 405 must say that kmirror moves no resume point on
// request, whatever the flow's state.
func TestAlterOffsetsRefusalSaysWhy(t *testing.T) {
	t.Parallel()
	srv, _ := targetHandler(t, mirror.FlowConfig{Source: "src", Target: "dst", Topics: []string{"orders"}})
	for _, method := range []string{http.MethodDelete, http.MethodPatch} {
		status, allow, code, msg := refusal(t, method, srv.URL+"/connectors/src-%3Edst/offsets", `{"offsets":[]}`)
		if status != http.StatusMethodNotAllowed || code != http.StatusMethodNotAllowed || allow != "GET, HEAD" ||
			!strings.Contains(msg, "kmirror moves no resume point on request") {
			t.Errorf("%s offsets: HTTP %d Allow %q: %s; want 405, Allow GET, HEAD, saying that kmirror moves no resume point on request", method, status, allow, msg)
		}
	}
}
