package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// mode is how the mirror runs during one scenario: how many runner
// processes share the flow, whether it replicates exactly once, and
// whether it copies record batches as they are (shallow copy).
type mode struct {
	name    string // -modes value
	title   string // table heading
	members int
	eos     bool
	shallow bool // shallow.copy.enabled, provenance header off
}

var allModes = []mode{
	{name: "alo1", title: "1 member, at least once", members: 1},
	{name: "alo3", title: "3 members, at least once", members: 3},
	{name: "eos3", title: "3 members, exactly once", members: 3, eos: true},
	{name: "shallow1", title: "1 member, at least once, shallow copy", members: 1, shallow: true},
}

func modeNames() []string {
	out := make([]string, len(allModes))
	for i, m := range allModes {
		out[i] = m.name
	}
	return out
}

func modeByName(name string) (mode, bool) {
	for _, m := range allModes {
		if m.name == name {
			return m, true
		}
	}
	return mode{}, false
}

// side is one of the two clusters.
type side string

const (
	source side = "source"
	target side = "target"
)

// faultKind is what a fault does; see TESTING.md for each.
type faultKind int

const (
	// mirrorKill: SIGKILL of one runner process at a random instant, started
	// again after a random pause (0-2 s), as an orchestrator would.
	mirrorKill faultKind = iota
	// brokerRestart: kafka.sh restart of one cluster's broker with SIGTERM
	// (clean shutdown) or SIGKILL (crash), data kept.
	brokerRestart
	// linkCut: the proxy between the runner and one cluster cuts (resets
	// every connection) or blackholes (stalls every byte) the link for d.
	linkCut
	// retentionRace: the source link is cut, the mirror's position is
	// read from /status, the source keeps producing, DeleteRecords removes
	// records the mirror did not replicate on some partitions, the link
	// comes back: the runner must report exactly those records as a gap.
	retentionRace
	// retentionWhileDown: every runner is SIGKILLed, DeleteRecords removes
	// records past any replicated position, the runners start again: a gap
	// ending exactly at the deleted offset; nothing missing outside it.
	retentionWhileDown
	// slowTarget: the target link is throttled while a burst larger than
	// the producer buffer is written to the source: the buffer fills and
	// the runner must hold back its fetches.
	slowTarget
	// targetOutage: the target link is cut for d while the source keeps
	// producing, with a burst larger than the runner's fetch and produce
	// buffers: its RSS must stay under the documented bound and it must
	// catch up afterwards.
	targetOutage
	// overlap: several of the above at once, on a timeline.
	overlap
)

// fault is one row of a scenario: what to inject.
type fault struct {
	kind      faultKind
	name      string        // table label
	side      side          // brokerRestart, linkCut
	signal    string        // brokerRestart: TERM or KILL
	blackhole bool          // linkCut: Blackhole instead of Cut
	d         time.Duration // linkCut, slowTarget, targetOutage, overlap
	parts     []overlapPart // overlap
}

// crashesSource reports whether the fault SIGKILLs the source broker.
func (f fault) crashesSource() bool {
	if f.kind == brokerRestart && f.side == source && f.signal == "KILL" {
		return true
	}
	for _, p := range f.parts {
		if p.kind == brokerRestart && p.side == source && p.signal == "KILL" {
			return true
		}
	}
	return false
}

// overlapPart is one action of an overlapping fault, at an offset from its
// start.
type overlapPart struct {
	at     time.Duration
	kind   faultKind // mirrorKill, brokerRestart, linkCut, slowTarget
	side   side
	signal string
	d      time.Duration
	black  bool
}

func kill() fault { return fault{kind: mirrorKill, name: "mirror SIGKILL"} }

func restart(s side, sig string) fault {
	return fault{kind: brokerRestart, name: fmt.Sprintf("%s broker restart (SIG%s)", s, sig), side: s, signal: sig}
}

func cut(s side, d time.Duration, blackhole bool) fault {
	how := "cut"
	if blackhole {
		how = "blackholed"
	}
	return fault{kind: linkCut, name: fmt.Sprintf("%s link %s %s", s, how, secs(d)), side: s, d: d, blackhole: blackhole}
}

func race() fault {
	return fault{kind: retentionRace, name: "retention race (DeleteRecords during a source cut)"}
}

func raceWhileDown() fault {
	return fault{kind: retentionWhileDown, name: "overlap: retention race while the mirror is down"}
}

func slow(d time.Duration) fault {
	return fault{kind: slowTarget, name: fmt.Sprintf("slow target %s (producer buffer full)", secs(d)), d: d}
}

func outage(d time.Duration) fault {
	return fault{kind: targetOutage, name: fmt.Sprintf("target outage %s, source producing (memory)", secs(d)), d: d}
}

// cutAndKill: a link cut with a runner SIGKILLed (and restarted) in the
// middle of it.
func cutAndKill(s side, d time.Duration) fault {
	return fault{kind: overlap, name: fmt.Sprintf("overlap: %s link cut %s + mirror SIGKILL", s, secs(d)), d: d, parts: []overlapPart{
		{at: 0, kind: linkCut, side: s, d: d},
		{at: d / 3, kind: mirrorKill},
	}}
}

// restartSlowKill: a source broker crash while the target is slow, and a
// runner SIGKILL.
func restartSlowKill(d time.Duration) fault {
	return fault{kind: overlap, name: "overlap: source broker SIGKILL + slow target + mirror SIGKILL", d: d, parts: []overlapPart{
		{at: 0, kind: slowTarget, d: d},
		{at: time.Second, kind: brokerRestart, side: source, signal: "KILL"},
		{at: d / 2, kind: mirrorKill},
	}}
}

