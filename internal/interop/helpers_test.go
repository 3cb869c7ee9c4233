package interop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/heartbeat"
	"github.com/kmirror/kmirror/internal/realkafka"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// kafkaSh is the real-Kafka script, relative to this package's directory
// (go test runs tests there).
const kafkaSh = "../realkafka/kafka.sh"

// javaOpts are the JVM options of the Java test programs: a small heap and
// fast start-up (the programs run for seconds).
var javaOpts = []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// env is what an interop test needs: the real cluster pair with unique
// aliases and names, the Kafka lib dir and a log dir.
type env struct {
	p      *testcluster.Pair
	lib    string // classpath glob, "<lib>/*"
	logDir string
	log4j  string // log4j2 config of the Java programs
	nJava  atomic.Int32
}

// setup skips the test unless the real clusters, java and the Kafka jars
// are there, and returns a pair whose aliases start with src and dst.
func setup(t *testing.T, src, dst string) *env {
	t.Helper()
	if _, _, ok := realkafka.Brokers(); !ok {
		t.Skip(realkafka.SkipMessage)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java (JDK 17+) not on PATH; the interop tests run Apache MM2 and its client classes; see internal/realkafka/README.md")
	}
	out, err := exec.Command("bash", kafkaSh, "classpath").Output()
	if err != nil {
		t.Fatalf("%s classpath: %v", kafkaSh, err)
	}
	lib := strings.TrimSpace(string(out))
	for _, jar := range []string{"connect-mirror-client-*.jar", "connect-mirror-[0-9]*.jar", "kafka-clients-*.jar"} {
		if m, _ := filepath.Glob(filepath.Join(filepath.Dir(lib), jar)); len(m) == 0 {
			t.Skipf("Kafka jars not installed (no %s in %s): run `internal/realkafka/kafka.sh install`", jar, filepath.Dir(lib))
		}
	}
	e := &env{p: testcluster.New(t, src, dst), lib: lib, logDir: t.TempDir()}
	if !e.p.Real {
		t.Skip(realkafka.SkipMessage)
	}
	e.log4j = filepath.Join(e.logDir, "log4j2-java.properties")
	writeFile(t, e.log4j, "status = warn\nappender.err.type = Console\nappender.err.name = ERR\nappender.err.target = SYSTEM_ERR\n"+
		"appender.err.layout.type = PatternLayout\nappender.err.layout.pattern = [%d] %p %m (%c)%n\n"+
		"rootLogger.level = WARN\nrootLogger.appenderRef.err.ref = ERR\n")
	return e
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// javaCall is one run of a Java program of testdata/java.
type javaCall struct {
	Prog string // e.g. "Translate"
	Args []string
}

// java runs the calls concurrently (each JVM compiles its source file, a
// few seconds) and returns their stdout lines in call order. stderr goes
// to a file in the log dir; a failure ends the test with its last lines.
func (e *env) java(t *testing.T, calls ...javaCall) [][]string {
	t.Helper()
	out := make([][]string, len(calls))
	errs := make([]error, len(calls))
	took := make([]string, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			out[i], errs[i] = e.runJava(c)
			took[i] = fmt.Sprintf("%s %v", c.Prog, time.Since(start).Round(100*time.Millisecond))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("java: %s", strings.Join(took, ", "))
	return out
}

func (e *env) runJava(c javaCall) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	logPath := filepath.Join(e.logDir, fmt.Sprintf("%s-%d.log", c.Prog, e.nJava.Add(1)))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append(append([]string{}, javaOpts...), "-Dlog4j2.configurationFile="+e.log4j, "-cp", e.lib,
		filepath.Join("testdata", "java", c.Prog+".java"))
	cmd := exec.CommandContext(ctx, "java", append(args, c.Args...)...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, logf
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("java %s %v: %v after %v; stderr (%s):\n%s", c.Prog, c.Args, err,
			time.Since(start).Round(time.Millisecond), logPath, tail(logPath, 20))
	}
	var lines []string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// mm2 is one Apache MirrorMaker (dedicated mode) started through kafka.sh
// with its own state dir, so that it is independent of any other MM2 that
// kafka.sh runs on the machine.
type mm2 struct {
	state   string
	stopped bool
}

// startMM2 writes props to a file and starts MirrorMaker with it; the
// process is stopped by t.Cleanup, and its log is shown when the test failed.
func (e *env) startMM2(t *testing.T, name, props string) *mm2 {
	t.Helper()
	file := filepath.Join(e.logDir, name+".properties")
	writeFile(t, file, props)
	m := &mm2{state: filepath.Join(e.logDir, name+"-state")}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", m.logPath(), tail(m.logPath(), 40))
		}
	})
	t.Cleanup(func() { m.stop(t) })
	out, err := m.sh("mm2", "start", file)
	if err != nil {
		t.Fatalf("kafka.sh mm2 start: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(out))
	return m
}

func (m *mm2) logPath() string { return filepath.Join(m.state, "mm2", "mm2.log") }

func (m *mm2) sh(args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{kafkaSh}, args...)...)
	// MM2 runs for seconds here: the C1 compiler alone starts it faster.
	cmd.Env = append(os.Environ(), "KMIRROR_KAFKA_STATE="+m.state, "KMIRROR_KAFKA_STOP_TIMEOUT=20",
		"KMIRROR_MM2_HEAP_OPTS=-Xms64m -Xmx384m",
		"KMIRROR_KAFKA_JVM_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stop stops MirrorMaker (gracefully: its offsets and last records are
// flushed); it is idempotent.
func (m *mm2) stop(t *testing.T) {
	t.Helper()
	if m.stopped {
		return
	}
	m.stopped = true
	if out, err := m.sh("mm2", "stop"); err != nil {
		t.Errorf("kafka.sh mm2 stop: %v\n%s", err, out)
	} else {
		t.Logf("%s", strings.TrimSpace(out))
	}
}

// mm2Properties is an MM2 dedicated-mode file for the one-way flow
// source->target of the pair: only the listed topics and groups, replication
// factor 1 everywhere, short intervals, no group-offset sync, no ACL sync
// (the test brokers have no authorizer), heartbeats only from the enabled
// flow and heartbeats topics replicated only if topics lists them.
func mm2Properties(p *testcluster.Pair, topics, groups []string, extra ...string) string {
	s, d := p.Source.Alias, p.Target.Alias
	lines := []string{
		"clusters = " + s + ", " + d,
		s + ".bootstrap.servers = " + strings.Join(p.Source.Brokers, ","),
		d + ".bootstrap.servers = " + strings.Join(p.Target.Brokers, ","),
		s + "->" + d + ".enabled = true",
		d + "->" + s + ".enabled = false",
		d + "->" + s + ".emit.heartbeats.enabled = false",
		s + "->" + d + ".topics = " + strings.Join(topics, ", "),
		s + "->" + d + ".groups = " + strings.Join(groups, ", "),
		"heartbeats.replication.enabled = false",
		"replication.factor = 1",
		"checkpoints.topic.replication.factor = 1",
		"heartbeats.topic.replication.factor = 1",
		"offset-syncs.topic.replication.factor = 1",
		"offset.storage.replication.factor = 1",
		"status.storage.replication.factor = 1",
		"config.storage.replication.factor = 1",
		"refresh.topics.interval.seconds = 1",
		"refresh.groups.interval.seconds = 1",
		"emit.checkpoints.interval.seconds = 1",
		"emit.heartbeats.interval.seconds = 1",
		"sync.group.offsets.enabled = false",
		"sync.topic.acls.enabled = false",
		"offset.lag.max = 0",
		"tasks.max = 1",
		d + ".offset.flush.interval.ms = 1000",
	}
	return strings.Join(append(lines, extra...), "\n") + "\n"
}

// commit commits offsets for group on c (a simple commit, no member).
func commit(t *testing.T, c *testcluster.Cluster, group string, topic string, at map[int32]int64) {
	t.Helper()
	offs := kadm.Offsets{}
	for p, o := range at {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := testcluster.Admin(t, c).CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s %v: %v", group, at, err)
	}
}

// ensureTopic creates a compacted one-partition topic unless it exists
// (MM2's and kmirror's shape for heartbeats).
func ensureTopic(t *testing.T, c *testcluster.Cluster, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	compact := "compact"
	resp, err := testcluster.Admin(t, c).CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// produceN writes n records with keys and values to each listed partition.
func produceN(t *testing.T, c *testcluster.Cluster, topic string, n map[int32]int) {
	t.Helper()
	var rs []*kgo.Record
	for p, k := range n {
		for i := 0; i < k; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("k%d", i%5)),
				Value: []byte(fmt.Sprintf("%s/%d/%d", topic, p, i))})
		}
	}
	testcluster.Produce(t, c, rs...)
}

