package mm2props

import (
	"sort"
	"strings"

	"github.com/kmirror/kmirror/internal/mm2keys"
)

// byteArrayConverter is the converter class MM2 accepts without a warning.
const byteArrayConverter = "org.apache.kafka.connect.converters.ByteArrayConverter"

// ConnectorKeys are the MM2 connector settings kmirror maps to flow
// behaviour (docs/mm2-compat.md §9.1-9.4): the registry's mapped flow rows
// (internal/mm2keys). They are valid at top level (all flows) and per flow
// (`<source>-><target>.<key>`, which wins).
var ConnectorKeys = mm2keys.Keys(mm2keys.Flow, mm2keys.Mapped)

// DeprecatedAliases maps MM2 3.x names (KIP-629, removed in Kafka 4.0 by
// KAFKA-17529) to their replacements.
var DeprecatedAliases = map[string]string{
	"topics.blacklist":            "topics.exclude",
	"groups.blacklist":            "groups.exclude",
	"config.properties.blacklist": "config.properties.exclude",
}

// connectorNoEffect are connector keys kmirror accepts without effect.
var connectorNoEffect = mm2keys.Notes(mm2keys.Flow, mm2keys.NoEffect)

// connectorUnsupported are connector keys whose effect kmirror does not
// implement; each produces a warning when set to a non-default value.
// source.cluster.alias and target.cluster.alias have messages of their
// own (connectorKey).
var connectorUnsupported = func() map[string]struct{ def, note string } {
	out := map[string]struct{ def, note string }{}
	for _, r := range mm2keys.Select(mm2keys.Flow, mm2keys.Unsupported) {
		if r.Key != "source.cluster.alias" && r.Key != "target.cluster.alias" {
			out[r.Key] = struct{ def, note string }{r.Default, r.Note}
		}
	}
	return out
}()

// workerPrefixes are the top-level key prefixes MM2 copies into every
// herder's worker configuration (MirrorMakerConfig.workerConfig).
var workerPrefixes = []string{"offset.storage", "config.storage", "status.storage", "key.converter",
	"value.converter", "header.converter", "task", "worker", "replication.policy"}

// workerNoEffect are worker keys (valid as `<target>.<key>`, some also at
// top level through workerPrefixes) kmirror accepts without effect.
var workerNoEffect = mm2keys.Notes(mm2keys.Cluster, mm2keys.NoEffect)

// workerMapped are worker keys kmirror maps (read as `<target>.<key>`).
var workerMapped = func() map[string]bool {
	out := map[string]bool{}
	for _, k := range mm2keys.Keys(mm2keys.Cluster, mm2keys.Mapped) {
		out[k] = true
	}
	return out
}()

// workerUnsupported are worker keys kmirror warns about.
var workerUnsupported = mm2keys.Notes(mm2keys.Cluster, mm2keys.Unsupported)

// topNoEffect are top-level dedicated-mode keys without effect.
var topNoEffect = mm2keys.Notes(mm2keys.Top, mm2keys.NoEffect)

// notMM2 are keys people write that no MM2 version reads, with advice.
var notMM2 = map[string]string{
	"topics.auto.create":        "not an MM2 setting (MM2 and kmirror always create remote topics): remove it",
	"auto.create.topics.enable": "a broker setting, not an MM2 setting: remove it",
	"sync.topic.configs":        "not an MM2 setting: did you mean sync.topic.configs.enabled?",
	// MirrorMaker 1's --whitelist, written as MM2 keys by people migrating.
	"whitelist":        "not an MM2 setting (MirrorMaker 1's --whitelist): list the topics to replicate in topics (regexes, comma-separated); without it MM2 and kmirror replicate every topic (.*)",
	"topics.whitelist": "not an MM2 setting: list the topics to replicate in topics (regexes, comma-separated); without it MM2 and kmirror replicate every topic (.*)",
	"groups.whitelist": "not an MM2 setting: list the consumer groups to checkpoint in groups (regexes, comma-separated); without it MM2 and kmirror checkpoint every group (.*)",
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
var FlowSourceConsumerKeys = clientKeys("source.consumer.")

// FlowTargetProducerKeys are the client settings kmirror honours per flow
// for the flow's replication producer.
var FlowTargetProducerKeys = clientKeys("target.producer.")

func clientKeys(prefix string) []string {
	var out []string
	for _, r := range mm2keys.Select(mm2keys.Client, mm2keys.Mapped) {
		if r.Prefix == prefix {
			out = append(out, r.Key)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// rowKeys returns the keys of the registry's rows of scope (every effect),
// in registry order, those with a prefix in prefixes only when prefixes
// are given.
func rowKeys(scope mm2keys.Scope, prefixes ...string) []string {
	var out []string
	for _, r := range mm2keys.Rows {
		if r.Scope != scope {
			continue
		}
		ok := len(prefixes) == 0
		for _, p := range prefixes {
			ok = ok || strings.HasPrefix(r.Key, p)
		}
		if ok {
			out = append(out, r.Key)
		}
	}
	return out
}

// deprecatedKeys returns the deprecated spellings, sorted.
func deprecatedKeys() []string {
	var out []string
	for k := range DeprecatedAliases {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// allTopKeys lists the keys valid at top level, for suggestions: the
// registry's top-level and flow rows, the worker rows MM2 also reads at
// top level (config.storage.*, status.storage.*, offset.storage.*), the
// deprecated spellings and the connection keys.
func allTopKeys() []string {
	out := []string{"bootstrap.servers", "security.protocol", "sasl.mechanism",
		"sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.type", "ssl.keystore.location",
		"ssl.endpoint.identification.algorithm"}
	out = append(out, rowKeys(mm2keys.Top)...)
	out = append(out, rowKeys(mm2keys.Flow)...)
	out = append(out, deprecatedKeys()...)
	return append(out, rowKeys(mm2keys.Cluster, "config.storage", "status.storage", "offset.storage")...)
}

// allFlowKeys lists the keys valid per flow, for suggestions: the
// registry's flow rows and the deprecated spellings.
func allFlowKeys() []string {
	return append(rowKeys(mm2keys.Flow), deprecatedKeys()...)
}

// allClusterKeys lists the keys valid per cluster, for suggestions: the
// connection keys and the registry's cluster rows.
func allClusterKeys() []string {
	out := []string{"bootstrap.servers", "client.id", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
		"ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.certificates", "ssl.keystore.location",
		"ssl.keystore.type", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.key.password",
		"ssl.endpoint.identification.algorithm", "ssl.enabled.protocols"}
	return append(out, rowKeys(mm2keys.Cluster)...)
}
