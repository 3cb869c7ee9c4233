// Command kmirror runs kmirror from an Apache Kafka MirrorMaker 2
// dedicated-mode configuration file (connect-mirror-maker.properties), as
// `connect-mirror-maker.sh mm2.properties` does: every herder pair of the
// file becomes a replication flow of one [mirror.Mirror].
//
//	go install github.com/kmirror/kmirror/examples/kmirror@latest
//	kmirror -config mm2.properties [-clusters B] [-listen 127.0.0.1:9090]
//	kmirror -config mm2.properties -check
//	kmirror -config mm2.properties -embedded -demo-topics orders:3,payments:2
//	kmirror -version
//
// Flags:
//
//	-config FILE        MM2 properties file (required).
//	-version            print the module version, the VCS revision, commit
//	                    time and "modified" flag of the build, the Go version
//	                    and the platform, and exit 0.
//	-clusters A,B       MM2's --clusters: run only the flows whose target is
//	                    one of these aliases (mirror.OnlyTargets).
//	-check              validate offline (no connection, no topic created):
//	                    print the effective configuration with secrets
//	                    masked, then the warnings (once, under "# warnings");
//	                    exit 0 if valid. Every error of the file is
//	                    reported, each with its line.
//	-strict             warnings (misspelt keys, settings without effect)
//	                    fail: exit 3 after -check, or instead of starting.
//	-embedded           start one in-process kfake cluster per alias (cluster
//	                    ID = alias, 3 brokers or the largest replication
//	                    factor configured) and use them instead of the file's
//	                    bootstrap servers and security settings.
//	-demo-topics T[:N],.. with -embedded: create topics T with N partitions
//	                    (1 to 1000; 1 when :N is left out) on every source
//	                    cluster and produce -demo-rate records per second to
//	                    each.
//	-listen ADDR        serve HTTP on ADDR: /metrics (Prometheus: engine and
//	                    franz-go client metrics), /status (JSON, Kafka
//	                    Connect's status shape, for every member of each
//	                    flow), Connect's /connectors endpoints (status,
//	                    config, tasks, restart, pause, resume, stop),
//	                    /healthz (liveness; /health in Connect's shape),
//	                    /readyz (readiness). ADDR is also the worker id
//	                    the other members show.
//	-ready-grace D      how long a flow may be RETRYING or FAILED before
//	                    /readyz answers 503 (default 60s).
//	-status-interval D  how often this member publishes its state to each
//	                    flow's status topic, which every member reads to
//	                    answer for the whole flow (default 5s).
//	-log-level LEVEL    debug, info, warn or error (default info); PUT
//	                    /admin/loggers/root {"level":"DEBUG"} (Connect's)
//	                    changes it until the process stops.
//	-summary-interval D log an INFO "replication summary" line per flow
//	                    (records/s, bytes/s, lag, groups checkpointed) every
//	                    D (default 1m); 0 disables it.
//	-shutdown-timeout D bound of a graceful stop (default 40s).
//
// SIGINT or SIGTERM stops gracefully: fetching stops, records in flight are
// acknowledged, resume points (mm2-offsets.<source>.internal) and the last
// offset syncs are stored; the exit code is 0. A second signal exits at
// once. Under `go run` on Linux, stopping the go command (which does not
// forward SIGTERM) stops the runner the same way: the runner watches its
// go-command parent and stops gracefully when it exits.
//
// Exit codes: 0 clean stop or valid -check, 1 runtime failure, 2 bad flags
// or configuration (including a -config file that cannot be read), 3 a
// valid configuration with warnings under -strict.
//
// With KMIRROR_HEAPPROFILE_PEAK=PREFIX in the environment the runner writes
// a Go heap profile to PREFIX.kmirror.<pid>.pprof at every new peak of its
// live heap (`go tool pprof -sample_index=inuse_space`), for memory
// investigations: the peak RSS follows the largest live heap. With also
// KMIRROR_HEAPPROFILE_EVERY=30s (a period) it writes
// PREFIX.kmirror.<pid>.<n>.pprof every period, whose alloc_space
// differences are what the runner allocated in between.
//
// Memory: Go's collector lets the heap grow to twice what is live before it
// collects (GOGC=100), so the peak RSS is about twice the largest live heap.
// The runner, like any Go program, honours GOMEMLIMIT (Go's soft memory
// limit, e.g. GOMEMLIMIT=180MiB), the counterpart of MM2's -Xmx: the
// collector then runs more often near the limit instead of letting the heap
// double. Size it above the live heap at the busiest time, plus a quarter:
// the heap left after a collection (GODEBUG=gctrace=1 prints it, the
// third of its "A->B->C MB" figures), not go_memstats_heap_inuse_bytes,
// which also counts garbage not collected yet. Under a limit below the
// live heap the collector takes up to half the CPU. In a container with a
// memory limit (cgroup v1 or v2) and no GOMEMLIMIT, the runner sets the
// soft limit to 90 % of the container's, as the JVM sizes its heap from
// the container's memory; AUTOMEMLIMIT=0.8 sets another ratio and
// AUTOMEMLIMIT=off leaves Go's default. The "starting" log line reports
// the limit in effect and where it comes from (memory_limit_from:
// GOMEMLIMIT, container or none).
//
// `kmirror verify -config mm2.properties [-flow A->B] [-last N | -since T]`
// compares the source topics of a flow with their remote topics by content
// and exits non-zero when records are missing (see verify.go).
//
// `kmirror units -config mm2.properties -resize` changes the number of
// slots of the flows to their tasks.max, offline (see units.go).
//
// `kmirror translate|failover|failback -config mm2.properties -flow A->B
// -groups REGEX` is the disaster-recovery runbook: translated offsets per
// partition, moving consumer groups to the target, and back (see
// translate.go, failover.go, failback.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/clientconf"
	"github.com/kmirror/kmirror/internal/heapwatch"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/mirror/mirrorprom"
)

