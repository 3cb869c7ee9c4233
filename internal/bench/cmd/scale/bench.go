package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/bench/benchproc"
)

// bench holds the admin clients of both clusters for one invocation.
type bench struct {
	c       *config
	runID   string
	log     io.Writer
	srcCl   *kgo.Client
	dstCl   *kgo.Client
	srcAdm  *kadm.Client
	dstAdm  *kadm.Client
	started time.Time
}

func newBench(ctx context.Context, c *config, log io.Writer) (*bench, error) {
	b := &bench{c: c, log: log, started: time.Now()}
	// Lower-case letters and digits only: the ID goes into cluster aliases.
	b.runID = "sc" + strconv.FormatInt(b.started.Unix()%(1<<31), 36)
	var err error
	if b.srcCl, err = kgo.NewClient(kgo.SeedBrokers(c.source...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(1<<20), kgo.ProducerLinger(5*time.Millisecond), kgo.UnknownTopicRetries(-1)); err != nil {
		return nil, err
	}
	if b.dstCl, err = kgo.NewClient(kgo.SeedBrokers(c.target...)); err != nil {
		b.srcCl.Close()
		return nil, err
	}
	b.srcAdm, b.dstAdm = kadm.NewClient(b.srcCl), kadm.NewClient(b.dstCl)
	b.srcAdm.SetTimeoutMillis(120000)
	b.dstAdm.SetTimeoutMillis(120000)
	for name, adm := range map[string]*kadm.Client{"source": b.srcAdm, "target": b.dstAdm} {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err := adm.BrokerMetadata(cctx)
		cancel()
		if err != nil {
			b.close()
			return nil, fmt.Errorf("%s cluster does not answer (internal/realkafka/kafka.sh start?): %w", name, err)
		}
	}
	return b, nil
}

func (b *bench) close() {
	b.srcCl.Close()
	b.dstCl.Close()
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "%s scale: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// limits are the process limits a broker with many partitions needs: an
// open file per log segment, two memory maps per segment (offset and time
// index). Both are per process, so a cluster of N brokers holds about N
// times MaxParts partitions.
type limits struct {
	NoFile     uint64 // ulimit -n (soft), inherited by brokers started from this shell
	MaxMapCnt  int64  // vm.max_map_count
	MaxParts   int    // partitions per broker these limits allow, roughly
	Brokers    int    // brokers of the smaller cluster (source or target), at least 1
	Cores      int
	MemTotalMB int64
}

// maxPartsPerBroker is how many partitions one broker process fits under
// ulimit -n and vm.max_map_count, roughly: one open file and two memory
// maps per partition, after 2 000 files and 5 000 maps of its own.
func maxPartsPerBroker(noFile uint64, maxMapCount int64) int {
	return int(min(int64(noFile)-2000, (maxMapCount-5000)/2))
}

// perBroker is the partitions each broker holds when a cluster of brokers
// spreads partitions (plus 100 of its own internal topics) evenly.
func perBroker(partitions, brokers int) int {
	brokers = max(brokers, 1)
	return (partitions + 100 + brokers - 1) / brokers
}

// fits reports whether shape sh fits the limits on every broker.
func (l limits) fits(sh shape) bool { return perBroker(sh.partitions(), l.Brokers) <= l.MaxParts }

// checkLimits reads and prints ulimit -n, vm.max_map_count and the number
// of brokers of each cluster, and warns when a shape needs more per broker
// than the limits allow: a broker holds one open file per partition (its
// active segment) and two memory maps, plus its own.
func (b *bench) checkLimits(ctx context.Context) limits {
	var l limits
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
		l.NoFile = rl.Cur
	}
	if v, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		l.MaxMapCnt, _ = strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
	}
	l.MaxParts = maxPartsPerBroker(l.NoFile, l.MaxMapCnt)
	l.Cores = numCPU()
	l.MemTotalMB = memTotalMB()
	src, dst := b.brokerCount(ctx, b.srcAdm), b.brokerCount(ctx, b.dstAdm)
	l.Brokers = max(min(src, dst), 1)
	b.logf("ulimit -n = %d, vm.max_map_count = %d: a broker fits about %d partitions (one open file and two memory maps each); source %d broker(s), target %d",
		l.NoFile, l.MaxMapCnt, l.MaxParts, src, dst)
	for _, sh := range b.c.shapes {
		if !l.fits(sh) {
			b.logf("WARNING: shape %s needs about %d partitions per broker (%d brokers per cluster), over these limits: raise ulimit -n (before kafka.sh start) and vm.max_map_count, or start more brokers (KMIRROR_KAFKA_BROKERS=2)",
				sh.id(), perBroker(sh.partitions(), l.Brokers), l.Brokers)
		}
	}
	return l
}

