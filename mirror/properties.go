package mirror

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/clientconf"
	"github.com/kmirror/kmirror/internal/mm2props"
)

// LoadOpt configures [LoadProperties] and [ParseProperties].
type LoadOpt interface{ applyLoad(*loadCfg) }

type loadFunc func(*loadCfg)

func (f loadFunc) applyLoad(c *loadCfg) { f(c) }

type loadCfg struct {
	onlyTargets []string
	lookupEnv   func(string) (string, bool)
	readFile    func(string) ([]byte, error)
}

// OnlyTargets is MM2's command-line option --clusters: only the herder
// pairs (flows) whose target is one of aliases are loaded, so several
// kmirror processes can split a configuration by target cluster. Every
// alias must be listed in `clusters`. Default: all pairs.
func OnlyTargets(aliases ...string) LoadOpt {
	return loadFunc(func(c *loadCfg) { c.onlyTargets = append(c.onlyTargets, aliases...) })
}

// WithLookupEnv sets how ${env:NAME} placeholders (EnvVarConfigProvider)
// and AWS_MSK_IAM credentials read environment variables. Default:
// os.LookupEnv.
func WithLookupEnv(lookup func(name string) (string, bool)) LoadOpt {
	return loadFunc(func(c *loadCfg) { c.lookupEnv = lookup })
}

// WithReadFile sets how files named by the configuration are read: PEM
// trust and key stores, OAuth token files and ${file:...}/${dir:...}
// placeholders. Default: os.ReadFile.
func WithReadFile(read func(path string) ([]byte, error)) LoadOpt {
	return loadFunc(func(c *loadCfg) { c.readFile = read })
}

// Warning is a setting of a properties file that MM2 or kmirror ignores,
// does not support, or reads differently than its author probably meant
// (misspelt keys name the closest valid key). Messages never contain
// secret values.
type Warning struct {
	Key     string // the key as written, e.g. "task.max" or "A->B.topics.auto.create"
	Line    int    // 1-based line in the file (0 if not from a line)
	Message string
}

// String returns "line N: key: message".
func (w Warning) String() string {
	if w.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", w.Line, w.Key, w.Message)
	}
	return fmt.Sprintf("%s: %s", w.Key, w.Message)
}

// Properties is an MM2 dedicated-mode configuration
// (connect-mirror-maker.properties) converted to engine options: one
// [ClusterConfig] per cluster alias taking part in a flow and one
// [FlowConfig] per herder pair (MirrorMakerConfig.clusterPairs: every
// ordered pair whose `S->T.enabled` is true or whose heartbeats are
// enabled; pairs that only exist for heartbeats have Disabled set). A Properties is immutable and
// safe for concurrent use.
type Properties struct {
	clusters  []ClusterConfig
	flows     []FlowConfig
	warnings  []Warning
	seeds     map[string][]string
	effective string
	settings  map[string]string // effective key -> value, secrets masked (FlowSettings)
	leftOut   []string          // flows OnlyTargets left out (OtherNodesFlows)
	// set maps a flow's effective key ("A->B.replication.factor") to the
	// file's setting that gives its value (SettingOf).
	set map[string]setAt
}

// setAt is where a file sets a value: its key as written and its line.
type setAt struct {
	key  string
	line int
}

// SettingOf returns the setting of the file that gives flow key key its
// value ("A->B.replication.factor", as [ConfigError.Key] names a flow's
// setting): the key as the file writes it ("replication.factor" at top
// level, "A->B.replication.factor") and its line (0 when not known). ok is
// false for a value the file does not set (a default). A runner uses it to
// trace an error found while running (a replication factor above the
// target's broker count) to the line to change.
func (p *Properties) SettingOf(key string) (fileKey string, line int, ok bool) {
	at, ok := p.set[key]
	return at.key, at.line, ok
}

// LoadProperties reads an MM2 properties file (path) the way MM2 does
// (java.util.Properties syntax, ISO-8859-1) and converts it: see
// [ParseProperties]. A file that cannot be read returns the *os.PathError.
func LoadProperties(path string, opts ...LoadOpt) (*Properties, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	return ParseProperties(bytes.NewReader(data), opts...)
}