func main() {
	heapwatch.FromEnv() // runs until the process exits
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, parentExited := context.WithCancel(ctx)
	watchGoRun(ctx, func() {
		fmt.Fprintln(os.Stderr, "kmirror: the go command of `go run` exited: stopping")
		parentExited()
	})
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process
	}()
	if len(os.Args) > 1 && os.Args[1] == "verify" { // subcommand: verify.go
		code := verifyMain(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if cmd := drCommands[subcommand(os.Args)]; cmd != nil { // translate.go, failover.go, failback.go
		code := cmd(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "units" { // subcommand: units.go
		code := unitsMain(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	parentExited()
	os.Exit(exitCode(err, os.Stderr))
}

// strictError is a valid configuration with warnings under -strict: exit
// code 3.
type strictError struct{ warnings int }

func (e *strictError) Error() string {
	return fmt.Sprintf("-strict: the configuration has %d warning(s); fix them, or run without -strict", e.warnings)
}

// clusterList reads the -clusters flag of fs (value v): comma-separated
// aliases, blanks around them dropped; nil when the flag is not given.
func clusterList(fs *flag.FlagSet, v string) ([]string, error) {
	var list []string
	for _, c := range strings.Split(v, ",") {
		if c = strings.TrimSpace(c); c != "" {
			list = append(list, c)
		}
	}
	if len(list) == 0 && flagSet(fs, "clusters") {
		// An unset variable in "-clusters $REGION": MM2's --clusters ""
		// keeps the flows into a cluster named "", none, and refuses to
		// start (IllegalArgumentException); running every flow instead
		// would run other nodes' flows here too.
		return nil, fmt.Errorf("-clusters %q names no alias: write the target aliases of this node's flows (e.g. -clusters B), or leave -clusters out to run every flow", v)
	}
	return list, nil
}

// flagSet reports whether the command line sets flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// usageError is a bad command line or configuration: exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitCode maps run's error to the process exit code and prints it.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "kmirror:", err)
	var ue *usageError
	var ce *mirror.ConfigError
	var se *strictError
	switch {
	case errors.As(err, &ue) || errors.As(err, &ce):
		return 2
	case errors.As(err, &se):
		return 3
	}
	return 1
}

// options are the parsed flags.
type options struct {
	config          string
	version         bool
	clusters        []string
	check           bool
	strict          bool
	embedded        bool
	demoTopics      []demoTopic
	demoRate        int
	listen          string
	logLevel        slog.Level
	shutdownTimeout time.Duration
	readyGrace      time.Duration
	summaryInterval time.Duration
	statusInterval  time.Duration
}

type demoTopic struct {
	name       string
	partitions int32
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("kmirror", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	var clusters, demo, level string
	fs.StringVar(&o.config, "config", "", "MM2 dedicated-mode properties `file` (required)")
	fs.BoolVar(&o.version, "version", false, "print the version (module version, VCS revision and time, Go version, platform) and exit")
	fs.StringVar(&clusters, "clusters", "", "comma-separated target `aliases`: run only the flows into these clusters (MM2 --clusters)")
	fs.BoolVar(&o.check, "check", false, "validate the configuration offline, print warnings and the effective configuration (secrets masked), and exit")
	fs.BoolVar(&o.strict, "strict", false, "treat configuration warnings (misspelt or ignored keys, ...) as errors: exit 3 instead of running, or after -check")
	fs.BoolVar(&o.embedded, "embedded", false, "start an in-process kfake cluster per alias and use it instead of the configured brokers")
	fs.StringVar(&demo, "demo-topics", "", "with -embedded: `topic[:partitions],...` to create and feed on every source cluster (partitions 1 to 1000, 1 when :partitions is left out: orders is orders:1)")
	fs.IntVar(&o.demoRate, "demo-rate", 50, "with -demo-topics: records per second per topic")
	fs.StringVar(&o.listen, "listen", "", "HTTP `address` for /metrics, /status, /healthz, /readyz and Kafka Connect's REST API (/connectors/...) (e.g. 127.0.0.1:9090); empty: no HTTP")
	fs.StringVar(&level, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.DurationVar(&o.summaryInterval, "summary-interval", time.Minute, "log an INFO \"replication summary\" per flow (records/s, bytes/s, lag, groups checkpointed) at this `interval`; 0 disables")
	fs.DurationVar(&o.readyGrace, "ready-grace", defaultReadyGrace, "how long a flow may be RETRYING or FAILED before /readyz answers 503")
	fs.DurationVar(&o.statusInterval, "status-interval", 5*time.Second, "how often this member publishes its state to the flow's status topic (the other members' /status read it); at least 100ms")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 40*time.Second, "bound of a graceful stop (the engine bounds its own flush at 30s)")
	fs.Usage = func() {
		// To fs.Output(), not stderr: discarded with the parse error's
		// copy while Parse runs (the header was printed twice).
		fmt.Fprint(fs.Output(), `usage: kmirror -config FILE [flags]          run the flows of an MM2 properties file
       kmirror -check [-strict] -config FILE validate it offline and print the effective configuration
       kmirror verify [flags]                compare a source topic with its remote topic (kmirror verify -h)
       kmirror units -config FILE -resize    change the flows' number of slots to tasks.max, every member stopped
       kmirror translate|failover|failback   disaster recovery: translate, move or move back consumer groups (kmirror failover -h)
       kmirror -version

flags:
`)
		fs.PrintDefaults()
	}
	// The flag package prints a parse error and then the usage; the error
	// is printed once, last, by exitCode, with a suggestion (a new user
	// saw "flag provided but not defined: -embeded" twice, and no hint).
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if err != nil {
		fs.Usage()
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			if sug := clientconf.Suggest(strings.TrimPrefix(name, "-"), names); sug != "" {
				err = fmt.Errorf("%w (did you mean -%s?)", err, sug)
			}
		}
		return nil, &usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, &usageError{fmt.Errorf("unexpected argument %q (the properties file is given with -config)", fs.Arg(0))}
	}
	if o.version {
		return o, nil
	}
	if o.config == "" {
		return nil, &usageError{errors.New("-config is required (an MM2 properties file)")}
	}
	if o.clusters, err = clusterList(fs, clusters); err != nil {
		return nil, &usageError{err}
	}
	if err := o.logLevel.UnmarshalText([]byte(level)); err != nil {
		return nil, &usageError{fmt.Errorf("-log-level %q: want debug, info, warn or error", level)}
	}
	if demo != "" {
		if !o.embedded {
			return nil, &usageError{errors.New("-demo-topics needs -embedded (kmirror never writes to real source clusters on its own)")}
		}
		var err error
		if o.demoTopics, err = parseDemoTopics(demo); err != nil {
			return nil, &usageError{err}
		}
	}
	if o.demoRate < 1 {
		return nil, &usageError{fmt.Errorf("-demo-rate %d: must be at least 1", o.demoRate)}
	}
	if o.summaryInterval < 0 {
		return nil, &usageError{fmt.Errorf("-summary-interval %s: must not be negative (0 disables the summary)", o.summaryInterval)}
	}
	if o.statusInterval < 100*time.Millisecond {
		return nil, &usageError{fmt.Errorf("-status-interval %s: must be at least 100ms (members publish their state at this interval)", o.statusInterval)}
	}
	if o.readyGrace < 0 {
		return nil, &usageError{fmt.Errorf("-ready-grace %s: must not be negative (0: not ready as soon as a flow retries)", o.readyGrace)}
	}
	if o.shutdownTimeout <= 0 {
		return nil, &usageError{fmt.Errorf("-shutdown-timeout %s: must be positive", o.shutdownTimeout)}
	}
	return o, nil
}

// parseDemoTopics parses "orders:3,payments" (partitions default to 1).
func parseDemoTopics(s string) ([]demoTopic, error) {
	var out []demoTopic
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, n, hasN := strings.Cut(item, ":")
		t := demoTopic{name: strings.TrimSpace(name), partitions: 1}
		if t.name == "" {
			return nil, fmt.Errorf("-demo-topics %q: empty topic name", item)
		}
		if hasN {
			p, err := strconv.ParseInt(strings.TrimSpace(n), 10, 32)
			if err != nil || p < 1 || p > 1000 {
				return nil, fmt.Errorf("-demo-topics %q: partitions must be a number from 1 to 1000 (write %s:3, or %s alone for 1)", item, t.name, t.name)
			}
			t.partitions = int32(p)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-demo-topics %q: no topic", s)
	}
	return out, nil
}

// run is the whole program: stdout receives -check output, stderr the logs.
// It returns when ctx is canceled (nil after a clean stop), when the
// Mirror fails, or at once for -check.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, readVersion())
		return nil
	}
	var loadOpts []mirror.LoadOpt
	if len(o.clusters) > 0 {
		loadOpts = append(loadOpts, mirror.OnlyTargets(o.clusters...))
	}
	props, err := mirror.LoadProperties(o.config, loadOpts...)
	if err != nil {
		// An unreadable file or an invalid setting: exit code 2. The
		// file's warnings are printed too, so that one run shows every
		// problem (a new user's try, stop 38, saw them only once the
		// errors were fixed).
		var ces *mirror.ConfigErrors
		if errors.As(err, &ces) && len(ces.Warnings) > 0 {
			err = fmt.Errorf("%w\n%s", err, warningLines(ces.Warnings))
		}
		return &usageError{err}
	}
	if o.check {
		return check(props, stdout, o.strict)
	}

	// The level PUT /admin/loggers/{logger} changes.
	level := new(slog.LevelVar)
	level.Set(o.logLevel)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// Start, listen address and clean stop are logged at any -log-level.
	banner := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, w := range props.Warnings() {
		log.Warn("configuration", "line", w.Line, "key", w.Key, "warning", w.Message)
	}
	if n := len(props.Warnings()); o.strict && n > 0 {
		return &strictError{n}
	}

	clusters := props.Clusters()
	var emb *embedded
	if o.embedded {
		if emb, err = startEmbedded(props, log); err != nil {
			return err
		}
		defer emb.close()
		clusters = emb.clusters
		if len(o.demoTopics) > 0 {
			if err := emb.createDemoTopics(ctx, o.demoTopics); err != nil {
				return err
			}
			feedCtx, stopFeed := context.WithCancel(ctx)
			defer stopFeed() // runs before emb.close, which waits for the feeders
			emb.feed(feedCtx, o.demoTopics, o.demoRate)
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cm := newClientMetrics(reg)
	opts := []mirror.Opt{mirror.WithLogger(log), mirrorprom.WithRegisterer(reg)}
	for _, c := range clusters {
		c.Client = append(append([]kgo.Opt{}, c.Client...), kgo.WithHooks(cm.hook(c.Alias)))
		opts = append(opts, mirror.WithCluster(c))
	}
	settings := map[string]map[string]string{}
	for _, f := range props.Flows() {
		settings[f.Name()] = props.FlowSettings(f.Name())
		if emb != nil {
			settings[f.Name()] = emb.effective(settings[f.Name()])
		}
		opts = append(opts, mirror.WithFlow(f), mirror.WithFlowSettings(f.Name(), settings[f.Name()]))
	}
	// The worker id the members show each other: -listen's address.
	var ln net.Listener
	if o.listen != "" {
		if ln, err = net.Listen("tcp", o.listen); err != nil {
			hint := ""
			if _, perr := strconv.Atoi(o.listen); perr == nil {
				hint = fmt.Sprintf(" (a port alone is written :%s, every interface, or 127.0.0.1:%s)", o.listen, o.listen)
			} else if _, _, serr := net.SplitHostPort(o.listen); serr != nil {
				// "bogus" or "localhost": the error says only "missing port".
				hint = " (write host:port, e.g. 127.0.0.1:9090, or :9090 for every interface)"
			}
			return &usageError{fmt.Errorf("-listen %s: %w%s", o.listen, err, hint)}
		}
		defer ln.Close()
	}
	worker := workerID("")
	if ln != nil {
		worker = workerID(ln.Addr().String())
	}
	opts = append(opts, mirror.WithWorkerID(worker), mirror.WithStatusInterval(o.statusInterval))
	m, err := mirror.New(opts...)
	if err != nil {
		return err
	}

	h := newHandler(m, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}), o.readyGrace)
	h.worker, h.flows, h.settings, h.logLevel, h.levelLog = worker, props.Flows(), settings, level, banner
	h.elsewhere, h.onlyTargets = props.OtherNodesFlows(), o.clusters
	var srv *http.Server
	if ln != nil {
		srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("http server", "err", err)
			}
		}()
		banner.Info("http listening", "addr", ln.Addr().String(), "endpoints", "/metrics /status /connectors /healthz /health /readyz")
	}

	names := make([]string, 0, len(props.Flows()))
	for _, f := range props.Flows() {
		names = append(names, f.Name())
	}
	v := readVersion()
	limitFrom := setContainerMemoryLimit(log)
	startAttrs := []any{"flows", strings.Join(names, ","), "embedded", o.embedded, "version", v.Version, "revision", v.Revision,
		"memory_limit", memoryLimit(), "memory_limit_from", limitFrom}
	if other := props.OtherNodesFlows(); len(other) > 0 {
		// The file's other flows, which -clusters leaves to other nodes
		// (a new user looked for them in this member's /connectors).
		startAttrs = append(startAttrs, "other_nodes_flows", strings.Join(other, ","), "clusters", strings.Join(o.clusters, ","))
	}
	banner.Info("starting", startAttrs...)
	runErr := make(chan error, 1)
	go func() { runErr <- m.Run(ctx) }()
	if o.summaryInterval > 0 {
		sumCtx, stopSummary := context.WithCancel(ctx)
		sumDone := make(chan struct{})
		go func() { defer close(sumDone); summaryLoop(sumCtx, m, log, o.summaryInterval) }()
		defer func() { stopSummary(); <-sumDone }()
	}

	select {
	case err = <-runErr:
		// A fatal error (ctx still live) or a stop that raced with it.
		err = traceSetting(err, props)
		h.runReturned(err)
	case <-ctx.Done():
		h.stopping.Store(true)
		log.Info("stopping: flushing records in flight and storing resume points", "timeout", o.shutdownTimeout)
		t := time.NewTimer(o.shutdownTimeout)
		select {
		case err = <-runErr:
			h.runReturned(err)
			t.Stop()
		case <-t.C:
			err = fmt.Errorf("graceful stop did not finish within %s: resume points may be older than the records replicated (records replicated since the last stored point are copied again at restart)", o.shutdownTimeout)
		}
	}
	h.stopping.Store(true)
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
	}
	if err != nil {
		return err
	}
	banner.Info("stopped cleanly")
	return nil
}