// brokerCount is the number of brokers in a cluster's metadata, 0 when it
// cannot be read.
func (b *bench) brokerCount(ctx context.Context, adm *kadm.Client) int {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	m, err := adm.BrokerMetadata(cctx)
	if err != nil {
		b.logf("broker metadata: %v", err)
		return 0
	}
	return len(m.Brokers)
}

// result is one system's run on one shape. Seconds are -1 when the phase
// did not complete.
type result struct {
	Shape         shape
	System        string
	Start         time.Time
	Load1         float64 // 1-minute load average at the start
	Load1Idle     float64 // at the start of the idle window
	ReplicatedS   float64 // process start -> every remote partition holds its records
	Replicated    int     // remote partitions complete at the end of the phase
	CheckpointedS float64 // process start -> every group partition has a checkpoint
	Checkpointed  int     // group partitions with a checkpoint at the end of the phase
	CpAfterReplS  float64 // CheckpointedS - ReplicatedS
	WaveCpS       float64 // wave committed -> every group partition's checkpoint at the new offset
	WaveCPUS      float64 // CPU seconds of the process meanwhile
	WaveGroupsS   float64 // wave committed -> every target group at the new checkpoints
	IdleCPUPct    float64 // CPU over the idle window, % of one core
	IdleReqPerS   float64 // requests/s over the idle window (kmirror's client metrics), -1 unknown
	IdleWritesPS  float64 // write system calls/s over the idle window (/proc/<pid>/io syscw)
	PeakRSSMB     float64 // VmHWM over the whole run
	PreIdleRSSMB  float64 // VmHWM before the idle window (before kmirror's /metrics is read)
	CPUS          float64 // CPU seconds over the whole run
	Err           string
}

// runShape creates the shape's source topics and data once, runs every
// system on it, and deletes the topics.
func (b *bench) runShape(ctx context.Context, sh shape) ([]result, error) {
	prefix := b.runID + "x" + strconv.Itoa(sh.partitions())
	topics := make([]string, sh.Topics)
	for i := range topics {
		topics[i] = fmt.Sprintf("%st%05d", prefix, i)
	}
	defer b.cleanup(prefix)
	b.logf("shape %s: creating %d source topics", sh, sh.Topics)
	t0 := time.Now()
	if err := b.createTopics(ctx, topics, sh.Partitions); err != nil {
		return nil, err
	}
	if err := b.waitLeaders(ctx, topics, sh.Partitions); err != nil {
		return nil, err
	}
	if err := b.preload(ctx, topics, sh); err != nil {
		return nil, err
	}
	b.logf("shape %s: %d topics created and preloaded in %.1f s", sh.id(), sh.Topics, time.Since(t0).Seconds())
	var out []result
	for i, sys := range b.c.systems {
		tag := fmt.Sprintf("%s%c%c%d", prefix, sys[0], sys[len(sys)-1], i)
		r := b.runSystem(ctx, sh, sys, tag, topics)
		out = append(out, r)
		b.logf("shape %s %s: %+v", sh.id(), sys, r)
		b.cleanup(tag)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

func (b *bench) createTopics(ctx context.Context, topics []string, partitions int) error {
	for i := 0; i < len(topics); i += 200 {
		batch := topics[i:min(i+200, len(topics))]
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		rs, err := b.srcAdm.CreateTopics(cctx, int32(partitions), 1, nil, batch...)
		cancel()
		if err != nil {
			return fmt.Errorf("create topics: %w", err)
		}
		for _, r := range rs {
			if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
				return fmt.Errorf("create topic %s: %w", r.Topic, r.Err)
			}
		}
	}
	return nil
}

// waitLeaders waits until every partition of topics has a leader, 10
// minutes at most: a broker creating thousands of partitions takes a while.
func (b *bench) waitLeaders(ctx context.Context, topics []string, partitions int) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		lctx, cancel := context.WithTimeout(ctx, time.Minute)
		td, err := b.srcAdm.ListTopics(lctx, topics...)
		cancel()
		ready := 0
		if err == nil {
			for _, d := range td {
				if d.Err != nil || len(d.Partitions) != partitions {
					continue
				}
				ok := true
				for _, p := range d.Partitions {
					if p.Leader < 0 || p.Err != nil {
						ok = false
					}
				}
				if ok {
					ready++
				}
			}
			if ready == len(topics) {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d of %d topics have leaders after 10 minutes (%v)", ready, len(topics), err)
		}
		sleepCtx(ctx, time.Second)
	}
}