// ParseProperties reads MM2 properties from r and converts them into
// engine options following MM2's dedicated mode (MirrorMakerConfig and the
// MirrorSourceConfig, MirrorCheckpointConfig and MirrorHeartbeatConfig
// keys): `clusters`, cluster settings `<alias>.*`
// (connection keys, `<alias>.consumer./producer./admin.*` client settings,
// `<alias>.offset.flush.interval.ms`), flow settings `<S>-><T>.*` over
// top-level settings, deprecated *.blacklist names, and config providers
// (${env:VAR}, ${file:path:key}, ${dir:path:file}) when declared in
// config.providers. tasks.max is [FlowConfig.Tasks]; the target cluster's
// worker settings session.timeout.ms, heartbeat.interval.ms and
// rebalance.timeout.ms are the flow's group settings. Exactly once
// (KIP-618): `<target>.exactly.once.source.support=enabled` turns on
// [FlowConfig.ExactlyOnce], transaction.boundary (poll or interval) and
// transaction.boundary.interval.ms set its transactions.
//
// Errors: a read error from r, or a *[ConfigErrors] listing every error of
// the file, in line order, each a *[ConfigError] naming the key, the line
// ("line N: " at the start of its Reason) and, unless secret, the value:
// missing or empty `clusters`, an alias the replication policy cannot use
// ([policy.ValidateAlias]), a flow key with the same source and target, a
// value that is not a number, boolean or known enum value, a regex Go
// cannot compile, bad security settings, a malformed \uXXXX escape, an
// unresolvable placeholder, or a --clusters alias ([OnlyTargets]) not in
// `clusters`. errors.As(err, &ce) with a *ConfigError finds the first.
// Settings that have no effect or are not supported are reported by
// [Properties.Warnings], not as errors, but for a value Kafka's client
// refuses of a consumer key kmirror does not apply (max.poll.records=0,
// session.timeout.ms=abc: MM2's connector fails to start on it), an error.
//
// Differences from MM2 (warned where a file relies on them; defaults are
// annotated in [Properties.Effective]):
//   - Booleans are trimmed everywhere: MM2's herder set-up reads
//     `A->B.enabled=true ` (trailing space) as false, its connectors as true.
//   - Deprecated topics.blacklist, groups.blacklist and
//     config.properties.blacklist are honoured when the new key is absent
//     (MM2 3.x; 4.0 ignores them).
//   - A top-level use.defaults.from applies to every flow (MM2 drops it),
//     and so do a top-level exactly.once.support, transaction.boundary and
//     transaction.boundary.interval.ms (MM2 drops these Connect
//     source-connector keys at top level: it needs them per flow).
//   - replication.policy.class also accepts the short names
//     DefaultReplicationPolicy and IdentityReplicationPolicy (MM2 cannot
//     load them).
//   - An unresolvable ${provider:...} placeholder is an error (MM2 keeps the
//     text and fails later, e.g. when authenticating with it).
//   - Replication factors left unset are -1 (the broker default); MM2 uses
//     2 for remote topics and 3 for internal topics.
//
// Not supported (warned, not applied): custom topic.filter.class,
// group.filter.class, config.property.filter.class and
// forwarding.admin.class; transforms and predicates; offset.storage.topic;
// converters other than
// ByteArrayConverter; source.cluster.alias / target.cluster.alias (topic
// names always use the aliases of `clusters`); per-flow client settings
// other than the replication consumer's auto.offset.reset,
// isolation.level, fetch.max.bytes and max.partition.fetch.bytes and the
// replication producer's buffer.memory (set `<alias>.consumer.*` /
// `<alias>.producer.*` instead); per-flow connection settings; the client
// keys interceptor.classes, transactional.id, ssl.engine.factory.class,
// sasl.client.callback.handler.class and sasl.login.class. Rejected with a
// *[ConfigError]: exactly.once.support=required without the target's
// exactly.once.source.support=enabled, and transaction.boundary=connector
// (MM2 refuses both connectors); a replication.policy.class other than the
// default and identity policies, sasl.mechanism GSSAPI, JKS and PKCS12 stores (the
// error gives the keytool/openssl commands to convert them to PEM), a
// config provider class other than EnvVarConfigProvider,
// FileConfigProvider and DirectoryConfigProvider when a placeholder uses
// it.
func ParseProperties(r io.Reader, opts ...LoadOpt) (*Properties, error) {
	var lc loadCfg
	for _, o := range opts {
		if o != nil {
			o.applyLoad(&lc)
		}
	}
	if lc.lookupEnv == nil {
		lc.lookupEnv = os.LookupEnv
	}
	if lc.readFile == nil {
		lc.readFile = os.ReadFile
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("mirror: reading properties: %w", err)
	}
	var errs []error
	entries, err := mm2props.Parse(bytes.NewReader(data))
	for _, e := range flatten(err) {
		var se *mm2props.SyntaxError
		if !errors.As(e, &se) {
			return nil, fmt.Errorf("mirror: %w", e)
		}
		key := se.Key
		if key == "" || mm2props.IsFragmentKey(key) {
			key = fmt.Sprintf("line %d", se.Line)
		}
		errs = append(errs, &ConfigError{Key: key, Reason: fmt.Sprintf("line %d: %s", se.Line, se.Msg)})
	}
	rc, err := mm2props.Resolve(entries, mm2props.Options{OnlyTargets: lc.onlyTargets, LookupEnv: lc.lookupEnv, ReadFile: lc.readFile})
	for _, e := range flatten(err) {
		errs = append(errs, propsConfigError(e))
	}
	if rc == nil {
		return nil, configErrors(errs)
	}
	b := &propsBuilder{rc: rc, lc: lc, p: &Properties{seeds: map[string][]string{}}, seen: map[string]bool{}, errs: errs}
	for _, e := range entries {
		if mm2props.IsFragmentKey(e.Key) || e.Line == 1 && strings.HasPrefix(e.Key, mm2props.Latin1BOM) {
			continue // warned about without showing it, or as a byte order mark
		}
		if strings.ContainsFunc(e.Key+e.Value, func(r rune) bool { return r >= 0x80 && r <= 0xff }) {
			b.warn(Warning{Key: e.Key, Line: e.Line, Message: "non-ASCII bytes: MM2 reads properties files as ISO-8859-1 (a UTF-8 é becomes Ã©), and so does kmirror; write non-ASCII characters as \\uXXXX escapes"})
		}
	}
	for _, w := range rc.Warnings {
		b.warn(Warning{Key: w.Key, Line: w.Line, Message: w.Message})
	}
	b.build()
	b.explainErrors()
	sort.SliceStable(b.p.warnings, func(i, j int) bool { return b.p.warnings[i].Line < b.p.warnings[j].Line })
	if err := configErrors(b.errs); err != nil {
		if ces, ok := err.(*ConfigErrors); ok {
			ces.Warnings = b.p.warnings
		}
		return nil, err
	}
	b.p.effective = b.dump()
	return b.p, nil
}

