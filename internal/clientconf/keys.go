package clientconf

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// roleSet is a bit set of the roles a key applies to.
type roleSet uint8

const (
	rClient roleSet = 1 << iota
	rConsumer
	rProducer
	rAdmin

	rAll = rClient | rConsumer | rProducer | rAdmin
)

func (r Role) set() roleSet {
	switch r {
	case Consumer:
		return rConsumer
	case Producer:
		return rProducer
	case Admin:
		return rAdmin
	}
	return rClient
}

// keyDef says what one Kafka client key becomes.
type keyDef struct {
	roles roleSet
	// conv adds kgo options for the value; nil means the key is accepted
	// without effect (note says why) or, with unsupported, warned about.
	conv func(b *builder, key, value string) error
	// check validates the value of a key without effect as Kafka's client
	// parses it (nil: any value); see refusedByKafka.
	check       func(b *builder, key, value string) error
	note        string
	unsupported bool
}

// intCheck is a check of an INT key of Kafka's client at least lo.
func intCheck(lo int64) func(b *builder, key, value string) error {
	return func(b *builder, k, v string) error {
		_, err := b.integer(k, v, lo, math.MaxInt32)
		return refusedByKafka(err)
	}
}

// boolCheck is a check of a BOOLEAN key of Kafka's client.
func boolCheck(b *builder, k, v string) error {
	_, err := b.boolean(k, v)
	return refusedByKafka(err)
}

// refusedByKafka completes the error of a value Kafka's client refuses
// for a key kmirror does not apply. MM2 creates its clients with the
// file's values, so such a value (max.poll.records=0, say) fails the
// connector at start ("Invalid value 0 for configuration
// max.poll.records"), while kmirror accepted it as "no effect" and the file
// failed only once moved back to MM2 (TestBrkPNoEffectKeysValidated).
func refusedByKafka(err error) error {
	var e *Error
	if errors.As(err, &e) {
		e.Reason += ": Kafka's client refuses it, so MM2's connector fails to start (the key has no effect in kmirror): fix the value or remove the line"
	}
	return err
}

