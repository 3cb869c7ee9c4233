package mirror

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/kmirror/kmirror/internal/clientconf"
	"github.com/kmirror/kmirror/internal/mm2keys"
	"github.com/kmirror/kmirror/internal/mm2props"
	"github.com/kmirror/kmirror/internal/topicname"
	"github.com/kmirror/kmirror/policy"
)

// flowBuild is the mapping of one herder pair: the FlowConfig being filled
// and what the rows' handlers share.
type flowBuild struct {
	b  *propsBuilder
	r  flowReader
	f  *mm2props.Flow
	tc *mm2props.Cluster // the target cluster (worker settings)
	fc FlowConfig
	// lists are the settings of the List rows (Key "" when unset), for
	// the filter checks.
	lists map[string]mm2props.Setting
	// The replication policy's settings, built into fc.Policy by finish.
	class, sep string
	isep       bool
	eos        string // exactly.once.support
}

// flow maps one herder pair to a FlowConfig (flow key > top level >
// default): one step per mapped row of the key registry (internal/mm2keys),
// in registry order, then the checks that involve several keys. A row with
// a Field is read by its type (readRow); the others by their handler in
// flowHandlers. Errors are recorded with fail, and the mapping goes on with
// the default of the bad setting, so that every error of the file is found.
func (b *propsBuilder) flow(f *mm2props.Flow) FlowConfig {
	fb := &flowBuild{b: b, f: f, r: flowReader{b: b, f: f, name: f.Name()}, tc: b.rc.Clusters[f.Target],
		fc:    FlowConfig{Source: f.Source, Target: f.Target, Disabled: !f.Enabled, DisableHeartbeats: !f.Heartbeats},
		lists: map[string]mm2props.Setting{}}
	for _, row := range mm2keys.Rows {
		if row.Effect != mm2keys.Mapped || row.Scope == mm2keys.Top {
			continue
		}
		if h, ok := flowHandlers[row.Key]; ok {
			h(fb, row)
		} else {
			fb.readRow(row)
		}
	}
	fb.finish()
	return fb.fc
}

// field returns the FlowConfig field a row fills.
func (fb *flowBuild) field(name string) reflect.Value {
	return reflect.ValueOf(&fb.fc).Elem().FieldByName(name)
}

// setSwitch sets the field of the Bool row key to on.
func (fb *flowBuild) setSwitch(key string, on bool) {
	row, _ := mm2keys.Lookup(mm2keys.Flow, key)
	fb.field(row.Field).SetBool(on != row.Invert)
}

// readRow reads a row with a Field by its type.
func (fb *flowBuild) readRow(row mm2keys.Row) {
	b, r := fb.b, fb.r
	fv := fb.field(row.Field)
	switch {
	case row.Scope == mm2keys.Client && row.Type == mm2keys.Bytes:
		m := fb.f.SourceConsumer
		if row.Prefix == "target.producer." {
			m = fb.f.TargetProducer
		}
		name := r.name + "." + row.Prefix + row.Key
		if s, ok := m[row.Key]; ok {
			n, err := strconv.ParseInt(strings.TrimSpace(s.Value), 10, 32)
			if err != nil || n <= 0 {
				b.fail(propsErr(s, "must be a positive number of bytes up to %d", math.MaxInt32))
				n = 0 // the default
			}
			fv.SetInt(n)
			b.line(name, strings.TrimSpace(s.Value), s.Key)
		} else if row.Prefix == "target.producer." {
			// A->B.target.producer.* configures MM2's offset-syncs
			// producer (the loader ignores it): name the keys that set
			// the replication producer's.
			b.line(name, row.Default, derived+defaultOrigin(row.Default, row.MM2Default)+fmt.Sprintf("; set %s.producer.%s or %s.producer.override.%s", fb.f.Target, row.Key, r.name, row.Key))
		} else {
			b.line(name, row.Default, defaultOrigin(row.Default, row.MM2Default))
		}
	case row.Type == mm2keys.Bool:
		def := row.Default == "true"
		on, err := r.boolean(row.Key, def)
		if err != nil {
			b.fail(err)
			on = def
		}
		fv.SetBool(on != row.Invert)
	case row.Type == mm2keys.Seconds:
		def, _ := strconv.ParseInt(row.Default, 10, 64)
		var negative bool
		b.fail(r.seconds(row.Key, fv.Addr().Interface().(*time.Duration), &negative, time.Duration(def)*time.Second))
		if negative {
			fb.setSwitch(row.Switch, false)
			// The dump and the Connect REST config show the task off,
			// not the switch's default (a new user read "enabled = true"
			// for checkpoints a -1 interval had turned off).
			b.line(r.name+"."+row.Switch, "false", r.name+"."+row.Key+" is negative: the task is off, as in MM2")
		}
	case row.Type == mm2keys.RF:
		b.fail(r.rf(row.Key, fv.Addr().Interface().(*int16), row.MM2Default))
	case row.Type == mm2keys.List:
		l, s := r.list(row.Key, row.Default)
		fv.Set(reflect.ValueOf(l))
		fb.lists[row.Key] = s
	case row.Type == mm2keys.Enum:
		v, err := r.enum(row.Key, row.Default, row.Values...)
		b.fail(err)
		if s, ok := r.f.Get(row.Key); ok && err == nil && row.CaseSensitive && strings.TrimSpace(s.Value) != v {
			v = caseSensitiveEnum(b, row, s, v)
		}
		fv.SetBool(v == row.True)
	case row.Type == mm2keys.Millis:
		if s, ok := r.get(row.Key); ok {
			d, err := propsMillis(s)
			b.fail(err)
			fv.SetInt(int64(d))
		} else if row.Default != "" {
			r.def(row.Key, row.Default)
		}
	default:
		panic("mirror: registry row " + row.Key + " has a Field but no reader for " + row.Type.String())
	}
}