// preload writes sh.Records records of recordBytes to every partition.
func (b *bench) preload(ctx context.Context, topics []string, sh shape) error {
	value := make([]byte, b.c.recordBytes)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, t := range topics {
		for p := range int32(sh.Partitions) {
			for i := range sh.Records {
				wg.Add(1)
				b.srcCl.Produce(ctx, &kgo.Record{Topic: t, Partition: p, Key: []byte(strconv.Itoa(i)), Value: value}, func(_ *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						mu.Lock()
						firstErr = cmp(firstErr, err)
						mu.Unlock()
					}
				})
			}
		}
	}
	wg.Wait()
	return firstErr
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// groupTopics returns the topics group i commits on: K consecutive ones
// from i*K, so the groups spread over all topics.
func groupTopics(sh shape, topics []string, i int) []string {
	out := make([]string, sh.GroupTopics)
	for k := range out {
		out[k] = topics[(i*sh.GroupTopics+k)%len(topics)]
	}
	return out
}

// commitAll commits offset at on every partition of every group's topics,
// 32 groups at a time.
func (b *bench) commitAll(ctx context.Context, sh shape, groups, topics []string, at int64) error {
	sem := make(chan struct{}, 32)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for i, g := range groups {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var os kadm.Offsets
			for _, t := range groupTopics(sh, topics, i) {
				for p := range int32(sh.Partitions) {
					os.Add(kadm.Offset{Topic: t, Partition: p, At: at, LeaderEpoch: -1})
				}
			}
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := b.srcAdm.CommitAllOffsets(cctx, g, os); err != nil {
				mu.Lock()
				firstErr = cmp(firstErr, fmt.Errorf("commit %s: %w", g, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// runSystem runs one system on the shape's topics: its own groups and
// aliases (tag), the phases, the idle window.
func (b *bench) runSystem(ctx context.Context, sh shape, sys, tag string, topics []string) (r result) {
	r = result{Shape: sh, System: sys, Start: time.Now(), Load1: benchproc.LoadAvg1(), ReplicatedS: -1, CheckpointedS: -1,
		CpAfterReplS: -1, WaveCpS: -1, WaveGroupsS: -1, WaveCPUS: -1, IdleCPUPct: -1, IdleReqPerS: -1, IdleWritesPS: -1}
	fail := func(err error) result {
		r.Err = err.Error()
		return r
	}
	src, dst := tag+"src", tag+"dst"
	groups := make([]string, sh.Groups)
	for i := range groups {
		groups[i] = fmt.Sprintf("%sg%05d", tag, i)
	}
	half := int64(sh.Records / 2)
	b.logf("%s %s: committing %d groups", sh.id(), sys, sh.Groups)
	if err := b.commitAll(ctx, sh, groups, topics, half); err != nil {
		return fail(err)
	}
	props := filepath.Join(b.c.workdir, tag+".properties")
	text := b.properties(src, dst, topics[0][:len(topics[0])-5], tag)
	if sys == sysShallow {
		text += fmt.Sprintf("%s->%s.shallow.copy.enabled = true\n%s->%s.provenance.header.enabled = false\n", src, dst, src, dst)
	}
	if err := os.WriteFile(props, []byte(text), 0o644); err != nil {
		return fail(err)
	}
	argv := []string{b.c.mirrormaker, "-config", props, "-clusters", dst, "-log-level", "warn", "-listen", b.c.metricsAddr}
	capDur := b.c.capKmirror
	if sys == sysBase {
		argv[0] = b.c.baseBinary
	}
	if sys == sysMM2 {
		capDur = b.c.capMM2
		argv = append([]string{"java"}, strings.Fields(b.c.mm2JavaOpts)...)
		argv = append(argv, "-cp", b.c.classpath, "org.apache.kafka.connect.mirror.MirrorMaker", props, "--clusters", dst)
	}
	remotes := make([]string, len(topics))
	for i, t := range topics {
		remotes[i] = src + "." + t
	}
	tr := newTracker(sh, groups, topics)
	cctx, cancelCons := context.WithCancel(ctx)
	defer cancelCons()
	go b.consumeCheckpoints(cctx, src+".checkpoints.internal", tr)

	p, err := benchproc.Start(sys, argv, b.c.kmirrorEnv.For(sys), filepath.Join(b.c.workdir, tag+".log"))
	if err != nil {
		return fail(err)
	}
	defer func() {
		if u, err := p.Usage(); err == nil {
			r.PeakRSSMB, r.CPUS = float64(u.PeakRSSKB)/1024, u.CPU
		}
		p.Stop(60 * time.Second)
	}()
	start := p.Started

	// Phase 1: replication and checkpoints, up to the cap.
	deadline := start.Add(capDur)
	for {
		if done, werr := p.Exited(); done {
			return fail(fmt.Errorf("%s exited: %v; log:\n%s", sys, werr, p.LogTail(20)))
		}
		if r.ReplicatedS < 0 {
			n, err := b.replicated(ctx, remotes, int64(sh.Records))
			if err == nil {
				r.Replicated = n
				if n == sh.partitions() {
					r.ReplicatedS = time.Since(start).Seconds()
					b.logf("%s %s: every partition replicated after %.1f s", sh.id(), sys, r.ReplicatedS)
				}
			}
		}
		n, at := tr.checkpointed()
		r.Checkpointed = n
		if r.CheckpointedS < 0 && n == sh.groupPartitions() {
			r.CheckpointedS = at.Sub(start).Seconds()
			b.logf("%s %s: every group partition checkpointed after %.1f s", sh.id(), sys, r.CheckpointedS)
		}
		if r.ReplicatedS >= 0 && r.CheckpointedS >= 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fail(fmt.Errorf("not finished after %s: %d of %d partitions replicated, %d of %d group partitions checkpointed",
				capDur, r.Replicated, sh.partitions(), r.Checkpointed, sh.groupPartitions()))
		}
		sleepCtx(ctx, time.Second)
	}
	r.CpAfterReplS = r.CheckpointedS - r.ReplicatedS

	// Phase 2: the commit wave.
	sleepCtx(ctx, b.c.interval+time.Second) // settle: the first group offset syncs
	tr.startWave(int64(sh.Records))
	if err := b.commitAll(ctx, sh, groups, topics, int64(sh.Records)); err != nil {
		return fail(err)
	}
	waveAt := time.Now()
	waveDeadline := waveAt.Add(max(10*b.c.interval, 2*time.Minute))
	for r.WaveCpS < 0 || r.WaveGroupsS < 0 {
		if done, werr := p.Exited(); done {
			return fail(fmt.Errorf("%s exited: %v", sys, werr))
		}
		if r.WaveCpS < 0 {
			if at, ok := tr.waveDone(); ok {
				r.WaveCpS = at.Sub(waveAt).Seconds()
				r.WaveCPUS = p.CPUAt(at) - p.CPUAt(waveAt)
			}
		}
		if r.WaveGroupsS < 0 {
			if ok, err := b.targetGroupsAt(ctx, tr, groups); err == nil && ok {
				r.WaveGroupsS = time.Since(waveAt).Seconds()
			}
		}
		if time.Now().After(waveDeadline) || ctx.Err() != nil {
			r.Err = fmt.Sprintf("commit wave not complete after %s", time.Since(waveAt).Round(time.Second))
			break
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	b.logf("%s %s: wave in checkpoints %.1f s (%.2f CPU s), in target groups %.1f s", sh.id(), sys, r.WaveCpS, r.WaveCPUS, r.WaveGroupsS)

	// Phase 3: idle, idleWait after the last checkpoint record.
	for {
		last := tr.lastRecord()
		if wait := time.Until(last.Add(b.c.idleWait)); wait > 0 {
			sleepCtx(ctx, wait)
			continue
		}
		break
	}
	if ctx.Err() != nil {
		return r
	}
	r.Load1Idle = benchproc.LoadAvg1()
	if u, err := p.Usage(); err == nil {
		r.PreIdleRSSMB = float64(u.PeakRSSKB) / 1024
	}
	// kmirror's /metrics is read outside the CPU window: a scrape costs
	// the process CPU (per-partition series), which is not idle work.
	q0, qerr0 := b.requests(sys)
	tq0 := time.Now()
	u0, err0 := p.Usage()
	w0, _ := benchproc.WriteSyscalls(p.Pid())
	t0, n0 := time.Now(), tr.records()
	sleepCtx(ctx, b.c.idle)
	u1, err1 := p.Usage()
	w1, _ := benchproc.WriteSyscalls(p.Pid())
	el := time.Since(t0).Seconds()
	q1, qerr1 := b.requests(sys)
	if err0 == nil && err1 == nil {
		r.IdleCPUPct = 100 * (u1.CPU - u0.CPU) / el
	}
	r.IdleWritesPS = float64(w1-w0) / el
	if qerr0 == nil && qerr1 == nil {
		r.IdleReqPerS = (q1 - q0) / time.Since(tq0).Seconds()
	}
	if n := tr.records() - n0; n > 0 {
		b.logf("%s %s: %d checkpoint records written during the idle window", sh.id(), sys, n)
	}
	b.logf("%s %s: idle CPU %.2f %% of a core, %.2f requests/s, %.2f writes/s", sh.id(), sys, r.IdleCPUPct, r.IdleReqPerS, r.IdleWritesPS)
	return r
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// replicated counts the remote partitions holding at least want records.
func (b *bench) replicated(ctx context.Context, remotes []string, want int64) (int, error) {
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	lo, err := b.dstAdm.ListEndOffsets(lctx, remotes...)
	if err != nil {
		return 0, err
	}
	n := 0
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Partition >= 0 && o.Offset >= want {
			n++
		}
	})
	return n, nil
}

// targetGroupsAt reports whether every target group is committed, on every
// group partition, at the downstream offset of the wave's checkpoint.
func (b *bench) targetGroupsAt(ctx context.Context, tr *tracker, groups []string) (bool, error) {
	want, ok := tr.waveTargets()
	if !ok {
		return false, nil
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	got := b.dstAdm.FetchManyOffsets(lctx, groups...)
	for _, g := range groups {
		resp, ok := got[g]
		if !ok || resp.Err != nil {
			return false, nil
		}
		for k, d := range want[g] {
			o, ok := resp.Fetched.Lookup(k.topic, k.partition)
			if !ok || o.Err != nil || o.At != d {
				return false, nil
			}
		}
	}
	return true, nil
}

// requests returns the requests kmirror's clients completed so far (the
// sum of kmirror_client_request_duration_e2e_seconds_count on /metrics).
func (b *bench) requests(sys string) (float64, error) {
	if sys == sysMM2 {
		return 0, errors.New("no request metrics")
	}
	c := http.Client{Timeout: time.Minute}
	resp, err := c.Get("http://" + b.c.metricsAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "kmirror_client_request_duration_e2e_seconds_count") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	if !found {
		return 0, errors.New("no kmirror_client_request_duration_e2e_seconds_count on /metrics")
	}
	return sum, sc.Err()
}

// properties is the MM2 dedicated-mode file both systems run: one flow,
// the shape's topics and this run's groups, checkpoints and group offset
// sync every interval, replication factor 1, tasks.max.
func (b *bench) properties(src, dst, topicPrefix, tag string) string {
	var s strings.Builder
	secs := int(b.c.interval / time.Second)
	fmt.Fprintf(&s, "# Written by internal/bench/cmd/scale for one run.\n")
	fmt.Fprintf(&s, "clusters = %s, %s\n", src, dst)
	fmt.Fprintf(&s, "%s.bootstrap.servers = %s\n", src, strings.Join(b.c.source, ","))
	fmt.Fprintf(&s, "%s.bootstrap.servers = %s\n", dst, strings.Join(b.c.target, ","))
	fmt.Fprintf(&s, "%s->%s.enabled = true\n", src, dst)
	fmt.Fprintf(&s, "%s->%s.enabled = false\n", dst, src)
	fmt.Fprintf(&s, "%s->%s.topics = %s.*\n", src, dst, topicPrefix)
	fmt.Fprintf(&s, "%s->%s.groups = %sg.*\n", src, dst, tag)
	fmt.Fprintf(&s, "tasks.max = %d\n", b.c.tasks)
	for _, k := range []string{"replication.factor", "checkpoints.topic.replication.factor", "heartbeats.topic.replication.factor",
		"offset-syncs.topic.replication.factor", "offset.storage.replication.factor", "status.storage.replication.factor",
		"config.storage.replication.factor"} {
		fmt.Fprintf(&s, "%s = 1\n", k)
	}
	fmt.Fprintf(&s, "emit.checkpoints.interval.seconds = %d\n", secs)
	fmt.Fprintf(&s, "sync.group.offsets.enabled = true\n")
	fmt.Fprintf(&s, "sync.group.offsets.interval.seconds = %d\n", secs)
	for _, k := range []string{"sync.topic.configs.enabled", "sync.topic.acls.enabled", "heartbeats.replication.enabled"} {
		fmt.Fprintf(&s, "%s = false\n", k)
	}
	return s.String()
}

// deleteGroupsBatch is how many groups one DeleteGroups request names.
// The coordinator writes a group's deletion as one tombstone per committed
// partition plus one, in one batch per __consumer_offsets partition: 500
// groups of 40 partitions each, on a cluster whose offsets topic has one
// partition, made a batch of 20 500 records over the 1 MiB batch limit,
// which the broker answered with UNKNOWN_SERVER_ERROR and left every group
// (and the next run listed them all again).
const deleteGroupsBatch = 25

// deleteUntilGone lists names (list), keeps those containing tag and
// deletes them batch per request (del), listing again every 3 s until a
// listing shows none, attempts times at most. It returns the names of the
// last listing and the last error of list or del.
func deleteUntilGone(tag string, attempts, batch int, list func(context.Context) ([]string, error),
	del func(context.Context, []string) error) (left []string, lastErr error) {
	for attempt := range attempts {
		if attempt > 0 {
			time.Sleep(3 * time.Second)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		names, err := list(ctx)
		if err != nil {
			cancel()
			lastErr = err
			continue
		}
		left = left[:0]
		for _, n := range names {
			if strings.Contains(n, tag) {
				left = append(left, n)
			}
		}
		if len(left) == 0 {
			cancel()
			return nil, nil
		}
		for i := 0; i < len(left); i += batch {
			if err := del(ctx, left[i:min(i+batch, len(left))]); err != nil {
				lastErr = err
			}
		}
		cancel()
	}
	return left, lastErr
}

// cleanup deletes the topics and groups whose names contain tag, on both
// clusters (unless -keep), listing again until none is left (2 minutes at
// most).
func (b *bench) cleanup(tag string) {
	if b.c.keep {
		return
	}
	for _, c := range []struct {
		name string
		adm  *kadm.Client
	}{{"source", b.srcAdm}, {"target", b.dstAdm}} {
		adm := c.adm
		groups, err := deleteUntilGone(tag, 20, deleteGroupsBatch, func(ctx context.Context) ([]string, error) {
			gs, err := adm.ListGroups(ctx)
			return gs.Groups(), err
		}, func(ctx context.Context, names []string) error {
			resp, err := adm.DeleteGroups(ctx, names...)
			if err != nil {
				return err
			}
			for _, r := range resp {
				if r.Err != nil {
					return fmt.Errorf("group %s: %w", r.Group, r.Err)
				}
			}
			return nil
		})
		if len(groups) > 0 || err != nil {
			b.logf("cleanup: %d groups left on %s (last error: %v)", len(groups), c.name, err)
		}
		topics, err := deleteUntilGone(tag, 40, 500, func(ctx context.Context) ([]string, error) {
			td, err := adm.ListTopics(ctx)
			return td.Names(), err
		}, func(ctx context.Context, names []string) error {
			resp, err := adm.DeleteTopics(ctx, names...)
			if err != nil {
				return err
			}
			return resp.Error()
		})
		if len(topics) > 0 {
			b.logf("cleanup: %d topics left on %s (last error: %v)", len(topics), c.name, err)
		}
	}
}

// consumeCheckpoints reads the checkpoints topic from its start into tr
// until ctx is done.
func (b *bench) consumeCheckpoints(ctx context.Context, topic string, tr *tracker) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.c.target...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(500*time.Millisecond))
	if err != nil {
		b.logf("checkpoints consumer: %v", err)
		return
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachRecord(func(rec *kgo.Record) {
			cp, err := checkpoint.DecodeCheckpoint(rec.Key, rec.Value)
			if err == nil {
				tr.add(cp)
			}
		})
	}
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

func memTotalMB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	if kb, err := benchproc.StatusKB(b, "MemTotal:"); err == nil {
		return kb / 1024
	}
	return 0
}
