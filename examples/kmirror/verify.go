package main

// The verify subcommand:
//
//	kmirror verify -config mm2.properties [-flow A->B] [-topics REGEX]
//	               [-last N | -since 2024-05-01T12:00:00Z | -since 2h]
//	               [-exactly-once] [-catch-up 30s] [-progress 10s] [-json]
//
// It compares every source topic of the flow (MM2 topics/topics.exclude of
// the file, narrowed by -topics) with its remote topic on the target
// (named by the flow's replication policy), partition by partition, by
// content: key, value, headers (without kmirror-provenance), timestamp
// (unless the remote topic uses LogAppendTime). Both sides are read with
// read_committed. Duplicates from replays are allowed unless
// -exactly-once. The report (a table, or JSON with -json) goes to stdout,
// progress to stderr.
//
// Exit codes: 0 the target holds every record compared; 1 records
// missing, altered, out of order or unexpected (or duplicated with
// -exactly-once); 2 bad flags or configuration; 3 a cluster unreachable,
// a topic or partition that could not be read, or interrupted.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/mm2filter"
	"github.com/kmirror/kmirror/internal/verify"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/policy"
)

// Exit codes of kmirror verify.
const (
	verifyOK         = 0
	verifyMismatch   = 1
	verifyUsage      = 2
	verifyIncomplete = 3
)

type verifyOptions struct {
	config      string
	flow        string
	topics      *regexp.Regexp
	last        int64
	since       time.Time
	exactlyOnce bool
	catchUp     time.Duration
	progress    time.Duration
	json        bool
	parallel    int
	maxReplay   int64
	maxSkip     int64
	maxDetails  int
	ignore      []string
	timeout     time.Duration
	// flowName and flowTopics (the flow's topic filter) are set by
	// verifyConfig, for the message when nothing is selected.
	flowName   string
	topicsExpr string // -topics as given
	flowTopics func(topic string) bool
}