// flowHandlers read the mapped rows that readRow cannot: keys whose value
// is not a field of its own (the policy, exactly once), that are read from
// the flow's herder (enabled), or that show more in the effective dump.
var flowHandlers = map[string]func(*flowBuild, mm2keys.Row){
	"enabled": func(fb *flowBuild, _ mm2keys.Row) {
		fb.b.line(fb.r.name+".enabled", strconv.FormatBool(fb.f.Enabled), propsOrigin(fb.f, "enabled", "default (heartbeats-only herder)"))
	},
	"emit.heartbeats.enabled": func(fb *flowBuild, _ mm2keys.Row) {
		fb.b.line(fb.r.name+".emit.heartbeats.enabled", strconv.FormatBool(fb.f.Heartbeats), propsOrigin(fb.f, "emit.heartbeats.enabled", "default"))
	},
	"replication.policy.class": func(fb *flowBuild, row mm2keys.Row) {
		if s, ok := fb.r.get(row.Key); ok {
			fb.class = strings.TrimSpace(s.Value)
			if full := "org.apache.kafka.connect.mirror." + fb.class; full == policy.DefaultPolicyClass || full == policy.IdentityPolicyClass {
				fb.b.warn(Warning{Key: s.Key, Line: s.Line, Message: fmt.Sprintf("kmirror accepts the short class name, MM2 does not (\"Class %s cannot be found\": its connectors fail): write %s", fb.class, full)})
			}
		} else {
			fb.r.def(row.Key, policy.DefaultPolicyClass)
		}
	},
	"replication.policy.separator": func(fb *flowBuild, row mm2keys.Row) {
		if s, ok := fb.r.get(row.Key); ok {
			fb.sep = strings.TrimSpace(s.Value)
			if fb.sep != "" && fb.sep != s.Value {
				fb.b.warn(Warning{Key: s.Key, Line: s.Line, Message: fmt.Sprintf("surrounding whitespace in the separator: kmirror reads %q; MM2's replication policy reads it untrimmed (%q), "+
					"so its remote topic names hold the whitespace (%q), which Kafka refuses: remove the whitespace", fb.sep, s.Value, "A"+s.Value+"orders")})
			}
			if fb.sep == "" {
				fb.b.fail(propsErr(s, "must not be empty: with an empty separator the sources of remote topics cannot be read back from their names (cycle detection, heartbeats, translation); %s",
					identityAdvice(strings.TrimSuffix(s.Key, row.Key))))
				fb.sep = policy.DefaultSeparator // goes on checking the other settings
			}
		} else {
			fb.r.def(row.Key, policy.DefaultSeparator)
		}
	},
	"replication.policy.internal.topic.separator.enabled": func(fb *flowBuild, row mm2keys.Row) {
		isep, err := fb.r.boolean(row.Key, true)
		if err != nil {
			fb.b.fail(err)
			isep = true
		}
		fb.isep = isep
	},
	"offset.lag.max": func(fb *flowBuild, row mm2keys.Row) {
		s, ok := fb.r.get(row.Key)
		if !ok {
			fb.r.def(row.Key, row.Default)
			return
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s.Value), 10, 64)
		switch {
		case err != nil:
			fb.b.fail(propsErr(s, "not a whole number of records"))
		case n <= 0:
			if n < 0 {
				fb.b.warn(Warning{Key: s.Key, Line: s.Line, Message: fmt.Sprintf("negative (%d): an offset sync for every record, as MM2 reads it too; write 0 for that, or a count of records (default %s)", n, row.Default)})
			}
			fb.fc.OffsetLagMax = OffsetLagMaxEveryRecord
		default:
			fb.fc.OffsetLagMax = n
		}
	},
	// Members: tasks.max slots shared through the target's group protocol.
	"tasks.max": func(fb *flowBuild, row mm2keys.Row) {
		if s, ok := fb.r.get(row.Key); ok {
			n, err := strconv.Atoi(strings.TrimSpace(s.Value))
			if err != nil || n < 1 || n > maxTasks {
				fb.b.fail(propsErr(s, "must be a whole number of slots between 1 and %d", maxTasks))
			} else {
				fb.fc.Tasks = n
			}
		} else {
			fb.b.line(fb.r.name+".tasks.max", row.Default, "kmirror default (MM2: "+row.MM2Default+"): slots the flow's members share, the most processes that can replicate it at once")
		}
	},
	"exactly.once.support": func(fb *flowBuild, row mm2keys.Row) {
		eos, err := fb.r.enum(row.Key, row.Default, row.Values...)
		fb.b.fail(err)
		fb.eos = eos
	},
	"transaction.boundary": func(fb *flowBuild, row mm2keys.Row) {
		tb, err := fb.r.enum(row.Key, row.Default, row.Values...)
		fb.b.fail(err)
		switch tb {
		case "interval":
			fb.fc.TransactionBoundary = TransactionBoundaryInterval
		case "connector":
			s, _ := fb.f.Get(row.Key)
			fb.b.fail(propsErr(s, "MirrorSourceConnector does not define transaction boundaries (Connect refuses connector for it): write poll (a transaction per poll, the default) or interval with transaction.boundary.interval.ms"))
		}
	},

	// Worker settings of the herders targeting the flow's target.
	"offset.storage.replication.factor": func(fb *flowBuild, row mm2keys.Row) {
		name := fb.r.name + "." + row.Key
		if s, ok := fb.tc.Worker[row.Key]; ok {
			fb.b.fail(propsRF(s, &fb.fc.OffsetStorageReplicationFactor))
			fb.b.line(name, strings.TrimSpace(s.Value), derived+s.Key+" (worker setting of herders targeting "+fb.f.Target+")")
			fb.b.line(fb.f.Target+"."+row.Key, strings.TrimSpace(s.Value), s.Key)
		} else {
			fb.b.line(name, row.Default, derived+"kmirror default: the target's default.replication.factor (MM2: "+row.MM2Default+"); set "+fb.f.Target+"."+row.Key)
		}
	},
	"session.timeout.ms":    groupTimeout,
	"heartbeat.interval.ms": groupTimeout,
	"rebalance.timeout.ms":  groupTimeout,
	// Exactly once (KIP-618): the target's worker support and the
	// connector's exactly.once.support.
	"exactly.once.source.support": func(fb *flowBuild, row mm2keys.Row) {
		b, r, f := fb.b, fb.r, fb.f
		support := row.Default
		if s, ok := fb.tc.Worker[row.Key]; ok {
			support = strings.ToLower(strings.TrimSpace(s.Value))
			if !slices.Contains(row.Values, support) {
				b.fail(propsErr(s, "must be disabled, preparing or enabled"))
				support = row.Default
			}
		}
		switch {
		case fb.fc.Disabled:
			// No MirrorSourceConnector runs for a disabled pair: nothing to
			// validate (MM2 starts only its heartbeats connector).
		case support == "enabled":
			fb.fc.ExactlyOnce = true
			b.line(r.name+".exactly.once", "true", derived+f.Target+".exactly.once.source.support=enabled: records and resume points in one transaction per unit of work")
		case fb.eos == "required":
			s, _ := f.Get("exactly.once.support")
			b.fail(propsErr(s, "required, but the target %s's workers do not support exactly-once source replication: add %s.exactly.once.source.support=enabled (MM2 refuses this connector the same way)", f.Target, f.Target))
		default:
			line := "at least once (exactly once needs " + f.Target + ".exactly.once.source.support=enabled)"
			if support == "preparing" {
				line = "at least once (" + f.Target + ".exactly.once.source.support=preparing: the step before enabled; kmirror needs no preparing step)"
			}
			b.line(r.name+".exactly.once", "false", derived+line)
		}
	},
	"offset.flush.interval.ms": func(fb *flowBuild, row mm2keys.Row) {
		name := fb.r.name + "." + row.Key
		if s, ok := fb.tc.Worker[row.Key]; ok {
			d, err := propsMillis(s)
			fb.b.fail(err)
			fb.fc.OffsetFlushInterval = d
			fb.b.line(name, strings.TrimSpace(s.Value), derived+s.Key)
			fb.b.line(fb.f.Target+"."+row.Key, strings.TrimSpace(s.Value), s.Key)
		} else {
			fb.b.line(name, row.Default, derived+"kmirror default (MM2: "+row.MM2Default+"); set "+fb.f.Target+"."+row.Key)
		}
	},

	// Replication consumer settings kept per flow.
	"auto.offset.reset": func(fb *flowBuild, row mm2keys.Row) {
		name := fb.r.name + "." + row.Prefix + row.Key
		if s, ok := fb.f.SourceConsumer[row.Key]; ok {
			latest, err := clientconf.ParseAutoOffsetReset(s.Value)
			if err != nil {
				fb.b.fail(propsErr(s, "%v", err))
			}
			if latest {
				fb.fc.StartOffset = StartLatest
			}
			fb.b.line(name, strings.TrimSpace(s.Value), s.Key)
		} else {
			fb.b.line(name, row.Default, "default (MM2 forces earliest unless set)")
		}
	},
	"isolation.level": func(fb *flowBuild, row mm2keys.Row) {
		name := fb.r.name + "." + row.Prefix + row.Key
		s, ok := fb.f.SourceConsumer[row.Key]
		if !ok {
			fb.b.line(name, row.Default, "kmirror default (MM2: "+row.MM2Default+", which copies records of aborted source transactions to the target, KAFKA-14021)")
			return
		}
		rc, err := clientconf.ParseIsolationLevel(s.Value)
		if err != nil {
			fb.b.fail(propsErr(s, "%v", err))
		}
		if !rc {
			fb.fc.Isolation = ReadUncommitted
			if es, ok := fb.f.Get("exactly.once.support"); ok && fb.fc.ExactlyOnce && strings.EqualFold(strings.TrimSpace(es.Value), "required") {
				// MirrorSourceConnector reports exactly-once support only
				// when it reads read_committed; required fails validation.
				fb.b.fail(propsErr(es, "required, but the source consumer reads read_uncommitted (%s), so aborted source records would be copied: remove it (kmirror reads read_committed by default)", s.Key))
			} else if fb.fc.ExactlyOnce {
				// exactly.once.support=requested (the default) runs it, as
				// Connect runs MirrorSourceConnector, but the flow's
				// "exactly once" then includes aborted source records.
				fb.b.warn(Warning{Key: s.Key, Line: s.Line, Message: fmt.Sprintf("%s replicates exactly once (%s.exactly.once.source.support=enabled), "+
					"but read_uncommitted copies the records of aborted source transactions, committed on the target: remove it (kmirror reads read_committed by default)",
					fb.r.name, fb.f.Target)})
			}
		}
		fb.b.line(name, strings.TrimSpace(s.Value), s.Key)
	},
}

