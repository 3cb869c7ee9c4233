package mm2props

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func resolve(t *testing.T, text string, o Options) *Config {
	t.Helper()
	c, err := tryResolve(text, o)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return c
}

func tryResolve(text string, o Options) (*Config, error) {
	es, err := ParseString(text)
	if err != nil {
		return nil, err
	}
	if o.LookupEnv == nil {
		o.LookupEnv = func(string) (string, bool) { return "", false }
	}
	return Resolve(es, o)
}

// flowSummary is a compact view of the herder pairs.
type flowSummary struct {
	Name       string
	Enabled    bool
	Heartbeats bool
}

func flows(c *Config) []flowSummary {
	var out []flowSummary
	for _, f := range c.Flows {
		out = append(out, flowSummary{f.Name(), f.Enabled, f.Heartbeats})
	}
	return out
}

func warnings(c *Config) []string {
	var out []string
	for _, w := range c.Warnings {
		out = append(out, w.Key+": "+w.Message)
	}
	return out
}

func hasWarning(c *Config, key, substr string) bool {
	for _, w := range c.Warnings {
		if w.Key == key && strings.Contains(w.Message, substr) {
			return true
		}
	}
	return false
}

func TestHerderPairs(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		o    Options
		want []flowSummary
	}{
		{"one-way flow plus heartbeat herder (section 7)", "clusters=A,B\nA->B.enabled=true",
			Options{}, []flowSummary{{"A->B", true, true}, {"B->A", false, true}}},
		{"heartbeats off: only enabled pairs", "clusters=A,B\nA->B.enabled=true\nemit.heartbeats.enabled=false",
			Options{}, []flowSummary{{"A->B", true, false}}},
		{"flow heartbeats override", "clusters=A,B\nA->B.enabled=true\nA->B.emit.heartbeats.enabled=false\n",
			Options{}, []flowSummary{{"A->B", true, false}, {"B->A", false, true}}},
		{"per-flow heartbeats on over top-level off", "clusters=A,B\nemit.heartbeats.enabled=false\nB->A.emit.heartbeats.enabled=true",
			Options{}, []flowSummary{{"B->A", false, true}}},
		{"enabled false and no heartbeats: no herder", "clusters=A,B\nA->B.enabled=false\nemit.heartbeats.enabled=false", Options{}, nil},
		{"three clusters, --clusters B", "clusters=A,B,C\nA->B.enabled=true\nC->A.enabled=true",
			Options{OnlyTargets: []string{"B"}}, []flowSummary{{"A->B", true, true}, {"C->B", false, true}}},
		{"top-level enabled=true enables every herder", "clusters=A,B\nenabled=true\nemit.heartbeats.enabled=false\nA->B.enabled=true",
			Options{}, []flowSummary{{"A->B", true, false}}},
		{"top-level enabled=true with heartbeats", "clusters=A,B\nenabled=true",
			Options{}, []flowSummary{{"A->B", true, true}, {"B->A", true, true}}},
		{"flow enabled=false beats top-level enabled=true", "clusters=A,B\nenabled=true\nB->A.enabled=false",
			Options{}, []flowSummary{{"A->B", true, true}, {"B->A", false, true}}},
		{"trailing space and case", "clusters=A,B\nA->B.enabled = TRUE \nemit.heartbeats.enabled=false",
			Options{}, []flowSummary{{"A->B", true, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := resolve(t, tc.in, tc.o)
			if diff := cmp.Diff(tc.want, flows(c)); diff != "" {
				t.Errorf("flows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTopLevelEnabledWarns(t *testing.T) {
	c := resolve(t, "clusters=A,B\nenabled=true", Options{})
	if !hasWarning(c, "enabled", "enables every cluster pair that has a herder: A->B, B->A") {
		t.Errorf("warnings %q", warnings(c))
	}
}

func TestHerderBooleanWhitespace(t *testing.T) {
	// Case B37: MM2's herder set-up reads "true " as false; kmirror trims
	// and says so.
	c := resolve(t, "clusters=A,B\nA->B.enabled = true \nemit.heartbeats.enabled=false", Options{})
	if !hasWarning(c, "A->B.enabled", `kmirror reads "true " as true; MM2 reads it as false when deciding which herders exist`) {
		t.Errorf("warnings %q", warnings(c))
	}
	// Other booleans: MM2's connectors trim too; a milder warning.
	c = resolve(t, "clusters=A,B\nrefresh.topics.enabled=false \nA->B.enabled=true", Options{})
	if !hasWarning(c, "refresh.topics.enabled", "read as false (trimmed, as MM2's connectors read it)") {
		t.Errorf("warnings %q", warnings(c))
	}
	if _, err := tryResolve("clusters=A,B\nA->B.enabled=yes", Options{}); err == nil || !strings.Contains(err.Error(), "A->B.enabled") {
		t.Errorf("enabled=yes: %v", err)
	}
}

func TestFlowSettingsPrecedence(t *testing.T) {
	c := resolve(t, `clusters=A,B
topics=top.*
A->B.topics=flow.*
groups.exclude=g1
topics.blacklist=old.*
B->A.topics.exclude=new.*
config.properties.blacklist=x
A->B.config.properties.exclude=y
A->B.enabled=true
B->A.enabled=true
`, Options{})
	get := func(flow, key string) string {
		for _, f := range c.Flows {
			if f.Name() == flow {
				s, ok := f.Get(key)
				if !ok {
					return "<unset>"
				}
				return s.Key + "=" + s.Value
			}
		}
		return "<no flow>"
	}
	got := map[string]string{
		"A->B topics":                    get("A->B", "topics"),
		"B->A topics":                    get("B->A", "topics"),
		"A->B topics.exclude":            get("A->B", "topics.exclude"),
		"B->A topics.exclude":            get("B->A", "topics.exclude"),
		"A->B topics.blacklist":          get("A->B", "topics.blacklist"),
		"A->B config.properties.exclude": get("A->B", "config.properties.exclude"),
		"B->A config.properties.exclude": get("B->A", "config.properties.exclude"),
		"A->B groups.exclude":            get("A->B", "groups.exclude"),
	}
	want := map[string]string{
		"A->B topics":                    "A->B.topics=flow.*",
		"B->A topics":                    "topics=top.*",
		"A->B topics.exclude":            "topics.blacklist=old.*",
		"B->A topics.exclude":            "B->A.topics.exclude=new.*",
		"A->B topics.blacklist":          "<unset>",
		"A->B config.properties.exclude": "A->B.config.properties.exclude=y",
		"B->A config.properties.exclude": "config.properties.blacklist=x",
		"A->B groups.exclude":            "groups.exclude=g1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !hasWarning(c, "topics.blacklist", "deprecated spelling of topics.exclude (KIP-629), removed in Kafka 4.0") {
		t.Errorf("no deprecation warning: %q", warnings(c))
	}
	if !hasWarning(c, "topics.blacklist", "ignored for B->A because B->A.topics.exclude is set") {
		t.Errorf("no shadowing warning: %q", warnings(c))
	}
}

func TestClusterClientSettings(t *testing.T) {
	// Case B40: per-cluster security wins over top-level defaults, for
	// every client role.
	c := resolve(t, `clusters=src,dst
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=dst-credentials
src.security.protocol=PLAINTEXT
src.bootstrap.servers=s:9092
dst.bootstrap.servers=d:9092
src.consumer.isolation.level=read_committed
dst.producer.security.protocol=SSL
dst.client.id=mirror-dst
src->dst.enabled=true
`, Options{})
	val := func(m map[string]Setting) map[string]string {
		out := map[string]string{}
		for k, s := range m {
			out[k] = s.Value + " <- " + s.Key
		}
		return out
	}
	src, dst := c.Clusters["src"], c.Clusters["dst"]
	wantSrc := map[string]string{
		"bootstrap.servers": "s:9092 <- src.bootstrap.servers", "security.protocol": "PLAINTEXT <- src.security.protocol",
		"sasl.mechanism": "SCRAM-SHA-512 <- sasl.mechanism", "sasl.jaas.config": "dst-credentials <- sasl.jaas.config",
	}
	if diff := cmp.Diff(wantSrc, val(src.Client)); diff != "" {
		t.Errorf("src client (-want +got):\n%s", diff)
	}
	wantSrcConsumer := map[string]string{"isolation.level": "read_committed <- src.consumer.isolation.level"}
	for k, v := range wantSrc {
		wantSrcConsumer[k] = v
	}
	for _, role := range []map[string]Setting{src.Consumer, src.Admin, src.Producer} {
		if got := val(role)["security.protocol"]; got != "PLAINTEXT <- src.security.protocol" {
			t.Errorf("src role protocol %q", got)
		}
	}
	if diff := cmp.Diff(wantSrcConsumer, val(src.Consumer)); diff != "" {
		t.Errorf("src consumer (-want +got):\n%s", diff)
	}
	if got := val(dst.Producer)["security.protocol"]; got != "SSL <- dst.producer.security.protocol" {
		t.Errorf("dst producer protocol %q", got)
	}
	if got := val(dst.Admin)["security.protocol"]; got != "SASL_SSL <- security.protocol" {
		t.Errorf("dst admin protocol %q", got)
	}
	if got := val(dst.Client)["client.id"]; got != "mirror-dst <- dst.client.id" {
		t.Errorf("dst client.id %q", got)
	}
	if _, ok := dst.Consumer["client.id"]; ok {
		t.Error("client.id copied into a role (MM2 copies connection keys only)")
	}
}

func TestFlowClientSettings(t *testing.T) {
	c := resolve(t, `clusters=S,T
S->T.enabled=true
S.consumer.auto.offset.reset=latest
S->T.consumer.auto.offset.reset=earliest
S->T.consumer.isolation.level=read_committed
S->T.source.consumer.fetch.max.bytes=1000
S.consumer.fetch.max.bytes=2000
T.producer.buffer.memory=3000
S->T.producer.override.buffer.memory=4000
S->T.producer.override.acks=1
S->T.producer.acks=all
S->T.consumer.max.poll.records=10
S->T.source.cluster.basic.auth.user.info=u:p
S->T.target.cluster.security.protocol=PLAINTEXT
S->T.source.cluster.request.timeout.ms=5000
emit.heartbeats.enabled=false
`, Options{})
	f := c.Flows[0]
	got := map[string]string{}
	for k, s := range f.SourceConsumer {
		got["consumer "+k] = s.Key
	}
	for k, s := range f.TargetProducer {
		got["producer "+k] = s.Key
	}
	want := map[string]string{
		"consumer auto.offset.reset": "S.consumer.auto.offset.reset",
		"consumer isolation.level":   "S->T.consumer.isolation.level",
		"consumer fetch.max.bytes":   "S->T.source.consumer.fetch.max.bytes",
		"producer buffer.memory":     "S->T.producer.override.buffer.memory",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for key, substr := range map[string]string{
		// A new user's try (stop 38): the per-cluster form is advised only
		// where kmirror reads it.
		"S->T.source.cluster.basic.auth.user.info": "basic.auth.user.info is not a Kafka client setting kmirror knows: ignored",
		"S->T.target.cluster.security.protocol":    "set T.security.protocol, which applies to every flow using T",
		"S->T.source.cluster.request.timeout.ms":   "set S.consumer.request.timeout.ms, S.producer.request.timeout.ms or S.admin.request.timeout.ms",
		"S->T.producer.override.acks":              "set T.producer.acks",
		"S->T.producer.acks":                       "only the offset-syncs producer",
		"S->T.consumer.max.poll.records":           "set S.consumer.max.poll.records",
	} {
		if !hasWarning(c, key, substr) {
			t.Errorf("no warning %q for %s: %q", substr, key, warnings(c))
		}
	}
}

func TestWorkerSettings(t *testing.T) {
	c := resolve(t, `clusters=A,B
A->B.enabled=true
B.offset.flush.interval.ms=10000
offset.flush.interval.ms=1
B.offset.storage.replication.factor=2
offset.storage.replication.factor=3
`, Options{})
	b := c.Clusters["B"]
	if got := b.Worker["offset.flush.interval.ms"]; got.Key != "B.offset.flush.interval.ms" {
		t.Errorf("offset.flush.interval.ms from %q", got.Key)
	}
	// MM2's workerConfig copies top-level offset.storage.* over the
	// cluster's (putAll).
	if got := b.Worker["offset.storage.replication.factor"]; got.Key != "offset.storage.replication.factor" || got.Value != "3" {
		t.Errorf("offset.storage.replication.factor = %+v", got)
	}
	if !hasWarning(c, "offset.flush.interval.ms", "ignored by MM2 at top level") {
		t.Errorf("warnings %q", warnings(c))
	}
	if !hasWarning(c, "B.offset.storage.replication.factor", "overridden by the top-level offset.storage.replication.factor") {
		t.Errorf("warnings %q", warnings(c))
	}
}

// TestCaseB37TyposAndDeprecatedKeys: misspelt and deprecated keys produce
// warnings naming the valid key; nothing is silently ignored.
func TestCaseB37TyposAndDeprecatedKeys(t *testing.T) {
	c := resolve(t, `clusters source, target
---%<---
task.max = 2
sync.topics.configs.enabled = true
topic.blacklist = .*\.internal
topics.blacklist = foo.*
config.storage.replication.factor: 1
source->target.enabled = true
topics=orders
source->target.topcis = orders.*
source->target.groups = billing.*
source->target.grups = audit.*
`, Options{})
	want := []string{
		"---%<---: unknown setting: ignored",
		"task.max: unknown setting: ignored (did you mean tasks.max?)",
		"sync.topics.configs.enabled: unknown setting: ignored (did you mean sync.topic.configs.enabled?)",
		"topic.blacklist: unknown setting: ignored (did you mean topics.exclude, or its deprecated spelling topics.blacklist?)",
		"topics.blacklist: deprecated spelling of topics.exclude (KIP-629), removed in Kafka 4.0, whose MM2 ignores it; kmirror honours it where topics.exclude is not set: rename it to topics.exclude",
		// A new user's try (stop 38): a misspelt selection widens it.
		"source->target.topcis: unknown flow setting: ignored (did you mean source->target.topics?); " +
			"without it the flow's topics is the top-level topics or MM2's default .*, which selects every topic",
		// The same misspelling beside the right key does not widen anything
		// (a new user's try, stop 42: the warning said it did).
		"source->target.grups: unknown flow setting: ignored (did you mean source->target.groups?)",
	}
	if diff := cmp.Diff(want, warnings(c)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"source", "target"}, c.Aliases); diff != "" {
		t.Error(diff)
	}
	for _, f := range c.Flows {
		if s, _ := f.Get("topics.exclude"); s.Value != "foo.*" {
			t.Errorf("%s topics.exclude = %q", f.Name(), s.Value)
		}
	}
}

// TestFlowKeySuggestions (a new user's try): flow keys with a space
// around the arrow (Java's properties format ends the key at the space),
// another arrow, or aliases in the wrong case get the whole key to write.
func TestFlowKeySuggestions(t *testing.T) {
	c := resolve(t, `clusters=a,b
a->b.enabled=true
a.bootstrap.servers=x:1
b.bootstrap.servers=x:1
a -> b.topics = orders
b=>a.enabled=true
b-a.topics=x
A->B.emit.checkpoints.enabled=false
a->bb.sync.group.offsets.enabled=true
`, Options{})
	for key, substr := range map[string]string{
		"a":                                "written <source>-><target>.<setting> with no spaces: did you mean a->b.topics?",
		"b":                                "did you mean b->a.enabled?",
		"b-a.topics":                       "did you mean b->a.topics?",
		"A->B.emit.checkpoints.enabled":    "aliases are case-sensitive; did you mean a->b.emit.checkpoints.enabled?",
		"a->bb.sync.group.offsets.enabled": "; did you mean a->b.sync.group.offsets.enabled?",
	} {
		if !hasWarning(c, key, substr) {
			t.Errorf("no warning %q for %s:\n%s", substr, key, strings.Join(warnings(c), "\n"))
		}
	}
}

// A space right after the arrow ("a-> b.enabled = true") ends the key at
// "a->", which MM2 and kmirror ignore; the warning said the pair was "not
// made of aliases listed in clusters (a, b)" although it names a and b,
// and not what to write.
func TestFlowKeySpaceAfterArrowSuggestsKey(t *testing.T) {
	c := resolve(t, "clusters=a,b\na.bootstrap.servers=x:1\nb.bootstrap.servers=x:1\na-> b.enabled = true\nb->\ta.topics=orders\n", Options{})
	want := []string{
		"a->: unknown setting: ignored; a flow's settings are written <source>-><target>.<setting> with no spaces: did you mean a->b.enabled?",
		"b->: unknown setting: ignored; a flow's settings are written <source>-><target>.<setting> with no spaces: did you mean b->a.topics?",
	}
	if diff := cmp.Diff(want, warnings(c)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if c.Warnings[0].Line != 4 {
		t.Errorf("warning on line %d, want 4", c.Warnings[0].Line)
	}
}

func TestScopeWarnings(t *testing.T) {
	c := resolve(t, `clusters=primary,secondary
primary->secondary.enabled=true
primay.bootstrap.servers=x:1
PRIMARY.producer.linger.ms=5
primary.checkpoints.topic.replication.factor=1
primary.batch.size=10
primary.bootstrap.server=x:1
primary->secondry.topics=a
primary->secondary.topics.auto.create=true
primary->secondary.tpoics=a
primary->secondary.offset.flush.interval.ms=10
primary->dr.enabled=true
producer.linger.ms=5
consumer.poll.timeout.ms=100
linger.ms=5
group.id=g
source.cluster.alias=site-a
transforms=x
topic.filter.class=com.example.Filter
topic.filter.class.unused=1
exactly.once.source.support=enabled
key.converter=org.apache.kafka.connect.storage.StringConverter
`, Options{})
	for key, substr := range map[string]string{
		"primay.bootstrap.servers":                     "primay is not a cluster alias listed in clusters (primary, secondary); did you mean primary.bootstrap.servers?",
		"PRIMARY.producer.linger.ms":                   "aliases are case-sensitive: did you mean primary.producer.linger.ms?",
		"primary.checkpoints.topic.replication.factor": "MM2 reads checkpoints.topic.replication.factor only at top level or per flow (e.g. primary->secondary.checkpoints.topic.replication.factor)",
		"primary.batch.size":                           "use primary.consumer.batch.size, primary.producer.batch.size or primary.admin.batch.size",
		"primary->secondry.topics":                     "not made of aliases listed in clusters",
		// A new user's try: one alias unlike any listed; with two
		// clusters only the other one can be meant.
		"primary->dr.enabled":                         "not made of aliases listed in clusters (primary, secondary); did you mean primary->secondary.enabled?",
		"primary->secondary.topics.auto.create":       "not an MM2 setting",
		"primary->secondary.tpoics":                   "did you mean primary->secondary.topics?",
		"primary->secondary.offset.flush.interval.ms": "set secondary.offset.flush.interval.ms",
		"producer.linger.ms":                          "ignored by MM2 at top level (top-level producer.* keys reach no client): set <alias>.producer.linger.ms",
		"linger.ms":                                   "ignored by MM2 at top level",
		"group.id":                                    "ignored by MM2 at top level",
		"source.cluster.alias":                        "overriding the source alias used in topic names",
		"transforms":                                  "Single Message Transforms cannot run in kmirror",
		"topic.filter.class":                          "custom topic filters cannot run in kmirror",
		"exactly.once.source.support":                 "set <target>.exactly.once.source.support=enabled, e.g. secondary.exactly.once.source.support=enabled",
		"key.converter":                               "kmirror copies records unchanged",
	} {
		if !hasWarning(c, key, substr) {
			t.Errorf("no warning %q for %s:\n%s", substr, key, strings.Join(warnings(c), "\n"))
		}
	}
	if !hasWarning(c, "primary.bootstrap.server", "did you mean primary.bootstrap.servers?") {
		t.Errorf("no suggestion for primary.bootstrap.server: %q", warnings(c))
	}
	// consumer.poll.timeout.ms is an MM2 connector key without effect.
	if hasWarning(c, "consumer.poll.timeout.ms", "") {
		t.Error("consumer.poll.timeout.ms warned")
	}
	var noEffect []string
	for _, n := range c.NoEffect {
		noEffect = append(noEffect, n.Key)
	}
	if !strings.Contains(strings.Join(noEffect, ","), "consumer.poll.timeout.ms") {
		t.Errorf("no-effect keys %q", noEffect)
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		in, o, key, want string
	}{
		{"topics=a", "", "clusters", "required"},
		{"clusters=", "", "clusters", "lists no cluster alias"},
		{"clusters=A,,B", "", "clusters", "empty alias"},
		// A new user's try (stop 38): "east west" was one alias, and the
		// message said east.bootstrap.servers had no effect.
		{"clusters = east west\neast.bootstrap.servers=a:9092", "", "clusters", `alias "east west" contains white space: separate the aliases with commas, clusters = east, west`},
		{"clusters=A,B\nA->A.enabled=true", "", "A->A.enabled", "two different clusters"},
		{"clusters=A,B\nA->B.enabled=true", "C", "--clusters", "not an alias"},
		{"clusters=A,B\nemit.heartbeats.enabled=maybe", "", "emit.heartbeats.enabled", "must be true or false"},
		{"clusters=A,B\nA.bootstrap.servers=${env:NOPE}\nconfig.providers=env\nconfig.providers.env.class=" + EnvVarConfigProvider, "", "A.bootstrap.servers", "environment variable NOPE is not set"},
		{"clusters=A,B\nconfig.providers=vault", "", "config.providers.vault.class", "has no class"},
		// Every placeholder that cannot be found, not only the first.
		{"clusters=A,B\nA.bootstrap.servers=${env:NOPE}:1,${env:ALSO}:2\nconfig.providers=env\nconfig.providers.env.class=" + EnvVarConfigProvider, "", "A.bootstrap.servers",
			"(line 2): ${env:NOPE}: environment variable NOPE is not set; ${env:ALSO}: environment variable ALSO is not set"},
	} {
		o := Options{}
		if tc.o != "" {
			o.OnlyTargets = []string{tc.o}
		}
		_, err := tryResolve(tc.in, o)
		var e *Error
		if !errors.As(err, &e) || e.Key != tc.key || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want key %s and %q", tc.in, err, tc.key, tc.want)
		}
	}
}

// TestNuFEmptyAliasSaysWhatToWrite: a trailing comma in clusters (MM2's
// list parsing keeps the empty item) was refused as "contains an empty
// alias" without the line to write instead.
func TestNuFEmptyAliasSaysWhatToWrite(t *testing.T) {
	for in, want := range map[string]string{
		"clusters = A, B,\nA->B.enabled = true": `mm2props: clusters="A, B," (line 1): contains an empty alias (a doubled or trailing comma): write clusters = A, B`,
		"clusters=A,,B":                         `mm2props: clusters="A,,B" (line 1): contains an empty alias (a doubled or trailing comma): write clusters = A, B`,
		"clusters= , ":                          `mm2props: clusters=", " (line 1): contains an empty alias`,
	} {
		if _, err := tryResolve(in, Options{}); err == nil || err.Error() != want {
			t.Errorf("%q: error\n%v\nwant\n%s", in, err, want)
		}
	}
}

// TestNuFTransformSettingsSayWhatTheyAre: the settings of a transform
// (A->B.transforms.drop.type, ...) warned "unknown flow setting: ignored",
// as a typo would, next to the transforms key's own warning.
func TestNuFTransformSettingsSayWhatTheyAre(t *testing.T) {
	c, err := tryResolve("clusters = A, B\nA->B.enabled = true\nA->B.transforms = drop\n"+
		"A->B.transforms.drop.type = org.apache.kafka.connect.transforms.DropHeaders\nA->B.transforms.drop.headers = secret\nA->B.predicates.p.type = x\n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"A->B.transforms: not supported: Single Message Transforms cannot run in kmirror: records are copied unchanged",
		"A->B.transforms.drop.type: not supported: configures a Single Message Transform (A->B.transforms), which kmirror does not run: records are copied unchanged",
		"A->B.transforms.drop.headers: not supported: configures a Single Message Transform (A->B.transforms), which kmirror does not run: records are copied unchanged",
		"A->B.predicates.p.type: not supported: configures a Single Message Transform (A->B.transforms), which kmirror does not run: records are copied unchanged",
	}
	if got := warnings(c); !slices.Equal(got, want) {
		t.Errorf("warnings\n%q\nwant\n%q", got, want)
	}
}

func TestConfigProviders(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	os.WriteFile(secrets, []byte("password = from-file\\\n  -continued\nuser=mm2\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "token"), []byte("dir-value"), 0o600)
	env := map[string]string{"SRC": "src.example.com:9092", "SECRET_PW": "env-pw", "OTHER": "x"}
	o := Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	c := resolve(t, `clusters=A,B
config.providers = env , file,dir
config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.env.param.allowlist.pattern=SRC|SECRET_.*
config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
config.providers.dir.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider
A.bootstrap.servers=${env:SRC}
A.sasl.jaas.config=x required username="${file:`+secrets+`:user}" password="${file:`+secrets+`:password}";
B.sasl.jaas.config=x required password="${env:SECRET_PW}" other="${vault:path:key}";
B.ssl.key.password=${dir:`+dir+`:token}
A->B.enabled=true
`, o)
	got := map[string]string{}
	for _, k := range []string{"A.bootstrap.servers", "A.sasl.jaas.config", "B.sasl.jaas.config", "B.ssl.key.password"} {
		got[k] = c.Settings[k].Value
	}
	want := map[string]string{
		"A.bootstrap.servers": "src.example.com:9092",
		"A.sasl.jaas.config":  `x required username="mm2" password="from-file-continued";`,
		"B.sasl.jaas.config":  `x required password="env-pw" other="${vault:path:key}";`,
		"B.ssl.key.password":  "dir-value",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !hasWarning(c, "B.sasl.jaas.config", `config provider "vault" is not declared`) {
		t.Errorf("warnings %q", warnings(c))
	}
	for _, tc := range []struct{ line, want string }{
		{"A.bootstrap.servers=${env:OTHER}", "not matched by config.providers.env.param.allowlist.pattern"},
		{"A.bootstrap.servers=${env:p:SRC}", "EnvVarConfigProvider takes no path"},
		{"A.bootstrap.servers=${file:" + secrets + ":nope}", "has no key nope"},
		{"A.bootstrap.servers=${file::x}", "needs a path"},
	} {
		_, err := tryResolve(`clusters=A,B
config.providers=env,file
config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.env.param.allowlist.pattern=SRC|SECRET_.*
config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
config.providers.file.param.allowed.paths=`+dir+`
`+tc.line, o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.line, err, tc.want)
		}
	}
	_, err := tryResolve("clusters=A\nconfig.providers=file\nconfig.providers.file.class="+FileConfigProvider+
		"\nconfig.providers.file.param.allowed.paths=/nonexistent\nA.x=${file:"+secrets+":user}", o)
	if err == nil || !strings.Contains(err.Error(), "allowed.paths") {
		t.Errorf("allowed.paths: %v", err)
	}
	// Without config.providers, placeholders stay literal (MM2 does the same).
	c = resolve(t, "clusters=A,B\nA.bootstrap.servers=${env:SRC}\nconfig.providers.env.class="+EnvVarConfigProvider, o)
	if v := c.Settings["A.bootstrap.servers"].Value; v != "${env:SRC}" {
		t.Errorf("undeclared provider resolved to %q", v)
	}
	if !hasWarning(c, "config.providers.env.class", "config.providers is not set") {
		t.Errorf("warnings %q", warnings(c))
	}
}

func TestDuplicateKeys(t *testing.T) {
	c := resolve(t, "clusters=A,B\ntopics=a\ntopics=b\nA->B.enabled=true", Options{})
	if s, _ := c.Flows[0].Get("topics"); s.Value != "b" || s.Line != 3 {
		t.Errorf("topics = %+v", s)
	}
	if !hasWarning(c, "topics", "set 2 times: the last one (line 3) wins") {
		t.Errorf("warnings %q", warnings(c))
	}
}

func TestLongestAliasMatch(t *testing.T) {
	c := resolve(t, "clusters=a,a.b,c\na.b.bootstrap.servers=x:1\na.bootstrap.servers=y:1\na.b->c.enabled=true\nemit.heartbeats.enabled=false", Options{})
	if got := c.Clusters["a.b"].Client["bootstrap.servers"].Value; got != "x:1" {
		t.Errorf("a.b bootstrap %q", got)
	}
	if got := c.Clusters["a"].Client["bootstrap.servers"].Value; got != "y:1" {
		t.Errorf("a bootstrap %q", got)
	}
	if diff := cmp.Diff([]flowSummary{{"a.b->c", true, false}}, flows(c)); diff != "" {
		t.Error(diff)
	}
}

func FuzzResolve(f *testing.F) {
	f.Add("clusters=A,B\nA->B.enabled=true\ntopics=x")
	f.Add("clusters=A,B\nconfig.providers=env\nconfig.providers.env.class=" + EnvVarConfigProvider + "\nA.x=${env:Y}")
	f.Add("clusters=a,a.b\na.b->a.enabled= true\nenabled=true")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := tryResolve(s, Options{ReadFile: func(string) ([]byte, error) { return nil, os.ErrNotExist }})
		if err != nil {
			var e *Error
			var se *SyntaxError
			if !errors.As(err, &e) && !errors.As(err, &se) {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		for _, f := range c.Flows {
			if f.Source == f.Target || c.Clusters[f.Source] == nil || c.Clusters[f.Target] == nil {
				t.Fatalf("bad flow %s", f.Name())
			}
		}
	})
}

// TestEverySpecKeyKnown: every key of docs/mm2-compat.md §9 (connector keys of the
// three MM2 connectors and dedicated-mode keys) is mapped, accepted
// without effect, or warned about with an explanation: none is reported as
// unknown, at top level or per flow.
func TestEverySpecKeyKnown(t *testing.T) {
	connector := []string{
		// 9.1
		"name", "connector.class", "tasks.max", "tasks.max.enforce", "key.converter", "value.converter", "header.converter",
		"transforms", "predicates", "config.action.reload", "errors.retry.timeout", "errors.retry.delay.max.ms", "errors.tolerance",
		"errors.log.enable", "errors.log.include.messages", "enabled", "source.cluster.alias", "target.cluster.alias",
		"admin.timeout.ms", "replication.policy.class", "replication.policy.separator",
		"replication.policy.internal.topic.separator.enabled", "forwarding.admin.class", "metric.reporters", "task.index",
		// 9.2
		"topics", "topics.exclude", "config.properties.exclude", "use.defaults.from", "topic.filter.class",
		"config.property.filter.class", "consumer.poll.timeout.ms", "refresh.topics.enabled", "refresh.topics.interval.seconds",
		"sync.topic.configs.enabled", "sync.topic.configs.interval.seconds", "sync.topic.acls.enabled",
		"sync.topic.acls.interval.seconds", "replication.factor", "offset-syncs.topic.replication.factor",
		"offset-syncs.topic.location", "offset.lag.max", "emit.offset-syncs.enabled", "heartbeats.replication.enabled",
		"task.assigned.partitions", "exactly.once.support", "transaction.boundary", "topics.blacklist",
		"config.properties.blacklist", "use.incremental.alter.configs", "add.source.alias.to.metrics",
		// 9.3
		"groups", "groups.exclude", "group.filter.class", "refresh.groups.enabled", "refresh.groups.interval.seconds",
		"emit.checkpoints.enabled", "emit.checkpoints.interval.seconds", "sync.group.offsets.enabled",
		"sync.group.offsets.interval.seconds", "checkpoints.topic.replication.factor", "task.assigned.groups", "groups.blacklist",
		// 9.4
		"emit.heartbeats.enabled", "emit.heartbeats.interval.seconds", "heartbeats.topic.replication.factor",
	}
	clientScoped := []string{"security.protocol", "ssl.truststore.location", "sasl.jaas.config", "sasl.mechanism",
		"source.cluster.bootstrap.servers", "target.cluster.security.protocol", "consumer.isolation.level",
		"producer.acks", "admin.request.timeout.ms", "source.consumer.fetch.max.bytes", "source.producer.acks",
		"source.admin.retries", "target.consumer.isolation.level", "target.producer.linger.ms", "target.admin.retries",
		"producer.override.acks"}
	top := []string{"clusters", "dedicated.mode.enable.internal.rest", "config.providers", "offset.storage.replication.factor",
		"offset.storage.topic", "config.storage.replication.factor", "status.storage.replication.factor",
		"offset.flush.interval.ms", "group.id", "listeners", "connector.client.config.override.policy"}
	cluster := []string{"bootstrap.servers", "security.protocol", "consumer.isolation.level", "producer.compression.type",
		"admin.request.timeout.ms", "offset.storage.replication.factor", "exactly.once.source.support",
		"offset.flush.interval.ms", "client.id", "group.id", "config.storage.replication.factor"}
	var b strings.Builder
	b.WriteString("clusters=A,B\nA->B.enabled=true\n")
	for _, k := range connector {
		if k == "enabled" {
			continue
		}
		v := "x"
		if IsBoolKey(k) {
			v = "true"
		}
		b.WriteString(k + "=" + v + "\nA->B." + k + "=" + v + "\n")
	}
	for _, k := range clientScoped {
		b.WriteString("A->B." + k + "=x\n")
	}
	for _, k := range top {
		if k != "clusters" && k != "config.providers" {
			b.WriteString(k + "=x\n")
		}
	}
	for _, k := range cluster {
		b.WriteString("A." + k + "=x\nB." + k + "=x\n")
	}
	b.WriteString("enabled=false\n")
	c := resolve(t, b.String(), Options{})
	for _, w := range c.Warnings {
		if strings.Contains(w.Message, "unknown") {
			t.Errorf("%s: %s", w.Key, w.Message)
		}
	}
}

func TestTopLevelUseDefaultsFrom(t *testing.T) {
	c := resolve(t, "clusters=A,B\nA->B.enabled=true\nuse.defaults.from=source", Options{})
	if s, _ := c.Flows[0].Get("use.defaults.from"); s.Value != "source" {
		t.Errorf("use.defaults.from = %q", s.Value)
	}
	if !hasWarning(c, "use.defaults.from", "MM2's dedicated mode drops a top-level use.defaults.from") {
		t.Errorf("warnings %q", warnings(c))
	}
}

// TestTopLevelSourceConnectorKeysWarn: MM2's MirrorMakerConfig keeps
// only the top-level keys MirrorMaker's connectors define, so it drops a
// top-level exactly.once.support, transaction.boundary and
// transaction.boundary.interval.ms (Connect's source-connector keys);
// kmirror applied them to every flow without a word. It still applies
// them, and warns; a value equal to MM2's default and the per-flow keys do
// not warn.
func TestTopLevelSourceConnectorKeysWarn(t *testing.T) {
	c := resolve(t, "clusters=A,B\nA->B.enabled=true\nexactly.once.support=required\ntransaction.boundary=interval\ntransaction.boundary.interval.ms=5000\n", Options{})
	for _, k := range []string{"exactly.once.support", "transaction.boundary", "transaction.boundary.interval.ms"} {
		if !hasWarning(c, k, "MM2's dedicated mode drops a top-level "+k) {
			t.Errorf("top-level %s: warnings %q, want one saying MM2 drops it", k, warnings(c))
		}
	}
	if s, _ := c.Flows[0].Get("exactly.once.support"); s.Value != "required" {
		t.Errorf("exactly.once.support = %q, want required applied to the flow", s.Value)
	}
	quiet := resolve(t, "clusters=A,B\nA->B.enabled=true\nexactly.once.support=requested\ntransaction.boundary=poll\nA->B.transaction.boundary=interval\n", Options{})
	for _, w := range warnings(quiet) {
		if strings.Contains(w, "drops a top-level") {
			t.Errorf("MM2's default values and per-flow keys: warning %q, want none", w)
		}
	}
}

// TestResolveEveryError: Resolve goes on after an error and reports each
// one, in line order, with the Config of the rest.
func TestResolveEveryError(t *testing.T) {
	text := "clusters = A, B\n" + // 1
		"config.providers = env, file\n" + // 2
		"config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n" + // 3
		"config.providers.env.param.allowlist.pattern = ([\n" + // 4
		"A->A.topics = x\n" + // 5
		"A->B.enabled = yes\n" + // 6
		"B->A.emit.heartbeats.enabled = no\n" + // 7
		"A.sasl.jaas.config = ${env:SECRET}\n" // 8: env is misconfigured: not resolved, no second error
	c, err := tryResolve(text, Options{OnlyTargets: []string{"B", "D"}})
	got := errorTexts(t, err)
	want := []string{
		`mm2props: config.providers.file.class (line 2): provider "file" is listed in config.providers but has no class`,
		`mm2props: config.providers.env.param.allowlist.pattern="([" (line 4): not a valid regular expression`,
		`mm2props: A->A.topics="x" (line 5): a flow needs two different clusters (source and target are both A)`,
		`mm2props: A->B.enabled="yes" (line 6): must be true or false`,
		`mm2props: B->A.emit.heartbeats.enabled="no" (line 7): must be true or false`,
		`mm2props: --clusters="D": not an alias listed in clusters (A, B)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
	if c == nil {
		t.Fatal("no Config with the errors")
	}
	// A->B.enabled=yes counts as true (its settings are checked too); only
	// targets B (--clusters B, D): B->A is left out.
	if d := cmp.Diff([]flowSummary{{"A->B", true, true}}, flows(c)); d != "" {
		t.Errorf("flows (-want +got):\n%s", d)
	}
	if _, err := tryResolve("config.providers = env\n", Options{}); err == nil || !strings.Contains(err.Error(), "config.providers.env.class") || !strings.Contains(err.Error(), "clusters: required") {
		t.Errorf("no clusters and a bad provider: %v, want both errors", err)
	}
}

// TestFlowKeySpaceAroundDotSuggestsKey: a space before or after the dot
// that follows the pair ("a->b .topics", "a->b. topics") ends the key at
// "a->b" or "a->b.": the first was said to be "not made of aliases listed
// in clusters (a, b)", the second an "unknown flow setting" without
// advice.
func TestFlowKeySpaceAroundDotSuggestsKey(t *testing.T) {
	c := resolve(t, "clusters=a,b\na.bootstrap.servers=x:1\nb.bootstrap.servers=x:1\na->b.enabled=true\n"+
		"a->b .topics = orders\nb->a. groups=g\na->b.=x\n", Options{})
	want := []string{
		"a->b: unknown setting: ignored; a flow's settings are written <source>-><target>.<setting> with no spaces: did you mean a->b.topics?",
		"b->a.: unknown setting: ignored; a flow's settings are written <source>-><target>.<setting> with no spaces: did you mean b->a.groups?",
		"a->b.: no setting after the cluster pair: ignored; a flow's settings are written <source>-><target>.<setting>, e.g. a->b.topics",
	}
	if diff := cmp.Diff(want, warnings(c)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestWhitelistKeysNameTheInclusionKey: MirrorMaker 1's whitelist, and the
// topics.whitelist / groups.whitelist people write by analogy with the
// deprecated *.blacklist keys, are no MM2 keys: they were "unknown
// setting: ignored" without advice, while every topic (or group) was
// replicated.
func TestWhitelistKeysNameTheInclusionKey(t *testing.T) {
	c := resolve(t, "clusters=a,b\na.bootstrap.servers=x:1\nb.bootstrap.servers=x:1\na->b.enabled=true\n"+
		"topics.whitelist=orders.*\na->b.groups.whitelist=app-.*\nwhitelist=payments\n", Options{})
	for key, substr := range map[string]string{
		"topics.whitelist":      "not an MM2 setting: list the topics to replicate in topics (regexes, comma-separated); without it MM2 and kmirror replicate every topic (.*)",
		"a->b.groups.whitelist": "not an MM2 setting: list the consumer groups to checkpoint in groups",
		"whitelist":             "not an MM2 setting (MirrorMaker 1's --whitelist): list the topics to replicate in topics",
	} {
		if !hasWarning(c, key, substr) {
			t.Errorf("no warning %q for %s:\n%s", substr, key, strings.Join(warnings(c), "\n"))
		}
	}
}

// TestHideProvided: a provided value is replaced by its placeholder where
// it stands as a word of its own, never inside a longer name.
func TestHideProvided(t *testing.T) {
	t.Parallel()
	s := Setting{Key: "A.client.id", Value: "a", Written: "${env:ID}", FromProvider: true}
	for in, want := range map[string]string{
		"bootstrap=alpha.example:9092 client.id=a": "bootstrap=alpha.example:9092 client.id=${env:ID}",
		"a":        "${env:ID}",
		"aa a-b a": "aa a-b ${env:ID}",
	} {
		if got := s.HideProvided(in); got != want {
			t.Errorf("HideProvided(%q) = %q, want %q", in, got, want)
		}
	}
	plain := Setting{Key: "A.client.id", Value: "a"}
	if got := plain.HideProvided("client.id=a"); got != "client.id=a" {
		t.Errorf("a value written in the file was replaced: %q", got)
	}
}

// TestHideProvidedPieces: the value of each placeholder, and each element
// of a provided list, is replaced by its placeholder (a message shows a
// list element by element, or one placeholder's value out of a longer
// value); a value is never replaced inside a placeholder written over a
// longer one.
func TestHideProvidedPieces(t *testing.T) {
	t.Parallel()
	const key = "A.sasl.jaas.config"
	p, _, err := newProviders(map[string]Setting{
		"config.providers":           {Key: "config.providers", Value: "env"},
		"config.providers.env.class": {Key: "config.providers.env.class", Value: EnvVarConfigProvider},
	}, &Options{LookupEnv: func(n string) (string, bool) {
		return map[string]string{"U": "svc", "L": "h1:9092, h2:9092", "E": "env"}[n], true
	}})
	if err != nil {
		t.Fatal(err)
	}
	resolved := func(v string) Setting {
		t.Helper()
		r, _, err := p.resolve(Setting{Key: key, Value: v})
		if err != nil || !r.FromProvider {
			t.Fatalf("resolve(%q): %+v, %v", v, r, err)
		}
		return r
	}
	for _, c := range []struct{ value, msg, want string }{
		{`M required username="${env:U}";`, `user "svc"`, `user "${env:U}"`},
		{"${env:L}", "bootstrap=h1:9092,h2:9092", "bootstrap=${env:L},${env:L}"},
		{"${env:L}", "seeds h1:9092, h2:9092", "seeds ${env:L}"},
		{"${env:E}:${env:U}", "env:svc and env", "${env:E}:${env:U} and ${env:E}"},
	} {
		if got := resolved(c.value).HideProvided(c.msg); got != c.want {
			t.Errorf("value %q: HideProvided(%q) = %q, want %q", c.value, c.msg, got, c.want)
		}
	}
}

// TestHideProvidedSettingsTogether: the values of several settings are
// hidden in one pass. Hiding them one setting after another let a later
// value ("env") match inside the placeholder an earlier one had just
// written ("${env:B}" became "${${env:E}:B}").
func TestHideProvidedSettingsTogether(t *testing.T) {
	t.Parallel()
	boot := Setting{Key: "A.bootstrap.servers", Value: "h1:9092", Written: "${env:B}", FromProvider: true,
		provided: []providedValue{{value: "h1:9092", placeholder: "${env:B}"}}}
	id := Setting{Key: "A.client.id", Value: "env", Written: "${env:E}", FromProvider: true,
		provided: []providedValue{{value: "env", placeholder: "${env:E}"}}}
	const want = "bootstrap=${env:B} client.id=${env:E}"
	if got := HideProvided("bootstrap=h1:9092 client.id=env", boot, id); got != want {
		t.Errorf("HideProvided = %q, want %q", got, want)
	}
}

// errorTexts returns the texts of the *Error values joined in err (one
// per bad setting), failing t on an error of another type.
func errorTexts(t *testing.T, err error) []string {
	t.Helper()
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var me *Error
		if !errors.As(e, &me) {
			t.Fatalf("%T %v is not an *Error", e, e)
		}
		got = append(got, me.Error())
	}
	return got
}
