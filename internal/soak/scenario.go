package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/internal/verify"
	"github.com/kmirror/kmirror/mirror"
)

// scenario is one mode of a profile: its own aliases, topics and runner
// processes, a steady producer, and the faults of the profile's plan.
type scenario struct {
	s   *soak
	m   mode
	rng *rand.Rand

	id                     string
	src, dst               string // cluster aliases
	stream, ledger, remote string
	props                  string
	parts                  int32
	members                []*member
	prod                   *producer

	mu       sync.Mutex
	gaps     map[gap]string  // every gap seen: where
	newGaps  []gap           // gaps seen since the current fault started
	deleted  map[int32]int64 // DeleteRecords offsets per stream partition
	failures []string        // failures seen outside the fault code (a crash, an unexpected gap)

	peakRSS, peakHeld atomic.Int64
	modePeakRSS       atomic.Int64
	stopSampling      context.CancelFunc
	sampling          sync.WaitGroup

	traceMu sync.Mutex
	traceF  *os.File

	marks      marks     // where the previous verify stopped
	lastDelete time.Time // the last DeleteRecords
	reports    int
}

// Budgets of the runner with the soak's properties (kmirror's defaults:
// mirror.DefaultFetchMaxBytes, mirror.DefaultMaxBufferedBytes,
// mirror.DefaultFetchMaxPartitionBytes), split between units as
// mirror/unit.go's budget does, and the soak's timings.
const (
	fetchMaxBytes     = mirror.DefaultFetchMaxBytes
	maxBufferedBytes  = mirror.DefaultMaxBufferedBytes
	fetchPartitionMax = mirror.DefaultFetchMaxPartitionBytes
	sourceBrokers     = 1
	unitBufferFloor   = 1 << 20
	unitFetchFloor    = max(1<<20, fetchPartitionMax)

	slowTargetRate = 256 << 10 // bytes/s through the throttled target link
	raceRecords    = 40        // records per partition the retention race deletes, at least
	recoverTimeout = 4 * time.Minute
	// startCheckpoint exceeds the brokers' log.flush.start.offset.checkpoint.interval.ms
	// (60 s): until then a log start offset moved by DeleteRecords is not
	// durable, and a broker killed with SIGKILL comes back with the deleted
	// records readable again.
	startCheckpoint   = 65 * time.Second
	gapTimeout        = 90 * time.Second
	memberSessionMs   = 6000 // the flow group's session.timeout.ms (Kafka's group.min.session.timeout.ms default)
	memberHeartbeatMs = 2000
)

// The documented RSS estimate of a runner (README, "Memory"): a base for
// the Go runtime, the clients and the engine, plus twice (the Go collector
// lets the heap grow to twice what is live, GOGC=100) the live data: the
// record data it may hold, present about twice (serialized produce
// requests, fetch responses), and a per-record overhead (record structs,
// headers with the provenance header, queues).
const (
	boundBase      = 96 << 20
	boundPerRecord = 400
	boundGC        = 2
	boundCopies    = 2
)

// dataBound is the record payload a runner owning every slot of a flow
// with tasks slots may hold: per unit, its share of the producer buffer
// and two fetches (one polled, one buffered by the client) of its share
// of fetch.max.bytes per source broker.
func dataBound(tasks int) int64 {
	n := int64(tasks)
	buf := max(maxBufferedBytes/n, unitBufferFloor)
	fetch := max(fetchMaxBytes/n, unitFetchFloor)
	return n * (buf + 2*sourceBrokers*fetch)
}

// rssBound is the documented RSS estimate of a runner owning every slot,
// for records of recordBytes payload each; the soak fails a runner above it.
func rssBound(tasks int, recordBytes int64) int64 {
	d := dataBound(tasks)
	return boundBase + boundGC*(boundCopies*d+d/recordBytes*boundPerRecord)
}

var idSeq atomic.Int64