// groupTimeout reads a group setting of the flow's members from the target
// cluster's worker settings.
func groupTimeout(fb *flowBuild, row mm2keys.Row) {
	name := fb.r.name + "." + row.Key
	if s, ok := fb.tc.Worker[row.Key]; ok {
		d, err := propsMillis(s)
		fb.b.fail(err)
		fb.field(row.Field).SetInt(int64(d))
		fb.b.line(name, strings.TrimSpace(s.Value), derived+s.Key+" (worker setting of herders targeting "+fb.f.Target+": the flow's group of members)")
		fb.b.line(fb.f.Target+"."+row.Key, strings.TrimSpace(s.Value), s.Key)
	} else {
		fb.b.line(name, row.Default, derived+"default (Connect's) of the flow's group of members; set "+fb.f.Target+"."+row.Key)
	}
}

// checkGroupTimeouts refuses a heartbeat interval not below the session
// timeout of the flow's group of members (the target's worker settings),
// with the line of the setting that made it so, as -check does offline:
// mirror.New refuses the same FlowConfig without a line.
func (fb *flowBuild) checkGroupTimeouts() {
	d := fb.fc.withDefaults()
	if d.HeartbeatInterval < d.SessionTimeout {
		return
	}
	t := fb.f.Target
	advice := fmt.Sprintf("Kafka advises a heartbeat interval of at most a third of the session timeout, e.g. %s.heartbeat.interval.ms = %d",
		t, (d.SessionTimeout / 3).Milliseconds())
	if s, ok := fb.tc.Worker["heartbeat.interval.ms"]; ok {
		fb.b.fail(propsErr(s, "must be lower than %s.session.timeout.ms (%d ms); %s", t, d.SessionTimeout.Milliseconds(), advice))
		return
	}
	s := fb.tc.Worker["session.timeout.ms"] // the heartbeat interval is the default
	fb.b.fail(propsErr(s, "must be higher than %s.heartbeat.interval.ms (%d ms, the default); %s", t, d.HeartbeatInterval.Milliseconds(), advice))
}