// blackholeRestartKill: the source link blackholed while the target broker
// restarts cleanly and a runner is SIGKILLed.
func blackholeRestartKill(d time.Duration) fault {
	return fault{kind: overlap, name: fmt.Sprintf("overlap: source link blackholed %s + target broker SIGTERM + mirror SIGKILL", secs(d)), d: d, parts: []overlapPart{
		{at: 0, kind: linkCut, side: source, d: d, black: true},
		{at: 2 * time.Second, kind: brokerRestart, side: target, signal: "TERM"},
		{at: d / 2, kind: mirrorKill},
	}}
}

// bothCrash: both brokers crash at once and a runner is SIGKILLed.
func bothCrash() fault {
	return fault{kind: overlap, name: "overlap: both brokers SIGKILL + mirror SIGKILL", parts: []overlapPart{
		{at: 0, kind: brokerRestart, side: source, signal: "KILL"},
		{at: 0, kind: brokerRestart, side: target, signal: "KILL"},
		{at: 3 * time.Second, kind: mirrorKill},
	}}
}

// profile is a named plan: the modes it runs and each mode's faults.
type profile struct {
	modes []string
	plan  func(m mode) []fault
}

var profiles = map[string]profile{
	// short: CI, under 8 minutes on 2 cores with the broker restarts.
	"short": {modes: []string{"alo1", "eos3", "shallow1"}, plan: func(m mode) []fault {
		if m.members == 1 {
			return []fault{
				kill(), kill(), kill(),
				restart(source, "TERM"),
				restart(target, "KILL"),
				race(),
				slow(8 * time.Second),
				outage(12 * time.Second),
				cutAndKill(target, 9*time.Second),
			}
		}
		return []fault{
			kill(), kill(),
			raceWhileDown(),
			cutAndKill(source, 8*time.Second),
		}
	}},
	// long: a release, about 25 minutes: every fault of the issue, 20
	// SIGKILLs of the single runner, then 3 members at least once and
	// exactly once.
	"long": {modes: []string{"alo1", "alo3", "eos3"}, plan: func(m mode) []fault {
		var fs []fault
		kills := 6
		if m.members == 1 {
			kills = 20
		}
		for range kills {
			fs = append(fs, kill())
		}
		fs = append(fs,
			restart(source, "TERM"), restart(source, "KILL"),
			restart(target, "TERM"), restart(target, "KILL"),
			cut(target, 30*time.Second, false),
			race(),
			slow(20*time.Second),
			outage(30*time.Second),
		)
		if m.members == 1 {
			fs = append(fs, cut(source, 30*time.Second, true))
		}
		fs = append(fs,
			cutAndKill(target, 30*time.Second),
			restartSlowKill(20*time.Second),
		)
		if m.members == 1 {
			fs = append(fs, blackholeRestartKill(30*time.Second), bothCrash())
		}
		// Last: a source broker SIGKILLed within a minute of DeleteRecords
		// would bring the deleted records back (see startCheckpoint).
		return append(fs, raceWhileDown())
	}},
}

func secs(d time.Duration) string { return fmt.Sprintf("%gs", d.Seconds()) }

// faultNames are the -faults keywords; those with ":D" take a duration.
var faultNames = []string{"kill", "restart-source-term", "restart-source-kill", "restart-target-term", "restart-target-kill",
	"cut-source:D", "cut-target:D", "blackhole-source:D", "blackhole-target:D", "race", "race-down", "slow:D", "outage:D",
	"cut-kill-source:D", "cut-kill-target:D", "restart-slow-kill:D", "blackhole-restart-kill:D", "both-crash"}

// parseFaults reads a -faults list, e.g. "kill,outage:30s,race".
func parseFaults(s string) ([]fault, error) {
	var out []fault
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, arg, hasArg := strings.Cut(item, ":")
		var d time.Duration
		if hasArg {
			var err error
			if d, err = time.ParseDuration(arg); err != nil || d <= 0 {
				return nil, fmt.Errorf("-faults %q: want a positive duration after the colon, e.g. %s:30s", item, name)
			}
		}
		needs := slices.Contains(faultNames, name+":D")
		if !needs && !slices.Contains(faultNames, name) {
			return nil, fmt.Errorf("-faults %q: unknown fault; want one of %s", item, strings.Join(faultNames, ", "))
		}
		if needs != hasArg {
			if needs {
				return nil, fmt.Errorf("-faults %q: needs a duration, e.g. %s:30s", item, name)
			}
			return nil, fmt.Errorf("-faults %q: takes no duration", item)
		}
		var f fault
		switch name {
		case "kill":
			f = kill()
		case "restart-source-term":
			f = restart(source, "TERM")
		case "restart-source-kill":
			f = restart(source, "KILL")
		case "restart-target-term":
			f = restart(target, "TERM")
		case "restart-target-kill":
			f = restart(target, "KILL")
		case "cut-source":
			f = cut(source, d, false)
		case "cut-target":
			f = cut(target, d, false)
		case "blackhole-source":
			f = cut(source, d, true)
		case "blackhole-target":
			f = cut(target, d, true)
		case "race":
			f = race()
		case "race-down":
			f = raceWhileDown()
		case "slow":
			f = slow(d)
		case "outage":
			f = outage(d)
		case "cut-kill-source":
			f = cutAndKill(source, d)
		case "cut-kill-target":
			f = cutAndKill(target, d)
		case "restart-slow-kill":
			f = restartSlowKill(d)
		case "blackhole-restart-kill":
			f = blackholeRestartKill(d)
		case "both-crash":
			f = bothCrash()
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-faults %q: no fault", s)
	}
	return out, nil
}
