// Package verify compares replicated topics with their source topics, by
// content, partition by partition: the check behind `kmirror verify`, the
// tests and the fault soak.
//
// # Model of a correct copy
//
// The source partition is read with read_committed: records of aborted
// transactions and transaction markers are not expected on the target
// (markers occupy offsets, so source offsets have holes; so do compacted
// topics). A target partition is a correct at-least-once copy when it is a
// concatenation of runs of that record sequence, each run starting at or
// before the end of what was copied before it: a mirror that crashes
// resumes from its last stored position and copies some records again
// (replays). The target is read with read_committed too.
//
// Records are compared by key, value, headers and timestamp. Header keys
// in [Config.IgnoreHeaders] ([ProvenanceHeader] by default, the header a
// mirror adds to record the clusters a record passed through) are left out
// on both sides. Timestamps are not compared when the remote topic has
// message.timestamp.type=LogAppendTime (the target broker restamps every
// record); the topic report says so.
//
// Source records that kmirror's provenance check (provhdr.Check, the one
// the engine applies) does not copy are not expected on the target: their
// kmirror-provenance header lists the target's cluster ID (with the
// identity policy both ways, the flow back copied them from the target) or
// the source's. They are counted ([PartitionReport.ProvenanceSkipped]),
// not compared, and a target record they copy is the target's own
// ([PartitionReport.TargetOriginals]), not a copy.
//
// Every target record is classified against the source records read:
// the first copy of a source record (in order, or out of order when it
// fills a hole left behind copies of later records), a duplicate (a replay:
// [PartitionReport.Replays] says at which target offset each replay starts
// and from which source offset), altered (it stands where a source record
// belongs and differs from it in some field, named), or unexpected. A run
// of target records that resembled the copy expected next but is followed
// by that exact copy stood between two copies (records an application
// wrote into the remote topic): they are unexpected, not alterations, and
// the copy after them is no duplicate. Source
// records never found are missing, reported as offset ranges; records the
// other side deleted by retention are reported as such, not as missing.
//
// # Memory
//
// Full records are never kept: each is reduced to hashes of its key, value
// and headers plus its timestamp (about 100 bytes with the index). Both
// sides are streamed; per partition at most [Config.MaxSkip] source records
// are kept ahead of the newest one copied, and [Config.MaxReplay] behind
// it, so memory is bounded by those two numbers times [Config.Parallel],
// whatever the size of the topic. A replay that starts more than MaxReplay
// records behind the newest copy, or a gap of more than MaxSkip records,
// is reported as unexpected target records (and missing source records)
// instead of duplicates (or a gap).
//
// # Windows
//
// [Config.Last] and [Config.Since] bound the comparison to the newest
// records of each partition. The target is then read from the offset of
// the window's first timestamp (ListOffsets by time), less MaxReplay
// records, and the source from MaxReplay records (at most the window's
// size) before the window, so replays that reach back before the window
// are recognized; target records before the first copy of a window
// record that copy no record read (older copies, and replays that happened
// before the window and reached back further than the records read) are
// counted as lead-in ([PartitionReport.TargetLeadIn]), not as errors.
//
// With [Config.CatchUp] on a live mirror, the target keeps growing while
// verify waits: the source is read again past the window as far as the
// newest copies need, so copies of records produced after the run started
// are recognized (TargetOutsideWindow), and the wait ends as soon as every
// window record is copied.
//
// # Compacted topics
//
// verify is meant for topics with cleanup.policy=delete. On a compacted
// source the comparison covers the records the source still has; the
// target's copies of records compaction removed since are counted
// ([PartitionReport.CompactedOnSource]), not unexpected. On a
// compacted target, records compaction removed are reported missing; the
// topic report carries a note.
package verify

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/provhdr"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/policy"
)

// ProvenanceHeader is the header key kmirror adds to every replicated
// record (the clusters the record passed through). It is left out of the
// comparison by default ([Config.IgnoreHeaders]).
const ProvenanceHeader = "kmirror-provenance"

// Defaults of [Config].
const (
	// DefaultMaxReplay is how far back (in source records) a replay may
	// start behind the newest record copied.
	DefaultMaxReplay = 100_000
	// DefaultMaxSkip is how far ahead (in source records) the comparison
	// looks for a target record that is not the next one expected.
	DefaultMaxSkip = 50_000
	// DefaultParallel is how many partitions are compared at once.
	DefaultParallel = 4
	// DefaultMaxDetails bounds each list of a partition report.
	DefaultMaxDetails = 100
	// DefaultIdleTimeout bounds how long a read may go without any record
	// before the end offset is reached.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultAdminTimeout bounds each metadata or offset listing.
	DefaultAdminTimeout = 30 * time.Second
	// DefaultProgressInterval is how often Config.Progress is called.
	DefaultProgressInterval = 10 * time.Second
)

// Cluster says how to reach one cluster.
type Cluster struct {
	// Alias is the cluster alias (MM2 `clusters` entry); the source alias
	// names remote topics through the replication policy.
	Alias string
	// Opts apply to every client: at least kgo.SeedBrokers; TLS, SASL.
	Opts []kgo.Opt
	// Consumer options apply to the readers, after Opts (the isolation
	// level is forced to read_committed, fetch sizes to 1 MiB).
	Consumer []kgo.Opt
	// Admin options apply to the metadata and offset requests, after Opts.
	Admin []kgo.Opt
}

