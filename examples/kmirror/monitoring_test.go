package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/mirror/mirrorprom"
)

// describingRegisterer registers on reg and records the metric names every
// collector describes: CounterVecs without series yet are gathered as
// nothing, but they describe themselves.
type describingRegisterer struct {
	reg   *prometheus.Registry
	names map[string]bool
	// descs maps each described metric name to its label names (constant
	// labels, then variable labels, each sorted) and help text.
	descs map[string]string
}

var (
	descRE      = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: ("(?:[^"\\]|\\.)*"), unit: "[^"]*", constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)
	labelNameRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
)

func (d *describingRegisterer) describe(c prometheus.Collector) {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	for desc := range ch {
		m := descRE.FindStringSubmatch(desc.String())
		if m == nil {
			panic("unexpected prometheus.Desc format: " + desc.String())
		}
		d.names[m[1]] = true
		var consts []string
		for _, l := range labelNameRE.FindAllStringSubmatch(m[3], -1) {
			consts = append(consts, l[1])
		}
		vars := strings.Split(m[4], ",")
		if m[4] == "" {
			vars = nil
		}
		sort.Strings(consts)
		sort.Strings(vars)
		if d.descs == nil {
			d.descs = map[string]string{}
		}
		d.descs[m[1]] = fmt.Sprintf("{%s} {%s} %s", strings.Join(consts, ","), strings.Join(vars, ","), m[2])
	}
}

func (d *describingRegisterer) Register(c prometheus.Collector) error {
	d.describe(c)
	return d.reg.Register(c)
}

func (d *describingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		d.describe(c)
	}
	d.reg.MustRegister(cs...)
}

func (d *describingRegisterer) Unregister(c prometheus.Collector) bool { return d.reg.Unregister(c) }

// exportedNames returns every metric name the runner's /metrics can
// expose: the engine's (a Mirror registered on a prometheus.NewRegistry),
// the franz-go client metrics (after one client was created with the
// cluster hook; kprom's buffered_* gauges are not exported), and the Go
// and process collectors. No I/O: New does none and the client is closed
// before it needs a broker.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	return exported(t).names
}

// exported is exportedNames with the label names and help text of every
// described metric.
func exported(t *testing.T) *describingRegisterer {
	t.Helper()
	d := &describingRegisterer{reg: prometheus.NewRegistry(), names: map[string]bool{}}
	d.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	seeds := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	if _, err := mirror.New(mirrorprom.WithRegisterer(d),
		mirror.WithCluster(mirror.ClusterConfig{Alias: "a", Client: seeds}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: "b", Client: seeds}),
		mirror.WithFlow(mirror.FlowConfig{Source: "a", Target: "b"})); err != nil {
		t.Fatal(err)
	}
	cm := newClientMetrics(d.reg)
	h := cm.hook("a")
	cl, err := kgo.NewClient(append(seeds, kgo.WithHooks(h))...)
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
	d.describe(h.m)
	for _, n := range kpromNotExported {
		if !d.names[n] {
			t.Errorf("kpromNotExported lists %s, which kprom does not describe", n)
		}
		delete(d.names, n)
	}
	mfs, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		d.names[mf.GetName()] = true
	}
	for _, must := range []string{"kmirror_replication_records_total", "kmirror_replication_lag_records", "kmirror_client_connects_total", "go_goroutines"} {
		if !d.names[must] {
			t.Fatalf("name set lacks %s: %v", must, sortedKeys(d.names))
		}
	}
	return d
}

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden")

// goldenMetrics returns the runner's kmirror_* metrics, one line each:
// name, constant label names, variable label names, help text.
func goldenMetrics(t *testing.T) string {
	t.Helper()
	d := exported(t)
	var b strings.Builder
	for _, n := range sortedKeys(d.names) {
		if strings.HasPrefix(n, "kmirror_") {
			fmt.Fprintf(&b, "%s %s\n", n, d.descs[n])
		}
	}
	return b.String()
}

