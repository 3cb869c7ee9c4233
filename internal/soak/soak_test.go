package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/internal/verify"
	"github.com/kmirror/kmirror/mirror"
)

func TestParseExports(t *testing.T) {
	got := parseExports("export KMIRROR_SOURCE_BROKERS=127.0.0.1:23092 KMIRROR_TARGET_BROKERS=127.0.0.1:23192\n" +
		"export KMIRROR_SOURCE_PROXIED_BROKERS=127.0.0.1:23095 KMIRROR_TARGET_PROXIED_LISTENER='127.0.0.1:23194'\nnoise line\n")
	want := map[string]string{
		"KMIRROR_SOURCE_BROKERS": "127.0.0.1:23092", "KMIRROR_TARGET_BROKERS": "127.0.0.1:23192",
		"KMIRROR_SOURCE_PROXIED_BROKERS": "127.0.0.1:23095", "KMIRROR_TARGET_PROXIED_LISTENER": "127.0.0.1:23194",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parseExports (-want +got):\n%s", d)
	}
}

// The runner's log lines, as slog's text handler writes them.
func TestRunnerLogLines(t *testing.T) {
	listen := `time=2026-12-01T15:01:36.705Z level=INFO msg="http listening" addr=127.0.0.1:33613 endpoints="/metrics /status /connectors /healthz /readyz"`
	if got := logValue(listen, "addr"); got != "127.0.0.1:33613" {
		t.Errorf("addr = %q", got)
	}
	if got := logValue(listen, "endpoints"); got != "/metrics /status /connectors /healthz /readyz" {
		t.Errorf("endpoints = %q", got)
	}
	if got := logValue(listen, "dr"); got != "" {
		t.Errorf("a key that is a suffix of another: %q, want none", got)
	}
	gapLine := `time=2026-12-01T15:01:03.5Z level=ERROR msg="source gap" flow=a->b topic=soak-stream-x partition=3 from=5980 to=6035 lost=55 reason="the source log starts at 6035 (retention)" on_gap=continue`
	g, ok := parseGapLine(gapLine)
	if want := (gap{Topic: "soak-stream-x", Partition: 3, From: 5980, To: 6035}); !ok || g != want {
		t.Errorf("parseGapLine = %+v, %v; want %+v", g, ok, want)
	}
	if _, ok := parseGapLine(`level=ERROR msg="source gap" topic=t partition=x from=1 to=2`); ok {
		t.Error("parseGapLine accepted a partition that is not a number")
	}
}

func TestMetricSums(t *testing.T) {
	exp := `# HELP kmirror_client_fetch_records_total x
kmirror_client_fetch_records_total{cluster="src-a",node_id="1"} 1500
kmirror_client_fetch_records_total{cluster="src-a",node_id="seed_0"} 20
kmirror_client_fetch_records_total{cluster="dst-a",node_id="1"} 7
kmirror_client_produce_records_total{cluster="dst-a",node_id="1"} 1.2e+03
kmirror_client_produce_records_total{cluster="src-a",node_id="1"} 99
`
	f, p, err := metricSums(strings.NewReader(exp), "kmirror_client_fetch_records_total", "src-a", "kmirror_client_produce_records_total", "dst-a")
	if err != nil || f != 1520 || p != 1200 {
		t.Errorf("metricSums = %d, %d, %v; want 1520, 1200", f, p, err)
	}
}

func TestProcKB(t *testing.T) {
	status := []byte("Name:\tkmirror\nVmPeak:\t 5000 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 100000 kB\n")
	if kb, err := procKB(status, "VmHWM:"); err != nil || kb != 123456 {
		t.Errorf("VmHWM = %d, %v", kb, err)
	}
	if _, err := procKB(status, "VmSwap:"); err == nil {
		t.Error("a missing key gave no error")
	}
}