// traceSetting adds to a fatal *mirror.ConfigError that Run returned (a
// replication factor above the target's broker count) the file's setting
// that gave the value, and its line: Run names the flow's key
// ("A->B.replication.factor"), which the file may set at top level
// ("replication.factor"), and knows no line (an operator's find).
func traceSetting(err error, props *mirror.Properties) error {
	var ce *mirror.ConfigError
	if !errors.As(err, &ce) || strings.Contains(ce.Reason, "line ") {
		return err
	}
	fk, line, ok := props.SettingOf(ce.Key)
	if !ok {
		return err
	}
	where := fk
	if line > 0 {
		where = fmt.Sprintf("%s, line %d", fk, line)
	}
	return fmt.Errorf("%w (set in the file by %s)", err, where)
}

// summaryLoop logs logSummary every interval from consecutive
// Status snapshots until ctx is done.
func summaryLoop(ctx context.Context, m *mirror.Mirror, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	prev, prevAt := summaryBase(m.Status()), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur, now := m.Status(), time.Now()
		logSummary(log, prev, cur, now.Sub(prevAt))
		prev, prevAt = summaryBase(cur), now
	}
}

// summaryBase keeps of s what logSummary reads of the previous snapshot:
// each flow's name and counters. A whole snapshot held for an interval kept
// its partition and group slices alive, and with them the checkpoint
// emitter's group states of a minute before: megabytes at thousands of
// groups (issue 22).
func summaryBase(s mirror.Status) mirror.Status {
	out := mirror.Status{Flows: make([]mirror.FlowStatus, len(s.Flows))}
	for i, f := range s.Flows {
		out.Flows[i] = mirror.FlowStatus{Name: f.Name, Records: f.Records, Bytes: f.Bytes}
	}
	return out
}