// Opts returns [WithCluster] for every cluster and [WithFlow] for every
// flow, ready for [New].
func (p *Properties) Opts() []Opt {
	var out []Opt
	for _, c := range p.clusters {
		out = append(out, WithCluster(c))
	}
	for _, f := range p.flows {
		out = append(out, WithFlow(f), WithFlowSettings(f.Name(), p.FlowSettings(f.Name())))
	}
	return out
}

// FlowSettings returns the effective configuration of flow ("source->target")
// as [Properties.Effective] shows it, key by key without the origin
// comments: the flow's keys ("<flow>.tasks.max", "<flow>.enabled", ...)
// and its two clusters' ("<alias>.client", "<alias>.security.protocol",
// ...), with secret values masked. The members of a flow publish it and
// compare it ([WithFlowSettings]). Nil for a flow not in Flows.
func (p *Properties) FlowSettings(flow string) map[string]string {
	var src, dst string
	for _, f := range p.flows {
		if f.Name() == flow {
			src, dst = f.Source, f.Target
		}
	}
	if src == "" {
		return nil
	}
	out := map[string]string{}
	for k, v := range p.settings {
		if strings.HasPrefix(k, flow+".") || strings.HasPrefix(k, src+".") || strings.HasPrefix(k, dst+".") {
			out[k] = v
		}
	}
	return out
}

// Clusters returns the clusters taking part in at least one flow, in the
// order of `clusters`.
func (p *Properties) Clusters() []ClusterConfig { return append([]ClusterConfig(nil), p.clusters...) }

// Flows returns one flow per herder pair, ordered by source then target
// in the order of `clusters`.
func (p *Properties) Flows() []FlowConfig { return append([]FlowConfig(nil), p.flows...) }

// OtherNodesFlows returns the names ("A->C") of the file's flows that
// [OnlyTargets] (MM2's --clusters) left out because their target is not
// listed: MM2 runs them on the nodes started with their target in
// --clusters. Nil without OnlyTargets.
func (p *Properties) OtherNodesFlows() []string { return slices.Clone(p.leftOut) }

// Warnings returns the warnings, ordered by line.
func (p *Properties) Warnings() []Warning { return append([]Warning(nil), p.warnings...) }

// BootstrapServers returns the bootstrap servers of alias
// (`<alias>.bootstrap.servers`, else the top-level bootstrap.servers), or
// nil for an alias not in Clusters.
func (p *Properties) BootstrapServers(alias string) []string {
	return append([]string(nil), p.seeds[alias]...)
}

// Effective returns the effective configuration as sorted "key = value"
// lines with the MM2 key names, each annotated with where the value came
// from (the key as written, "top level", or "default") and, for client
// settings, the franz-go option it became; then the warnings and the keys
// without effect. Secret values are shown as [hidden].
func (p *Properties) Effective() string { return p.effective }