// finish does the checks that involve several keys: the filters' regexes
// and what a replaced exclude list lets through, the replication policy,
// the aliases it puts into topic names, and checkpoints without offset
// syncs.
func (fb *flowBuild) finish() {
	b, r, f := fb.b, fb.r, fb.f
	fc := &fb.fc
	fb.checkFilters()
	fb.checkGroupTimeouts()

	// Replication policy.
	for _, k := range []string{"source.cluster.alias", "target.cluster.alias"} {
		if s, ok := f.Get(k); ok && strings.TrimSpace(s.Value) == "" {
			b.fail(propsErr(s, "must not be empty: an empty alias does not keep topic names "+
				"(MM2 names remote topics \".<topic>\" then, which count as internal and are never replicated further); %s", identityAdvice(strings.TrimSuffix(s.Key, k))))
		}
	}
	// source.cluster.alias is ignored, as the loader warns (mm2props): an
	// identity policy reads topics as coming from the flow's source alias,
	// the alias topic names use everywhere else in kmirror.
	pol, err := policy.FromConfig(fb.class, fb.sep, fb.isep, f.Source)
	if err != nil {
		key := "replication.policy.class"
		if s, ok := f.Get(key); ok {
			key = s.Key
		}
		if errors.Is(err, policy.ErrInvalidSeparator) {
			s, _ := f.Get("replication.policy.separator")
			b.fail(&ConfigError{Key: s.Key, Value: fb.sep, Reason: withLine(s.Line, err.Error())})
		} else {
			s, _ := f.Get("replication.policy.class")
			b.fail(&ConfigError{Key: key, Value: fb.class, Reason: withLine(s.Line, err.Error())})
		}
		pol, _ = policy.NewDefault() // goes on checking the other settings
	}
	fc.Policy = pol

	if fc.DisableOffsetSyncs && !fc.DisableCheckpoints {
		b.line(r.name+".emit.checkpoints.enabled", "false", "emit.offset-syncs.enabled=false: nothing to translate checkpoints with")
	}
	fb.checkGroupOffsetSync()
	// Aliases are checked where this flow puts them into topic names.
	if err := validateFlowAliases(*fc); err != nil {
		b.fail(err)
	}
	b.line(r.name+".remote.topic.example", pol.FormatRemoteTopic(f.Source, "orders"), derived+"name of source topic orders on "+f.Target)
}

