package mirror

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/kmirror/kmirror/internal/clientconf"
	"github.com/kmirror/kmirror/internal/mm2filter"
)

var updateGolden = flag.Bool("update", false, "rewrite the .golden files of TestPropertiesGolden")

// testEnv is the environment of the golden files' ${env:...} placeholders.
// The values are fake secrets that must never show in any output.
var testEnv = map[string]string{
	"SOURCE_BOOTSTRAP_SERVER": "src.example.com:9092",
	"SOURCE_USERNAME":         "reader",
	"SOURCE_PASSWORD":         "Env-Src-Pw-7c1f",
	"MIRROR_MM2_PASSWORD":     "Env-Mirror-Pw-9b2e",
}

func lookupTestEnv(k string) (string, bool) { v, ok := testEnv[k]; return v, ok }

func loadTestFile(t *testing.T, path string, opts ...LoadOpt) *Properties {
	t.Helper()
	p, err := LoadProperties(path, append([]LoadOpt{WithLookupEnv(lookupTestEnv)}, opts...)...)
	if err != nil {
		t.Fatalf("LoadProperties(%s): %v", path, err)
	}
	return p
}

func parseString(t *testing.T, text string, opts ...LoadOpt) *Properties {
	t.Helper()
	p, err := ParseProperties(strings.NewReader(text), append([]LoadOpt{WithLookupEnv(lookupTestEnv)}, opts...)...)
	if err != nil {
		t.Fatalf("ParseProperties: %v", err)
	}
	return p
}

// clientView describes the kgo configuration of one client role, as
// franz-go itself reports it (Client.OptValue), listing only what differs
// from kgo's defaults.
func clientView(t *testing.T, opts []kgo.Opt) string {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	def, _ := kgo.NewClient()
	defer def.Close()
	var parts []string
	parts = append(parts, fmt.Sprintf("seeds=%v", cl.OptValue(kgo.SeedBrokers)))
	if id, defID := cl.OptValue(kgo.ClientID), def.OptValue(kgo.ClientID); id != defID {
		parts = append(parts, fmt.Sprintf("client.id=%v", id))
	}
	if c, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config); c != nil {
		parts = append(parts, fmt.Sprintf("tls(roots=%t,certs=%d,skipHostname=%t)", c.RootCAs != nil, len(c.Certificates), c.InsecureSkipVerify))
	}
	for _, m := range cl.OptValue(kgo.SASL).([]sasl.Mechanism) {
		parts = append(parts, "sasl="+m.Name()+"("+saslUser(t, m)+")")
	}
	for _, o := range []struct {
		name string
		opt  any
	}{
		{"isolation", kgo.FetchIsolationLevel}, {"fetch.max.bytes", kgo.FetchMaxBytes}, {"fetch.max.partition.bytes", kgo.FetchMaxPartitionBytes},
		{"batch.max.bytes", kgo.ProducerBatchMaxBytes}, {"linger", kgo.ProducerLinger}, {"acks", kgo.RequiredAcks},
		{"idempotence.disabled", kgo.DisableIdempotentWrite}, {"compression", kgo.ProducerBatchCompression},
		{"buffered.bytes", kgo.MaxBufferedBytes}, {"record.retries", kgo.RecordRetries}, {"delivery.timeout", kgo.RecordDeliveryTimeout},
		{"request.timeout.overhead", kgo.RequestTimeoutOverhead}, {"broker.max.write", kgo.BrokerMaxWriteBytes},
	} {
		if got, want := fmt.Sprint(cl.OptValue(o.opt)), fmt.Sprint(def.OptValue(o.opt)); got != want {
			parts = append(parts, o.name+"="+got)
		}
	}
	return strings.Join(parts, " ")
}

// saslUser returns the user a mechanism authenticates as.
func saslUser(t *testing.T, m sasl.Mechanism) string {
	t.Helper()
	_, first, err := m.Authenticate(context.Background(), "broker.example.com:9092")
	if err != nil {
		return "error: " + err.Error()
	}
	s := string(first)
	switch m.Name() {
	case "PLAIN":
		return strings.Split(s, "\x00")[1]
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		return strings.TrimPrefix(strings.Split(s, ",")[2], "n=")
	}
	return "?"
}

// summary renders what a loaded file means, for the golden files.
func summary(t *testing.T, p *Properties) string {
	t.Helper()
	var sb strings.Builder
	for _, c := range p.Clusters() {
		fmt.Fprintf(&sb, "cluster %s\n", c.Alias)
		for _, r := range []struct {
			name string
			opts []kgo.Opt
		}{{"consumer", c.Consumer}, {"producer", c.Producer}, {"admin", c.Admin}} {
			fmt.Fprintf(&sb, "  %-8s %s\n", r.name, clientView(t, append(append([]kgo.Opt{}, c.Client...), r.opts...)))
		}
	}
	names := []string{"orders", "orders-v2", "a.internal", "a-internal", "x.replica", "__consumer_offsets", "_x", "test-1", "reading.sensor.b", "heartbeats"}
	groups := []string{"order-processor", "console-consumer-1", "connect-x", "__x", "app"}
	props := []string{"min.insync.replicas", "retention.ms", "follower.replication.throttled.replicas", "message.timestamp.type"}
	for _, f := range p.Flows() {
		d := f.withDefaults()
		tf, _ := newFilter("topics", d.Topics, "topics.exclude", d.TopicsExclude)
		gf, _ := newFilter("groups", d.Groups, "groups.exclude", d.GroupsExclude)
		cf, _ := newFilter("", []string{".*"}, "config.properties.exclude", d.ConfigPropertiesExclude)
		pick := func(flt mm2filter.Filter, in []string) []string {
			out := []string{}
			for _, n := range in {
				if flt.Match(n) {
					out = append(out, n)
				}
			}
			return out
		}
		fmt.Fprintf(&sb, "flow %s disabled=%t heartbeats=%t\n", f.Name(), f.Disabled, !f.DisableHeartbeats)
		fmt.Fprintf(&sb, "  topics %v\n  groups %v\n  configs copied %v\n", pick(tf, names), pick(gf, groups), pick(cf, props))
		fmt.Fprintf(&sb, "  remote(orders)=%s offset-syncs=%s checkpoints=%s\n", d.Policy.FormatRemoteTopic(f.Source, "orders"),
			d.Policy.OffsetSyncsTopic(map[bool]string{false: f.Target, true: f.Source}[f.OffsetSyncsTopicLocationTarget]), d.Policy.CheckpointsTopic(f.Source))
		fmt.Fprintf(&sb, "  rf=%d offset-syncs.rf=%d checkpoints.rf=%d heartbeats.rf=%d offset-storage.rf=%d offset-syncs.location.target=%t offset.lag.max=%d\n",
			d.ReplicationFactor, d.OffsetSyncsTopicReplicationFactor, d.CheckpointsTopicReplicationFactor, d.HeartbeatsTopicReplicationFactor,
			d.OffsetStorageReplicationFactor, d.OffsetSyncsTopicLocationTarget, d.OffsetLagMax)
		onOff := func(disabled bool, iv time.Duration) string {
			if disabled {
				return "off"
			}
			return iv.String()
		}
		fmt.Fprintf(&sb, "  refresh.topics=%s sync.configs=%s sync.acls=%s offset-syncs=%t heartbeats.replication=%t flush=%s\n",
			onOff(d.DisableRefreshTopics, d.RefreshTopicsInterval), onOff(d.DisableTopicConfigSync, d.SyncTopicConfigsInterval),
			onOff(d.DisableTopicACLSync, d.SyncTopicACLsInterval), !d.DisableOffsetSyncs, !d.DisableHeartbeatsReplication, d.OffsetFlushInterval)
		fmt.Fprintf(&sb, "  checkpoints=%s sync.group.offsets=%s refresh.groups=%s heartbeats=%s admin.timeout=%s\n",
			onOff(d.DisableCheckpoints, d.EmitCheckpointsInterval), onOff(!d.SyncGroupOffsets, d.SyncGroupOffsetsInterval),
			onOff(d.DisableRefreshGroups, d.RefreshGroupsInterval), onOff(d.DisableHeartbeats, d.EmitHeartbeatsInterval), d.AdminTimeout)
		fmt.Fprintf(&sb, "  start=%v read_committed=%t fetch.max.bytes=%d fetch.max.partition.bytes=%d buffered.bytes=%d use.defaults.from.source=%t\n",
			map[StartOffset]string{StartEarliest: "earliest", StartLatest: "latest"}[d.StartOffset], d.Isolation == ReadCommitted, d.FetchMaxBytes, d.FetchMaxPartitionBytes, d.MaxBufferedBytes, d.UseDefaultsFromSource)
	}
	for _, w := range p.Warnings() {
		fmt.Fprintf(&sb, "warning %s\n", w)
	}
	return sb.String()
}

func goldenFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/mm2configs/*.properties")
	if err != nil || len(files) != 9 {
		t.Fatalf("testdata/mm2configs: %d files, %v", len(files), err)
	}
	return files
}

// TestPropertiesGolden loads every shared MM2 file and compares what it
// means (flows, filters, intervals, clients as franz-go sees them,
// warnings) with its .golden file; run with -update to rewrite them. The
// engine must accept every file (New validates the options).
func TestPropertiesGolden(t *testing.T) {
	t.Parallel()
	for _, path := range goldenFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			p := loadTestFile(t, path)
			got := summary(t, p)
			golden := strings.TrimSuffix(path, ".properties") + ".golden"
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestPropertiesGolden -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("summary mismatch (-want +got):\n%s", diff)
			}
			m, err := newMirror(t, p.Opts()...)
			if err != nil {
				t.Fatalf("New rejects the loaded options: %v", err)
			}
			m.Close()
		})
	}
}

// TestPropertiesMatchMM2 pins the facts of each file that were checked
// against Apache MM2 4.3.1's MirrorMakerConfig (clusterPairs,
// connectorBaseConfig, workerConfig) when this test was written. Where
// kmirror deliberately differs (replication factor defaults, names under
// a top-level source.cluster.alias) the comment says so.
func TestPropertiesMatchMM2(t *testing.T) {
	t.Parallel()
	type flowFacts struct {
		Name                 string
		Disabled, Heartbeats bool
		Topics               []string // selected among a fixed list
		Remote               string
		RF                   int16
		Checkpoints          time.Duration // 0 = off
		SyncGroups           time.Duration // 0 = off
		RefreshTopics        time.Duration // 0 = off
		Start                StartOffset
		ReadCommitted        bool
		FetchMaxBytes        int32
		OffsetStorageRF      int16
	}
	names := []string{"orders", "orders-v2", "x.replica", "__consumer_offsets", "test-1", "reading.sensor.b"}
	facts := func(p *Properties) []flowFacts {
		var out []flowFacts
		for _, f := range p.Flows() {
			d := f.withDefaults()
			flt, _ := newFilter("topics", d.Topics, "topics.exclude", d.TopicsExclude)
			sel := []string{}
			for _, n := range names {
				if flt.Match(n) {
					sel = append(sel, n)
				}
			}
			ff := flowFacts{Name: f.Name(), Disabled: f.Disabled, Heartbeats: !f.DisableHeartbeats, Topics: sel,
				Remote: d.Policy.FormatRemoteTopic(f.Source, "orders"), RF: d.ReplicationFactor, Start: d.StartOffset,
				ReadCommitted: d.Isolation == ReadCommitted, FetchMaxBytes: d.FetchMaxBytes, OffsetStorageRF: d.OffsetStorageReplicationFactor}
			if !d.DisableCheckpoints {
				ff.Checkpoints = d.EmitCheckpointsInterval
			}
			if d.SyncGroupOffsets {
				ff.SyncGroups = d.SyncGroupOffsetsInterval
			}
			if !d.DisableRefreshTopics {
				ff.RefreshTopics = d.RefreshTopicsInterval
			}
			out = append(out, ff)
		}
		return out
	}
	all := []string{"orders", "orders-v2", "test-1", "reading.sensor.b"}
	const m, s = time.Minute, time.Second
	const def = 16 << 20
	for _, tc := range []struct {
		file string
		want []flowFacts
	}{
		{"f1", []flowFacts{
			{"A->B", false, true, all, "A.orders", 1, m, 0, 10 * m, StartEarliest, true, def, 1},
			{"B->A", false, true, all, "B.orders", 1, m, 0, 10 * m, StartEarliest, true, def, 1},
		}},
		{"f2", []flowFacts{
			{"DC1->DC2", false, true, all, "DC1.orders", 3, m, 0, 10 * s, StartEarliest, true, def, 3},
			{"DC2->DC1", false, true, all, "DC2.orders", 3, m, 0, 10 * s, StartEarliest, true, def, 3},
		}},
		{"f3", []flowFacts{
			{"primary->mirror", false, true, []string{"reading.sensor.b"}, "orders", 1, 15 * s, 15 * s, m, StartLatest, true, def, 1},
			{"mirror->primary", true, true, all, "orders", 1, m, 0, m, StartEarliest, true, def, 1},
		}},
		// MM2 names remote topics site-a.orders here (top-level
		// source.cluster.alias); kmirror keeps the cluster alias and warns.
		{"f4", []flowFacts{
			{"target->source", true, true, all, "target.orders", 1, m, 0, 10 * m, StartEarliest, true, def, 1},
			{"source->target", false, false, all, "source.orders", 1, 0, 0, 10 * m, StartEarliest, true, def, 1},
		}},
		// MM2 uses replication.factor 2 when unset; kmirror -1 (broker default).
		{"f6", []flowFacts{
			{"source->target", false, true, all, "orders", -1, s, m, 0, StartEarliest, true, def, 1},
			{"target->source", true, true, all, "orders", -1, s, m, 0, StartEarliest, true, def, 1},
		}},
		// topics.exclude=^__.* replaces the defaults: x.replica is replicated.
		{"f7", []flowFacts{
			{"source->destination", false, true, []string{"orders", "orders-v2", "x.replica", "test-1", "reading.sensor.b"}, "orders", 3, m, 0, 10 * m, StartEarliest, true, 64 << 20, -1},
			{"destination->source", true, true, all, "orders", 3, m, 0, 10 * m, StartEarliest, true, def, -1},
		}},
		{"f9", []flowFacts{
			{"primary->secondary", false, false, []string{"test-1"}, "orders", 1, 0, 0, 0, StartEarliest, true, def, 1},
		}},
		{"seed-active-standby", []flowFacts{
			{"primary->secondary", false, true, all, "primary.orders", 2, m, m, 10 * m, StartEarliest, true, def, 2},
			{"secondary->primary", true, true, all, "secondary.orders", 2, m, 0, 10 * m, StartEarliest, true, def, 1},
		}},
		{"seed-multi-region-dr", []flowFacts{
			{"us-east-1->ap-northeast-2", false, true, []string{"orders"}, "us-east-1.orders", 3, 30 * s, 0, 10 * m, StartEarliest, true, def, -1},
			{"ap-northeast-2->us-east-1", true, true, all, "ap-northeast-2.orders", 3, m, 0, 10 * m, StartEarliest, true, def, -1},
		}},
	} {
		p := loadTestFile(t, "testdata/mm2configs/"+tc.file+".properties")
		got := facts(p)
		sortFacts := func(x []flowFacts) { sort.Slice(x, func(i, j int) bool { return x[i].Name < x[j].Name }) }
		sortFacts(got)
		sortFacts(tc.want)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.file, diff)
		}
	}
}

// TestPropertiesWarnings checks that each file's quirks listed in
// testdata/mm2configs/practitioners.md produce a warning.
func TestPropertiesWarnings(t *testing.T) {
	t.Parallel()
	for file, want := range map[string][]string{
		"f1": nil,
		"f2": {"task.max", "sync.topics.configs.enabled", "topic.blacklist", "groups.blacklist"},
		"f3": nil,
		"f4": {"source.cluster.alias", "target.cluster.alias", "topics.exclude", "topics.exclude"}, // single backslashes the reader drops; 3.x exclude list: *.internal user topics
		"f6": nil,
		"f7": {"source->destination.producer.enable.idempotence", "source->destination.producer.acks", "group.id",
			"producer.batch.size", "producer.linger.ms", "producer.enable.idempotence", "producer.override.acks", "producer.override.retries",
			"producer.override.delivery.timeout.ms", "producer.override.compression.type", "producer.override.max.request.size"},
		"f9":                   {"refresh.topics.enabled"},
		"seed-active-standby":  {"primary.checkpoints.topic.replication.factor", "primary.heartbeats.topic.replication.factor", "primary.offset-syncs.topic.replication.factor"},
		"seed-multi-region-dr": {"us-east-1->ap-northeast-2.topics.auto.create", "us-east-1->ap-northeast-2.config.properties.exclude", "us-east-1->ap-northeast-2.config.properties.exclude"},
	} {
		p := loadTestFile(t, "testdata/mm2configs/"+file+".properties")
		var got []string
		for _, w := range p.Warnings() {
			got = append(got, w.Key)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s warnings (-want +got):\n%s\n%v", file, diff, p.Warnings())
		}
	}
}

// secretsOf returns the secret values of a test file: the values of secret
// keys, the option values of JAAS strings, and the test environment.
func secretsOf(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, v := range testEnv {
		if strings.Contains(v, "Pw") {
			out = append(out, v)
		}
	}
	data, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(strings.TrimSpace(k), "#") {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !clientconf.IsSecret(k) || v == "" {
			continue
		}
		if j, err := clientconf.ParseJAAS(v); err == nil {
			if pw := j.Options["password"]; pw != "" && !strings.Contains(pw, "${") {
				out = append(out, pw)
			}
			if cs := j.Options["clientSecret"]; cs != "" {
				out = append(out, cs)
			}
			continue
		}
		if !strings.Contains(v, "${") {
			out = append(out, v)
		}
	}
	return out
}

// TestCaseB40SecretsNeverShown: no secret value of any test file appears
// in the effective configuration, the warnings, or error messages of
// broken variants of the file.
func TestCaseB40SecretsNeverShown(t *testing.T) {
	t.Parallel()
	files := append(goldenFiles(t), "testdata/mm2extra/b40-security.properties", "testdata/mm2extra/b39-two-targets.properties")
	checked := 0
	for _, path := range files {
		secrets := secretsOf(t, path)
		p := loadTestFile(t, path)
		var texts []string
		texts = append(texts, p.Effective())
		for _, w := range p.Warnings() {
			texts = append(texts, w.String())
		}
		// Broken variants: every secret line made invalid in several ways.
		data, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if !ok || !clientconf.IsSecret(strings.TrimSpace(k)) {
				continue
			}
			for _, bad := range []string{
				k + "=" + strings.TrimSuffix(strings.TrimSpace(v), ";"), // unterminated JAAS
				k + "=" + v + ` \u12`, // malformed escape
				k + "=" + strings.Replace(v, "required", "requird", 1),      // bad flag
				k + "=" + strings.Replace(v, "username", "user name", 1),    // bad option
				strings.Replace(k, "jaas.config", "mechanism", 1) + "=" + v, // secret in a non-secret key's place is not ours to hide, skip
			} {
				if strings.Contains(bad, "mechanism=") {
					continue
				}
				variant := strings.Replace(string(data), line, bad, 1)
				_, err := ParseProperties(strings.NewReader(variant), WithLookupEnv(lookupTestEnv))
				if err != nil {
					texts = append(texts, err.Error())
				}
			}
		}
		for _, s := range secrets {
			checked++
			for _, txt := range texts {
				if strings.Contains(txt, s) {
					t.Errorf("%s: secret %q appears in output:\n%s", path, s, txt)
				}
			}
		}
	}
	if checked < 6 {
		t.Fatalf("only %d secrets checked", checked)
	}
}

// TestCaseB40PerClusterSecurityWins: top-level SASL_SSL settings with the
// target's credentials, source PLAINTEXT: every client role of src is
// PLAINTEXT without SASL, every client role of dst is SASL_SSL as mm2-dst.
func TestCaseB40PerClusterSecurityWins(t *testing.T) {
	t.Parallel()
	p := loadTestFile(t, "testdata/mm2extra/b40-security.properties")
	got := map[string]string{}
	for _, c := range p.Clusters() {
		for _, r := range []struct {
			name string
			opts []kgo.Opt
		}{{"consumer", c.Consumer}, {"producer", c.Producer}, {"admin", c.Admin}} {
			got[c.Alias+" "+r.name] = clientView(t, append(append([]kgo.Opt{}, c.Client...), r.opts...))
		}
	}
	src := "seeds=[src.example.com:9092]"
	dst := "seeds=[dst.example.com:9093] tls(roots=false,certs=0,skipHostname=false) sasl=SCRAM-SHA-512(mm2-dst)"
	want := map[string]string{
		"src consumer": src + " isolation=1",
		"src producer": src,
		"src admin":    src,
		"dst consumer": dst,
		"dst producer": dst + " compression=[{4 0}]", // kgo codec 4 = zstd
		"dst admin":    dst,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !strings.Contains(p.Effective(), "dst.client = bootstrap=dst.example.com:9093 protocol=SASL_SSL sasl=SCRAM-SHA-512 user=\"mm2-dst\"") {
		t.Errorf("effective dump:\n%s", p.Effective())
	}
}

// TestCaseB39TwoTargetsOwnCredentials: two targets with identical SASL
// mechanism settings but different users each authenticate as their own
// user, through their own mechanism instance.
func TestCaseB39TwoTargetsOwnCredentials(t *testing.T) {
	t.Parallel()
	p := loadTestFile(t, "testdata/mm2extra/b39-two-targets.properties")
	users := map[string]string{}
	for _, c := range p.Clusters() {
		cl, err := kgo.NewClient(append(append([]kgo.Opt{}, c.Client...), c.Producer...)...)
		if err != nil {
			t.Fatal(err)
		}
		users[c.Alias] = ""
		for _, m := range cl.OptValue(kgo.SASL).([]sasl.Mechanism) {
			users[c.Alias] += saslUser(t, m)
		}
		cl.Close()
	}
	if diff := cmp.Diff(map[string]string{"src": "", "dst1": "mm-one", "dst2": "mm-two"}, users); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var flows []string
	for _, f := range p.Flows() {
		flows = append(flows, fmt.Sprintf("%s %v disabled=%t", f.Name(), f.Topics, f.Disabled))
	}
	want := []string{"src->dst1 [a] disabled=false", "src->dst2 [b] disabled=false"}
	if diff := cmp.Diff(want, flows); diff != "" {
		t.Errorf("flows (-want +got):\n%s", diff)
	}
}

// TestCaseB37ConfigQuirks: the lines of docs/field-failures.md case B37 load
// the way MM2 reads them, with warnings instead of silence, and filters match
// whole names.
func TestCaseB37ConfigQuirks(t *testing.T) {
	t.Parallel()
	p := parseString(t, `clusters source, target
---%<---
source.bootstrap.servers: s:9092
target.bootstrap.servers = t:9092
task.max = 2
sync.topics.configs.enabled = true
topic.blacklist = .*\.internal
topics.blacklist = foo.*
config.storage.replication.factor: 1
source->target.enabled = true `+`
emit.heartbeats.enabled = false
topics=orders
`)
	var keys []string
	for _, w := range p.Warnings() {
		keys = append(keys, w.Key+" | "+w.Message)
	}
	want := []string{
		"---%<--- | unknown setting: ignored",
		"task.max | unknown setting: ignored (did you mean tasks.max?)",
		"sync.topics.configs.enabled | unknown setting: ignored (did you mean sync.topic.configs.enabled?)",
		"topic.blacklist | unknown setting: ignored (did you mean topics.exclude, or its deprecated spelling topics.blacklist?)",
		"topics.blacklist | deprecated spelling of topics.exclude (KIP-629), removed in Kafka 4.0, whose MM2 ignores it; kmirror honours it where topics.exclude is not set: rename it to topics.exclude",
		`source->target.enabled | trailing or leading whitespace: kmirror reads "true " as true; MM2 reads it as false when deciding which herders exist (Boolean.parseBoolean, untrimmed) and as true in its connectors (trimmed), so MM2 may run or skip this pair inconsistently`,
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	fs := p.Flows()
	if len(fs) != 1 || fs[0].Name() != "source->target" || fs[0].Disabled {
		t.Fatalf("flows %+v", fs)
	}
	flt, err := newFilter("topics", fs[0].Topics, "topics.exclude", fs[0].TopicsExclude)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"orders": true, "orders-v2": false, "foo.orders": false, "my-orders": false} {
		if flt.Match(name) != want {
			t.Errorf("topic %q selected = %t, want %t", name, !want, want)
		}
	}
	if diff := cmp.Diff([]string{"foo.*"}, fs[0].TopicsExclude); diff != "" {
		t.Errorf("topics.exclude from topics.blacklist: %s", diff)
	}
	if diff := cmp.Diff([]string{"s:9092"}, p.BootstrapServers("source")); diff != "" {
		t.Error(diff)
	}
	if p.BootstrapServers("nope") != nil {
		t.Error("BootstrapServers of an unknown alias")
	}
}

func TestPropertiesFlowMapping(t *testing.T) {
	t.Parallel()
	p := parseString(t, `clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
B->A.enabled = false
A->B.topics = orders, payments
A->B.groups.exclude =
replication.policy.separator = _
replication.policy.internal.topic.separator.enabled = false
A->B.offset.lag.max = 0
A->B.offset-syncs.topic.location = TARGET
A->B.use.defaults.from = source
A->B.refresh.topics.interval.seconds = -1
A->B.emit.checkpoints.interval.seconds = 5
A->B.sync.group.offsets.enabled = true
A->B.sync.group.offsets.interval.seconds = 7
emit.offset-syncs.enabled = false
A->B.heartbeats.replication.enabled = false
admin.timeout.ms = 1500
B.offset.flush.interval.ms = 250
A.consumer.auto.offset.reset = latest
A->B.source.consumer.isolation.level = read_committed
A->B.source.consumer.max.partition.fetch.bytes = 2048
B.producer.buffer.memory = 4096
A->B.replication.factor = -1
offset-syncs.topic.replication.factor = 2
`)
	fs := p.Flows()
	if len(fs) != 2 {
		t.Fatalf("%d flows", len(fs))
	}
	ab := fs[0]
	pol := ab.Policy
	ab.Policy = nil
	want := FlowConfig{Source: "A", Target: "B", Topics: []string{"orders", "payments"}, GroupsExclude: []string{},
		UseDefaultsFromSource: true, ReplicationFactor: -1, OffsetSyncsTopicReplicationFactor: 2,
		OffsetSyncsTopicLocationTarget: true, OffsetLagMax: OffsetLagMaxEveryRecord, DisableRefreshTopics: true,
		DisableOffsetSyncs: true, DisableHeartbeatsReplication: true, OffsetFlushInterval: 250 * time.Millisecond,
		EmitCheckpointsInterval: 5 * time.Second, SyncGroupOffsets: true, SyncGroupOffsetsInterval: 7 * time.Second,
		AdminTimeout: 1500 * time.Millisecond, StartOffset: StartLatest, FetchMaxPartitionBytes: 2048, MaxBufferedBytes: 4096}
	if diff := cmp.Diff(want, ab); diff != "" {
		t.Errorf("A->B (-want +got):\n%s", diff)
	}
	if got := pol.FormatRemoteTopic("A", "orders"); got != "A_orders" {
		t.Errorf("remote topic %q", got)
	}
	if got := pol.OffsetSyncsTopic("A"); got != "mm2-offset-syncs.A.internal" {
		t.Errorf("offset-syncs topic %q (internal separator disabled)", got)
	}
	ba := fs[1]
	if !ba.Disabled || ba.DisableHeartbeats || ba.StartOffset != StartEarliest || ba.OffsetFlushInterval != 0 {
		t.Errorf("B->A %+v", ba)
	}
	if !strings.Contains(p.Effective(), "A->B.refresh.topics.interval.seconds = -1    # A->B.refresh.topics.interval.seconds") {
		t.Errorf("effective:\n%s", p.Effective())
	}
}

func TestPropertiesOnlyTargets(t *testing.T) {
	t.Parallel()
	const text = "clusters=A,B,C\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nC.bootstrap.servers=c:1\nA->B.enabled=true\nB->C.enabled=true\n"
	p := parseString(t, text, OnlyTargets("C"))
	var got []string
	for _, f := range p.Flows() {
		got = append(got, f.Name())
	}
	if diff := cmp.Diff([]string{"A->C", "B->C"}, got); diff != "" {
		t.Error(diff)
	}
	var aliases []string
	for _, c := range p.Clusters() {
		aliases = append(aliases, c.Alias)
	}
	if diff := cmp.Diff([]string{"A", "B", "C"}, aliases); diff != "" {
		t.Error(diff)
	}
	_, err := ParseProperties(strings.NewReader(text), OnlyTargets("D"))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "--clusters" || ce.Value != "D" {
		t.Errorf("OnlyTargets(D): %v", err)
	}
}

// TestOnlyTargetsNamesTheFlowsLeftToOtherNodes: the flows --clusters
// leaves out are named (the runner logs them and answers for them), and a
// --clusters naming no flow's target says which targets the flows have
// (a new user saw "no pair has <source>-><target>.enabled=true" for a file
// that had two).
func TestOnlyTargetsNamesTheFlowsLeftToOtherNodes(t *testing.T) {
	t.Parallel()
	const text = "clusters=A,B,C\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nC.bootstrap.servers=c:1\nA->B.enabled=true\nA->C.enabled=true\nemit.heartbeats.enabled=false\n"
	p := parseString(t, text, OnlyTargets("B"))
	if diff := cmp.Diff([]string{"A->C"}, p.OtherNodesFlows()); diff != "" {
		t.Errorf("OtherNodesFlows with --clusters B (-want +got):\n%s", diff)
	}
	if got := parseString(t, text).OtherNodesFlows(); got != nil {
		t.Errorf("OtherNodesFlows without --clusters: %q, want nil", got)
	}
	p = parseString(t, text, OnlyTargets("A"))
	if len(p.Flows()) != 0 || !cmp.Equal(p.OtherNodesFlows(), []string{"A->B", "A->C"}) {
		t.Fatalf("--clusters A: flows %v, other nodes' %q", p.Flows(), p.OtherNodesFlows())
	}
	want := []Warning{{Key: "--clusters", Message: "no flow on this node: --clusters A names no flow's target; the file's flows A->B, A->C go into B, C (list those in --clusters, or leave it out to run every flow)"}}
	if diff := cmp.Diff(want, p.Warnings()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestPropertiesRoleConnectionOverride(t *testing.T) {
	t.Parallel()
	// A role with its own security settings gets complete connection
	// options, and SASL leaves Client so it cannot be appended twice.
	p := parseString(t, `clusters=A,B
A.bootstrap.servers=a:9092
A.security.protocol=SASL_PLAINTEXT
A.sasl.mechanism=PLAIN
A.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="base" password="p1";
A.admin.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="p2";
A.producer.security.protocol=PLAINTEXT
B.bootstrap.servers=b:9092
A->B.enabled=true
`)
	c := p.Clusters()[0]
	got := map[string]string{}
	for _, r := range []struct {
		name string
		opts []kgo.Opt
	}{{"client", nil}, {"consumer", c.Consumer}, {"producer", c.Producer}, {"admin", c.Admin}} {
		got[r.name] = clientView(t, append(append([]kgo.Opt{}, c.Client...), r.opts...))
	}
	want := map[string]string{
		"client":   "seeds=[a:9092]",
		"consumer": "seeds=[a:9092] sasl=PLAIN(base)",
		"producer": "seeds=[a:9092]",
		"admin":    "seeds=[a:9092] sasl=PLAIN(admin)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPropertiesErrors(t *testing.T) {
	t.Parallel()
	const base = "clusters=A,B\nA.bootstrap.servers=a:9092\nB.bootstrap.servers=b:9092\nA->B.enabled=true\n"
	for _, tc := range []struct {
		line, key, value, reason string
	}{
		{"A->B.refresh.topics.interval.seconds=soon", "A->B.refresh.topics.interval.seconds", "soon", "not a whole number"},
		{"emit.checkpoints.interval.seconds=0", "emit.checkpoints.interval.seconds", "0", "interval of 0 is invalid (MM2 then emits without pause"},
		// TestZeroIntervalReasons: the reason said "MM2 cannot schedule it"
		// for every key; MM2's heartbeat and checkpoint tasks only wait the
		// interval, so 0 emits in a busy loop there.
		{"A->B.emit.heartbeats.interval.seconds=0", "A->B.emit.heartbeats.interval.seconds", "0", "MM2 then emits without pause, as fast as the target accepts"},
		{"sync.group.offsets.interval.seconds=0", "sync.group.offsets.interval.seconds", "0", "MM2's scheduler refuses a period of 0 and the connector fails to start"},
		{"refresh.topics.interval.seconds=0", "refresh.topics.interval.seconds", "0", "MM2's scheduler refuses a period of 0"},
		{"A->B.topics=(?!x).*", "A->B.topics", "(?!x).*", "negative lookahead"},
		{"groups.exclude=a(b", "groups.exclude", "a(b", "regular expression"},
		{"A->B.config.properties.exclude=[x", "A->B.config.properties.exclude", "[x", "regular expression"},
		{"replication.factor=0", "replication.factor", "0", "must be positive"},
		{"replication.factor=40000", "replication.factor", "40000", "replication factor"},
		{"offset-syncs.topic.location=middle", "offset-syncs.topic.location", "middle", "source, target"},
		{"use.defaults.from=both", "use.defaults.from", "both", "target, source"},
		{"A->B.sync.topic.acls.enabled=yes", "A->B.sync.topic.acls.enabled", "yes", "true or false"},
		{"replication.policy.class=com.example.MyPolicy", "replication.policy.class", "com.example.MyPolicy", "kmirror implements only"},
		{"replication.policy.separator=", "replication.policy.separator", "", "must not be empty"},
		{"replication.policy.separator=#", "replication.policy.separator", "#", "separator"},
		{"A.consumer.auto.offset.reset=none", "A.consumer.auto.offset.reset", "none", "earliest or latest"},
		{"A->B.source.consumer.isolation.level=snapshot", "A->B.source.consumer.isolation.level", "snapshot", "read_committed"},
		{"B.offset.flush.interval.ms=-5", "B.offset.flush.interval.ms", "-5", "must be positive"},
		{"admin.timeout.ms=x", "admin.timeout.ms", "x", "milliseconds"},
		{"A.security.protocol=SASL_SSL", "A.sasl.mechanism", "", "GSSAPI"},
		{"A.bootstrap.servers=", "A.bootstrap.servers", "", "host:port"},
		{"B->B.topics=x", "B->B.topics", "x", "two different clusters"},
		{"A.producer.acks=2", "A.producer.acks", "2", "must be all"},
		{"A.sasl.jaas.config=x", "", "", ""}, // inert without a SASL protocol: no error
		// The group's timeouts together, with the line (mirror.New's check has none).
		{"B.heartbeat.interval.ms=50000", "B.heartbeat.interval.ms", "50000", "line 5: must be lower than B.session.timeout.ms (10000 ms)"},
		{"B.session.timeout.ms=2000", "B.session.timeout.ms", "2000", "line 5: must be higher than B.heartbeat.interval.ms (3000 ms, the default)"},
	} {
		_, err := ParseProperties(strings.NewReader(base+tc.line+"\n"), WithLookupEnv(lookupTestEnv))
		if tc.key == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.line, err)
			}
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %v is not a *ConfigError", tc.line, err)
			continue
		}
		if ce.Key != tc.key || ce.Value != tc.value || !strings.Contains(ce.Reason, tc.reason) {
			t.Errorf("%s: got {%q %q %q}, want key %q value %q reason containing %q", tc.line, ce.Key, ce.Value, ce.Reason, tc.key, tc.value, tc.reason)
		}
	}
	cl := "clusters=A,B\nA->B.enabled=true\nB.bootstrap.servers=b:1\n"
	_, err := ParseProperties(strings.NewReader(cl))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "A.bootstrap.servers" {
		t.Errorf("missing bootstrap: %v", err)
	}
	_, err = ParseProperties(strings.NewReader("clusters=__A,B\n__A->B.enabled=true\nbootstrap.servers=x:1"))
	if !errors.As(err, &ce) || ce.Key != "clusters" || ce.Value != "__A" || !strings.Contains(ce.Reason, "as the source of flow __A->B") {
		t.Errorf("invalid alias: %v", err)
	}
	_, err = ParseProperties(strings.NewReader("clusters=A,B\nA.x=\\u00zz"))
	if !errors.As(err, &ce) || ce.Key != "A.x" || !strings.Contains(ce.Reason, "line 2") {
		t.Errorf("malformed escape: %v", err)
	}
	if _, err := LoadProperties("testdata/does-not-exist.properties"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestPropertiesEffectiveIsSortedAndComplete(t *testing.T) {
	t.Parallel()
	p := loadTestFile(t, "testdata/mm2configs/f3.properties")
	eff := p.Effective()
	var keys []string
	for _, line := range strings.Split(eff, "\n")[1:] {
		if line == "" || strings.HasPrefix(line, "#") {
			break
		}
		keys = append(keys, strings.SplitN(line, " = ", 2)[0])
	}
	if !sort.StringsAreSorted(keys[1:]) {
		t.Errorf("keys not sorted: %q", keys)
	}
	for _, want := range []string{
		"primary.sasl.jaas.config = [hidden]",
		"mirror.sasl.jaas.config = [hidden]",
		`primary.client = bootstrap=${env:SOURCE_BOOTSTRAP_SERVER} protocol=SASL_PLAINTEXT sasl=SCRAM-SHA-512 user="${env:SOURCE_USERNAME}"`, // provided values show as written
		"primary->mirror.source.consumer.auto.offset.reset = latest    # primary.consumer.auto.offset.reset",
		"primary->mirror.sync.group.offsets.interval.seconds = 15    # primary->mirror.sync.group.offsets.interval.seconds",
		"mirror.producer.max.request.size = 5242880    # kgo.ProducerBatchMaxBytes(5242880)",
		"primary->mirror.tasks.max = 4    # top level",
	} {
		if !strings.Contains(eff, want) {
			t.Errorf("effective lacks %q:\n%s", want, eff)
		}
	}
}

func FuzzParseProperties(f *testing.F) {
	for _, path := range []string{"testdata/mm2configs/f2.properties", "testdata/mm2configs/f3.properties", "testdata/mm2configs/f7.properties", "testdata/mm2extra/b40-security.properties"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("clusters=A,B\nA->B.enabled= true\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\ntopics=\\u0041.*"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseProperties(strings.NewReader(string(data)), WithLookupEnv(lookupTestEnv),
			WithReadFile(func(string) ([]byte, error) { return nil, os.ErrNotExist }))
		if err == nil {
			return
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key == "" {
			t.Fatalf("error %T %v is not a *ConfigError naming a key", err, err)
		}
	})
}

// TestEmptyKeyErrorNamesTheLine: a line with an empty key ("=value") whose
// value fails to resolve is reported with the line as key (found by
// fuzzing: the error had no key at all).
func TestEmptyKeyErrorNamesTheLine(t *testing.T) {
	t.Parallel()
	_, err := ParseProperties(strings.NewReader("=0${env:}\nconfig.providers  env\nconfig.providers.env.class"), WithLookupEnv(lookupTestEnv))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "line 1" {
		t.Errorf("error %#v, want a *ConfigError with Key \"line 1\"", err)
	}
}

// TestPropertiesOneErrorPerSetting: a setting two checks refuse (the
// client key's range and the flow's mapping of it) is reported once, and
// so is a target's setting read by two flows into it.
func TestPropertiesOneErrorPerSetting(t *testing.T) {
	t.Parallel()
	const file = "clusters=A,B,C\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nC.bootstrap.servers=c:1\n" +
		"A->B.enabled=true\nC->B.enabled=true\nA.consumer.fetch.max.bytes=-1\nB.heartbeat.interval.ms=50000\n"
	_, err := ParseProperties(strings.NewReader(file), WithLookupEnv(lookupTestEnv))
	var all *ConfigErrors
	if !errors.As(err, &all) {
		t.Fatalf("error %T %v, want a *ConfigErrors", err, err)
	}
	var got []string
	for _, ce := range all.Errs {
		got = append(got, fmt.Sprintf("%s=%q: %s", ce.Key, ce.Value, ce.Reason))
	}
	want := []string{
		`A.consumer.fetch.max.bytes="-1": line 7: must be between 1 and 2147483647`,
		`B.heartbeat.interval.ms="50000": line 8: must be lower than B.session.timeout.ms (10000 ms); Kafka advises a heartbeat interval of at most a third of the session timeout, e.g. B.heartbeat.interval.ms = 3333`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}

	// A placeholder no provider resolves is not then refused as a broker
	// list too (a new user's try, stop 42: "has an invalid port").
	_, err = ParseProperties(strings.NewReader("clusters=A,B\nconfig.providers=env\nconfig.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"+
		"A.bootstrap.servers=${env:NOT_SET_ANYWHERE}\nB.bootstrap.servers=b:1\nA->B.enabled=true\n"), WithLookupEnv(lookupTestEnv))
	if err == nil || err.Error() != "mirror: A.bootstrap.servers: line 4: ${env:NOT_SET_ANYWHERE}: environment variable NOT_SET_ANYWHERE is not set" {
		t.Errorf("unresolved placeholder: %v, want its one error", err)
	}
}

// TestPropertiesEveryError: every error of a file is reported at once, in
// line order, each with its line; errors.As finds the first; a top-level
// key read by every flow is reported once.
func TestPropertiesEveryError(t *testing.T) {
	t.Parallel()
	const file = `clusters = A, B, C
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
A->B.topics = (?!internal).*
A->B.replication.factor = two
B->A.enabled = ture
offset-syncs.topic.location = middle
A.producer.acks = 2
C->C.topics = x
bad\u00zzkey = 1
A->B.emit.checkpoints.interval.seconds = 0
C->A.enabled = true
`
	_, err := ParseProperties(strings.NewReader(file), WithLookupEnv(lookupTestEnv))
	var all *ConfigErrors
	if !errors.As(err, &all) {
		t.Fatalf("error %T %v, want a *ConfigErrors", err, err)
	}
	var got []string
	for _, ce := range all.Errs {
		got = append(got, fmt.Sprintf("%s=%q: %s", ce.Key, ce.Value, ce.Reason))
	}
	want := []string{
		`A->B.topics="(?!internal).*": line 5: `,
		`A->B.replication.factor="two": line 6: not a replication factor`,
		`B->A.enabled="ture": line 7: must be true or false`,
		`offset-syncs.topic.location="middle": line 8: must be one of source, target`,
		`A.producer.acks="2": line 9: `,
		`C->C.topics="x": line 10: a flow needs two different clusters`,
		`bad="": line 11: malformed \uxxxx escape`,
		`A->B.emit.checkpoints.interval.seconds="0": line 12: an interval of 0 is invalid`,
		`C.bootstrap.servers="": required: set C.bootstrap.servers`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}
	var first *ConfigError
	if !errors.As(err, &first) || first.Key != "A->B.topics" {
		t.Errorf("errors.As *ConfigError = %v, want the first error (A->B.topics)", first)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "mirror: 9 configuration errors:\n\tA->B.topics=\"(?!internal).*\": line 5: ") ||
		strings.Count(msg, "\n\t") != 9 || !strings.HasSuffix(msg, "\n\tC.bootstrap.servers: required: set C.bootstrap.servers (or a top-level bootstrap.servers)") {
		t.Errorf("Error():\n%s", msg)
	}

	// One error: the message is that error's.
	_, err = ParseProperties(strings.NewReader("clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\nreplication.factor = 0\n"))
	if err == nil || err.Error() != `mirror: replication.factor="0": line 5: must be positive, or -1 for the broker default` {
		t.Errorf("a top-level error read by two flows: %v, want it once", err)
	}
}

// TestPropertiesMembersAndExactlyOnce: tasks.max, the target cluster's
// group timeouts and MM2's exactly-once keys (KIP-618) map to the flow; the
// combinations MM2 refuses are refused with the line to write instead.
func TestPropertiesMembersAndExactlyOnce(t *testing.T) {
	t.Parallel()
	const base = "clusters=A,B\nA.bootstrap.servers=a:9092\nB.bootstrap.servers=b:9092\nA->B.enabled=true\n"
	flowOf := func(t *testing.T, text string) FlowConfig {
		t.Helper()
		p, err := ParseProperties(strings.NewReader(base + text))
		if err != nil {
			t.Fatalf("ParseProperties: %v", err)
		}
		for _, f := range p.Flows() {
			if f.Name() == "A->B" {
				return f
			}
		}
		t.Fatal("no flow A->B")
		return FlowConfig{}
	}
	f := flowOf(t, "tasks.max=12\nB.session.timeout.ms=1500\nB.heartbeat.interval.ms=300\nB.rebalance.timeout.ms=20000\n")
	if f.Tasks != 12 || f.SessionTimeout != 1500*time.Millisecond || f.HeartbeatInterval != 300*time.Millisecond || f.RebalanceTimeout != 20*time.Second || f.ExactlyOnce {
		t.Errorf("tasks %d, session %v, heartbeat %v, rebalance %v, exactly once %t; want 12, 1.5s, 300ms, 20s, false",
			f.Tasks, f.SessionTimeout, f.HeartbeatInterval, f.RebalanceTimeout, f.ExactlyOnce)
	}
	f = flowOf(t, "B.exactly.once.source.support=enabled\nA->B.transaction.boundary=interval\nA->B.transaction.boundary.interval.ms=250\n")
	if !f.ExactlyOnce || f.TransactionBoundary != TransactionBoundaryInterval || f.TransactionInterval != 250*time.Millisecond {
		t.Errorf("exactly once %t, boundary %v, interval %v; want true, interval, 250ms", f.ExactlyOnce, f.TransactionBoundary, f.TransactionInterval)
	}
	if f = flowOf(t, "B.exactly.once.source.support=enabled\nexactly.once.support=required\n"); !f.ExactlyOnce || f.TransactionBoundary != TransactionBoundaryPoll {
		t.Errorf("exactly once %t, boundary %v; want true, poll", f.ExactlyOnce, f.TransactionBoundary)
	}
	if f = flowOf(t, "exactly.once.support=requested\n"); f.ExactlyOnce {
		t.Error("requested without the target's worker support: want at least once")
	}
	for _, tc := range []struct{ text, want string }{
		{"exactly.once.support=required\n", `exactly.once.support="required": line 5: required, but the target B's workers do not support exactly-once source replication: add B.exactly.once.source.support=enabled`},
		{"B.exactly.once.source.support=enabled\nA->B.exactly.once.support=required\nA.consumer.isolation.level=read_uncommitted\n", "the source consumer reads read_uncommitted (A.consumer.isolation.level), so aborted source records would be copied: remove it"},
		{"A->B.transaction.boundary=connector\n", "MirrorSourceConnector does not define transaction boundaries"},
		{"B.exactly.once.source.support=on\n", `B.exactly.once.source.support="on": line 5: must be disabled, preparing or enabled`},
		{"A->B.tasks.max=0\n", `A->B.tasks.max="0": line 5: must be a whole number of slots between 1 and 1024`},
		{"B.session.timeout.ms=-1\n", `B.session.timeout.ms="-1": line 5: must be positive`},
	} {
		_, err := ParseProperties(strings.NewReader(base + tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.text, err, tc.want)
		}
	}
}

// TestMissingSettingNamesItsMisspelling (a new user's try): a misspelt
// a.bootstrap.server only produced "a.bootstrap.servers: required", and
// the warning suggesting the right key was never printed (a file with
// errors prints no warnings): the error now names the line and the key.
func TestMissingSettingNamesItsMisspelling(t *testing.T) {
	_, err := ParseProperties(strings.NewReader("clusters = a, b\na.bootstrap.server = x:1\nb.bootstrap.servers = y:1\na->b.enabled = true\n"))
	want := "mirror: a.bootstrap.servers: required: set a.bootstrap.servers (or a top-level bootstrap.servers); line 2 sets a.bootstrap.server: did you mean a.bootstrap.servers?"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// TestListOfOnlyEmptyItemsWarns (a breaker's finding): "A->B.topics = ,"
// is two empty regexes, in MM2 too, and selects no topic; an empty value
// warned "empty list: no name matches", the comma said nothing.
func TestListOfOnlyEmptyItemsWarns(t *testing.T) {
	t.Parallel()
	for _, v := range []string{",", " , , "} {
		p := parseString(t, "clusters=A,B\nA.bootstrap.servers=a:9092\nB.bootstrap.servers=b:9092\nA->B.enabled=true\nA->B.topics="+v+"\n")
		var got []string
		for _, w := range p.Warnings() {
			got = append(got, w.Key+": "+w.Message)
		}
		if diff := cmp.Diff([]string{"A->B.topics: only empty items: no name matches"}, got); diff != "" {
			t.Errorf("%q: warnings (-want +got):\n%s", v, diff)
		}
	}
}

// TestNegativeOffsetLagMaxWarned (a new user's finding): offset.lag.max =
// -5 was taken silently. MM2 syncs every record for it, as for 0, and so
// does kmirror, now with a warning naming the value and what to write.
func TestNegativeOffsetLagMaxWarned(t *testing.T) {
	t.Parallel()
	p := parseString(t, "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\nA->B.offset.lag.max = -5\n")
	if got := p.Flows()[0].OffsetLagMax; got != OffsetLagMaxEveryRecord {
		t.Errorf("OffsetLagMax = %d, want OffsetLagMaxEveryRecord (%d)", got, OffsetLagMaxEveryRecord)
	}
	ws := p.Warnings()
	want := "negative (-5): an offset sync for every record, as MM2 reads it too; write 0 for that, or a count of records (default 100)"
	if len(ws) != 1 || ws[0].Key != "A->B.offset.lag.max" || ws[0].Line != 5 || ws[0].Message != want {
		t.Fatalf("warnings %+v, want one on A->B.offset.lag.max line 5: %q", ws, want)
	}
}

// TestNegativeIntervalShowsTaskOff (a new user's finding): a negative
// emit.checkpoints.interval.seconds turned checkpoints off, but -check's
// dump and the Connect REST config (FlowSettings) still said
// emit.checkpoints.enabled = true, read from the switch's default. Each
// switch a negative interval turns off now reads false, saying why.
func TestNegativeIntervalShowsTaskOff(t *testing.T) {
	t.Parallel()
	p := parseString(t, `clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
A->B.emit.checkpoints.interval.seconds = -1
A->B.sync.group.offsets.enabled = true
A->B.sync.group.offsets.interval.seconds = -1
A->B.emit.heartbeats.interval.seconds = -1
A->B.sync.topic.configs.interval.seconds = -1
`)
	fc := p.Flows()[0]
	if !fc.DisableCheckpoints || fc.SyncGroupOffsets || !fc.DisableHeartbeats || !fc.DisableTopicConfigSync {
		t.Errorf("flow: DisableCheckpoints %v SyncGroupOffsets %v DisableHeartbeats %v DisableTopicConfigSync %v, want true false true true",
			fc.DisableCheckpoints, fc.SyncGroupOffsets, fc.DisableHeartbeats, fc.DisableTopicConfigSync)
	}
	settings := p.FlowSettings("A->B")
	for _, sw := range []struct{ enabled, interval string }{
		{"emit.checkpoints.enabled", "emit.checkpoints.interval.seconds"},
		{"sync.group.offsets.enabled", "sync.group.offsets.interval.seconds"},
		{"emit.heartbeats.enabled", "emit.heartbeats.interval.seconds"},
		{"sync.topic.configs.enabled", "sync.topic.configs.interval.seconds"},
	} {
		want := "A->B." + sw.enabled + " = false    # A->B." + sw.interval + " is negative: the task is off, as in MM2"
		if !strings.Contains(p.Effective(), want+"\n") {
			t.Errorf("effective configuration lacks %q:\n%s", want, p.Effective())
		}
		if got := settings["A->B."+sw.enabled]; got != "false" {
			t.Errorf("FlowSettings[%s] = %q, want false", "A->B."+sw.enabled, got)
		}
	}
}

// TestEffectiveDumpRoundTrips (a new user's finding): the dump printed
// the target's worker settings (session.timeout.ms, offset.flush.interval.ms,
// offset.storage.replication.factor) and the producer's buffer under the
// flow's prefix as if they were keys; written back, each drew a warning
// ("a Connect worker setting has no effect per flow") and -strict refused
// the file. They are now marked "derived, not a key", and the dump's
// other lines, written back as a file, give the same flows and no warning
// (values with a backslash, such as config.properties.exclude's default
// regexes, are written with it doubled, as a properties file needs).
func TestEffectiveDumpRoundTrips(t *testing.T) {
	t.Parallel()
	p := parseString(t, `clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
A->B.topics = orders
A->B.groups = orders-.*
B.session.timeout.ms = 12000
B.offset.flush.interval.ms = 3000
emit.checkpoints.interval.seconds = 5
A->B.sync.group.offsets.enabled = true
A->B.topics.exclude = .*\\.tmp
`)
	var back strings.Builder
	for _, l := range strings.Split(p.Effective(), "\n") {
		if l == "" || strings.HasPrefix(l, "#") || strings.Contains(l, "# "+derived) {
			continue
		}
		kv, _, _ := strings.Cut(l, "    # ")
		back.WriteString(kv + "\n")
	}
	q := parseString(t, back.String())
	if w := q.Warnings(); len(w) > 0 {
		t.Errorf("the dump written back draws %d warning(s): %v\nfile:\n%s", len(w), w, back.String())
	}
	a, b := p.Flows(), q.Flows()
	for i := range a {
		// The dump writes out the defaults the first file left to them.
		a[i], b[i] = a[i].withDefaults(), b[i].withDefaults()
		a[i].Policy, b[i].Policy = nil, nil
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("flows of the dump written back (-original +back):\n%s", diff)
	}
}

// TestExcludedIncludeEntriesWarn: an entry of topics or groups that the
// exclude list takes back whole selected nothing, and nothing said so
// ("groups = payments.*" with "groups.exclude = payments.*" checkpointed
// no group). It warns now, naming the entries and the exclude setting. A
// topics entry naming one topic is left to the runner's list of topics
// not replicated, which already says why.
func TestExcludedIncludeEntriesWarn(t *testing.T) {
	const head = "clusters = a, b\na.bootstrap.servers = h:1\nb.bootstrap.servers = h:2\na->b.enabled = true\n"
	for _, c := range []struct {
		name, lines, want string // want "" for no warning
	}{
		{"same regex", "a->b.topics = orders, payments.*\na->b.topics.exclude = payments.*\n",
			`line 5: a->b.topics: "payments.*" is excluded again by a->b.topics.exclude (line 6)`},
		{"everything excluded", "a->b.topics = payments.*, audit.*\na->b.topics.exclude = .*\n",
			`line 5: a->b.topics: "payments.*" and "audit.*" are excluded again by a->b.topics.exclude (line 6)`},
		{"literal topic: the runner's list says it", "a->b.topics = orders\na->b.topics.exclude = orders\n", ""},
		{"literal group", "a->b.groups = g1, team-a.*\na->b.groups.exclude = g.*\n",
			`line 5: a->b.groups: "g1" is excluded again by a->b.groups.exclude (line 6)`},
		{"group in the default exclude", "a->b.groups = connect-billing\n",
			`line 5: a->b.groups: "connect-billing" is excluded again by the default groups.exclude (console-consumer-.*, connect-.*, __.*)`},
		{"the default topics, all excluded", "a->b.topics.exclude = .*\n",
			`line 5: a->b.topics.exclude: "` + ".*" + `" is excluded again by a->b.topics.exclude (line 5), which MM2 and kmirror apply after the default topics (.*)`},
		{"some excluded, none whole", "a->b.topics = payments.*\na->b.topics.exclude = payments\\.internal\n", ""},
	} {
		p := parseString(t, head+c.lines)
		var got []string
		for _, w := range p.Warnings() {
			if strings.Contains(w.Message, "excluded again") {
				got = append(got, w.String())
			}
		}
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: warnings %q; want none", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: warnings %q; want one holding %q", c.name, got, c.want)
		}
	}
}

// TestNuFIntervalWithUnitSaysWhatToWrite: an interval written with a unit
// ("30s", as in Go or Spring files) or a fraction was refused as "not a
// whole number of seconds" without the number to write (an operator's find).
func TestNuFIntervalWithUnitSaysWhatToWrite(t *testing.T) {
	_, err := ParseProperties(strings.NewReader(`clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
A->B.emit.checkpoints.interval.seconds = 30s
A->B.sync.group.offsets.interval.seconds = 1.5
B.offset.flush.interval.ms = 1m
B.producer.linger.ms = 5ms
A->B.refresh.topics.interval.seconds = ten
`))
	want := `mirror: 5 configuration errors:
	A->B.emit.checkpoints.interval.seconds="30s": line 5: not a whole number of seconds: write 30 (the key's unit is seconds: no unit in the value)
	A->B.sync.group.offsets.interval.seconds="1.5": line 6: not a whole number of seconds: write a whole number, e.g. 2
	B.offset.flush.interval.ms="1m": line 7: not a whole number of milliseconds: write 60000 (the key's unit is milliseconds: no unit in the value)
	B.producer.linger.ms="5ms": line 8: not a whole number of milliseconds: write 5 (the key's unit is milliseconds: no unit in the value)
	A->B.refresh.topics.interval.seconds="ten": line 9: not a whole number of seconds: write digits only`
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
}

// TestNuFExactlyOnceReadUncommittedWarns: a flow replicating exactly once
// while its source consumer reads read_uncommitted (MM2's default, often
// written out) loaded without a word unless exactly.once.support was
// required, and -check said "exactly.once = true": the records of aborted
// source transactions are copied and committed on the target.
func TestNuFExactlyOnceReadUncommittedWarns(t *testing.T) {
	base := "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\nA.consumer.isolation.level = read_uncommitted\n"
	for _, tc := range []struct{ extra, want string }{
		{"B.exactly.once.source.support = enabled\n", "line 5: A.consumer.isolation.level: A->B replicates exactly once (B.exactly.once.source.support=enabled), " +
			"but read_uncommitted copies the records of aborted source transactions, committed on the target: remove it (kmirror reads read_committed by default)"},
		{"", ""}, // at least once: MM2's behaviour, asked for
	} {
		var got []string
		for _, w := range parseString(t, base+tc.extra).Warnings() {
			if w.Key == "A.consumer.isolation.level" {
				got = append(got, w.String())
			}
		}
		if want := []string{tc.want}; tc.want == "" && len(got) != 0 || tc.want != "" && !slices.Equal(got, want) {
			t.Errorf("%q: warnings %q, want %q", tc.extra, got, tc.want)
		}
	}
}
