package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmirror/kmirror/mirror"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// liveness bounds every wait of these tests; reaching it is a failure
// (a hang), not a performance assertion.
const liveness = 60 * time.Second

// eventually polls cond every 100 ms until it returns "" (done) or the
// liveness bound is reached, then fails with the last reason.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %s: %s", what, liveness, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// started runs run() in the background and returns its base URL once the
// HTTP server listens, a cancel (SIGTERM equivalent) and a wait for run's
// result (bounded by liveness).
func started(t *testing.T, args ...string) (base string, stderr *syncBuffer, cancel context.CancelFunc, wait func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &syncBuffer{}
	ch := make(chan error, 1)
	go func() { ch <- run(ctx, append(args, "-listen", "127.0.0.1:0"), io.Discard, stderr) }()
	var (
		once   sync.Once
		result error
	)
	wait = func() error {
		once.Do(func() {
			select {
			case result = <-ch:
			case <-time.After(liveness):
				result = fmt.Errorf("run did not return within %s of cancel", liveness)
			}
		})
		return result
	}
	t.Cleanup(func() {
		cancel()
		_ = wait()
	})
	re := regexp.MustCompile(`msg="http listening" addr=(\S+)`)
	eventually(t, "http server listening", func() string {
		select {
		case err := <-ch:
			t.Fatalf("run returned early: %v\nlog:\n%s", err, stderr)
		default:
		}
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			base = "http://" + m[1]
			return ""
		}
		return "no 'http listening' log line yet"
	})
	return base, stderr, cancel, wait
}

// fakeCluster starts a one-broker kfake cluster with cluster ID id,
// closed when the test ends.
func fakeCluster(t *testing.T, id string, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID(id)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp.StatusCode, body
}

