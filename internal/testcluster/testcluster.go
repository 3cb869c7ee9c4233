// Package testcluster gives tests a source/target pair of Kafka clusters:
// two in-process kfake clusters by default, or real brokers when the
// environment names them (KMIRROR_SOURCE_BROKERS, KMIRROR_TARGET_BROKERS;
// see TESTING.md). The same test body runs on both backends.
//
// On real brokers the clusters are shared by every test of a run, so a Pair
// hands out unique cluster aliases and topic names ([Pair.Topic]) to keep
// tests apart; tests must take names from the Pair, never hard-code them.
package testcluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kread"
)

// Environment variables that select real brokers.
const (
	EnvSourceBrokers = "KMIRROR_SOURCE_BROKERS"
	EnvTargetBrokers = "KMIRROR_TARGET_BROKERS"
)

// Cluster is one side of a [Pair].
type Cluster struct {
	// Alias is the cluster alias tests must use (unique per test on real brokers).
	Alias string
	// Brokers are the bootstrap addresses.
	Brokers []string
	// Fake is the in-process cluster, nil on real brokers.
	Fake *kfake.Cluster
	// Extra are options Opts appends, e.g. SASL credentials.
	Extra []kgo.Opt
}

// Opts returns the kgo options that reach the cluster, with short metadata
// ages so that topics created by another client become visible quickly.
func (c *Cluster) Opts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.MetadataMinAge(50 * time.Millisecond), kgo.MetadataMaxAge(time.Second)}, c.Extra...)
}

// Pair is a source and a target cluster.
type Pair struct {
	Source, Target Cluster
	// Real is true on real brokers.
	Real bool
	uniq string
}

var seq atomic.Int64

// RealBrokers returns the real brokers named by the environment, if any.
func RealBrokers() (source, target []string, ok bool) {
	s, t := os.Getenv(EnvSourceBrokers), os.Getenv(EnvTargetBrokers)
	if s == "" || t == "" {
		return nil, nil, false
	}
	return strings.Split(s, ","), strings.Split(t, ","), true
}

// uniqSuffix returns the suffix of a pair's aliases and names on shared
// real brokers: the time's last 6 digits of milliseconds, zero-padded,
// then the process's sequence number. Unpadded, two names could read the
// same ("20708"+"7001" and "207087"+"001": TOPIC_ALREADY_EXISTS in a real
// run, the checkpoint and mirror packages' tests running side by side).
func uniqSuffix() string {
	return suffixOf(time.Now().UnixMilli(), seq.Add(1))
}

// suffixOf formats uniqSuffix's suffix of time ms (Unix milliseconds) and
// sequence number n.
func suffixOf(ms, n int64) string {
	return fmt.Sprintf("%06d%03d", ms%1000000, n)
}

// New returns a cluster pair whose aliases start with srcAlias and
// dstAlias. kfake clusters are closed by t.Cleanup.
func New(t testing.TB, srcAlias, dstAlias string, fakeOpts ...kfake.Opt) *Pair {
	t.Helper()
	if s, d, ok := RealBrokers(); ok {
		u := uniqSuffix()
		return &Pair{
			Source: Cluster{Alias: srcAlias + u, Brokers: s},
			Target: Cluster{Alias: dstAlias + u, Brokers: d},
			Real:   true,
			uniq:   u,
		}
	}
	return NewFakePair(t, srcAlias, dstAlias, fakeOpts...)
}

// NewFakePair returns a pair of in-process kfake clusters with the aliases
// srcAlias and dstAlias, also when real brokers are configured: for a case
// only kfake can set up (a real broker refuses it), which then runs in
// both passes of the suite instead of being skipped in one.
func NewFakePair(t testing.TB, srcAlias, dstAlias string, fakeOpts ...kfake.Opt) *Pair {
	t.Helper()
	return &Pair{
		Source: NewFake(t, srcAlias, fakeOpts...),
		Target: NewFake(t, dstAlias, fakeOpts...),
	}
}

// NewReal returns a pair of the real clusters src and dst (Brokers and
// Extra set, e.g. another listener with credentials), with unique aliases
// starting with srcAlias and dstAlias, like New on real brokers.
func NewReal(srcAlias, dstAlias string, src, dst Cluster) *Pair {
	u := uniqSuffix()
	src.Alias, dst.Alias = srcAlias+u, dstAlias+u
	return &Pair{Source: src, Target: dst, Real: true, uniq: u}
}

// NewFake starts one in-process kfake cluster with one broker and the
// cluster ID alias (kfake's default ID is shared by every cluster).
func NewFake(t testing.TB, alias string, opts ...kfake.Opt) Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID(alias)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake cluster %s: %v", alias, err)
	}
	t.Cleanup(c.Close)
	return Cluster{Alias: alias, Brokers: c.ListenAddrs(), Fake: c}
}

// Topic returns a topic name unique to this pair: name itself on kfake,
// name plus a suffix on shared real brokers.
func (p *Pair) Topic(name string) string {
	if p.uniq == "" {
		return name
	}
	return name + "-" + p.uniq
}

// TopicsPattern returns a regex (MM2 topics syntax) matching the topics
// this pair's [Pair.Topic] names: ".*" on kfake, the pair's own suffix on
// shared real brokers, so a flow under test ignores other tests' topics.
func (p *Pair) TopicsPattern() string {
	if p.uniq == "" {
		return ".*"
	}
	return ".*-" + p.uniq
}

// Group returns a consumer group id unique to this pair, like [Pair.Topic].
func (p *Pair) Group(name string) string { return p.Topic(name) }