// checkGroupOffsetSync warns about sync.group.offsets.enabled=true on a
// flow that runs no checkpoint task (emit.checkpoints.enabled=false, a
// negative emit.checkpoints.interval.seconds, or
// emit.offset-syncs.enabled=false): the task syncs the group offsets, so
// none is synced, in MM2 as in kmirror.
func (fb *flowBuild) checkGroupOffsetSync() {
	fc, f := &fb.fc, fb.f
	if !fc.SyncGroupOffsets || fc.Disabled || !fc.DisableCheckpoints && !fc.DisableOffsetSyncs {
		return
	}
	var cause mm2props.Setting
	if fc.DisableCheckpoints {
		if s, ok := f.Get("emit.checkpoints.enabled"); ok {
			if on, err := mm2props.ParseBool(s); err == nil && !on {
				cause = s
			}
		}
		if cause.Key == "" {
			cause, _ = f.Get("emit.checkpoints.interval.seconds") // negative
		}
	} else {
		cause, _ = f.Get("emit.offset-syncs.enabled")
	}
	if cause.Key == "" {
		return // not from the file's keys
	}
	s, _ := f.Get("sync.group.offsets.enabled")
	fb.b.warn(Warning{Key: s.Key, Line: s.Line, Message: fmt.Sprintf(
		"no effect: no group offset is synced, because %s=%s (line %d) stops the checkpoint task, which syncs them (MM2 runs none either): "+
			"remove %s, or remove %s to emit checkpoints",
		cause.Key, strings.TrimSpace(cause.Value), cause.Line, s.Key, cause.Key)})
}

