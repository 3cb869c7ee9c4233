package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
)

// put sends PUT url, with the JSON body if one is given, and returns the
// status and the answer's body.
func put(t *testing.T, url string, reqBody ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(strings.Join(reqBody, "")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func TestWorkerID(t *testing.T) {
	host, _ := os.Hostname()
	for in, want := range map[string]string{
		"127.0.0.1:9090": "127.0.0.1:9090",
		":8083":          host + ":8083",
		"0.0.0.0:8083":   host + ":8083",
		"[::]:8083":      host + ":8083",
		"kmirror-0:8083": "kmirror-0:8083",
		"":               host,
	} {
		if got := workerID(in); got != want {
			t.Errorf("workerID(%q) = %q, want %q", in, got, want)
		}
	}
}

// twoRunners starts two runners (members) of one flow src->dst with
// tasks.max 4 over a 4-partition topic with 10 records per partition.
func twoRunners(t *testing.T) (bases [2]string, src *kfake.Cluster) {
	t.Helper()
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("src"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	// The target asks for SASL: its password must never leave a member.
	dst, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("dst"), kfake.GroupMinSessionTimeout(500*time.Millisecond),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "u", "hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Close)
	if err := src.CreateTopic("orders", 4, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := range int32(4) {
		for i := range 10 {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := writeProps(t, fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = %s\nsrc->dst.enabled = true\nsrc->dst.topics = orders\n"+
		"tasks.max = 4\nemit.heartbeats.enabled = false\ndst.security.protocol = SASL_PLAINTEXT\ndst.sasl.mechanism = PLAIN\n"+
		"dst.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"hunter2\";\n",
		src.ListenAddrs()[0], dst.ListenAddrs()[0]))
	for i := range bases {
		bases[i], _, _, _ = started(t, "-config", cfg, "-status-interval", "200ms", "-log-level", "warn")
	}
	return bases, src
}

// TestConnectEndpointsAnswerForEveryMember (issue 20 part 1): two runner
// members share a flow of 4 slots; each one's GET
// /connectors/src-%3Edst/status lists the 4 slots as tasks (id = slot)
// with the worker id (-listen's host:port) of the member owning each, all
// 4 partitions each in its slot, both members, 40 records and lag 0.
// MirrorSourceConnector answers for the flow; Connect's other endpoints
// (info, config without the secret, tasks, one task's status, expand)
// answer; unknown names and paths get Connect's JSON errors naming the
// flows. PUT pause/resume through one member is applied by both, which
// stay ready.
func TestConnectEndpointsAnswerForEveryMember(t *testing.T) {
	t.Parallel()
	bases, _ := twoRunners(t)
	workers := []string{strings.TrimPrefix(bases[0], "http://"), strings.TrimPrefix(bases[1], "http://")}
	slices.Sort(workers)
	status := func(base, name string) (flowDoc, int) {
		var d flowDoc
		code := getJSON(t, base+"/connectors/"+name+"/status", &d)
		return d, code
	}
	check := func(d flowDoc, state mirror.State) string {
		if len(d.Tasks) != 4 || len(d.Members) != 2 {
			return fmt.Sprintf("%d tasks, %d members", len(d.Tasks), len(d.Members))
		}
		owners := map[string]int{}
		parts := map[int32]bool{}
		for i, tk := range d.Tasks {
			if tk.ID != int32(i) || tk.State != state || !slices.Contains(workers, tk.WorkerID) {
				return fmt.Sprintf("task %d: id %d %s on %q", i, tk.ID, tk.State, tk.WorkerID)
			}
			owners[tk.WorkerID]++
			for _, p := range tk.Partitions {
				if mirror.SlotOf("orders", p.Partition, 4) != tk.ID {
					return fmt.Sprintf("partition %d listed in task %d", p.Partition, tk.ID)
				}
				parts[p.Partition] = true
			}
		}
		var mw []string
		for _, m := range d.Members {
			mw = append(mw, m.WorkerID)
			if len(m.Slots) != owners[m.WorkerID] {
				return fmt.Sprintf("member %s lists slots %v, owns %d tasks", m.WorkerID, m.Slots, owners[m.WorkerID])
			}
		}
		if !slices.Equal(mw, workers) || len(parts) != 4 || d.Records != 40 || d.Lag == nil || *d.Lag != 0 || d.Connector.State != state {
			return fmt.Sprintf("members %v, %d partitions, %d records, lag %v, state %s", mw, len(parts), d.Records, d.Lag, d.Connector.State)
		}
		return ""
	}
	for _, base := range bases {
		eventually(t, base+" answers for both members", func() string {
			d, code := status(base, "src-%3Edst")
			if code != http.StatusOK {
				return fmt.Sprintf("HTTP %d", code)
			}
			if len(d.Member.Slots) != 2 {
				return fmt.Sprintf("own slots %v", d.Member.Slots)
			}
			return check(d, mirror.StateRunning)
		})
	}
	// Eventually: under load a member's record may be older than the
	// last change for an interval (a reviewer saw "4 tasks, 1 members"
	// once in a full run).
	eventually(t, "MirrorSourceConnector answers for the flow", func() string {
		d, code := status(bases[1], mm2Source)
		if code != http.StatusOK || d.Name != mm2Source || d.Flow != "src->dst" || check(d, mirror.StateRunning) != "" {
			return fmt.Sprintf("GET /connectors/MirrorSourceConnector/status: HTTP %d, name %q flow %q: %s", code, d.Name, d.Flow, check(d, mirror.StateRunning))
		}
		return ""
	})

	errCase := func(method, path string, wantCode int, wantMsg string) {
		t.Helper()
		var code int
		var body []byte
		if method == http.MethodPut {
			code, body = put(t, bases[0]+path)
		} else {
			code, body = get(t, bases[0]+path)
		}
		var e struct {
			ErrorCode int    `json:"error_code"`
			Message   string `json:"message"`
		}
		if err := json.Unmarshal(body, &e); err != nil || code != wantCode || e.ErrorCode != wantCode || !regexp.MustCompile(wantMsg).MatchString(e.Message) {
			t.Errorf("%s %s: HTTP %d %s; want %d with a message matching %q", method, path, code, body, wantCode, wantMsg)
		}
	}
	errCase(http.MethodGet, "/connectors/nope/status", 404, `^Connector nope not found\. kmirror's connectors are its flows: src->dst \(URL-encode the arrow: src-%3Edst\); MM2's names MirrorSourceConnector`)
	errCase(http.MethodGet, "/connectors/MirrorHeartbeatConnector/status", 404, `^Connector MirrorHeartbeatConnector not found: no flow runs it \(the flows are: src->dst\)$`)
	errCase(http.MethodGet, "/connectors/MirrorSourceConnector/status?flow=dst-%3Esrc", 404, `^Connector MirrorSourceConnector of flow "dst->src" not found: the flows running MirrorSourceConnector are: src->dst$`)
	errCase(http.MethodGet, "/connectors/src-%3Edst/tasks/4/status", 404, `^Task 4 of connector src->dst not found: its tasks are the slots 0 to 3 \(tasks.max 4\)$`)
	errCase(http.MethodGet, "/nothing/here", 404, `^GET /nothing/here: no such endpoint`)
	errCase(http.MethodPut, "/connectors/nope/pause", 404, `^Connector nope not found`)
	// A new user's try: the flow's name in another case.
	errCase(http.MethodGet, "/connectors/SRC-%3Edst/status", 404, `^Connector SRC->dst not found: flow names are case-sensitive, as the file's aliases: did you mean src->dst\?$`)
	// A known endpoint with another method: 405, as Connect (a review found 404).
	errCase(http.MethodGet, "/connectors/src-%3Edst/stop", 405, `^GET /connectors/src->dst/stop: method not allowed; use PUT$`)
	errCase(http.MethodPut, "/connectors/src-%3Edst/status", 405, `^PUT /connectors/src->dst/status: method not allowed; use GET$`)
	// A reason too long for the status topic: 400, not the broker's 500.
	errCase(http.MethodPut, "/connectors/src-%3Edst/pause?reason="+strings.Repeat("x", 5000), 400, `^\?reason= is 5000 bytes: at most 4096 \(it is stored in the flow's status topic\)$`)

	var info infoDoc
	if code := getJSON(t, bases[0]+"/connectors/src-%3Edst", &info); code != 200 || info.Name != "src->dst" || len(info.Tasks) != 4 ||
		info.Tasks[3] != (taskRef{"src->dst", 3}) || info.Config["tasks.max"] != "4" || info.Type != "source" {
		t.Errorf("GET /connectors/src->dst: HTTP %d %+v", code, info)
	}
	var cfg map[string]string
	getJSON(t, bases[0]+"/connectors/src-%3Edst/config", &cfg)
	// Keyed as Connect shows MirrorSourceConnector's configuration (they
	// were the file's own keys, "src->dst.enabled").
	if v := cfg["target.cluster.sasl.jaas.config"]; v != "[hidden]" || cfg["enabled"] != "true" || cfg["tasks.max"] != "4" ||
		cfg["connector.class"] != mm2SourceClass || cfg["source.cluster.alias"] != "src" || cfg["name"] != "src->dst" {
		t.Errorf("GET /connectors/src->dst/config: %v; want the secret hidden, enabled true, tasks.max 4, MirrorSourceConnector's class and the aliases", cfg)
	}
	for k, v := range cfg {
		if strings.Contains(v, "hunter2") {
			t.Errorf("config %s shows the password: %s", k, v)
		}
	}
	var tasks []taskConfigDoc
	if code := getJSON(t, bases[0]+"/connectors/src-%3Edst/tasks", &tasks); code != 200 || len(tasks) != 4 || tasks[2].ID != (taskRef{"src->dst", 2}) || tasks[2].Config["slot"] != "2" {
		t.Errorf("GET /connectors/src->dst/tasks: HTTP %d %+v", code, tasks)
	}
	var one taskDoc
	if code := getJSON(t, bases[1]+"/connectors/src-%3Edst/tasks/2/status", &one); code != 200 || one.ID != 2 || one.State != mirror.StateRunning || !slices.Contains(workers, one.WorkerID) {
		t.Errorf("GET /connectors/src->dst/tasks/2/status: HTTP %d %+v", code, one)
	}
	var expanded map[string]struct {
		Status *flowDoc `json:"status"`
		Info   *infoDoc `json:"info"`
	}
	if code := getJSON(t, bases[0]+"/connectors?expand=status&expand=info", &expanded); code != 200 || expanded["src->dst"].Status == nil ||
		expanded["src->dst"].Info == nil || len(expanded["src->dst"].Status.Tasks) != 4 || len(expanded) != 1 {
		t.Errorf("GET /connectors?expand=status&expand=info: HTTP %d %+v", code, expanded)
	}

	// Pause through one member: both apply it, stay ready; resume.
	if code, body := put(t, bases[0]+"/connectors/src-%3Edst/pause?reason=maintenance"); code != http.StatusAccepted || len(body) != 0 {
		t.Fatalf("PUT pause: HTTP %d %s, want 202 without a body", code, body)
	}
	for _, base := range bases {
		eventually(t, base+" shows the flow PAUSED", func() string {
			d, _ := status(base, "src-%3Edst")
			if d.TargetState != mirror.TargetPaused || d.TargetStateReason != "maintenance" {
				return fmt.Sprintf("target state %s %q", d.TargetState, d.TargetStateReason)
			}
			return check(d, mirror.StatePaused)
		})
		var rd readinessDoc
		if code := getJSON(t, base+"/readyz", &rd); code != http.StatusOK || !rd.Ready {
			t.Errorf("%s/readyz while paused: HTTP %d %+v", base, code, rd)
		}
	}
	if code, _ := put(t, bases[1]+"/connectors/MirrorSourceConnector/resume"); code != http.StatusAccepted {
		t.Fatalf("PUT resume: HTTP %d", code)
	}
	for _, base := range bases {
		eventually(t, base+" shows the flow RUNNING again", func() string {
			d, _ := status(base, "src-%3Edst")
			return check(d, mirror.StateRunning)
		})
	}
}