func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d: %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return mfs
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// byPartition returns the samples of name whose labels match want, keyed
// by "topic/partition", for the demo topics (heartbeats are replicated too).
func byPartition(mfs map[string]*dto.MetricFamily, name string, want map[string]string) map[string]float64 {
	out := map[string]float64{}
	demo := regexp.MustCompile(`^(primary\.)?(orders|payments)$`)
	mf := mfs[name]
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		l := labels(m)
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
			}
		}
		if ok && demo.MatchString(l["topic"]) {
			out[l["topic"]+"/"+l["partition"]] = value(m)
		}
	}
	return out
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// TestEmbeddedSeedActiveStandby runs the seed configuration of article 000
// on embedded clusters with demo topics, and checks that /metrics and
// /status move as records flow, then stops it as SIGTERM would.
func TestEmbeddedSeedActiveStandby(t *testing.T) {
	t.Parallel()
	base, stderr, cancel, wait := started(t, "-embedded", "-config", "testdata/seed-active-standby.properties",
		"-demo-topics", "orders:3,payments:2", "-demo-rate", "20", "-log-level", "warn")

	flowLabels := map[string]string{"source": "primary", "target": "secondary"}
	wantParts := []string{"orders/0", "orders/1", "orders/2", "payments/0", "payments/1"}
	remoteParts := []string{"primary.orders/0", "primary.orders/1", "primary.orders/2", "primary.payments/0", "primary.payments/1"}
	keys := func(m map[string]float64) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}

	// 1. Records flow: every remote partition has a records counter.
	var first float64
	eventually(t, "records replicated", func() string {
		mfs := scrape(t, base)
		recs := byPartition(mfs, "kmirror_replication_records_total", flowLabels)
		if d := cmp.Diff(remoteParts, keys(recs)); d != "" {
			return "kmirror_replication_records_total series (-want +got):\n" + d
		}
		if first = sum(recs); first == 0 {
			return "no record replicated yet"
		}
		return ""
	})

	// 2. The counter grows, and catches up: per source partition, lag 0,
	// replicated offset = source end > 0, and (no resume point, no gap:
	// replication started at offset 0) records counter = replicated offset.
	eventually(t, "counter grows and lag returns to 0", func() string {
		mfs := scrape(t, base)
		recs := byPartition(mfs, "kmirror_replication_records_total", flowLabels)
		lag := byPartition(mfs, "kmirror_replication_lag_records", flowLabels)
		end := byPartition(mfs, "kmirror_source_end_offset", flowLabels)
		rep := byPartition(mfs, "kmirror_replicated_offset", flowLabels)
		if total := sum(recs); total <= first {
			return fmt.Sprintf("records counter still %v (first seen %v)", total, first)
		}
		for _, m := range []map[string]float64{lag, end, rep} {
			if d := cmp.Diff(wantParts, keys(m)); d != "" {
				return "per-partition series (-want +got):\n" + d
			}
		}
		for _, p := range wantParts {
			topic, part, _ := strings.Cut(p, "/")
			if lag[p] != 0 || end[p] <= 0 || rep[p] != end[p] || recs["primary."+topic+"/"+part] != rep[p] {
				return fmt.Sprintf("%s: lag %v, source end %v, replicated %v, records %v", p, lag[p], end[p], rep[p], recs["primary."+topic+"/"+part])
			}
		}
		return ""
	})

	// 3. Flow states and franz-go client metrics per cluster; every
	// kmirror_* family served has the golden names and labels.
	mfs := scrape(t, base)
	checkServedAgainstGolden(t, mfs)
	states := map[string]float64{}
	for _, m := range mfs["kmirror_flow_state"].GetMetric() {
		l := labels(m)
		states[l["source"]+"->"+l["target"]+" "+l["state"]] = value(m)
	}
	if d := cmp.Diff(map[string]float64{"primary->secondary RUNNING": 1, "secondary->primary DISABLED": 1}, states); d != "" {
		t.Errorf("kmirror_flow_state (-want +got):\n%s", d)
	}
	clientBytes := func(name, cluster string) float64 {
		var s float64
		for _, m := range mfs[name].GetMetric() {
			if labels(m)["cluster"] == cluster {
				s += value(m)
			}
		}
		return s
	}
	if clientBytes("kmirror_client_fetch_uncompressed_bytes_total", "primary") <= 0 {
		t.Errorf("kmirror_client_fetch_uncompressed_bytes_total{cluster=primary} is not positive: the source consumer's kprom hook is not wired")
	}
	if clientBytes("kmirror_client_produce_uncompressed_bytes_total", "secondary") <= 0 {
		t.Errorf("kmirror_client_produce_uncompressed_bytes_total{cluster=secondary} is not positive: the target producer's kprom hook is not wired")
	}
	for name := range mfs {
		if strings.HasPrefix(name, "kmirror_client_buffered_") {
			t.Errorf("%s exported: it reads one client's buffer, not the cluster's", name)
		}
	}

	// 4. /status in Connect's shape, one task per slot (tasks.max, 8 by
	// default), each with its partitions. The disabled pair's heartbeats
	// topic appears on primary while the flow runs; wait until every topic
	// the flow selects has its partitions (the remote heartbeats topic may
	// still be being created).
	var (
		body []byte
		st   statusDoc
	)
	eventually(t, "every selected topic has partitions", func() string {
		code, b := get(t, base+"/status")
		if code != http.StatusOK {
			return fmt.Sprintf("/status: HTTP %d", code)
		}
		body, st = b, statusDoc{}
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("/status is not JSON: %v\n%s", err, body)
		}
		seen := map[string]bool{}
		for _, tk := range st.Flows[0].Tasks {
			for _, p := range tk.Partitions {
				seen[p.Topic] = true
			}
		}
		if len(seen) != st.Flows[0].Topics {
			return fmt.Sprintf("%d topics selected, partitions of %d", st.Flows[0].Topics, len(seen))
		}
		return ""
	})
	type part struct {
		Slot                     int32
		SlotState, State         mirror.State
		Worker                   string
		Topic, Remote            string
		Partition                int32
		Replicated, Records, Lag bool // positive / positive / zero-or-more
	}
	var gotParts []part
	for i, tk := range st.Flows[0].Tasks {
		if tk.ID != int32(i) || tk.State != mirror.StateRunning || tk.WorkerID != st.WorkerID {
			t.Errorf("/status task %d: id %d, state %s, worker %q; want RUNNING on %q", i, tk.ID, tk.State, tk.WorkerID, st.WorkerID)
		}
		for _, p := range tk.Partitions {
			if p.Topic == "heartbeats" {
				continue // replicated too once the disabled pair's heartbeats exist
			}
			gotParts = append(gotParts, part{tk.ID, tk.State, p.State, tk.WorkerID, p.Topic, p.RemoteTopic, p.Partition,
				p.Replicated > 0, p.Records > 0, p.Lag != nil && *p.Lag >= 0})
		}
	}
	if len(st.Flows[0].Tasks) != 8 {
		t.Errorf("/status: %d tasks, want tasks.max = 8 (one per slot)", len(st.Flows[0].Tasks))
	}
	var wantParts2 []part
	for _, p := range wantParts {
		topic, pn, _ := strings.Cut(p, "/")
		n := int32(pn[0] - '0')
		wantParts2 = append(wantParts2, part{mirror.SlotOf(topic, n, 8), mirror.StateRunning, mirror.StateRunning, st.WorkerID, topic, "primary." + topic, n, true, true, true})
	}
	sort.Slice(gotParts, func(i, j int) bool {
		if gotParts[i].Topic != gotParts[j].Topic {
			return gotParts[i].Topic < gotParts[j].Topic
		}
		return gotParts[i].Partition < gotParts[j].Partition
	})
	if d := cmp.Diff(wantParts2, gotParts); d != "" {
		t.Errorf("/status flows[0].tasks[].partitions (-want +got):\n%s", d)
	}
	type flowHead struct {
		Name, Type, Source, Target string
		State                      mirror.State
		Topics                     int
	}
	var heads []flowHead
	for _, f := range st.Flows {
		topics := f.Topics
		if hasHeartbeats(f) {
			topics--
		}
		heads = append(heads, flowHead{f.Name, f.Type, f.Source, f.Target, f.Connector.State, topics})
	}
	if d := cmp.Diff([]flowHead{
		{"primary->secondary", "source", "primary", "secondary", mirror.StateRunning, 2},
		{"secondary->primary", "source", "secondary", "primary", mirror.StateDisabled, 0},
	}, heads); d != "" {
		t.Errorf("/status flows (-want +got):\n%s", d)
	}
	if st.State != mirror.StateRunning || st.Flows[0].Records <= 0 || st.WorkerID == "" || st.Flows[0].Connector.WorkerID != st.WorkerID {
		t.Errorf("/status: state %s, records %d, worker %q/%q", st.State, st.Flows[0].Records, st.WorkerID, st.Flows[0].Connector.WorkerID)
	}
	if !strings.Contains(string(body), `"name": "primary->secondary"`) {
		t.Errorf("/status escapes the flow name: %s", body[:min(len(body), 200)])
	}

	// 5. Connect-style per-connector endpoints and health.
	code, body := get(t, base+"/connectors/primary-%3Esecondary/status")
	var one flowDoc
	if code != http.StatusOK || json.Unmarshal(body, &one) != nil || one.Name != "primary->secondary" || len(one.Tasks) != len(st.Flows[0].Tasks) {
		t.Errorf("/connectors/primary->secondary/status: HTTP %d, name %q, %d tasks: %s", code, one.Name, len(one.Tasks), body)
	}
	if one.Member.GroupID != "kmirror.primary->secondary" || !one.Member.Singleton || one.Member.Tasks == 0 || len(one.Member.Slots) != one.Member.Tasks {
		t.Errorf("/connectors/primary->secondary/status member: %+v, want group kmirror.primary->secondary, the singleton, all slots", one.Member)
	}
	if code, body = get(t, base+"/connectors/nope/status"); code != http.StatusNotFound {
		t.Errorf("/connectors/nope/status: HTTP %d, want 404: %s", code, body)
	}
	code, body = get(t, base+"/connectors")
	var names []string
	if code != http.StatusOK || json.Unmarshal(body, &names) != nil {
		t.Errorf("/connectors: HTTP %d: %s", code, body)
	}
	if d := cmp.Diff([]string{"primary->secondary", "secondary->primary"}, names); d != "" {
		t.Errorf("/connectors (-want +got):\n%s", d)
	}
	if code, body = get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: HTTP %d: %s", code, body)
	}

	// 6. Warnings of the file are logged at start.
	if !strings.Contains(stderr.String(), "key=primary.checkpoints.topic.replication.factor") {
		t.Errorf("the configuration warning about line 16 is not logged:\n%s", stderr)
	}

	// 7. SIGTERM equivalent: a clean stop returns nil, within the bound.
	cancel()
	if err := wait(); err != nil {
		t.Errorf("run after cancel: %v (exit code %d), want a clean stop", err, exitCode(err, io.Discard))
	}
}