func TestGapArithmetic(t *testing.T) {
	gaps := []gap{{Partition: 1, From: 100, To: 150}, {Partition: 1, From: 120, To: 160}, {Partition: 2, From: 10, To: 20}}
	// Partition 1: missing 90..169, gaps cover 100..159 (overlapping gaps
	// counted once); partition 2: missing 10..19, all in the gap.
	ms := []missing{{Partition: 1, From: 90, To: 170}, {Partition: 2, From: 10, To: 20}}
	lost, in := split(ms, gaps)
	if lost != 20 || in != 70 {
		t.Errorf("split = lost %d, in gap %d; want 20, 70", lost, in)
	}
	if got := mergeGaps(gaps); !cmp.Equal(got, []gap{{Partition: 1, From: 100, To: 160}, {Partition: 2, From: 10, To: 20}}) {
		t.Errorf("mergeGaps = %v", got)
	}
	if !sameRanges([]missing{{1, 100, 160}, {2, 10, 20}}, gaps) {
		t.Error("sameRanges: the merged gaps are the missing ranges")
	}
	if sameRanges([]missing{{1, 100, 159}, {2, 10, 20}}, gaps) {
		t.Error("sameRanges: one record short of a gap is not the same")
	}
	if sameRanges(nil, gaps) || !sameRanges(nil, nil) {
		t.Error("sameRanges with nothing missing")
	}
}

// report builds a verify report of one topic.
func report(parts ...verify.PartitionReport) *verify.Report {
	r := &verify.Report{Topics: []verify.TopicReport{{Topic: "ledger", Remote: "src.stream", Partitions: parts}}}
	for _, p := range parts {
		r.Totals.Compared += p.Compared
		r.Totals.Matched += p.Matched
		r.Totals.Missing += p.Missing
		r.Totals.Duplicated += p.Duplicated
		r.Totals.Unexpected += p.Unexpected
	}
	return r
}

// TestEvaluate: a row counts what lies past the previous row's marks,
// and loss outside the reported gaps fails it.
func TestEvaluate(t *testing.T) {
	prev := marks{end: map[int32]int64{0: 100, 1: 100}, tgt: map[int32]int64{0: 110, 1: 100}}
	rep := report(
		verify.PartitionReport{Partition: 0, Source: verify.Side{End: 200}, Target: verify.Side{To: 230},
			Compared: 130, Matched: 130, Duplicated: 30,
			// A replay seen by the previous row (105..114: 5 of it past its
			// mark) and a new one of 20.
			Replays: []verify.Replay{{TargetOffset: 105, SourceOffset: 80, Records: 10}, {TargetOffset: 200, SourceOffset: 170, Records: 20}}},
		verify.PartitionReport{Partition: 1, Source: verify.Side{End: 180}, Target: verify.Side{To: 170},
			Compared: 110, Matched: 100, Missing: 10,
			// 95..99 were reported by the previous row; 100..104 are new.
			MissingRanges: []verify.Range{{From: 95, To: 104, Records: 10}}},
	)
	var r row
	gaps := []gap{{Topic: "stream", Partition: 1, From: 90, To: 105}}
	ms, next := evaluate(&r, rep, gaps, false, prev)
	want := row{Produced: 180, Replicated: 175, Lost: 0, InGap: 5, Duplicated: 25}
	if d := cmp.Diff(want, r); d != "" {
		t.Errorf("row (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]missing{{1, 95, 105}}, ms); d != "" {
		t.Errorf("missing ranges (-want +got):\n%s", d)
	}
	if !cmp.Equal(map[int32]int64{0: 200, 1: 180}, next.end) || !cmp.Equal(map[int32]int64{0: 230, 1: 170}, next.tgt) {
		t.Errorf("marks: source %v, target %v; want 200/180 and 230/170", next.end, next.tgt)
	}

	// The same missing records with a gap that ends one record short:
	// one lost record, a failure naming it.
	r = row{}
	evaluate(&r, rep, []gap{{Topic: "stream", Partition: 1, From: 90, To: 104}}, false, prev)
	if r.Lost != 1 || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "LOST 1 records outside any reported gap: [1]:[95,105)") {
		t.Errorf("lost %d, failures %q", r.Lost, r.Failures)
	}

	// Exactly once, duplicates fail; unexpected records fail either way.
	r = row{}
	evaluate(&r, report(verify.PartitionReport{Partition: 0, Source: verify.Side{End: 10}, Compared: 10, Matched: 10, Duplicated: 2, Unexpected: 1}), nil, true, marks{})
	if len(r.Failures) != 2 || !strings.Contains(r.Failures[0], "1 unexpected") || !strings.Contains(r.Failures[1], "2 duplicates in exactly-once mode") {
		t.Errorf("failures %q", r.Failures)
	}
}