// TestMetricsGolden pins the names, label names and help texts of every
// kmirror_* metric the runner's /metrics can serve (engine and franz-go
// client metrics) to testdata/metrics.golden: dashboards and alerts rely
// on them, so a change must be deliberate (go test -run TestMetricsGolden
// -update, and say so in METRICS.md).
func TestMetricsGolden(t *testing.T) {
	got := goldenMetrics(t)
	if *update {
		if err := os.WriteFile("testdata/metrics.golden", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/metrics.golden")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("metrics differ from testdata/metrics.golden (-want +got):\n%s", d)
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// known reports whether name is exported, accepting the _bucket, _sum and
// _count series of histograms.
func known(names map[string]bool, name string) bool {
	if names[name] {
		return true
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok && names[base] {
			return true
		}
	}
	return false
}

// promqlWords are the PromQL functions, aggregations and keywords the rule
// and dashboard expressions may use.
var promqlWords = map[string]bool{
	"sum": true, "max": true, "min": true, "avg": true, "count": true, "topk": true, "bottomk": true, "quantile": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "bool": true,
	"and": true, "or": true, "unless": true, "offset": true,
	"rate": true, "irate": true, "increase": true, "delta": true, "deriv": true, "absent": true, "absent_over_time": true,
	"histogram_quantile": true, "max_over_time": true, "min_over_time": true, "avg_over_time": true, "time": true,
	"clamp_min": true, "clamp_max": true, "changes": true, "resets": true, "timestamp": true, "vector": true, "scalar": true,
}

var (
	promStringRE  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatcherRE = regexp.MustCompile(`\{[^}]*\}`)
	promRangeRE   = regexp.MustCompile(`\[[^\]]*\]`)
	promGroupRE   = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdentRE   = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promNumberRE  = regexp.MustCompile(`\b[0-9][0-9.eE+]*\b`)
)

// metricRefs returns the metric names an expression reads, and the
// identifiers it uses that are neither metrics nor known PromQL words.
func metricRefs(expr string) (metrics, unknown []string) {
	s := promStringRE.ReplaceAllString(expr, " ")
	s = promMatcherRE.ReplaceAllString(s, " ")
	s = promRangeRE.ReplaceAllString(s, " ")
	s = promGroupRE.ReplaceAllString(s, "$1 ")
	s = promNumberRE.ReplaceAllString(s, " ")
	for _, m := range promIdentRE.FindAllString(s, -1) {
		word := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m), "("))
		isCall := strings.HasSuffix(strings.TrimSpace(m), "(")
		switch {
		case promqlWords[word]:
		case isCall:
			unknown = append(unknown, word+"(")
		default:
			metrics = append(metrics, word)
		}
	}
	return metrics, unknown
}

func TestMetricRefs(t *testing.T) {
	tests := []struct {
		expr             string
		metrics, unknown []string
	}{
		{`max by (source, target, topic) (kmirror_replication_lag_records) > 100000`, []string{"kmirror_replication_lag_records"}, nil},
		{`histogram_quantile(0.99, sum by (le) (rate(kmirror_replication_latency_seconds_bucket{source=~"$source"}[$__rate_interval]))) > 60`,
			[]string{"kmirror_replication_latency_seconds_bucket"}, nil},
		{`a_total and on(x) b_total unless foo(c)`, []string{"a_total", "b_total", "c"}, []string{"foo("}},
	}
	for _, tc := range tests {
		m, u := metricRefs(tc.expr)
		if d := cmp.Diff(tc.metrics, m); d != "" {
			t.Errorf("metricRefs(%q) metrics (-want +got):\n%s", tc.expr, d)
		}
		if d := cmp.Diff(tc.unknown, u); d != "" {
			t.Errorf("metricRefs(%q) unknown (-want +got):\n%s", tc.expr, d)
		}
	}
}

// ruleFile is the Prometheus rule file format (groups of alerting or
// recording rules).
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var promDurationRE = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)

// alertTemplate parses an annotation as Prometheus does (Go text/template
// with $labels and $value defined, Prometheus' humanize functions).
func alertTemplate(text string) error {
	fn := template.FuncMap{}
	for _, name := range []string{"humanize", "humanize1024", "humanizeDuration", "humanizePercentage", "humanizeTimestamp", "title", "toUpper", "toLower", "first", "label", "value", "query", "reReplaceAll", "match"} {
		fn[name] = func(...any) string { return "" }
	}
	_, err := template.New("annotation").Funcs(fn).Parse("{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$value := .Value}}" + text)
	return err
}