func (s *soak) newScenario(ctx context.Context, m mode) (*scenario, error) {
	id := fmt.Sprintf("%s-%s%d", m.name, strconv.FormatInt(time.Now().Unix()%(36*36*36*36), 36), idSeq.Add(1))
	sc := &scenario{
		s: s, m: m, rng: rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64())),
		id: id, src: "src-" + id, dst: "dst-" + id,
		stream: "soak-stream-" + id, ledger: "soak-ledger-" + id,
		parts: int32(s.o.partitions),
		gaps:  map[gap]string{}, deleted: map[int32]int64{},
	}
	sc.remote = sc.src + "." + sc.stream
	for _, t := range []string{sc.stream, sc.ledger} {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := s.srcAdm.CreateTopic(actx, sc.parts, 1, nil, t)
		cancel()
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return nil, fmt.Errorf("create topic %s: %w", t, err)
		}
	}
	sc.props = filepath.Join(s.dir, id+".properties")
	if err := os.WriteFile(sc.props, []byte(sc.properties()), 0o644); err != nil {
		return nil, err
	}
	prod, err := newProducer(strings.Split(s.srcDirect, ","), sc.stream, sc.ledger, sc.parts, s.o.recordSize, s.o.rate, id)
	if err != nil {
		return nil, err
	}
	sc.prod = prod
	for i := range m.members {
		sc.members = append(sc.members, &member{sc: sc, idx: i})
	}
	return sc, nil
}

// properties is the runner's MM2 file: one flow src->dst of the stream
// topic through the fault proxies, kmirror's defaults otherwise.
func (sc *scenario) properties() string {
	e := sc.s.kafkaEnv
	var b strings.Builder
	fmt.Fprintf(&b, "# kmirror fault soak, mode %s (%s)\n", sc.m.name, sc.m.title)
	fmt.Fprintf(&b, "clusters = %s, %s\n", sc.src, sc.dst)
	fmt.Fprintf(&b, "%s.bootstrap.servers = %s\n", sc.src, e["KMIRROR_SOURCE_PROXIED_BROKERS"])
	fmt.Fprintf(&b, "%s.bootstrap.servers = %s\n", sc.dst, e["KMIRROR_TARGET_PROXIED_BROKERS"])
	fmt.Fprintf(&b, "%s->%s.enabled = true\n", sc.src, sc.dst)
	fmt.Fprintf(&b, "%s->%s.enabled = false\n", sc.dst, sc.src)
	fmt.Fprintf(&b, "%s->%s.topics = %s\n", sc.src, sc.dst, regexp.QuoteMeta(sc.stream))
	fmt.Fprintf(&b, "%s->%s.groups = %s\n", sc.src, sc.dst, regexp.QuoteMeta("soak-group-"+sc.id))
	fmt.Fprintf(&b, "tasks.max = %d\n", sc.parts)
	for _, k := range []string{"replication.factor", "checkpoints.topic.replication.factor", "heartbeats.topic.replication.factor",
		"offset-syncs.topic.replication.factor", "offset.storage.replication.factor", "status.storage.replication.factor", "config.storage.replication.factor"} {
		fmt.Fprintf(&b, "%s = 1\n", k)
	}
	fmt.Fprintf(&b, "%s.session.timeout.ms = %d\n", sc.dst, memberSessionMs)
	fmt.Fprintf(&b, "%s.heartbeat.interval.ms = %d\n", sc.dst, memberHeartbeatMs)
	if sc.m.eos {
		fmt.Fprintf(&b, "%s.exactly.once.source.support = enabled\n", sc.dst)
	}
	if sc.m.shallow {
		fmt.Fprintf(&b, "%s->%s.shallow.copy.enabled = true\n", sc.src, sc.dst)
		fmt.Fprintf(&b, "%s->%s.provenance.header.enabled = false\n", sc.src, sc.dst)
	}
	return b.String()
}

// fail records a failure seen outside the fault code; it is attached to
// the current row.
func (sc *scenario) fail(msg string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.failures = append(sc.failures, msg)
	sc.s.printf("  ! %s\n", firstLine(msg))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

func (sc *scenario) takeFailures() []string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	f := sc.failures
	sc.failures = nil
	return f
}

// gapSeen records a gap from /status or a runner's log. A gap is expected
// only where the soak deleted records: a gap that ends past the offset
// DeleteRecords removed up to, or a gap where the offsets went back, is a
// failure.
func (sc *scenario) gapSeen(g gap, where string) {
	if g.Topic != sc.stream {
		return
	}
	sc.mu.Lock()
	if _, ok := sc.gaps[g]; ok {
		sc.mu.Unlock()
		return
	}
	sc.gaps[g] = where
	sc.newGaps = append(sc.newGaps, g)
	del := sc.deleted[g.Partition]
	sc.mu.Unlock()
	sc.s.printf("  gap reported (%s): %s[%d] [%d,%d), %d records\n", where, g.Topic, g.Partition, g.From, g.To, g.To-g.From)
	if g.From >= g.To || g.To > del {
		sc.fail(fmt.Sprintf("unexpected gap %s reported by %s: the soak deleted records of partition %d only below offset %d", g, where, g.Partition, del))
	}
}