// TestStopWhileRetrying cancels run while the only cluster pair is
// unreachable (flow RETRYING): it must return nil promptly, not wait for a
// connection.
func hasHeartbeats(f flowDoc) bool {
	for _, tk := range f.Tasks {
		for _, p := range tk.Partitions {
			if p.Topic == "heartbeats" {
				return true
			}
		}
	}
	return false
}

func TestStopWhileRetrying(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "unreachable.properties")
	// Port 1 on loopback: connection refused at once.
	if err := os.WriteFile(cfg, []byte("clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:1\na->b.enabled = true\nemit.heartbeats.enabled = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, cancel, wait := started(t, "-config", cfg, "-log-level", "error")
	eventually(t, "flow retrying", func() string {
		_, body := get(t, base+"/status")
		var st statusDoc
		if err := json.Unmarshal(body, &st); err != nil {
			return err.Error()
		}
		if len(st.Flows) != 1 || st.Flows[0].Connector.State != mirror.StateRetrying || st.Flows[0].Connector.Trace == "" {
			return string(body)
		}
		// Issue 20: nothing can be counted, so the lag is unknown, not 0.
		if st.Flows[0].Lag != nil || !st.Flows[0].LagUnknown || !strings.Contains(string(body), `"lag": null`) {
			return "lag not unknown: " + string(body)
		}
		return ""
	})
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while retrying: HTTP %d, want 200 (a restart does not help an unreachable cluster)", code)
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("run after cancel while retrying: %v", err)
	}
}

