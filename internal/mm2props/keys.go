package mm2props

import "strings"

// Default class names MM2 accepts without a warning.
const (
	byteArrayConverter     = "org.apache.kafka.connect.converters.ByteArrayConverter"
	defaultTopicFilter     = "org.apache.kafka.connect.mirror.DefaultTopicFilter"
	defaultGroupFilter     = "org.apache.kafka.connect.mirror.DefaultGroupFilter"
	defaultConfigPropertyF = "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"
	defaultForwardingAdmin = "org.apache.kafka.clients.admin.ForwardingAdmin"
)

// ConnectorKeys are the MM2 connector settings kmirror maps to flow
// behaviour (docs/mm2-compat.md §9.1-9.4). They are valid at top level (all flows) and
// per flow (`<source>-><target>.<key>`, which wins).
var ConnectorKeys = []string{
	"enabled",
	"topics", "topics.exclude", "groups", "groups.exclude", "config.properties.exclude", "use.defaults.from",
	"replication.policy.class", "replication.policy.separator", "replication.policy.internal.topic.separator.enabled",
	"replication.factor", "offset-syncs.topic.replication.factor", "checkpoints.topic.replication.factor",
	"heartbeats.topic.replication.factor", "offset-syncs.topic.location", "offset.lag.max",
	"refresh.topics.enabled", "refresh.topics.interval.seconds",
	"sync.topic.configs.enabled", "sync.topic.configs.interval.seconds",
	"sync.topic.acls.enabled", "sync.topic.acls.interval.seconds",
	"emit.offset-syncs.enabled", "heartbeats.replication.enabled",
	"refresh.groups.enabled", "refresh.groups.interval.seconds",
	"emit.checkpoints.enabled", "emit.checkpoints.interval.seconds",
	"sync.group.offsets.enabled", "sync.group.offsets.interval.seconds",
	"emit.heartbeats.enabled", "emit.heartbeats.interval.seconds",
	"admin.timeout.ms",
	// Connect keys of MirrorSourceConnector that kmirror maps: the slots of
	// a flow's members and exactly-once replication (KIP-618).
	"tasks.max", "exactly.once.support", "transaction.boundary", "transaction.boundary.interval.ms",
	// kmirror keys (topologies): mirror.FlowConfig.AllowTopicCollisions and
	// DisableProvenanceHeader; shallow copy: mirror.FlowConfig.ShallowCopy.
	"allow.topic.collisions", "provenance.header.enabled", "shallow.copy.enabled",
}

// DeprecatedAliases maps MM2 3.x names (KIP-629, removed in Kafka 4.0 by
// KAFKA-17529) to their replacements.
var DeprecatedAliases = map[string]string{
	"topics.blacklist":            "topics.exclude",
	"groups.blacklist":            "groups.exclude",
	"config.properties.blacklist": "config.properties.exclude",
}

// connectorNoEffect are connector keys kmirror accepts without effect.
var connectorNoEffect = map[string]string{
	"name":                          "kmirror has no Connect connectors",
	"connector.class":               "kmirror has no Connect connectors",
	"tasks.max.enforce":             "kmirror has no Connect tasks",
	"config.action.reload":          "kmirror reads the file once at start",
	"errors.retry.timeout":          "kmirror retries failed requests until they succeed or the flow stops",
	"errors.retry.delay.max.ms":     "kmirror retries failed requests with the client backoff",
	"errors.tolerance":              "kmirror copies bytes and has no conversion errors to tolerate",
	"errors.log.enable":             "kmirror has no conversion errors",
	"errors.log.include.messages":   "kmirror has no conversion errors",
	"consumer.poll.timeout.ms":      "kmirror's fetches wait fetch.max.wait.ms",
	"metric.reporters":              "kmirror exports Prometheus metrics (mirrorprom.WithRegisterer)",
	"auto.include.jmx.reporter":     "kmirror has no JMX",
	"add.source.alias.to.metrics":   "kmirror's metrics always carry the source alias",
	"use.incremental.alter.configs": "kmirror always uses IncrementalAlterConfigs",
	"task.assigned.partitions":      "internal MM2 task setting",
	"task.assigned.groups":          "internal MM2 task setting",
	"task.index":                    "internal MM2 task setting",
	"topic.creation.enable":         "MM2 and kmirror create remote topics themselves",
	"topic.creation.groups":         "MM2 and kmirror create remote topics themselves",
	"key.converter":                 "kmirror copies keys unchanged (as ByteArrayConverter)",
	"value.converter":               "kmirror copies values unchanged (as ByteArrayConverter)",
	"header.converter":              "kmirror copies headers unchanged (as ByteArrayConverter)",
	"offsets.storage.topic":         "kmirror keeps resume points in mm2-offsets.<source>.internal",
}

