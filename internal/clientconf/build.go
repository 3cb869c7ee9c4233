// Package clientconf turns Kafka client settings, as written in MirrorMaker
// 2 properties files (bootstrap.servers, security.protocol, ssl.*, sasl.*,
// and consumer/producer/admin tuning keys), into franz-go options.
//
// Security: PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL; SASL mechanisms
// PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (credentials from sasl.jaas.config),
// OAUTHBEARER (Kafka's unsecured login, or the OIDC client-credentials
// login of KIP-768) and AWS_MSK_IAM (credentials from the AWS_* environment
// variables); TLS from PEM files or inline PEM values. JKS and PKCS12 stores
// are rejected with the commands that convert them to PEM.
//
// Every [Build] call creates new TLS configurations and new SASL mechanism
// instances: two clusters with identical settings never share login state
// (docs/field-failures.md case B39). Secret values (see [IsSecret]) never appear in errors,
// warnings or summaries.
package clientconf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Role is the kind of client a group of settings is for.
type Role int

const (
	// Client settings apply to every client of a cluster (MM2's
	// connection keys and client.id).
	Client Role = iota
	// Consumer settings (MM2 `<alias>.consumer.*`).
	Consumer
	// Producer settings (MM2 `<alias>.producer.*`).
	Producer
	// Admin settings (MM2 `<alias>.admin.*`).
	Admin
)

// String returns "client", "consumer", "producer" or "admin".
func (r Role) String() string {
	switch r {
	case Consumer:
		return "consumer"
	case Producer:
		return "producer"
	case Admin:
		return "admin"
	}
	return "client"
}

// Error is a bad client setting. Value is empty when the key is secret.
type Error struct {
	Key    string // client key, e.g. "sasl.jaas.config"
	Value  string // offending value; "" for secrets
	Reason string
}

func (e *Error) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("clientconf: %s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("clientconf: %s=%q: %s", e.Key, e.Value, e.Reason)
}

// Warning is a setting that was accepted but not (fully) applied.
type Warning struct {
	Key     string // client key
	Message string // never contains a secret value
}

// Line is one converted setting for summaries: the key, its masked value
// and what kmirror does with it.
type Line struct {
	Key, Value, Effect string
}

// Env is what Build may read besides the settings. Zero fields use the
// process environment, the file system and a default HTTP client.
type Env struct {
	// LookupEnv reads environment variables (AWS_MSK_IAM credentials).
	LookupEnv func(string) (string, bool)
	// ReadFile reads PEM stores and OAuth token files.
	ReadFile func(string) ([]byte, error)
	// HTTPClient fetches OAuth tokens (KIP-768 client credentials). Its
	// timeouts are overridden by sasl.login.*.timeout.ms when set.
	HTTPClient *http.Client
	// Now returns the current time (token lifetimes). Default time.Now.
	Now func() time.Time
}

