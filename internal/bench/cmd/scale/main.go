// Command scale measures kmirror (examples/kmirror), and Apache MirrorMaker
// 2 in dedicated mode when asked, on many partitions and consumer groups
// (issue 22): T source topics of P partitions with R records each, G
// consumer groups each committed on every partition of K topics. Per shape
// and system it reports the seconds until every remote partition holds its
// records, until every group partition has a checkpoint, until a commit
// wave (every group moves to the end of every partition) is seen in the
// checkpoints and in the target's groups (sync.group.offsets.enabled), the
// CPU of the process while idle over a minute, its peak RSS, and the
// requests it sends per second while idle.
//
// internal/bench/scale.sh builds the programs and runs it against the two
// clusters of internal/realkafka/kafka.sh; see internal/bench/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kmirror/kmirror/internal/bench/benchproc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// shape is one benchmark size: Topics x Partitions source partitions with
// Records records each, Groups groups each committed on every partition
// of GroupTopics topics.
type shape struct {
	Topics, Partitions, Records int
	Groups, GroupTopics         int
}

func (s shape) partitions() int      { return s.Topics * s.Partitions }
func (s shape) groupPartitions() int { return s.Groups * s.GroupTopics * s.Partitions }

// String is the shape's name in the report: "2000 partitions (200x10), 500 groups x 4 topics".
func (s shape) String() string {
	return fmt.Sprintf("%d partitions (%dx%d, %d records), %d groups x %d topics (%d group partitions)",
		s.partitions(), s.Topics, s.Partitions, s.Records, s.Groups, s.GroupTopics, s.groupPartitions())
}

// id is the shape in the CSV: "200x10x20:500x4".
func (s shape) id() string {
	return fmt.Sprintf("%dx%dx%d:%dx%d", s.Topics, s.Partitions, s.Records, s.Groups, s.GroupTopics)
}

// parseShapes reads "200x10x20:500x4,600x10x20:2000x4": TOPICSxPARTITIONSxRECORDS:GROUPSxTOPICS_PER_GROUP.
func parseShapes(s string) ([]shape, error) {
	var out []shape
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		bad := fmt.Errorf("-shapes %q: want TOPICSxPARTITIONSxRECORDS:GROUPSxTOPICS, e.g. 200x10x20:500x4", item)
		data, groups, ok := strings.Cut(item, ":")
		if !ok {
			return nil, bad
		}
		d, g := strings.Split(data, "x"), strings.Split(groups, "x")
		if len(d) != 3 || len(g) != 2 {
			return nil, bad
		}
		var n [5]int
		for i, f := range append(d, g...) {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || v <= 0 {
				return nil, bad
			}
			n[i] = v
		}
		sh := shape{Topics: n[0], Partitions: n[1], Records: n[2], Groups: n[3], GroupTopics: n[4]}
		if sh.GroupTopics > sh.Topics {
			return nil, fmt.Errorf("-shapes %q: %d topics per group, but only %d topics", item, sh.GroupTopics, sh.Topics)
		}
		out = append(out, sh)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-shapes %q: no shape", s)
	}
	return out, nil
}

// System names.
const (
	sysKmirror = "kmirror"
	sysMM2     = "mm2"
	// sysBase is another kmirror binary (-mirrormaker-base), e.g. a build
	// of an earlier revision, run the same way: before/after comparisons
	// on the same topics.
	sysBase = "kmirror-base"
	// sysShallow is kmirror with shallow.copy.enabled=true: its fetches
	// run without a fetch session (KIP-227), so its idle cost is
	// reported apart.
	sysShallow = "kmirror-shallow"
)