// connectorUnsupported are connector keys whose effect kmirror does not
// implement; each produces a warning when set to a non-default value.
var connectorUnsupported = map[string]struct{ def, note string }{
	"topic.filter.class":           {defaultTopicFilter, "custom topic filters cannot run in kmirror: topics and topics.exclude select topics"},
	"group.filter.class":           {defaultGroupFilter, "custom group filters cannot run in kmirror: groups and groups.exclude select groups"},
	"config.property.filter.class": {defaultConfigPropertyF, "custom config-property filters cannot run in kmirror: config.properties.exclude selects topic configs"},
	"forwarding.admin.class":       {defaultForwardingAdmin, "a custom ForwardingAdmin cannot run in kmirror: topics, configs and ACLs are changed with the target's admin client"},
	"transforms":                   {"", "Single Message Transforms cannot run in kmirror: records are copied unchanged"},
	"predicates":                   {"", "predicates are only used by transforms, which kmirror does not run"},
}

// workerPrefixes are the top-level key prefixes MM2 copies into every
// herder's worker configuration (MirrorMakerConfig.workerConfig).
var workerPrefixes = []string{"offset.storage", "config.storage", "status.storage", "key.converter",
	"value.converter", "header.converter", "task", "worker", "replication.policy"}

// workerNoEffect are worker keys (valid as `<target>.<key>`, some also at
// top level through workerPrefixes) kmirror accepts without effect.
var workerNoEffect = map[string]string{
	"config.storage.topic":                    "kmirror keeps no Connect config topic",
	"config.storage.replication.factor":       "kmirror keeps no Connect config topic",
	"status.storage.topic":                    "kmirror keeps no Connect status topic",
	"status.storage.replication.factor":       "kmirror keeps no Connect status topic",
	"status.storage.partitions":               "kmirror keeps no Connect status topic",
	"offset.storage.partitions":               "kmirror's resume points topic has one partition per flow source",
	"offset.flush.timeout.ms":                 "kmirror waits for acknowledgements before storing resume points",
	"group.id":                                "kmirror has no Connect worker group: a flow's members join the group kmirror.<source>-><target>",
	"connector.client.config.override.policy": "kmirror has no Connect client override policy",
	"scheduled.rebalance.max.delay.ms":        "kmirror has no Connect worker group",
	"worker.sync.timeout.ms":                  "kmirror has no Connect worker group",
	"worker.unsync.backoff.ms":                "kmirror has no Connect worker group",
	"task.shutdown.graceful.timeout.ms":       "kmirror stops flows when its context is cancelled",
	"key.converter":                           "kmirror copies keys unchanged (as ByteArrayConverter)",
	"value.converter":                         "kmirror copies values unchanged (as ByteArrayConverter)",
	"header.converter":                        "kmirror copies headers unchanged (as ByteArrayConverter)",
	"plugin.path":                             "kmirror loads no plugins",
	"metric.reporters":                        "kmirror exports Prometheus metrics (mirrorprom.WithRegisterer)",
	"listeners":                               "kmirror has no REST server",
	"rest.advertised.host.name":               "kmirror has no REST server",
	"rest.advertised.port":                    "kmirror has no REST server",
	"rest.advertised.listener":                "kmirror has no REST server",
}

// workerMapped are worker keys kmirror maps (read as `<target>.<key>`).
var workerMapped = map[string]bool{
	"offset.flush.interval.ms":          true,
	"offset.storage.replication.factor": true,
	"exactly.once.source.support":       true,
	"session.timeout.ms":                true,
	"heartbeat.interval.ms":             true,
	"rebalance.timeout.ms":              true,
}