func (sc *scenario) allGaps() []gap {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return slices.Collect(maps.Keys(sc.gaps))
}

func (sc *scenario) takeNewGaps() []gap {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	g := sc.newGaps
	sc.newGaps = nil
	return g
}

// sample records the largest runner RSS every 100 ms, and every 500 ms
// the bytes each runner holds and the gaps on its /status, until ctx ends.
func (sc *scenario) sample(ctx context.Context) {
	sc.sampling.Add(2)
	go func() { // owner: the scenario; stopped by stopSampling
		defer sc.sampling.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, m := range sc.members {
				if pid := m.pid(); pid > 0 {
					sc.recordPeak(pid)
				}
			}
		}
	}()
	go func() { // owner: the scenario; stopped by stopSampling
		defer sc.sampling.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, m := range sc.members {
				starts := m.startCount()
				if h, err := m.heldRecords(ctx); err == nil {
					switch {
					case m.rebase.Swap(false):
						m.heldBase, m.baseStarts = h, starts
					case starts != m.baseStarts:
						m.heldBase, m.baseStarts = 0, starts // a new process: its counters start at 0
					}
					storeMax(&sc.peakHeld, (h-m.heldBase)*sc.recordBytes())
				}
				if st, err := m.status(ctx); err == nil {
					for i, f := range st.Flows {
						for _, g := range f.Gaps {
							sc.gapSeen(g, fmt.Sprintf("member %d /status", m.idx))
						}
						for _, t := range st.partitions(i) {
							if t.Topic == sc.stream {
								sc.trace("%s,%d,%d,%d,%d,%d,%s\n", time.Now().UTC().Format("15:04:05.000"), m.idx, t.Partition, t.SourceEnd, t.Replicated, t.Committed, t.State)
							}
						}
					}
				}
			}
		}
	}()
}