// tuning lists every non-connection client key kmirror knows. Keys of the
// connection (bootstrap.servers, client.id, security.protocol, ssl.*,
// sasl.*) are handled in Build itself.
var tuning = map[string]keyDef{
	// Common to all clients.
	"request.timeout.ms": {roles: rAll, conv: func(b *builder, k, v string) error {
		// kgo.RequestTimeoutOverhead's bounds (ProduceRequestTimeout's
		// are wider).
		d, err := b.kgoMillis(k, v, 100, 15*60*1000)
		if err != nil {
			return err
		}
		b.add(k, v, fmt.Sprintf("kgo.RequestTimeoutOverhead(%s)", d), kgo.RequestTimeoutOverhead(d))
		if b.role == Producer {
			b.add(k, v, fmt.Sprintf("kgo.ProduceRequestTimeout(%s)", d), kgo.ProduceRequestTimeout(d))
		}
		return nil
	}},
	"retry.backoff.ms":     {roles: rAll, conv: (*builder).backoff},
	"retry.backoff.max.ms": {roles: rAll, conv: (*builder).backoff},
	"metadata.max.age.ms": {roles: rAll, conv: func(b *builder, k, v string) error {
		// At least kgo's default metadata min age, at most an hour.
		d, err := b.kgoMillis(k, v, 5000, 60*60*1000)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.MetadataMaxAge(%s)", d), kgo.MetadataMaxAge(d))
		}
		return err
	}},
	"connections.max.idle.ms": {roles: rAll, conv: func(b *builder, k, v string) error {
		d, err := b.kgoMillis(k, v, 100, 15*60*1000)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.ConnIdleTimeout(%s)", d), kgo.ConnIdleTimeout(d))
		}
		return err
	}},
	"socket.connection.setup.timeout.ms": {roles: rAll, conv: func(b *builder, k, v string) error {
		d, err := b.millis(k, v, 1)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.DialTimeout(%s)", d), kgo.DialTimeout(d))
		}
		return err
	}},
	"retries": {roles: rProducer | rAdmin | rClient, conv: func(b *builder, k, v string) error {
		n, err := b.integer(k, v, 0, math.MaxInt32)
		if err != nil {
			return err
		}
		if b.role == Producer {
			b.add(k, v, fmt.Sprintf("kgo.RecordRetries(%d)", n), kgo.RecordRetries(int(n)))
		} else {
			b.add(k, v, fmt.Sprintf("kgo.RequestRetries(%d)", n), kgo.RequestRetries(int(n)))
		}
		return nil
	}},
	"client.rack": {roles: rConsumer | rClient, conv: func(b *builder, k, v string) error {
		v = strings.TrimSpace(v)
		if v != "" {
			b.add(k, v, fmt.Sprintf("kgo.Rack(%q)", v), kgo.Rack(v))
		}
		return nil
	}},
	"enable.metrics.push": {roles: rAll, conv: func(b *builder, k, v string) error {
		on, err := b.boolean(k, v)
		if err == nil && !on {
			b.add(k, v, "kgo.DisableClientMetrics()", kgo.DisableClientMetrics())
		}
		return err
	}},
	"reconnect.backoff.ms":                     {roles: rAll, note: "franz-go backs off reconnects with retry.backoff.ms"},
	"reconnect.backoff.max.ms":                 {roles: rAll, note: "franz-go backs off reconnects with retry.backoff.ms"},
	"socket.connection.setup.timeout.max.ms":   {roles: rAll, note: "franz-go uses socket.connection.setup.timeout.ms for every dial"},
	"client.dns.lookup":                        {roles: rAll, note: "franz-go tries every address a name resolves to (use_all_dns_ips)"},
	"receive.buffer.bytes":                     {roles: rAll, note: "the operating system sizes socket buffers"},
	"send.buffer.bytes":                        {roles: rAll, note: "the operating system sizes socket buffers"},
	"metric.reporters":                         {roles: rAll, note: "kmirror exports Prometheus metrics (mirrorprom.WithRegisterer)"},
	"metrics.num.samples":                      {roles: rAll, note: "kmirror exports Prometheus metrics"},
	"metrics.sample.window.ms":                 {roles: rAll, note: "kmirror exports Prometheus metrics"},
	"metrics.recording.level":                  {roles: rAll, note: "kmirror exports Prometheus metrics"},
	"auto.include.jmx.reporter":                {roles: rAll, note: "kmirror has no JMX"},
	"default.api.timeout.ms":                   {roles: rConsumer | rAdmin, note: "kmirror bounds admin rounds with admin.timeout.ms"},
	"interceptor.classes":                      {roles: rConsumer | rProducer, unsupported: true, note: "Java interceptors cannot run in kmirror"},
	"metadata.recovery.strategy":               {roles: rAll, note: "franz-go re-bootstraps on its own"},
	"metadata.recovery.rebootstrap.trigger.ms": {roles: rAll, note: "franz-go re-bootstraps on its own"},

	// Consumer.
	"isolation.level": {roles: rConsumer, conv: func(b *builder, k, v string) error {
		rc, err := ParseIsolationLevel(v)
		if err != nil {
			return b.errf(k, v, "%v", err)
		}
		if rc {
			b.add(k, v, "kgo.FetchIsolationLevel(kgo.ReadCommitted())", kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		} else {
			b.add(k, v, "kgo.FetchIsolationLevel(kgo.ReadUncommitted())", kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
		}
		return nil
	}},
	"auto.offset.reset": {roles: rConsumer, conv: func(b *builder, k, v string) error {
		if _, err := ParseAutoOffsetReset(v); err != nil {
			return b.errf(k, v, "%v", err)
		}
		b.add(k, v, "where a flow starts partitions without a resume point (FlowConfig.StartOffset)")
		return nil
	}},
	"fetch.max.bytes": {roles: rConsumer, conv: func(b *builder, k, v string) error {
		n, err := b.integer(k, v, 1, math.MaxInt32)
		if err != nil {
			return err
		}
		// As max.request.size: kgo's cap on a response (BrokerMaxReadBytes,
		// 100 MiB by default) is raised with it, up to franz-go's 1 GiB; a
		// value above the default was refused when the Mirror was built
		// ("A: invalid client options: max broker read bytes 104857600 is
		// erroneously less than max fetch bytes 200000000").
		if hi := int64(1<<30 - headroom); n > hi {
			return b.errf(k, v, "franz-go, kmirror's Kafka client, takes 1 to %d bytes here: write %d", hi, hi)
		}
		b.add(k, v, fmt.Sprintf("kgo.FetchMaxBytes(%d)", n), kgo.FetchMaxBytes(int32(n)))
		if n > defaultBrokerMaxReadBytes-headroom {
			b.add(k, v, fmt.Sprintf("kgo.BrokerMaxReadBytes(%d)", n+headroom), kgo.BrokerMaxReadBytes(int32(n+headroom)))
		}
		return nil
	}},
	"max.partition.fetch.bytes": {roles: rConsumer, conv: func(b *builder, k, v string) error {
		n, err := b.integer(k, v, 1, math.MaxInt32)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.FetchMaxPartitionBytes(%d)", n), kgo.FetchMaxPartitionBytes(int32(n)))
		}
		return err
	}},
	"fetch.min.bytes": {roles: rConsumer, conv: func(b *builder, k, v string) error {
		n, err := b.integer(k, v, 0, math.MaxInt32)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.FetchMinBytes(%d)", n), kgo.FetchMinBytes(int32(n)))
		}
		return err
	}},
	"fetch.max.wait.ms": {roles: rConsumer, conv: func(b *builder, k, v string) error {
		d, err := b.kgoMillis(k, v, 10, math.MaxInt32)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.FetchMaxWait(%s)", d), kgo.FetchMaxWait(d))
		}
		return err
	}},
	"check.crcs": {roles: rConsumer, conv: func(b *builder, k, v string) error {
		on, err := b.boolean(k, v)
		if err == nil && !on {
			b.add(k, v, "kgo.DisableFetchCRCValidation()", kgo.DisableFetchCRCValidation())
		}
		return err
	}},
	"group.id":                      {roles: rConsumer, note: "kmirror assigns source partitions itself (as MM2 does); progress is kept in resume points, not a consumer group"},
	"group.instance.id":             {roles: rConsumer, note: "kmirror's replication consumers use no consumer group"},
	"group.protocol":                {roles: rConsumer, note: "kmirror's replication consumers use no consumer group"},
	"group.remote.assignor":         {roles: rConsumer, note: "kmirror's replication consumers use no consumer group"},
	"partition.assignment.strategy": {roles: rConsumer, note: "kmirror's replication consumers use no consumer group"},
	"session.timeout.ms":            {roles: rConsumer, check: intCheck(math.MinInt32), note: "kmirror's replication consumers use no consumer group"},
	"heartbeat.interval.ms":         {roles: rConsumer, check: intCheck(math.MinInt32), note: "kmirror's replication consumers use no consumer group"},
	"max.poll.interval.ms":          {roles: rConsumer, check: intCheck(1), note: "kmirror's replication consumers use no consumer group"},
	"enable.auto.commit":            {roles: rConsumer, note: "MM2 forces enable.auto.commit=false; kmirror never commits source offsets"},
	"auto.commit.interval.ms":       {roles: rConsumer, check: intCheck(0), note: "kmirror never commits source offsets"},
	"max.poll.records":              {roles: rConsumer, check: intCheck(1), note: "kmirror replicates every fetched batch; fetch.max.bytes bounds a fetch"},
	"exclude.internal.topics":       {roles: rConsumer, check: boolCheck, note: "MM2's topic filters decide which topics are read"},
	"allow.auto.create.topics":      {roles: rConsumer, check: boolCheck, note: "kmirror never creates topics through metadata requests"},
	"key.deserializer":              {roles: rConsumer, note: "kmirror copies record bytes unchanged"},
	"value.deserializer":            {roles: rConsumer, note: "kmirror copies record bytes unchanged"},
	"client.id.prefix":              {roles: rConsumer | rProducer, note: "not a Kafka client key"},

	// Producer.
	"acks":                                  {roles: rProducer, conv: (*builder).producerSafety},
	"enable.idempotence":                    {roles: rProducer, conv: (*builder).producerSafety},
	"max.in.flight.requests.per.connection": {roles: rProducer, conv: (*builder).producerSafety},
	"compression.type":                      {roles: rProducer, conv: (*builder).compression},
	"compression.gzip.level":                {roles: rProducer, conv: (*builder).compression},
	"compression.lz4.level":                 {roles: rProducer, conv: (*builder).compression},
	"compression.zstd.level":                {roles: rProducer, conv: (*builder).compression},
	"linger.ms": {roles: rProducer, conv: func(b *builder, k, v string) error {
		d, err := b.kgoMillis(k, v, 0, 60*1000)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.ProducerLinger(%s)", d), kgo.ProducerLinger(d))
		}
		return err
	}},
	"max.request.size": {roles: rProducer, conv: func(b *builder, k, v string) error {
		n, err := b.integer(k, v, 1, math.MaxInt32)
		if err != nil {
			return err
		}
		// franz-go's bounds of a record batch and, with the headroom, of
		// a request (as kgoMillis).
		if lo, hi := int64(512), int64(1<<30-headroom); n < lo || n > hi {
			return b.errf(k, v, "franz-go, kmirror's Kafka client, takes %d to %d bytes here: write %d", lo, hi, min(max(n, lo), hi))
		}
		b.add(k, v, fmt.Sprintf("kgo.ProducerBatchMaxBytes(%d)", n), kgo.ProducerBatchMaxBytes(int32(n)))
		if n > defaultBrokerMaxWriteBytes {
			b.add(k, v, fmt.Sprintf("kgo.BrokerMaxWriteBytes(%d)", n+headroom), kgo.BrokerMaxWriteBytes(int32(min(int64(n)+headroom, math.MaxInt32))))
		}
		return nil
	}},
	"buffer.memory": {roles: rProducer, conv: func(b *builder, k, v string) error {
		n, err := b.integer(k, v, 1, math.MaxInt32)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.MaxBufferedBytes(%d)", n), kgo.MaxBufferedBytes(int(n)))
		}
		return err
	}},
	"delivery.timeout.ms": {roles: rProducer, conv: func(b *builder, k, v string) error {
		d, err := b.kgoMillis(k, v, 1000, math.MaxInt32)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.RecordDeliveryTimeout(%s) for checkpoints and heartbeats; not for replicated records", d), kgo.RecordDeliveryTimeout(d))
			b.warn(k, "franz-go measures the delivery timeout from the record's timestamp, which replication keeps (a record older than it would fail at once): "+
				"kmirror applies it to the checkpoint and heartbeat producers only; the replication producer retries until the target takes the record (bound it with retries)")
		}
		return err
	}},
	"batch.size": {roles: rProducer, conv: func(b *builder, k, v string) error {
		if _, err := b.integer(k, v, 0, math.MaxInt32); err != nil {
			return err
		}
		b.add(k, v, "no franz-go equivalent: batches grow up to max.request.size while linger.ms allows; batch.size is not a record size limit in kmirror")
		return nil
	}},
	// The exactly-once units' transactional producers (kmirror sets their
	// transactional ids itself).
	"transaction.timeout.ms": {roles: rProducer, conv: func(b *builder, k, v string) error {
		d, err := b.millis(k, v, 1)
		if err == nil {
			b.add(k, v, fmt.Sprintf("kgo.TransactionTimeout(%s)", d), kgo.TransactionTimeout(d))
		}
		return err
	}},
	"transactional.id":                                    {roles: rProducer, unsupported: true, note: "kmirror sets the transactional ids itself (<group>-<slot>, one per unit of work, with <target>.exactly.once.source.support=enabled): one fixed id cannot be shared by several units"},
	"partitioner.class":                                   {roles: rProducer, note: "kmirror keeps every record in its source partition"},
	"partitioner.ignore.keys":                             {roles: rProducer, note: "kmirror keeps every record in its source partition"},
	"partitioner.adaptive.partitioning.enable":            {roles: rProducer, note: "kmirror keeps every record in its source partition"},
	"partitioner.availability.timeout.ms":                 {roles: rProducer, note: "kmirror keeps every record in its source partition"},
	"key.serializer":                                      {roles: rProducer, note: "kmirror copies record bytes unchanged"},
	"value.serializer":                                    {roles: rProducer, note: "kmirror copies record bytes unchanged"},
	"max.block.ms":                                        {roles: rProducer, note: "kmirror blocks on a full buffer until records are acknowledged"},
	"metadata.max.idle.ms":                                {roles: rProducer, note: "franz-go refreshes metadata with metadata.max.age.ms"},
	"transaction.two.phase.commit.enable":                 {roles: rProducer, note: "kmirror's transactions are committed by kmirror itself, not prepared for an external coordinator (KIP-939)"},
	"security.providers":                                  {roles: rAll, note: "Java security providers do not apply to Go TLS"},
	"ssl.engine.factory.class":                            {roles: rAll, unsupported: true, note: "a Java SSL engine factory cannot run in kmirror"},
	"sasl.client.callback.handler.class":                  {roles: rAll, unsupported: true, note: "Java callback handlers cannot run in kmirror"},
	"sasl.login.class":                                    {roles: rAll, unsupported: true, note: "Java login classes cannot run in kmirror"},
	"sasl.kerberos.service.name":                          {roles: rAll, note: "GSSAPI is not supported"},
	"sasl.kerberos.kinit.cmd":                             {roles: rAll, note: "GSSAPI is not supported"},
	"sasl.kerberos.ticket.renew.window.factor":            {roles: rAll, note: "GSSAPI is not supported"},
	"sasl.kerberos.ticket.renew.jitter":                   {roles: rAll, note: "GSSAPI is not supported"},
	"sasl.kerberos.min.time.before.relogin":               {roles: rAll, note: "GSSAPI is not supported"},
	"sasl.login.refresh.window.factor":                    {roles: rAll, note: "kmirror refreshes OAuth tokens at 80% of their lifetime"},
	"sasl.login.refresh.window.jitter":                    {roles: rAll, note: "kmirror refreshes OAuth tokens at 80% of their lifetime"},
	"sasl.login.refresh.min.period.seconds":               {roles: rAll, note: "kmirror refreshes OAuth tokens at 80% of their lifetime"},
	"sasl.login.refresh.buffer.seconds":                   {roles: rAll, note: "kmirror refreshes OAuth tokens at 80% of their lifetime"},
	"sasl.login.retry.backoff.ms":                         {roles: rAll, note: "a failed token request fails the connection attempt, which franz-go retries"},
	"sasl.login.retry.backoff.max.ms":                     {roles: rAll, note: "a failed token request fails the connection attempt, which franz-go retries"},
	"sasl.oauthbearer.scope.claim.name":                   {roles: rAll, note: "only brokers validate tokens"},
	"sasl.oauthbearer.sub.claim.name":                     {roles: rAll, note: "only brokers validate tokens"},
	"sasl.oauthbearer.jwks.endpoint.url":                  {roles: rAll, note: "only brokers validate tokens"},
	"sasl.oauthbearer.jwks.endpoint.refresh.ms":           {roles: rAll, note: "only brokers validate tokens"},
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms":     {roles: rAll, note: "only brokers validate tokens"},
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": {roles: rAll, note: "only brokers validate tokens"},
	"sasl.oauthbearer.clock.skew.seconds":                 {roles: rAll, note: "only brokers validate tokens"},
	"sasl.oauthbearer.expected.audience":                  {roles: rAll, note: "only brokers validate tokens"},
	"sasl.oauthbearer.expected.issuer":                    {roles: rAll, note: "only brokers validate tokens"},
	"ssl.provider":                                        {roles: rAll, note: "Go's crypto/tls is the TLS provider"},
	"ssl.secure.random.implementation":                    {roles: rAll, note: "Go's crypto/rand is used"},
	"ssl.keymanager.algorithm":                            {roles: rAll, note: "Go's crypto/tls chooses the key manager"},
	"ssl.trustmanager.algorithm":                          {roles: rAll, note: "Go's crypto/tls verifies certificates (PKIX)"},
	"ssl.cipher.suites":                                   {roles: rAll, note: "Go's crypto/tls chooses secure cipher suites"},
}

