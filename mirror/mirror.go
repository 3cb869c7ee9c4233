package mirror

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/clientconf"
	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/logx"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/policy"
)

// Mirror replicates topics between Kafka clusters along the configured
// flows, as MM2's MirrorSourceConnector, MirrorCheckpointConnector and
// MirrorHeartbeatConnector do together. Create it with [New], start it
// with [Mirror.Run], stop it by canceling Run's context or with
// [Mirror.Close].
// Its methods are safe for concurrent use.
type Mirror struct {
	log   *slog.Logger
	flows []*flow
	m     *metrics
	topo  *topology
	// limiter rate-limits repeated log records; Run flushes its pending
	// summaries when it returns (nil without a logger).
	limiter *logx.Limiter

	mu      sync.Mutex
	running bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}
	abort   context.CancelFunc // cancels the hard context: stop without flushing
}

// New validates the configuration and returns a Mirror. It does no I/O and
// leaves no goroutine running (the franz-go clients it builds to read the
// consumer options of a ClusterConfig cannot connect and are closed at
// once). A bad configuration is a [*ConfigError] naming the bad key and
// value, or a [*ConfigErrors] listing every one found when there are
// several (errors.As with a *ConfigError finds the first), so that all can
// be fixed in one go; the errors looked for are:
//   - no cluster or no flow, a duplicate or empty alias;
//   - a kgo consumer-group option (kgo.ConsumerGroup, ...) or an option
//     choosing what a consumer reads (kgo.ConsumeTopics, ConsumeRegex,
//     ConsumePartitions, ConsumeResetOffset, ...) in a ClusterConfig;
//   - an alias that cannot appear in the topic names the flow puts it in:
//     a source alias containing the policy's separator (MM2 would read it
//     back as another alias: with separator "-", "eu-prod-heartbeats" comes
//     from "eu"), or a target alias with characters illegal in topic names
//     while offset syncs live on the source;
//   - a flow naming an unknown cluster, or whose source equals its target;
//   - [WithFlowSettings] for a flow no [WithFlow] configures;
//   - a regex Go cannot compile;
//   - a duration of FlowConfig above zero and below a millisecond: the
//     MM2 value written as a time.Duration (EmitCheckpointsInterval: 60 is
//     60 ns; write 60 * time.Second);
//   - a negative duration of FlowConfig (but RefreshGroupsInterval's):
//     where MM2 turns a task off with a negative interval, the error
//     names the field that does it (DisableCheckpoints, say);
//   - two flows whose topic lists make them write the same remote topic
//     without [FlowConfig.AllowTopicCollisions].
//
// Topics listed in a flow's topics that will not be replicated (a "__"
// topic, a cycle by name, ...) are logged once at WARN and shown in
// [FlowStatus.Skipped]. With [WithMetrics], an error of [Metrics.Init] (for
// example metrics already registered) fails New with an error wrapping it.
func New(opts ...Opt) (*Mirror, error) {
	var c cfg
	for _, o := range opts {
		if o != nil { // as the module's other packages do
			o.apply(&c)
		}
	}
	log := c.logger
	var limiter *logx.Limiter
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	} else {
		limiter = logx.RateLimit(log.Handler(), logx.Options{Exempt: auditMessages})
		log = slog.New(limiter)
	}
	var errs []*ConfigError // every independent error, so that all can be fixed at once
	bad := func(ce *ConfigError) { errs = append(errs, ce) }
	clusters := map[string]ClusterConfig{}
	for _, cl := range c.clusters {
		if cl.Alias == "" {
			bad(&ConfigError{Key: "clusters", Reason: "a cluster alias is empty: an empty alias does not make remote topics keep their names; " + identityAdvice("")})
			continue
		}
		if strings.Contains(cl.Alias, "->") {
			// Checked before the flows: a flow naming this alias would
			// otherwise be told to split it into two aliases that need not
			// exist (a new user's try, stop 38).
			bad(&ConfigError{Key: "clusters", Value: cl.Alias, Reason: `a cluster alias must not contain "->", which separates the source and target aliases of a flow name: ` +
				`give ClusterConfig.Alias a name such as "` + strings.ReplaceAll(cl.Alias, "->", "-") + `"`})
			continue
		}
		if _, dup := clusters[cl.Alias]; dup {
			bad(&ConfigError{Key: "clusters", Value: cl.Alias, Reason: "cluster alias listed twice"})
			continue
		}
		if ce := groupOptError(cl); ce != nil {
			bad(ce)
		}
		if ce := consumeOptError(cl); ce != nil {
			bad(ce)
		}
		clusters[cl.Alias] = cl
	}
	if len(c.flows) == 0 {
		bad(&ConfigError{Key: "flows", Reason: "no replication flow configured (WithFlow, or <source>-><target>.enabled=true)"})
	}
	for _, flow := range sortedKeys(c.settings) {
		if !slices.ContainsFunc(c.flows, func(fc FlowConfig) bool { return fc.Name() == flow }) {
			names := make([]string, len(c.flows))
			for i, fc := range c.flows {
				names[i] = fc.Name()
			}
			bad(&ConfigError{Key: "WithFlowSettings", Value: flow, Reason: fmt.Sprintf("no such flow: the flows are %q (names are \"source->target\")", names)})
		}
	}
	m := &Mirror{log: log, m: newMetrics(c.metrics), limiter: limiter}
	seen := map[string]bool{}
	groups := map[[2]string]string{} // (target alias, group id) -> the flow using it
	reported := map[string]bool{}    // errors that several flows would repeat: a flow's name configured again, a cluster's missing client options
	for _, fc := range c.flows {
		name := fc.Name()
		if fc.Source == fc.Target && fc.Source != "" && !strings.Contains(fc.Source, "->") {
			// Not for an empty alias nor a flow name, which the checks
			// below name with their hints.
			bad(&ConfigError{Key: name, Value: fc.Source, Reason: "a flow's source and target must be different clusters"})
			continue
		}
		if seen[name] {
			if !reported["flow "+name] {
				reported["flow "+name] = true
				bad(&ConfigError{Key: name, Reason: "flow configured twice"})
			}
			continue
		}
		seen[name] = true
		gid := fc.GroupID
		if gid == "" {
			gid = defaultGroupID(fc.Source, fc.Target)
		}
		key := [2]string{fc.Target, gid}
		switch other, dup := groups[key]; {
		case fc.Disabled && fc.DisableHeartbeats:
			// No member, no group: it runs nothing.
		case dup:
			// One group on one target: its leader assigns the slots of its
			// own flow only (to the members subscribed to its coordination
			// topic), so the other flow replicates nothing.
			bad(&ConfigError{Key: "FlowConfig.GroupID", Value: gid,
				Reason: fmt.Sprintf("flows %s and %s both use group %s on %s: the group's leader assigns the slots of its own flow only, so the other flow replicates nothing; give each flow its own GroupID (\"\" is kmirror.<source>-><target>)", other, name, gid, fc.Target)})
		default:
			groups[key] = name
		}
		known := true // both aliases name configured clusters
		for _, side := range []struct{ field, alias, other string }{{"Source", fc.Source, fc.Target}, {"Target", fc.Target, fc.Source}} {
			if a, b, arrow := strings.Cut(side.alias, "->"); arrow {
				// A flow name where an alias belongs.
				bad(&ConfigError{Key: "FlowConfig." + side.field, Value: side.alias,
					Reason: fmt.Sprintf("%s is one cluster alias, not a flow: write Source: %q, Target: %q", side.field, a, b)})
				known = false
				continue
			}
			if side.alias == "" {
				bad(&ConfigError{Key: "FlowConfig." + side.field, Reason: fmt.Sprintf("empty: set it to the alias of the flow's %s cluster (configured: %v) (flow %s)",
					strings.ToLower(side.field), sortedKeys(clusters), name)})
				known = false
				continue
			}
			if _, ok := clusters[side.alias]; !ok {
				reason := fmt.Sprintf("unknown %s cluster alias (configured: %v)", strings.ToLower(side.field), sortedKeys(clusters))
				caseOnly := false
				for _, a := range sortedKeys(clusters) {
					if strings.EqualFold(a, side.alias) {
						reason += fmt.Sprintf(": aliases are case-sensitive, did you mean %q?", a)
						caseOnly = true
						break
					}
				}
				// A typo (ap-northeast2 for ap-northeast-2); aliases of a
				// few letters are all a typo apart (C is not a misspelt A).
				if sug := clientconf.Suggest(side.alias, sortedKeys(clusters)); !caseOnly && sug != "" && len(side.alias) >= 4 {
					reason += fmt.Sprintf(": did you mean %q?", sug)
				}
				bad(&ConfigError{Key: "FlowConfig." + side.field, Value: side.alias, Reason: reason + " (flow " + name + ")"})
				known = false
			}
		}
		src, dst := clusters[fc.Source], clusters[fc.Target]
		if known {
			if ce := validateFlowAliases(fc); ce != nil {
				bad(ce)
			}
			for _, c := range []ClusterConfig{src, dst} {
				if len(c.Client) == 0 && !reported["cluster "+c.Alias] {
					reported["cluster "+c.Alias] = true
					bad(&ConfigError{Key: name, Value: c.Alias, Reason: fmt.Sprintf("cluster %s has no client options: set its ClusterConfig.Client (at least kgo.SeedBrokers)", c.Alias)})
				}
			}
		}
		if fc.Tasks < 0 || fc.Tasks > maxTasks {
			bad(&ConfigError{Key: name + ".tasks.max", Value: fmt.Sprint(fc.Tasks),
				Reason: fmt.Sprintf("FlowConfig.Tasks must be between 1 and %d (0 means the default, %d)", maxTasks, DefaultTasks)})
		}
		if fc.ShallowCopy && fc.ExactlyOnce {
			bad(&ConfigError{Key: name + ".shallow.copy.enabled", Value: "true",
				Reason: "shallow copy writes batches without a transactional producer: it cannot be combined with exactly-once replication (turn one of them off: " + fc.Target + ".exactly.once.source.support=disabled, FlowConfig.ExactlyOnce=false, or shallow.copy.enabled=false)"})
		}
		if fc.ExactlyOnce && known && len(dst.Client) > 0 && kgoValidate(dst) == nil {
			// The units' transactional producers: kgo refuses a
			// transactional id with idempotent writes disabled (the
			// target's enable.idempotence=false, or acks other than all).
			// Found at start, not by a flow retrying for ever at its first
			// fencing (TestBrkKExactlyOnceNonIdempotentProducerRefused).
			opts := append(append(append([]kgo.Opt{}, dst.Client...), dst.Producer...), kgo.TransactionalID(transactionalID(gid, 0)))
			if err := kclient.Validate(opts...); err != nil {
				bad(&ConfigError{Key: fc.Target + ".producer.enable.idempotence",
					Reason: fmt.Sprintf("exactly once (flow %s) writes with transactional producers, which must be idempotent with acks=all, and the producer options of %s refuse one (%v): "+
						"remove %s.producer.enable.idempotence=false and set %s.producer.acks=all (ClusterConfig.Producer: drop kgo.DisableIdempotentWrite, and kgo.RequiredAcks other than kgo.AllISRAcks), "+
						"or turn exactly once off (%s.exactly.once.source.support=disabled, FlowConfig.ExactlyOnce=false)",
						name, fc.Target, err, fc.Target, fc.Target, fc.Target)})
			}
		}
		if fc.ShallowCopy && !fc.DisableProvenanceHeader {
			bad(&ConfigError{Key: name + ".shallow.copy.enabled", Value: "true",
				Reason: "shallow copy keeps every record as it is, but the provenance header is on and must be added to each record: set provenance.header.enabled=false (FlowConfig.DisableProvenanceHeader) to copy batches as they are, or shallow.copy.enabled=false"})
		}
		durationsOK := true
		for _, ce := range checkDurations(fc) {
			bad(ce)
			durationsOK = false
		}
		if ce := checkReplicationFactors(fc); ce != nil {
			bad(ce)
		}
		if d := fc.withDefaults(); durationsOK && d.HeartbeatInterval >= d.SessionTimeout {
			// Java's consumer refuses it too (GroupRebalanceConfig): a member
			// that heartbeats no more often than its session lasts keeps
			// expiring, and its slots move back and forth.
			bad(&ConfigError{Key: fc.Target + ".heartbeat.interval.ms", Value: d.HeartbeatInterval.String(),
				Reason: fmt.Sprintf("must be lower than %s.session.timeout.ms (%v); Kafka advises at most a third of it, e.g. %s.heartbeat.interval.ms = %d",
					fc.Target, d.SessionTimeout, fc.Target, (d.SessionTimeout / 3).Milliseconds())})
		}
		// Every regex of every flow, where newFlow stops at the first and
		// is not called once an error was found.
		_, _, _, ferrs := flowFilters(fc.withDefaults())
		errs = append(errs, ferrs...)
		if len(errs) > 0 {
			continue // the remaining flows are checked; none is built
		}
		f, err := newFlow(fc, src, dst, log, m.m)
		if err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				bad(ce)
				continue
			}
			return nil, err
		}
		f.partRetryFirst = c.partRetryFirst
		f.cpWatch = c.cpWatch
		f.workerID = c.workerID
		if f.workerID == "" {
			f.workerID = defaultWorkerID()
		}
		f.selfID = newMemberID(f.workerID)
		if c.statusInterval > 0 {
			f.statusInterval = c.statusInterval
		}
		if kv, ok := c.settings[name]; ok {
			f.fingerprint, f.fpConfig = hashConfig(kv), kv
		} else {
			f.fingerprint, f.fpConfig = fingerprintOf(f.cfg)
		}
		f.hooks = c.hooks
		m.flows = append(m.flows, f)
	}
	for _, alias := range sortedKeys(clusters) {
		if ce := kgoValidate(clusters[alias]); ce != nil {
			bad(ce)
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	if len(errs) > 1 {
		return nil, &ConfigErrors{Errs: errs}
	}
	if err := m.staticTopology(c.flows); err != nil {
		return nil, err
	}
	warnIdentityLoops(m.flows, log)
	m.topo = newTopology(sortedKeys(clusters))
	for _, f := range m.flows {
		f.topo = m.topo
		if !f.cfg.Disabled {
			m.topo.register(f)
		}
	}
	if m.m != nil {
		if err := m.m.hook.Init(m); err != nil {
			return nil, fmt.Errorf("mirror: metrics: %w", err)
		}
	}
	return m, nil
}

// warnIdentityLoops logs a warning at New for each cycle of enabled flows
// that keep topic names (IdentityReplicationPolicy: A->B and B->A, or a
// ring A->B->C->A) in which a flow has the provenance header off
// (DisableProvenanceHeader, or shallow copy, which cannot add it). With
// the header off on every flow of a cycle nothing tells a copy from a
// source record, and a record of a topic they all select is copied around
// without end (MM2 loops the same way; a breaker saw one record copied 254
// times in 3 s, with no warning). With it off on some flows only, the
// loop stops one hop late: each record that crosses a flow without the
// header comes back to its origin once more, a duplicate on every cluster
// it then reaches (TestBrkLIdentityOneFlowWithoutHeaderWarned). Topic
// lists that keep the directions apart make such a cycle safe, hence a
// warning, not an error. One warning per cycle: the one made of flows
// without the header alone when there is one, else the shortest.
func warnIdentityLoops(flows []*flow, log *slog.Logger) {
	var cyc []*flow // enabled flows that keep topic names
	for _, f := range flows {
		if _, ok := f.pol.(*policy.Identity); ok && !f.cfg.Disabled {
			cyc = append(cyc, f)
		}
	}
	// path returns the shortest chain of flows of cyc (all without the
	// header when offOnly) from alias from to alias to, or nil.
	path := func(from, to string, offOnly bool) []*flow {
		prev := map[string]*flow{from: nil}
		queue := []string{from}
		for len(queue) > 0 {
			at := queue[0]
			queue = queue[1:]
			if at == to {
				var out []*flow
				for f := prev[at]; f != nil; f = prev[f.cfg.Source] {
					out = append([]*flow{f}, out...)
				}
				return out
			}
			for _, f := range cyc {
				if _, seen := prev[f.cfg.Target]; f.cfg.Source != at || seen || (offOnly && !f.cfg.DisableProvenanceHeader) {
					continue
				}
				prev[f.cfg.Target] = f
				queue = append(queue, f.cfg.Target)
			}
		}
		return nil
	}
	warned := map[string]bool{}
	for _, f := range cyc {
		if !f.cfg.DisableProvenanceHeader {
			continue
		}
		rest, endless := path(f.cfg.Target, f.cfg.Source, true), true
		if rest == nil {
			rest, endless = path(f.cfg.Target, f.cfg.Source, false), false
		}
		if rest == nil {
			continue
		}
		var names, off []string
		shallow := false
		for _, g := range append([]*flow{f}, rest...) {
			names = append(names, g.name)
			if g.cfg.DisableProvenanceHeader {
				off = append(off, g.name)
			}
			shallow = shallow || g.cfg.ShallowCopy
		}
		key := append([]string(nil), names...)
		sort.Strings(key)
		if warned[strings.Join(key, " ")] {
			continue
		}
		warned[strings.Join(key, " ")] = true
		fix := "select disjoint topics, or set provenance.header.enabled=true on every flow of the cycle"
		if shallow {
			fix += " (shallow copy cannot add the header: set shallow.copy.enabled=false on those flows)"
		}
		if endless {
			log.Warn("flows keep topic names around a cycle with the provenance header off: a record of a topic they all select is copied back and forth without end; "+fix,
				"flows", names)
			continue
		}
		log.Warn("flows keep topic names around a cycle and some have the provenance header off: a record that crosses one of them comes back to its origin once more, "+
			"a duplicate on every cluster of the cycle it reaches; "+fix, "flows", names, "without_header", off)
	}
}

// maxTasks bounds tasks.max: each slot is a partition of the flow's
// coordination topic and, when owned, a consumer and a producer.
const maxTasks = 1024

// staticTopology completes the flows' topic rules with the Mirror's other
// flows, records the skips of topics listed literally (logged once, shown
// by Status and -check) and refuses collisions the topic lists make
// certain: two flows writing one remote topic without
// FlowConfig.AllowTopicCollisions.
func (m *Mirror) staticTopology(fcs []FlowConfig) error {
	inbound := map[string]map[string]bool{} // target -> sources of enabled flows into it
	for _, fc := range fcs {
		if !fc.Disabled {
			if inbound[fc.Target] == nil {
				inbound[fc.Target] = map[string]bool{}
			}
			inbound[fc.Target][fc.Source] = true
		}
	}
	now := time.Now()
	var keys []flowKey
	selected := map[string][]string{}
	for _, f := range m.flows {
		f.rules.inbound = inbound[f.cfg.Source]
		if f.cfg.Disabled {
			continue
		}
		static := f.rules.staticSkips()
		for _, t := range sortedKeys(static) {
			f.skips.note(t, static[t], now)
		}
		keys = append(keys, keyOf(f.cfg))
		for t := range f.rules.listed {
			if ok, _ := f.rules.decide(t, nil); ok {
				selected[f.name] = append(selected[f.name], t)
			}
		}
	}
	skips, err := collisionSkips(collisions(keys, selected), true, nil)
	if err != nil {
		return err
	}
	for _, f := range m.flows {
		for _, t := range sortedKeys(skips[f.name]) {
			f.skips.note(t, skips[f.name][t], now)
		}
	}
	return nil
}

func kgoValidate(c ClusterConfig) *ConfigError {
	for _, l := range []struct {
		field string
		opts  []kgo.Opt
	}{{"Client", c.Client}, {"Consumer", c.Consumer}, {"Producer", c.Producer}, {"Admin", c.Admin}} {
		if i := slices.Index(l.opts, nil); i >= 0 {
			// kgo.ValidateOpts and kgo.NewClient dereference it (New
			// panicked: a breaker's finding).
			return &ConfigError{Key: c.Alias, Reason: fmt.Sprintf("ClusterConfig.%s holds a nil kgo.Opt (option %d of %d): remove it", l.field, i+1, len(l.opts))}
		}
	}
	for _, role := range [][]kgo.Opt{c.Consumer, c.Producer, c.Admin} {
		if err := kclient.Validate(append(append([]kgo.Opt{}, c.Client...), role...)...); err != nil {
			return &ConfigError{Key: c.Alias, Reason: fmt.Sprintf("invalid client options: %v", err)}
		}
	}
	// A kgo.TransactionalID: franz-go refuses one only with idempotent
	// writes disabled, so options that pass with DisableIdempotentWrite
	// added hold none. Every producer kmirror creates for the cluster
	// (status, offset syncs, checkpoints, heartbeats, the units) took it:
	// the first refused itself ("status topic client on dst: cannot both
	// disable idempotent writes and use transactional IDs") and nothing
	// was replicated (TestBrkKUserTransactionalIDRefused).
	for _, l := range []struct {
		field string
		opts  []kgo.Opt
	}{{"Client", c.Client}, {"Producer", c.Producer}} {
		if err := kclient.Validate(append(append([]kgo.Opt{}, l.opts...), kgo.DisableIdempotentWrite())...); err != nil && strings.Contains(err.Error(), "transactional") {
			return &ConfigError{Key: "ClusterConfig." + l.field, Value: c.Alias, Reason: fmt.Sprintf(
				"cluster %s has a kgo.TransactionalID: kmirror sets the transactional ids of its exactly-once producers itself "+
					"(\"<group id>-<slot>\", one per slot) and its other producers must not be transactional; "+
					"remove it, and set FlowConfig.ExactlyOnce (%s.exactly.once.source.support=enabled) for exactly-once replication", c.Alias, c.Alias)}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Run replicates until ctx is canceled or a flow fails fatally. On
// cancellation it stops gracefully: it stops fetching, waits for the
// records in flight to be acknowledged, stores the resume points and the
// final offset syncs (bounded by 30 s), then returns nil; it returns nil
// too when [Mirror.Shutdown]'s ctx cut that stop short (Shutdown returns
// ctx's error then, the one sign of it). A fatal error
// (e.g. a replication factor larger than the target's broker count) ends
// every flow and is returned. Unreachable clusters are not fatal: they are
// retried with backoff and shown in [Mirror.Status]. Run may be called
// once; after Close it returns [ErrClosed]. A nil ctx, or a Mirror not
// made by [New] (a zero Mirror), is an error, returned at once.
func (m *Mirror) Run(ctx context.Context) error {
	if ctx == nil {
		// context.WithCancel(nil) panics below with m.mu held, so a
		// deferred Close (defer m.Close(); return m.Run(ctx)) blocked
		// forever on the mutex instead of the program failing.
		return errors.New("mirror: Run: nil context: pass a context whose cancellation stops the Mirror (context.Background() to stop it with Close only)")
	}
	if len(m.flows) == 0 {
		// New refuses a configuration without flows: only a zero Mirror
		// (a struct field never assigned New's result) has none, and Run
		// returned nil at once, replicating nothing.
		return errors.New("mirror: Run: the Mirror has no flow: make it with New")
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	if m.running {
		done := m.done
		m.mu.Unlock()
		// Say which mistake it is and what to do: a service that restarts
		// replication after Run returned needs a new Mirror.
		select {
		case <-done:
			return errors.New("mirror: Run called twice: the first Run has returned, and a Mirror runs once; make a new one with New (and Close this one) to replicate again")
		default:
			return errors.New("mirror: Run called twice: the first Run is still replicating; wait for it to return, or cancel its context to stop it")
		}
	}
	m.running = true
	// Close and Shutdown stop (and wait for) Run from here on, also while
	// it is still starting.
	ctx, cancel := context.WithCancel(ctx)
	hard, abort := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel, m.abort = cancel, abort
	m.done = make(chan struct{})
	m.mu.Unlock()
	defer close(m.done)
	if m.limiter != nil {
		defer m.limiter.Close()
	}
	defer abort()
	defer cancel()
	// Two flows must never write one remote topic: refuse at start what the
	// sources' topics make certain (a collision no flow opted into).
	if err := m.checkCollisionsAtStart(ctx); err != nil || ctx.Err() != nil {
		return err // nil when stopped while starting
	}

	var wg sync.WaitGroup
	errs := make([]error, len(m.flows))
	for i, f := range m.flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.run(ctx, hard); err != nil {
				errs[i] = flowError{f.name, err}
				cancel() // a fatal error stops every flow
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// groupOptError refuses a kgo consumer-group option (kgo.ConsumerGroup,
// kgo.SessionTimeout, kgo.InstanceID, ... : a kgo.GroupOpt) in c's option
// lists. kmirror's clients apply them all: with a service's own options
// passed as they are (kgo.ConsumerGroup("svc"), kgo.ConsumeTopics(...)),
// two of kmirror's clients joined the service's group on the source,
// taking partitions from its consumers, while the flow stayed RETRYING
// ("invalid direct-partition consuming option when consuming as a group"). The flow's members form their own
// group, set by FlowConfig.
func groupOptError(c ClusterConfig) *ConfigError {
	for _, l := range []struct {
		field string
		opts  []kgo.Opt
	}{{"Client", c.Client}, {"Consumer", c.Consumer}, {"Producer", c.Producer}, {"Admin", c.Admin}} {
		for _, o := range l.opts {
			if _, ok := o.(kgo.GroupOpt); ok {
				return &ConfigError{Key: "ClusterConfig." + l.field, Value: c.Alias, Reason: fmt.Sprintf(
					"cluster %s has a kgo consumer-group option (kgo.ConsumerGroup, kgo.SessionTimeout, kgo.InstanceID, ...): "+
						"every client kmirror creates for the cluster would apply it, and with kgo.ConsumerGroup join that group; "+
						"pass connection settings only (kgo.SeedBrokers, TLS, SASL, client id), and set the group of the flow's members "+
						"with FlowConfig.GroupID, SessionTimeout, HeartbeatInterval and RebalanceTimeout", c.Alias)}
			}
		}
	}
	return nil
}

// consumeOpts are the kgo options that say what a consumer reads and
// from where, with what a kmirror user writes instead. kmirror's
// consumers assign their partitions and start offsets themselves, so
// these, in any of a cluster's lists, were ignored or broke a client
// (TestBrkPConsumeOptionsRefused): kgo.ConsumeTopics made the replication
// consumers fetch those topics beside the flow's partitions; kgo.ConsumeRegex
// made kgo ignore every AddConsumePartitions (nothing was replicated);
// kgo.ConsumePartitions made the flow's group member
// fail ("invalid direct-partition consuming option when consuming as a
// group"); kgo.ConsumeResetOffset and kgo.ConsumeStartOffset were
// overridden by the replication consumer (kgo.ConsumeResetOffset(AtEnd)
// did not make a flow start at the end) but applied to the other readers.
// Other consumer options (fetch sizes and waits, rack, isolation level,
// decompression) tune a client without choosing what it reads: they stay
// allowed.
var consumeOpts = []struct {
	name    string
	opt     any
	instead string
}{
	{"kgo.ConsumeTopics", kgo.ConsumeTopics,
		"list the topics to mirror in FlowConfig.Topics (and TopicsExclude), `<source>-><target>.topics` in a properties file"},
	{"kgo.ConsumeRegex", kgo.ConsumeRegex,
		"write the topic patterns in FlowConfig.Topics (and TopicsExclude), `<source>-><target>.topics` in a properties file"},
	{"kgo.ConsumeExcludeTopics", kgo.ConsumeExcludeTopics,
		"write the excluded topic patterns in FlowConfig.TopicsExclude, `<source>-><target>.topics.exclude` in a properties file"},
	{"kgo.ConsumePartitions", kgo.ConsumePartitions,
		"list the topics in FlowConfig.Topics: kmirror assigns their partitions to its slots itself"},
	// Before ConsumeStartOffset, which it sets too.
	{"kgo.ConsumeResetOffset", kgo.ConsumeResetOffset,
		"set FlowConfig.StartOffset (StartLatest for auto.offset.reset=latest) for where new partitions start"},
	{"kgo.ConsumeStartOffset", kgo.ConsumeStartOffset,
		"set FlowConfig.StartOffset (StartLatest for auto.offset.reset=latest) for where new partitions start"},
}

// consumeOptProbe returns a client of opts (consumer options) that cannot
// connect: its dialer fails and its context is canceled, so that the
// metadata request kgo starts for a consumer of topics never leaves the
// process. The caller closes it.
func consumeOptProbe(opts []kgo.Opt) (*kgo.Client, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	noDial := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("mirror: New: option probe does not connect")
	}
	return kclient.New(append([]kgo.Opt{kgo.WithContext(ctx), kgo.Dialer(noDial)}, opts...)...)
}

// consumeOptDefaults are the consumeOpts values of a client without them.
var consumeOptDefaults = sync.OnceValue(func() []any {
	cl, err := consumeOptProbe(nil)
	if err != nil {
		panic(err) // no option to refuse
	}
	defer cl.Close()
	vs := make([]any, len(consumeOpts))
	for i, co := range consumeOpts {
		vs[i] = kclient.OptValue(cl, co.opt)
	}
	return vs
})

// consumeOptError refuses a consumeOpts option in c's option lists,
// naming the option, the list and the cluster: one whose value differs
// from a client's without it. It reads the values off a client built from
// the list's consumer options alone (no hook of the user's runs), which
// cannot connect and is closed at once.
func consumeOptError(c ClusterConfig) *ConfigError {
	for _, l := range []struct {
		field string
		opts  []kgo.Opt
	}{{"Client", c.Client}, {"Consumer", c.Consumer}, {"Producer", c.Producer}, {"Admin", c.Admin}} {
		var cos []kgo.Opt
		for _, o := range l.opts {
			if co, ok := o.(kgo.ConsumerOpt); ok {
				cos = append(cos, co)
			}
		}
		if len(cos) == 0 {
			continue
		}
		cl, err := consumeOptProbe(cos)
		if err != nil {
			continue // kgoValidate reports the options franz-go refuses
		}
		for i, co := range consumeOpts {
			if !reflect.DeepEqual(kclient.OptValue(cl, co.opt), consumeOptDefaults()[i]) {
				cl.Close()
				return &ConfigError{Key: "ClusterConfig." + l.field, Value: c.Alias, Reason: fmt.Sprintf(
					"cluster %s has %s: kmirror's consumers choose their topics, partitions and start offsets themselves, "+
						"so it would be ignored or break them; remove it, and %s", c.Alias, co.name, co.instead)}
			}
		}
		cl.Close()
	}
	return nil
}

// flowError is a flow's error returned by Run or ResizeSlots: "mirror: flow
// <name>: <err>", without err's own "mirror: " prefix (a fatal
// *ConfigError read "mirror: flow a->b: mirror: a->b.replication.factor=...").
type flowError struct {
	flow string
	err  error
}

func (e flowError) Error() string {
	return "mirror: flow " + e.flow + ": " + strings.TrimPrefix(e.err.Error(), "mirror: ")
}

func (e flowError) Unwrap() error { return e.err }

// Close stops the Mirror gracefully (as canceling Run's context) and waits
// for Run to return. It is idempotent and safe to call before Run. It then
// releases the Mirror's metrics (a [Metrics] with a Release method:
// mirrorprom unregisters its collectors).
func (m *Mirror) Close() error {
	m.mu.Lock()
	m.closed = true
	cancel, done := m.cancel, m.done
	m.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	m.m.released()
	return nil
}

// Shutdown stops the Mirror gracefully, like [Mirror.Close], but bounded by
// ctx: when ctx ends before the flows have flushed and stored their resume
// points (a cluster is down), it abandons the rest, as a crash would (the
// next run replays from the last stored resume points), waits for every
// goroutine and returns ctx's error. It returns nil after a complete
// graceful stop.
func (m *Mirror) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	cancel, abort, done := m.cancel, m.abort, m.done
	m.mu.Unlock()
	defer m.m.released()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		abort()
		<-done
		return ctx.Err()
	}
}

// kill stops without flushing or storing resume points, as a crash would
// (tests only).
func (m *Mirror) kill() {
	m.mu.Lock()
	m.closed = true
	cancel, abort, done := m.cancel, m.abort, m.done
	m.mu.Unlock()
	if cancel != nil {
		abort()
		cancel()
		<-done
	}
}

// Status returns a snapshot of every flow: state, last error, per
// partition source end, replicated offset, resume point and lag, gaps, and
// consumer-group states. It does no I/O.
func (m *Mirror) Status() Status {
	var s Status
	for _, f := range m.flows {
		s.Flows = append(s.Flows, f.status())
	}
	return s
}

func (f *flow) status() FlowStatus { return f.statusOf(true) }

// statusOf is status, with the groups' status (withGroups; built per call
// from the checkpoint emitter's, one map per group: the once-a-second
// publisher of the status topic does without them).
func (f *flow) statusOf(withGroups bool) FlowStatus {
	f.mu.Lock()
	fs := FlowStatus{Name: f.name, Source: f.cfg.Source, Target: f.cfg.Target, State: f.state, Error: f.stateErr,
		Since: f.since, Topics: f.nTopics, Gaps: append([]GapError(nil), f.gaps...), LastHeartbeat: f.lastHB, HeartbeatError: f.hbErr, Skipped: f.skips.list(),
		ProvenanceSkipped: f.provSkipped.Load(), TopicErrors: f.topicErrListLocked(), TailResume: f.tailStatus()}
	groups := f.groupStat
	srcDown, sl, started := f.srcDown, f.startLag, f.started
	hbSince := f.hbErrSince
	fs.ACLSyncError = f.aclErr
	aclSince := f.aclErrSince
	fs.OffsetSyncError, fs.OffsetSyncErrorSince = f.syncErr, f.syncErrSince
	fs.Started = started
	fs.Warnings = append([]string(nil), f.warnings...)
	waiting := f.waiting
	unassigned := append([]PartitionStatus(nil), f.unassigned...)
	f.mu.Unlock()
	fs.TargetState = f.desiredTarget()
	f.unitsMu.Lock()
	fs.Member = MemberStatus{GroupID: f.groupID, MemberID: f.memberID, Generation: f.generation, Tasks: int(f.tasks),
		Slots: f.ownedLocked(), Singleton: f.single != nil, Rebalances: f.rebalances, RebalanceSeconds: f.rebalanceTime.Seconds()}
	fs.AppliedState, fs.appliedOffset = f.reported, f.reportedOffset
	fs.Member.Waiting = waiting
	if f.legacyWaiting != "" {
		fs.Member.Waiting = f.legacyWaiting
	}
	if f.reported != TargetRunning && (fs.State == StateRunning || fs.State == StateDisabled) {
		fs.State, fs.Since = State(f.reported), f.appliedAt
	} else if fs.State == StateRunning && f.appliedAt.After(fs.Since) {
		fs.Since = f.appliedAt // RUNNING again since a resume (TestFlowSinceAfterResume)
	}
	// Live units, and those a release or a pause is stopping (their
	// counters move to the retired totals when they have stopped, in the
	// same critical section that drops them from stopping).
	// In slot order, so that an unchanged member merges the same list
	// (mergedPartitions).
	units := make([]*unit, 0, len(f.units)+len(f.stopping))
	for _, k := range sortedSlots(f.units) {
		units = append(units, f.units[k])
	}
	for _, k := range sortedSlots(f.stopping) {
		if u := f.stopping[k]; f.units[k] != u {
			units = append(units, u)
		}
	}
	fs.Records, fs.Bytes = f.retiredRecords, f.retiredBytes
	single := f.single != nil
	if !single {
		// Topic errors are the singleton's: a member that just lost slot 0
		// does not report them until its next discovery drops them.
		fs.TopicErrors = nil
		// So are the heartbeats: its emitter stopped with slot 0, and the
		// age of its last heartbeat would grow from then on
		// (TestHeartbeatStatusOnlyOnSingleton).
		fs.LastHeartbeat, fs.HeartbeatError = time.Time{}, ""
		// And the ACL sync's failure (forgetSynced drops it at the refresh
		// loop's next round).
		fs.ACLSyncError = ""
	}
	// Partitions no unit replicates now (a paused flow's, the final ones
	// of a member that left): shown, their counters already retired.
	var still []PartitionStatus
	for _, k := range sortedSlots(f.pausedParts) {
		still = append(still, f.pausedParts[k]...)
	}
	still = append(still, f.final...)
	f.unitsMu.Unlock()
	merged := f.mergedPartitions(units)
	fs.Records += merged.records
	fs.Bytes += merged.bytes
	fs.Partitions = merged.parts // shared with the next calls until a unit stores a new snapshot: read only
	if len(still) > 0 || srcDown || withGroups {
		// Changed below (or handed to the caller of Status): its own copy.
		fs.Partitions = append(make([]PartitionStatus, 0, len(merged.parts)+len(still)), merged.parts...)
		fs.Partitions = append(fs.Partitions, still...)
	}
	var firstFailed *PartitionStatus
	for i, ps := range fs.Partitions {
		fs.Lag += ps.Lag
		if ps.LagUnknown {
			fs.LagUnknown = true
		}
		if ps.State == StateFailed {
			fs.FailedPartitions++
			if firstFailed == nil || ps.Topic < firstFailed.Topic || (ps.Topic == firstFailed.Topic && ps.Partition < firstFailed.Partition) {
				firstFailed = &fs.Partitions[i]
			}
		}
	}
	if firstFailed != nil && fs.Error == "" {
		fs.Error = fmt.Sprintf("%d partition(s) FAILED (those with next_retry restart by themselves; restart the others with POST /connectors/<flow>/restart?onlyFailed=true or Mirror.RestartFailed); first: %s[%d]: %s",
			fs.FailedPartitions, firstFailed.Topic, firstFailed.Partition, firstFailed.Error)
	}
	for _, te := range fs.TopicErrors {
		fs.Lag += max(te.Lag, 0)
	}
	if single {
		unassigned = notOwned(unassigned, fs.Partitions)
		fs.UnassignedPartitions = unassigned
		for _, p := range unassigned {
			fs.Lag += p.Lag
			fs.LagUnknown = fs.LagUnknown || p.LagUnknown
		}
	}
	if !started && !f.cfg.Disabled {
		// Not started yet: the lag of the records waiting, if known.
		fs.Lag, fs.LagUnknown = 0, true
		if sl != nil {
			fs.Lag, fs.LagUnknown = sl.lag, !sl.known
		}
	}
	if srcDown {
		// The source's end offsets are unknown: its partitions' lag is a
		// lower bound at best.
		fs.LagUnknown = true
		for i := range fs.Partitions {
			fs.Partitions[i].LagUnknown = true
		}
	}
	if fs.HeartbeatError != "" {
		fs.HeartbeatErrorSince = hbSince
	}
	if fs.Error == "" && fs.HeartbeatError != "" && (fs.State == StateRunning || fs.State == StateDisabled) {
		fs.Error = fmt.Sprintf("heartbeats failing since %s: %s", hbSince.UTC().Format(time.RFC3339), fs.HeartbeatError)
	}
	if fs.State == StateRunning && fs.Error == "" && len(fs.TopicErrors) > 0 {
		fs.Error = topicErrSummary(fs.TopicErrors)
	}
	if fs.State == StateRunning && fs.Error == "" && fs.ACLSyncError != "" {
		fs.Error = fmt.Sprintf("topic ACL sync failing since %s: %s", aclSince.UTC().Format(time.RFC3339), fs.ACLSyncError)
	}
	if fs.State == StateRunning && fs.Error == "" && fs.OffsetSyncError != "" {
		fs.Error = fmt.Sprintf("offset syncs failing since %s: %s", fs.OffsetSyncErrorSince.UTC().Format(time.RFC3339), fs.OffsetSyncError)
	}
	if len(still) > 0 {
		slices.SortFunc(fs.Partitions, comparePartitions)
	}
	if groups != nil && single && withGroups {
		fs.Groups = groups()
	}
	return fs
}

// auditMessages are the log messages of what an operator asked (target
// states, restarts): never rate-limited, so that each is logged when it
// happens, in order (a new user's finding: a resume was logged 5 s late
// as "repeated=1 in_last=30s", and a member's last "written" line said
// PAUSED while the flow was RUNNING).
var auditMessages = []string{"target state written", "target state applied", "target state at start",
	"restart request read from the status topic", "restart of failed partitions requested of every member"}

// comparePartitions orders partition statuses by source topic, then
// partition.
func comparePartitions(a, b PartitionStatus) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// mergedUnits is the units' partition statuses merged and sorted
// (comparePartitions), with their counters' sums, as of the snapshots
// each unit had stored (snaps, in the order of units).
type mergedUnits struct {
	units          []*unit
	snaps          []*[]PartitionStatus
	parts          []PartitionStatus // read only: shared by every statusOf until a snapshot changes
	records, bytes int64
}

// notOwned returns the partitions of unassigned that are not in own,
// filtered in place: unassigned must be the caller's own copy (statusOf
// copies f.unassigned under f.mu). f.unassigned lists the slots nobody owned when the status
// topic was last read, every status interval: a slot this member was
// given since has its partitions in own, and listed twice they counted
// their lag twice and made the Prometheus scrape fail on duplicate
// series.
func notOwned(unassigned, own []PartitionStatus) []PartitionStatus {
	if len(unassigned) == 0 || len(own) == 0 {
		return unassigned
	}
	mine := make(map[tp]bool, len(own))
	for _, p := range own {
		mine[tp{p.Topic, p.Partition}] = true
	}
	out := unassigned[:0]
	for _, p := range unassigned {
		if !mine[tp{p.Topic, p.Partition}] {
			out = append(out, p)
		}
	}
	return out
}

// mergedPartitions returns the merged statuses of units' stored snapshots,
// the last result again while every unit still holds the snapshot it was
// built from (a snapshot is never changed once stored: a new one replaces
// it). An idle member's status, gathered every status interval, then costs
// nothing per partition (issue 22: sorting every partition every 5 s was
// a tenth of an idle member's CPU at 6 000 partitions).
func (f *flow) mergedPartitions(units []*unit) *mergedUnits {
	snaps := make([]*[]PartitionStatus, len(units))
	for i, u := range units {
		snaps[i] = u.status.Load()
	}
	f.mergeMu.Lock()
	defer f.mergeMu.Unlock()
	if m := f.merged; m != nil && slices.Equal(m.units, units) && slices.Equal(m.snaps, snaps) {
		return m
	}
	m := &mergedUnits{units: units, snaps: snaps}
	n := 0
	for _, st := range snaps {
		if st != nil {
			n += len(*st)
		}
	}
	m.parts = make([]PartitionStatus, 0, n)
	for _, st := range snaps {
		if st != nil {
			m.parts = append(m.parts, *st...)
		}
	}
	for _, ps := range m.parts {
		m.records += ps.Records
		m.bytes += ps.Bytes
	}
	slices.SortFunc(m.parts, comparePartitions)
	f.merged = m
	return m
}

// RestartFailed restarts this member's FAILED partitions of flow
// ("source->target", as [FlowStatus.Name]): every topic when topic is "",
// else source topic topic, and every partition of it when partition is -1,
// else that one. It returns how many FAILED partitions it asked to
// restart; the restart itself happens asynchronously, on the partition's
// unit of work (below). A topic or partition that matches nothing (an
// unknown one, a remote topic name instead of the source's) returns 0
// and no error. It is Kafka Connect's POST
// /connectors/<name>/restart?onlyFailed=true (KIP-745), per partition.
//
// A restarted partition resumes after its last record the target
// acknowledged (exactly once: after its last committed resume point),
// once every record still in flight for it came back: nothing is lost or
// reordered. A partition stopped by a source gap (FlowConfig.OnGap
// GapStop) resumes at the source's log start: the restart accepts the
// loss. Every other produce error that is not transient also restarts
// automatically with backoff ([PartitionStatus.NextRetry]), except an
// error about the record itself (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE,
// INVALID_RECORD, CORRUPT_MESSAGE, INVALID_TIMESTAMP,
// UNSUPPORTED_FOR_MESSAGE_FORMAT), which waits for this call, after the
// target's configuration was fixed.
//
// Units of work run per slot and a member runs only its own slots: the
// call acts on the partitions this process replicates (FlowStatus.Member);
// [Mirror.RestartFailedInCluster] restarts those of every member. It returns an error naming the
// flows when flow is unknown, or when partition is below -1 or set without
// a topic. The restart itself is asynchronous: [Mirror.Status] shows the
// partition RUNNING again once it happened (normally within milliseconds; up
// to a second on a unit of thousands of partitions).
func (m *Mirror) RestartFailed(flow, topic string, partition int32) (int, error) {
	f, err := m.restartTarget("RestartFailed", flow, topic, partition)
	if err != nil {
		return 0, err
	}
	return f.restartFailed(-1, topic, partition), nil
}

// RestartFailedInCluster restarts the FAILED partitions of flow matching
// topic and partition on every member of the flow, not only this one: it
// restarts this member's as [Mirror.RestartFailed] does and returns how
// many, then writes a restart request to the flow's status topic
// (mm2-kmirror-status.<source>.internal on the target, key
// "restart-request"), which every other running member applies to its own
// FAILED partitions as soon as it reads it (normally within a second;
// [Mirror.ClusterStatus] shows them RUNNING again once their members
// published). It is how Kafka Connect's distributed workers serve POST
// /connectors/<name>/restart?onlyFailed=true (KIP-745) sent to any
// worker: the request goes through a topic every worker reads. by says
// who asks (empty: this Mirror's worker id, see [WithWorkerID]) and is
// kept in the record and the members' logs.
//
// Each member applies a request once, and only one written after it
// started (a member that starts later has no partition that failed before
// the request). Members of releases before this call ignore the record.
// Errors: those of RestartFailed (nothing restarted, nothing written), or
// the target not acknowledging the request before ctx ends, in which case
// this member's partitions were restarted (the count is returned) and the
// other members' may not have been.
func (m *Mirror) RestartFailedInCluster(ctx context.Context, flow, topic string, partition int32, by string) (int, error) {
	const op = "RestartFailedInCluster"
	f, err := m.restartTarget(op, flow, topic, partition)
	if err != nil {
		return 0, err
	}
	return f.restartInCluster(ctx, op, -1, topic, partition, by)
}

// RestartTaskInCluster restarts the FAILED partitions of task (slot) task
// of flow, on whichever member owns it: Kafka Connect's POST
// /connectors/<name>/tasks/<task>/restart, a task being one of the flow's
// tasks.max slots ([SlotStatus.Slot]). Like [Mirror.RestartFailedInCluster],
// it restarts them here if this member owns the slot and writes a restart
// request (with the slot) to the flow's status topic for the others, and
// returns how many it restarted here. Unlike Connect it never restarts a
// RUNNING partition: a slot is not a process of its own. Errors: an unknown
// flow or a negative task (nothing restarted, nothing written), or the
// request not acknowledged before ctx ends. A task at or above the flow's
// number of slots is not an error: like an unknown topic for
// [Mirror.RestartFailed], it matches no partition, so the request is
// written and nothing restarts anywhere (0, nil). Check task against
// [ClusterFlowStatus.Tasks] first, as the runner does (404 for an unknown
// task, as Connect answers).
func (m *Mirror) RestartTaskInCluster(ctx context.Context, flow string, task int32, by string) (int, error) {
	const op = "RestartTaskInCluster"
	if task < 0 {
		return 0, fmt.Errorf("mirror: %s: task %d: tasks are numbered from 0 (the flow's slots)", op, task)
	}
	f, err := m.restartTarget(op, flow, "", -1)
	if err != nil {
		return 0, err
	}
	return f.restartInCluster(ctx, op, task, "", -1, by)
}

// restartInCluster restarts this member's FAILED partitions of slot (-1:
// every slot) matching topic and partition, then writes the restart
// request for the other members (op names the caller in errors).
func (f *flow) restartInCluster(ctx context.Context, op string, slot int32, topic string, partition int32, by string) (int, error) {
	n := f.restartFailed(slot, topic, partition)
	if by == "" {
		by = f.workerID
	}
	rec := statustopic.RestartRecord{Flow: f.name, Topic: topic, Partition: partition, At: time.Now().UTC(), By: by, FromMember: f.selfID}
	if slot >= 0 {
		rec.Slot = &slot
	}
	r, err := statustopic.RestartRecordOf(f.cfg.Source, rec)
	if err != nil {
		return n, fmt.Errorf("mirror: %s: %w", op, err)
	}
	err = f.writeStatusRecord(ctx, func(cl *kgo.Client) error {
		if err := kclient.ProduceWait(ctx, cl, r); err != nil {
			return fmt.Errorf("writing the restart request to %s: %w", f.statusTopic, err)
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("mirror: %s: this member restarted %d partition(s); the other members may not have been asked (the restart request was not acknowledged): %w", op, n, err)
	}
	f.log.Info("restart of failed partitions requested of every member", "slot", slot, "topic", topic, "partition", partition, "by", by, "restarted_here", n)
	return n, nil
}

// restartTarget checks RestartFailed's arguments for op and returns the
// flow named flow.
func (m *Mirror) restartTarget(op, flow, topic string, partition int32) (*flow, error) {
	if partition < -1 {
		return nil, fmt.Errorf("mirror: %s: partition %d: use -1 for every partition of the topic, or a partition number", op, partition)
	}
	if partition >= 0 && topic == "" {
		return nil, fmt.Errorf("mirror: %s: partition %d given without a topic: name the source topic, or use -1", op, partition)
	}
	return m.flowNamed(op, flow)
}

// restartFailed asks this member's units of the flow (of slot slot only,
// unless it is -1) to restart their FAILED partitions matching topic ("":
// all) and partition (-1: all) and returns how many they restart.
func (f *flow) restartFailed(slot int32, topic string, partition int32) int {
	f.unitsMu.Lock()
	units := make([]*unit, 0, len(f.units))
	for k, u := range f.units {
		if slot < 0 || k == slot {
			units = append(units, u)
		}
	}
	f.unitsMu.Unlock()
	n := 0
	for _, u := range units {
		n += u.requestRestart(topic, partition)
	}
	if n > 0 {
		f.log.Info("failed partitions restart requested", "topic", topic, "partition", partition, "count", n)
	}
	return n
}

// checkReplicationFactors refuses a replication factor below -1: the
// broker refuses every topic created with one (INVALID_REPLICATION_FACTOR,
// naming no setting), as the properties loader refuses the value. 0 means
// -1, the broker default.
func checkReplicationFactors(fc FlowConfig) *ConfigError {
	name := fc.Name()
	for _, r := range []struct {
		key, field string
		rf         int16
	}{
		{"replication.factor", "ReplicationFactor", fc.ReplicationFactor},
		{"offset-syncs.topic.replication.factor", "OffsetSyncsTopicReplicationFactor", fc.OffsetSyncsTopicReplicationFactor},
		{"checkpoints.topic.replication.factor", "CheckpointsTopicReplicationFactor", fc.CheckpointsTopicReplicationFactor},
		{"heartbeats.topic.replication.factor", "HeartbeatsTopicReplicationFactor", fc.HeartbeatsTopicReplicationFactor},
		{"offset.storage.replication.factor", "OffsetStorageReplicationFactor", fc.OffsetStorageReplicationFactor},
	} {
		if r.rf < -1 {
			return &ConfigError{Key: name + "." + r.key, Value: fmt.Sprint(r.rf), Reason: "FlowConfig." + r.field + " must be positive, or -1 for the broker default (0 means -1)"}
		}
	}
	return nil
}

// checkDurations refuses a negative FlowConfig duration (but
// RefreshGroupsInterval's, which means listing the groups once), naming
// the field that turns the task off where MM2 turns it off with a
// negative interval (what the properties loader sets for one: a negative
// Go duration meant the default, and a user porting -1 kept the task on),
// and any duration above zero and below a millisecond: no MM2 key gives
// one (they count seconds or milliseconds), and such an interval
// makes the loop it paces tick without pause. It is what a user gets who
// writes the MM2 value itself, EmitCheckpointsInterval: 60 for
// emit.checkpoints.interval.seconds=60. It returns one error per bad
// duration, in the order of the fields below.
func checkDurations(fc FlowConfig) []*ConfigError {
	name := fc.Name()
	var errs []*ConfigError
	for _, d := range []struct {
		key      string
		field    string // the FlowConfig field
		unit     string // what the MM2 value counts
		v        time.Duration
		negative bool   // a negative value is refused
		disable  string // the FlowConfig field that turns the task off, if any ("!F": leaving F false does)
	}{
		{name + ".session.timeout.ms", "SessionTimeout", "time.Millisecond", fc.SessionTimeout, true, ""},
		{name + ".heartbeat.interval.ms", "HeartbeatInterval", "time.Millisecond", fc.HeartbeatInterval, true, ""},
		{name + ".rebalance.timeout.ms", "RebalanceTimeout", "time.Millisecond", fc.RebalanceTimeout, true, ""},
		{name + ".offset.flush.interval.ms", "OffsetFlushInterval", "time.Millisecond", fc.OffsetFlushInterval, true, ""},
		{name + ".admin.timeout.ms", "AdminTimeout", "time.Millisecond", fc.AdminTimeout, true, ""},
		{name + ".transaction.boundary.interval.ms", "TransactionInterval", "time.Millisecond", fc.TransactionInterval, true, ""},
		{name + ".refresh.topics.interval.seconds", "RefreshTopicsInterval", "time.Second", fc.RefreshTopicsInterval, true, "DisableRefreshTopics"},
		{name + ".sync.topic.configs.interval.seconds", "SyncTopicConfigsInterval", "time.Second", fc.SyncTopicConfigsInterval, true, "DisableTopicConfigSync"},
		{name + ".sync.topic.acls.interval.seconds", "SyncTopicACLsInterval", "time.Second", fc.SyncTopicACLsInterval, true, "DisableTopicACLSync"},
		{name + ".emit.checkpoints.interval.seconds", "EmitCheckpointsInterval", "time.Second", fc.EmitCheckpointsInterval, true, "DisableCheckpoints"},
		{name + ".sync.group.offsets.interval.seconds", "SyncGroupOffsetsInterval", "time.Second", fc.SyncGroupOffsetsInterval, true, "!SyncGroupOffsets"},
		{name + ".refresh.groups.interval.seconds", "RefreshGroupsInterval", "time.Second", fc.RefreshGroupsInterval, false, ""},
		{name + ".emit.heartbeats.interval.seconds", "EmitHeartbeatsInterval", "time.Second", fc.EmitHeartbeatsInterval, true, "DisableHeartbeats"},
		{"FlowConfig.OpenTransactionAfter", "OpenTransactionAfter", "time.Second", fc.OpenTransactionAfter, true, ""},
	} {
		switch {
		case d.v < 0 && d.negative:
			reason := "FlowConfig." + d.field + " must not be negative (0 means the default)"
			switch {
			case strings.HasPrefix(d.disable, "!"):
				reason += "; leave FlowConfig." + d.disable[1:] + " false to turn the task off (MM2's negative interval)"
			case d.disable != "":
				reason += "; set FlowConfig." + d.disable + " to turn the task off (MM2's negative interval)"
			}
			errs = append(errs, &ConfigError{Key: d.key, Value: d.v.String(), Reason: reason})
		case d.v > 0 && d.v < time.Millisecond:
			errs = append(errs, &ConfigError{Key: d.key, Value: d.v.String(), Reason: fmt.Sprintf(
				"below a millisecond: FlowConfig.%s is a time.Duration, counted in nanoseconds; for the MM2 value %d write %d * %s (0 means the default)",
				d.field, int64(d.v), int64(d.v), d.unit)})
		}
	}
	return errs
}
