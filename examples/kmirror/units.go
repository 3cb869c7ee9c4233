package main

// The units subcommand changes the number of slots (tasks.max) of the
// flows of an MM2 properties file, offline:
//
//	kmirror units -config mm2.properties [-clusters B] -resize
//
// The processes running a flow share its slots through the target
// cluster's group protocol. tasks.max changes online by a rolling restart
// (the member started last sets it; README, "Run several members"); this
// is the offline way, which a change needs while members of an older
// kmirror release share the flow: stop every member, set tasks.max in the
// file, run this command, then start the members again. For each flow it fences the old slots'
// exactly-once producers (transactional ids "kmirror.<source>-><target>-<slot>")
// and re-creates the coordination topic mm2-kmirror-units.<source>.internal
// with tasks.max partitions; resume points, offset syncs and checkpoints
// are kept. It refuses while a flow still has members.
//
// Exit codes: 0 done (or nothing to change), 1 refused or failed, 2 bad
// flags or configuration.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/kmirror/kmirror/mirror"
)

func unitsMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kmirror units", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "MM2 properties `file` (required)")
	clusters := fs.String("clusters", "", "only the flows whose target is one of these comma-separated `aliases` (MM2's --clusters)")
	resize := fs.Bool("resize", false, "change every flow's number of slots to its tasks.max (all members stopped)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kmirror units -config FILE [-clusters A,B] -resize")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *config == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	if !*resize {
		fmt.Fprintln(stderr, "kmirror units: nothing to do without -resize, the only action: stop every member of the flows, set tasks.max in the file, then run `kmirror units -config FILE -resize`")
		return 2
	}
	var opts []mirror.LoadOpt
	targets, err := clusterList(fs, *clusters)
	if err != nil {
		fmt.Fprintln(stderr, "kmirror units:", err)
		return 2
	}
	if len(targets) > 0 {
		opts = append(opts, mirror.OnlyTargets(targets...))
	}
	props, err := mirror.LoadProperties(*config, opts...)
	if err != nil {
		fmt.Fprintln(stderr, "kmirror units:", err)
		return 2
	}
	m, err := mirror.New(props.Opts()...)
	if err != nil {
		fmt.Fprintln(stderr, "kmirror units:", err)
		return 2
	}
	done, err := m.ResizeSlots(ctx)
	for _, r := range done {
		switch {
		case r.From == r.To:
			fmt.Fprintf(stdout, "%s: %d slots, nothing to change\n", r.Flow, r.To)
		case r.From == 0:
			fmt.Fprintf(stdout, "%s: %d slots (coordination topic created)\n", r.Flow, r.To)
		case len(r.Fenced) == 0:
			fmt.Fprintf(stdout, "%s: %d -> %d slots (heartbeats only: no producer to fence)\n", r.Flow, r.From, r.To)
		default:
			fmt.Fprintf(stdout, "%s: %d -> %d slots; fenced %s\n", r.Flow, r.From, r.To, strings.Join(r.Fenced, ", "))
		}
		if line := targetStateLine(r); line != "" {
			fmt.Fprintln(stdout, line)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "kmirror units:", err)
		return 1
	}
	return 0
}

// targetStateLine is what `kmirror units` says of a flow's persisted target
// state: nothing while it is RUNNING, a reminder when members started now
// would stay PAUSED or STOPPED, and the error when it could not be read.
func targetStateLine(r mirror.SlotsResize) string {
	switch {
	case r.TargetStateErr != "":
		return fmt.Sprintf("%s: target state unknown (%s): members apply it when they start", r.Flow, r.TargetStateErr)
	case r.TargetState == "" || r.TargetState == mirror.TargetRunning:
		return ""
	}
	return fmt.Sprintf("%s: target state %s (written by %s at %s): members started now stay %s until resumed (PUT /connectors/%s/resume)",
		r.Flow, r.TargetState, r.TargetStateBy, r.TargetStateAt.UTC().Format(time.RFC3339), strings.ToLower(string(r.TargetState)), url.PathEscape(r.Flow))
}