// Client returns a kgo client for c, closed by t.Cleanup.
func Client(t testing.TB, c *Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(c.Opts(), opts...)...)
	if err != nil {
		t.Fatalf("client for %s: %v", c.Alias, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client for c.
func Admin(t testing.TB, c *Cluster) *kadm.Client {
	t.Helper()
	return kadm.NewClient(Client(t, c))
}

// ShortAdmin returns an admin client for c and a function that closes it,
// for helpers that tests call in polling loops: an [Admin] client lives
// until the test ends and refreshes its metadata every second, so one per
// poll adds a request a second per poll already made.
func ShortAdmin(t testing.TB, c *Cluster) (*kadm.Client, func()) {
	t.Helper()
	cl, err := kgo.NewClient(c.Opts()...)
	if err != nil {
		t.Fatalf("client for %s: %v", c.Alias, err)
	}
	return kadm.NewClient(cl), cl.Close
}

// CreateTopic creates topic on c with partitions and configs, failing the test on error.
func CreateTopic(t testing.TB, c *Cluster, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := Admin(t, c)
	resp, err := adm.CreateTopic(ctx, partitions, -1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s on %s: %v", topic, c.Alias, err)
	}
	// A real broker answers CreateTopics before its metadata lists the
	// topic with leaders (UNKNOWN_TOPIC_OR_PARTITION or
	// LEADER_NOT_AVAILABLE for a moment, seen in CI): code under test
	// listing it then would take it for missing.
	for {
		tds, err := adm.ListTopics(ctx, topic)
		if err == nil && topicReady(tds[topic], partitions) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s created on %s but not listed with leaders within 30s: %+v, %v", topic, c.Alias, tds[topic], err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// topicReady reports whether td lists the topic with partitions
// partitions (when positive), each with a leader.
func topicReady(td kadm.TopicDetail, partitions int32) bool {
	if td.Err != nil || (partitions > 0 && len(td.Partitions) != int(partitions)) {
		return false
	}
	for _, pd := range td.Partitions {
		if pd.Err != nil || pd.Leader < 0 {
			return false
		}
	}
	return true
}

// Produce writes records to c synchronously; each record's Topic and
// Partition must be set (a manual partitioner is used). A topic just
// created may be unknown to a real broker for a moment
// (UNKNOWN_TOPIC_OR_PARTITION, seen in CI on a loaded machine): the
// records are retried until the 60 s deadline, not failed after kgo's
// default 4 tries.
func Produce(t testing.TB, c *Cluster, records ...*kgo.Record) {
	t.Helper()
	cl := Client(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.UnknownTopicRetries(-1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", c.Alias, err)
	}
}

// ReadAll reads every record of topic on c from the log start to the end
// offsets observed now, ordered per partition.
func ReadAll(t testing.TB, c *Cluster, topic string) map[int32][]*kgo.Record {
	t.Helper()
	recs, err := ReadTopic(context.Background(), c.Opts(), topic, false)
	if err != nil {
		t.Fatalf("read %s on %s: %v", topic, c.Alias, err)
	}
	return recs
}

// ReadTopic reads every record of topic from the log start to the end
// offsets observed at the call (read_committed when committed is true).
func ReadTopic(ctx context.Context, opts []kgo.Opt, topic string, committed bool) (map[int32][]*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return kread.ReadPartitions(ctx, opts, topic, kread.Options{ReadCommitted: committed})
}

// Eventually polls cond every 20 ms until it returns true or timeout
// passes, then fails the test with msg and the last value cond reported.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, s := cond()
		if ok {
			return
		}
		last = s
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v; last: %s", msg, timeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ParallelOnFake calls t.Parallel on kfake only: on shared real brokers t
// runs alone. For tests that are safe beside others only on their own
// clusters: those that stop or restart brokers, cut links through a fault
// proxy, change cluster-wide settings, or load the clusters heavily (child
// processes). Other integration tests call t.Parallel themselves: each
// kfake pair is its own pair of clusters, and on shared real brokers the
// pair's names are unique ([Pair.Topic], [Pair.Group], the aliases).
// Tests that change process-wide state (environment, package variables,
// signal handling) must not be parallel at all.
func ParallelOnFake(t *testing.T) {
	t.Helper()
	if _, _, real := RealBrokers(); !real {
		t.Parallel()
	}
}

// SetDefaultParallel raises the number of parallel tests of the test
// binary (go test's -parallel, whose default is GOMAXPROCS) to n on kfake,
// or to raceN when built with -race, unless -parallel was given on the
// command line. Integration tests spend most of their time waiting (for
// intervals, sessions, retries), so more of them than cores run well side
// by side; under the race detector they compute several times more and
// fewer fit. On real brokers, which every test and package of a run
// shares, the default stays. Call it from TestMain after flag.Parse and
// before m.Run.
func SetDefaultParallel(n, raceN int) {
	if _, _, real := RealBrokers(); real || !flag.Parsed() {
		return
	}
	if raceEnabled {
		n = raceN
	}
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			set = true
		}
	})
	if !set && flag.Lookup("test.parallel") != nil {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// ClusterID returns the cluster ID c reports in its metadata: what the
// kmirror-provenance header names (on kfake the one New gives it; on a
// real cluster its own).
func ClusterID(t testing.TB, c *Cluster) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := Admin(t, c).Metadata(ctx)
	if err != nil {
		t.Fatalf("metadata of %s: %v", c.Alias, err)
	}
	return md.Cluster
}