// Config says what to compare. Source and Target are required; every
// other zero field means its default.
type Config struct {
	Source, Target Cluster
	// Policy names remote topics (replication.policy.class); nil means
	// policy.Default with separator ".", so topic t of source alias A is
	// compared with A.t on the target.
	Policy policy.ReplicationPolicy
	// Topics are the source topics to compare; nil means every source
	// topic Select accepts.
	Topics []string
	// Select chooses source topics when Topics is nil. nil means every
	// topic that the policy does not call internal, that is not a
	// heartbeats topic and that did not come from the target (a cycle).
	Select func(topic string) bool
	// Last bounds the comparison to the last Last source records (offsets)
	// of each partition; 0 compares whole partitions. At most one of Last
	// and Since may be set.
	Last int64
	// Since bounds the comparison to source records from the first one
	// with a timestamp at or after Since (ListOffsets by time).
	Since time.Time
	// ExactlyOnce makes any duplicate a mismatch ([Report.Mismatch]).
	ExactlyOnce bool
	// IgnoreHeaders are header keys left out of the comparison on both
	// sides; nil means [ProvenanceHeader]; an empty non-nil slice ignores
	// none.
	IgnoreHeaders []string
	// MaxReplay and MaxSkip bound the source records kept per partition
	// (see the package documentation); 0 means DefaultMaxReplay and
	// DefaultMaxSkip.
	MaxReplay, MaxSkip int64
	// Parallel is how many partitions are compared at once; 0 means
	// DefaultParallel. Each uses two clients.
	Parallel int
	// MaxDetails bounds each list of a partition report (missing ranges,
	// replays, alterations...); 0 means DefaultMaxDetails.
	MaxDetails int
	// CatchUp is how long a partition waits, when the target is read to
	// its end but records of the window are still missing after the newest
	// copy, for the mirror to copy them (the target's end is listed again
	// every 500 ms). 0 does not wait.
	CatchUp time.Duration
	// IdleTimeout bounds a read without any record before its end offset;
	// 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// AdminTimeout bounds each listing; 0 means DefaultAdminTimeout.
	AdminTimeout time.Duration
	// Progress, when set, is called every ProgressInterval (0 means
	// DefaultProgressInterval) from a goroutine of Run, and once at the
	// end.
	Progress         func(Progress)
	ProgressInterval time.Duration
}

// Progress is a snapshot of a running comparison.
type Progress struct {
	Elapsed time.Duration
	// SourceRecords and TargetRecords count the records read so far.
	SourceRecords, TargetRecords int64
	// Estimate is the number of records expected to be read on both sides
	// (offset spans; transaction markers and compaction make it high). In
	// the last snapshot of a run that was not interrupted it is the number
	// read (100%).
	Estimate int64
	// Partitions and PartitionsDone count the partitions to compare and
	// those compared.
	Partitions, PartitionsDone int
}

// Rate returns the records read per second so far.
func (p Progress) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.SourceRecords+p.TargetRecords) / p.Elapsed.Seconds()
}

// ETA estimates the time left (0 when unknown).
func (p Progress) ETA() time.Duration {
	done := p.SourceRecords + p.TargetRecords
	rate := p.Rate()
	if rate <= 0 || p.Estimate <= done {
		return 0
	}
	return time.Duration(float64(p.Estimate-done) / rate * float64(time.Second))
}

// ConfigError is a bad Config field.
type ConfigError struct {
	Field  string // the Config field, e.g. "Last"
	Reason string // what is wrong and what to write instead
}

// Error returns "verify: <field>: <reason>".
func (e *ConfigError) Error() string { return fmt.Sprintf("verify: %s: %s", e.Field, e.Reason) }

// NoTopicsError is returned by [Run] when [Config.Select] (or the default
// selection) accepts none of the source cluster's topics: a report
// comparing nothing would read as OK. Topics are the source's topics,
// sorted, for a message that says what the selection could have named.
type NoTopicsError struct {
	Source string   // the source cluster alias
	Topics []string // every topic of the source cluster, sorted
}

// Error returns "verify: no topic of source cluster <alias> selected
// (it has N topics)".
func (e *NoTopicsError) Error() string {
	return fmt.Sprintf("verify: no topic of source cluster %s selected (it has %d topics)", e.Source, len(e.Topics))
}

// ClusterError is a cluster that could not be reached or refused a
// metadata request (Op) needed before any comparison.
type ClusterError struct {
	Side  string // "source" or "target"
	Alias string
	Op    string
	Err   error
}

// Error returns "verify: <side> cluster "<alias>": <op>: <cause>", with
// [kclient.Hint]'s hint where the cause says that a broker answered and
// refused the client, or the bootstrap.servers key to check where no
// broker could be dialed.
func (e *ClusterError) Error() string {
	hint := kclient.Hint(e.Alias, e.Err)
	var op *net.OpError
	if hint == "" && errors.As(e.Err, &op) && op.Op == "dial" {
		// "unable to dial: ... connection refused" said what failed, not
		// what to check.
		hint = fmt.Sprintf(" (no broker answers at that address: check %s.bootstrap.servers and that the cluster is up)", e.Alias)
	}
	return fmt.Sprintf("verify: %s cluster %q: %s: %v%s", e.Side, e.Alias, e.Op, e.Err, hint)
}

