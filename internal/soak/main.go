// Command soak is kmirror's fault soak on real Apache Kafka 4.x: it
// replicates a steady stream with the dedicated-mode runner
// (examples/kmirror, built once, run as operators run it) between the two
// clusters of internal/realkafka/kafka.sh while it injects faults, one
// after another and then overlapping, and after each fault compares the
// target with the source (internal/verify). It prints a table row per
// fault and exits non-zero when a record is lost outside a gap the runner
// reported, or when anything else is wrong (altered records, an unexpected
// gap, duplicates in exactly-once mode, a runner that crashed, no recovery,
// memory above the documented bound).
//
//	bash internal/realkafka/kafka.sh start      # or let the soak start them
//	go run ./internal/soak -profile short       # CI: under 8 minutes
//	go run ./internal/soak -profile long        # a release: about 25 minutes
//
// The runner reaches both clusters through fault proxies
// (internal/faultproxy) on the clusters' PROXIED listeners, so the soak can
// cut, blackhole and throttle the links; broker restarts use kafka.sh
// restart with the same environment (KMIRROR_SOURCE_PORT and friends) the
// clusters were started with. The soak restarts brokers: run it alone on
// its clusters.
//
// How loss is measured: the soak writes every record twice on the source,
// first to a ledger topic that the mirror does not replicate and, once
// acknowledged, in the same order (so at the same offsets), to the
// replicated stream topic. verify compares the ledger with the remote
// topic: records that DeleteRecords removed from the stream (the retention
// race) are still in the ledger, so they show up as missing and must equal the gaps the runner reported on
// /status. TESTING.md describes every fault and holds the last long run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // a fault check failed (loss, crash, no recovery, ...)
	exitUsage   = 2
	exitEnviron = 3 // the clusters, kafka.sh or the runner build are not usable
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command-line flags.
type options struct {
	profile        string
	modes          []string
	faults         []fault // -faults: replaces the profile's plan
	seed           int64
	rate           int
	recordSize     int
	partitions     int
	kafkaSh        string
	runner         string
	work           string
	out            string
	sessionTimeout time.Duration
	keepTopics     bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	var modes, faults string
	fs.StringVar(&o.profile, "profile", "short", "`short` (CI, under 8 minutes) or long (a release, about 25 minutes)")
	fs.StringVar(&modes, "modes", "", "comma-separated `modes` to run (default: the profile's): "+strings.Join(modeNames(), ", "))
	fs.StringVar(&faults, "faults", "", "comma-separated `faults` to run in every mode instead of the profile's plan, e.g. kill,outage:30s,race; one of: "+strings.Join(faultNames, ", "))
	fs.Int64Var(&o.seed, "seed", 0, "random `seed` of the fault instants and choices (0: from the clock; printed, so a run can be repeated)")
	fs.IntVar(&o.rate, "rate", 500, "steady source `records/s`")
	fs.IntVar(&o.recordSize, "record-size", 1024, "value `bytes` of each record")
	fs.IntVar(&o.partitions, "partitions", 6, "`partitions` of the stream topic (tasks.max is the same number)")
	fs.StringVar(&o.kafkaSh, "kafka-sh", "internal/realkafka/kafka.sh", "the cluster `script`; run with the KMIRROR_* variables the clusters were started with")
	fs.StringVar(&o.runner, "runner", "", "a prebuilt runner `binary` (default: go build ./examples/kmirror into the work dir)")
	fs.StringVar(&o.work, "work", "", "`dir` for the runner's logs and properties files (default: a new temporary dir, kept)")
	fs.StringVar(&o.out, "out", "", "also write the result tables (markdown) to this `file`")
	fs.DurationVar(&o.sessionTimeout, "broker-session-timeout", 9*time.Second, "KMIRROR_KAFKA_BROKER_SESSION_TIMEOUT_MS for the brokers the soak restarts: a broker restarted after SIGKILL waits this long before it can register again")
	fs.BoolVar(&o.keepTopics, "keep-topics", false, "keep each mode's topics (they are deleted after a mode that passed)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only, e.g. -profile short)", fs.Arg(0))
	}
	if _, ok := profiles[o.profile]; !ok {
		return nil, fmt.Errorf("-profile %q: want short or long", o.profile)
	}
	for _, m := range strings.Split(modes, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if _, ok := modeByName(m); !ok {
			return nil, fmt.Errorf("-modes: unknown mode %q: want some of %s", m, strings.Join(modeNames(), ", "))
		}
		o.modes = append(o.modes, m)
	}
	if faults != "" {
		var err error
		if o.faults, err = parseFaults(faults); err != nil {
			return nil, err
		}
	}
	switch {
	case o.rate < 10 || o.rate > 20000:
		return nil, fmt.Errorf("-rate %d: want 10 to 20000 records/s", o.rate)
	case o.recordSize < 16 || o.recordSize > 100_000:
		return nil, fmt.Errorf("-record-size %d: want 16 to 100000 bytes", o.recordSize)
	case o.partitions < 3 || o.partitions > 64:
		return nil, fmt.Errorf("-partitions %d: want 3 to 64 (3 members share them)", o.partitions)
	case o.sessionTimeout < time.Second:
		return nil, fmt.Errorf("-broker-session-timeout %s: want at least 1s", o.sessionTimeout)
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano() % 1_000_000_007
	}
	return o, nil
}

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintln(stderr, "soak:", err)
		return exitUsage
	}
	s, err := newSoak(ctx, o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "soak:", err)
		return exitEnviron
	}
	defer s.close()
	res := s.runProfile(ctx)
	md := res.markdown()
	fmt.Fprint(stdout, "\n"+md)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
			fmt.Fprintln(stderr, "soak:", err)
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "soak: interrupted")
		return exitFailed
	}
	if res.failed() {
		fmt.Fprintf(stdout, "\nSOAK FAILED (logs in %s; seed %d)\n", s.dir, o.seed)
		return exitFailed
	}
	fmt.Fprintf(stdout, "\nSOAK PASSED: no record lost outside a reported gap (seed %d)\n", o.seed)
	return exitOK
}