// translation is a group's translated offsets as "topic partition offset".
type translation map[string]map[string]map[int32]int64 // group -> topic -> partition -> offset

// parseTranslate parses Translate.java's "group topic partition offset" lines.
func parseTranslate(t *testing.T, lines []string) translation {
	t.Helper()
	out := translation{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("Translate.java line %q: want 4 fields", l)
		}
		p, err1 := strconv.ParseInt(f[2], 10, 32)
		o, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("Translate.java line %q: bad numbers", l)
		}
		out.add(f[0], f[1], int32(p), o)
	}
	return out
}

func (tr translation) add(group, topic string, p int32, o int64) {
	if tr[group] == nil {
		tr[group] = map[string]map[int32]int64{}
	}
	if tr[group][topic] == nil {
		tr[group][topic] = map[int32]int64{}
	}
	tr[group][topic][p] = o
}

// goTranslate is kmirror's remoteclusterutils.TranslateOffsets for each
// group, in the same shape (groups without offsets are left out, as the
// Java program prints nothing for them).
func goTranslate(t *testing.T, c *testcluster.Cluster, alias string, groups ...string) translation {
	t.Helper()
	out, err := tryGoTranslate(c, alias, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryGoTranslate is goTranslate returning its error, for waits: before the
// checkpoint emitter's first emission TranslateOffsets fails (no
// checkpoint yet), which a wait must take for "not yet".
func tryGoTranslate(c *testcluster.Cluster, alias string, groups ...string) (translation, error) {
	out := translation{}
	for _, g := range groups {
		offs, err := remoteclusterutils.TranslateOffsets(context.Background(), alias, g,
			remoteclusterutils.WithClientOpts(kgo.SeedBrokers(c.Brokers...)))
		if err != nil {
			return nil, fmt.Errorf("kmirror TranslateOffsets(%s, %s): %w", alias, g, err)
		}
		offs.Each(func(o kadm.Offset) { out.add(g, o.Topic, o.Partition, o.At) })
	}
	return out, nil
}

// topology is what Topology.java prints, restricted to names containing
// one of the test's own aliases (the clusters are shared).
type topology struct {
	Hops        map[string]int
	Upstream    []string
	Heartbeats  []string
	Checkpoints []string
}

func parseTopology(t *testing.T, lines []string, keep func(string) bool) topology {
	t.Helper()
	tp := topology{Hops: map[string]int{}}
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "hops":
			n, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("Topology.java line %q", l)
			}
			tp.Hops[f[1]] = n
		case len(f) == 2 && keep(f[1]):
			switch f[0] {
			case "upstream":
				tp.Upstream = append(tp.Upstream, f[1])
			case "heartbeats":
				tp.Heartbeats = append(tp.Heartbeats, f[1])
			case "checkpoints":
				tp.Checkpoints = append(tp.Checkpoints, f[1])
			}
		case len(f) == 2:
		default:
			t.Fatalf("Topology.java line %q", l)
		}
	}
	return tp
}