func (e Env) withDefaults() Env {
	if e.LookupEnv == nil {
		e.LookupEnv = os.LookupEnv
	}
	if e.ReadFile == nil {
		e.ReadFile = os.ReadFile
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	return e
}

// Conn is the connection part of a client configuration.
type Conn struct {
	// Seeds is bootstrap.servers, nil if not set.
	Seeds []string
	// ClientID is client.id, "" if not set.
	ClientID string
	// Protocol is the normalized security.protocol (default PLAINTEXT).
	Protocol string
	// TLS is nil unless Protocol is SSL or SASL_SSL. A new value per Build.
	TLS *tls.Config
	// SASL is nil unless Protocol is SASL_PLAINTEXT or SASL_SSL. A new
	// mechanism instance per Build (no login state shared between
	// clusters).
	SASL sasl.Mechanism
	// Mechanism and User describe SASL for summaries (User may be "").
	Mechanism, User string
	// TLSSummary describes trust and identity for summaries.
	TLSSummary string
}

// Opts returns the kgo options of the connection: SeedBrokers (if set),
// ClientID (if set), DialTLSConfig (TLS, or nil to turn TLS off when a
// role overrides a TLS cluster with PLAINTEXT) and SASL.
func (c *Conn) Opts() []kgo.Opt {
	var o []kgo.Opt
	if len(c.Seeds) > 0 {
		o = append(o, kgo.SeedBrokers(c.Seeds...))
	}
	if c.ClientID != "" {
		o = append(o, kgo.ClientID(c.ClientID))
	}
	o = append(o, kgo.DialTLSConfig(c.TLS))
	if c.SASL != nil {
		o = append(o, kgo.SASL(c.SASL))
	}
	return o
}

// Fingerprint identifies the connection settings (not the secrets'
// values, only whether they are equal): two Conns with equal fingerprints
// were built from equal connection settings.
func Fingerprint(s map[string]string) string {
	var keys []string
	for k := range s {
		if IsConnectionKey(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s=%q\n", k, s[k])
	}
	return sb.String()
}

// Built is the result of [Build].
type Built struct {
	Conn Conn
	// Tuning holds the options of the non-connection keys, for the role.
	Tuning []kgo.Opt
	// Lines describe every setting, sorted by key, secrets masked.
	Lines []Line
	// Warnings about unknown keys, keys without effect for the role and
	// settings that weaken delivery guarantees.
	Warnings []Warning
}

// Build converts settings (client keys without any MM2 prefix, values as
// read from the file) for role. Values are trimmed as Kafka's ConfigDef
// does. It returns an *[Error] for a bad value, or, for several, their
// errors.Join (each an *[Error]: `kmirror -check` reports every error of
// a file at once, where it reported the first bad client key of a role
// only), and never includes secret values in errors or warnings. A bad
// connection setting is returned alone.
func Build(role Role, settings map[string]string, env Env) (*Built, error) {
	b := &builder{role: role, s: settings, env: env.withDefaults(), out: &Built{}}
	if err := b.connection(); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		if isHandledConnKey(k) {
			continue
		}
		v := settings[k]
		d, ok := tuning[k]
		switch {
		case !ok:
			msg := fmt.Sprintf("unknown %s setting: ignored", role)
			if s := Suggest(k, Keys(role)); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			b.warn(k, msg)
		case d.roles&role.set() == 0 && role != Client:
			b.warn(k, fmt.Sprintf("not a %s setting (it applies to %s): no effect here", role, rolesOf(d.roles)))
		case d.unsupported:
			b.warn(k, "not supported by kmirror: "+d.note)
			b.line(k, v, "unsupported: "+d.note)
		case d.conv == nil:
			if d.check != nil {
				if err := d.check(b, k, v); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			b.line(k, v, "no effect: "+d.note)
		default:
			if err := d.conv(b, k, v); err != nil {
				errs = append(errs, err)
			}
		}
	}
	switch len(errs) {
	case 0:
	case 1:
		return nil, errs[0]
	default:
		return nil, errors.Join(errs...)
	}
	sort.SliceStable(b.out.Lines, func(i, j int) bool { return b.out.Lines[i].Key < b.out.Lines[j].Key })
	return b.out, nil
}

func rolesOf(r roleSet) string {
	var out []string
	for _, x := range []struct {
		r roleSet
		n string
	}{{rConsumer, "consumers"}, {rProducer, "producers"}, {rAdmin, "admin clients"}} {
		if r&x.r != 0 {
			out = append(out, x.n)
		}
	}
	return strings.Join(out, ", ")
}

func isHandledConnKey(k string) bool {
	for _, c := range connectionKeys {
		if c == k {
			return true
		}
	}
	return false
}

type builder struct {
	role Role
	s    map[string]string
	env  Env
	out  *Built

	producerDone, compressionDone, backoffDone bool
}

func (b *builder) get(k string) (string, bool) {
	v, ok := b.s[k]
	return strings.TrimSpace(v), ok
}

func (b *builder) add(key, value, effect string, opts ...kgo.Opt) {
	b.out.Tuning = append(b.out.Tuning, opts...)
	b.line(key, value, effect)
}

func (b *builder) line(key, value, effect string) {
	b.out.Lines = append(b.out.Lines, Line{Key: key, Value: Mask(key, strings.TrimSpace(value)), Effect: effect})
}

func (b *builder) warn(key, msg string) {
	b.out.Warnings = append(b.out.Warnings, Warning{Key: key, Message: msg})
}

func (b *builder) errf(key, value, format string, args ...any) error {
	if IsSecret(key) {
		value = ""
	}
	return &Error{Key: key, Value: value, Reason: fmt.Sprintf(format, args...)}
}

func (b *builder) millis(k, v string, min time.Duration) (time.Duration, error) {
	d, err := parseMillis(v)
	if err != nil {
		return 0, b.errf(k, v, "%v", err)
	}
	if d < min*time.Millisecond {
		return 0, b.errf(k, v, "must be at least %d ms", min)
	}
	return d, nil
}

// kgoMillis is millis for a key whose franz-go option takes lo to hi ms
// only, where Kafka's client takes more: such a value (linger.ms=120000,
// connections.max.idle.ms=3600000, delivery.timeout.ms=500) was refused by
// franz-go when the Mirror was built, as "<alias>: invalid client options:
// linger 2m0s is larger than allowed 1m0s", naming neither the key nor its
// line (TestBrkPFranzGoBoundsNamed). It is the key's error now, with the
// nearest value franz-go takes.
func (b *builder) kgoMillis(k, v string, lo, hi int64) (time.Duration, error) {
	d, err := b.millis(k, v, 0)
	if err != nil {
		return 0, err
	}
	if ms := d.Milliseconds(); ms < lo || ms > hi {
		return 0, b.errf(k, v, "franz-go, kmirror's Kafka client, takes %d to %d ms here: write %d", lo, hi, min(max(ms, lo), hi))
	}
	return d, nil
}

func (b *builder) integer(k, v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, b.errf(k, v, "not a whole number")
	}
	if n < lo || n > hi {
		return 0, b.errf(k, v, "must be between %d and %d", lo, hi)
	}
	return n, nil
}

func (b *builder) boolean(k, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, b.errf(k, v, "must be true or false")
}

// backoff converts retry.backoff.ms / retry.backoff.max.ms into an
// exponential backoff (Kafka 3.7+, KIP-580): backoff·2^(n-1), capped at max.
func (b *builder) backoff(_, _ string) error {
	if b.backoffDone {
		return nil
	}
	b.backoffDone = true
	base, maxB := 100*time.Millisecond, time.Second
	if v, ok := b.s["retry.backoff.ms"]; ok {
		d, err := b.millis("retry.backoff.ms", v, 0)
		if err != nil {
			return err
		}
		base = d
	}
	if v, ok := b.s["retry.backoff.max.ms"]; ok {
		d, err := b.millis("retry.backoff.max.ms", v, 0)
		if err != nil {
			return err
		}
		maxB = d
	}
	if maxB < base {
		maxB = base
	}
	fn := func(tries int) time.Duration {
		d := base
		for i := 1; i < tries && d < maxB; i++ {
			d *= 2
		}
		return min(d, maxB)
	}
	effect := fmt.Sprintf("kgo.RetryBackoffFn(%s doubling up to %s)", base, maxB)
	for _, k := range []string{"retry.backoff.ms", "retry.backoff.max.ms"} {
		if v, ok := b.s[k]; ok {
			b.line(k, v, effect)
		}
	}
	b.out.Tuning = append(b.out.Tuning, kgo.RetryBackoffFn(fn))
	return nil
}

// producerSafety converts acks, enable.idempotence and
// max.in.flight.requests.per.connection together, with Kafka's rules: an
// explicit enable.idempotence=true conflicts with acks other than all or
// more than 5 requests in flight (error); without it, such settings turn
// idempotence off (Kafka 3.x), which franz-go needs spelled out.
func (b *builder) producerSafety(_, _ string) error {
	if b.producerDone {
		return nil
	}
	b.producerDone = true
	acks := -1
	if v, ok := b.get("acks"); ok {
		switch strings.ToLower(v) {
		case "all", "-1":
		case "1":
			acks = 1
		case "0":
			acks = 0
		default:
			return b.errf("acks", v, "must be all, -1, 0 or 1")
		}
	}
	idem, idemSet := true, false
	if v, ok := b.s["enable.idempotence"]; ok {
		on, err := b.boolean("enable.idempotence", v)
		if err != nil {
			return err
		}
		idem, idemSet = on, true
	}
	inflight := int64(5)
	if v, ok := b.s["max.in.flight.requests.per.connection"]; ok {
		n, err := b.integer("max.in.flight.requests.per.connection", v, 1, math.MaxInt32)
		if err != nil {
			return err
		}
		inflight = n
	}
	if acks != -1 {
		if idemSet && idem {
			return b.errf("acks", strconv.Itoa(acks), "enable.idempotence=true requires acks=all (Kafka rejects this combination)")
		}
		idem = false
	}
	if inflight > 5 {
		if idemSet && idem {
			return b.errf("max.in.flight.requests.per.connection", strconv.FormatInt(inflight, 10), "must be at most 5 with enable.idempotence=true")
		}
		idem = false
	}
	ack := map[int]kgo.Acks{-1: kgo.AllISRAcks(), 1: kgo.LeaderAck(), 0: kgo.NoAck()}[acks]
	ackName := map[int]string{-1: "kgo.AllISRAcks()", 1: "kgo.LeaderAck()", 0: "kgo.NoAck()"}[acks]
	if idem {
		for _, k := range []string{"acks", "enable.idempotence", "max.in.flight.requests.per.connection"} {
			if v, ok := b.s[k]; ok {
				b.line(k, v, "idempotent writes with kgo.RequiredAcks(kgo.AllISRAcks()) (franz-go keeps up to 5 requests in flight)")
			}
		}
		b.out.Tuning = append(b.out.Tuning, kgo.RequiredAcks(kgo.AllISRAcks()))
		return nil
	}
	effect := fmt.Sprintf("kgo.DisableIdempotentWrite(), kgo.RequiredAcks(%s), kgo.MaxProduceRequestsInflightPerBroker(%d)", ackName, inflight)
	for _, k := range []string{"acks", "enable.idempotence", "max.in.flight.requests.per.connection"} {
		if v, ok := b.s[k]; ok {
			b.line(k, v, effect)
		}
	}
	b.out.Tuning = append(b.out.Tuning, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(ack), kgo.MaxProduceRequestsInflightPerBroker(int(inflight)))
	if acks != -1 {
		b.warn("acks", fmt.Sprintf("acks=%d: replicated records acknowledged by fewer than all in-sync replicas can be lost when a partition leader fails", acks))
	}
	if inflight > 1 {
		b.warn("enable.idempotence", fmt.Sprintf("idempotent writes are off with %d requests in flight: a retried request can duplicate or reorder replicated records", inflight))
	}
	return nil
}

// compression converts compression.type and the per-codec levels
// (KIP-390).
func (b *builder) compression(_, _ string) error {
	if b.compressionDone {
		return nil
	}
	b.compressionDone = true
	typ, ok := b.get("compression.type")
	if !ok {
		for _, k := range []string{"compression.gzip.level", "compression.lz4.level", "compression.zstd.level"} {
			if v, ok := b.s[k]; ok {
				b.line(k, v, "no effect without compression.type")
			}
		}
		return nil
	}
	var codec kgo.CompressionCodec
	var name string
	switch strings.ToLower(typ) {
	case "none":
		codec, name = kgo.NoCompression(), "kgo.NoCompression()"
	case "gzip":
		codec, name = kgo.GzipCompression(), "kgo.GzipCompression()"
		if v, ok := b.s["compression.gzip.level"]; ok {
			n, err := b.integer("compression.gzip.level", v, -1, 9)
			if err != nil {
				return err
			}
			if n == 0 {
				return b.errf("compression.gzip.level", v, "must be -1 or between 1 and 9")
			}
			codec, name = codec.WithLevel(int(n)), fmt.Sprintf("kgo.GzipCompression().WithLevel(%d)", n)
			b.line("compression.gzip.level", v, name)
		}
	case "snappy":
		codec, name = kgo.SnappyCompression(), "kgo.SnappyCompression()"
	case "lz4":
		codec, name = kgo.Lz4Compression(), "kgo.Lz4Compression()"
		if v, ok := b.s["compression.lz4.level"]; ok {
			if _, err := b.integer("compression.lz4.level", v, 1, 17); err != nil {
				return err
			}
			b.line("compression.lz4.level", v, "no effect: franz-go uses lz4's default level")
		}
	case "zstd":
		codec, name = kgo.ZstdCompression(), "kgo.ZstdCompression()"
		if v, ok := b.s["compression.zstd.level"]; ok {
			n, err := b.integer("compression.zstd.level", v, -131072, 22)
			if err != nil {
				return err
			}
			// klauspost/compress levels: 1 fastest, 2 default (zstd 3),
			// 3 better (zstd 7-8), 4 best (zstd 11+).
			lvl := 2
			switch {
			case n < 3:
				lvl = 1
			case n >= 11:
				lvl = 4
			case n >= 7:
				lvl = 3
			}
			codec, name = codec.WithLevel(lvl), fmt.Sprintf("kgo.ZstdCompression().WithLevel(%d)", lvl)
			b.line("compression.zstd.level", v, name)
		}
	default:
		return b.errf("compression.type", typ, "must be none, gzip, snappy, lz4 or zstd")
	}
	b.add("compression.type", typ, "kgo.ProducerBatchCompression("+name+")", kgo.ProducerBatchCompression(codec))
	return nil
}

// ParseList parses a Kafka LIST value: trimmed; empty means an empty
// list; otherwise split on commas with surrounding whitespace removed
// (empty items are kept, as ConfigDef does).
func ParseList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return []string{}
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

// connection converts bootstrap.servers, client.id, security.protocol,
// ssl.* and sasl.*.
func (b *builder) connection() error {
	c := &b.out.Conn
	if v, ok := b.s["bootstrap.servers"]; ok {
		seeds := ParseList(v)
		if len(seeds) == 0 {
			return b.errf("bootstrap.servers", v, "must list at least one host:port")
		}
		for _, s := range seeds {
			host, port, err := net.SplitHostPort(s)
			if err != nil || host == "" {
				return b.errf("bootstrap.servers", v, "%q is not host:port", s)
			}
			if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
				return b.errf("bootstrap.servers", v, "%q has an invalid port", s)
			}
		}
		c.Seeds = seeds
		b.line("bootstrap.servers", strings.Join(seeds, ","), "kgo.SeedBrokers")
	}
	if v, ok := b.get("client.id"); ok && v != "" {
		if len(v) > 256 {
			// franz-go refused it when the Mirror was built, under the
			// cluster's alias ("client id length 300 is larger than max
			// allowed 256"), naming neither the key nor its line.
			return b.errf("client.id", v, "franz-go, kmirror's Kafka client, takes a client id of at most 256 bytes (this one has %d): shorten it", len(v))
		}
		c.ClientID = v
		b.line("client.id", v, "kgo.ClientID")
	}
	proto := "PLAINTEXT"
	if v, ok := b.get("security.protocol"); ok {
		proto = strings.ToUpper(v)
		switch proto {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return b.errf("security.protocol", v, "must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
		}
		b.line("security.protocol", proto, "")
	}
	c.Protocol = proto
	if proto == "SSL" || proto == "SASL_SSL" {
		if err := b.buildTLS(); err != nil {
			return err
		}
	}
	if proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" {
		if err := b.buildSASL(); err != nil {
			return err
		}
	}
	b.unusedSecurityKeys(proto)
	return nil
}

