// Package mm2keys is the registry of the MirrorMaker 2 keys kmirror knows:
// one [Row] per key and scope, saying where the key may be written, how its
// value is read, its default, and the mirror.FlowConfig field it fills. It
// is a leaf package (standard library only), so that the properties loader
// (mirror/properties.go with internal/mm2props), the checks of
// `kmirror -check` (unknown keys, did-you-mean), the effective
// configuration dump, and the defaults of mirror, checkpoint and heartbeat
// all read the same rows.
//
// Adding a key is one row here plus the code that uses the value: a row
// with a Field of a type the loader reads generically (bool, interval,
// milliseconds, bytes, replication factor, list, enum into a bool) needs
// nothing else; a row without Field needs its handler in
// mirror/properties.go, which a test requires.
package mm2keys

import (
	"strconv"
	"strings"
	"time"
)

// Scope says where a key may be written.
type Scope int

const (
	// Flow keys are connector settings: valid at top level (every flow)
	// and per flow (`<source>-><target>.<key>`, which wins).
	Flow Scope = iota
	// Cluster keys are Connect worker settings of the herders targeting a
	// cluster: `<alias>.<key>`.
	Cluster
	// Top keys are valid only at top level.
	Top
	// Client keys are client settings kmirror honours per flow: the row's
	// Prefix (source.consumer. or target.producer.) and the client key.
	Client
)

// String returns "flow", "cluster", "top" or "client".
func (s Scope) String() string {
	return [...]string{"flow", "cluster", "top", "client"}[s]
}

// Type says how a value is read.
type Type int

const (
	// Text is a string read by the key's own handler (or not read).
	Text Type = iota
	// Bool is true or false (trimmed, case-insensitive).
	Bool
	// Seconds is a whole number of seconds; negative disables the row's
	// Switch, zero is an error.
	Seconds
	// Millis is a positive whole number of milliseconds.
	Millis
	// Bytes is a positive whole number of bytes.
	Bytes
	// RF is a replication factor: positive, or -1 for the broker default.
	RF
	// List is a comma-separated list of regexes.
	List
	// Enum is one of Values (case-insensitive).
	Enum
	// Count is a whole number (records, slots).
	Count
)

// String returns the type's name as the effective dump and the docs say it.
func (t Type) String() string {
	return [...]string{"text", "boolean", "seconds", "milliseconds", "bytes", "replication factor", "list", "enum", "count"}[t]
}

// Effect says what kmirror does with a key.
type Effect int

const (
	// Mapped keys change what kmirror does.
	Mapped Effect = iota
	// NoEffect keys are accepted and listed as without effect (Note says
	// why).
	NoEffect
	// Unsupported keys draw a warning when set to a value other than
	// Default (Note says what to do instead); ACLS.md lists them.
	Unsupported
)

// Row is one key of the registry.
type Row struct {
	// Key is the key as written after its scope's prefix.
	Key   string
	Scope Scope
	// Prefix is the client prefix of a Client row ("source.consumer.",
	// "target.producer."), as shown in the effective dump.
	Prefix string
	Type   Type
	Effect Effect
	// Default is kmirror's default as it would be written in the file (""
	// when the key has none, or none is shown). For Unsupported rows, the
	// value accepted without a warning.
	Default string
	// MM2Default is Apache MM2 4.3's default where it differs from
	// Default ("" when they agree).
	MM2Default string
	// Unit is the unit of a number ("s", "ms", "bytes", "records", "slots").
	Unit string
	// Field is the mirror.FlowConfig field the value fills; "" when the
	// key's handler in mirror/properties.go reads it.
	Field string
	// Invert: Field holds the negation of a Bool (DisableX for X.enabled).
	Invert bool
	// Switch is, for a Seconds row, the Bool row a negative interval turns
	// off (as MM2's scheduler never runs a negative interval).
	Switch string
	// Values are an Enum's accepted values, lower case.
	Values []string
	// True is the Enum value that sets a bool Field.
	True string
	// CaseSensitive: MM2 compares an Enum's value case-sensitively
	// (use.defaults.from: equals("source"); offset-syncs.topic.location:
	// ValidString), where kmirror reads it in any case.
	CaseSensitive bool
	// Note is why a NoEffect row has no effect, or what to do instead of
	// an Unsupported one.
	Note string
}