// goTopology is the same view from kmirror's remoteclusterutils.Client.
func goTopology(t *testing.T, c *testcluster.Cluster, keep func(string) bool, aliases ...string) topology {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := remoteclusterutils.NewClient(testcluster.Client(t, c))
	tp := topology{Hops: map[string]int{}}
	for _, a := range aliases {
		n, err := rc.ReplicationHops(ctx, a)
		if err != nil {
			t.Fatalf("kmirror ReplicationHops(%s): %v", a, err)
		}
		tp.Hops[a] = n
	}
	filter := func(in []string, err error) []string {
		if err != nil {
			t.Fatalf("kmirror topology: %v", err)
		}
		var out []string
		for _, s := range in {
			if keep(s) {
				out = append(out, s)
			}
		}
		sort.Strings(out)
		return out
	}
	tp.Upstream = filter(rc.UpstreamClusters(ctx))
	tp.Heartbeats = filter(rc.HeartbeatTopics(ctx))
	tp.Checkpoints = filter(rc.CheckpointTopics(ctx))
	return tp
}

// restrict returns the part of tp made only of the given aliases: hops of
// the listed aliases, upstream aliases among them, and heartbeats and
// checkpoints topics whose names consist of them ("a.b.heartbeats",
// "a.checkpoints.internal"). Other tests on the shared clusters may
// replicate this test's heartbeats topics under their own aliases; those
// names are dropped here.
func (tp topology) restrict(aliases ...string) topology {
	mine := map[string]bool{}
	for _, a := range aliases {
		mine[a] = true
	}
	onlyMine := func(name, suffix string) bool {
		rest, ok := strings.CutSuffix(name, suffix)
		if !ok || rest == "" {
			return false
		}
		for _, part := range strings.Split(strings.TrimSuffix(rest, "."), ".") {
			if !mine[part] {
				return false
			}
		}
		return true
	}
	out := topology{Hops: map[string]int{}}
	for _, a := range aliases {
		if n, ok := tp.Hops[a]; ok {
			out.Hops[a] = n
		}
	}
	for _, a := range tp.Upstream {
		if mine[a] {
			out.Upstream = append(out.Upstream, a)
		}
	}
	for _, h := range tp.Heartbeats {
		if onlyMine(h, "heartbeats") {
			out.Heartbeats = append(out.Heartbeats, h)
		}
	}
	for _, c := range tp.Checkpoints {
		if onlyMine(c, ".checkpoints.internal") {
			out.Checkpoints = append(out.Checkpoints, c)
		}
	}
	return out
}

