package mm2props

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/kmirror/kmirror/internal/clientconf"
)

// Options configure [Resolve].
type Options struct {
	// OnlyTargets is MM2's --clusters: only herders whose target is listed
	// run on this node. Empty means all.
	OnlyTargets []string
	// LookupEnv reads environment variables for ${env:...} placeholders
	// (EnvVarConfigProvider). Default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// ReadFile reads files for ${file:...} and ${dir:...} placeholders.
	// Default os.ReadFile.
	ReadFile func(string) ([]byte, error)
}

// Setting is one effective value and where it was written.
type Setting struct {
	// Key is the full key in the file, e.g. "A->B.topics" or "topics".
	Key string
	// Value is the value after config-provider substitution, untrimmed.
	Value string
	// Line is the 1-based line of the key in the file.
	Line int
	// FromProvider reports that a ${provider:...} placeholder was replaced.
	FromProvider bool
	// Written is the value as the file writes it, placeholders and all,
	// when FromProvider (else empty): what dumps and messages show instead
	// of Value, as Kafka Connect shows a connector's configuration with
	// its placeholders (a provider's value is often a secret under a key
	// that does not say so).
	Written string
	// provided: the value each placeholder of Written supplied
	// (HideProvided).
	provided []providedValue
}

// Shown returns what a dump or message may show of s's value: Written
// when a config provider supplied it, else Value.
func (s Setting) Shown() string {
	if s.FromProvider {
		return s.Written
	}
	return s.Value
}

// providedValue is a value one placeholder of a setting supplied, with the
// placeholder as written.
type providedValue struct{ value, placeholder string }

// HideProvided is the package function [HideProvided] for s alone.
func (s Setting) HideProvided(msg string) string { return HideProvided(msg, s) }

