// Package kmirror is a Go library that does what Apache Kafka MirrorMaker 2
// (MM2) does, embedded in a Go service instead of a JVM Connect cluster:
// it replicates topics between Kafka clusters as remote topics, translates
// consumer-group offsets with offset syncs and checkpoints, emits
// heartbeats, and reads and writes MM2's internal topics byte for byte, so
// MM2 tools and kmirror can read each other's data.
//
// Which package to import:
//
//   - [github.com/kmirror/kmirror/mirror]: the replication engine (flows
//     source->target, remote topics, resume points, offset syncs,
//     checkpoints, group offset sync, heartbeats, metrics, status), and a
//     loader for MM2's connect-mirror-maker.properties files.
//   - [github.com/kmirror/kmirror/mirror/mirrorprom]: the engine's metrics
//     for Prometheus (the only package that imports the Prometheus client).
//   - [github.com/kmirror/kmirror/remoteclusterutils]: the translation
//     client for consumers that fail over (MM2's RemoteClusterUtils and
//     MirrorClient).
//   - [github.com/kmirror/kmirror/policy]: replication policies (remote
//     topic naming, separators, cycle detection), MM2's ReplicationPolicy.
//   - [github.com/kmirror/kmirror/checkpoint] and
//     [github.com/kmirror/kmirror/heartbeat]: MM2's Checkpoint, OffsetSync
//     and Heartbeat records, the offset-sync store and the emitters.
//
// Runnable programs are in the examples directory of the module:
// quickstart (the whole story on embedded clusters), failover,
// producer-consumer, and kmirror, which runs an MM2 properties file as MM2's
// dedicated mode does (go install
// github.com/kmirror/kmirror/examples/kmirror@latest).
package kmirror