// compareTopology checks that Java's MirrorClient (Topology.java output)
// and kmirror's Client report the same topology of cluster c for the
// names keep accepts, and returns Java's view. kmirror's view is taken
// before and after the Java run finished: topics other tests create
// meanwhile may make one of them differ, not both.
func compareTopology(t *testing.T, c *testcluster.Cluster, javaLines []string, before topology, keep func(string) bool, aliases ...string) topology {
	t.Helper()
	javaTop := parseTopology(t, javaLines, keep)
	after := goTopology(t, c, keep, aliases...)
	if !cmp.Equal(javaTop, before) && !cmp.Equal(javaTop, after) {
		t.Errorf("%v: Java MirrorClient topology differs from kmirror's (-java +kmirror):\n%s", c.Brokers, cmp.Diff(javaTop, after))
	}
	return javaTop
}

// decoded is one record of an MM2 internal topic as one side decoded it:
// exactly one of the value fields is set, or Err.
type decoded struct {
	Checkpoint *checkpoint.Checkpoint
	Heartbeat  *heartbeat.Heartbeat
	Sync       *checkpoint.OffsetSync
	Err        bool
}

// topicDecode is one topic's records by offset, plus the formatter outputs
// (Java side only).
type topicDecode struct {
	Records   map[int64]decoded
	Formatted map[int64]string
	FmtErrors map[int64]string
}