type config struct {
	source, target []string
	shapes         []shape
	systems        []string
	interval       time.Duration
	tasks          int
	recordBytes    int
	idleWait, idle time.Duration
	capKmirror     time.Duration
	capMM2         time.Duration
	mirrormaker    string
	baseBinary     string
	kmirrorEnv     benchproc.KmirrorEnv // -kmirror-env
	classpath      string
	mm2JavaOpts    string
	metricsAddr    string
	out            string
	workdir        string
	keep           bool
	revision       string
	kafkaVersion   string
	command        string
	clean          string
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var source, target, shapes, systems string
	fs.StringVar(&source, "source", envOr("KMIRROR_SOURCE_BROKERS", "127.0.0.1:19092"), "source bootstrap `servers`")
	fs.StringVar(&target, "target", envOr("KMIRROR_TARGET_BROKERS", "127.0.0.1:19192"), "target bootstrap `servers`")
	fs.StringVar(&shapes, "shapes", "200x10x20:500x4,600x10x20:2000x4", "`TOPICSxPARTITIONSxRECORDS:GROUPSxTOPICS,...`")
	fs.StringVar(&systems, "systems", sysKmirror, "systems to run, in order: kmirror, mm2, kmirror-base, kmirror-shallow")
	fs.DurationVar(&c.interval, "interval", 5*time.Second, "emit.checkpoints.interval.seconds and sync.group.offsets.interval.seconds")
	fs.IntVar(&c.tasks, "tasks", 2, "tasks.max")
	fs.IntVar(&c.recordBytes, "record-bytes", 100, "value bytes of each record")
	fs.DurationVar(&c.idleWait, "idle-wait", 30*time.Second, "wait after the last checkpoint before measuring idle")
	fs.DurationVar(&c.idle, "idle", time.Minute, "idle measurement window")
	fs.DurationVar(&c.capKmirror, "kmirror-cap", 15*time.Minute, "give up on kmirror's replication and checkpoints after this long")
	fs.DurationVar(&c.capMM2, "mm2-cap", 15*time.Minute, "give up on MM2's replication and checkpoints after this long")
	fs.StringVar(&c.mirrormaker, "mirrormaker", "", "path of the examples/kmirror `binary`")
	fs.StringVar(&c.baseBinary, "mirrormaker-base", "", "path of another examples/kmirror `binary`, run as system kmirror-base")
	c.kmirrorEnv.Register(fs)
	fs.StringVar(&c.classpath, "classpath", "", "Kafka jars `classpath` for MM2 (kafka.sh classpath)")
	fs.StringVar(&c.mm2JavaOpts, "mm2-java-opts", "-Xms256M -Xmx2G -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true", "JVM `options` of MM2")
	fs.StringVar(&c.metricsAddr, "metrics", "127.0.0.1:25990", "`address` kmirror serves /metrics on (its request counts)")
	fs.StringVar(&c.out, "out", "internal/bench/results", "results `dir` (scale-latest.md, scale-latest.csv)")
	fs.StringVar(&c.workdir, "workdir", "", "`dir` for properties files and logs (default: a temporary one)")
	fs.BoolVar(&c.keep, "keep", false, "keep the topics and groups")
	fs.StringVar(&c.revision, "revision", "unknown", "kmirror revision, for the report")
	fs.StringVar(&c.kafkaVersion, "kafka-version", "4.3.1", "Kafka version, for the report")
	fs.StringVar(&c.command, "command", "", "command line, for the report")
	fs.StringVar(&c.clean, "clean", "", "delete the topics and groups whose names contain `TAG` (a run left by an interrupted benchmark: its IDs start with sc) on both clusters, and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.source, c.target = strings.Split(source, ","), strings.Split(target, ",")
	var err error
	if c.shapes, err = parseShapes(shapes); err != nil {
		return nil, err
	}
	for _, s := range strings.Split(systems, ",") {
		if c.clean != "" {
			break
		}
		switch s = strings.TrimSpace(s); s {
		case sysKmirror, sysShallow:
			if c.mirrormaker == "" {
				return nil, errors.New("-mirrormaker is required to run kmirror (go build ./examples/kmirror)")
			}
		case sysBase:
			if c.baseBinary == "" {
				return nil, errors.New("-mirrormaker-base is required to run kmirror-base")
			}
		case sysMM2:
			if c.classpath == "" {
				return nil, errors.New("-classpath is required to run mm2 (internal/realkafka/kafka.sh classpath)")
			}
		default:
			return nil, fmt.Errorf("-systems: unknown system %q (want kmirror, mm2, kmirror-base, kmirror-shallow)", s)
		}
		c.systems = append(c.systems, s)
	}
	if c.interval < time.Second || c.interval%time.Second != 0 {
		return nil, fmt.Errorf("-interval %s: want whole seconds, at least 1s", c.interval)
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if c.workdir == "" {
		if c.workdir, err = os.MkdirTemp("", "kmirror-scale-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(c.workdir, 0o755); err != nil {
		return err
	}
	b, err := newBench(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	if c.clean != "" {
		b.cleanup(c.clean)
		return nil
	}
	lim := b.checkLimits(ctx)
	var results []result
	for _, sh := range c.shapes {
		rs, err := b.runShape(ctx, sh)
		results = append(results, rs...)
		if err != nil {
			b.logf("shape %s: %v", sh.id(), err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	rep := report(c, lim, results)
	fmt.Fprint(stdout, rep)
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.out, "scale-latest.md"), []byte(rep), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.out, "scale-latest.csv"), []byte(csvOf(results, lim.Brokers)), 0o644)
}