// flatten returns the errors joined in err (errors.Join), err itself, or
// none when nil.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// propsConfigError converts internal errors into *ConfigError.
func propsConfigError(err error) error {
	var me *mm2props.Error
	if errors.As(err, &me) {
		v := me.Value
		if clientconf.IsSecret(me.Key) {
			v = ""
		}
		reason := me.Reason
		if me.Line > 0 {
			reason = fmt.Sprintf("line %d: %s", me.Line, reason)
		}
		key := me.Key
		if key == "" { // a line with an empty key ("=value")
			key = fmt.Sprintf("line %d", me.Line)
		}
		return &ConfigError{Key: key, Value: v, Reason: reason}
	}
	return err
}

type propsBuilder struct {
	rc   *mm2props.Config
	lc   loadCfg
	p    *Properties
	seen map[string]bool
	errs []error // see fail
	// lines of the effective dump: key -> "value  # origin"
	lines map[string]string
}

// explainErrors adds to an error about a key the warning that suggests
// that key ("a.bootstrap.servers: required" when line 3 sets
// a.bootstrap.server): the error alone does not show the misspelling,
// and no warning is printed when the file has errors.
func (b *propsBuilder) explainErrors() {
	for _, e := range b.errs {
		var ce *ConfigError
		if !errors.As(e, &ce) || ce.Key == "" {
			continue
		}
		for _, w := range b.p.warnings {
			if strings.Contains(w.Message, "did you mean "+ce.Key+"?") || strings.Contains(w.Message, "did you mean "+ce.Key+",") {
				ce.Reason += fmt.Sprintf("; line %d sets %s: did you mean %s?", w.Line, w.Key, ce.Key)
			}
		}
	}
}

func (b *propsBuilder) warn(w Warning) {
	id := fmt.Sprintf("%s\x00%s\x00%d", w.Key, w.Message, w.Line)
	if b.seen[id] {
		return
	}
	b.seen[id] = true
	b.p.warnings = append(b.p.warnings, w)
}

// derived starts the origin of a line of the effective configuration
// that summarises settings (the flow's delivery, a remote topic's name, a
// cluster's connection) under a name that is no key of its own: written
// into a properties file, it would be an unknown setting (a new user
// copied "A->B.exactly.once = true" from the dump).
const derived = "derived, not a key: "