// TestCheckMasksSecrets: -check prints the effective configuration with
// neither the SASL password nor the key password nor key material, and
// exits 0.
func TestCheckMasksSecrets(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-check", "-config", "testdata/secrets.properties"}, &out, &errOut)
	if code := exitCode(err, io.Discard); code != 0 {
		t.Fatalf("-check: exit code %d (%v), want 0\n%s", code, err, errOut.String())
	}
	got := out.String() + errOut.String()
	for _, secret := range []string{"Jaas-Secret-7f3e9a", "test-key-pass", "BEGIN ENCRYPTED PRIVATE KEY", "MII"} {
		if strings.Contains(got, secret) {
			t.Errorf("-check output contains the secret %q", secret)
		}
	}
	for _, want := range []string{
		"east.sasl.jaas.config = [hidden]",
		"west.ssl.key.password = [hidden]",
		`user="mm2-east"`,
		"east->west.offset-syncs.topic.location = target",
		"# configuration valid: 1 flow(s): east->west",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("-check output lacks %q:\n%s", want, got)
		}
	}
}

// TestCheckSeedWarnings: -check prints the loader's warnings once, under
// "# warnings" after the configuration, announced by a count at the top.
func TestCheckSeedWarnings(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-check", "-config", "testdata/seed-active-standby.properties"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "# 3 warning(s), listed under \"# warnings\" below\n") {
		t.Errorf("-check output does not start with the warning count:\n%s", out.String())
	}
	var warnings []string
	for _, l := range strings.Split(out.String(), "\n") {
		if k, ok := strings.CutPrefix(l, "# line "); ok && strings.Contains(k, ": no effect: MM2 reads") {
			k, _, _ = strings.Cut(k, ": no effect")
			warnings = append(warnings, "line "+k)
		}
	}
	if n := strings.Count(out.String(), "primary.checkpoints.topic.replication.factor: no effect"); n != 1 {
		t.Errorf("the line 16 warning is printed %d times, want 1:\n%s", n, out.String())
	}
	want := []string{
		"line 16: primary.checkpoints.topic.replication.factor",
		"line 17: primary.heartbeats.topic.replication.factor",
		"line 18: primary.offset-syncs.topic.replication.factor",
	}
	if d := cmp.Diff(want, warnings); d != "" {
		t.Errorf("-check warnings (-want +got):\n%s", d)
	}
	if !strings.Contains(out.String(), "# configuration valid: 2 flow(s): primary->secondary, secondary->primary (heartbeats only)") {
		t.Errorf("-check summary missing:\n%s", out.String())
	}
}