// Unwrap returns the cause (a dial error, an authorization error, ctx's
// deadline).
func (e *ClusterError) Unwrap() error { return e.Err }

func (c Config) withDefaults() (Config, error) {
	if len(c.Source.Opts) == 0 {
		return c, &ConfigError{Field: "Source.Opts", Reason: "required: at least kgo.SeedBrokers"}
	}
	if len(c.Target.Opts) == 0 {
		return c, &ConfigError{Field: "Target.Opts", Reason: "required: at least kgo.SeedBrokers"}
	}
	if c.Last < 0 {
		return c, &ConfigError{Field: "Last", Reason: fmt.Sprintf("%d: must not be negative (0 compares whole partitions)", c.Last)}
	}
	if c.Last > 0 && !c.Since.IsZero() {
		return c, &ConfigError{Field: "Last", Reason: "set either Last or Since, not both"}
	}
	if c.MaxReplay < 0 || c.MaxSkip < 0 || c.Parallel < 0 || c.MaxDetails < 0 || c.CatchUp < 0 {
		return c, &ConfigError{Field: "MaxReplay/MaxSkip/Parallel/MaxDetails/CatchUp", Reason: "must not be negative"}
	}
	if c.Policy == nil {
		p, err := policy.NewDefault()
		if err != nil {
			return c, err
		}
		c.Policy = p
	}
	if c.IgnoreHeaders == nil {
		c.IgnoreHeaders = []string{ProvenanceHeader}
	}
	c.IgnoreHeaders = slices.Clone(c.IgnoreHeaders)
	slices.Sort(c.IgnoreHeaders)
	c.IgnoreHeaders = slices.Compact(c.IgnoreHeaders)
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxReplay, DefaultMaxReplay)
	def(&c.MaxSkip, DefaultMaxSkip)
	if c.Parallel == 0 {
		c.Parallel = DefaultParallel
	}
	if c.MaxDetails == 0 {
		c.MaxDetails = DefaultMaxDetails
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.AdminTimeout <= 0 {
		c.AdminTimeout = DefaultAdminTimeout
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	return c, nil
}

// verifier is one Run.
type verifier struct {
	cfg            Config
	seed           maphash.Seed
	src, tgt       *kadm.Client
	srcOpts        []kgo.Opt // readers
	tgtOpts        []kgo.Opt
	srcRead        atomic.Int64
	tgtRead        atomic.Int64
	partsDone      atomic.Int64
	windowDescribe string
	// prov is set when both clusters report distinct cluster IDs: source
	// records the engine's provenance check would not copy
	// (provhdr.Check with these IDs) are then not expected on the target.
	prov               bool
	srcID, tgtID       []byte // escaped (provhdr.AppendEscaped)
	rawSrcID, rawTgtID []byte
}

type topicPlan struct {
	rep       *TopicReport
	compareTS bool
	// compacted: the source topic is compacted.
	compacted bool
}

type partTask struct {
	tp              *topicPlan
	rep             *PartitionReport
	sLogStart, sEnd int64
	sSince          int64
	tExists         bool
	tLogStart, tEnd int64
	estimate        int64
}

// Run compares the selected source topics with their remote topics and
// returns the report. It returns an error only when the comparison could
// not start: a *[ConfigError], a *[ClusterError] (a cluster unreachable,
// a listing refused), or ctx's error; problems of single topics or
// partitions are in the report ([Report.Incomplete]). When ctx ends during
// the comparison, Run returns the partial report with ctx's error.
//
// Run is safe to call concurrently; Config.Progress is called from one
// goroutine at a time.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	v := &verifier{cfg: c, seed: maphash.MakeSeed()}
	rep := &Report{
		Source: c.Source.Alias, Target: c.Target.Alias, ExactlyOnce: c.ExactlyOnce,
		IgnoredHeaders: c.IgnoreHeaders, Started: time.Now(),
	}
	switch {
	case c.Last > 0:
		rep.Window = fmt.Sprintf("last %d records per partition", c.Last)
	case !c.Since.IsZero():
		rep.Window = "records since " + c.Since.UTC().Format(time.RFC3339)
	default:
		rep.Window = "whole partitions"
	}
	srcCl, err := kclient.New(append(slices.Clone(c.Source.Opts), c.Source.Admin...)...)
	if err != nil {
		return nil, &ConfigError{Field: "Source", Reason: err.Error()}
	}
	defer srcCl.Close()
	tgtCl, err := kclient.New(append(slices.Clone(c.Target.Opts), c.Target.Admin...)...)
	if err != nil {
		return nil, &ConfigError{Field: "Target", Reason: err.Error()}
	}
	defer tgtCl.Close()
	v.src, v.tgt = kadm.NewClient(srcCl), kadm.NewClient(tgtCl)
	v.srcOpts = append(slices.Clone(c.Source.Opts), c.Source.Consumer...)
	v.tgtOpts = append(slices.Clone(c.Target.Opts), c.Target.Consumer...)

	tasks, err := v.plan(ctx, rep)
	if err != nil {
		return nil, err
	}
	rep.FlowState = v.flowState(ctx)
	var estimate int64
	for _, t := range tasks {
		estimate += t.estimate
	}
	progress := func() Progress {
		return Progress{
			Elapsed: time.Since(rep.Started), SourceRecords: v.srcRead.Load(), TargetRecords: v.tgtRead.Load(),
			Estimate: estimate, Partitions: len(tasks), PartitionsDone: int(v.partsDone.Load()),
		}
	}

	var wg sync.WaitGroup
	done := make(chan struct{})
	if c.Progress != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(c.ProgressInterval)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					c.Progress(progress())
				}
			}
		}()
	}
	work := make(chan *partTask)
	workers := min(c.Parallel, len(tasks))
	var ww sync.WaitGroup
	for range workers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for t := range work {
				v.comparePartition(ctx, t)
				v.partsDone.Add(1)
			}
		}()
	}
	for _, t := range tasks {
		work <- t
	}
	close(work)
	ww.Wait()
	close(done)
	wg.Wait()
	if c.Progress != nil {
		last := progress()
		if ctx.Err() == nil {
			// Every record was read: the estimate (offset spans) counted
			// transaction markers, aborted records and compaction's holes,
			// so the last line said "80%" of a complete run.
			last.Estimate = last.SourceRecords + last.TargetRecords
		}
		c.Progress(last)
	}
	rep.Elapsed = time.Since(rep.Started)
	rep.total()
	return rep, ctx.Err()
}