func parseVerifyFlags(args []string, stderr io.Writer, now time.Time) (*verifyOptions, error) {
	fs := flag.NewFlagSet("kmirror verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &verifyOptions{}
	var topics, since, ignore string
	fs.StringVar(&o.config, "config", "", "MM2 dedicated-mode properties `file` (required): the clusters and flows the mirror runs")
	fs.StringVar(&o.flow, "flow", "", "the flow to verify, `source->target` (required when the file has several)")
	fs.StringVar(&topics, "topics", "", "`regex` (full match) narrowing the flow's source topics")
	fs.Int64Var(&o.last, "last", 0, "compare only the last `N` records (offsets) of each source partition")
	fs.StringVar(&since, "since", "", "compare only records from this `time` on: RFC 3339 (2024-05-01T12:00:00Z) or a duration back from now (2h)")
	fs.BoolVar(&o.exactlyOnce, "exactly-once", false, "fail on any duplicate (for flows in exactly-once mode)")
	fs.DurationVar(&o.catchUp, "catch-up", 0, "wait up to this `duration` per partition for the mirror to copy the newest records")
	fs.DurationVar(&o.progress, "progress", 10*time.Second, "progress `interval` on stderr (a bar on a terminal); 0 turns it off")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.IntVar(&o.parallel, "parallel", verify.DefaultParallel, "partitions compared at once")
	fs.Int64Var(&o.maxReplay, "max-replay", verify.DefaultMaxReplay, "how far back (records) a replay may start behind the newest copy")
	fs.Int64Var(&o.maxSkip, "max-skip", verify.DefaultMaxSkip, "how far ahead (records) a copy is looked for")
	fs.IntVar(&o.maxDetails, "max-details", verify.DefaultMaxDetails, "entries per list (missing ranges, replays, ...) per partition")
	fs.StringVar(&ignore, "ignore-headers", verify.ProvenanceHeader, "comma-separated header `keys` left out of the comparison (empty: none)")
	fs.DurationVar(&o.timeout, "timeout", verify.DefaultAdminTimeout, "bound of each metadata request")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: kmirror verify -config FILE [-flow 'A->B'] [-topics REGEX] [-last N | -since TIME] [-json]\n\n"+
			"Compares each source topic of the flow with its remote topic on the target, partition by\n"+
			"partition, by content (key, value, headers, timestamp): the report goes to stdout, progress\n"+
			"(records read on both sides) to stderr. Exit codes: 0 every record compared is on the target,\n"+
			"1 records missing, altered, out of order or unexpected (or duplicated, with -exactly-once),\n"+
			"2 bad flags or configuration, or nothing selected, 3 a cluster unreachable, a topic or partition\n"+
			"not compared, or interrupted.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, &usageError{fmt.Errorf("unexpected argument %q (the properties file is given with -config)", fs.Arg(0))}
	}
	if o.config == "" {
		return nil, &usageError{errors.New("-config is required (the MM2 properties file the mirror runs)")}
	}
	if topics != "" {
		re, err := regexp.Compile("^(?:" + topics + ")$")
		if err != nil {
			return nil, &usageError{fmt.Errorf("-topics %q: %v", topics, err)}
		}
		o.topics, o.topicsExpr = re, topics
	}
	if o.last < 0 {
		return nil, &usageError{fmt.Errorf("-last %d: must be positive (omit it to compare whole partitions)", o.last)}
	}
	if since != "" {
		if o.last > 0 {
			return nil, &usageError{errors.New("-last and -since both set: choose one window")}
		}
		if d, err := time.ParseDuration(since); err == nil && d > 0 {
			o.since = now.Add(-d)
		} else if t, err := time.Parse(time.RFC3339, since); err == nil {
			if t.After(now) {
				// No record is that new: the run compared nothing and
				// passed (exit 0), gating a switch on a typo.
				return nil, &usageError{fmt.Errorf("-since %q is in the future (now %s): no record would be compared; give a past time or a duration back from now (2h)", since, now.UTC().Format(time.RFC3339))}
			}
			o.since = t
		} else {
			return nil, &usageError{fmt.Errorf("-since %q: want an RFC 3339 time (2024-05-01T12:00:00Z) or a positive duration (2h, 30m)", since)}
		}
	}
	if o.parallel < 1 || o.maxReplay < 1 || o.maxSkip < 1 || o.maxDetails < 1 {
		return nil, &usageError{errors.New("-parallel, -max-replay, -max-skip and -max-details must be at least 1")}
	}
	if o.catchUp < 0 || o.progress < 0 || o.timeout <= 0 {
		return nil, &usageError{errors.New("-catch-up and -progress must not be negative, -timeout must be positive")}
	}
	o.ignore = []string{}
	for _, k := range strings.Split(ignore, ",") {
		if k = strings.TrimSpace(k); k != "" {
			o.ignore = append(o.ignore, k)
		}
	}
	return o, nil
}