// unusedSecurityKeys warns, once per family, about ssl.* keys under a
// protocol without TLS and sasl.* keys under one without SASL: Kafka's
// clients ignore them too, and a forgotten security.protocol (PLAINTEXT by
// default) is the usual cause, which -check -strict should catch (a new
// user's finding: a file with sasl.jaas.config and an SSL trust store but
// no security.protocol passed -strict, the keys dropped without a word).
// The warning names the first key of each family, never a value.
func (b *builder) unusedSecurityKeys(proto string) {
	first := map[string]string{}
	for k, v := range b.s {
		if strings.TrimSpace(v) == "" {
			continue
		}
		for _, fam := range []string{"ssl.", "sasl."} {
			if strings.HasPrefix(k, fam) && (first[fam] == "" || k < first[fam]) {
				first[fam] = k
			}
		}
	}
	if k := first["ssl."]; k != "" && proto != "SSL" && proto != "SASL_SSL" {
		b.warn(k, fmt.Sprintf("security.protocol is %s, without TLS: the ssl.* settings have no effect (set security.protocol=SSL, or SASL_SSL with SASL)", proto))
	}
	if k := first["sasl."]; k != "" && proto != "SASL_PLAINTEXT" && proto != "SASL_SSL" {
		b.warn(k, fmt.Sprintf("security.protocol is %s, without SASL: the sasl.* settings have no effect (set security.protocol=SASL_SSL, or SASL_PLAINTEXT without TLS)", proto))
	}
}