// flowState reads the flow's target state from its status topic on the
// target (nil: none recorded). A failure to read it is reported in the
// result, never as the comparison's error.
func (v *verifier) flowState(ctx context.Context) *FlowState {
	c := v.cfg
	actx, cancel := context.WithTimeout(ctx, c.AdminTimeout)
	defer cancel()
	rec, found, err := statustopic.ReadTargetState(actx, v.tgtOpts, c.Source.Alias)
	switch {
	case err != nil:
		return &FlowState{Error: err.Error()}
	case !found:
		return nil
	}
	return &FlowState{State: string(rec.State), At: rec.At, By: rec.By, Reason: rec.Reason}
}

// plan lists topics, remote topics, their configs and offsets, and returns
// one task per source partition (pointing into rep).
func (v *verifier) plan(ctx context.Context, rep *Report) ([]*partTask, error) {
	c := v.cfg
	actx, cancel := context.WithTimeout(ctx, c.AdminTimeout)
	defer cancel()
	srcErr := func(op string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &ClusterError{Side: "source", Alias: c.Source.Alias, Op: op, Err: err}
	}
	tgtErr := func(op string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &ClusterError{Side: "target", Alias: c.Target.Alias, Op: op, Err: err}
	}

	// Listed whole (Topics nil), only the topics selected are waited for:
	// another topic without a leader (a broker down) must not hold the run.
	sel := c.Select
	if sel == nil {
		sel = func(t string) bool {
			return !c.Policy.IsHeartbeatsTopic(t) && !policy.NeverReplicated(c.Policy, c.Source.Alias, c.Target.Alias, t)
		}
	}
	var wanted func(string) bool
	if c.Topics == nil {
		wanted = sel
	}
	srcTopics, err := listTopicsSettled(actx, v.src, c.AdminTimeout/3, wanted, c.Topics...)
	if err != nil {
		return nil, srcErr("listing topics", err)
	}
	// The cluster IDs, for the engine's provenance check: a source record
	// that came from the target (active-active with the identity policy)
	// is not copied back, so it is not expected there.
	sm, err := v.src.BrokerMetadata(actx)
	if err != nil {
		return nil, srcErr("reading the cluster ID", err)
	}
	tm, err := v.tgt.BrokerMetadata(actx)
	if err != nil {
		return nil, tgtErr("reading the cluster ID", err)
	}
	if sm.Cluster != "" && tm.Cluster != "" && sm.Cluster != tm.Cluster {
		v.prov = true
		v.srcID, v.tgtID = provhdr.AppendEscaped(nil, sm.Cluster), provhdr.AppendEscaped(nil, tm.Cluster)
		v.rawSrcID, v.rawTgtID = []byte(sm.Cluster), []byte(tm.Cluster)
	}
	var names []string
	if c.Topics != nil {
		names = slices.Clone(c.Topics)
		slices.Sort(names)
		names = slices.Compact(names)
	} else {
		for _, t := range srcTopics.Names() {
			if sel(t) {
				names = append(names, t)
			}
		}
		sort.Strings(names)
		if len(names) == 0 {
			// A comparison of nothing would pass: a misspelt selection
			// must not gate a fail-over drill as OK.
			all := srcTopics.Names()
			sort.Strings(all)
			return nil, &NoTopicsError{Source: c.Source.Alias, Topics: all}
		}
	}
	remotes := make([]string, len(names))
	for i, t := range names {
		remotes[i] = c.Policy.FormatRemoteTopic(c.Source.Alias, t)
	}
	var tgtTopics kadm.TopicDetails
	if len(remotes) > 0 {
		if tgtTopics, err = listTopicsSettled(actx, v.tgt, c.AdminTimeout/3, nil, remotes...); err != nil {
			return nil, tgtErr("listing topics", err)
		}
	}

	var existing, existingRemotes []string
	plans := make([]*topicPlan, len(names))
	rep.Topics = make([]TopicReport, len(names))
	for i, t := range names {
		tr := &rep.Topics[i]
		// Partitions is a list in JSON also for a topic not compared (not
		// null: `jq '.topics[].partitions[]'` failed on it).
		*tr = TopicReport{Topic: t, Remote: remotes[i], TimestampsCompared: true, Partitions: []PartitionReport{}}
		plans[i] = &topicPlan{rep: tr, compareTS: true}
		sd, ok := srcTopics[t]
		switch {
		case !ok || errors.Is(sd.Err, kerr.UnknownTopicOrPartition):
			tr.Error = "the source topic does not exist"
			continue
		case sd.Err != nil:
			tr.Error = fmt.Sprintf("describing the source topic: %v", sd.Err)
			continue
		}
		existing = append(existing, t)
		if td, ok := tgtTopics[remotes[i]]; ok && td.Err == nil {
			existingRemotes = append(existingRemotes, remotes[i])
		}
	}
	if len(existing) == 0 {
		return nil, nil
	}

	// Configs: compaction on either side, timestamp type of the target.
	if rcs, err := v.src.DescribeTopicConfigs(actx, existing...); err == nil {
		for _, rc := range rcs {
			if rc.Err == nil && configHas(rc.Configs, "cleanup.policy", "compact") {
				for _, p := range plans {
					if p.rep.Topic == rc.Name {
						p.compacted = true
					}
				}
				v.note(plans, rc.Name, false, "the source topic is compacted (cleanup.policy=compact): records compaction removed are not expected on the target, and their copies there are no difference")
			}
		}
	}
	if len(existingRemotes) > 0 {
		rcs, err := v.tgt.DescribeTopicConfigs(actx, existingRemotes...)
		for _, rc := range rcs {
			if rc.Err != nil {
				v.note(plans, rc.Name, true, fmt.Sprintf("could not read the remote topic's configuration (%v): timestamps compared", rc.Err))
				continue
			}
			if configHas(rc.Configs, "message.timestamp.type", "LogAppendTime") {
				for _, p := range plans {
					if p.rep.Remote == rc.Name {
						p.compareTS = false
						p.rep.TimestampsCompared = false
					}
				}
				v.note(plans, rc.Name, true, "the remote topic has message.timestamp.type=LogAppendTime: the target broker restamps records, so timestamps are not compared")
			}
			if configHas(rc.Configs, "cleanup.policy", "compact") {
				v.note(plans, rc.Name, true, "the remote topic is compacted (cleanup.policy=compact): records compaction removed on the target are reported missing; verify is meant for non-compacted topics")
			}
		}
		if err != nil && len(rcs) == 0 {
			for _, r := range existingRemotes {
				v.note(plans, r, true, fmt.Sprintf("could not read the remote topic's configuration (%v): timestamps compared", err))
			}
		}
	}

	// Offsets.
	sStart, err := v.src.ListStartOffsets(actx, existing...)
	if err != nil && len(sStart) == 0 {
		return nil, srcErr("listing log start offsets", err)
	}
	sEnd, err := v.src.ListCommittedOffsets(actx, existing...)
	if err != nil && len(sEnd) == 0 {
		return nil, srcErr("listing last stable offsets", err)
	}
	var sSince kadm.ListedOffsets
	if !c.Since.IsZero() {
		if sSince, err = v.src.ListOffsetsAfterMilli(actx, c.Since.UnixMilli(), existing...); err != nil && len(sSince) == 0 {
			return nil, srcErr("listing offsets by time", err)
		}
	}
	var tStart, tEnd kadm.ListedOffsets
	if len(existingRemotes) > 0 {
		if tStart, err = v.tgt.ListStartOffsets(actx, existingRemotes...); err != nil && len(tStart) == 0 {
			return nil, tgtErr("listing log start offsets", err)
		}
		if tEnd, err = v.tgt.ListCommittedOffsets(actx, existingRemotes...); err != nil && len(tEnd) == 0 {
			return nil, tgtErr("listing last stable offsets", err)
		}
	}

	var tasks []*partTask
	for _, p := range plans {
		tr := p.rep
		if tr.Error != "" {
			continue
		}
		sd := srcTopics[tr.Topic]
		parts := sd.Partitions.Numbers()
		slices.Sort(parts)
		td, tOK := tgtTopics[tr.Remote]
		if tOK && td.Err != nil && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			// Not a missing topic: a target that could not describe it
			// (still without a leader after the listing's retries) must
			// not report its records missing.
			tr.Error = fmt.Sprintf("describing the remote topic %s: %v", tr.Remote, td.Err)
			continue
		}
		tOK = tOK && td.Err == nil
		switch {
		case !tOK:
			tr.Notes = append(tr.Notes, fmt.Sprintf("the remote topic %s does not exist on the target: every record is missing", tr.Remote))
		case len(td.Partitions) < len(parts):
			tr.Notes = append(tr.Notes, fmt.Sprintf("the remote topic %s has %d partitions, the source %d: records of the partitions it lacks are missing", tr.Remote, len(td.Partitions), len(parts)))
		case len(td.Partitions) > len(parts):
			tr.Notes = append(tr.Notes, fmt.Sprintf("the remote topic %s has %d partitions, the source %d: the extra partitions are not compared", tr.Remote, len(td.Partitions), len(parts)))
		}
		tr.Partitions = make([]PartitionReport, len(parts))
		for i, part := range parts {
			pr := &tr.Partitions[i]
			*pr = PartitionReport{Partition: part, TargetFirstMatch: -1}
			t := &partTask{tp: p, rep: pr, sSince: -1}
			if err := listed(sStart, tr.Topic, part, &t.sLogStart); err != nil {
				pr.Error = "source log start offset: " + err.Error()
				continue
			}
			if err := listed(sEnd, tr.Topic, part, &t.sEnd); err != nil {
				pr.Error = "source last stable offset: " + err.Error()
				continue
			}
			if sSince != nil {
				if err := listed(sSince, tr.Topic, part, &t.sSince); err != nil {
					pr.Error = "source offset by time: " + err.Error()
					continue
				}
			}
			if _, ok := td.Partitions[part]; tOK && ok {
				t.tExists = true
				if err := listed(tStart, tr.Remote, part, &t.tLogStart); err != nil {
					pr.Error = "target log start offset: " + err.Error()
					continue
				}
				if err := listed(tEnd, tr.Remote, part, &t.tEnd); err != nil {
					pr.Error = "target last stable offset: " + err.Error()
					continue
				}
			}
			pr.Source = Side{LogStart: t.sLogStart, End: t.sEnd, From: t.sLogStart, To: t.sLogStart}
			pr.Target = Side{LogStart: t.tLogStart, End: t.tEnd, From: t.tLogStart, To: t.tLogStart}
			// Records to read: in a window, the source from MaxReplay
			// records (at most the window's size) before it, the target
			// from as much before the copy of that point.
			span := t.sEnd - v.windowStart(t)
			t.estimate = span + t.tEnd - t.tLogStart
			if c.Last > 0 || !c.Since.IsZero() {
				m := min(c.MaxReplay, span)
				t.estimate = span + m + min(t.tEnd-t.tLogStart, span+2*m)
			}
			tasks = append(tasks, t)
		}
	}
	return tasks, nil
}