// headroom is added to max.request.size when raising kgo's cap on one
// request (a produce request carries headers besides the batch).
const (
	defaultBrokerMaxWriteBytes = 100 << 20
	defaultBrokerMaxReadBytes  = 100 << 20
	headroom                   = 1 << 20
)

// connectionKeys are handled by Build itself (not by tuning).
var connectionKeys = []string{
	"bootstrap.servers", "client.id", "security.protocol",
	"sasl.mechanism", "sasl.jaas.config", "sasl.login.callback.handler.class",
	"sasl.oauthbearer.token.endpoint.url", "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms",
	"sasl.oauthbearer.header.urlencode",
	"ssl.protocol", "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates", "ssl.truststore.password",
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.keystore.password", "ssl.key.password",
}

// IsConnectionKey reports whether key is one of MM2's connection keys
// (MirrorClientConfig's client definition: bootstrap.servers,
// security.protocol and every ssl.* and sasl.* key), which MM2 copies from
// the cluster and top level into every client role (docs/mm2-compat.md §9.5).
func IsConnectionKey(key string) bool {
	return key == "bootstrap.servers" || key == "security.protocol" ||
		strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl.")
}

// KnownKey reports whether key is a client key kmirror knows for role
// (converted, accepted without effect, or reported as unsupported).
func KnownKey(role Role, key string) bool {
	for _, k := range connectionKeys {
		if k == key {
			return true
		}
	}
	d, ok := tuning[key]
	return ok && (d.roles&role.set() != 0 || role == Client)
}