// TestAlertRules checks alerts.yml: it parses as a Prometheus rule file
// (no unknown field), has the rules of the seed article rewritten for
// kmirror plus kmirror's own, every rule is well-formed, and every metric
// it reads is exported by the runner.
func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile("monitoring/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("alerts.yml is not a valid rule file: %v", err)
	}
	names := exportedNames(t)
	var alerts []string
	seen := map[string]bool{}
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: needs a name and rules", g.Name)
		}
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Record != "" || r.Alert == "" {
				t.Errorf("rule %q/%q: only alerting rules are expected", r.Alert, r.Record)
			}
			if seen[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			seen[r.Alert] = true
			if r.For != "" && !promDurationRE.MatchString(r.For) {
				t.Errorf("%s: for %q is not a Prometheus duration", r.Alert, r.For)
			}
			if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, sev)
			}
			for _, k := range []string{"summary", "description"} {
				if r.Annotations[k] == "" {
					t.Errorf("%s: annotation %s missing", r.Alert, k)
				} else if err := alertTemplate(r.Annotations[k]); err != nil {
					t.Errorf("%s: annotation %s: %v", r.Alert, k, err)
				}
			}
			metrics, unknown := metricRefs(r.Expr)
			if len(metrics) == 0 {
				t.Errorf("%s: expr %q reads no metric", r.Alert, r.Expr)
			}
			for _, m := range metrics {
				if !known(names, m) {
					t.Errorf("%s: metric %s is not exported by kmirror", r.Alert, m)
				}
			}
			if len(unknown) > 0 {
				t.Errorf("%s: unknown PromQL functions %v", r.Alert, unknown)
			}
		}
	}
	want := []string{
		"KmirrorReplicationLagHigh", "KmirrorFlowNotRunning", "KmirrorPartitionFailed", "KmirrorTopicErrors",
		"KmirrorSlotsUnassigned", "KmirrorLagUnknown", "KmirrorMembersDisagree", "KmirrorFlowPausedLong", "KmirrorDown", "KmirrorHeartbeatStale",
		"KmirrorNoProgress", "KmirrorSourceGap", "KmirrorReplicationLatencyHigh", "KmirrorCheckpointErrors",
		"KmirrorResumePointErrors", "KmirrorClusterConnectErrors",
	}
	if d := cmp.Diff(want, alerts); d != "" {
		t.Errorf("alerts (-want +got):\n%s", d)
	}
}

type grafanaTarget struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
}

type grafanaPanel struct {
	ID         int               `json:"id"`
	Type       string            `json:"type"`
	Title      string            `json:"title"`
	Datasource map[string]string `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []grafanaTarget `json:"targets"`
}

type grafanaDashboard struct {
	Title         string         `json:"title"`
	UID           string         `json:"uid"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

var (
	grafanaVarRE     = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
	labelValuesRE    = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?,\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	grafanaBuiltins  = map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}
	grafanaPanelType = map[string]bool{"row": true, "timeseries": true, "stat": true, "table": true, "gauge": true, "bargauge": true}
)

// TestDashboard checks dashboard.json: valid JSON in Grafana's dashboard
// model, panels laid out on the 24-column grid with unique ids, every
// variable used defined, every query reading only exported metrics.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile("monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Fatal("dashboard.json is not valid JSON")
	}
	var d grafanaDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion <= 0 || len(d.Panels) == 0 {
		t.Fatalf("dashboard lacks title/uid/schemaVersion/panels: %q %q %d %d", d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	names := exportedNames(t)
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Errorf("variable %s: query: %v", v.Name, err)
			continue
		}
		m := labelValuesRE.FindStringSubmatch(q.Query)
		if m == nil || !known(names, m[1]) {
			t.Errorf("variable %s: query %q is not label_values(<exported metric>, label)", v.Name, q.Query)
		}
	}
	for _, want := range []string{"datasource", "source", "target"} {
		if !vars[want] {
			t.Errorf("templating variable %s missing", want)
		}
	}
	ids := map[int]bool{}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if !grafanaPanelType[p.Type] || p.Title == "" {
			t.Errorf("panel %d: type %q title %q", p.ID, p.Type, p.Title)
		}
		g := p.GridPos
		if g.W < 1 || g.X < 0 || g.X+g.W > 24 || g.H < 1 || g.Y < 0 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource["uid"] != "${datasource}" {
			t.Errorf("panel %q: datasource %v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] || tg.Expr == "" {
				t.Errorf("panel %q: target %+v needs a unique refId and an expr", p.Title, tg)
			}
			refs[tg.RefID] = true
			for _, m := range grafanaVarRE.FindAllStringSubmatch(tg.Expr, -1) {
				used[m[1]] = true
				if !vars[m[1]] && !grafanaBuiltins[m[1]] {
					t.Errorf("panel %q: variable $%s is not defined", p.Title, m[1])
				}
			}
			metrics, unknown := metricRefs(tg.Expr)
			if len(metrics) == 0 || len(unknown) > 0 {
				t.Errorf("panel %q: expr %q reads %v, unknown functions %v", p.Title, tg.Expr, metrics, unknown)
			}
			for _, m := range metrics {
				if !known(names, m) {
					t.Errorf("panel %q: metric %s is not exported by kmirror", p.Title, m)
				}
			}
		}
	}
	for _, v := range []string{"source", "target"} {
		if !used[v] {
			t.Errorf("variable $%s is defined but no query uses it", v)
		}
	}
}