// listTopicsSettled lists topics (every topic when none is named) and
// lists again, every 250 ms for at most wait, while a topic or partition
// has a retriable error (LEADER_NOT_AVAILABLE: a topic just created or
// whose leader is moving), of the topics wanted accepts only when wanted
// is not nil (the others of a whole listing are not used).
// UNKNOWN_TOPIC_OR_PARTITION is an answer, not retried: the topic does
// not exist. The last listing is returned when wait passes or ctx ends
// with errors left (the caller reports them per topic); an error only
// when a listing failed as a whole.
func listTopicsSettled(ctx context.Context, adm *kadm.Client, wait time.Duration, wanted func(string) bool, topics ...string) (kadm.TopicDetails, error) {
	stop := time.Now().Add(wait)
	for {
		tds, err := adm.ListTopics(ctx, topics...)
		if err != nil || !unsettled(tds, wanted) || time.Now().After(stop) {
			return tds, err
		}
		select {
		case <-ctx.Done():
			return tds, nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// unsettled reports whether a listing has a retriable topic or partition
// error other than UNKNOWN_TOPIC_OR_PARTITION, in a topic wanted accepts
// (any topic when wanted is nil).
func unsettled(tds kadm.TopicDetails, wanted func(string) bool) bool {
	retry := func(err error) bool {
		return err != nil && kerr.IsRetriable(err) && !errors.Is(err, kerr.UnknownTopicOrPartition)
	}
	for name, td := range tds {
		if wanted != nil && !wanted(name) {
			continue
		}
		if retry(td.Err) {
			return true
		}
		for _, pd := range td.Partitions {
			if retry(pd.Err) {
				return true
			}
		}
	}
	return false
}

func (v *verifier) note(plans []*topicPlan, name string, remote bool, msg string) {
	for _, p := range plans {
		if (!remote && p.rep.Topic == name) || (remote && p.rep.Remote == name) {
			p.rep.Notes = append(p.rep.Notes, msg)
		}
	}
}

func configHas(cs []kadm.Config, key, want string) bool {
	for _, c := range cs {
		if c.Key == key && c.Value != nil {
			for _, v := range strings.Split(*c.Value, ",") {
				if strings.EqualFold(strings.TrimSpace(v), want) {
					return true
				}
			}
		}
	}
	return false
}

func listed(l kadm.ListedOffsets, topic string, part int32, dst *int64) error {
	o, ok := l.Lookup(topic, part)
	if !ok {
		return errors.New("not listed")
	}
	if o.Err != nil {
		return o.Err
	}
	*dst = o.Offset
	return nil
}

// windowStart is the first source offset of the compared window.
func (v *verifier) windowStart(t *partTask) int64 {
	switch {
	case v.cfg.Last > 0:
		return max(t.sLogStart, t.sEnd-v.cfg.Last)
	case !v.cfg.Since.IsZero():
		if t.sSince < 0 {
			return t.sEnd
		}
		return min(max(t.sSince, t.sLogStart), t.sEnd)
	}
	return t.sLogStart
}

// lookupTime returns the first offset of topic[part] with a timestamp at or
// after ms (the end offset when there is none).
func (v *verifier) lookupTime(ctx context.Context, adm *kadm.Client, topic string, part int32, ms int64) (int64, error) {
	actx, cancel := context.WithTimeout(ctx, v.cfg.AdminTimeout)
	defer cancel()
	l, err := adm.ListOffsetsAfterMilli(actx, ms, topic)
	if err != nil && len(l) == 0 {
		return 0, err
	}
	var off int64
	if err := listed(l, topic, part, &off); err != nil {
		return 0, fmt.Errorf("listing offsets of %s[%d] by time: %w", topic, part, err)
	}
	return off, nil
}

// lastStable returns the current last stable offset of topic[part].
func (v *verifier) lastStable(ctx context.Context, adm *kadm.Client, topic string, part int32) (int64, error) {
	actx, cancel := context.WithTimeout(ctx, v.cfg.AdminTimeout)
	defer cancel()
	l, err := adm.ListCommittedOffsets(actx, topic)
	if err != nil && len(l) == 0 {
		return 0, err
	}
	var off int64
	if err := listed(l, topic, part, &off); err != nil {
		return 0, fmt.Errorf("listing the last stable offset of %s[%d]: %w", topic, part, err)
	}
	return off, nil
}

// comparePartition streams one source partition and its remote partition
// through a matcher and fills t.rep.
func (v *verifier) comparePartition(ctx context.Context, t *partTask) {
	r := t.rep
	if err := v.compare(ctx, t); err != nil {
		r.Error = err.Error()
	}
}

func (v *verifier) compare(ctx context.Context, t *partTask) error {
	c := v.cfg
	r := t.rep
	topic, remote, part := t.tp.rep.Topic, t.tp.rep.Remote, r.Partition
	h := newHasher(v.seed, c.IgnoreHeaders)
	window := c.Last > 0 || !c.Since.IsZero()

	sWin := v.windowStart(t)
	ctxStart := sWin
	// margin: how far before the window both sides are read, so that
	// replays reaching back before it are recognized.
	margin := min(c.MaxReplay, t.sEnd-sWin)
	if window {
		ctxStart = max(t.sLogStart, sWin-margin)
	}
	var tr *partReader
	defer func() {
		if tr != nil {
			tr.close()
		}
	}()
	tStart := t.tLogStart
	if t.tExists && !window && t.tLogStart > 0 && t.tEnd > t.tLogStart {
		// The target deleted its oldest records: start the source at the
		// copy of the target's oldest record (found by its provenance
		// offset or its timestamp), less MaxReplay records.
		var err error
		if tr, err = newPartReader(v.tgtOpts, remote, part, t.tLogStart, t.tEnd, c.IdleTimeout, &v.tgtRead, false); err != nil {
			return err
		}
		first, err := tr.peek(ctx)
		if err != nil {
			return err
		}
		// Where the oldest copy's source record is: its provenance
		// offset, or the source offset of its timestamp. Not a timestamp
		// the target broker stamped (LogAppendTime): the copy's time, long
		// after the source record's in a backfill, left out source records
		// whose copies the target holds (a record missing among them passed
		// as OK); unstamped, the source is then read from its start.
		hint, known := int64(0), false
		if first != nil {
			hint, known = v.stampOf(first)
		}
		if first != nil && !known && t.tp.compareTS {
			if hint, err = v.lookupTime(ctx, v.src, topic, part, first.Timestamp.UnixMilli()); err != nil {
				return err
			}
			known = true
		}
		if known {
			if from := min(max(t.sLogStart, hint-c.MaxReplay), t.sEnd); from > sWin {
				r.NotCompared = &Range{From: sWin, To: from - 1}
				sWin, ctxStart = from, from
			}
		}
	}
	// With CatchUp the readers may be extended even when their range is
	// empty at the start (a remote partition the mirror has not written
	// to yet).
	live := c.CatchUp > 0
	sr, err := newPartReader(v.srcOpts, topic, part, ctxStart, t.sEnd, c.IdleTimeout, &v.srcRead, live)
	if err != nil {
		return err
	}
	defer sr.close()
	if t.tExists && tr == nil {
		if window {
			tStart = t.tEnd
			first, err := sr.peek(ctx)
			if err != nil {
				return err
			}
			if first != nil {
				ts := first.Timestamp.UnixMilli()
				if !c.Since.IsZero() {
					ts = min(ts, c.Since.UnixMilli())
				}
				hint, err := v.lookupTime(ctx, v.tgt, remote, part, ts)
				if err != nil {
					return err
				}
				tStart = max(t.tLogStart, min(hint, t.tEnd)-margin)
			}
		}
		if tr, err = newPartReader(v.tgtOpts, remote, part, tStart, t.tEnd, c.IdleTimeout, &v.tgtRead, live); err != nil {
			return err
		}
	}
	r.WindowFrom = sWin
	r.Source.From, r.Source.To = ctxStart, ctxStart
	r.Target.From, r.Target.To = tStart, tStart
	if !t.tExists {
		r.Target = Side{}
	}

	m := newMatcher(matchOpts{
		maxReplay: c.MaxReplay, maxSkip: c.MaxSkip, compareTS: t.tp.compareTS, maxDetails: c.MaxDetails,
		leadIn:    ctxStart > 0,
		truncated: t.tExists && tStart == t.tLogStart && t.tLogStart > 0,
		compacted: t.tp.compacted, from: ctxStart,
	}, r)
	defer m.finishStamps() // what was read, also when the comparison stops early

	// origins counts, by content without the timestamp, the source records
	// the provenance check skipped (at most MaxSkip pending): copies the
	// flow back made of records written on the target, whose originals the
	// target holds among the flow's copies and are no copies themselves.
	origins := map[uint64]int{}
	var pendingOrigins int64
	extended := false
	// feed reads one source record into the matcher; false at the end.
	// With trailing, the read may go past the window's end (once, to the
	// source's current last stable offset, at most MaxSkip records) to
	// recognize copies of records produced after the run started.
	feed := func(trailing bool) (bool, error) {
		rec, err := sr.next(ctx)
		if err != nil {
			return false, err
		}
		if rec == nil && trailing && !extended {
			extended = true
			end, err := v.lastStable(ctx, v.src, topic, part)
			if err != nil {
				return false, err
			}
			if sr.extend(min(end, t.sEnd+c.MaxSkip)) {
				if rec, err = sr.next(ctx); err != nil {
					return false, err
				}
			}
		}
		if rec == nil || (!trailing && rec.Offset >= t.sEnd) {
			return false, nil
		}
		zone := zoneWindow
		switch {
		case rec.Offset < sWin:
			zone = zoneContext
		case rec.Offset >= t.sEnd:
			zone = zoneTrailing
		}
		f := h.fields(rec)
		if v.prov {
			if pv, _ := provhdr.Check(rec.Headers, v.srcID, v.tgtID, v.rawSrcID, v.rawTgtID); pv != provhdr.Pass {
				// The flow does not copy it (it came from the target, or
				// around a loop): not expected on the target.
				if zone == zoneWindow {
					r.ProvenanceSkipped++
				}
				if pv == provhdr.Target && pendingOrigins < c.MaxSkip {
					origins[h.fingerprint(f, false)]++
					pendingOrigins++
				}
				return true, nil
			}
		}
		m.addSource(srcEntry{off: rec.Offset, f: f, fp: h.fingerprint(f, t.tp.compareTS), zone: zone})
		return true, nil
	}

	// windowRead reports whether every window record was read from the
	// source: the reader is at its end, or (extended past the window for
	// copies of newer records, or at transaction markers) its next data
	// record, peeked without keeping it, is past the window.
	windowRead := func() (bool, error) {
		if sr.atEnd() {
			return true, nil
		}
		rec, err := sr.peek(ctx)
		if err != nil {
			return false, err
		}
		return rec == nil || rec.Offset >= t.sEnd, nil
	}

	var deadline time.Time
	for tr != nil {
		rec, err := tr.next(ctx)
		if err != nil {
			return err
		}
		if rec == nil {
			if c.CatchUp <= 0 {
				break
			}
			read, err := windowRead()
			if err != nil {
				return err
			}
			if read && m.caughtUp() {
				break
			}
			if deadline.IsZero() {
				deadline = time.Now().Add(c.CatchUp)
			}
			if time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
			end, err := v.lastStable(ctx, v.tgt, remote, part)
			if err != nil {
				return err
			}
			tr.extend(end)
			// The mirror kept copying while verify waited: the target
			// may now hold copies of source records produced after the
			// source was last extended, so it may be extended again.
			extended = false
			continue
		}
		f := h.fields(rec)
		tg := tgtRec{off: rec.Offset, f: f, fp: h.fingerprint(f, t.tp.compareTS)}
		tg.stamp, tg.stamped = v.stampOf(rec)
		// original reports (and takes) a source record skipped by
		// provenance that copies this target record: the record was
		// written on the target, not copied there.
		original := func() bool {
			if pendingOrigins == 0 {
				return false
			}
			k := h.fingerprint(f, false)
			if origins[k] == 0 {
				return false
			}
			if origins[k]--; origins[k] == 0 {
				delete(origins, k)
			}
			pendingOrigins--
			return true
		}
		isOriginal := false
		for {
			if isOriginal = original(); isOriginal || !m.wants(tg) {
				break
			}
			ok, err := feed(true)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
		}
		if isOriginal {
			r.TargetRecords++
			r.TargetOriginals++
			continue
		}
		m.target(tg)
	}
	if tr != nil {
		r.Target.To = max(tr.end, tStart)
	}
	// Finalize: the rest of the source window, streamed.
	m.drain()
	for {
		ok, err := feed(false)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		m.drain()
	}
	r.Source.To = max(sr.end, ctxStart)
	return nil
}

// stampOf returns the source offset rec's last provenance header carries.
// The offset element is the record's offset in the cluster the value's
// last ID names: when the source's cluster ID is known, an offset of
// another cluster is none (a copy by Apache MM2, which keeps the header
// as it is, of a source record that kmirror had copied from a third
// cluster: its offset there was taken for a source offset, and every such
// copy reported as a stamp disagreement).
func (v *verifier) stampOf(rec *kgo.Record) (int64, bool) {
	var val []byte
	found := false
	for _, h := range rec.Headers {
		if h.Key == ProvenanceHeader {
			val, found = h.Value, true
		}
	}
	if !found {
		return 0, false
	}
	off, ok := provhdr.Offset(val)
	if ok && v.rawSrcID != nil {
		if id, _ := provhdr.LastID(val); id != string(v.rawSrcID) {
			return 0, false
		}
	}
	return off, ok
}