// recordPeak folds a runner's RSS high-water mark into the fault's and
// the mode's peaks.
func (sc *scenario) recordPeak(pid int) {
	if r, err := rss(pid, true); err == nil {
		storeMax(&sc.peakRSS, r)
		storeMax(&sc.modePeakRSS, r)
	}
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// trace appends a line to the scenario's trace file (the runners'
// /status positions every 500 ms: time, member, partition, source end,
// replicated, committed resume point, state), for diagnosing a failure.
func (sc *scenario) trace(format string, args ...any) {
	sc.traceMu.Lock()
	defer sc.traceMu.Unlock()
	if sc.traceF == nil {
		f, err := os.Create(filepath.Join(sc.s.dir, sc.id+"-positions.csv"))
		if err != nil {
			return
		}
		fmt.Fprintln(f, "time,member,partition,source_end,replicated,committed,state")
		sc.traceF = f
	}
	fmt.Fprintf(sc.traceF, format, args...)
}

// recordBytes is the payload of one soak record: key, value and headers.
func (sc *scenario) recordBytes() int64 {
	return int64(len("p00-000000000000") + sc.s.o.recordSize + len("soak-seq") + 12 + len("soak-run") + len(sc.id))
}

// positions returns, per stream partition, the largest replicated offset
// (next offset to replicate) the running members report, and whether
// every partition is reported.
func (sc *scenario) positions(ctx context.Context) (map[int32]int64, bool) {
	pos := map[int32]int64{}
	for _, m := range sc.members {
		st, err := m.status(ctx)
		if err != nil {
			continue
		}
		for i := range st.Flows {
			for _, t := range st.partitions(i) {
				if t.Topic != sc.stream {
					continue
				}
				if cur, ok := pos[t.Partition]; !ok || t.Replicated > cur {
					pos[t.Partition] = t.Replicated
				}
			}
		}
	}
	return pos, int32(len(pos)) == sc.parts
}

// ends lists the stream's end offsets on the source (directly), retrying
// while the source broker restarts.
func (sc *scenario) ends(ctx context.Context, topic string) (map[int32]int64, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		l, err := sc.s.srcAdm.ListEndOffsets(actx, topic)
		cancel()
		if err == nil {
			err = l.Error()
		}
		if err == nil {
			out := map[int32]int64{}
			l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
			if int32(len(out)) == sc.parts {
				return out, nil
			}
			err = fmt.Errorf("%d of %d partitions listed", len(out), sc.parts)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("list the end offsets of %s: %w", topic, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitCaughtUp lists the source end offsets now and waits until the
// members report every partition replicated up to them; it returns the
// time since from.
func (sc *scenario) waitCaughtUp(ctx context.Context, from time.Time, timeout time.Duration) (time.Duration, error) {
	ends, err := sc.ends(ctx, sc.stream)
	if err != nil {
		return -1, err
	}
	deadline := time.Now().Add(timeout)
	for {
		pos, _ := sc.positions(ctx)
		behind := 0
		for p, e := range ends {
			if r, ok := pos[p]; !ok || r < e {
				behind++
			}
		}
		if behind == 0 {
			return time.Since(from), nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("not caught up %s after the fault: %d partitions behind the source end offsets %v (replicated %v)", timeout, behind, ends, pos)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return -1, err
		}
	}
}

// waitFlowing waits until the soak's producer has written to every
// partition again (after a source broker restart its client reconnects
// with a backoff) and the mirror has copied that too, so that the
// verify after a fault also covers records produced after it.
func (sc *scenario) waitFlowing(ctx context.Context) error {
	before, err := sc.ends(ctx, sc.stream)
	if err != nil {
		return err
	}
	want := map[int32]int64{}
	parts := make([]int32, 0, len(before))
	for p, e := range before {
		want[p], parts = e+1, append(parts, p)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := sc.waitEnds(wctx, parts, want); err != nil {
		return fmt.Errorf("the soak's producer did not write again within a minute: %w", err)
	}
	_, err = sc.waitCaughtUp(ctx, time.Now(), recoverTimeout)
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// between returns a random duration in [lo, hi).
func (sc *scenario) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(sc.rng.Int64N(int64(hi-lo)))
}

// runMode runs one scenario: start, faults, final check.
func (s *soak) runMode(ctx context.Context, m mode) *modeResult {
	mr := &modeResult{m: m}
	started := time.Now()
	defer func() { mr.elapsed = time.Since(started) }()
	s.printf("\n### %s\n\n", m.title)
	sc, err := s.newScenario(ctx, m)
	if err != nil {
		mr.setupErr = err.Error()
		return mr
	}
	mr.bound = rssBound(int(sc.parts), sc.recordBytes())
	sctx, stopSampling := context.WithCancel(ctx)
	sc.stopSampling = stopSampling
	sc.sample(sctx)
	defer func() {
		sc.stopSampling()
		sc.sampling.Wait()
		if sc.traceF != nil {
			sc.traceF.Close()
		}
		for _, mb := range sc.members {
			_ = mb.kill()
		}
	}()
	s.printf("topics %s (replicated) and %s (ledger), %d partitions; runner config %s\n", sc.stream, sc.ledger, sc.parts, sc.props)
	sc.prod.start()
	for _, mb := range sc.members {
		if err := mb.start(ctx); err != nil {
			mr.setupErr = err.Error()
			return mr
		}
	}
	if _, err := sc.waitCaughtUp(ctx, time.Now(), 2*time.Minute); err != nil {
		mr.setupErr = "initial replication: " + err.Error()
		return mr
	}
	_ = sleep(ctx, 2*time.Second)
	for _, mb := range sc.members {
		if pid := mb.pid(); pid > 0 {
			if r, err := rss(pid, false); err == nil && r > mr.baseRSS {
				mr.baseRSS = r
			}
		}
	}
	s.printf("replicating; runner RSS %s MiB; documented bound %s MiB\n\n%s", mib(mr.baseRSS), mib(mr.bound), header)
	plan := s.o.faults
	if plan == nil {
		plan = profiles[s.o.profile].plan(m)
	}
	for i, f := range plan {
		if ctx.Err() != nil {
			break
		}
		r := sc.runFault(ctx, f)
		mr.rows = append(mr.rows, r)
		s.printf("%s", r.line(i+1))
		for _, fl := range r.Failures {
			s.printf("    FAIL: %s\n", fl)
		}
	}
	if ctx.Err() != nil {
		return mr
	}
	fin := sc.finish(ctx)
	mr.rows = append(mr.rows, fin)
	s.printf("%s", fin.line(0))
	for _, fl := range fin.Failures {
		s.printf("    FAIL: %s\n", fl)
	}
	if !mr.failed() && !s.o.keepTopics {
		sc.deleteTopics(ctx)
	}
	return mr
}

// runFault injects one fault, waits for the mirror to catch up, and
// verifies the window since the previous verify.
func (sc *scenario) runFault(ctx context.Context, f fault) row {
	for _, m := range sc.members {
		m.rebase.Store(true)
		if pid := m.pid(); pid > 0 {
			if err := resetPeak(pid); err != nil {
				sc.s.printf("  (could not reset the RSS peak of pid %d: %v)\n", pid, err)
			}
		}
	}
	time.Sleep(150 * time.Millisecond) // a sample taken before the resets is folded in before the peaks restart
	sc.peakRSS.Store(0)
	sc.peakHeld.Store(0)
	sc.takeNewGaps()
	r := row{Fault: f.name, Recover: -1}
	if wait := startCheckpoint - time.Since(sc.lastDelete); f.crashesSource() && wait > 0 {
		// Kafka keeps a log start offset moved by DeleteRecords in memory
		// and checkpoints it every minute: a source broker killed before
		// that brings the deleted records back, which a mirror would then
		// copy out of order. Not what this fault tests.
		r.note(fmt.Sprintf("waited %.0fs for the source broker to checkpoint the log start offsets of the last DeleteRecords before killing it", wait.Seconds()))
		if err := sleep(ctx, wait); err != nil {
			r.fail(err.Error())
			return r
		}
	}
	out, err := sc.inject(ctx, f)
	r.FaultTime = out.end.Sub(out.start)
	if err != nil {
		r.fail("injecting: " + err.Error())
	}
	if !out.end.IsZero() {
		rec, err := sc.waitCaughtUp(ctx, out.end, recoverTimeout)
		r.Recover = rec
		if err != nil {
			r.fail(err.Error())
		} else if err := sc.waitFlowing(ctx); err != nil {
			r.fail(err.Error())
		}
	}
	for _, n := range out.notes {
		r.note(n)
	}
	// Whole topics: a replay may reach back to the last resume point
	// stored, arbitrarily far before the previous verify (a window would
	// report such copies as unexpected). The row counts only what lies
	// past the previous row's marks.
	rep, err := sc.verifyLedger(ctx)
	if err != nil {
		r.fail("verify: " + err.Error())
	} else {
		ms, next := evaluate(&r, rep, sc.allGaps(), sc.m.eos, sc.marks)
		sc.checkGaps(&r, f, out, ms)
		if len(r.Failures) > 0 {
			sc.saveReport(&r, rep)
		}
		sc.marks = next
	}
	r.RSSPeak, r.HeldPeak = sc.peakRSS.Load(), sc.peakHeld.Load()
	if bound := rssBound(int(sc.parts), sc.recordBytes()); out.memory && r.RSSPeak > bound {
		r.fail(fmt.Sprintf("runner RSS peaked at %s MiB, above the documented bound of %s MiB", mib(r.RSSPeak), mib(bound)))
	}
	if err := sc.prod.err(); err != nil {
		r.fail("source producer: " + err.Error())
	}
	for _, fl := range sc.takeFailures() {
		r.fail(fl)
	}
	return r
}

// saveReport writes a verify report as JSON to the work dir and notes
// where.
func (sc *scenario) saveReport(r *row, rep *verify.Report) {
	sc.reports++
	path := filepath.Join(sc.s.dir, fmt.Sprintf("%s-verify-%d.json", sc.id, sc.reports))
	b, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		r.note("could not save the verify report: " + err.Error())
		return
	}
	r.note("verify report: " + path)
}

// checkGaps compares the gaps reported during a retention fault with the
// records DeleteRecords removed and with verify's missing ranges.
func (sc *scenario) checkGaps(r *row, f fault, out injected, ms []missing) {
	seen := sc.takeNewGaps()
	switch f.kind {
	case retentionRace:
		// Deterministic: the runner's position was read while the source
		// was cut, so the gap is known in advance.
		got, want := mergeGaps(seen), mergeGaps(out.expect)
		if !slices.Equal(got, want) {
			r.fail(fmt.Sprintf("reported gaps %s, want exactly %s (the records deleted past the runner's position)", gapsString(got), gapsString(want)))
		}
		if !sameRanges(ms, out.expect) {
			r.fail(fmt.Sprintf("verify's missing ranges %v differ from the reported gaps %s", ms, gapsString(want)))
		}
		r.note(fmt.Sprintf("gaps expected and reported on /status: %s; verify's missing ranges: %v", gapsString(want), ms))
	case retentionWhileDown:
		for p, to := range out.gapTo {
			ok := false
			for _, g := range seen {
				ok = ok || (g.Partition == p && g.To == to)
			}
			if !ok {
				r.fail(fmt.Sprintf("no gap ending at offset %d reported on partition %d (reported: %s)", to, p, gapsString(seen)))
			}
		}
		if sc.m.eos && !sameRanges(ms, seen) {
			// Exactly once, the target holds exactly the records up to the
			// resume point the restarted runner resumed from.
			r.fail(fmt.Sprintf("exactly once, verify's missing ranges %v should equal the reported gaps %s", ms, gapsString(mergeGaps(seen))))
		}
		r.note(fmt.Sprintf("records deleted up to %v while the runners were down; gaps reported: %s; verify's missing ranges: %v", out.gapTo, gapsString(mergeGaps(seen)), ms))
	default:
		if len(seen) > 0 {
			r.fail(fmt.Sprintf("gaps reported during a fault that deleted nothing: %s", gapsString(seen)))
		}
	}
}

// finish stops the producer, waits for the mirror, compares whole topics
// (the ledger with verify, the stream with the runner's own verify
// command), stops the runners gracefully and checks the ledger still
// mirrors the stream.
func (sc *scenario) finish(ctx context.Context) row {
	r := row{Fault: "final: whole topics, graceful stop", Recover: -1}
	sc.peakHeld.Store(0)
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	if err := sc.prod.close(fctx); err != nil {
		r.fail("source producer: " + err.Error())
	}
	cancel()
	if _, err := sc.waitCaughtUp(ctx, time.Now(), recoverTimeout); err != nil {
		r.fail(err.Error())
	}
	if rep, err := sc.verifyLedger(ctx); err != nil {
		r.fail("verify: " + err.Error())
	} else {
		gaps := sc.allGaps()
		evaluate(&r, rep, gaps, sc.m.eos, marks{})
		r.note(fmt.Sprintf("whole ledger vs remote topic: %d records, %d missing in %d reported gap(s) %s, %d duplicates; verify took %s",
			rep.Totals.Compared, r.InGap, len(mergeGaps(gaps)), gapsString(mergeGaps(gaps)), r.Duplicated, rep.Elapsed.Round(time.Millisecond)))
		if len(r.Failures) > 0 {
			sc.saveReport(&r, rep)
		}
	}
	if code, outp := sc.cliVerify(ctx); code != 0 {
		r.fail(fmt.Sprintf("kmirror verify (the operator command, stream vs remote topic) exited %d:\n%s", code, lastLines(outp, 25)))
	} else {
		r.note("kmirror verify (the operator command): " + lastLines(outp, 1))
	}
	se, err1 := sc.ends(ctx, sc.stream)
	le, err2 := sc.ends(ctx, sc.ledger)
	if err := errors.Join(err1, err2); err != nil {
		r.fail(err.Error())
	} else if !maps.Equal(se, le) {
		r.fail(fmt.Sprintf("the ledger's end offsets %v differ from the stream's %v", le, se))
	}
	for _, m := range sc.members {
		if err := m.stop(); err != nil {
			r.fail(err.Error())
		}
	}
	r.RSSPeak, r.HeldPeak = sc.modePeakRSS.Load(), sc.peakHeld.Load()
	for _, fl := range sc.takeFailures() {
		r.fail(fl)
	}
	return r
}

// cliVerify runs `kmirror verify` on the runner's own properties file:
// the stream against its remote topic, as an operator would.
func (sc *scenario) cliVerify(ctx context.Context) (int, string) {
	args := []string{"verify", "-config", sc.props, "-flow", sc.src + "->" + sc.dst, "-catch-up", "30s", "-progress", "0"}
	if sc.m.eos {
		args = append(args, "-exactly-once")
	}
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(vctx, sc.s.bin, args...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, b.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), b.String()
	}
	return -1, b.String() + err.Error()
}

// deleteTopics removes the scenario's topics (its id is in every name)
// from both clusters.
func (sc *scenario) deleteTopics(ctx context.Context) {
	for _, adm := range []*kadm.Client{sc.s.srcAdm, sc.s.dstAdm} {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		td, err := adm.ListTopics(actx)
		if err == nil {
			var names []string
			for _, n := range td.Names() {
				if strings.Contains(n, sc.id) {
					names = append(names, n)
				}
			}
			if len(names) > 0 {
				_, err = adm.DeleteTopics(actx, names...)
			}
		}
		cancel()
		if err != nil {
			sc.s.printf("  (could not delete the scenario's topics: %v)\n", err)
		}
	}
}