func TestParseFaults(t *testing.T) {
	fs, err := parseFaults("kill, outage:30s,restart-target-kill,cut-kill-source:8s,race-down")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs {
		names = append(names, f.name)
	}
	want := []string{"mirror SIGKILL", "target outage 30s, source producing (memory)", "target broker restart (SIGKILL)",
		"overlap: source link cut 8s + mirror SIGKILL", "overlap: retention race while the mirror is down"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if fs[1].kind != targetOutage || fs[1].d != 30*time.Second || fs[2].side != target || fs[2].signal != "KILL" {
		t.Errorf("parsed %+v", fs)
	}
	for in, msg := range map[string]string{
		"kil":        `-faults "kil": unknown fault`,
		"outage":     `-faults "outage": needs a duration, e.g. outage:30s`,
		"kill:3s":    `-faults "kill:3s": takes no duration`,
		"slow:fast":  `-faults "slow:fast": want a positive duration`,
		" , ":        `-faults " , ": no fault`,
		"cut-source": `needs a duration`,
	} {
		if _, err := parseFaults(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("parseFaults(%q) = %v; want an error containing %q", in, err, msg)
		}
	}
	// The faults that SIGKILL the source broker (the soak waits for the
	// log start checkpoint after a DeleteRecords before them).
	for in, want := range map[string]bool{"restart-source-kill": true, "restart-slow-kill:5s": true, "both-crash": true,
		"restart-source-term": false, "restart-target-kill": false, "cut-kill-source:5s": false, "race-down": false} {
		fs, err := parseFaults(in)
		if err != nil || fs[0].crashesSource() != want {
			t.Errorf("%s: crashesSource = %v (%v), want %v", in, fs[0].crashesSource(), err, want)
		}
	}
	// Every keyword parses.
	for _, n := range faultNames {
		n = strings.Replace(n, ":D", ":5s", 1)
		if _, err := parseFaults(n); err != nil {
			t.Errorf("parseFaults(%q): %v", n, err)
		}
	}
}

// TestProfiles: the plans hold the faults the issue asks for.
func TestProfiles(t *testing.T) {
	count := func(fs []fault, k faultKind) (n int) {
		for _, f := range fs {
			if f.kind == k {
				n++
			}
			for _, p := range f.parts {
				if p.kind == k {
					n++
				}
			}
		}
		return n
	}
	long := profiles["long"].plan(allModes[0])
	if n := count(long, mirrorKill); n < 20 {
		t.Errorf("long profile, 1 member: %d mirror SIGKILLs, want at least 20", n)
	}
	for _, name := range []string{"short", "long"} {
		p := profiles[name]
		for _, mn := range p.modes {
			m, ok := modeByName(mn)
			if !ok {
				t.Fatalf("%s: unknown mode %q", name, mn)
			}
			fs := p.plan(m)
			if count(fs, mirrorKill) == 0 || count(fs, overlap)+count(fs, retentionWhileDown) == 0 {
				t.Errorf("%s/%s: no SIGKILL or no overlapping fault", name, mn)
			}
			for _, f := range fs {
				if f.name == "" {
					t.Errorf("%s/%s: a fault without a name: %+v", name, mn, f)
				}
			}
		}
	}
	short := slicesConcat(profiles["short"].plan(allModes[0]), profiles["short"].plan(allModes[2]))
	for _, k := range []faultKind{brokerRestart, retentionRace, slowTarget, targetOutage, overlap} {
		if count(short, k) == 0 {
			t.Errorf("short profile: no fault of kind %d", k)
		}
	}
	all := slicesConcat(long, profiles["long"].plan(allModes[2]))
	for _, sig := range []string{"TERM", "KILL"} {
		for _, sd := range []side{source, target} {
			found := false
			for _, f := range all {
				found = found || (f.kind == brokerRestart && f.side == sd && f.signal == sig)
			}
			if !found {
				t.Errorf("long profile: no %s broker restart with SIG%s", sd, sig)
			}
		}
	}
	for _, f := range all {
		if f.kind == linkCut && f.d != 30*time.Second {
			t.Errorf("long profile: %s lasts %s, want 30s", f.name, f.d)
		}
	}
}

func slicesConcat(a, b []fault) []fault { return append(append([]fault(nil), a...), b...) }

// TestBounds: the data the runner may hold and its documented RSS bound,
// for the soak's 6 slots and the floors of many slots.
func TestBounds(t *testing.T) {
	// 6 units: producer buffer 32/6 MiB, fetch 16/6 MiB (two per unit).
	if got, want := dataBound(6), int64(6*((32<<20)/6+2*((16<<20)/6))); got != want || got>>20 != 63 {
		t.Errorf("dataBound(6) = %d, want %d (about 64 MiB)", got, want)
	}
	// 64 units: the floors, 1 MiB of buffer and 1 MiB per fetch.
	if got := dataBound(64); got != 64*3<<20 {
		t.Errorf("dataBound(64) = %d MiB, want 192", got>>20)
	}
	// 96 MiB + 2 × (2 × D + 400 B per record): 1 KiB records about 399 MiB,
	// 100-byte records about 684 MiB (D is 63.x MiB with 6 slots).
	if got := rssBound(6, 1078) >> 20; got != 399 {
		t.Errorf("rssBound(6, 1 KiB records) = %d MiB, want 399", got)
	}
	if got := rssBound(6, 154) >> 20; got != 684 {
		t.Errorf("rssBound(6, 100-byte records) = %d MiB, want 684", got)
	}
}

// TestRunnerProperties: the file the soak gives the runner parses with
// the engine's loader into the flow the soak means.
func TestRunnerProperties(t *testing.T) {
	for _, m := range allModes {
		sc := &scenario{s: &soak{kafkaEnv: map[string]string{
			"KMIRROR_SOURCE_PROXIED_BROKERS": "127.0.0.1:23095", "KMIRROR_TARGET_PROXIED_BROKERS": "127.0.0.1:23195"}},
			m: m, id: "x1", src: "src-x1", dst: "dst-x1", stream: "soak-stream-x1", parts: 6}
		props, err := mirror.ParseProperties(strings.NewReader(sc.properties()))
		if err != nil {
			t.Fatalf("%s: %v\n%s", m.name, err, sc.properties())
		}
		if w := props.Warnings(); len(w) > 0 {
			t.Errorf("%s: warnings %+v", m.name, w)
		}
		var f mirror.FlowConfig
		for _, fl := range props.Flows() {
			if fl.Source == "src-x1" {
				f = fl
			}
		}
		if f.Target != "dst-x1" || f.Tasks != 6 || f.SessionTimeout != 6*time.Second || f.ExactlyOnce != m.eos ||
			!cmp.Equal(f.Topics, []string{`soak-stream-x1`}) {
			t.Errorf("%s: flow %s->%s tasks %d session %s exactly once %v topics %q", m.name, f.Source, f.Target, f.Tasks, f.SessionTimeout, f.ExactlyOnce, f.Topics)
		}
		if got := props.BootstrapServers("src-x1"); !cmp.Equal(got, []string{"127.0.0.1:23095"}) {
			t.Errorf("%s: source bootstrap %v, want the proxy", m.name, got)
		}
	}
}

func TestMarkdown(t *testing.T) {
	res := &result{profile: "short", seed: 7, started: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), elapsed: 3 * time.Minute,
		kafka: "4.3.1", machine: "2 cores", rate: 500, size: 1024, partitions: 6,
		modes: []*modeResult{{m: allModes[0], baseRSS: 30 << 20, bound: 240 << 20, elapsed: time.Minute, rows: []row{
			{Fault: "mirror SIGKILL", FaultTime: 1500 * time.Millisecond, Produced: 5000, Replicated: 5000, Duplicated: 300, Recover: 4200 * time.Millisecond, RSSPeak: 50 << 20},
			{Fault: "retention race", Produced: 3000, Replicated: 2900, InGap: 100, Recover: -1, Failures: []string{"boom"}},
			{Fault: "final: whole topics, graceful stop", Produced: 8000, Replicated: 7900, InGap: 100, Duplicated: 300, Recover: -1, Notes: []string{"kmirror verify: OK"}},
		}}}}
	got := res.markdown()
	for _, want := range []string{
		"## Soak, profile short (2026-12-01 15:00 UTC)",
		"Apache Kafka 4.3.1",
		"### 1 member, at least once (1m0s)",
		"RSS before the first fault 30 MiB; documented bound 240 MiB.",
		"| 1 | mirror SIGKILL | 1.5 | 5000 | 5000 | 0 | 0 | 300 | 4.2 | 50 | – | ok |\n",
		"| 2 | retention race | 0.0 | 3000 | 2900 | 0 | 100 | 0 | – | – | – | **FAIL** |\n",
		"| Σ | final: whole topics, graceful stop | 0.0 | 8000 | 7900 | 0 | 100 | 300 | – | – | – | ok |\n",
		"- row 2 FAIL: boom",
		"- row 3: kmirror verify: OK",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown lacks %q:\n%s", want, got)
		}
	}
	if !res.failed() {
		t.Error("a run with a failed row did not fail")
	}
}

