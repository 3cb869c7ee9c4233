// Command sidebyside replicates the same workload from a source to a target
// Kafka cluster with Apache MirrorMaker 2 (dedicated mode), kmirror's
// runner (examples/kmirror) and a bare franz-go consume→produce pipe
// (internal/bench/cmd/barepipe), one after the other, alternating the order
// in every repetition, and reports per run: records/s and MB/s of the copy,
// p50/p99 replication latency, peak RSS and CPU seconds of the process, CPU
// seconds per GB of payload (key+value+headers), the target's stored bytes
// per source byte (DescribeLogDirs) and the codec of the target's batches.
// Workloads are random (incompressible) values or JSON order events
// (internal/bench/events), the latter produced at the source with lz4 or
// zstd.
// internal/bench/sidebyside.sh builds the programs and runs it; see
// internal/bench/README.md for what is measured and how.
//
// Every run of every system gets its own cluster aliases (so its own remote
// topics, offset-syncs topic and Connect internal topics) and its own live
// topic; all topics and groups named after the run ID are deleted at the
// end unless -keep. The brokers are never restarted: they may be shared.
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
	"slices"
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
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "sidebyside:", err)
			os.Exit(1)
		}
	}
}

// workload is one data set: Records records, produced to the source with
// the Codec compression codec ("none" for the uncompressed workloads).
// Kind kindRandom: a key "%010d" and a random (incompressible) value of
// Size bytes, no headers. Kind kindJSON: order events of
// internal/bench/events (a customer key, a JSON value of about 1 KiB, four
// headers; Size is 0).
type workload struct {
	Records int
	Size    int
	Kind    string
	Codec   string
}

// The kinds of workload.
const (
	kindRandom = "random"
	kindJSON   = "json"
)

// compressed reports whether the source records of w are compressed: then
// the systems' producers use the codecs of -compressed-codecs.
func (w workload) compressed() bool { return w.Codec != "none" }

// String is the workload's name in the report: "1 M x 1 KiB" (random values,
// uncompressed), "1 M x 1 KiB, lz4", "2 M x JSON orders, zstd".
func (w workload) String() string {
	s := humanCount(w.Records) + " x "
	if w.Kind == kindJSON {
		s += "JSON orders"
	} else {
		s += humanBytes(w.Size)
	}
	if w.compressed() {
		s += ", " + w.Codec
	}
	return s
}

// id is the workload's name in the CSV and on the chart, without spaces or
// commas: "1Mx1KiB", "1Mx1KiB/lz4", "2Mxjson/zstd".
func (w workload) id() string {
	s := strings.ReplaceAll(humanCount(w.Records), " ", "") + "x"
	if w.Kind == kindJSON {
		s += "json"
	} else {
		s += strings.ReplaceAll(humanBytes(w.Size), " ", "")
	}
	if w.compressed() {
		s += "/" + w.Codec
	}
	return s
}

func humanCount(n int) string {
	switch {
	case n >= 1e6 && n%1e5 == 0:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + " M"
	case n >= 1e3 && n%100 == 0:
		return strconv.FormatFloat(float64(n)/1e3, 'f', -1, 64) + " k"
	}
	return strconv.Itoa(n)
}

func humanBytes(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// parseCount reads 1000, 10k, 1M (decimal multipliers).
func parseCount(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1000, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1000000, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive count", s)
	}
	return n * mult, nil
}