// Keys returns the sorted client keys kmirror knows for role (for
// suggestions).
func Keys(role Role) []string {
	var out []string
	out = append(out, connectionKeys...)
	for k, d := range tuning {
		if d.roles&role.set() != 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// ParseIsolationLevel parses isolation.level: "read_committed" (true) or
// "read_uncommitted" (false), trimmed and case-insensitive.
func ParseIsolationLevel(v string) (readCommitted bool, err error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "read_committed":
		return true, nil
	case "read_uncommitted":
		return false, nil
	}
	return false, fmt.Errorf("must be read_committed or read_uncommitted")
}

// ParseAutoOffsetReset parses auto.offset.reset: "earliest" (false) or
// "latest" (true), trimmed and case-insensitive. "none" and Kafka 4.0's
// "by_duration:..." are rejected: kmirror must know where to start a
// partition that has no resume point.
func ParseAutoOffsetReset(v string) (latest bool, err error) {
	s := strings.ToLower(strings.TrimSpace(v))
	switch {
	case s == "earliest":
		return false, nil
	case s == "latest":
		return true, nil
	case s == "none":
		return false, fmt.Errorf("kmirror supports earliest or latest: with none, MM2's replication task fails on every partition without a stored position")
	case strings.HasPrefix(s, "by_duration:"):
		return false, fmt.Errorf("kmirror supports earliest or latest (by_duration is not supported)")
	}
	return false, fmt.Errorf("must be earliest or latest")
}

// NotWholeNumber says that v is not a whole number of unit (named name), as
// an MM2 interval is written, and what to write instead: a duration with
// a unit ("30s") as the number it means, a fraction rounded.
func NotWholeNumber(v string, unit time.Duration, name string) string {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil && d > 0 && d%unit == 0 {
		return fmt.Sprintf("not a whole number of %s: write %d (the key's unit is %s: no unit in the value)", name, d/unit, name)
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0.5 && f < math.MaxInt32 {
		return fmt.Sprintf("not a whole number of %s: write a whole number, e.g. %d", name, int64(math.Round(f)))
	}
	return fmt.Sprintf("not a whole number of %s: write digits only", name)
}

// parseMillis parses a non-negative Java long of milliseconds.
func parseMillis(v string) (time.Duration, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s", NotWholeNumber(v, time.Millisecond, "milliseconds"))
	}
	if n < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	if n > math.MaxInt64/int64(time.Millisecond) {
		return 0, fmt.Errorf("too large")
	}
	return time.Duration(n) * time.Millisecond, nil
}