// parseDecode parses Decode.java's output into topic -> records.
func parseDecode(t *testing.T, lines []string) map[string]*topicDecode {
	t.Helper()
	out := map[string]*topicDecode{}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("Decode.java: bad number %q", s)
		}
		return n
	}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) < 4 {
			t.Fatalf("Decode.java line %q", l)
		}
		td := out[f[1]]
		if td == nil {
			td = &topicDecode{Records: map[int64]decoded{}, Formatted: map[int64]string{}, FmtErrors: map[int64]string{}}
			out[f[1]] = td
		}
		off := num(f[2])
		switch {
		case f[0] == "checkpoint" && len(f) == 9:
			td.Records[off] = decoded{Checkpoint: &checkpoint.Checkpoint{Group: f[3], Topic: f[4], Partition: int32(num(f[5])),
				UpstreamOffset: num(f[6]), DownstreamOffset: num(f[7]), Metadata: f[8]}}
		case f[0] == "heartbeat" && len(f) == 6:
			td.Records[off] = decoded{Heartbeat: &heartbeat.Heartbeat{SourceClusterAlias: f[3], TargetClusterAlias: f[4], Timestamp: num(f[5])}}
		case f[0] == "offsetsync" && len(f) == 7:
			td.Records[off] = decoded{Sync: &checkpoint.OffsetSync{Topic: f[3], Partition: int32(num(f[4])),
				UpstreamOffset: num(f[5]), DownstreamOffset: num(f[6])}}
		case f[0] == "error":
			td.Records[off] = decoded{Err: true}
		case f[0] == "fmt":
			td.Formatted[off] = strings.Join(f[3:], "\t")
		case f[0] == "fmterror":
			td.FmtErrors[off] = strings.Join(f[3:], "\t")
		default:
			t.Fatalf("Decode.java line %q", l)
		}
	}
	return out
}

// goDecode reads partition 0 of topic on c and decodes every record with
// kmirror's codecs (kind: checkpoint, heartbeat or offsetsync).
func goDecode(t *testing.T, c *testcluster.Cluster, topic, kind string) map[int64]decoded {
	t.Helper()
	out := map[int64]decoded{}
	for _, r := range testcluster.ReadAll(t, c, topic)[0] {
		var d decoded
		switch kind {
		case "checkpoint":
			cp, err := checkpoint.DecodeCheckpoint(r.Key, r.Value)
			d = decoded{Checkpoint: &cp, Err: err != nil}
		case "heartbeat":
			hb, err := heartbeat.Decode(r.Key, r.Value)
			d = decoded{Heartbeat: &hb, Err: err != nil && !errors.Is(err, heartbeat.ErrUnknownVersion)}
		case "offsetsync":
			s, err := checkpoint.DecodeOffsetSync(r.Key, r.Value)
			d = decoded{Sync: &s, Err: err != nil}
		default:
			t.Fatalf("unknown kind %s", kind)
		}
		if d.Err {
			d = decoded{Err: true}
		}
		out[r.Offset] = d
	}
	return out
}

// compareDecodes checks that Java and kmirror decoded every record both
// read (the intersection of offsets: the two reads see different end
// offsets on shared topics) to the same values, that Java's formatter
// accepted every record, and returns the records both decoded.
func compareDecodes(t *testing.T, topic string, java *topicDecode, goSide map[int64]decoded) []decoded {
	t.Helper()
	if java == nil {
		t.Fatalf("%s: Decode.java printed nothing", topic)
	}
	var both []decoded
	var offs []int64
	for off := range java.Records {
		if _, ok := goSide[off]; ok {
			offs = append(offs, off)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	for _, off := range offs {
		j, g := java.Records[off], goSide[off]
		if diff := cmp.Diff(j, g); diff != "" {
			t.Errorf("%s offset %d: Java and kmirror decode differently (-java +kmirror):\n%s", topic, off, diff)
			continue
		}
		if !j.Err {
			both = append(both, j)
			if _, ok := java.Formatted[off]; !ok {
				t.Errorf("%s offset %d: Java formatter failed: %s", topic, off, java.FmtErrors[off])
			}
		}
	}
	return both
}