func (b *propsBuilder) line(key, value, origin string) {
	if b.lines == nil {
		b.lines = map[string]string{}
	}
	value = clientconf.Mask(key, value)
	if b.p.settings == nil {
		b.p.settings = map[string]string{}
	}
	b.p.settings[key] = value
	// The dump is a properties file: a backslash is written doubled, so
	// that a value read back is the value shown (a regex's \. stays a
	// literal dot; the reader drops a lone backslash).
	value = strings.ReplaceAll(value, `\`, `\\`)
	if origin != "" {
		value += "    # " + origin
	}
	b.lines[key] = value
}

// lineShown is line for a value shown otherwise than it is (a config
// provider's value as its placeholder, Setting.Shown): the flow settings
// the members publish and compare carry a fingerprint of the value
// itself, so that members whose providers answer differently (an
// environment variable set apart on each) still show a mismatch.
func (b *propsBuilder) lineShown(key, shown, actual, origin string) {
	b.line(key, shown, origin)
	if shown != actual && !clientconf.IsSecret(key) {
		sum := sha256.Sum256([]byte(actual))
		b.p.settings[key] = shown + " (provided value sha256:" + hex.EncodeToString(sum[:4]) + ")"
	}
}

// build maps the clusters and flows; errors are recorded with fail.
func (b *propsBuilder) build() {
	used := map[string]bool{}
	for _, f := range b.rc.Flows {
		used[f.Source], used[f.Target] = true, true
	}
	for _, a := range b.rc.Aliases {
		if !used[a] {
			b.line(a, "", "takes part in no flow on this node: not configured")
			continue
		}
		if cc, ok := b.cluster(b.rc.Clusters[a]); ok {
			b.p.clusters = append(b.p.clusters, cc)
		}
	}
	for _, f := range b.rc.Flows {
		b.p.flows = append(b.p.flows, b.flow(f))
	}
	b.p.leftOut = b.rc.LeftOut
	switch {
	case len(b.rc.Flows) == 0 && len(b.rc.LeftOut) > 0:
		targets := []string{}
		for _, f := range b.rc.LeftOut {
			if t := f[strings.Index(f, "->")+2:]; !slices.Contains(targets, t) {
				targets = append(targets, t)
			}
		}
		b.warn(Warning{Key: "--clusters", Message: fmt.Sprintf("no flow on this node: --clusters %s names no flow's target; the file's flows %s go into %s (list those in --clusters, or leave it out to run every flow)",
			strings.Join(b.lc.onlyTargets, ","), strings.Join(b.rc.LeftOut, ", "), strings.Join(targets, ", "))})
	case len(b.rc.Flows) == 0:
		b.warn(Warning{Key: "clusters", Message: "no flow: no pair has <source>-><target>.enabled=true or heartbeats enabled (on this node)"})
	}
}

// fail records a configuration error (nil is ignored); errors that are
// not *ConfigError are kept as they are.
func (b *propsBuilder) fail(err error) {
	if err != nil {
		b.errs = append(b.errs, err)
	}
}

// propsValues returns the values of a settings map and a function mapping
// a client key back to the setting it came from.
func propsValues(m map[string]mm2props.Setting) (map[string]string, func(string) mm2props.Setting) {
	vals := make(map[string]string, len(m))
	for k, s := range m {
		vals[k] = s.Value
	}
	return vals, func(k string) mm2props.Setting { return m[k] }
}

// failClient records the errors of clientconf.Build: one, or each of
// those it joined (every bad client key of a role, where only the first
// was reported).
func (b *propsBuilder) failClient(err error, origin func(string) mm2props.Setting, prefix string) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			b.fail(b.clientError(e, origin, prefix))
		}
		return
	}
	b.fail(b.clientError(err, origin, prefix))
}

func (b *propsBuilder) clientError(err error, origin func(string) mm2props.Setting, prefix string) error {
	var ce *clientconf.Error
	if !errors.As(err, &ce) {
		return err
	}
	key := prefix + ce.Key
	s := origin(ce.Key)
	if s.Key != "" {
		key = s.Key
	}
	v := providedAsWritten(s, ce.Value)
	if clientconf.IsSecret(key) {
		v = ""
	}
	return &ConfigError{Key: key, Value: v, Reason: settingReason(s, ce.Reason)}
}

func (b *propsBuilder) clientWarnings(ws []clientconf.Warning, origin func(string) mm2props.Setting, prefix string) {
	for _, w := range ws {
		s := origin(w.Key)
		key := s.Key
		if key == "" {
			key = prefix + w.Key
		}
		b.warn(Warning{Key: key, Line: s.Line, Message: s.HideProvided(w.Message)})
	}
}

func (b *propsBuilder) env() clientconf.Env {
	return clientconf.Env{LookupEnv: b.lc.lookupEnv, ReadFile: b.lc.readFile}
}

// cluster builds a ClusterConfig. Connection options go to Client when all
// roles agree on them; a role with its own connection settings
// (`<alias>.consumer.security.protocol`, ...) gets complete connection
// options of its own, and SASL moves from Client to the roles (franz-go
// appends SASL mechanisms, so a role could not replace Client's). Errors
// are recorded with fail; ok is false after one.
func (b *propsBuilder) cluster(c *mm2props.Cluster) (cc ClusterConfig, ok bool) {
	a := c.Alias
	cc = ClusterConfig{Alias: a}
	vals, origin := propsValues(c.Client)
	base, err := clientconf.Build(clientconf.Client, vals, b.env())
	if err != nil {
		b.failClient(err, origin, a+".")
		return cc, false // the roles inherit the same settings: nothing more to learn
	}
	ok = true
	b.clientWarnings(base.Warnings, origin, a+".")
	if len(base.Conn.Seeds) == 0 {
		b.fail(&ConfigError{Key: a + ".bootstrap.servers", Reason: "required: set " + a + ".bootstrap.servers (or a top-level bootstrap.servers)"})
		ok = false
	}
	b.p.seeds[a] = base.Conn.Seeds
	for _, l := range base.Lines {
		b.lineShown(origin(l.Key).Key, providedAsWritten(origin(l.Key), l.Value), l.Value, hideProvided(propsEffect(origin(l.Key).Key, a+"."+l.Key, l.Effect), c.Client))
	}
	baseFP := clientconf.Fingerprint(vals)
	type roleOut struct {
		role  clientconf.Role
		m     map[string]mm2props.Setting
		dst   *[]kgo.Opt
		built *clientconf.Built
		same  bool
	}
	roles := []*roleOut{
		{role: clientconf.Consumer, m: c.Consumer, dst: &cc.Consumer},
		{role: clientconf.Producer, m: c.Producer, dst: &cc.Producer},
		{role: clientconf.Admin, m: c.Admin, dst: &cc.Admin},
	}
	saslDiffers := false
	for _, r := range roles {
		rv, rorigin := propsValues(r.m)
		built, err := clientconf.Build(r.role, rv, b.env())
		if err != nil {
			b.failClient(err, rorigin, a+"."+r.role.String()+".")
			ok = false
			continue
		}
		r.built = built
		r.same = clientconf.Fingerprint(rv) == baseFP
		if !r.same && (built.Conn.Protocol != base.Conn.Protocol || propsSASLKeys(rv) != propsSASLKeys(vals)) {
			saslDiffers = true
		}
		b.clientWarnings(built.Warnings, rorigin, a+"."+r.role.String()+".")
		for _, l := range built.Lines {
			s := rorigin(l.Key)
			if !strings.HasPrefix(s.Key, a+"."+r.role.String()+".") && s.Key != "" {
				continue // inherited connection key, shown once above
			}
			b.lineShown(s.Key, providedAsWritten(s, l.Value), l.Value, hideProvided(propsEffect(s.Key, a+"."+r.role.String()+"."+l.Key, l.Effect), c.Client, r.m))
		}
	}
	if !ok {
		return cc, false
	}
	conn := base.Conn
	if saslDiffers {
		conn.SASL = nil
	}
	cc.Client = conn.Opts()
	for _, r := range roles {
		switch {
		case !r.same:
			*r.dst = append(r.built.Conn.Opts(), r.built.Tuning...)
			sum := propsConnSummary(r.built.Conn)
			b.lineShown(a+"."+r.role.String(), hideProvided(sum, c.Client, r.m), sum, "own connection settings")
		case saslDiffers && r.built.Conn.SASL != nil:
			*r.dst = append([]kgo.Opt{kgo.SASL(r.built.Conn.SASL)}, r.built.Tuning...)
		default:
			*r.dst = r.built.Tuning
		}
	}
	sum := propsConnSummary(base.Conn)
	b.lineShown(a+".client", hideProvided(sum, c.Client), sum, derived+"connection of every client of "+a)
	return cc, true
}

// hideProvided replaces in msg every value a config provider supplied to
// a setting of ms with its placeholder as written, in one pass
// (mm2props.HideProvided).
func hideProvided(msg string, ms ...map[string]mm2props.Setting) string {
	var ss []mm2props.Setting
	for _, m := range ms {
		for _, s := range m {
			ss = append(ss, s)
		}
	}
	return mm2props.HideProvided(msg, ss...)
}

// propsSASLKeys identifies the SASL settings of a settings map.
func propsSASLKeys(m map[string]string) string {
	var keys []string
	for k, v := range m {
		if strings.HasPrefix(k, "sasl.") {
			keys = append(keys, k+"="+v)
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, "\n")
}

func propsEffect(written, effective, effect string) string {
	origin := written
	if written == "" {
		origin = effective
	}
	if written != effective && written != "" {
		origin = "from " + written
	}
	if effect == "" {
		return origin
	}
	if origin == effective {
		return effect
	}
	return origin + "; " + effect
}

func propsConnSummary(c clientconf.Conn) string {
	s := fmt.Sprintf("bootstrap=%s protocol=%s", strings.Join(c.Seeds, ","), c.Protocol)
	if c.ClientID != "" {
		s += " client.id=" + c.ClientID
	}
	if c.Mechanism != "" {
		s += " sasl=" + c.Mechanism
		if c.User != "" {
			s += fmt.Sprintf(" user=%q", c.User)
		}
	}
	if c.TLSSummary != "" {
		s += " tls=(" + c.TLSSummary + ")"
	}
	return s
}

// flowValue records a flow setting for the dump and returns it.
type flowReader struct {
	b    *propsBuilder
	f    *mm2props.Flow
	name string
}

// get returns the effective setting of a connector key, recording its
// origin in the dump under "<S>-><T>.<key>".
func (r flowReader) get(key string) (mm2props.Setting, bool) {
	s, ok := r.f.Get(key)
	if ok {
		origin := s.Key
		if s.Key == key {
			origin = "top level"
		}
		if r.b.p.set == nil {
			r.b.p.set = map[string]setAt{}
		}
		r.b.p.set[r.name+"."+key] = setAt{key: s.Key, line: s.Line}
		r.b.lineShown(r.name+"."+key, strings.TrimSpace(s.Shown()), strings.TrimSpace(s.Value), origin)
	}
	return s, ok
}

func (r flowReader) def(key, value string) {
	r.b.line(r.name+"."+key, value, "default")
}

func propsErr(s mm2props.Setting, format string, args ...any) error {
	v := s.Shown()
	if clientconf.IsSecret(s.Key) {
		v = ""
	}
	return &ConfigError{Key: s.Key, Value: v, Reason: settingReason(s, fmt.Sprintf(format, args...))}
}

// settingReason is msg, about setting s, for a ConfigError: the values a
// config provider supplied hidden, a note when s still holds a placeholder
// no provider replaced (the value checked is that text), and the line.
func settingReason(s mm2props.Setting, msg string) string {
	msg = s.HideProvided(msg)
	if p := mm2props.Unresolved(s); p != "" {
		msg += fmt.Sprintf(" (the value still holds the placeholder %s, which no config provider replaced: see the message about config.providers)", p)
	}
	return withLine(s.Line, msg)
}

// providedAsWritten returns v, the effective value of setting s for a
// dump, or the value as the file writes it when a config provider
// supplied it (its ${provider:...} placeholder, as Kafka Connect shows).
func providedAsWritten(s mm2props.Setting, v string) string {
	if s.FromProvider {
		return strings.TrimSpace(s.Written)
	}
	return v
}

// withLine prefixes reason with "line N: " (line > 0).
func withLine(line int, reason string) string {
	if line <= 0 {
		return reason
	}
	return fmt.Sprintf("line %d: %s", line, reason)
}

// reasonLine is the line a reason starts with ("line N: "), or 0.
func reasonLine(reason string) int {
	var n int
	if _, err := fmt.Sscanf(reason, "line %d:", &n); err != nil {
		return 0
	}
	return n
}

// ConfigErrors is every error of a properties file, ordered by line (errors
// that concern no single line, such as a missing bootstrap.servers, come
// last). [ParseProperties] and [LoadProperties] return it, as a
// *ConfigErrors, when a file has at least one error, so that all of them
// can be fixed in one go; [New] returns it when it finds more than one
// error in its options (in the order of the clusters, the flows and each
// flow's fields, with no line numbers). Each error's Reason starts with "line N: " when
// it concerns line N of the file. errors.As(err, &ce), with ce a
// *[ConfigError], finds the first one.
type ConfigErrors struct {
	Errs []*ConfigError
	// Warnings are the file's warnings found along with the errors (those
	// [Properties.Warnings] would return once the errors are fixed), by
	// line, so that a file's every problem can be shown at once. Nil when
	// reading stopped before the settings could be judged (a syntax error
	// in `clusters`, say). Error does not include them.
	Warnings []Warning
}

// Error returns the single error's message, or "mirror: N configuration
// errors:" followed by one error per line, indented by a tab.
func (e *ConfigErrors) Error() string {
	if len(e.Errs) == 1 {
		return e.Errs[0].Error()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "mirror: %d configuration errors:", len(e.Errs))
	for _, ce := range e.Errs {
		sb.WriteString("\n\t" + strings.TrimPrefix(ce.Error(), "mirror: "))
	}
	return sb.String()
}

// Unwrap returns the errors, for errors.Is and errors.As.
func (e *ConfigErrors) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, ce := range e.Errs {
		out[i] = ce
	}
	return out
}

// configErrors converts the errors found into a *ConfigErrors (duplicates,
// such as a bad top-level key read by every flow, once; a setting of the
// file refused by two checks, such as a client key's range and its flow
// mapping, or a placeholder no config provider could resolve and then the
// placeholder itself as a value, once, by the first), or returns the
// first error that is not a *ConfigError.
func configErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	out := &ConfigErrors{}
	seen := map[string]bool{}
	for _, err := range errs {
		var ce *ConfigError
		if !errors.As(err, &ce) {
			return err
		}
		id := ce.Error()
		if n := reasonLine(ce.Reason); n > 0 {
			id = fmt.Sprintf("%s@%d", ce.Key, n)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		out.Errs = append(out.Errs, ce)
	}
	// By line; errors of no single line (line 0) last.
	order := func(ce *ConfigError) int {
		if n := reasonLine(ce.Reason); n > 0 {
			return n
		}
		return math.MaxInt
	}
	sort.SliceStable(out.Errs, func(i, j int) bool { return order(out.Errs[i]) < order(out.Errs[j]) })
	return out
}

func (r flowReader) boolean(key string, def bool) (bool, error) {
	s, ok := r.get(key)
	if !ok {
		r.def(key, strconv.FormatBool(def))
		return def, nil
	}
	v, err := mm2props.ParseBool(s)
	if err != nil {
		return false, propsErr(s, "must be true or false")
	}
	return v, nil
}

// list reads a Connect LIST of regexes; nil when not set.
func (r flowReader) list(key string, def string) ([]string, mm2props.Setting) {
	s, ok := r.get(key)
	if !ok {
		r.def(key, def)
		return nil, mm2props.Setting{Key: key}
	}
	l := clientconf.ParseList(s.Value)
	switch {
	case len(l) == 0:
		r.b.warn(Warning{Key: s.Key, Line: s.Line, Message: "empty list: no name matches"})
	case !slices.ContainsFunc(l, func(x string) bool { return x != "" }):
		// "," is two empty regexes, as in MM2: they match only the
		// empty name.
		r.b.warn(Warning{Key: s.Key, Line: s.Line, Message: "only empty items: no name matches"})
	}
	return l, s
}

// seconds reads an interval in seconds: negative disables the feature (as
// MM2's scheduler skips negative intervals), zero is an error
// (zeroIntervalInMM2 says what MM2 does with it).
func (r flowReader) seconds(key string, dst *time.Duration, disable *bool, def time.Duration) error {
	s, ok := r.get(key)
	if !ok {
		r.def(key, strconv.FormatInt(int64(def/time.Second), 10))
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s.Value), 10, 64)
	if err != nil {
		return propsErr(s, "%s", clientconf.NotWholeNumber(s.Value, time.Second, "seconds"))
	}
	switch {
	case n == 0:
		return propsErr(s, "an interval of 0 is invalid (%s); use a positive number of seconds, or a negative one to disable", zeroIntervalInMM2(key))
	case n < 0:
		if disable == nil {
			return propsErr(s, "must be positive")
		}
		*disable = true
		r.b.warn(Warning{Key: s.Key, Line: s.Line, Message: "a negative interval disables the task, as in MM2"})
		return nil
	case n > math.MaxInt64/int64(time.Second):
		return propsErr(s, "too large")
	}
	*dst = time.Duration(n) * time.Second
	return nil
}

func propsMillis(s mm2props.Setting) (time.Duration, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s.Value), 10, 64)
	if err != nil {
		return 0, propsErr(s, "%s", clientconf.NotWholeNumber(s.Value, time.Millisecond, "milliseconds"))
	}
	if n <= 0 {
		return 0, propsErr(s, "must be positive")
	}
	if n > math.MaxInt64/int64(time.Millisecond) {
		return 0, propsErr(s, "too large")
	}
	return time.Duration(n) * time.Millisecond, nil
}

// rf reads a replication factor (Kafka short; -1 = broker default).
func (r flowReader) rf(key string, dst *int16, mm2Default string) error {
	s, ok := r.get(key)
	if !ok {
		r.b.line(r.name+"."+key, "-1", "kmirror default: the target's default.replication.factor (MM2: "+mm2Default+")")
		return nil
	}
	return propsRF(s, dst)
}

func propsRF(s mm2props.Setting, dst *int16) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s.Value), 10, 16)
	if err != nil {
		return propsErr(s, "not a replication factor (a whole number up to 32767, or -1 for the broker default)")
	}
	if n == 0 || n < -1 {
		return propsErr(s, "must be positive, or -1 for the broker default")
	}
	*dst = int16(n)
	return nil
}

func (r flowReader) enum(key, def string, allowed ...string) (string, error) {
	s, ok := r.get(key)
	if !ok {
		r.def(key, def)
		return def, nil
	}
	v := strings.ToLower(strings.TrimSpace(s.Value))
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", propsErr(s, "must be one of %s", strings.Join(allowed, ", "))
}

func propsOrigin(f *mm2props.Flow, key, def string) string {
	s, ok := f.Get(key)
	if !ok {
		return def
	}
	if s.Key == key {
		return "top level"
	}
	return s.Key
}

// dump renders the effective configuration.
func (b *propsBuilder) dump() string {
	var sb strings.Builder
	sb.WriteString("# kmirror effective configuration (MM2 key names; a line marked \"" + strings.TrimSuffix(derived, ": ") + "\" summarises settings and cannot be written in a file; secrets shown as " + clientconf.Masked + ")\n")
	fmt.Fprintf(&sb, "clusters = %s\n", strings.Join(b.rc.Aliases, ", "))
	keys := make([]string, 0, len(b.lines))
	for k := range b.lines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s = %s\n", k, b.lines[k])
	}
	if len(b.p.warnings) > 0 {
		sb.WriteString("\n# warnings\n")
		for _, w := range b.p.warnings {
			fmt.Fprintf(&sb, "# %s\n", w)
		}
	}
	if len(b.rc.NoEffect) > 0 {
		sb.WriteString("\n# accepted without effect in kmirror\n")
		for _, n := range b.rc.NoEffect {
			fmt.Fprintf(&sb, "# line %d: %s: %s\n", n.Line, n.Key, n.Reason)
		}
	}
	return sb.String()
}

// zeroIntervalInMM2 says what MM2 does with an interval of 0 seconds under
// key: its heartbeat and checkpoint tasks wait the interval between two
// emissions (MirrorHeartbeatTask, MirrorCheckpointTask), so 0 emits
// without pause; its other periodic jobs go through its Scheduler, whose
// executor refuses a period of 0, and the connector fails to start.
func zeroIntervalInMM2(key string) string {
	switch key {
	case "emit.heartbeats.interval.seconds", "emit.checkpoints.interval.seconds":
		return "MM2 then emits without pause, as fast as the target accepts"
	}
	return "MM2's scheduler refuses a period of 0 and the connector fails to start"
}