// HideProvided replaces, in msg, each occurrence of a value a config
// provider supplied to one of ss that stands as a word of its own (not
// inside a longer name or number): a whole value, by the value as written;
// the value of each placeholder, and each comma-separated element of it (a
// broker or topic list a message shows element by element), by its
// placeholder. One pass over msg takes the longest value at each place, so
// that a value is never cut by a shorter one, nor a placeholder written
// over by another setting's value. msg is returned as it is when no
// setting has a provided value.
func HideProvided(msg string, ss ...Setting) string {
	type pair struct{ find, with string }
	var pairs []pair
	for _, s := range ss {
		if !s.FromProvider {
			continue
		}
		pairs = append(pairs, pair{strings.TrimSpace(s.Value), strings.TrimSpace(s.Written)})
		for _, p := range s.provided {
			pairs = append(pairs, pair{strings.TrimSpace(p.value), p.placeholder})
			if strings.Contains(p.value, ",") {
				for _, e := range strings.Split(p.value, ",") {
					pairs = append(pairs, pair{strings.TrimSpace(e), p.placeholder})
				}
			}
		}
	}
	if len(pairs) == 0 {
		return msg
	}
	word := func(b byte) bool {
		return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	var out strings.Builder
	for i := 0; i < len(msg); {
		best := -1
		for k, p := range pairs {
			j := i + len(p.find)
			if p.find == "" || !strings.HasPrefix(msg[i:], p.find) || (best >= 0 && len(p.find) <= len(pairs[best].find)) ||
				(i > 0 && word(msg[i-1])) || (j < len(msg) && word(msg[j])) {
				continue
			}
			best = k
		}
		if best < 0 {
			out.WriteByte(msg[i])
			i++
			continue
		}
		out.WriteString(pairs[best].with)
		i += len(pairs[best].find)
	}
	return out.String()
}

// Warning is a setting MM2 or kmirror ignores, or reads differently than
// its author probably meant. Messages never contain secret values.
type Warning struct {
	Key     string
	Line    int
	Message string
}

// Note is a key accepted without effect in kmirror.
type Note struct {
	Key    string
	Line   int
	Reason string
}

// Error is a configuration MM2 or kmirror cannot run. Value is shown only
// when the key is not secret.
type Error struct {
	Key    string
	Value  string
	Line   int
	Reason string
}

func (e *Error) Error() string {
	v := e.Value
	if clientconf.IsSecret(e.Key) {
		v = ""
	}
	loc := ""
	if e.Line > 0 {
		loc = fmt.Sprintf(" (line %d)", e.Line)
	}
	if v == "" {
		return fmt.Sprintf("mm2props: %s%s: %s", e.Key, loc, e.Reason)
	}
	return fmt.Sprintf("mm2props: %s=%q%s: %s", e.Key, v, loc, e.Reason)
}

// Cluster holds the settings of one cluster alias.
type Cluster struct {
	Alias string
	// Client holds the connection keys (bootstrap.servers,
	// security.protocol, ssl.*, sasl.*: `<alias>.<key>`, else the
	// top-level key, as MM2's clusterProps) and `<alias>.client.id`.
	Client map[string]Setting
	// Consumer, Producer and Admin hold `<alias>.<role>.<key>`, completed
	// with Client's connection keys where absent (docs/mm2-compat.md §9.5).
	Consumer, Producer, Admin map[string]Setting
	// Worker holds the worker settings of herders targeting this cluster
	// that kmirror maps: offset.flush.interval.ms and
	// offset.storage.replication.factor (a top-level
	// offset.storage.replication.factor wins, as in MM2's workerConfig).
	Worker map[string]Setting
}

// Flow is one herder pair source->target (docs/mm2-compat.md §7).
type Flow struct {
	Source, Target string
	// Enabled is `enabled` (flow key, else top level, else false): the
	// flow replicates. A herder with Enabled false exists for heartbeats.
	Enabled bool
	// Heartbeats is emit.heartbeats.enabled (flow, else top level, else true).
	Heartbeats bool
	// SourceConsumer holds the replication consumer settings kmirror
	// honours per flow ([FlowSourceConsumerKeys]), by MM2's precedence:
	// `S->T.source.consumer.k` > `S.consumer.k` > `S->T.consumer.k`.
	SourceConsumer map[string]Setting
	// TargetProducer holds the replication producer settings kmirror
	// honours per flow ([FlowTargetProducerKeys]):
	// `S->T.producer.override.k` > `T.producer.k`.
	TargetProducer map[string]Setting

	settings map[string]Setting
}

// Name returns "source->target".
func (f *Flow) Name() string { return f.Source + "->" + f.Target }

// Get returns the effective connector setting key for the flow: the flow
// key, else the top-level key; deprecated aliases are already translated
// (Get("topics.exclude") returns a topics.blacklist value when only that
// is set).
func (f *Flow) Get(key string) (Setting, bool) {
	s, ok := f.settings[key]
	return s, ok
}

// Config is a resolved MM2 dedicated-mode configuration.
type Config struct {
	// Aliases is `clusters`, in file order, without duplicates.
	Aliases []string
	// Clusters by alias.
	Clusters map[string]*Cluster
	// Flows are the herder pairs (after OnlyTargets), ordered by source
	// then target in Aliases order.
	Flows []*Flow
	// LeftOut names the herder pairs OnlyTargets left out ("A->C"), in
	// the order of Flows: they run on the nodes whose --clusters lists
	// their target.
	LeftOut []string
	// Warnings, sorted by line.
	Warnings []Warning
	// NoEffect lists keys accepted without effect in kmirror, by line.
	NoEffect []Note
	// Settings holds every effective key of the file (after
	// config-provider substitution), for dumps.
	Settings map[string]Setting
}

type resolver struct {
	o       Options
	cfg     *Config
	all     map[string]Setting
	aliases map[string]bool

	topConn   map[string]Setting // top-level connector keys
	topClient map[string]Setting // top-level connection keys
	topWorker map[string]Setting // top-level mapped worker keys
	clusters  map[string]*clusterRaw
	flows     map[[2]string]map[string]Setting
	warned    map[string]bool
	errs      []error // every error found, see fail
}

type clusterRaw struct {
	client, worker     map[string]Setting
	consumer, producer map[string]Setting
	admin              map[string]Setting
}

// Resolve applies MM2's dedicated-mode rules (MirrorMakerConfig, docs/mm2-compat.md §7
// and 9.5) to the entries of a properties file. Its error joins (with
// errors.Join) one *[Error] per problem that keeps the configuration from
// running: no or empty `clusters`, a flow key with equal source and
// target, an unknown --clusters alias, a bad herder boolean, a
// misconfigured config provider, or a placeholder that cannot be
// resolved. Resolve goes on after an error so that every one is reported:
// unless `clusters` is missing or empty (then the Config is nil), it also
// returns the Config resolved from the other settings (a bad herder
// boolean counting as true), for further checks.
func Resolve(entries []Entry, o Options) (*Config, error) {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.ReadFile == nil {
		o.ReadFile = os.ReadFile
	}
	r := &resolver{o: o, cfg: &Config{Clusters: map[string]*Cluster{}}, all: map[string]Setting{},
		aliases: map[string]bool{}, topConn: map[string]Setting{}, topClient: map[string]Setting{},
		topWorker: map[string]Setting{}, clusters: map[string]*clusterRaw{},
		flows: map[[2]string]map[string]Setting{}, warned: map[string]bool{}}
	entries, bomKey := r.dropBOM(entries)
	entries = r.dropFragments(entries)
	count := map[string]int{}
	escaped := map[string]string{}
	for _, e := range entries {
		count[e.Key]++
		r.all[e.Key] = Setting{Key: e.Key, Value: e.Value, Line: e.Line}
		escaped[e.Key] = e.Escaped
	}
	for _, e := range entries {
		r.inlineComment(e)
	}
	for k, n := range count {
		if n > 1 {
			r.warn(k, r.all[k].Line, fmt.Sprintf("set %d times: the last one (line %d) wins, as in MM2", n, r.all[k].Line))
		}
	}
	prov, warns, err := newProviders(r.all, &r.o)
	r.fail(err)
	r.cfg.Warnings = append(r.cfg.Warnings, warns...)
	for _, k := range sortedKeys(r.all) {
		if strings.HasPrefix(k, "config.providers") {
			continue
		}
		s, warns, err := prov.resolve(r.all[k])
		if err != nil {
			r.fail(err)
			continue
		}
		r.cfg.Warnings = append(r.cfg.Warnings, warns...)
		r.all[k] = s
	}
	r.cfg.Settings = r.all
	r.escapeWarnings(escaped)

	cs, ok := r.all["clusters"]
	if !ok {
		if bomKey == "clusters" {
			r.fail(&Error{Key: "clusters", Line: 1, Reason: "required, but this line sets " + Latin1BOM + "clusters, not clusters: " + bomReason +
				", so MM2 finds no clusters either; save the file without the mark (as UTF-8 without BOM, or ASCII)"})
			return nil, r.err()
		}
		r.fail(&Error{Key: "clusters", Reason: "required: list the cluster aliases, e.g. clusters = A, B"})
		return nil, r.err()
	}
	if strings.ContainsRune(cs.Value, '\u00a0') {
		// A no-break space, as pasted from a web page or a chat: UTF-8's
		// (C2 A0) reads as "Â" and U+00A0 in ISO-8859-1, as MM2 reads the
		// file. Its "Â" stayed in the alias, and the error suggested
		// clusters = Â, b or asked for bÂ.bootstrap.servers.
		plain := strings.NewReplacer("\u00c2\u00a0", " ", "\u00a0", " ").Replace(cs.Value)
		r.fail(&Error{Key: "clusters", Value: cs.Value, Line: cs.Line, Reason: fmt.Sprintf(
			"holds a no-break space (U+00A0; a UTF-8 one, bytes C2 A0 as pasted from a web page, reads as \u00c2 and U+00A0 in ISO-8859-1, as MM2 reads the file): write plain spaces, clusters = %s",
			splitAliases(parseList(plain)))})
		return nil, r.err()
	}
	list := parseList(cs.Value)
	for _, a := range list {
		if a == "" {
			reason := "contains an empty alias"
			if fixed := splitAliases(list); fixed != "" {
				reason += " (a doubled or trailing comma): write clusters = " + fixed
			}
			r.fail(&Error{Key: "clusters", Value: cs.Value, Line: cs.Line, Reason: reason})
			return nil, r.err()
		}
		if f := strings.Fields(a); len(f) > 1 {
			// MM2 splits the list at commas only: "east west" is one alias,
			// and every east.* key then had no effect (a new user's try).
			r.fail(&Error{Key: "clusters", Value: cs.Value, Line: cs.Line, Reason: fmt.Sprintf(
				"alias %q contains white space: separate the aliases with commas, clusters = %s", a, splitAliases(list))})
			return nil, r.err()
		}
		if r.aliases[a] {
			r.warn("clusters", cs.Line, fmt.Sprintf("alias %s is listed twice", a))
			continue
		}
		r.aliases[a] = true
		r.cfg.Aliases = append(r.cfg.Aliases, a)
		r.clusters[a] = &clusterRaw{client: map[string]Setting{}, worker: map[string]Setting{},
			consumer: map[string]Setting{}, producer: map[string]Setting{}, admin: map[string]Setting{}}
	}
	if len(r.cfg.Aliases) == 0 {
		r.fail(&Error{Key: "clusters", Value: cs.Value, Line: cs.Line, Reason: "lists no cluster alias"})
		return nil, r.err()
	}

	// Classify keys in file order.
	keys := sortedKeys(r.all)
	sort.SliceStable(keys, func(i, j int) bool { return r.all[keys[i]].Line < r.all[keys[j]].Line })
	for _, k := range keys {
		r.fail(r.classify(r.all[k]))
	}
	r.buildClusters()
	r.buildFlows()
	sort.SliceStable(r.cfg.Warnings, func(i, j int) bool {
		if r.cfg.Warnings[i].Line != r.cfg.Warnings[j].Line {
			return r.cfg.Warnings[i].Line < r.cfg.Warnings[j].Line
		}
		return r.cfg.Warnings[i].Key < r.cfg.Warnings[j].Key
	})
	sort.SliceStable(r.cfg.NoEffect, func(i, j int) bool { return r.cfg.NoEffect[i].Line < r.cfg.NoEffect[j].Line })
	return r.cfg, r.err()
}

// Latin1BOM is a UTF-8 byte order mark (bytes EF BB BF) as MM2 reads it:
// as three ISO-8859-1 characters that start the first key of the file.
const Latin1BOM = "\u00ef\u00bb\u00bf"

const bomReason = "the file starts with a UTF-8 byte order mark (bytes EF BB BF), which MM2 reads as ISO-8859-1 characters at the start of the first key"

// dropBOM removes the first entry when its key starts with a byte order
// mark, with a warning naming the key meant, and returns that key ("" if
// none).
func (r *resolver) dropBOM(entries []Entry) ([]Entry, string) {
	if len(entries) == 0 || entries[0].Line != 1 || !strings.HasPrefix(entries[0].Key, Latin1BOM) {
		return entries, ""
	}
	e := entries[0]
	meant := strings.TrimPrefix(e.Key, Latin1BOM)
	msg := bomReason + ", so line 1 is a setting without effect in MM2 and kmirror (here harmless): save the file without the mark (as UTF-8 without BOM, or ASCII)"
	if meant != "" && meant[0] != '#' && meant[0] != '!' {
		msg = fmt.Sprintf("%s, so line 1 sets %s, not %s, and neither MM2 nor kmirror applies it: save the file without the mark (as UTF-8 without BOM, or ASCII); did you mean %s?", bomReason, e.Key, meant, meant)
	}
	r.cfg.Warnings = append(r.cfg.Warnings, Warning{Key: e.Key, Line: 1, Message: msg})
	return entries[1:], meant
}

// IsFragmentKey reports whether key, as the properties reader returned
// it, cannot be a setting because it contains a quote or ';' (no Kafka or
// MM2 key does): it is then most likely a piece of a quoted value, such as
// the password of a sasl.jaas.config continued on the next line without a
// trailing backslash (`password=` then `"secret";` on its own line makes
// `"secret";` a key). Messages must not show such a key.
func IsFragmentKey(key string) bool { return strings.ContainsAny(key, "\"';") }

// dropFragments removes the entries whose key is a fragment
// ([IsFragmentKey]), and those with a key without a dot and no value
// (a bare word, such as an unquoted password) that follow a secret
// setting or fragment not ending in ';', with a warning each that does
// not show the key.
func (r *resolver) dropFragments(entries []Entry) []Entry {
	out := entries[:0:0]
	var prev *Entry
	open := false // the entry before is a secret value or fragment not ending in ';'
	for i, e := range entries {
		bare := open && e.Value == "" && !strings.Contains(e.Key, ".")
		if !IsFragmentKey(e.Key) && !bare {
			out = append(out, e)
			prev = &entries[i]
			open = clientconf.IsSecret(e.Key) && !strings.HasSuffix(strings.TrimSpace(e.Value), ";")
			continue
		}
		open = !strings.HasSuffix(strings.TrimSpace(e.Key+e.Value), ";")
		msg := "not a setting (a key cannot contain a quote or ';'; the text is not shown, as it may be part of a password): ignored"
		if bare && !IsFragmentKey(e.Key) {
			msg = "not a setting (a word alone, after a secret value; the text is not shown, as it may be part of a password): ignored"
		}
		if prev != nil && clientconf.IsSecret(prev.Key) {
			msg = fmt.Sprintf("not a setting: probably the rest of the value of %s (line %d), cut by a line break; "+
				"end each line of a value but its last with a backslash (\\); ignored (the text is not shown, as it may be part of a password)", prev.Key, prev.Line)
		}
		r.cfg.Warnings = append(r.cfg.Warnings, Warning{Key: clientconf.Masked, Line: e.Line, Message: msg})
	}
	return out
}

// inlineComment warns about a value holding whitespace then '#' or '!':
// most likely a comment written after the value, which java.util.Properties
// (and so MM2) reads as part of the value. Values that may be secret
// ([mayHoldSecret]) are not checked: a password may hold " #", and a
// warning must not show it.
func (r *resolver) inlineComment(e Entry) {
	if mayHoldSecret(e.Key, e.Value) {
		return
	}
	i := strings.IndexFunc(e.Value, isBlank)
	for i >= 0 {
		rest := strings.TrimLeftFunc(e.Value[i:], isBlank)
		if strings.HasPrefix(rest, "#") || strings.HasPrefix(rest, "!") {
			r.warn(e.Key, e.Line, fmt.Sprintf("the value is %q: %s starts a comment only at the start of a line, so MM2 and kmirror read the text after it as part of the value; put the comment on a line of its own",
				e.Value, rest[:1]))
			return
		}
		j := strings.IndexFunc(rest, isBlank)
		if j < 0 {
			return
		}
		i = len(e.Value) - len(rest) + j
	}
}

// mayHoldSecret reports whether the value of key may be secret, so that
// no message may show it: the key names a secret ([clientconf.IsSecret]),
// ends in a misspelling of a secret client key (sasl.jas.config,
// ssl.truststore.pasword: unknown keys, which IsSecret does not catch), or
// the value reads like a JAAS configuration or names a password.
func mayHoldSecret(key, value string) bool {
	if clientconf.IsSecret(key) {
		return true
	}
	v := strings.ToLower(value)
	if strings.Contains(v, "loginmodule") || strings.Contains(v, "password") || strings.Contains(v, "secret") {
		return true
	}
	for i := 0; i < len(key); i++ {
		if i > 0 && key[i-1] != '.' {
			continue
		}
		for _, c := range clientconf.Keys(clientconf.Client) {
			if clientconf.IsSecret(c) && clientconf.Suggest(key[i:], []string{c}) != "" {
				return true
			}
		}
	}
	return false
}

// fail records err (nil is ignored).
func (r *resolver) fail(err error) {
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

// err joins the errors recorded, in line order, those of no line last
// (nil when none).
func (r *resolver) err() error {
	var flat []error
	for _, e := range r.errs {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			flat = append(flat, j.Unwrap()...)
		} else {
			flat = append(flat, e)
		}
	}
	line := func(e error) int {
		var me *Error
		if errors.As(e, &me) && me.Line > 0 {
			return me.Line
		}
		return math.MaxInt
	}
	sort.SliceStable(flat, func(i, j int) bool { return line(flat[i]) < line(flat[j]) })
	return errors.Join(flat...)
}

func (r *resolver) warn(key string, line int, msg string) {
	id := key + "\x00" + msg
	if r.warned[id] {
		return
	}
	r.warned[id] = true
	r.cfg.Warnings = append(r.cfg.Warnings, Warning{Key: key, Line: line, Message: msg})
}

func (r *resolver) noEffect(s Setting, reason string) {
	r.cfg.NoEffect = append(r.cfg.NoEffect, Note{Key: s.Key, Line: s.Line, Reason: reason})
}

// pairOf finds the cluster pair of a flow key, preferring the longest
// matching aliases.
func (r *resolver) pairOf(key string) (src, dst, rest string, ok bool) {
	best := -1
	for _, s := range r.cfg.Aliases {
		if !strings.HasPrefix(key, s+"->") {
			continue
		}
		after := key[len(s)+2:]
		for _, t := range r.cfg.Aliases {
			if strings.HasPrefix(after, t+".") && len(s)+len(t) > best {
				best = len(s) + len(t)
				src, dst, rest, ok = s, t, after[len(t)+1:], true
			}
		}
	}
	return
}

// aliasOf finds the longest alias A with key = A + "." + rest.
func (r *resolver) aliasOf(key string) (alias, rest string, ok bool) {
	for _, a := range r.cfg.Aliases {
		if strings.HasPrefix(key, a+".") && len(a) > len(alias) {
			alias, rest, ok = a, key[len(a)+1:], true
		}
	}
	return
}

func isRoleKey(k string) (role, rest string, ok bool) {
	for _, p := range []string{"consumer", "producer", "admin"} {
		if strings.HasPrefix(k, p+".") {
			return p, k[len(p)+1:], true
		}
	}
	return "", "", false
}

// meaningfulClusterKey reports whether rest (after "<alias>.") is a key
// MM2 reads at cluster scope.
func meaningfulClusterKey(rest string) bool {
	if clientconf.IsConnectionKey(rest) || rest == "client.id" || workerMapped[rest] {
		return true
	}
	if _, _, ok := isRoleKey(rest); ok {
		return true
	}
	if _, ok := workerNoEffect[rest]; ok {
		return true
	}
	_, ok := workerUnsupported[rest]
	return ok
}

func isConnectorKey(k string) bool {
	if contains(ConnectorKeys, k) {
		return true
	}
	if _, ok := DeprecatedAliases[k]; ok {
		return true
	}
	if _, ok := connectorNoEffect[k]; ok {
		return true
	}
	_, ok := connectorUnsupported[k]
	return ok || k == "source.cluster.alias" || k == "target.cluster.alias"
}

func isTopKey(k string) bool {
	if k == "clusters" || strings.HasPrefix(k, "config.providers") || isConnectorKey(k) || clientconf.IsConnectionKey(k) {
		return true
	}
	if _, ok := topNoEffect[k]; ok {
		return true
	}
	for _, p := range workerPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

func (r *resolver) classify(s Setting) error {
	k := s.Key
	if k == "clusters" || strings.HasPrefix(k, "config.providers") {
		return nil
	}
	if strings.Contains(k, "->") {
		return r.classifyFlow(s)
	}
	if alias, rest, ok := r.aliasOf(k); ok && (meaningfulClusterKey(rest) || !isTopKey(k)) {
		r.classifyCluster(s, alias, rest)
		return nil
	}
	r.classifyTop(s)
	return nil
}

func (r *resolver) classifyFlow(s Setting) error {
	src, dst, rest, ok := r.pairOf(s.Key)
	if !ok || rest == "" {
		if sug := r.flowShaped(s); sug != "" {
			r.warn(s.Key, s.Line, fmt.Sprintf("unknown setting: ignored; a flow's settings are written <source>-><target>.<setting> with no spaces: did you mean %s?", sug))
			return nil
		}
		if a, b, cut := strings.Cut(strings.TrimSuffix(s.Key, "."), "->"); cut && r.aliases[a] && r.aliases[b] {
			r.warn(s.Key, s.Line, "no setting after the cluster pair: ignored; a flow's settings are written <source>-><target>.<setting>, e.g. "+a+"->"+b+".topics")
			return nil
		}
		msg := "no effect: the cluster pair is not made of aliases listed in clusters (" + strings.Join(r.cfg.Aliases, ", ") + ")"
		if sug, caseOnly := r.suggestPair(s.Key); sug != "" {
			if caseOnly {
				msg += "; aliases are case-sensitive"
			}
			msg += fmt.Sprintf("; did you mean %s?", sug)
		}
		r.warn(s.Key, s.Line, msg)
		return nil
	}
	if src == dst {
		return &Error{Key: s.Key, Value: s.Value, Line: s.Line, Reason: fmt.Sprintf("a flow needs two different clusters (source and target are both %s)", src)}
	}
	pair := [2]string{src, dst}
	if r.flows[pair] == nil {
		r.flows[pair] = map[string]Setting{}
	}
	r.flows[pair][rest] = s
	prefix := src + "->" + dst + "."
	switch {
	case isConnectorKey(rest):
		r.connectorKey(s, rest)
	case isFlowClientKey(rest):
		r.flowClientKey(s, src, dst, rest)
	case clientconf.IsConnectionKey(rest):
		r.warn(s.Key, s.Line, fmt.Sprintf("connection settings cannot be set per flow in kmirror: set %s.%s and/or %s.%s", src, rest, dst, rest))
	case workerMapped[rest] || workerNoEffect[rest] != "" || workerUnsupported[rest] != "":
		r.warn(s.Key, s.Line, fmt.Sprintf("a Connect worker setting has no effect per flow in MM2, nor in kmirror: set %s.%s (the target cluster)", dst, rest))
	case notMM2[rest] != "":
		r.warn(s.Key, s.Line, notMM2[rest])
	case strings.HasPrefix(rest, "transforms.") || strings.HasPrefix(rest, "predicates."):
		// A transform's or predicate's own settings: "unknown flow
		// setting" read as a typo to look for (an operator's find).
		r.warn(s.Key, s.Line, fmt.Sprintf("not supported: configures a Single Message Transform (%stransforms), which kmirror does not run: records are copied unchanged", prefix))
	default:
		msg := "unknown flow setting: ignored"
		if sug := clientconf.Suggest(rest, allFlowKeys()); sug != "" {
			msg += fmt.Sprintf(" (did you mean %s%s?)", prefix, describeSuggestion(sug))
			if _, set := r.all[prefix+sug]; (sug == "topics" || sug == "groups") && !set {
				// A misspelt selection widens it (a new user's try, stop 38).
				msg += fmt.Sprintf("; without it the flow's %s is the top-level %s or MM2's default .*, which selects every %s",
					sug, sug, strings.TrimSuffix(sug, "s"))
			}
		}
		r.warn(s.Key, s.Line, msg)
	}
	return nil
}

// describeSuggestion names a deprecated alias together with its
// replacement.
func describeSuggestion(sug string) string {
	if n, ok := DeprecatedAliases[sug]; ok {
		return fmt.Sprintf("%s, or its deprecated spelling %s", n, sug)
	}
	return sug
}

// connectorKey handles a connector key at top level or per flow (rest is
// the key without the flow prefix).
func (r *resolver) connectorKey(s Setting, rest string) {
	if n, ok := DeprecatedAliases[rest]; ok {
		r.warn(s.Key, s.Line, fmt.Sprintf("deprecated spelling of %s (KIP-629), removed in Kafka 4.0, whose MM2 ignores it; kmirror honours it where %s is not set: rename it to %s", n, n, n))
	}
	if note, ok := connectorNoEffect[rest]; ok {
		v := strings.TrimSpace(s.Value)
		if (rest == "key.converter" || rest == "value.converter" || rest == "header.converter") && v != "" && v != byteArrayConverter {
			r.warn(s.Key, s.Line, fmt.Sprintf("not supported: kmirror copies records unchanged, as %s does; %s is not applied", byteArrayConverter, v))
			return
		}
		r.noEffect(s, note)
		return
	}
	if u, ok := connectorUnsupported[rest]; ok {
		v := strings.TrimSpace(s.Value)
		if v == "" || v == u.def || (rest == "exactly.once.support" && strings.EqualFold(v, "requested")) {
			r.noEffect(s, "default value")
			return
		}
		r.warn(s.Key, s.Line, "not supported: "+u.note)
		return
	}
	if rest == "source.cluster.alias" || rest == "target.cluster.alias" {
		side := "source"
		if rest == "target.cluster.alias" {
			side = "target"
		}
		r.warn(s.Key, s.Line, fmt.Sprintf("MM2 copies %s=%s into the connectors of every flow it applies to, overriding the %s alias used in topic names "+
			"(remote topics, offset-syncs and checkpoints topics) while the herders keep the aliases of clusters; "+
			"kmirror names topics after the aliases in clusters and ignores this key: rename the cluster alias instead", rest, strings.TrimSpace(s.Value), side))
		return
	}
	if rest == "use.defaults.from" && s.Key == rest {
		r.warn(s.Key, s.Line, "MM2's dedicated mode drops a top-level use.defaults.from (it is not a connector setting; checked with MM2 4.3.1), so MM2 uses target; kmirror applies it to every flow as written; MM2 needs <source>-><target>.use.defaults.from")
	}
	if def, ok := sourceConnectorOnly[rest]; ok && s.Key == rest && !strings.EqualFold(strings.TrimSpace(s.Value), def) {
		// MirrorMakerConfig keeps the top-level keys its three
		// connectors define (ConnectorConfig's and MirrorMaker's own);
		// these are Connect's source-connector keys (KIP-618), defined
		// by SourceConnectorConfig, so MM2 drops them at top level.
		mm2 := "its default"
		if def != "" {
			mm2 = def
		}
		r.warn(s.Key, s.Line, fmt.Sprintf("MM2's dedicated mode drops a top-level %s (a Connect source-connector setting, not one of MirrorMaker's connector settings), so MM2 uses %s; kmirror applies it to every flow as written; MM2 needs <source>-><target>.%s", rest, mm2, rest))
	}
	if IsBoolKey(rest) && rest != "enabled" && rest != "emit.heartbeats.enabled" && s.Value != strings.TrimSpace(s.Value) {
		if v, err := ParseBool(s); err == nil {
			r.warn(s.Key, s.Line, fmt.Sprintf("surrounding whitespace in a boolean: read as %v (trimmed, as MM2's connectors read it)", v))
		}
	}
}

// sourceConnectorOnly are the flow keys Connect defines for source
// connectors only (SourceConnectorConfig, KIP-618), which MM2's
// MirrorMakerConfig drops at top level, with MM2's value when dropped
// ("" for none: the worker's offset flush interval).
var sourceConnectorOnly = map[string]string{
	"exactly.once.support":             "requested",
	"transaction.boundary":             "poll",
	"transaction.boundary.interval.ms": "",
}

// IsBoolKey reports whether a connector key is boolean.
func IsBoolKey(k string) bool {
	return k == "enabled" || strings.HasSuffix(k, ".enabled")
}

func (r *resolver) flowClientKey(s Setting, src, dst, rest string) {
	switch {
	case strings.HasPrefix(rest, "source.consumer.") || strings.HasPrefix(rest, "consumer."):
		k := rest[strings.Index(rest, "consumer.")+len("consumer."):]
		if contains(FlowSourceConsumerKeys, k) {
			return
		}
		if strings.HasPrefix(rest, "consumer.override.") {
			r.warn(s.Key, s.Line, "no effect in MM2 (consumer overrides apply to sink connectors) nor in kmirror")
			return
		}
		r.warn(s.Key, s.Line, fmt.Sprintf("per-flow consumer settings are not supported (kmirror honours only %s per flow): set %s.consumer.%s, which applies to every flow reading %s",
			strings.Join(FlowSourceConsumerKeys, ", "), src, k, src))
	case strings.HasPrefix(rest, "producer.override."):
		k := strings.TrimPrefix(rest, "producer.override.")
		if contains(FlowTargetProducerKeys, k) {
			return
		}
		r.warn(s.Key, s.Line, fmt.Sprintf("per-flow producer overrides are not supported (kmirror honours only %s per flow): set %s.producer.%s, which applies to every flow writing to %s",
			strings.Join(FlowTargetProducerKeys, ", "), dst, k, dst))
	case strings.HasPrefix(rest, "producer.") || strings.HasPrefix(rest, "target.producer.") || strings.HasPrefix(rest, "source.producer."):
		k := rest[strings.Index(rest, "producer.")+len("producer."):]
		r.warn(s.Key, s.Line, fmt.Sprintf("in MM2 this configures only the offset-syncs producer, not the producer of replicated records (that is %s->%s.producer.override.%s or %s.producer.%s); kmirror ignores it: set %s.producer.%s",
			src, dst, k, dst, k, dst, k))
	case strings.HasPrefix(rest, "admin.override."):
		r.warn(s.Key, s.Line, "no effect in MM2 dedicated mode nor in kmirror")
	default:
		// admin., source.admin., target.admin., target.consumer.,
		// source.cluster., target.cluster.
		alias := src
		if strings.HasPrefix(rest, "target.") {
			alias = dst
		}
		k := rest
		for _, p := range []string{"source.cluster.", "target.cluster.", "source.", "target."} {
			k = strings.TrimPrefix(k, p)
		}
		r.warn(s.Key, s.Line, perFlowClientAdvice(alias, k))
	}
}

// perFlowClientAdvice is the warning for a per-flow client key whose
// per-cluster form is alias.k. It recommends that form only where kmirror
// reads it: a new user's try (stop 38) was told to set
// e.basic.auth.user.info, which is itself ignored.
func perFlowClientAdvice(alias, k string) string {
	const unsupported = "per-flow client settings are not supported by kmirror"
	switch {
	case clientconf.IsConnectionKey(k) || k == "client.id" ||
		strings.HasPrefix(k, "consumer.") || strings.HasPrefix(k, "producer.") || strings.HasPrefix(k, "admin."):
		return fmt.Sprintf("%s: set %s.%s, which applies to every flow using %s", unsupported, alias, k, alias)
	case clientconf.KnownKey(clientconf.Consumer, k) || clientconf.KnownKey(clientconf.Producer, k) || clientconf.KnownKey(clientconf.Admin, k):
		return fmt.Sprintf("%s: set %s.consumer.%s, %s.producer.%s or %s.admin.%s, which apply to every flow using %s", unsupported, alias, k, alias, k, alias, k, alias)
	default:
		return fmt.Sprintf("%s, and %s is not a Kafka client setting kmirror knows: ignored", unsupported, k)
	}
}

func (r *resolver) classifyCluster(s Setting, alias, rest string) {
	c := r.clusters[alias]
	switch {
	case clientconf.IsConnectionKey(rest) || rest == "client.id":
		c.client[rest] = s
	case strings.HasPrefix(rest, "consumer."):
		c.consumer[strings.TrimPrefix(rest, "consumer.")] = s
	case strings.HasPrefix(rest, "producer."):
		c.producer[strings.TrimPrefix(rest, "producer.")] = s
	case strings.HasPrefix(rest, "admin."):
		c.admin[strings.TrimPrefix(rest, "admin.")] = s
	case workerMapped[rest]:
		c.worker[rest] = s
	case workerUnsupported[rest] != "":
		if rest == "exactly.once.source.support" && strings.EqualFold(strings.TrimSpace(s.Value), "disabled") {
			r.noEffect(s, "default value")
			return
		}
		r.warn(s.Key, s.Line, "not supported: "+workerUnsupported[rest])
	case workerNoEffect[rest] != "":
		r.noEffect(s, workerNoEffect[rest])
	case isConnectorKey(rest):
		r.warn(s.Key, s.Line, fmt.Sprintf("no effect: MM2 reads %s only at top level or per flow (e.g. %s), not per cluster; kmirror does the same", rest, r.exampleFlowKey(alias, rest)))
	case notMM2[rest] != "":
		r.warn(s.Key, s.Line, notMM2[rest])
	default:
		msg := "unknown cluster setting: ignored"
		if clientconf.KnownKey(clientconf.Consumer, rest) || clientconf.KnownKey(clientconf.Producer, rest) || clientconf.KnownKey(clientconf.Admin, rest) {
			msg = fmt.Sprintf("MM2 passes only connection settings (bootstrap.servers, security.protocol, ssl.*, sasl.*) from %s.* to clients: use %s.consumer.%s, %s.producer.%s or %s.admin.%s", alias, alias, rest, alias, rest, alias, rest)
		} else if sug := clientconf.Suggest(rest, allClusterKeys()); sug != "" {
			msg += fmt.Sprintf(" (did you mean %s.%s?)", alias, sug)
		}
		r.warn(s.Key, s.Line, msg)
	}
}

// exampleFlowKey names a flow key for alias as source, for messages.
func (r *resolver) exampleFlowKey(alias, rest string) string {
	for _, t := range r.cfg.Aliases {
		if t != alias {
			return alias + "->" + t + "." + rest
		}
	}
	return alias + "->X." + rest
}

func (r *resolver) classifyTop(s Setting) {
	k := s.Key
	switch {
	case isConnectorKey(k):
		r.topConn[k] = s
		r.connectorKey(s, k)
	case clientconf.IsConnectionKey(k):
		r.topClient[k] = s
	case k == "offset.storage.replication.factor":
		r.topWorker[k] = s
	case workerUnsupported[k] != "" && strings.HasPrefix(k, "offset.storage"):
		r.warn(k, s.Line, "not supported: "+workerUnsupported[k])
	case topNoEffect[k] != "":
		r.noEffect(s, topNoEffect[k])
	case k == "offset.flush.interval.ms" || k == "offset.flush.timeout.ms":
		r.warn(k, s.Line, fmt.Sprintf("ignored by MM2 at top level (Connect worker settings are read per target cluster): set <target>.%s, e.g. %s.%s; kmirror ignores it too", k, r.cfg.Aliases[len(r.cfg.Aliases)-1], k))
	case k == "group.id":
		r.warn(k, s.Line, "ignored by MM2 at top level (each herder's worker group is <target>.group.id, default <source>-mm2); kmirror has no worker group")
	case k == "client.id":
		r.warn(k, s.Line, "ignored by MM2 at top level: set <alias>.client.id")
	case k == "exactly.once.source.support":
		r.warn(k, s.Line, fmt.Sprintf("ignored by MM2 at top level (a worker setting, read per target cluster), and by kmirror too: set <target>.exactly.once.source.support=enabled, e.g. %s.exactly.once.source.support=enabled", r.cfg.Aliases[len(r.cfg.Aliases)-1]))
	case k == "session.timeout.ms" || k == "heartbeat.interval.ms" || k == "rebalance.timeout.ms":
		r.warn(k, s.Line, fmt.Sprintf("ignored by MM2 at top level (a worker setting, read per target cluster), and by kmirror too: set <target>.%s, e.g. %s.%s", k, r.cfg.Aliases[len(r.cfg.Aliases)-1], k))
	case strings.HasPrefix(k, "producer.override.") || strings.HasPrefix(k, "consumer.override.") || strings.HasPrefix(k, "admin.override."):
		r.warn(k, s.Line, "ignored by MM2 at top level (client overrides are connector settings: <source>-><target>.producer.override.*); for the replication producer set <target>.producer.*")
	case isTopRoleKey(k):
		role, rest, _ := isRoleKey(k)
		r.warn(k, s.Line, fmt.Sprintf("ignored by MM2 at top level (top-level %s.* keys reach no client): set <alias>.%s.%s", role, role, rest))
	case workerNoEffect[k] != "":
		r.noEffect(s, workerNoEffect[k])
	case notMM2[k] != "":
		r.warn(k, s.Line, notMM2[k])
	case clientconf.KnownKey(clientconf.Consumer, k) || clientconf.KnownKey(clientconf.Producer, k) || clientconf.KnownKey(clientconf.Admin, k):
		r.warn(k, s.Line, fmt.Sprintf("ignored by MM2 at top level (only connection settings are shared by all clusters): set <alias>.consumer.%s, <alias>.producer.%s or <alias>.admin.%s", k, k, k))
	default:
		r.unknownTop(s)
	}
}

func isTopRoleKey(k string) bool {
	_, _, ok := isRoleKey(k)
	return ok
}

// suggestPair returns the flow key meant by key, "<a>-><b>.<setting>"
// whose a or b is not a listed alias, with each side replaced by the alias
// it most likely means (the same letters in another case, or the nearest
// spelling); "" when a side matches none. caseOnly: only the case differs.
func (r *resolver) suggestPair(key string) (sug string, caseOnly bool) {
	i := strings.Index(key, "->")
	if i <= 0 {
		return "", false
	}
	a, rest := key[:i], key[i+2:]
	j := strings.Index(rest, ".")
	if j <= 0 {
		return "", false
	}
	b, setting := rest[:j], rest[j+1:]
	caseOnly = true
	fix := func(x string) string {
		if r.aliases[x] {
			return x
		}
		if k := slices.IndexFunc(r.cfg.Aliases, func(al string) bool { return strings.EqualFold(al, x) }); k >= 0 {
			return r.cfg.Aliases[k]
		}
		caseOnly = false
		return clientconf.Suggest(x, r.cfg.Aliases)
	}
	fa, fb := fix(a), fix(b)
	// One side listed, the other unlike any alias: with two clusters the
	// other side can only be the other alias (A->C.enabled for A->B, a
	// new user's try).
	other := func(x string) string {
		if len(r.cfg.Aliases) != 2 || !r.aliases[x] {
			return ""
		}
		if r.cfg.Aliases[0] == x {
			return r.cfg.Aliases[1]
		}
		return r.cfg.Aliases[0]
	}
	switch {
	case !r.aliases[a] && r.aliases[b] && (fa == "" || fa == fb):
		fa = other(fb)
	case !r.aliases[b] && r.aliases[a] && (fb == "" || fb == fa):
		fb = other(fa)
	}
	if fa == "" || fb == "" || fa == fb {
		return "", false
	}
	return fa + "->" + fb + "." + setting, caseOnly
}

// flowShaped returns the flow key s most likely meant when s is a flow
// key written with a space around the arrow ("a -> b.enabled": Java's
// properties format ends the key at the space, so the key is "a"; "a->
// b.enabled": the key is "a->") or with another arrow ("a=>b.enabled",
// "a-b.enabled", "a>b.enabled") or with a space around the dot after the
// pair ("a->b .enabled": the key is "a->b"; "a->b. enabled": "a->b."); ""
// when s does not look like one.
func (r *resolver) flowShaped(s Setting) string {
	k := s.Key
	if a, b, ok := strings.Cut(strings.TrimSuffix(k, "."), "->"); ok && r.aliases[a] && r.aliases[b] {
		// The key ended at a space; the value holds ".setting = value"
		// or "setting = value".
		v := strings.TrimSpace(s.Value)
		if !strings.HasSuffix(k, ".") && !strings.HasPrefix(v, ".") {
			return ""
		}
		v = strings.TrimLeft(v, ". \t")
		end := strings.IndexAny(v, " \t=:")
		if end <= 0 {
			return "" // "a->b.=x": no setting name
		}
		return a + "->" + b + "." + v[:end]
	}
	if a, ok := strings.CutSuffix(k, "->"); ok && r.aliases[a] {
		k = a
	}
	if r.aliases[k] {
		// The key ended at a space, '=' or ':'; the value holds the rest.
		v := strings.TrimLeft(strings.TrimSpace(s.Value), "-=>: \t")
		if end := strings.IndexAny(v, " \t=:"); end >= 0 {
			v = v[:end]
		}
		if i := strings.Index(v, "."); i > 0 && r.aliases[v[:i]] && v[:i] != k {
			return k + "->" + v
		}
		return ""
	}
	dot := strings.Index(k, ".")
	if dot <= 0 {
		return ""
	}
	head := k[:dot]
	for _, sep := range []string{"=>", "-", ">", "=", "_"} {
		if a, b, ok := strings.Cut(head, sep); ok && r.aliases[a] && r.aliases[b] && a != b {
			return a + "->" + b + k[dot:]
		}
	}
	return ""
}

func (r *resolver) unknownTop(s Setting) {
	k := s.Key
	if sug := r.flowShaped(s); sug != "" {
		r.warn(k, s.Line, fmt.Sprintf("unknown setting: ignored; a flow's settings are written <source>-><target>.<setting> with no spaces: did you mean %s?", sug))
		return
	}
	// "<x>.<cluster key>" where x is not an alias: probably a misspelt
	// or unlisted alias.
	if i := strings.Index(k, "."); i > 0 && meaningfulClusterKey(k[i+1:]) && !isTopKey(k) {
		prefix := k[:i]
		msg := fmt.Sprintf("no effect: %s is not a cluster alias listed in clusters (%s)", prefix, strings.Join(r.cfg.Aliases, ", "))
		if j := slices.IndexFunc(r.cfg.Aliases, func(a string) bool { return strings.EqualFold(a, prefix) }); j >= 0 {
			msg += fmt.Sprintf("; aliases are case-sensitive: did you mean %s.%s?", r.cfg.Aliases[j], k[i+1:])
		} else if sug := clientconf.Suggest(prefix, r.cfg.Aliases); sug != "" {
			msg += fmt.Sprintf("; did you mean %s.%s?", sug, k[i+1:])
		}
		r.warn(k, s.Line, msg)
		return
	}
	msg := "unknown setting: ignored"
	if sug := clientconf.Suggest(k, allTopKeys()); sug != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", describeSuggestion(sug))
	}
	r.warn(k, s.Line, msg)
}

func (r *resolver) buildClusters() {
	for _, a := range r.cfg.Aliases {
		raw := r.clusters[a]
		c := &Cluster{Alias: a, Client: map[string]Setting{}, Consumer: map[string]Setting{},
			Producer: map[string]Setting{}, Admin: map[string]Setting{}, Worker: map[string]Setting{}}
		for k, s := range raw.client {
			c.Client[k] = s
		}
		for k, s := range r.topClient {
			if _, ok := c.Client[k]; !ok {
				c.Client[k] = s
			}
		}
		for _, role := range []struct {
			dst, src map[string]Setting
		}{{c.Consumer, raw.consumer}, {c.Producer, raw.producer}, {c.Admin, raw.admin}} {
			for k, s := range role.src {
				role.dst[k] = s
			}
			for k, s := range c.Client {
				if k == "client.id" {
					continue
				}
				if _, ok := role.dst[k]; !ok {
					role.dst[k] = s
				}
			}
		}
		for k, s := range raw.worker {
			c.Worker[k] = s
		}
		for k, s := range r.topWorker {
			if cs, ok := raw.worker[k]; ok && cs.Value != s.Value {
				r.warn(cs.Key, cs.Line, fmt.Sprintf("overridden by the top-level %s (line %d), as in MM2's worker configuration", k, s.Line))
			}
			c.Worker[k] = s
		}
		r.cfg.Clusters[a] = c
	}
}

func (r *resolver) buildFlows() {
	targets := map[string]bool{}
	for _, t := range r.o.OnlyTargets {
		if !r.aliases[t] {
			r.fail(&Error{Key: "--clusters", Value: t, Reason: fmt.Sprintf("not an alias listed in clusters (%s)", strings.Join(r.cfg.Aliases, ", "))})
			continue
		}
		targets[t] = true
	}
	topEnabled, hasTopEnabled := r.topConn["enabled"]
	topHB, hasTopHB := r.topConn["emit.heartbeats.enabled"]
	var enabledByTop []string
	for _, src := range r.cfg.Aliases {
		for _, dst := range r.cfg.Aliases {
			if src == dst {
				continue
			}
			raw := r.flows[[2]string{src, dst}]
			name := src + "->" + dst
			flowEnabled := false
			if s, ok := raw["enabled"]; ok {
				flowEnabled = r.herderBool(s)
			}
			hb := true
			hbSetting, hasHB := raw["emit.heartbeats.enabled"]
			if !hasHB && hasTopHB {
				hbSetting, hasHB = topHB, true
			}
			if hasHB {
				hb = r.herderBool(hbSetting)
			}
			enabled := flowEnabled
			if _, ok := raw["enabled"]; !ok && hasTopEnabled {
				enabled = r.herderBool(topEnabled)
			}
			if !flowEnabled && !hb {
				if len(raw) > 0 {
					for _, k := range sortedKeys(raw) {
						if k != "enabled" && k != "emit.heartbeats.enabled" {
							s := raw[k]
							r.warn(s.Key, s.Line, fmt.Sprintf("no effect: %s does not run (%s.enabled is not true and heartbeats are disabled, so MM2 creates no herder for it)", name, name))
						}
					}
				}
				continue
			}
			if len(r.o.OnlyTargets) > 0 && !targets[dst] {
				r.cfg.LeftOut = append(r.cfg.LeftOut, name)
				continue
			}
			if enabled && !flowEnabled {
				enabledByTop = append(enabledByTop, name)
			}
			f := &Flow{Source: src, Target: dst, Enabled: enabled, Heartbeats: hb, settings: map[string]Setting{},
				SourceConsumer: map[string]Setting{}, TargetProducer: map[string]Setting{}}
			for k, s := range r.topConn {
				f.settings[k] = s
			}
			for k, s := range raw {
				if isConnectorKey(k) {
					f.settings[k] = s
				}
			}
			for old, n := range DeprecatedAliases {
				o, hasOld := f.settings[old]
				if !hasOld {
					continue
				}
				if ns, hasNew := f.settings[n]; hasNew {
					r.warn(o.Key, o.Line, fmt.Sprintf("ignored for %s because %s is set (line %d), as in MM2", name, ns.Key, ns.Line))
				} else {
					f.settings[n] = o
				}
				delete(f.settings, old)
			}
			sc, tc := r.clusters[src], r.clusters[dst]
			for _, k := range FlowSourceConsumerKeys {
				if s, ok := raw["source.consumer."+k]; ok {
					f.SourceConsumer[k] = s
				} else if s, ok := sc.consumer[k]; ok {
					f.SourceConsumer[k] = s
				} else if s, ok := raw["consumer."+k]; ok {
					f.SourceConsumer[k] = s
				}
			}
			for _, k := range FlowTargetProducerKeys {
				if s, ok := raw["producer.override."+k]; ok {
					f.TargetProducer[k] = s
				} else if s, ok := tc.producer[k]; ok {
					f.TargetProducer[k] = s
				}
			}
			r.cfg.Flows = append(r.cfg.Flows, f)
		}
	}
	if hasTopEnabled {
		if len(enabledByTop) > 0 {
			r.warn("enabled", topEnabled.Line, fmt.Sprintf("a top-level enabled=true is copied by MM2 into every flow's connectors, so it enables every cluster pair that has a herder: %s (set <source>-><target>.enabled per flow instead)", strings.Join(enabledByTop, ", ")))
		} else {
			r.noEffect(topEnabled, "every flow sets its own enabled")
		}
	}
}

// herderBool parses enabled / emit.heartbeats.enabled, which MM2 reads
// twice: with Boolean.parseBoolean for herder creation (no trimming, so
// "true " is false) and trimmed by its connectors. kmirror trims and
// warns where the two MM2 readings differ. A value that is not a boolean
// is recorded as an error and counts as true, so that the settings of the
// pair are checked too.
func (r *resolver) herderBool(s Setting) bool {
	v, err := ParseBool(s)
	if err != nil {
		r.fail(err)
		return true
	}
	raw := strings.EqualFold(s.Value, "true")
	if raw != v {
		r.warn(s.Key, s.Line, fmt.Sprintf("trailing or leading whitespace: kmirror reads %q as %v; MM2 reads it as %v when deciding which herders exist (Boolean.parseBoolean, untrimmed) and as %v in its connectors (trimmed), so MM2 may run or skip this pair inconsistently",
			s.Value, v, raw, v))
	}
	return v
}

// ParseBool parses a boolean setting as Kafka's ConfigDef does: trimmed,
// case-insensitive "true" or "false"; anything else is an *[Error].
func ParseBool(s Setting) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s.Value)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &Error{Key: s.Key, Value: s.Value, Line: s.Line, Reason: "must be true or false"}
}

// parseList is Kafka's LIST parsing (see clientconf.ParseList).
func parseList(v string) []string { return clientconf.ParseList(v) }

// splitAliases is the clusters list with every alias split at its white
// space: the line to write for a list whose aliases hold spaces. It keeps
// the other aliases ("x, a b" is "x, a, b"; the suggestion was the
// spaced alias's parts alone, "a, b", which dropped x).
func splitAliases(list []string) string {
	var out []string
	for _, a := range list {
		out = append(out, strings.Fields(a)...)
	}
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