// TestFlags: bad flags are refused with the value and what to write.
func TestFlags(t *testing.T) {
	for in, msg := range map[string]string{
		"-profile medium":              `-profile "medium": want short or long`,
		"-modes alo2":                  `-modes: unknown mode "alo2": want some of alo1, alo3, eos3, shallow1`,
		"-rate 1":                      "-rate 1: want 10 to 20000 records/s",
		"-partitions 2":                "-partitions 2: want 3 to 64",
		"-faults kill:1s":              "takes no duration",
		"-profile short x":             `unexpected argument "x"`,
		"-record-size 8":               "-record-size 8: want 16 to 100000 bytes",
		"-broker-session-timeout 10ms": "want at least 1s",
	} {
		_, err := parseFlags(strings.Fields(in), io.Discard)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v; want an error containing %q", in, err, msg)
		}
	}
	o, err := parseFlags([]string{"-profile", "long", "-modes", "eos3", "-seed", "42"}, io.Discard)
	if err != nil || o.profile != "long" || !cmp.Equal(o.modes, []string{"eos3"}) || o.seed != 42 {
		t.Errorf("parseFlags = %+v, %v", o, err)
	}
}

// TestStatusDocReadsTaskPartitions (regression): the runner's /status
// lists each flow's tasks (slots) with their partitions nested, since the
// cluster-wide view; the soak read partitions from the tasks themselves,
// found none, and reported every scenario "not caught up" although the
// runner replicated. The sample is a runner's /status, trimmed.
func TestStatusDocReadsTaskPartitions(t *testing.T) {
	const sample = `{"flows":[{"name":"src->dst","tasks":[
	 {"id":0,"state":"RUNNING","worker_id":"127.0.0.1:43911","lag":2,"records":6383,"partitions":[
	  {"topic":"stream","remote_topic":"src.stream","partition":4,"state":"RUNNING","source_end":6385,"replicated":6383,"committed":6360,"lag":2}]},
	 {"id":1,"state":"UNASSIGNED","worker_id":"","lag":null,"lag_unknown":true,"partitions":[]},
	 {"id":2,"state":"RUNNING","worker_id":"127.0.0.1:43911","lag":0,"partitions":[
	  {"topic":"stream","partition":0,"state":"RUNNING","source_end":10,"replicated":10,"committed":10,"lag":0},
	  {"topic":"stream","partition":1,"state":"FAILED","source_end":7,"replicated":3,"committed":3,"lag":4}]}],
	 "gaps":[{"topic":"stream","partition":1,"from":3,"to":5}]}]}`
	var d statusDoc
	if err := json.Unmarshal([]byte(sample), &d); err != nil {
		t.Fatal(err)
	}
	want := []statusPartition{
		{Topic: "stream", Partition: 4, State: "RUNNING", Replicated: 6383, SourceEnd: 6385, Committed: 6360},
		{Topic: "stream", Partition: 0, State: "RUNNING", Replicated: 10, SourceEnd: 10, Committed: 10},
		{Topic: "stream", Partition: 1, State: "FAILED", Replicated: 3, SourceEnd: 7, Committed: 3},
	}
	if diff := cmp.Diff(want, d.partitions(0)); diff != "" {
		t.Errorf("partitions (-want +got):\n%s", diff)
	}
	if len(d.Flows[0].Gaps) != 1 {
		t.Errorf("gaps: %+v, want 1", d.Flows[0].Gaps)
	}
}