// settingRegexErrors is the error of a file's regex list setting s
// (list, as read) from bad, the errors newFilter found in it: nil for
// none, one error for each setting (an error per regex on one line
// showed the first only, as the file's errors are one per setting and
// line), naming every bad regex and what to write instead.
func settingRegexErrors(s mm2props.Setting, list []string, bad []*ConfigError) *ConfigError {
	if len(bad) == 0 {
		return nil
	}
	ce := bad[0]
	if len(bad) > 1 {
		reasons := make([]string, len(bad))
		for i, e := range bad {
			reasons[i] = fmt.Sprintf("%q: %s", e.Value, e.Reason)
		}
		ce = &ConfigError{Key: ce.Key, Value: strings.TrimSpace(s.Value), Reason: fmt.Sprintf("%d of its regular expressions are bad: %s", len(bad), strings.Join(reasons, "; "))}
	} else if s.Key != "" && len(list) > 1 && ce.Value == strings.Join(list, ",") {
		// An error about the whole list: show it as the file writes it.
		ce.Value = strings.TrimSpace(s.Value)
	}
	ce.Reason = withLine(s.Line, ce.Reason)
	return ce
}

// checkFilters compiles the filter lists (a bad regex is an error of the
// setting it is in) and warns about replaced exclude lists that let
// user-looking internal topics, or the topic configs kmirror's default
// keeps back, through.
func (fb *flowBuild) checkFilters() {
	b, fc := fb.b, &fb.fc
	topicsS, topicsExS := fb.lists["topics"], fb.lists["topics.exclude"]
	groupsS, groupsExS, cpeS := fb.lists["groups"], fb.lists["groups.exclude"], fb.lists["config.properties.exclude"]
	// check reports every bad regex of the two lists and says whether
	// there was none.
	check := func(incS mm2props.Setting, inc, incDef []string, exS mm2props.Setting, ex, exDef []string) bool {
		if inc == nil {
			inc = incDef
		}
		if ex == nil {
			ex = exDef
		}
		_, ces := newFilter(incS.Key, inc, exS.Key, ex)
		// The regex at fault is in one of the two settings.
		var incBad, exBad []*ConfigError
		for _, ce := range ces {
			if ce.Key == exS.Key {
				exBad = append(exBad, ce)
			} else {
				incBad = append(incBad, ce)
			}
		}
		for _, ce := range []*ConfigError{settingRegexErrors(incS, inc, incBad), settingRegexErrors(exS, ex, exBad)} {
			if ce != nil {
				b.fail(ce)
			}
		}
		return len(ces) == 0
	}
	topicsOK := check(topicsS, fc.Topics, mm2keys.Topics, topicsExS, fc.TopicsExclude, DefaultTopicsExclude)
	if topicsOK {
		warnMatchesNoTopic(b, topicsS, fc.Topics)
		warnMatchesNoTopic(b, topicsExS, fc.TopicsExclude)
		warnExcludedEntries(b, "topic", false, topicsS, fc.Topics, mm2keys.Topics, topicsExS, fc.TopicsExclude, DefaultTopicsExclude)
	}
	if fc.TopicsExclude != nil && topicsOK {
		// MM2 3.x's default (.*[\-\.]internal) excluded user topics that
		// merely look internal; Kafka 4.0's replicates them (KAFKA-17200).
		flt, _ := newFilter("", []string{".*"}, topicsExS.Key, fc.TopicsExclude)
		var hidden []string
		for _, n := range []string{"billing.internal", "billing-internal"} {
			if !flt.Match(n) {
				hidden = append(hidden, n)
			}
		}
		if len(hidden) > 0 {
			b.warn(Warning{Key: topicsExS.Key, Line: topicsExS.Line, Message: "excludes user topics named like " + strings.Join(hidden, " or ") +
				" (MM2 3.x's default did); Kafka 4.0's default replicates them and excludes only MM2's own topics: " + strings.Join(DefaultTopicsExclude, ", ")})
		}
	}
	if check(groupsS, fc.Groups, mm2keys.Groups, groupsExS, fc.GroupsExclude, DefaultGroupsExclude) {
		warnExcludedEntries(b, "group", true, groupsS, fc.Groups, mm2keys.Groups, groupsExS, fc.GroupsExclude, DefaultGroupsExclude)
	}
	cpeOK := check(mm2props.Setting{Key: "config.properties"}, []string{".*"}, nil, cpeS, fc.ConfigPropertiesExclude, DefaultConfigPropertiesExclude)
	if fc.ConfigPropertiesExclude != nil && cpeOK {
		// A replaced list often drops defaults that protect the target
		// (docs/field-failures.md cases B20, B21): name the topic configs now
		// copied.
		flt, _ := newFilter("", []string{".*"}, cpeS.Key, fc.ConfigPropertiesExclude)
		var copied, guards []string
		for _, re := range DefaultConfigPropertiesExclude {
			name := strings.ReplaceAll(re, `\.`, ".")
			switch {
			case !flt.Match(name):
			case slices.Contains(timestampGuards, name):
				guards = append(guards, name) // warned about below
			default:
				copied = append(copied, name)
			}
		}
		if len(copied) > 0 {
			b.warn(Warning{Key: cpeS.Key, Line: cpeS.Line, Message: "replaces the default list, so these topic configs are now copied to remote topics: " + strings.Join(copied, ", ")})
		}
		if len(guards) > 0 {
			// MM2's own default (KAFKA-20163) lets the topic keys
			// through: the target refuses the source's history.
			quoted := make([]string, len(guards))
			for i, g := range guards {
				quoted[i] = strings.ReplaceAll(g, ".", `\.`)
			}
			b.warn(Warning{Key: cpeS.Key, Line: cpeS.Line, Message: "lets the topic timestamp guards " + strings.Join(guards, ", ") +
				" through: copied to a remote topic, a guard makes the target refuse every copied record older (or newer) than it allows (INVALID_TIMESTAMP, the partition FAILED); add " +
				strings.Join(quoted, ", ") + " to the list, as kmirror's default does"})
		}
	}
}

