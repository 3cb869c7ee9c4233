// Package interop holds kmirror's interoperability tests against Apache
// MirrorMaker 2 (MM2) 4.x: the tests in this package run real Apache MM2
// (dedicated mode, org.apache.kafka.connect.mirror.MirrorMaker) and Apache
// MM2's client classes (RemoteClusterUtils, MirrorClient, Checkpoint,
// Heartbeat, OffsetSync and the formatters of
// org.apache.kafka.connect.mirror.formatters) beside kmirror on the two real
// Kafka clusters of internal/realkafka, and check that each side reads what
// the other writes (spec sections 2, 2.6, 7 and 8).
//
// The Java side is small single-file programs under testdata/java, run with
// the JDK 11+ source launcher: java -cp '<kafka lib>/*' Prog.java args, where
// the lib dir is what `internal/realkafka/kafka.sh classpath` prints.
//
// The tests skip unless KMIRROR_SOURCE_BROKERS and KMIRROR_TARGET_BROKERS
// name the real clusters and java and the Kafka jars are installed:
//
//	internal/realkafka/kafka.sh start
//	eval "$(internal/realkafka/kafka.sh env)"
//	go test ./internal/interop/
//
// The package has no non-test code.
package interop