// workerUnsupported are worker keys kmirror warns about.
var workerUnsupported = map[string]string{
	"offset.storage.topic": "kmirror keeps resume points in mm2-offsets.<source>.internal",
}

// topNoEffect are top-level dedicated-mode keys without effect.
var topNoEffect = map[string]string{
	"dedicated.mode.enable.internal.rest":     "kmirror has no REST server; its nodes need none to share work",
	"listeners":                               "kmirror has no REST server",
	"admin.listeners":                         "kmirror has no REST server",
	"rest.advertised.host.name":               "kmirror has no REST server",
	"rest.advertised.port":                    "kmirror has no REST server",
	"rest.advertised.listener":                "kmirror has no REST server",
	"connector.client.config.override.policy": "MM2 sets it itself; kmirror has no Connect client override policy",
	"plugin.path":                             "kmirror loads no plugins",
}

// notMM2 are keys people write that no MM2 version reads, with advice.
var notMM2 = map[string]string{
	"topics.auto.create":        "not an MM2 setting (MM2 and kmirror always create remote topics): remove it",
	"auto.create.topics.enable": "a broker setting, not an MM2 setting: remove it",
	"sync.topic.configs":        "not an MM2 setting: did you mean sync.topic.configs.enabled?",
}

// isFlowClientKey reports whether key (a flow-scoped key without the
// `<source>-><target>.` prefix) is one of MM2's connector-level client
// settings: consumer.*, producer.*, admin.*, their source./target.
// variants, *.override.* and source.cluster./target.cluster.
func isFlowClientKey(key string) bool {
	for _, p := range []string{"consumer.", "producer.", "admin.", "source.consumer.", "source.producer.", "source.admin.",
		"target.consumer.", "target.producer.", "target.admin.", "source.cluster.", "target.cluster."} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// FlowSourceConsumerKeys are the client settings kmirror honours per flow
// for the flow's replication consumer (they map to FlowConfig fields).
var FlowSourceConsumerKeys = []string{"auto.offset.reset", "isolation.level", "fetch.max.bytes", "max.partition.fetch.bytes"}

// FlowTargetProducerKeys are the client settings kmirror honours per flow
// for the flow's replication producer.
var FlowTargetProducerKeys = []string{"buffer.memory"}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// allTopKeys lists the keys valid at top level, for suggestions.
func allTopKeys() []string {
	out := []string{"clusters", "config.providers", "bootstrap.servers", "security.protocol", "sasl.mechanism",
		"sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.type", "ssl.keystore.location",
		"ssl.endpoint.identification.algorithm", "offset.storage.replication.factor", "offset.storage.topic"}
	out = append(out, ConnectorKeys...)
	for k := range DeprecatedAliases {
		out = append(out, k)
	}
	for k := range connectorNoEffect {
		out = append(out, k)
	}
	for k := range connectorUnsupported {
		out = append(out, k)
	}
	for k := range topNoEffect {
		out = append(out, k)
	}
	for k := range workerNoEffect {
		if strings.HasPrefix(k, "config.storage") || strings.HasPrefix(k, "status.storage") || strings.HasPrefix(k, "offset.storage") {
			out = append(out, k)
		}
	}
	return out
}

// allFlowKeys lists the keys valid per flow, for suggestions.
func allFlowKeys() []string {
	out := append([]string{}, ConnectorKeys...)
	for k := range DeprecatedAliases {
		out = append(out, k)
	}
	for k := range connectorNoEffect {
		out = append(out, k)
	}
	for k := range connectorUnsupported {
		out = append(out, k)
	}
	return out
}

// allClusterKeys lists the keys valid per cluster, for suggestions.
func allClusterKeys() []string {
	out := []string{"bootstrap.servers", "client.id", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
		"ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.certificates", "ssl.keystore.location",
		"ssl.keystore.type", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.key.password",
		"ssl.endpoint.identification.algorithm", "ssl.enabled.protocols"}
	for k := range workerMapped {
		out = append(out, k)
	}
	for k := range workerNoEffect {
		out = append(out, k)
	}
	for k := range workerUnsupported {
		out = append(out, k)
	}
	return out
}