// codecs are the producer compression codecs Kafka knows.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// parseWorkloads reads "1Mx1024,5Mx100,2Mxjson/lz4": RECORDS x VALUE-BYTES
// (random values) or RECORDS x json (order events), each optionally followed
// by /CODEC, the compression of the source records (default none).
func parseWorkloads(s string) ([]workload, error) {
	var out []workload
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		r, rest, ok := strings.Cut(item, "x")
		if !ok {
			return nil, fmt.Errorf("-workloads %q: want RECORDSxBYTES or RECORDSxjson, optionally /CODEC, e.g. 1Mx1024 or 2Mxjson/lz4", item)
		}
		records, err := parseCount(r)
		if err != nil {
			return nil, fmt.Errorf("-workloads %q: records: %v", item, err)
		}
		w := workload{Records: records, Kind: kindRandom, Codec: "none"}
		sz, codec, hasCodec := strings.Cut(rest, "/")
		if hasCodec {
			w.Codec = strings.TrimSpace(codec)
			if !slices.Contains(codecs, w.Codec) {
				return nil, fmt.Errorf("-workloads %q: codec %q: want one of %s", item, w.Codec, strings.Join(codecs, ", "))
			}
		}
		if sz = strings.TrimSpace(sz); sz == kindJSON {
			w.Kind = kindJSON
		} else {
			size, err := strconv.Atoi(sz)
			if err != nil || size < 1 || size > 900_000 {
				return nil, fmt.Errorf("-workloads %q: value bytes must be 1..900000 (or json for order events)", item)
			}
			w.Size = size
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-workloads %q: no workload", s)
	}
	return out, nil
}

// parseCodecs reads "mm2=default,kmirror=default,bare=lz4": the producer
// codec of each system on the compressed workloads; "default" writes no
// setting (the system's own default). Systems not named keep the defaults.
func parseCodecs(s string) (map[string]string, error) {
	out := map[string]string{sysMM2: "default", sysKmirror: "default", sysShallow: "default", sysBare: "lz4", sysBase: "default"}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		sys, codec, ok := strings.Cut(item, "=")
		sys, codec = strings.TrimSpace(sys), strings.TrimSpace(codec)
		if _, known := systemNames[sys]; !ok || !known {
			return nil, fmt.Errorf("-compressed-codecs %q: want SYSTEM=CODEC with a system of mm2, kmirror, kmirror-shallow, bare", item)
		}
		if codec != "default" && !slices.Contains(codecs, codec) {
			return nil, fmt.Errorf("-compressed-codecs %q: codec %q: want default or one of %s", item, codec, strings.Join(codecs, ", "))
		}
		out[sys] = codec
	}
	return out, nil
}

// The systems, in the order of the first repetition.
const (
	sysMM2     = "mm2"
	sysKmirror = "kmirror"
	sysBare    = "bare"
	// sysShallow is kmirror with shallow copy on (shallow.copy.enabled=true,
	// provenance.header.enabled=false): batches copied as they are.
	sysShallow = "kmirror-shallow"
	// sysBase is another build of examples/kmirror (-mirrormaker-base),
	// run like kmirror: before/after comparisons in one invocation.
	sysBase = "kmirror-base"
)

var systemNames = map[string]string{sysMM2: "Apache MM2", sysKmirror: "kmirror", sysShallow: "kmirror shallow copy", sysBare: "bare franz-go pipe", sysBase: "kmirror (base build)"}

func parseSystems(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, x := range strings.Split(s, ",") {
		x = strings.TrimSpace(x)
		if x == "" {
			continue
		}
		if _, ok := systemNames[x]; !ok {
			return nil, fmt.Errorf("-systems: unknown system %q (want mm2, kmirror, kmirror-shallow, kmirror-base, bare)", x)
		}
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-systems: no system")
	}
	return out, nil
}

// config is the parsed command line.
type config struct {
	source, target []string
	workloads      []workload
	partitions     int
	reps           int
	systems        []string
	liveRecords    int
	liveRate       int
	mm2Tasks       int
	mm2JavaOpts    string
	classpath      string
	mirrormaker    string
	baseBinary     string
	kmirrorEnv     benchproc.KmirrorEnv // -kmirror-env
	barepipe       string
	compression    string
	codecs         map[string]string // system -> producer codec on the compressed workloads
	sourceBatch    int
	kafkaVersion   string
	revision       string
	workdir        string
	out            string
	timeout        time.Duration
	keep           bool
	command        string
}