// TestMetricsDoc keeps METRICS.md and the engine in step: every engine and
// client metric is documented, and every kmirror_* name the document
// mentions exists.
func TestMetricsDoc(t *testing.T) {
	data, err := os.ReadFile("../../METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	names := exportedNames(t)
	for _, n := range sortedKeys(names) {
		if strings.HasPrefix(n, "kmirror_") && !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("METRICS.md does not document `%s`", n)
		}
	}
	for _, m := range regexp.MustCompile("`(kmirror_[a-z0-9_]+)").FindAllStringSubmatch(doc, -1) {
		if !known(names, m[1]) {
			t.Errorf("METRICS.md mentions %s, which kmirror does not export", m[1])
		}
	}
}

// TestACLDocUnsupportedKeys checks the table of MM2 keys kmirror does not
// support in ACLS.md against the properties loader: every key written in a
// file with its example value draws a "not supported" warning, or, for the
// rows marked "error", makes loading fail naming the key.
func TestACLDocUnsupportedKeys(t *testing.T) {
	data, err := os.ReadFile("../../ACLS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := strings.Index(doc, "<!-- unsupported-keys:begin -->"), strings.Index(doc, "<!-- unsupported-keys:end -->")
	if begin < 0 || end < begin {
		t.Fatal("ACLS.md lacks the unsupported-keys markers")
	}
	rowRE := regexp.MustCompile("^\\| `([^`]+)` \\| `([^`]*)` \\| (warning|error) \\|")
	const base = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"
	rows := 0
	for _, line := range strings.Split(doc[begin:end], "\n") {
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		key, val, kind := m[1], m[2], m[3]
		t.Run(key, func(t *testing.T) {
			props := base
			if strings.HasPrefix(key, "a.sasl.mechanism") {
				props += "a.security.protocol = SASL_SSL\n"
			}
			if strings.HasPrefix(key, "a.ssl.truststore.type") {
				props += "a.security.protocol = SSL\na.ssl.truststore.location = testdata/client-keystore.pem\n"
			}
			if strings.HasPrefix(key, "config.providers.vault.class") {
				props += "config.providers = vault\na.sasl.jaas.config = ${vault:kafka:jaas}\na.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\n"
			}
			props += key + " = " + val + "\n"
			p, err := mirror.ParseProperties(strings.NewReader(props))
			if kind == "error" {
				if err == nil || !strings.Contains(err.Error(), key) && !strings.Contains(err.Error(), val) {
					t.Errorf("loading %s = %s: error %v, want one naming the key or the value", key, val, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("loading %s = %s: %v", key, val, err)
			}
			for _, w := range p.Warnings() {
				if w.Key == key && (strings.Contains(w.Message, "not supported") || strings.Contains(w.Message, "ignores")) {
					return
				}
			}
			t.Errorf("%s = %s: no 'not supported' warning; warnings: %v", key, val, p.Warnings())
		})
	}
	if rows < 20 {
		t.Errorf("ACLS.md lists %d unsupported keys, want the loader's whole list (at least 20)", rows)
	}
}

// checkServedAgainstGolden checks a scrape of the runner's /metrics: every
// kmirror_* family served is in testdata/metrics.golden, and each of its
// series has exactly the golden label names.
func checkServedAgainstGolden(t *testing.T, mfs map[string]*dto.MetricFamily) {
	t.Helper()
	data, err := os.ReadFile("testdata/metrics.golden")
	if err != nil {
		t.Fatal(err)
	}
	lineRE := regexp.MustCompile(`^(\S+) \{([^}]*)\} \{([^}]*)\} `)
	golden := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("testdata/metrics.golden: bad line %q", line)
		}
		var names []string
		for _, part := range []string{m[2], m[3]} {
			if part != "" {
				names = append(names, strings.Split(part, ",")...)
			}
		}
		sort.Strings(names)
		golden[m[1]] = strings.Join(names, ",")
	}
	served := 0
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "kmirror_") {
			continue
		}
		want, ok := golden[name]
		if !ok {
			t.Errorf("/metrics serves %s, which testdata/metrics.golden does not list", name)
			continue
		}
		served++
		for _, m := range mf.GetMetric() {
			var names []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
			}
			sort.Strings(names)
			if got := strings.Join(names, ","); got != want {
				t.Errorf("%s: a series has labels {%s}, testdata/metrics.golden says {%s}", name, got, want)
				break
			}
		}
	}
	if served < 20 {
		t.Errorf("/metrics serves %d kmirror_* families, want most of the %d golden ones", served, len(golden))
	}
}
