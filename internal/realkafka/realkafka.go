// Package realkafka tells tests where to find the two real Apache Kafka 4.x
// clusters ("source" and "target") that kafka.sh in this directory starts on
// loopback ports, so that tests can run against real brokers as well as kfake.
//
// The clusters are single-node KRaft clusters in combined mode, started by
//
//	internal/realkafka/kafka.sh start
//	eval "$(internal/realkafka/kafka.sh env)"
//
// which exports SourceBrokersEnv and TargetBrokersEnv. Tests call Brokers and
// skip with SkipMessage when it reports ok == false. See README.md beside this
// file for ports, settings and timings.
package realkafka

import (
	"os"
	"strings"
)

// SourceBrokersEnv is the environment variable naming the seed brokers of the
// source cluster: comma-separated host:port pairs, e.g. "127.0.0.1:19092"
// (what `kafka.sh env` prints). It plays the role of MM2's
// "<source alias>.bootstrap.servers" (MirrorMakerConfig, docs/mm2-compat.md §2).
const SourceBrokersEnv = "KMIRROR_SOURCE_BROKERS"

// TargetBrokersEnv is the environment variable naming the seed brokers of the
// target cluster: comma-separated host:port pairs, e.g. "127.0.0.1:19192"
// (what `kafka.sh env` prints). It plays the role of MM2's
// "<target alias>.bootstrap.servers" (MirrorMakerConfig, docs/mm2-compat.md §2).
const TargetBrokersEnv = "KMIRROR_TARGET_BROKERS"

// SkipMessage is the text tests pass to t.Skip when Brokers reports that no
// real clusters are configured: it names both variables and the commands that
// start the clusters and set them.
const SkipMessage = "real Kafka not configured: " + SourceBrokersEnv + " and " + TargetBrokersEnv +
	" are unset; run `internal/realkafka/kafka.sh start && eval \"$(internal/realkafka/kafka.sh env)\"`" +
	" (Java 17+ and Maven needed; see internal/realkafka/README.md)"

// Brokers returns the seed brokers of the real source and target clusters, read
// from SourceBrokersEnv and TargetBrokersEnv. Each variable is split on commas;
// spaces around entries and empty entries are dropped, and entries are
// returned as written (host:port, not checked here: a bad address shows up as
// a connection error in the test that uses it). ok is true only when both
// variables give at least one entry; otherwise source and target are nil.
func Brokers() (source, target []string, ok bool) {
	source = splitBrokers(os.Getenv(SourceBrokersEnv))
	target = splitBrokers(os.Getenv(TargetBrokersEnv))
	if len(source) == 0 || len(target) == 0 {
		return nil, nil, false
	}
	return source, target, true
}

// SourceProxiedBrokersEnv is the environment variable naming the address
// at which the source broker advertises its PROXIED listener, e.g.
// "127.0.0.1:19095" (what `kafka.sh env` prints; KMIRROR_SOURCE_PROXY_PORT
// sets the port). Nothing listens there until a fault proxy
// (internal/faultproxy) is started at that address, forwarding to
// SourceProxiedListenerEnv; a client that bootstraps there is told that
// address as the broker's and so reaches the broker only through the proxy.
const SourceProxiedBrokersEnv = "KMIRROR_SOURCE_PROXIED_BROKERS"

// TargetProxiedBrokersEnv is SourceProxiedBrokersEnv for the target cluster,
// e.g. "127.0.0.1:19195" (KMIRROR_TARGET_PROXY_PORT).
const TargetProxiedBrokersEnv = "KMIRROR_TARGET_PROXIED_BROKERS"

// SourceProxiedListenerEnv is the environment variable naming the address
// the source broker's PROXIED listener is bound to, e.g. "127.0.0.1:19094"
// (KMIRROR_SOURCE_PROXIED_PORT): the address a fault proxy forwards to.
const SourceProxiedListenerEnv = "KMIRROR_SOURCE_PROXIED_LISTENER"

// TargetProxiedListenerEnv is SourceProxiedListenerEnv for the target
// cluster, e.g. "127.0.0.1:19194" (KMIRROR_TARGET_PROXIED_PORT).
const TargetProxiedListenerEnv = "KMIRROR_TARGET_PROXIED_LISTENER"

// Proxied is the PROXIED listener of one cluster started by kafka.sh: a
// fault proxy listens at Advertised (host:port) and forwards to Listener
// (host:port), where the broker listens.
type Proxied struct {
	Advertised string
	Listener   string
}

