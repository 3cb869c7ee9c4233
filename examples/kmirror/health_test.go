package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
)

func TestReadiness(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const grace = time.Minute
	flow := func(name string, st mirror.State, ago time.Duration, err string) mirror.FlowStatus {
		return mirror.FlowStatus{Name: name, State: st, Since: now.Add(-ago), Error: err}
	}
	tests := []struct {
		name    string
		flows   []mirror.FlowStatus
		started bool // every flow of the row finished its start-up (FlowStatus.Started)
		ready   bool
		reasons []string
	}{
		{"running and heartbeats only", []mirror.FlowStatus{flow("a->b", mirror.StateRunning, time.Hour, ""), flow("b->a", mirror.StateDisabled, time.Hour, "")}, true, true, []string{}},
		{"no flow", nil, true, true, []string{}},
		{"retrying within grace", []mirror.FlowStatus{flow("a->b", mirror.StateRetrying, 59*time.Second, "target cluster b unreachable")}, true, true, []string{}},
		{"retrying exactly at grace", []mirror.FlowStatus{flow("a->b", mirror.StateRetrying, time.Minute, "x")}, true, true, []string{}},
		{"retrying past grace", []mirror.FlowStatus{flow("a->b", mirror.StateRunning, time.Hour, ""), flow("c->b", mirror.StateRetrying, 61*time.Second, "target cluster b unreachable: dial tcp: connection refused")}, true, false,
			[]string{"flow c->b: RETRYING for 1m1s (grace period 1m0s): target cluster b unreachable: dial tcp: connection refused"}},
		{"failed past grace", []mirror.FlowStatus{flow("a->b", mirror.StateFailed, 2*time.Minute, "replication factor 3 larger than 1 broker")}, true, false,
			[]string{"flow a->b: FAILED for 2m0s (grace period 1m0s): replication factor 3 larger than 1 broker"}},
		{"retrying start-up, never running", []mirror.FlowStatus{flow("a->b", mirror.StateRetrying, 5*time.Second, "source cluster a unreachable")}, false, false,
			[]string{"flow a->b: RETRYING for 5s, never RUNNING yet: source cluster a unreachable"}},
		// TestReadiness/started, never seen RUNNING (a new user's finding):
		// a flow that ran 4 minutes before /readyz was first asked answered
		// 503 "never RUNNING yet" 1 s into a broker restart.
		{"retrying, started, never seen running", []mirror.FlowStatus{{Name: "a->b", State: mirror.StateRetrying, Since: now.Add(-time.Second), Started: true,
			Error: "target cluster b unreachable: EOF"}}, false, true, []string{}},
		{"starting", []mirror.FlowStatus{flow("a->b", mirror.StateStarting, 2*time.Second, "")}, true, false, []string{"flow a->b: STARTING for 2s: not replicating yet"}},
		{"stopped", []mirror.FlowStatus{flow("a->b", mirror.StateStopped, time.Second, "")}, true, false, []string{"flow a->b: STOPPED for 1s"}},
		// Issue 20: a flow paused or stopped on request stays ready.
		{"paused", []mirror.FlowStatus{{Name: "a->b", State: mirror.StatePaused, Since: now.Add(-time.Hour), TargetState: mirror.TargetPaused, AppliedState: mirror.TargetPaused}}, true, true, []string{}},
		{"stopped on request", []mirror.FlowStatus{{Name: "a->b", State: mirror.StateStopped, Since: now.Add(-time.Hour), TargetState: mirror.TargetStopped, AppliedState: mirror.TargetStopped}}, true, true, []string{}},
		{"unknown state", []mirror.FlowStatus{flow("a->b", mirror.State("REBALANCING"), time.Second, "")}, true, false, []string{"flow a->b: REBALANCING for 1s"}},
		{
			// One refused topic (FAILED partitions) never makes the member
			// not ready: its flow is RUNNING.
			"failed partitions of a running flow",
			[]mirror.FlowStatus{{Name: "a->b", State: mirror.StateRunning, Since: now.Add(-time.Hour), Partitions: []mirror.PartitionStatus{
				{Topic: "orders", Partition: 0, State: mirror.StateFailed, Error: "TOPIC_AUTHORIZATION_FAILED"}, {Topic: "payments", Partition: 0, State: mirror.StateRunning}}}},
			true, true, []string{},
		},
		{
			// A member that owns no partitions is ready.
			"running without partitions", []mirror.FlowStatus{{Name: "a->b", State: mirror.StateRunning, Since: now.Add(-time.Hour)}}, true, true, []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.flows {
				tc.flows[i].Started = tc.flows[i].Started || tc.started
			}
			d := readiness(mirror.Status{Flows: tc.flows}, now, grace)
			if d.Ready != tc.ready {
				t.Errorf("ready = %v, want %v", d.Ready, tc.ready)
			}
			if diff := cmp.Diff(tc.reasons, d.Reasons); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
			if d.GracePeriod != "1m0s" || len(d.Flows) != len(tc.flows) {
				t.Errorf("grace_period %q, %d flows; want 1m0s, %d", d.GracePeriod, len(d.Flows), len(tc.flows))
			}
		})
	}
}