// verifyConfig builds the comparison of one flow of props.
func verifyConfig(props *mirror.Properties, o *verifyOptions) (verify.Config, error) {
	flow, src, dst, err := chooseFlow(props, o.flow)
	if err != nil {
		return verify.Config{}, err
	}
	include, exclude := flow.Topics, flow.TopicsExclude
	if include == nil {
		include = []string{".*"}
	}
	if exclude == nil {
		exclude = mirror.DefaultTopicsExclude
	}
	filter, err := mm2filter.New(flow.Name()+".topics", include, flow.Name()+".topics.exclude", exclude)
	if err != nil {
		return verify.Config{}, err
	}
	pol := flow.Policy
	if pol == nil {
		if pol, err = policy.NewDefault(); err != nil {
			return verify.Config{}, err
		}
	}
	target := flow.Target
	sel := func(t string) bool {
		if policy.NeverReplicated(pol, flow.Source, target, t) {
			return false
		}
		if o.topics != nil {
			// An explicit -topics may name a heartbeats topic.
			return o.topics.MatchString(t) && (filter.Match(t) || pol.IsHeartbeatsTopic(t))
		}
		return filter.Match(t) && !pol.IsHeartbeatsTopic(t)
	}
	o.flowTopics = func(t string) bool {
		return filter.Match(t) && !pol.IsHeartbeatsTopic(t) && !policy.NeverReplicated(pol, flow.Source, target, t)
	}
	o.flowName = flow.Name()
	return verify.Config{
		Source:        verify.Cluster{Alias: src.Alias, Opts: src.Client, Consumer: src.Consumer, Admin: src.Admin},
		Target:        verify.Cluster{Alias: dst.Alias, Opts: dst.Client, Consumer: dst.Consumer, Admin: dst.Admin},
		Policy:        pol,
		Select:        sel,
		Last:          o.last,
		Since:         o.since,
		ExactlyOnce:   o.exactlyOnce,
		IgnoreHeaders: o.ignore,
		MaxReplay:     o.maxReplay,
		MaxSkip:       o.maxSkip,
		Parallel:      o.parallel,
		MaxDetails:    o.maxDetails,
		CatchUp:       o.catchUp,
		AdminTimeout:  o.timeout,
	}, nil
}

// verifyMain runs `kmirror verify args...` and returns the exit code.
func verifyMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseVerifyFlags(args, stderr, time.Now())
	if errors.Is(err, flag.ErrHelp) {
		return verifyOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "kmirror verify:", strings.TrimPrefix(err.Error(), "verify: "))
		return verifyUsage
	}
	props, err := mirror.LoadProperties(o.config)
	if err != nil {
		fmt.Fprintln(stderr, "kmirror verify:", strings.TrimPrefix(err.Error(), "verify: "))
		return verifyUsage
	}
	cfg, err := verifyConfig(props, o)
	if err != nil {
		fmt.Fprintln(stderr, "kmirror verify:", strings.TrimPrefix(err.Error(), "verify: "))
		return verifyUsage
	}
	var pr *progressPrinter
	if o.progress > 0 {
		pr = &progressPrinter{w: stderr, bar: isTerminal(stderr)}
		cfg.Progress = pr.print
		cfg.ProgressInterval = o.progress
		if pr.bar {
			cfg.ProgressInterval = min(o.progress, time.Second)
		}
	}
	rep, err := verify.Run(ctx, cfg)
	if pr != nil {
		pr.finish()
	}
	var ce *verify.ConfigError
	var nt *verify.NoTopicsError
	if errors.As(err, &nt) {
		fmt.Fprintln(stderr, "kmirror verify:", noTopicsMessage(o, nt))
		return verifyUsage
	}
	if errors.As(err, &ce) {
		fmt.Fprintln(stderr, "kmirror verify:", strings.TrimPrefix(err.Error(), "verify: "))
		return verifyUsage
	}
	if rep == nil && ctx.Err() != nil {
		// Ctrl-C (or SIGTERM) while listing: said only "context canceled".
		fmt.Fprintf(stderr, "kmirror verify: interrupted (%v) before the comparison started: nothing was compared; run kmirror verify again\n", ctx.Err())
		return verifyIncomplete
	}
	if rep == nil {
		fmt.Fprintln(stderr, "kmirror verify:", strings.TrimPrefix(err.Error(), "verify: "))
		return verifyIncomplete
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(rep); werr != nil {
			fmt.Fprintln(stderr, "kmirror verify:", werr)
		}
	} else if werr := rep.WriteText(stdout); werr != nil {
		fmt.Fprintln(stderr, "kmirror verify:", werr)
	}
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "kmirror verify: interrupted (%v): the report covers what was read before; partitions not compared to the end say so; run kmirror verify again for a complete result\n", err)
		return verifyIncomplete
	case rep.Mismatch():
		return verifyMismatch
	case rep.Incomplete():
		return verifyIncomplete
	}
	return verifyOK
}