// warnMatchesNoTopic warns about a topics or topics.exclude list (setting
// s, its entries list) with an entry holding a space, a quote or a
// semicolon: no topic name holds one, so the entry matches no topic
// ("orders payments", "\"orders\"", "orders;payments", a list written as
// in another tool), and the flow replicated (or excluded) nothing, with
// nothing said (TestBrk1207TopicsThatMatchNoTopicWarn). The warning gives
// the list to write: the entries split there, without quotes.
func warnMatchesNoTopic(b *propsBuilder, s mm2props.Setting, list []string) {
	if s.Key == "" {
		return
	}
	bad := ""
	var fixed []string
	for _, re := range list {
		if c, ok := literalNoTopicChar(re); ok && bad == "" {
			bad = fmt.Sprintf("%q holds %q", re, c)
		}
		for _, f := range strings.FieldsFunc(re, func(r rune) bool { return unicode.IsSpace(r) || r == ';' }) {
			if f = strings.Trim(f, "\"'"); f != "" {
				fixed = append(fixed, f)
			}
		}
	}
	if bad == "" {
		return
	}
	b.warn(Warning{Key: s.Key, Line: s.Line, Message: fmt.Sprintf("%s, which no topic name can hold (legal: a-z, A-Z, 0-9, '.', '_', '-'), so it matches no topic (in MM2 too): "+
		"separate the topics with commas, without quotes: %s = %s", bad, s.Key, strings.Join(fixed, ", "))})
}