// check prints the effective configuration, which ends with the warnings
// (so they are printed once), then builds the engine (which does no I/O) to
// catch what only the engine validates. With strict, warnings make it
// fail with a *strictError.
func check(props *mirror.Properties, stdout io.Writer, strict bool) error {
	if n := len(props.Warnings()); n > 0 {
		fmt.Fprintf(stdout, "# %d warning(s), listed under \"# warnings\" below\n\n", n)
	}
	fmt.Fprint(stdout, props.Effective())
	m, err := mirror.New(props.Opts()...)
	if err != nil {
		return err
	}
	printSkips(stdout, m.Status())
	var names []string
	for _, f := range props.Flows() {
		n := f.Name()
		if f.Disabled {
			n += " (heartbeats only)"
		}
		names = append(names, n)
	}
	fmt.Fprintf(stdout, "\n# configuration valid: %d flow(s): %s\n", len(names), strings.Join(names, ", "))
	if n := len(props.Warnings()); strict && n > 0 {
		return &strictError{n}
	}
	return nil
}

// memoryLimit describes the Go soft memory limit in effect (GOMEMLIMIT or
// debug.SetMemoryLimit): "none" when unset, else the limit in MiB.
func memoryLimit() string {
	return describeMemoryLimit(debug.SetMemoryLimit(-1))
}

// describeMemoryLimit formats a soft memory limit in bytes; math.MaxInt64,
// the runtime's "no limit", is "none".
func describeMemoryLimit(b int64) string {
	if b == math.MaxInt64 {
		return "none"
	}
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', -1, 64) + " MiB"
}

// warningLines lists a file's warnings under the errors of a file that
// has both: "N warning(s) as well:" and one indented line each.
func warningLines(ws []mirror.Warning) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d warning(s) as well:", len(ws))
	for _, w := range ws {
		b.WriteString("\n\t" + w.String())
	}
	return b.String()
}