// defaultWorkloads: the random workloads of the first benchmarks, and order
// events compressed with lz4 and with zstd at the source.
const defaultWorkloads = "1Mx1024,5Mx100,2Mxjson/lz4,2Mxjson/zstd"

// codecFor returns the producer codec sys uses on w: -compression on the
// uncompressed workloads, -compressed-codecs on the others ("default": no
// setting, the system's own default).
func (c *config) codecFor(sys string, w workload) string {
	if !w.compressed() {
		return c.compression
	}
	return c.codecs[sys]
}

// connect-mirror-maker.sh's default heap plus kafka-run-class.sh's default
// KAFKA_JVM_PERFORMANCE_OPTS: MM2 as its start script runs it.
const defaultMM2JavaOpts = "-Xms256M -Xmx2G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 " +
	"-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true"

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("sidebyside", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	var source, target, workloads, systems, records, compressedCodecs string
	var size int
	fs.StringVar(&source, "source", envOr("KMIRROR_SOURCE_BROKERS", "127.0.0.1:19092"), "source bootstrap `servers`")
	fs.StringVar(&target, "target", envOr("KMIRROR_TARGET_BROKERS", "127.0.0.1:19192"), "target bootstrap `servers`")
	fs.StringVar(&workloads, "workloads", defaultWorkloads, "`list` of data sets: RECORDSxVALUE_BYTES (random values) or RECORDSxjson (order events of ~1 KiB), each optionally /CODEC, the compression of the source records (k and M multiply by 1000 and 1000000)")
	fs.StringVar(&records, "records", "", "records of a single workload (with -size; replaces -workloads), e.g. 1M")
	fs.IntVar(&size, "size", 0, "value `bytes` of a single workload (with -records)")
	fs.IntVar(&c.partitions, "partitions", 8, "partitions of every topic")
	fs.IntVar(&c.reps, "reps", 3, "repetitions of every system on every workload")
	fs.StringVar(&systems, "systems", "mm2,kmirror,bare", "comma-separated `systems`: mm2, kmirror, kmirror-shallow (kmirror with shallow.copy.enabled), kmirror-base (-mirrormaker-base), bare")
	fs.IntVar(&c.liveRecords, "live-records", 20000, "records of the latency phase (0: skip it)")
	fs.IntVar(&c.liveRate, "live-rate", 2000, "records per second produced in the latency phase")
	fs.IntVar(&c.mm2Tasks, "mm2-tasks", 2, "MM2 tasks.max")
	fs.StringVar(&c.mm2JavaOpts, "mm2-java-opts", defaultMM2JavaOpts, "JVM `options` of MM2")
	fs.StringVar(&c.classpath, "classpath", "", "Kafka jars `classpath` for MM2 (kafka.sh classpath); required with mm2")
	fs.StringVar(&c.mirrormaker, "mirrormaker", "", "kmirror runner `binary` (go build ./examples/kmirror); required with kmirror")
	fs.StringVar(&c.baseBinary, "mirrormaker-base", "", "another kmirror runner `binary`, run as system kmirror-base (before/after comparisons)")
	c.kmirrorEnv.Register(fs)
	fs.StringVar(&c.barepipe, "barepipe", "", "bare pipe `binary` (go build ./internal/bench/cmd/barepipe); required with bare")
	fs.StringVar(&c.compression, "compression", "none", "producer compression.type of all three systems on the uncompressed workloads")
	fs.StringVar(&compressedCodecs, "compressed-codecs", "mm2=default,kmirror=default,bare=lz4",
		"producer `codecs` of the systems on the compressed workloads (SYSTEM=CODEC,...; default: the system's own default, no setting)")
	fs.IntVar(&c.sourceBatch, "source-batch-bytes", 0, "producer batch max `bytes` of the preload (0: franz-go's default, about 1 MB)")
	fs.StringVar(&c.kafkaVersion, "kafka-version", envOr("KAFKA_VERSION", "4.3.1"), "Kafka version of the brokers and MM2, for the report")
	fs.StringVar(&c.revision, "revision", "", "kmirror source `revision` (git describe), for the report")
	fs.StringVar(&c.workdir, "workdir", "", "`dir` for properties files and logs (default: a new temporary dir)")
	fs.StringVar(&c.out, "out", "", "results `dir`: latest.md and latest.csv are written there (empty: stdout only)")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Minute, "bound of one phase of one run")
	fs.BoolVar(&c.keep, "keep", false, "keep the topics instead of deleting them")
	fs.StringVar(&c.command, "command", "", "command line to print in the report (default: this program's)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.source, c.target = splitList(source), splitList(target)
	if len(c.source) == 0 || len(c.target) == 0 {
		return nil, errors.New("-source and -target are required")
	}
	var err error
	if (records == "") != (size == 0) {
		return nil, errors.New("-records and -size go together")
	}
	if records != "" {
		workloads = fmt.Sprintf("%sx%d", records, size)
	}
	if c.workloads, err = parseWorkloads(workloads); err != nil {
		return nil, err
	}
	if c.systems, err = parseSystems(systems); err != nil {
		return nil, err
	}
	if c.partitions < 1 || c.partitions > 1000 {
		return nil, fmt.Errorf("-partitions %d: want 1..1000", c.partitions)
	}
	if c.reps < 1 {
		return nil, fmt.Errorf("-reps %d: want at least 1", c.reps)
	}
	if c.liveRecords < 0 || (c.liveRecords > 0 && c.liveRate < 1) {
		return nil, fmt.Errorf("-live-records %d -live-rate %d: want records >= 0 and a positive rate", c.liveRecords, c.liveRate)
	}
	if c.mm2Tasks < 1 {
		return nil, fmt.Errorf("-mm2-tasks %d: want at least 1", c.mm2Tasks)
	}
	if !slices.Contains(codecs, c.compression) {
		return nil, fmt.Errorf("-compression %q: want none, gzip, snappy, lz4 or zstd", c.compression)
	}
	if c.codecs, err = parseCodecs(compressedCodecs); err != nil {
		return nil, err
	}
	if c.sourceBatch < 0 || c.sourceBatch > 900_000_000 {
		return nil, fmt.Errorf("-source-batch-bytes %d: want 0 (franz-go's default) or a positive byte count", c.sourceBatch)
	}
	for _, s := range c.systems {
		switch {
		case s == sysMM2 && c.classpath == "":
			return nil, errors.New("-classpath is required to run mm2 (internal/realkafka/kafka.sh classpath)")
		case (s == sysKmirror || s == sysShallow) && c.mirrormaker == "":
			return nil, errors.New("-mirrormaker is required to run kmirror")
		case s == sysBase && c.baseBinary == "":
			return nil, errors.New("-mirrormaker-base is required to run kmirror-base")
		case s == sysBare && c.barepipe == "":
			return nil, errors.New("-barepipe is required to run bare")
		}
	}
	if c.command == "" {
		c.command = strings.Join(append([]string{filepath.Base(os.Args[0])}, args...), " ")
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if c.workdir == "" {
		if c.workdir, err = os.MkdirTemp("", "sidebyside-"); err != nil {
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
	results, runErr := b.runAll(ctx)
	if len(results) == 0 {
		return runErr
	}
	rep := newReport(c, b.runID, b.started, results)
	md := rep.markdown()
	fmt.Fprint(stdout, md)
	if c.out != "" {
		if err := os.MkdirAll(c.out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(c.out, "latest.md"), []byte(md), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(c.out, "latest.csv"), []byte(rep.csv()), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "sidebyside: wrote %s and %s\n", filepath.Join(c.out, "latest.md"), filepath.Join(c.out, "latest.csv"))
	}
	return runErr
}