// noTopicsMessage says that nothing was selected, by what, and which
// topics the flow replicates (at most 20 named).
func noTopicsMessage(o *verifyOptions, e *verify.NoTopicsError) string {
	var flowTopics []string
	for _, t := range e.Topics {
		if o.flowTopics == nil || o.flowTopics(t) {
			flowTopics = append(flowTopics, t)
		}
	}
	have := "it replicates none of the source's " + strconv.Itoa(len(e.Topics)) + " topics (check its topics and topics.exclude)"
	if len(flowTopics) > 0 {
		shown := flowTopics[:min(len(flowTopics), 20)]
		have = "its source topics are " + strings.Join(shown, ", ")
		if len(flowTopics) > len(shown) {
			have += fmt.Sprintf(" and %d more", len(flowTopics)-len(shown))
		}
	}
	if o.topics != nil {
		return fmt.Sprintf("-topics %q matches no source topic of flow %s (a full match of the regex): %s", o.topicsExpr, o.flowName, have)
	}
	return fmt.Sprintf("flow %s selects no source topic: %s", o.flowName, have)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressPrinter writes verify.Progress snapshots: a redrawn bar on a
// terminal, else one line per snapshot. It counts the records read on
// both sides (the source's and the target's, those read before a window
// to recognize replays included), so about twice the source records the
// report compares.
type progressPrinter struct {
	mu    sync.Mutex
	w     io.Writer
	bar   bool
	drawn bool
}

func (p *progressPrinter) print(s verify.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	done := s.SourceRecords + s.TargetRecords
	pct := 100.0
	if s.Estimate > 0 {
		pct = min(100, 100*float64(done)/float64(s.Estimate))
	}
	eta := "ETA -"
	if e := s.ETA(); e > 0 {
		eta = "ETA " + e.Round(time.Second).String()
	}
	// The records read on both sides, not the source records compared
	// that the report counts: a new user took "5.8k/5.8k records" for a
	// count of 2900 compared.
	stats := fmt.Sprintf("%3.0f%% read %s/%s records of both sides (source %s + target %s), %s records/s, %s, partitions %d/%d",
		pct, count(done), count(s.Estimate), count(s.SourceRecords), count(s.TargetRecords), count(int64(s.Rate())), eta, s.PartitionsDone, s.Partitions)
	if !p.bar {
		fmt.Fprintf(p.w, "verify: %s\n", stats)
		return
	}
	const width = 30
	n := int(pct / 100 * width)
	fmt.Fprintf(p.w, "\r[%s%s] %s ", strings.Repeat("=", n), strings.Repeat(" ", width-n), stats)
	p.drawn = true
}

func (p *progressPrinter) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// count formats n with a k/M/G suffix.
func count(n int64) string {
	f := float64(n)
	for _, u := range []string{"", "k", "M", "G"} {
		if f < 1000 || u == "G" {
			if u == "" {
				return fmt.Sprint(n)
			}
			return fmt.Sprintf("%.1f%s", f, u)
		}
		f /= 1000
	}
	return fmt.Sprint(n)
}

// chooseFlow returns the enabled flow of props named name (the only one
// when name is ""), with its source and target clusters' settings; a
// usageError names what to write instead.
func chooseFlow(props *mirror.Properties, name string) (flow *mirror.FlowConfig, src, dst *mirror.ClusterConfig, err error) {
	var names []string
	disabled := false
	for _, f := range props.Flows() {
		if f.Disabled {
			disabled = disabled || f.Name() == name
			continue
		}
		names = append(names, f.Name())
		if name == f.Name() || (name == "" && flow == nil) {
			f := f
			flow = &f
		}
	}
	// A pair whose alias clusters does not list is ignored (as by MM2):
	// its enabled line is in the file already, so say what is missing.
	if unlisted := unlistedPairs(props); flow == nil && len(unlisted) > 0 {
		if len(names) == 0 {
			var all []string
			for _, u := range unlisted {
				all = append(all, u.msg)
			}
			return nil, nil, nil, &usageError{errors.New(strings.Join(all, "; "))}
		}
		if i := slices.IndexFunc(unlisted, func(u unlistedPair) bool { return u.pair == name }); i >= 0 {
			return nil, nil, nil, &usageError{fmt.Errorf("-flow %q: %s", name, unlisted[i].msg)}
		}
	}
	switch {
	case len(names) == 0:
		return nil, nil, nil, &usageError{errors.New("the configuration has no enabled flow (<source>-><target>.enabled = true)")}
	case name == "" && len(names) > 1:
		return nil, nil, nil, &usageError{fmt.Errorf("the configuration has %d flows: choose one with -flow (%s)", len(names), strings.Join(names, ", "))}
	case flow == nil && disabled:
		return nil, nil, nil, &usageError{fmt.Errorf("-flow %q: the flow is disabled (%s.enabled is not true), so nothing replicates it; the configuration's enabled flows: %s", name, name, strings.Join(names, ", "))}
	case flow == nil && strings.HasSuffix(name, "-"):
		// -flow A->B unquoted: the shell took >B for a redirection.
		return nil, nil, nil, &usageError{fmt.Errorf("-flow %q: no enabled flow of that name; quote the arrow (-flow '%s<target>'): unquoted, the shell reads >B as a redirection to a file B; the configuration has %s", name, name+">", strings.Join(names, ", "))}
	case flow == nil:
		return nil, nil, nil, &usageError{fmt.Errorf("-flow %q: no enabled flow of that name; the configuration has %s", name, strings.Join(names, ", "))}
	}
	for _, c := range props.Clusters() {
		c := c
		switch c.Alias {
		case flow.Source:
			src = &c
		case flow.Target:
			dst = &c
		}
	}
	if src == nil || dst == nil {
		return nil, nil, nil, &usageError{fmt.Errorf("flow %s: cluster settings not found", flow.Name())}
	}
	return flow, src, dst, nil
}

// unlistedPair is a <source>-><target>.enabled line without effect
// (unlistedPairs).
type unlistedPair struct{ pair, msg string }

// unlistedPairs words the <source>-><target>.enabled lines of props that
// have no effect because an alias of the pair is not in clusters, in the
// order of props' warnings (the file's).
func unlistedPairs(props *mirror.Properties) []unlistedPair {
	// The aliases of clusters, from the effective configuration (Clusters
	// holds those taking part in a flow only).
	listed := map[string]bool{}
	var aliases []string
	for _, l := range strings.Split(props.Effective(), "\n") {
		if v, ok := strings.CutPrefix(l, "clusters = "); ok {
			for _, a := range strings.Split(v, ",") {
				if a = strings.TrimSpace(a); a != "" {
					listed[a] = true
					aliases = append(aliases, a)
				}
			}
			break
		}
	}
	var out []unlistedPair
	for _, w := range props.Warnings() {
		pair, ok := strings.CutSuffix(w.Key, ".enabled")
		src, dst, arrow := strings.Cut(pair, "->")
		if !ok || !arrow {
			continue
		}
		var missing []string
		for _, a := range []string{src, dst} {
			if !listed[a] && !slices.Contains(missing, a) {
				missing = append(missing, a)
			}
		}
		if len(missing) == 0 {
			continue
		}
		at := ""
		if w.Line > 0 {
			at = fmt.Sprintf("line %d: ", w.Line)
		}
		out = append(out, unlistedPair{pair, fmt.Sprintf("%s%s has no effect: %s is not in clusters (%s): add it there (with its %s.bootstrap.servers), or correct the alias",
			at, w.Key, strings.Join(missing, " and "), strings.Join(aliases, ", "), missing[0])})
	}
	return out
}