// warnExcludedEntries warns about the entries of an include list (topics
// or groups: setting incS, entries inc; incDef when the file sets none)
// that the exclude list (exS, ex;
// exDef when the file sets none) takes back whole: an entry written again
// in the exclude list or under an exclude entry ".*", and an entry naming
// one topic or group (letters, digits, '.', '_', '-') that an exclude
// entry matches. MM2 applies the exclude list after the include list
// too, so such an entry selects nothing, and nothing said so
// ("groups = payments.*" with "groups.exclude = payments.*" checkpointed
// nothing). what is "topic" or "group"; literals false leaves out the
// entries naming one topic, which the runner's -check lists with the
// topics not replicated, and why. ex is nil when the file sets no exclude
// list.
func warnExcludedEntries(b *propsBuilder, what string, literals bool, incS mm2props.Setting, inc, incDef []string, exS mm2props.Setting, ex, exDef []string) {
	incName, at := incS.Key, incS
	if inc == nil { // not set: the exclude list may take back the default (topics.exclude = .*)
		incName, inc, at = fmt.Sprintf("the default %ss (%s)", what, strings.Join(incDef, ", ")), incDef, exS
	}
	if ex == nil && at.Line == 0 {
		return // neither list is the file's
	}
	exName := exS.Key
	if ex == nil { // not set
		exName, ex = fmt.Sprintf("the default %ss.exclude (%s)", what, strings.Join(exDef, ", ")), exDef
	} else {
		exName = fmt.Sprintf("%s (line %d)", exName, exS.Line)
	}
	flt, ces := newFilter("", []string{".*"}, exS.Key, ex)
	if len(ces) > 0 {
		return // reported by checkFilters
	}
	var taken []string
	for _, e := range inc {
		e = strings.TrimSpace(e)
		literal := e != "" && topicname.Legal(e)
		if literal && !literals {
			continue
		}
		if slices.Contains(ex, e) || slices.Contains(ex, ".*") || (literal && !flt.Match(e)) {
			taken = append(taken, e)
		}
	}
	if len(taken) == 0 {
		return
	}
	b.warn(Warning{Key: at.Key, Line: at.Line, Message: fmt.Sprintf("%s excluded again by %s, which MM2 and kmirror apply after %s: no %s it matches is selected; "+
		"remove it from one of the two lists", quoteList(taken), exName, incName, what)})
}

// quoteList writes entries as "a", "b" and "c".
func quoteList(entries []string) string {
	q := make([]string, len(entries))
	for i, e := range entries {
		q[i] = strconv.Quote(e)
	}
	if len(q) == 1 {
		return q[0] + " is"
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1] + " are"
}

// literalNoTopicChar returns the first white space, quote or semicolon of
// regular expression re that stands for itself: not escaped and not in a
// character class ("[^ ]+" matches topics; "orders payments" none).
func literalNoTopicChar(re string) (string, bool) {
	class, esc := false, false
	for _, r := range re {
		switch {
		case esc:
			esc = false
		case r == '\\':
			esc = true
		case class:
			class = r != ']'
		case r == '[':
			class = true
		case unicode.IsSpace(r) || strings.ContainsRune("\"';", r):
			return string(r), true
		}
	}
	return "", false
}

// defaultOrigin labels a default in the effective dump: "default" when
// kmirror's default equals MM2's (mm2 is "" or the same), else "kmirror
// default (MM2: mm2)".
func defaultOrigin(kmirror, mm2 string) string {
	if mm2 == "" || kmirror == mm2 {
		return "default"
	}
	return fmt.Sprintf("kmirror default (MM2: %s)", mm2)
}

// caseSensitiveEnum handles the value v (lower case) of an Enum row MM2
// compares case-sensitively, written s in another case: use.defaults.from
// other than "source" is target for MM2, which kmirror follows;
// offset-syncs.topic.location fails MM2's validation (its connectors do
// not start), which kmirror reads as written, with a warning.
func caseSensitiveEnum(b *propsBuilder, row mm2keys.Row, s mm2props.Setting, v string) string {
	w := strings.TrimSpace(s.Value)
	if row.Key == "use.defaults.from" {
		if v != "source" {
			return v
		}
		b.warn(Warning{Key: s.Key, Line: s.Line, Message: fmt.Sprintf(
			"MM2 compares use.defaults.from with source case-sensitively, so %s means target there (topic configs left at their default take the target's defaults); kmirror does the same: write source to use the source's defaults", w)})
		return "target"
	}
	b.warn(Warning{Key: s.Key, Line: s.Line, Message: fmt.Sprintf(
		"MM2 refuses %s (its values are case-sensitive: %s; ConfigException, the flow's connectors do not start); kmirror reads it as %s: write %s", w, strings.Join(row.Values, ", "), v, v)})
	return v
}