func secs(d time.Duration) string   { return strconv.FormatInt(int64(d/time.Second), 10) }
func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// noREST is the note of Connect's REST keys (listeners, rest.advertised.*):
// the file configures no REST server, but the runner serves one (it said
// "kmirror has no REST server", and an MM2 operator looking for the
// Connect REST API gave up on it).
const noREST = "not read from the file: the runner serves Kafka Connect's REST API (/connectors/...), /metrics and /status on its -listen address (kmirror -listen HOST:PORT)"

// Rows is the registry, in the order the properties loader reads a flow's
// keys (connector keys, then the target's worker keys, then the client
// keys), followed by the keys without effect and the unsupported ones.
var Rows = []Row{
	// Connector keys (MirrorConnectorConfig, MirrorSourceConfig,
	// MirrorCheckpointConfig, MirrorHeartbeatConfig).
	{Key: "enabled", Scope: Flow, Type: Bool, Default: "false"},
	{Key: "topics", Scope: Flow, Type: List, Default: strings.Join(Topics, ", "), Field: "Topics"},
	{Key: "topics.exclude", Scope: Flow, Type: List, Default: strings.Join(TopicsExclude, ", "), Field: "TopicsExclude"},
	{Key: "groups", Scope: Flow, Type: List, Default: strings.Join(Groups, ", "), Field: "Groups"},
	{Key: "groups.exclude", Scope: Flow, Type: List, Default: strings.Join(GroupsExclude, ", "), Field: "GroupsExclude"},
	{Key: "config.properties.exclude", Scope: Flow, Type: List, Default: strings.Join(ConfigPropertiesExclude, ", "), Field: "ConfigPropertiesExclude"},
	{Key: "use.defaults.from", Scope: Flow, Type: Enum, Default: "target", Values: []string{"target", "source"}, True: "source", Field: "UseDefaultsFromSource", CaseSensitive: true},
	{Key: "replication.policy.class", Scope: Flow, Type: Text, Default: "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"},
	{Key: "replication.policy.separator", Scope: Flow, Type: Text, Default: "."},
	{Key: "replication.policy.internal.topic.separator.enabled", Scope: Flow, Type: Bool, Default: "true"},
	{Key: "replication.factor", Scope: Flow, Type: RF, Default: "-1", MM2Default: "2", Field: "ReplicationFactor"},
	{Key: "offset-syncs.topic.replication.factor", Scope: Flow, Type: RF, Default: "-1", MM2Default: "3", Field: "OffsetSyncsTopicReplicationFactor"},
	{Key: "checkpoints.topic.replication.factor", Scope: Flow, Type: RF, Default: "-1", MM2Default: "3", Field: "CheckpointsTopicReplicationFactor"},
	{Key: "heartbeats.topic.replication.factor", Scope: Flow, Type: RF, Default: "-1", MM2Default: "3", Field: "HeartbeatsTopicReplicationFactor"},
	{Key: "offset-syncs.topic.location", Scope: Flow, Type: Enum, Default: "source", Values: []string{"source", "target"}, True: "target", Field: "OffsetSyncsTopicLocationTarget", CaseSensitive: true},
	{Key: "offset.lag.max", Scope: Flow, Type: Count, Unit: "records", Default: strconv.Itoa(OffsetLagMax)},
	{Key: "refresh.topics.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableRefreshTopics", Invert: true},
	{Key: "refresh.topics.interval.seconds", Scope: Flow, Type: Seconds, Unit: "s", Default: secs(RefreshTopicsInterval), Field: "RefreshTopicsInterval", Switch: "refresh.topics.enabled"},
	{Key: "sync.topic.configs.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableTopicConfigSync", Invert: true},
	{Key: "sync.topic.configs.interval.seconds", Scope: Flow, Type: Seconds, Unit: "s", Default: secs(SyncTopicConfigsInterval), Field: "SyncTopicConfigsInterval", Switch: "sync.topic.configs.enabled"},
	{Key: "sync.topic.acls.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableTopicACLSync", Invert: true},
	{Key: "sync.topic.acls.interval.seconds", Scope: Flow, Type: Seconds, Unit: "s", Default: secs(SyncTopicACLsInterval), Field: "SyncTopicACLsInterval", Switch: "sync.topic.acls.enabled"},
	{Key: "emit.checkpoints.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableCheckpoints", Invert: true},
	{Key: "emit.checkpoints.interval.seconds", Scope: Flow, Type: Seconds, Unit: "s", Default: secs(EmitCheckpointsInterval), Field: "EmitCheckpointsInterval", Switch: "emit.checkpoints.enabled"},
	{Key: "refresh.groups.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableRefreshGroups", Invert: true},
	{Key: "refresh.groups.interval.seconds", Scope: Flow, Type: Seconds, Unit: "s", Default: secs(RefreshGroupsInterval), Field: "RefreshGroupsInterval", Switch: "refresh.groups.enabled"},
	{Key: "sync.group.offsets.enabled", Scope: Flow, Type: Bool, Default: "false", Field: "SyncGroupOffsets"},
	{Key: "sync.group.offsets.interval.seconds", Scope: Flow, Type: Seconds, Unit: "s", Default: secs(SyncGroupOffsetsInterval), Field: "SyncGroupOffsetsInterval", Switch: "sync.group.offsets.enabled"},
	{Key: "emit.heartbeats.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableHeartbeats", Invert: true},
	{Key: "emit.heartbeats.interval.seconds", Scope: Flow, Type: Seconds, Unit: "s", Default: secs(EmitHeartbeatsInterval), Field: "EmitHeartbeatsInterval", Switch: "emit.heartbeats.enabled"},
	{Key: "emit.offset-syncs.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableOffsetSyncs", Invert: true},
	{Key: "heartbeats.replication.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableHeartbeatsReplication", Invert: true},
	// kmirror keys (topologies, shallow copy).
	{Key: "allow.topic.collisions", Scope: Flow, Type: Bool, Default: "false", Field: "AllowTopicCollisions"},
	{Key: "provenance.header.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableProvenanceHeader", Invert: true},
	{Key: "resume.from.target.enabled", Scope: Flow, Type: Bool, Default: "true", Field: "DisableTailResume", Invert: true},
	{Key: "shallow.copy.enabled", Scope: Flow, Type: Bool, Default: "false", Field: "ShallowCopy"},
	{Key: "admin.timeout.ms", Scope: Flow, Type: Millis, Unit: "ms", Default: millis(AdminTimeout), Field: "AdminTimeout"},
	// Connect keys of MirrorSourceConnector: the slots of a flow's
	// members and exactly-once replication (KIP-618).
	{Key: "tasks.max", Scope: Flow, Type: Count, Unit: "slots", Default: strconv.Itoa(Tasks), MM2Default: "1", Field: "Tasks"},
	{Key: "exactly.once.support", Scope: Flow, Type: Enum, Default: "requested", Values: []string{"requested", "required"}},
	{Key: "transaction.boundary", Scope: Flow, Type: Enum, Default: "poll", Values: []string{"poll", "interval", "connector"}},
	{Key: "transaction.boundary.interval.ms", Scope: Flow, Type: Millis, Unit: "ms", Field: "TransactionInterval"},

	// Worker keys of the herders targeting a cluster that kmirror maps.
	{Key: "offset.storage.replication.factor", Scope: Cluster, Type: RF, Default: "-1", MM2Default: "3", Field: "OffsetStorageReplicationFactor"},
	{Key: "session.timeout.ms", Scope: Cluster, Type: Millis, Unit: "ms", Default: millis(SessionTimeout), Field: "SessionTimeout"},
	{Key: "heartbeat.interval.ms", Scope: Cluster, Type: Millis, Unit: "ms", Default: millis(HeartbeatInterval), Field: "HeartbeatInterval"},
	{Key: "rebalance.timeout.ms", Scope: Cluster, Type: Millis, Unit: "ms", Default: millis(RebalanceTimeout), Field: "RebalanceTimeout"},
	{Key: "exactly.once.source.support", Scope: Cluster, Type: Enum, Default: "disabled", Values: []string{"disabled", "preparing", "enabled"}},
	{Key: "offset.flush.interval.ms", Scope: Cluster, Type: Millis, Unit: "ms", Default: millis(OffsetFlushInterval), MM2Default: "60000", Field: "OffsetFlushInterval"},

	// Client settings kept per flow.
	{Key: "auto.offset.reset", Scope: Client, Prefix: "source.consumer.", Type: Enum, Default: "earliest", Values: []string{"earliest", "latest"}},
	{Key: "isolation.level", Scope: Client, Prefix: "source.consumer.", Type: Enum, Default: "read_committed", MM2Default: "read_uncommitted", Values: []string{"read_committed", "read_uncommitted"}},
	{Key: "fetch.max.bytes", Scope: Client, Prefix: "source.consumer.", Type: Bytes, Unit: "bytes", Default: strconv.Itoa(FetchMaxBytes), MM2Default: "52428800", Field: "FetchMaxBytes"},
	{Key: "max.partition.fetch.bytes", Scope: Client, Prefix: "source.consumer.", Type: Bytes, Unit: "bytes", Default: strconv.Itoa(FetchMaxPartitionBytes), Field: "FetchMaxPartitionBytes"},
	{Key: "buffer.memory", Scope: Client, Prefix: "target.producer.", Type: Bytes, Unit: "bytes", Default: strconv.Itoa(MaxBufferedBytes), Field: "MaxBufferedBytes"},

	// Top-level keys of MirrorMakerConfig.
	{Key: "clusters", Scope: Top, Type: List},
	{Key: "config.providers", Scope: Top, Type: List},

	// Connector keys accepted without effect.
	{Key: "name", Scope: Flow, Effect: NoEffect, Note: "kmirror has no Connect connectors"},
	{Key: "connector.class", Scope: Flow, Effect: NoEffect, Note: "kmirror has no Connect connectors"},
	{Key: "tasks.max.enforce", Scope: Flow, Effect: NoEffect, Note: "kmirror has no Connect tasks"},
	{Key: "config.action.reload", Scope: Flow, Effect: NoEffect, Note: "kmirror reads the file once at start"},
	{Key: "errors.retry.timeout", Scope: Flow, Effect: NoEffect, Note: "kmirror retries failed requests until they succeed or the flow stops"},
	{Key: "errors.retry.delay.max.ms", Scope: Flow, Effect: NoEffect, Note: "kmirror retries failed requests with the client backoff"},
	{Key: "errors.tolerance", Scope: Flow, Effect: NoEffect, Note: "kmirror copies bytes and has no conversion errors to tolerate"},
	{Key: "errors.log.enable", Scope: Flow, Effect: NoEffect, Note: "kmirror has no conversion errors"},
	{Key: "errors.log.include.messages", Scope: Flow, Effect: NoEffect, Note: "kmirror has no conversion errors"},
	{Key: "consumer.poll.timeout.ms", Scope: Flow, Effect: NoEffect, Note: "kmirror's fetches wait fetch.max.wait.ms"},
	{Key: "metric.reporters", Scope: Flow, Effect: NoEffect, Note: "kmirror exports Prometheus metrics (mirrorprom.WithRegisterer)"},
	{Key: "auto.include.jmx.reporter", Scope: Flow, Effect: NoEffect, Note: "kmirror has no JMX"},
	{Key: "add.source.alias.to.metrics", Scope: Flow, Effect: NoEffect, Note: "kmirror's metrics always carry the source alias"},
	{Key: "use.incremental.alter.configs", Scope: Flow, Effect: NoEffect, Note: "kmirror always uses IncrementalAlterConfigs"},
	{Key: "task.assigned.partitions", Scope: Flow, Effect: NoEffect, Note: "internal MM2 task setting"},
	{Key: "task.assigned.groups", Scope: Flow, Effect: NoEffect, Note: "internal MM2 task setting"},
	{Key: "task.index", Scope: Flow, Effect: NoEffect, Note: "internal MM2 task setting"},
	{Key: "topic.creation.enable", Scope: Flow, Effect: NoEffect, Note: "MM2 and kmirror create remote topics themselves"},
	{Key: "topic.creation.groups", Scope: Flow, Effect: NoEffect, Note: "MM2 and kmirror create remote topics themselves"},
	{Key: "key.converter", Scope: Flow, Effect: NoEffect, Note: "kmirror copies keys unchanged (as ByteArrayConverter)"},
	{Key: "value.converter", Scope: Flow, Effect: NoEffect, Note: "kmirror copies values unchanged (as ByteArrayConverter)"},
	{Key: "header.converter", Scope: Flow, Effect: NoEffect, Note: "kmirror copies headers unchanged (as ByteArrayConverter)"},
	{Key: "offsets.storage.topic", Scope: Flow, Effect: NoEffect, Note: "kmirror keeps resume points in mm2-offsets.<source>.internal"},

	// Worker keys accepted without effect (`<target>.<key>`; the
	// config.storage, status.storage and offset.storage ones also at top
	// level).
	{Key: "config.storage.topic", Scope: Cluster, Effect: NoEffect, Note: "kmirror keeps no Connect config topic"},
	{Key: "config.storage.replication.factor", Scope: Cluster, Effect: NoEffect, Note: "kmirror keeps no Connect config topic"},
	{Key: "status.storage.topic", Scope: Cluster, Effect: NoEffect, Note: "kmirror keeps no Connect status topic"},
	{Key: "status.storage.replication.factor", Scope: Cluster, Effect: NoEffect, Note: "kmirror keeps no Connect status topic"},
	{Key: "status.storage.partitions", Scope: Cluster, Effect: NoEffect, Note: "kmirror keeps no Connect status topic"},
	{Key: "offset.storage.partitions", Scope: Cluster, Effect: NoEffect, Note: "kmirror's resume points topic has one partition per flow source"},
	{Key: "offset.flush.timeout.ms", Scope: Cluster, Effect: NoEffect, Note: "kmirror waits for acknowledgements before storing resume points"},
	{Key: "group.id", Scope: Cluster, Effect: NoEffect, Note: "kmirror has no Connect worker group: a flow's members join the group kmirror.<source>-><target>"},
	{Key: "connector.client.config.override.policy", Scope: Cluster, Effect: NoEffect, Note: "kmirror has no Connect client override policy"},
	{Key: "scheduled.rebalance.max.delay.ms", Scope: Cluster, Effect: NoEffect, Note: "kmirror has no Connect worker group"},
	{Key: "worker.sync.timeout.ms", Scope: Cluster, Effect: NoEffect, Note: "kmirror has no Connect worker group"},
	{Key: "worker.unsync.backoff.ms", Scope: Cluster, Effect: NoEffect, Note: "kmirror has no Connect worker group"},
	{Key: "task.shutdown.graceful.timeout.ms", Scope: Cluster, Effect: NoEffect, Note: "kmirror stops flows when its context is cancelled"},
	{Key: "key.converter", Scope: Cluster, Effect: NoEffect, Note: "kmirror copies keys unchanged (as ByteArrayConverter)"},
	{Key: "value.converter", Scope: Cluster, Effect: NoEffect, Note: "kmirror copies values unchanged (as ByteArrayConverter)"},
	{Key: "header.converter", Scope: Cluster, Effect: NoEffect, Note: "kmirror copies headers unchanged (as ByteArrayConverter)"},
	{Key: "plugin.path", Scope: Cluster, Effect: NoEffect, Note: "kmirror loads no plugins"},
	{Key: "metric.reporters", Scope: Cluster, Effect: NoEffect, Note: "kmirror exports Prometheus metrics (mirrorprom.WithRegisterer)"},
	{Key: "listeners", Scope: Cluster, Effect: NoEffect, Note: noREST},
	{Key: "rest.advertised.host.name", Scope: Cluster, Effect: NoEffect, Note: noREST},
	{Key: "rest.advertised.port", Scope: Cluster, Effect: NoEffect, Note: noREST},
	{Key: "rest.advertised.listener", Scope: Cluster, Effect: NoEffect, Note: noREST},

	// Top-level dedicated-mode keys without effect.
	{Key: "dedicated.mode.enable.internal.rest", Scope: Top, Effect: NoEffect, Note: noREST + "; the members need no internal REST to share work (they use the target's group protocol)"},
	{Key: "listeners", Scope: Top, Effect: NoEffect, Note: noREST},
	{Key: "admin.listeners", Scope: Top, Effect: NoEffect, Note: noREST},
	{Key: "rest.advertised.host.name", Scope: Top, Effect: NoEffect, Note: noREST},
	{Key: "rest.advertised.port", Scope: Top, Effect: NoEffect, Note: noREST},
	{Key: "rest.advertised.listener", Scope: Top, Effect: NoEffect, Note: noREST},
	{Key: "connector.client.config.override.policy", Scope: Top, Effect: NoEffect, Note: "MM2 sets it itself; kmirror has no Connect client override policy"},
	{Key: "plugin.path", Scope: Top, Effect: NoEffect, Note: "kmirror loads no plugins"},

	// Unsupported connector keys: a warning unless set to Default.
	{Key: "topic.filter.class", Scope: Flow, Effect: Unsupported, Default: "org.apache.kafka.connect.mirror.DefaultTopicFilter", Note: "custom topic filters cannot run in kmirror: topics and topics.exclude select topics"},
	{Key: "group.filter.class", Scope: Flow, Effect: Unsupported, Default: "org.apache.kafka.connect.mirror.DefaultGroupFilter", Note: "custom group filters cannot run in kmirror: groups and groups.exclude select groups"},
	{Key: "config.property.filter.class", Scope: Flow, Effect: Unsupported, Default: "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter", Note: "custom config-property filters cannot run in kmirror: config.properties.exclude selects topic configs"},
	{Key: "forwarding.admin.class", Scope: Flow, Effect: Unsupported, Default: "org.apache.kafka.clients.admin.ForwardingAdmin", Note: "a custom ForwardingAdmin cannot run in kmirror: topics, configs and ACLs are changed with the target's admin client"},
	{Key: "transforms", Scope: Flow, Effect: Unsupported, Note: "Single Message Transforms cannot run in kmirror: records are copied unchanged"},
	{Key: "predicates", Scope: Flow, Effect: Unsupported, Note: "predicates are only used by transforms, which kmirror does not run"},
	{Key: "source.cluster.alias", Scope: Flow, Effect: Unsupported, Note: "topic names always use the aliases of clusters: rename the alias instead"},
	{Key: "target.cluster.alias", Scope: Flow, Effect: Unsupported, Note: "topic names always use the aliases of clusters: rename the alias instead"},
	// Unsupported worker key.
	{Key: "offset.storage.topic", Scope: Cluster, Effect: Unsupported, Note: "kmirror keeps resume points in mm2-offsets.<source>.internal"},
}

// Select returns the rows of scope with effect, in registry order.
func Select(scope Scope, effect Effect) []Row {
	var out []Row
	for _, r := range Rows {
		if r.Scope == scope && r.Effect == effect {
			out = append(out, r)
		}
	}
	return out
}

// Keys returns the keys of [Select](scope, effect).
func Keys(scope Scope, effect Effect) []string {
	var out []string
	for _, r := range Select(scope, effect) {
		out = append(out, r.Key)
	}
	return out
}

// Notes returns Key -> Note of [Select](scope, effect).
func Notes(scope Scope, effect Effect) map[string]string {
	out := map[string]string{}
	for _, r := range Select(scope, effect) {
		out[r.Key] = r.Note
	}
	return out
}

// Lookup returns the row of key in scope.
func Lookup(scope Scope, key string) (Row, bool) {
	for _, r := range Rows {
		if r.Scope == scope && r.Key == key {
			return r, true
		}
	}
	return Row{}, false
}
