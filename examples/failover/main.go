// Command failover runs a cross-region disaster-recovery runbook as code on
// two embedded (in-process kfake) clusters, us-east-1 and ap-northeast-2:
//
//  1. An order service produces to orders (6 partitions) on us-east-1; the
//     consumer group orders-consumer processes them and commits; kmirror
//     replicates us-east-1->ap-northeast-2 (us-east-1.orders) with offset
//     syncs and checkpoints every 200 ms.
//  2. us-east-1 fails (the cluster is shut down; its log directory stays).
//  3. Runbook: detect the failure, read the replication lag from
//     mirror.Status, stop the engine, translate the group's offsets with
//     remoteclusterutils.TranslateOffsets on ap-northeast-2, commit them and
//     restart the consumer there with auto.offset.reset=none on
//     us-east-1.orders (plus the local orders topic the producer now writes
//     to). The recovery time (RTO) is measured from the failure to the first
//     record read on ap-northeast-2.
//  4. Fail back: us-east-1 comes back with its data; one engine runs both
//     flows (us-east-1->ap-northeast-2 resumes, ap-northeast-2->us-east-1
//     copies the orders written during the outage as ap-northeast-2.orders);
//     the producer moves back first, the consumer once the reverse flow has
//     checkpointed its final position; its position on orders is translated
//     back with the forward flow's offset runs and syncs
//     (remoteclusterutils.TranslateBack: Apache MM2 cannot do this).
//
// It prints a report (records produced, consumed before the failure, lost,
// read twice, RTO) and exits non-zero if any acknowledged record was never
// consumed.
//
// With -quiet, the order service pauses just before the failure: the
// consumer group catches up, kmirror checkpoints its final position
// (exactly: SafeToSwitch), and the failover re-reads nothing.
//
//	go run ./examples/failover [-rate 2000] [-before 3s] [-quiet 0] [-outage 3s] [-after 1s] [-v]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/policy"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

const (
	east  = "us-east-1"
	seoul = "ap-northeast-2"
	topic = "orders"
	group = "orders-consumer"
)

// config sizes one run.
type config struct {
	Partitions int32         // partitions of orders
	Rate       int           // orders produced per second
	Before     time.Duration // production on us-east-1 before it fails
	Quiet      time.Duration // pause of the order service just before the failure (0: none)
	Outage     time.Duration // time on ap-northeast-2 after the consumer resumed there
	After      time.Duration // production on us-east-1 after fail-back
	Verbose    bool          // log what the engine does (stderr)
}

// report is what a run measured. Counts are of distinct orders unless
// named reads.
type report struct {
	Produced              int // orders acknowledged by a cluster (all phases)
	ProducedBeforeFailure int // acknowledged by us-east-1 before the failure
	ProducedOutage        int // acknowledged by ap-northeast-2
	ProducedAfter         int // acknowledged by us-east-1 after fail-back
	ConsumedBeforeFailure int // processed on us-east-1 before the failure
	NotReplicated         int // acknowledged by us-east-1, not on ap-northeast-2 at the failure (RPO)
	LagAtFailure          int64
	LagUnknownAtFailure   bool // the engine could not list the source's end: read LagAtFailure as a floor
	Consumed              int  // distinct orders processed
	Reads                 int  // records processed, duplicates included
	Duplicates            int  // Reads - Consumed
	DupFailover           int  // reads on ap-northeast-2 of orders already processed
	DupCheckpointed       int  // of them, orders before the group's checkpointed position (translation)
	DupLate               int  // of them, orders processed after the last checkpoint the target got
	DupFailback           int  // reads on us-east-1 after fail-back of orders already processed
	Lost                  int  // acknowledged, never processed
	Detection             time.Duration
	RTO                   time.Duration // failure -> first record read on ap-northeast-2
	FailbackPause         time.Duration // consumer stopped on ap-northeast-2 -> first read on us-east-1
	Total                 time.Duration
}

func main() {
	cfg := config{Partitions: 6}
	flag.IntVar(&cfg.Rate, "rate", 2000, "orders produced per second")
	flag.DurationVar(&cfg.Before, "before", 3*time.Second, "production on us-east-1 before the failure")
	flag.DurationVar(&cfg.Quiet, "quiet", 0, "pause of the order service just before the failure: the consumer group catches up and is checkpointed")
	flag.DurationVar(&cfg.Outage, "outage", 3*time.Second, "time on ap-northeast-2 before fail-back")
	flag.DurationVar(&cfg.After, "after", time.Second, "production on us-east-1 after fail-back")
	flag.BoolVar(&cfg.Verbose, "v", false, "log what the engine does")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
}