// ProxiedListeners returns the PROXIED listeners of the source and target
// clusters, read from SourceProxiedBrokersEnv, SourceProxiedListenerEnv,
// TargetProxiedBrokersEnv and TargetProxiedListenerEnv (spaces trimmed). ok
// is false unless all four are set; clusters started by a kafka.sh without
// proxied listeners leave them unset.
func ProxiedListeners() (source, target Proxied, ok bool) {
	get := func(name string) string { return strings.TrimSpace(os.Getenv(name)) }
	source = Proxied{Advertised: get(SourceProxiedBrokersEnv), Listener: get(SourceProxiedListenerEnv)}
	target = Proxied{Advertised: get(TargetProxiedBrokersEnv), Listener: get(TargetProxiedListenerEnv)}
	if source.Advertised == "" || source.Listener == "" || target.Advertised == "" || target.Listener == "" {
		return Proxied{}, Proxied{}, false
	}
	return source, target, true
}

// splitBrokers splits a comma-separated broker list, trimming spaces and
// dropping empty entries. It returns nil when no entry is left.
func splitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// Environment variables `kafka.sh env` prints for the SASL listener of
// clusters started with KMIRROR_KAFKA_SASL=1 (StandardAuthorizer enforced,
// allow.everyone.if.no.acl.found=false, PLAIN users).
const (
	// SourceSASLBrokersEnv names the source cluster's SASL_PLAINTEXT
	// listener, e.g. "127.0.0.1:19096".
	SourceSASLBrokersEnv = "KMIRROR_SOURCE_SASL_BROKERS"
	// TargetSASLBrokersEnv names the target cluster's, e.g. "127.0.0.1:19196".
	TargetSASLBrokersEnv = "KMIRROR_TARGET_SASL_BROKERS"
	// SASLAdminUserEnv and SASLAdminPasswordEnv are a super user on both
	// clusters, for tests to create topics and grant ACLs.
	SASLAdminUserEnv     = "KMIRROR_SASL_ADMIN_USER"
	SASLAdminPasswordEnv = "KMIRROR_SASL_ADMIN_PASSWORD"
	// SourceSASLUserEnv and SourceSASLPasswordEnv are the kmirror user of
	// the source cluster: no permission but the ACLs a test grants.
	SourceSASLUserEnv     = "KMIRROR_SOURCE_SASL_USER"
	SourceSASLPasswordEnv = "KMIRROR_SOURCE_SASL_PASSWORD"
	// TargetSASLUserEnv and TargetSASLPasswordEnv are the target's.
	TargetSASLUserEnv     = "KMIRROR_TARGET_SASL_USER"
	TargetSASLPasswordEnv = "KMIRROR_TARGET_SASL_PASSWORD"
)

// SASLSkipMessage is the text tests pass to t.Skip when SASL reports that
// no authorizer-enforcing clusters are configured.
const SASLSkipMessage = "real Kafka with an enforcing authorizer not configured: " + SourceSASLBrokersEnv + " and the other KMIRROR_*_SASL_* variables are unset; run `KMIRROR_KAFKA_SASL=1 internal/realkafka/kafka.sh start && eval \"$(KMIRROR_KAFKA_SASL=1 internal/realkafka/kafka.sh env)\"` (see internal/realkafka/README.md)"

// PlainUser is a SASL/PLAIN user name and password.
type PlainUser struct {
	// User is the user name; the ACL principal is "User:" + User.
	User string
	// Password is the user's password (test-only, never logged).
	Password string
}

// SASLClusters is the SASL listener of the two clusters and its users.
type SASLClusters struct {
	// SourceBrokers and TargetBrokers are the SASL_PLAINTEXT listeners.
	SourceBrokers, TargetBrokers []string
	// Admin is a super user on both clusters.
	Admin PlainUser
	// Source and Target are the kmirror users of each cluster.
	Source, Target PlainUser
}

// SASL returns the SASL listeners and users from the environment; ok is
// false unless every variable is set.
func SASL() (c SASLClusters, ok bool) {
	get := func(name string) string { return strings.TrimSpace(os.Getenv(name)) }
	c = SASLClusters{
		SourceBrokers: splitBrokers(os.Getenv(SourceSASLBrokersEnv)),
		TargetBrokers: splitBrokers(os.Getenv(TargetSASLBrokersEnv)),
		Admin:         PlainUser{get(SASLAdminUserEnv), get(SASLAdminPasswordEnv)},
		Source:        PlainUser{get(SourceSASLUserEnv), get(SourceSASLPasswordEnv)},
		Target:        PlainUser{get(TargetSASLUserEnv), get(TargetSASLPasswordEnv)},
	}
	for _, u := range []PlainUser{c.Admin, c.Source, c.Target} {
		if u.User == "" || u.Password == "" {
			return SASLClusters{}, false
		}
	}
	if len(c.SourceBrokers) == 0 || len(c.TargetBrokers) == 0 {
		return SASLClusters{}, false
	}
	return c, true
}
