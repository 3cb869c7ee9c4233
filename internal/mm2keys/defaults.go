package mm2keys

import "time"

// Defaults of the MM2 keys kmirror maps: the one place each default is
// written. mirror (FlowConfig.withDefaults and its exported Default*
// constants), checkpoint and heartbeat (their EmitterConfig defaults)
// and the rows of [Rows] all read them from here. Where kmirror's default
// differs from Apache MM2 4.3's, the row's MM2Default says so.
const (
	RefreshTopicsInterval    = 600 * time.Second // refresh.topics.interval.seconds
	SyncTopicConfigsInterval = 600 * time.Second // sync.topic.configs.interval.seconds
	SyncTopicACLsInterval    = 600 * time.Second // sync.topic.acls.interval.seconds
	EmitCheckpointsInterval  = 60 * time.Second  // emit.checkpoints.interval.seconds
	SyncGroupOffsetsInterval = 60 * time.Second  // sync.group.offsets.interval.seconds
	RefreshGroupsInterval    = 600 * time.Second // refresh.groups.interval.seconds
	EmitHeartbeatsInterval   = time.Second       // emit.heartbeats.interval.seconds
	AdminTimeout             = 60 * time.Second  // admin.timeout.ms
	OffsetLagMax             = 100               // offset.lag.max, records

	// OffsetFlushInterval is offset.flush.interval.ms (MM2, Connect: 60 s).
	OffsetFlushInterval = 5 * time.Second
	// Tasks is tasks.max (MM2: 1).
	Tasks = 8
	// SessionTimeout, HeartbeatInterval and RebalanceTimeout are the
	// target's worker settings session.timeout.ms, heartbeat.interval.ms
	// and rebalance.timeout.ms (Connect's defaults).
	SessionTimeout    = 10 * time.Second
	HeartbeatInterval = 3 * time.Second
	RebalanceTimeout  = 60 * time.Second

	// MaxBufferedBytes is the replication producer's buffer.memory (MM2:
	// the same, 33554432).
	MaxBufferedBytes = 32 << 20
	// FetchMaxBytes is the replication consumer's fetch.max.bytes (MM2:
	// Kafka's 52428800).
	FetchMaxBytes = 16 << 20
	// FetchMaxPartitionBytes is the replication consumer's
	// max.partition.fetch.bytes (Kafka's default, as in MM2).
	FetchMaxPartitionBytes = 1 << 20
)

// Default filter lists (topics, topics.exclude, groups, groups.exclude,
// config.properties.exclude); mirror documents why each entry is there.
var (
	Topics                  = []string{".*"}
	Groups                  = []string{".*"}
	TopicsExclude           = []string{`mm2.*\.internal`, `.*\.replica`, `__.*`}
	GroupsExclude           = []string{`console-consumer-.*`, `connect-.*`, `__.*`}
	ConfigPropertiesExclude = []string{
		`follower\.replication\.throttled\.replicas`,
		`leader\.replication\.throttled\.replicas`,
		`message\.timestamp\.difference\.max\.ms`,
		`message\.timestamp\.type`,
		`unclean\.leader\.election\.enable`,
		`min\.insync\.replicas`,
		`log\.message\.timestamp\.before\.max\.ms`,
		`log\.message\.timestamp\.after\.max\.ms`,
		`message\.timestamp\.before\.max\.ms`,
		`message\.timestamp\.after\.max\.ms`,
	}
)