// TestBadConfigExitCode: invalid configurations and flags exit 2 with the
// bad key (or flag) named; nothing is started.
func TestBadConfigExitCode(t *testing.T) {
	const base = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"
	tests := []struct {
		name  string
		props string // appended to base; "" = no file written
		args  []string
		want  []string // substrings of the error
	}{
		{"replication factor not a number", "a->b.replication.factor = two\n", nil, []string{"replication.factor", "two"}},
		{"java lookahead regex", "a->b.topics = (?!internal).*\n", nil, []string{"a->b.topics", "lookahead"}},
		{"clusters without alias", "", []string{"-clusters", "c"}, []string{`--clusters="c"`, "a, b"}},
		{"missing bootstrap", "clusters = a, b, c\nc->a.enabled = true\n", nil, []string{"c.bootstrap.servers"}},
		{"no config flag", "", []string{"-no-config"}, []string{"-config is required"}},
		{"missing config file", "", []string{"-config", "/nonexistent/mm2.properties"}, []string{"/nonexistent/mm2.properties", "no such file or directory"}},
		{"demo topics without embedded", "", []string{"-demo-topics", "x:1"}, []string{"-demo-topics needs -embedded"}},
		{"bad demo partitions", "", []string{"-embedded", "-demo-topics", "x:zero"}, []string{`"x:zero"`, "partitions"}},
		{"bad log level", "", []string{"-log-level", "loud"}, []string{`-log-level "loud"`}},
		{"unknown flag", "", []string{"-bootstrap", "x"}, []string{"-bootstrap"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mm2.properties")
			if err := os.WriteFile(path, []byte(base+tc.props), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"-check", "-config", path}
			if len(tc.args) > 0 && tc.args[0] == "-no-config" {
				args = []string{"-check"}
			} else {
				args = append(args, tc.args...)
			}
			var stderr bytes.Buffer
			err := run(context.Background(), args, io.Discard, &stderr)
			var msg bytes.Buffer
			code := exitCode(err, &msg)
			if code != 2 {
				t.Fatalf("exit code %d (%v), want 2", code, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg.String(), w) {
					t.Errorf("error %q does not contain %q", msg.String(), w)
				}
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{&usageError{errors.New("bad flag")}, 2},
		{fmt.Errorf("wrapped: %w", &mirror.ConfigError{Key: "a->b.topics", Reason: "bad"}), 2},
		{errors.New("mirror: flow a->b: replication factor 3 larger than 1 broker"), 1},
		{&usageError{&mirror.ConfigErrors{Errs: []*mirror.ConfigError{{Key: "a", Reason: "line 1: x"}, {Key: "b", Reason: "line 2: y"}}}}, 2},
		{&strictError{warnings: 2}, 3},
	}
	for _, tc := range tests {
		if got := exitCode(tc.err, io.Discard); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestParseDemoTopics(t *testing.T) {
	tests := []struct {
		in   string
		want []demoTopic
		err  string
	}{
		{"orders:3,payments:2", []demoTopic{{"orders", 3}, {"payments", 2}}, ""},
		{" orders , audit:1 ", []demoTopic{{"orders", 1}, {"audit", 1}}, ""},
		{"orders:0", nil, "partitions"},
		{":3", nil, "empty topic name"},
		{",", nil, "no topic"},
		{"orders:1001", nil, "partitions"},
	}
	for _, tc := range tests {
		got, err := parseDemoTopics(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseDemoTopics(%q) error %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseDemoTopics(%q): %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(demoTopic{})); d != "" {
			t.Errorf("parseDemoTopics(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

func TestEmbeddedBrokers(t *testing.T) {
	tests := []struct {
		flows []mirror.FlowConfig
		want  int
	}{
		{nil, 3},
		{[]mirror.FlowConfig{{ReplicationFactor: 2}}, 3},
		{[]mirror.FlowConfig{{ReplicationFactor: 2}, {OffsetStorageReplicationFactor: 5}}, 5},
		{[]mirror.FlowConfig{{HeartbeatsTopicReplicationFactor: 100}}, maxEmbeddedBrokers},
	}
	for _, tc := range tests {
		if got := embeddedBrokers(tc.flows); got != tc.want {
			t.Errorf("embeddedBrokers(%+v) = %d, want %d", tc.flows, got, tc.want)
		}
	}
}

func TestOverallState(t *testing.T) {
	fl := func(states ...mirror.State) mirror.Status {
		var s mirror.Status
		for _, st := range states {
			s.Flows = append(s.Flows, mirror.FlowStatus{State: st})
		}
		return s
	}
	tests := []struct {
		in   mirror.Status
		want mirror.State
	}{
		{fl(mirror.StateRunning, mirror.StateDisabled), mirror.StateRunning},
		{fl(mirror.StateRunning, mirror.StateRetrying), mirror.StateRetrying},
		{fl(mirror.StateStarting, mirror.StateFailed, mirror.StateRetrying), mirror.StateFailed},
		{fl(mirror.StateStopped, mirror.StateStopped), mirror.StateStopped},
		{fl(mirror.StateStopped, mirror.StateRunning), mirror.StateRunning},
	}
	for _, tc := range tests {
		if got := overall(tc.in); got != tc.want {
			t.Errorf("overall(%v) = %s, want %s", tc.in.Flows, got, tc.want)
		}
	}
}

// TestCheckPrintsConfigurationSkips: -check lists the topics the
// configuration alone shows will not be replicated (issue 11: nothing
// skipped silently), with flow, topic and reason.
func TestCheckPrintsConfigurationSkips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mm2.properties")
	props := "clusters = a, b\nbootstrap.servers = 127.0.0.1:1\na->b.enabled = true\n" +
		"a->b.topics = orders, __consumer_offsets, b.metrics\n"
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-check", "-config", path}, &out, io.Discard); err != nil {
		t.Fatalf("-check: %v", err)
	}
	for _, want := range []string{
		"# topics listed in the configuration that are not replicated (2)\n",
		"#   a->b: __consumer_offsets: not replicated: internal topic: names starting with \"__\"",
		"#   a->b: b.metrics: not replicated: cycle by name: the replication policy reads \"b.metrics\" as topic \"metrics\" replicated from b, the target",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-check output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "a->b: orders") {
		t.Errorf("-check lists orders, which is replicated:\n%s", out.String())
	}
}

// TestHelpListsSubcommands: `kmirror -h` names the verify and units
// subcommands besides the flags, and exits 0.
func TestHelpListsSubcommands(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-h"}, io.Discard, &stderr)
	if code := exitCode(err, io.Discard); code != 0 {
		t.Errorf("kmirror -h: exit %d (%v), want 0", code, err)
	}
	for _, want := range []string{"usage: kmirror -config FILE", "kmirror verify", "kmirror units -config FILE -resize", "-listen"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("kmirror -h does not mention %q:\n%s", want, stderr.String())
		}
	}
}