// TestReadinessWarnings (issue 15): topic errors and FAILED partitions of
// a RUNNING flow leave the member ready (a restart does not change the
// target's answer) and are listed as warnings, at most maxWarnings per
// flow; a flow without either adds none.
func TestReadinessWarnings(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ok := mirror.FlowStatus{Name: "c->b", State: mirror.StateRunning, Since: now.Add(-time.Hour)}
	bad := mirror.FlowStatus{Name: "a->b", State: mirror.StateRunning, Since: now.Add(-time.Hour),
		Error: "1 topic error: bad: creating a.bad on b: POLICY_VIOLATION",
		TopicErrors: []mirror.TopicError{{Topic: "bad", RemoteTopic: "a.bad", Op: mirror.TopicOpCreate,
			Error: "creating a.bad on b: POLICY_VIOLATION", Since: now.Add(-5 * time.Minute), LastAttempt: now}},
		Partitions: []mirror.PartitionStatus{{Topic: "orders", Partition: 3, State: mirror.StateFailed, Error: "MESSAGE_TOO_LARGE"},
			{Topic: "orders", Partition: 4, State: mirror.StateRunning}}}
	d := readiness(mirror.Status{Flows: []mirror.FlowStatus{bad, ok}}, now, time.Minute)
	if !d.Ready || len(d.Reasons) != 0 {
		t.Errorf("ready %v reasons %q, want ready without reasons", d.Ready, d.Reasons)
	}
	want := []string{
		"flow a->b: topic bad: create failing for 5m0s: creating a.bad on b: POLICY_VIOLATION",
		"flow a->b: partition orders[3] FAILED: MESSAGE_TOO_LARGE",
	}
	if diff := cmp.Diff(want, d.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	// Many refused topics: maxWarnings lines, then the count of the rest.
	many := mirror.FlowStatus{Name: "a->b", State: mirror.StateRunning, Since: now.Add(-time.Hour)}
	for i := range maxWarnings + 3 {
		many.TopicErrors = append(many.TopicErrors, mirror.TopicError{Topic: fmt.Sprintf("t%02d", i), Op: mirror.TopicOpConfig, Error: "x", Since: now})
	}
	d = readiness(mirror.Status{Flows: []mirror.FlowStatus{many}}, now, time.Minute)
	if len(d.Warnings) != maxWarnings+1 || d.Warnings[0] != "flow a->b: topic t00: config failing for 0s: x" ||
		d.Warnings[maxWarnings] != "flow a->b: and 3 more topic errors or FAILED partitions (GET /status)" || !d.Ready {
		t.Errorf("ready %v, warnings %q", d.Ready, d.Warnings)
	}
	// Issue 20: what the members disagree on is a warning of a ready member.
	split := mirror.FlowStatus{Name: "a->b", State: mirror.StateRunning, Since: now.Add(-time.Hour),
		Warnings: []string{"flow a->b: the member holding slot 0 (w1:8083) has the flow disabled"}}
	d = readiness(mirror.Status{Flows: []mirror.FlowStatus{split}}, now, time.Minute)
	if !d.Ready || cmp.Diff(split.Warnings, d.Warnings) != "" {
		t.Errorf("members disagreeing: ready %v, warnings %q", d.Ready, d.Warnings)
	}
	// The source refuses DescribeAcls: a warning of a ready member.
	acl := mirror.FlowStatus{Name: "a->b", State: mirror.StateRunning, Since: now.Add(-time.Hour),
		ACLSyncError: "describing ACLs on a: CLUSTER_AUTHORIZATION_FAILED"}
	d = readiness(mirror.Status{Flows: []mirror.FlowStatus{acl}}, now, time.Minute)
	if !d.Ready || cmp.Diff([]string{"flow a->b: topic ACL sync failing: describing ACLs on a: CLUSTER_AUTHORIZATION_FAILED"}, d.Warnings) != "" {
		t.Errorf("ACL sync failing: ready %v, warnings %q", d.Ready, d.Warnings)
	}
	d = readiness(mirror.Status{Flows: []mirror.FlowStatus{ok}}, now, time.Minute)
	if d.Warnings == nil || len(d.Warnings) != 0 {
		t.Errorf("warnings %#v, want an empty list", d.Warnings)
	}
}

// TestStatusProbeWatchdog: a Status call that does not return is reported
// after the timeout; concurrent probes share the one call in flight; once
// Status returns, probes answer again.
func TestStatusProbeWatchdog(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	calls := 0
	p := &statusProbe{timeout: 50 * time.Millisecond, status: func() mirror.Status {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			<-release
		}
		return mirror.Status{Flows: []mirror.FlowStatus{{Name: fmt.Sprintf("call-%d", n)}}}
	}}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = p.get() }()
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "watchdog: Mirror.Status has not returned for") {
			t.Errorf("probe %d while Status hangs: %v, want the watchdog error", i, err)
		}
	}
	mu.Lock()
	if calls != 1 {
		t.Errorf("%d Status calls while the first hangs, want 1 (shared)", calls)
	}
	mu.Unlock()
	close(release)
	// The hung call returns now; a later probe gets it or a new call.
	deadline := time.Now().Add(liveness)
	for {
		s, err := p.get()
		if err == nil {
			if len(s.Flows) != 1 || (s.Flows[0].Name != "call-1" && s.Flows[0].Name != "call-2") {
				t.Errorf("status after release: %+v", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("probe still failing after Status returned: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	code, body := get(t, url)
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: HTTP %d, body not JSON: %v\n%s", url, code, err, body)
	}
	return code
}

// TestReadyzTargetOutage: with the target cluster down, /readyz turns 503
// once the flow has been RETRYING for longer than -ready-grace, naming the
// flow and the unreachable cluster, while /healthz stays 200; when the
// target is back, /readyz is 200 again and replication goes on.
func TestReadyzTargetOutage(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("src"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close) // after the runner stopped (started's cleanup runs first)
	if err := src.CreateTopic("orders", 2, nil); err != nil {
		t.Fatal(err)
	}
	// The target keeps its data on disk and its port, so that it can come
	// back after the outage at the address the runner knows.
	dstDir, dstPort := t.TempDir(), freePort(t)
	dstOpts := []kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID("dst"), kfake.Ports(dstPort), kfake.DataDir(dstDir)}
	dst, err := kfake.NewCluster(dstOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })

	cfg := filepath.Join(t.TempDir(), "mm2.properties")
	props := fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = 127.0.0.1:%d\nsrc->dst.enabled = true\nsrc->dst.topics = orders\n"+
		"emit.heartbeats.enabled = false\nsrc->dst.emit.checkpoints.enabled = false\n", src.ListenAddrs()[0], dstPort)
	if err := os.WriteFile(cfg, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	produce := func(n int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic("orders"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := range n {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Replicated up to want source records: the partitions' next offsets
	// add up to it (Records counts every acknowledged record since the
	// start, also those a lost session replays).
	replicated := func(base string, want int64) func() string {
		return func() string {
			var st statusDoc
			getJSON(t, base+"/status", &st)
			if len(st.Flows) != 1 || st.Flows[0].Records < want || replicatedTo(st.Flows[0]) != want {
				return fmt.Sprintf("%+v", st.Flows)
			}
			return ""
		}
	}
	produce(10)
	base, logs, cancel, wait := started(t, "-config", cfg, "-ready-grace", "2s")
	eventually(t, "ready, 10 records replicated", func() string {
		var d readinessDoc
		if code := getJSON(t, base+"/readyz", &d); code != http.StatusOK || !d.Ready {
			return fmt.Sprintf("HTTP %d %+v", code, d)
		}
		return replicated(base, 10)()
	})

	dst.Close() // the outage
	var down readinessDoc
	eventually(t, "not ready after the grace period", func() string {
		if code := getJSON(t, base+"/readyz", &down); code != http.StatusServiceUnavailable || down.Ready {
			return fmt.Sprintf("HTTP %d %+v", code, down)
		}
		return ""
	})
	if len(down.Reasons) != 1 || !strings.HasPrefix(down.Reasons[0], "flow src->dst: RETRYING for ") ||
		!strings.Contains(down.Reasons[0], "(grace period 2s): ") || !strings.Contains(down.Reasons[0], "target cluster dst unreachable") {
		t.Errorf("/readyz reasons during the outage: %q", down.Reasons)
	}
	if len(down.Flows) != 1 || down.Flows[0].Name != "src->dst" || down.Flows[0].State != mirror.StateRetrying || down.Flows[0].Ready {
		t.Errorf("/readyz flows during the outage: %+v", down.Flows)
	}
	var live livenessDoc
	if code := getJSON(t, base+"/healthz", &live); code != http.StatusOK || !live.Healthy || len(live.Reasons) != 0 || live.Flows["src->dst"] != mirror.StateRetrying {
		t.Errorf("/healthz during the outage: HTTP %d %+v, want 200, healthy, flow RETRYING", code, live)
	}

	if dst, err = kfake.NewCluster(dstOpts...); err != nil { // back, same data and port
		t.Fatal(err)
	}
	eventually(t, "ready again after the target is back", func() string {
		var d readinessDoc
		if code := getJSON(t, base+"/readyz", &d); code != http.StatusOK || !d.Ready || len(d.Reasons) != 0 {
			return fmt.Sprintf("HTTP %d %+v", code, d)
		}
		return ""
	})
	produce(5)
	eventually(t, "replicating again: 15 records", replicated(base, 15))
	cancel()
	if err := wait(); err != nil {
		t.Errorf("stop after the outage: %v\nlog:\n%s", err, logs)
	}
}

// TestReadyzStopping: during a graceful stop /readyz is 503 ("stopping")
// while /healthz stays 200.
func TestReadyzStopping(t *testing.T) {
	h := newHandler(nil, http.NotFoundHandler(), time.Minute)
	h.probe.status = func() mirror.Status {
		return mirror.Status{Flows: []mirror.FlowStatus{{Name: "a->b", State: mirror.StateRunning, Since: time.Now()}}}
	}
	check := func(path string, wantCode int, v any) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != wantCode {
			t.Errorf("%s: HTTP %d, want %d: %s", path, rec.Code, wantCode, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatal(err)
		}
	}
	var r readinessDoc
	var l livenessDoc
	check("/readyz", http.StatusOK, &r)
	h.stopping.Store(true)
	check("/readyz", http.StatusServiceUnavailable, &r)
	if diff := cmp.Diff([]string{"stopping"}, r.Reasons); diff != "" {
		t.Errorf("/readyz reasons while stopping (-want +got):\n%s", diff)
	}
	check("/healthz", http.StatusOK, &l)
	if !l.Healthy || !l.Stopping {
		t.Errorf("/healthz while stopping: %+v, want healthy and stopping", l)
	}
	h.runReturned(fmt.Errorf("mirror: flow a->b: boom"))
	check("/readyz", http.StatusServiceUnavailable, &r)
	h.stopping.Store(false) // Run returned on its own
	check("/healthz", http.StatusServiceUnavailable, &l)
	if diff := cmp.Diff([]string{"engine stopped: Run returned: mirror: flow a->b: boom"}, l.Reasons); diff != "" {
		t.Errorf("/healthz reasons after Run returned (-want +got):\n%s", diff)
	}
}

// replicatedTo adds up the next source offsets to replicate of the flow's
// partitions.
func replicatedTo(f flowDoc) int64 {
	var n int64
	for _, tk := range f.Tasks {
		for _, p := range tk.Partitions {
			n += max(p.Replicated, 0)
		}
	}
	return n
}