// flowConfig is the replication flow src->dst of this runbook: one topic,
// short intervals so that the whole story fits in seconds, and offset syncs
// kept on the target (offset-syncs.topic.location=target, KIP-716) so they
// survive an outage of the source: the engine stops without waiting for a
// dead cluster, and the fail-back translation reads them from the cluster
// that stayed up.
func flowConfig(src, dst string) mirror.FlowConfig {
	return mirror.FlowConfig{
		Source:                         src,
		Target:                         dst,
		Topics:                         []string{topic},
		OffsetSyncsTopicLocationTarget: true,
		OffsetFlushInterval:            200 * time.Millisecond,
		EmitCheckpointsInterval:        200 * time.Millisecond,
		RefreshTopicsInterval:          500 * time.Millisecond,
		EmitHeartbeatsInterval:         500 * time.Millisecond,
		AdminTimeout:                   5 * time.Second,
	}
}

func run(ctx context.Context, cfg config, out io.Writer) (rep report, err error) {
	ctx, cancel := context.WithCancel(ctx) // stops whatever still runs on an early return
	defer cancel()
	began := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "[%5.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	logger := slog.New(slog.DiscardHandler)
	if cfg.Verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	pol, err := policy.NewDefault()
	if err != nil {
		return rep, err
	}
	remote := pol.FormatRemoteTopic(east, topic) // us-east-1.orders on ap-northeast-2
	back := pol.FormatRemoteTopic(seoul, topic)  // ap-northeast-2.orders on us-east-1
	fwdSyncs := pol.OffsetSyncsTopic(east)       // on ap-northeast-2 (location=target)
	eastDir, err := os.MkdirTemp("", "kmirror-failover-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(eastDir)
	port, err := freePort()
	if err != nil {
		return rep, err
	}
	// us-east-1 keeps its log on disk and listens on a fixed port, so that
	// it can "come back" after its outage with every acknowledged record
	// and committed offset, at the address clients already know.
	eastOpts := []kfake.Opt{kfake.ClusterID(east), kfake.Ports(port), kfake.DataDir(filepath.Join(eastDir, east)),
		kfake.GroupMinSessionTimeout(time.Second)}
	eastCl, err := kfake.NewCluster(eastOpts...)
	if err != nil {
		return rep, err
	}
	defer func() { eastCl.Close() }()
	seoulCl, err := kfake.NewCluster(kfake.ClusterID(seoul), kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		return rep, err
	}
	defer seoulCl.Close()
	eastAddrs, seoulAddrs := eastCl.ListenAddrs(), seoulCl.ListenAddrs()
	for _, c := range []*kfake.Cluster{eastCl, seoulCl} {
		// ap-northeast-2 gets its own (empty) orders topic: where the
		// order service writes while it runs there.
		if err := c.CreateTopic(topic, cfg.Partitions, nil); err != nil {
			return rep, err
		}
	}
	eastAdmCl, err := kgo.NewClient(kgo.SeedBrokers(eastAddrs...), kgo.RetryTimeout(time.Second))
	if err != nil {
		return rep, err
	}
	defer eastAdmCl.Close()
	seoulAdmCl, err := kgo.NewClient(kgo.SeedBrokers(seoulAddrs...), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return rep, err
	}
	defer seoulAdmCl.Close()
	eastAdm, seoulAdm := kadm.NewClient(eastAdmCl), kadm.NewClient(seoulAdmCl)
	clusters := []mirror.Opt{
		mirror.WithCluster(mirror.ClusterConfig{Alias: east, Client: []kgo.Opt{kgo.SeedBrokers(eastAddrs...)}}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: seoul, Client: []kgo.Opt{kgo.SeedBrokers(seoulAddrs...)}}),
		mirror.WithLogger(logger),
	}

	say("clusters %s (%s) and %s (%s) up; %s has %d partitions on both", east, eastAddrs[0], seoul, seoulAddrs[0], topic, cfg.Partitions)
	fwd, err := mirror.New(append(clusters, mirror.WithFlow(flowConfig(east, seoul)))...)
	if err != nil {
		return rep, err
	}
	fwdRun := start(ctx, fwd.Run)
	defer fwd.Close()

	prod := newProducer()
	cons := &consumer{group: group}
	// Phase 1: normal operation on us-east-1.
	consumerRun := start(ctx, func(ctx context.Context) error {
		return cons.run(ctx, phaseBefore, eastAddrs, kgo.NewOffset().AtStart(), false, false, topic)
	})
	producerRun := start(ctx, func(ctx context.Context) error { return prod.run(ctx, east, eastAddrs, topic, cfg.Rate) })
	say("producing %d orders/s to %s/%s; %s consumes and commits; replicating %s->%s as %s", cfg.Rate, east, topic, group, east, seoul, remote)
	if err := sleepCtx(ctx, cfg.Before); err != nil {
		return rep, err
	}
	if cfg.Quiet > 0 {
		producerRun.stop()
		producerRun = start(ctx, func(ctx context.Context) error { <-ctx.Done(); return nil })
		say("the order service pauses for %v: %s catches up", cfg.Quiet, group)
		if err := sleepCtx(ctx, cfg.Quiet); err != nil {
			return rep, err
		}
		// A planned switch waits, after the pause, until the group is
		// caught up and safe to switch: on a loaded machine the
		// consumer's last commit, its replication and the checkpoint of
		// it can take longer than the pause.
		if err := waitSafe(ctx, fwd, eastAdm, topic, 30*time.Second); err != nil {
			return rep, err
		}
	}
	// The failure this runbook rehearses hits a flow that has checkpointed
	// the group (on a loaded machine the first emission may come after
	// -before): a group with no checkpoint at all has nothing to fail
	// over to, which is a different runbook (-uncommitted of kmirror
	// failover).
	if err := waitCheckpointed(ctx, fwd, 30*time.Second); err != nil {
		return rep, err
	}
	if st := fwd.Status().Flows[0]; len(st.Groups) > 0 {
		g := st.Groups[0]
		say("before the failure: flow %s %s, %d records replicated, lag %d; group %s %s (safe to switch: %t)",
			st.Name, st.State, st.Records, st.Lag, g.Group, g.State, g.SafeToSwitch)
	}

	// Phase 2: the failure.
	eastCl.Close()
	failedAt := time.Now()
	say("*** %s FAILED (cluster shut down; its log directory is kept) ***", east)
	if err := detect(ctx, eastAdmCl); err != nil {
		return rep, err
	}
	rep.Detection = time.Since(failedAt)
	say("runbook 1: failure detected after %v (2 failed health checks)", rep.Detection.Round(time.Millisecond))
	// The order service and the order processor switch independently:
	// the service moves to ap-northeast-2/orders at once (its requests
	// in flight to us-east-1 are abandoned after a second and resent).
	// Instances on the failed side are abandoned, not waited for (closing
	// a client whose cluster is gone takes a while).
	abandoned := consumerRun
	abandonedDone := make(chan struct{})
	go func() {
		abandoned.stop()
		close(abandonedDone)
	}()
	beforeIDs := map[int]bool{}
	type switchover struct {
		run *background
		at  time.Time
	}
	switched := make(chan switchover, 1)
	go func() {
		producerRun.stop()
		acked, _ := prod.snapshot()
		for id, a := range acked {
			if a == east {
				beforeIDs[id] = true
			}
		}
		switched <- switchover{start(ctx, func(ctx context.Context) error { return prod.run(ctx, seoul, seoulAddrs, topic, cfg.Rate) }), time.Now()}
	}()

	st := fwd.Status().Flows[0]
	rep.LagAtFailure, rep.LagUnknownAtFailure = st.Lag, st.LagUnknown
	lag := fmt.Sprintf("%d records", st.Lag)
	if st.LagUnknown {
		// The source is gone: its end offsets cannot be listed, so Lag
		// counts only what is known (read it as at least Lag).
		lag = fmt.Sprintf("at least %d records (the source's end is unknown)", st.Lag)
	}
	say("runbook 2: replication lag as last seen: %s (flow state %s; the engine's cluster probe turns it RETRYING within about a second of the failure)", lag, st.State)
	stopStart := time.Now()
	if err := fwd.Close(); err != nil {
		return rep, err
	}
	if err := fwdRun.stop(); err != nil && !errors.Is(err, mirror.ErrClosed) {
		return rep, fmt.Errorf("forward flow: %w", err)
	}
	say("          replication stopped in %v", time.Since(stopStart).Round(time.Millisecond))
	replicatedEnd, err := endOffsets(ctx, seoulAdm, remote)
	if err != nil {
		return rep, err
	}

	offs, err := remoteclusterutils.TranslateOffsets(ctx, east, group, remoteclusterutils.WithClientOpts(kgo.SeedBrokers(seoulAddrs...)))
	if err != nil {
		return rep, fmt.Errorf("translating offsets: %w", err)
	}
	// The source positions the checkpoints were taken at, to tell the
	// orders read twice because of the translation from those the group
	// processed after the last checkpoint.
	cps, err := remoteclusterutils.NewClient(seoulAdmCl).Checkpoints(ctx, east)
	if err != nil {
		return rep, fmt.Errorf("reading checkpoints: %w", err)
	}
	checkpointed := map[int32]int64{}
	for _, c := range cps.Groups[group] {
		if c.Topic == remote {
			checkpointed[c.Partition] = c.UpstreamOffset
		}
	}
	// A partition without checkpoint (never committed by the group, or
	// the failure came before the first checkpoint) starts at the log
	// start: it re-reads but never skips. orders on ap-northeast-2 holds
	// only orders written since the failure: it starts at the beginning.
	missing := fillMissing(offs, remote, cfg.Partitions)
	fillMissing(offs, topic, cfg.Partitions)
	if _, err := commitWhenEmpty(ctx, seoulAdm, group, offs); err != nil {
		return rep, err
	}
	say("runbook 3: translated %s's offsets on %s (%s): %s; %d partitions without checkpoint", group, seoul,
		pol.CheckpointsTopic(east), fmtOffsets(offs, remote), missing)
	consumerRun = start(ctx, func(ctx context.Context) error {
		return cons.run(ctx, phaseOutage, seoulAddrs, kgo.NewOffset().AtCommitted(), true, true, remote, topic)
	})
	first, err := waitFirstRead(ctx, cons, phaseOutage, consumerRun)
	if err != nil {
		return rep, err
	}
	rep.RTO = first.Sub(failedAt)
	say("runbook 4: %s resumed on %s (%s, %s) with auto.offset.reset=none; RTO %v", group, seoul, remote, topic, rep.RTO.Round(time.Millisecond))
	sw := <-switched
	producerRun = sw.run
	say("          the order service writes to %s/%s since %v after the failure (unacknowledged orders resent there)",
		seoul, topic, sw.at.Sub(failedAt).Round(time.Millisecond))
	if err := sleepCtx(ctx, cfg.Outage); err != nil {
		return rep, err
	}
	if err := consumerRun.failed(); err != nil {
		return rep, fmt.Errorf("consumer on %s: %w", seoul, err)
	}

	// Phase 3: fail back.
	eastCl, err = kfake.NewCluster(eastOpts...)
	if err != nil {
		return rep, fmt.Errorf("restarting %s: %w", east, err)
	}
	recovered, err := endOffsets(ctx, eastAdm, topic)
	if err != nil {
		return rep, err
	}
	say("*** %s is BACK with its data: %s holds %d records ***", east, topic, sum(recovered))
	both, err := mirror.New(append(clusters, mirror.WithFlow(flowConfig(east, seoul)), mirror.WithFlow(flowConfig(seoul, east)))...)
	if err != nil {
		return rep, err
	}
	bothRun := start(ctx, both.Run)
	defer both.Close()
	say("fail-back 1: replicating both ways: %s->%s resumes, %s->%s copies %s as %s (%s is a cycle: not copied back)",
		east, seoul, seoul, east, topic, back, remote)
	producerRun.stop()
	producerRun = start(ctx, func(ctx context.Context) error { return prod.run(ctx, east, eastAddrs, topic, cfg.Rate) })
	say("fail-back 2: order service writes to %s/%s again", east, topic)
	seoulEnd, err := endOffsets(ctx, seoulAdm, topic) // orders on ap-northeast-2 no longer grows
	if err != nil {
		return rep, err
	}
	if err := waitCommitted(ctx, seoulAdm, group, topic, seoulEnd); err != nil {
		return rep, fmt.Errorf("waiting for %s to drain %s on %s: %w", group, topic, seoul, err)
	}
	if err := consumerRun.stop(); err != nil {
		return rep, fmt.Errorf("consumer on %s: %w", seoul, err)
	}
	pausedAt := time.Now()
	say("fail-back 3: %s drained %s/%s (%d records) and stopped", group, seoul, topic, sum(seoulEnd))
	if err := waitReverseCheckpoint(ctx, both, eastAdm, back, seoulEnd); err != nil {
		return rep, err
	}
	say("fail-back 4: flow %s->%s checkpointed the final position of %s (SafeToSwitch)", seoul, east, group)

	backOffs, err := remoteclusterutils.TranslateOffsets(ctx, seoul, group, remoteclusterutils.WithClientOpts(kgo.SeedBrokers(eastAddrs...)))
	if err != nil {
		return rep, fmt.Errorf("translating %s offsets on %s: %w", seoul, east, err)
	}
	onSeoul, err := committedOffsets(ctx, seoulAdm, group, remote)
	if err != nil {
		return rep, err
	}
	backPos, err := remoteclusterutils.TranslateBack(ctx, seoulAdmCl, fwdSyncs, map[string]map[int32]int64{topic: onSeoul}, "")
	if err != nil {
		return rep, fmt.Errorf("translating back: %w", err)
	}
	reversed, kinds := map[int32]int64{}, map[string]int{}
	for p, b := range backPos[topic] {
		reversed[p] = b.Offset
		kinds[b.Record]++
	}
	onEast, err := committedOffsets(ctx, eastAdm, group, topic)
	if err != nil {
		return rep, err
	}
	fillMissing(backOffs, back, cfg.Partitions)
	for p := range cfg.Partitions {
		// Either position is safe (everything before it was processed):
		// take the later one.
		at, ok := reversed[p]
		if pre, had := onEast[p]; had && (!ok || pre > at) {
			at, ok = pre, true
		}
		if !ok {
			return rep, fmt.Errorf("no position for %s[%d] on %s", topic, p, east)
		}
		backOffs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	waited, err := commitWhenEmpty(ctx, eastAdm, group, backOffs)
	if err != nil {
		return rep, err
	}
	say("fail-back 5: %s from checkpoints on %s (%s): %s", back, east, pol.CheckpointsTopic(seoul), fmtOffsets(backOffs, back))
	say("            %s translated back with the offset runs (%d partitions) and syncs (%d) of %s->%s: %s", topic, kinds["run"], kinds["sync"], east, seoul, fmtOffsets(backOffs, topic))
	if waited > 150*time.Millisecond {
		say("            (waited %v for the pre-outage member of %s to expire on %s)", waited.Round(time.Millisecond), group, east)
	}
	consumerRun = start(ctx, func(ctx context.Context) error {
		return cons.run(ctx, phaseFailback, eastAddrs, kgo.NewOffset().AtCommitted(), true, true, topic, back)
	})
	firstBack, err := waitFirstRead(ctx, cons, phaseFailback, consumerRun)
	if err != nil {
		return rep, err
	}
	rep.FailbackPause = firstBack.Sub(pausedAt)
	say("fail-back 6: %s resumed on %s (%s, %s); consumer paused %v", group, east, topic, back, rep.FailbackPause.Round(time.Millisecond))
	if err := sleepCtx(ctx, cfg.After); err != nil {
		return rep, err
	}
	producerRun.stop()

	// Let the consumer catch up with everything acknowledged, then account.
	acked, pending := prod.snapshot()
	if pending > 0 {
		return rep, fmt.Errorf("%d orders were never acknowledged", pending)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(unread(acked, cons.snapshot())) > 0 {
		if err := consumerRun.failed(); err != nil {
			return rep, fmt.Errorf("consumer on %s: %w", east, err)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return rep, err
		}
	}
	if err := consumerRun.stop(); err != nil {
		return rep, fmt.Errorf("consumer on %s: %w", east, err)
	}
	if err := both.Close(); err != nil {
		return rep, err
	}
	if err := bothRun.stop(); err != nil && !errors.Is(err, mirror.ErrClosed) {
		return rep, err
	}

	<-abandonedDone
	reads := cons.snapshot()
	rep.ConsumedBeforeFailure = distinct(reads, phaseBefore)
	onRemote, err := idsBelow(ctx, seoulAddrs, remote, replicatedEnd)
	if err != nil {
		return rep, err
	}
	rep.account(acked, beforeIDs, reads, onRemote, checkpointed)
	rep.Total = time.Since(began)
	rep.print(out)
	if rep.Lost > 0 {
		return rep, fmt.Errorf("%d acknowledged orders were never consumed", rep.Lost)
	}
	return rep, nil
}

// account fills the counts from what the producer got acknowledged
// (acked; before: the ids us-east-1 acknowledged before the failure), what
// the consumer read, which orders were on ap-northeast-2 at the failure and
// the source position of the group's checkpoint per partition of orders.
func (r *report) account(acked map[int]string, before map[int]bool, reads []read, onRemote map[int]bool, checkpointed map[int32]int64) {
	first := map[int]read{}
	for _, rd := range reads {
		r.Reads++
		f, seen := first[rd.id]
		if !seen {
			first[rd.id] = rd
			continue
		}
		if rd.phase == phaseFailback {
			r.DupFailback++
			continue
		}
		r.DupFailover++
		if at, ok := checkpointed[f.partition]; ok && f.phase == phaseBefore && f.topic == topic && f.offset < at {
			r.DupCheckpointed++
		} else {
			r.DupLate++
		}
	}
	seen := make(map[int]bool, len(first))
	for id := range first {
		seen[id] = true
	}
	r.Consumed = len(seen)
	r.Duplicates = r.Reads - r.Consumed
	r.Produced = len(acked)
	r.ProducedBeforeFailure = len(before)
	for id, a := range acked {
		if !seen[id] {
			r.Lost++
		}
		switch {
		case a == seoul:
			r.ProducedOutage++
		case before[id]:
			if !onRemote[id] {
				r.NotReplicated++
			}
		default:
			r.ProducedAfter++
		}
	}
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nreport\n")
	fmt.Fprintf(w, "  records produced (acknowledged)      %7d  (%s %d before the failure, %s %d during the outage, %s %d after fail-back)\n",
		r.Produced, east, r.ProducedBeforeFailure, seoul, r.ProducedOutage, east, r.ProducedAfter)
	fmt.Fprintf(w, "  consumed before the failure          %7d\n", r.ConsumedBeforeFailure)
	lag := fmt.Sprint(r.LagAtFailure)
	if r.LagUnknownAtFailure {
		lag = "at least " + lag
	}
	fmt.Fprintf(w, "  not yet replicated at the failure    %7d  (engine-reported lag %s; read after fail-back)\n", r.NotReplicated, lag)
	fmt.Fprintf(w, "  consumed in total (distinct)         %7d  of %d reads\n", r.Consumed, r.Reads)
	fmt.Fprintf(w, "  records lost                         %7d\n", r.Lost)
	fmt.Fprintf(w, "  records read twice                   %7d  (%d at failover, %d at fail-back)\n", r.Duplicates, r.DupFailover, r.DupFailback)
	fmt.Fprintf(w, "      at failover: %d processed after the last checkpoint (the source failed before it was checkpointed),\n", r.DupLate)
	fmt.Fprintf(w, "      %d before the checkpointed position (translation)\n", r.DupCheckpointed)
	fmt.Fprintf(w, "  failure detection                    %7v\n", r.Detection.Round(time.Millisecond))
	fmt.Fprintf(w, "  RTO (failure -> reading again)       %7v\n", r.RTO.Round(time.Millisecond))
	fmt.Fprintf(w, "  consumer pause at fail-back          %7v\n", r.FailbackPause.Round(time.Millisecond))
	fmt.Fprintf(w, "  total run time                       %7v\n", r.Total.Round(100*time.Millisecond))
}

// waitSafe waits up to max until the flow's first group has committed the
// source's end offset of every partition of topic and is safe to switch
// (mirror.GroupStatus.SafeToSwitch, as of a fetch of those offsets).
func waitSafe(ctx context.Context, m *mirror.Mirror, adm *kadm.Client, topic string, max time.Duration) error {
	deadline := time.Now().Add(max)
	last := "no group status"
	for {
		ends, err := endOffsets(ctx, adm, topic)
		if err != nil {
			last = fmt.Sprintf("listing the end offsets of %s: %v", topic, err)
		} else if gs := m.Status().Flows[0].Groups; len(gs) > 0 {
			g, caught := gs[0], 0
			for _, p := range g.Partitions {
				if e, ok := ends[p.Partition]; ok && p.Topic == topic && p.SourceOffset == e {
					caught++
				}
			}
			if g.SafeToSwitch && caught == len(ends) {
				return nil
			}
			last = fmt.Sprintf("group %s: %d of %d partitions committed at the end, safe to switch: %t", g.Group, caught, len(ends), g.SafeToSwitch)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the group did not catch up in %v after the pause: %s", max, last)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitCheckpointed waits, at most max, until the mirror's first flow has
// written a checkpoint of one of the group's partitions.
func waitCheckpointed(ctx context.Context, m *mirror.Mirror, max time.Duration) error {
	deadline := time.Now().Add(max)
	for {
		for _, g := range m.Status().Flows[0].Groups {
			for _, p := range g.Partitions {
				if p.Checkpointed >= 0 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no checkpoint of the group after %v: is the checkpoint emitter running?", max)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}
