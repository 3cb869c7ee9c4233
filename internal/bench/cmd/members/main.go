// Command members measures kmirror's runner on real clusters with several
// members sharing a flow, at least once and exactly once: the records/s of
// draining a backlog with 1, 2, 3 … member processes, their CPU time and
// peak RSS, and the end-to-end latency of a steady stream (source create
// time to arrival at a read_committed consumer of the remote topic).
//
//	go build -o /tmp/kmirror ./examples/kmirror
//	eval "$(bash internal/realkafka/kafka.sh env)"
//	go run ./internal/bench/cmd/members -kmirror /tmp/kmirror -members 1,2,3 -modes alo,eos
//
// Every run uses fresh cluster aliases and topics (nothing is shared with
// an earlier run). On a 2-core machine the brokers and the members share
// the cores: records/s does not grow with members there; the command
// measures what it costs and how the work is shared.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type config struct {
	kmirror       string
	source        []string
	target        []string
	records       int
	size          int
	partitions    int
	tasks         int
	members       []int
	modes         []string
	rate          int
	latencyFor    time.Duration
	provenance    bool
	sessionMs     int
	transaction   string
	extraArgs     []string
	keepLogs      string
	transactionMs int
}

func main() {
	var c config
	var members, modes string
	flag.StringVar(&c.kmirror, "kmirror", "", "kmirror runner binary (go build ./examples/kmirror)")
	flag.IntVar(&c.records, "records", 1_000_000, "backlog records to drain per run")
	flag.IntVar(&c.size, "size", 1024, "value bytes per record (random: incompressible)")
	flag.IntVar(&c.partitions, "partitions", 12, "partitions of the topic")
	flag.IntVar(&c.tasks, "tasks", 0, "tasks.max (0: the partitions)")
	flag.StringVar(&members, "members", "1,2,3", "member counts to run")
	flag.StringVar(&modes, "modes", "alo,eos", "alo (at least once) and/or eos (exactly once)")
	flag.IntVar(&c.rate, "latency-rate", 5000, "records/s of the steady stream for the latency phase (0: skip)")
	flag.DurationVar(&c.latencyFor, "latency-for", 20*time.Second, "length of the latency phase")
	flag.BoolVar(&c.provenance, "provenance", true, "provenance headers on")
	flag.IntVar(&c.sessionMs, "session-ms", 6000, "members' session.timeout.ms")
	flag.StringVar(&c.transaction, "transaction-boundary", "poll", "exactly once: poll or interval")
	flag.IntVar(&c.transactionMs, "transaction-interval-ms", 0, "exactly once with -transaction-boundary interval: transaction.boundary.interval.ms (0: the default)")
	flag.StringVar(&c.keepLogs, "keep-logs", "", "copy the members' logs of every run into this directory")
	var extra string
	flag.StringVar(&extra, "args", "-summary-interval 0", "more runner arguments, space-separated")
	flag.Parse()
	c.extraArgs = strings.Fields(extra)
	c.source = strings.Split(os.Getenv("KMIRROR_SOURCE_BROKERS"), ",")
	c.target = strings.Split(os.Getenv("KMIRROR_TARGET_BROKERS"), ",")
	if c.kmirror == "" || c.source[0] == "" || c.target[0] == "" {
		fmt.Fprintln(os.Stderr, "members: need -kmirror and KMIRROR_SOURCE_BROKERS / KMIRROR_TARGET_BROKERS (kafka.sh env)")
		os.Exit(2)
	}
	for _, m := range strings.Split(members, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(m))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "members: bad -members", m)
			os.Exit(2)
		}
		c.members = append(c.members, n)
	}
	c.modes = strings.Split(modes, ",")
	fmt.Printf("# kmirror members benchmark: %d x %d B records, %d partitions, provenance %t, %s\n",
		c.records, c.size, c.partitions, c.provenance, time.Now().UTC().Format(time.RFC3339))
	fmt.Println("| mode | members | records/s from start | first record after s | members' CPU s | CPU µs/record | peak RSS MiB (sum) | latency p50 ms | latency p99 ms |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, mode := range c.modes {
		for _, n := range c.members {
			r, err := run(c, mode, n)
			if err != nil {
				fmt.Fprintf(os.Stderr, "members: %s with %d members: %v\n", mode, n, err)
				os.Exit(1)
			}
			fmt.Printf("| %s | %d | %.0f | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f |\n", mode, n, r.rate, r.startup, r.cpu, r.cpu*1e6/float64(c.records), r.rssMiB, r.p50, r.p99)
		}
	}
}

type result struct {
	rate, startup, cpu, rssMiB, p50, p99 float64
}

func run(c config, mode string, members int) (result, error) {
	var r result
	ctx := context.Background()
	u := fmt.Sprintf("%d", time.Now().UnixMilli()%10_000_000)
	src, dst := "bs"+u, "bt"+u
	topic := "bench-" + u
	srcCl, err := kgo.NewClient(kgo.SeedBrokers(c.source...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return r, err
	}
	defer srcCl.Close()
	dstCl, err := kgo.NewClient(kgo.SeedBrokers(c.target...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return r, err
	}
	defer dstCl.Close()
	srcAdm, dstAdm := kadm.NewClient(srcCl), kadm.NewClient(dstCl)
	if _, err := srcAdm.CreateTopic(ctx, int32(c.partitions), 1, nil, topic); err != nil {
		return r, err
	}
	defer srcAdm.DeleteTopics(context.WithoutCancel(ctx), topic)
	defer dstAdm.DeleteTopics(context.WithoutCancel(ctx), src+"."+topic)
	// Distinct random values, stored uncompressed: one value repeated
	// would compress many times over at the source and measure another
	// workload (kmirror's fetch budget counts stored bytes).
	pool := make([]byte, 64<<20)
	_, _ = rand.Read(pool)
	perPool := len(pool) / c.size
	for i := 0; i < c.records; i++ {
		at := (i % perPool) * c.size
		srcCl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % c.partitions), Key: []byte(strconv.Itoa(i)), Value: pool[at : at+c.size : at+c.size]}, nil)
	}
	if err := srcCl.Flush(ctx); err != nil {
		return r, err
	}

	dir, err := os.MkdirTemp("", "members-bench")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	if c.keepLogs != "" {
		// Deferred before the members are stopped: runs after their logs are complete.
		defer func() {
			logs, _ := filepath.Glob(filepath.Join(dir, "member*.log"))
			for _, l := range logs {
				if b, err := os.ReadFile(l); err == nil {
					_ = os.WriteFile(filepath.Join(c.keepLogs, fmt.Sprintf("%s-%d-%s", mode, members, filepath.Base(l))), b, 0o600)
				}
			}
		}()
	}
	props := filepath.Join(dir, "mm2.properties")
	lines := []string{
		"clusters = " + src + ", " + dst,
		src + ".bootstrap.servers = " + strings.Join(c.source, ","),
		dst + ".bootstrap.servers = " + strings.Join(c.target, ","),
		src + "->" + dst + ".enabled = true",
		src + "->" + dst + ".topics = " + topic,
		dst + "->" + src + ".emit.heartbeats.enabled = false",
		"emit.checkpoints.enabled = false",
		"sync.topic.acls.enabled = false",
		"refresh.topics.interval.seconds = 1",
		"replication.factor = 1", "offset-syncs.topic.replication.factor = 1", "checkpoints.topic.replication.factor = 1",
		"heartbeats.topic.replication.factor = 1", "offset.storage.replication.factor = 1",
		"tasks.max = " + strconv.Itoa(cmp.Or(c.tasks, c.partitions)),
		dst + ".session.timeout.ms = " + strconv.Itoa(c.sessionMs),
		fmt.Sprintf("provenance.header.enabled = %t", c.provenance),
	}
	if mode == "eos" {
		lines = append(lines, dst+".exactly.once.source.support = enabled", "transaction.boundary = "+c.transaction)
		if c.transactionMs > 0 {
			lines = append(lines, "transaction.boundary.interval.ms = "+strconv.Itoa(c.transactionMs))
		}
	}
	if err := os.WriteFile(props, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return r, err
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}()
	start := time.Now()
	for i := 0; i < members; i++ {
		p := exec.Command(c.kmirror, append([]string{"-config", props, "-log-level", "warn"}, c.extraArgs...)...)
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("member%d.log", i)))
		if err != nil {
			return r, err
		}
		defer logf.Close()
		p.Stdout, p.Stderr = logf, logf
		if err := p.Start(); err != nil {
			return r, err
		}
		procs = append(procs, p)
	}
	remote := src + "." + topic
	total := func() int64 {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if td, err := dstAdm.ListTopics(ctx, remote); err != nil || td[remote].Err != nil {
			return 0 // not created yet: ListOffsets would wait for it
		}
		var n int64
		for _, o := range ends(ctx, dstAdm, remote) {
			n += o
		}
		return n
	}
	var first time.Time
	peak := map[int]float64{}
	for {
		n := total()
		if n > 0 && first.IsZero() {
			first = time.Now()
		}
		for _, p := range procs {
			peak[p.Process.Pid] = max(peak[p.Process.Pid], rssMiB(p.Process.Pid))
		}
		// End offsets reaching the record count is necessary, not
		// enough: with exactly once the transaction markers take offsets
		// too. The backlog is drained once every partition's last record
		// (keys are the load's sequence numbers) is on the target.
		if n >= int64(c.records) {
			if err := waitLastKeys(ctx, c, remote, ends(ctx, dstAdm, remote)); err != nil {
				return r, err
			}
			break
		}
		if time.Since(start) > 15*time.Minute {
			return r, fmt.Errorf("not drained after 15 minutes: %d of %d", n, c.records)
		}
		time.Sleep(20 * time.Millisecond)
	}
	done := time.Now()
	r.rate = float64(c.records) / done.Sub(start).Seconds() // from the members' start: includes joining and loading resume points
	r.startup = first.Sub(start).Seconds()
	for _, p := range procs {
		r.cpu += cpuSeconds(p.Process.Pid)
	}
	if c.rate > 0 {
		r.p50, r.p99, err = latency(ctx, c, srcCl, dstCl, topic, remote, peak, procs)
		if err != nil {
			return r, err
		}
	}
	for _, v := range peak {
		r.rssMiB += v
	}
	return r, nil
}

// ends returns the end offset of every partition of topic (none on error).
func ends(ctx context.Context, adm *kadm.Client, topic string) map[int32]int64 {
	out := map[int32]int64{}
	if lo, err := adm.ListEndOffsets(ctx, topic); err == nil {
		lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	}
	return out
}

// waitLastKeys reads the remote topic read_committed from a little before
// the end offsets until it has seen the last loaded record of every
// partition: key records-P+p for partition p (the load writes record i,
// keyed i, to partition i mod P).
func waitLastKeys(ctx context.Context, c config, remote string, end map[int32]int64) error {
	from := map[int32]kgo.Offset{}
	want := map[string]bool{}
	for p := 0; p < c.partitions; p++ {
		last := (c.records-1)/c.partitions*c.partitions + p
		if last >= c.records {
			last -= c.partitions
		}
		if last >= 0 {
			want[strconv.Itoa(last)] = true
		}
		from[int32(p)] = kgo.NewOffset().At(max(end[int32(p)]-20_000, 0))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.target...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{remote: from}), kgo.FetchMaxWait(20*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(5 * time.Minute)
	for len(want) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("last records of the backlog not on the target after 5 minutes: keys %v missing", slices.Sorted(maps.Keys(want)))
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { delete(want, string(r.Key)) })
	}
	return nil
}

// latencyHeader marks the records of the latency phase.
var latencyHeader = kgo.RecordHeader{Key: "bench-latency"}

// latency produces a steady stream and measures, on a read_committed
// consumer of the remote topic, arrival time minus the record's create
// time (same machine, same clock).
func latency(ctx context.Context, c config, srcCl, dstCl *kgo.Client, topic, remote string, peak map[int]float64, procs []*exec.Cmd) (p50, p99 float64, err error) {
	ends, err := kadm.NewClient(dstCl).ListEndOffsets(ctx, remote)
	if err != nil {
		return 0, 0, err
	}
	from := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) { from[o.Partition] = kgo.NewOffset().At(o.Offset) })
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.target...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{remote: from}), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return 0, 0, err
	}
	defer cons.Close()
	n := int(c.latencyFor.Seconds()) * c.rate
	value := make([]byte, c.size)
	_, _ = rand.Read(value)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		per := c.rate / 100
		for i := 0; i < n; {
			<-tick.C
			for j := 0; j < per && i < n; j, i = j+1, i+1 {
				srcCl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % c.partitions), Value: value, Timestamp: time.Now(),
					Headers: []kgo.RecordHeader{latencyHeader}}, nil)
			}
		}
	}()
	var lat []float64
	var trace *os.File
	if c.keepLogs != "" {
		// Records slower than a second, to set against the members' logs.
		if trace, err = os.Create(filepath.Join(c.keepLogs, fmt.Sprintf("latency-%s.txt", remote))); err != nil {
			return 0, 0, err
		}
		defer trace.Close()
	}
	deadline := time.Now().Add(c.latencyFor + time.Minute)
	for len(lat) < n && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			if !slices.ContainsFunc(r.Headers, func(h kgo.RecordHeader) bool { return h.Key == latencyHeader.Key }) {
				// A record of the backlog: with exactly once the drain
				// ends by end offsets, which count the transaction
				// markers, so the last backlog records may come now.
				return
			}
			l := float64(now.Sub(r.Timestamp).Microseconds()) / 1000
			lat = append(lat, l)
			if trace != nil && l >= 1000 {
				fmt.Fprintf(trace, "%s p%d offset %d created %s latency %.0f ms\n", r.Topic, r.Partition, r.Offset, r.Timestamp.UTC().Format("15:04:05.000"), l)
			}
		})
		for _, p := range procs {
			peak[p.Process.Pid] = max(peak[p.Process.Pid], rssMiB(p.Process.Pid))
		}
	}
	if len(lat) < n {
		return 0, 0, fmt.Errorf("latency phase: %d of %d records arrived", len(lat), n)
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}

// rssMiB is the resident set of pid in MiB (0 if gone).
func rssMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return kb / 1024
		}
	}
	return 0
}

// cpuSeconds is the user+system CPU time of pid so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if errors.Join(err1, err2) != nil {
		return 0
	}
	return (ut + st) / 100 // clock ticks (USER_HZ 100)
}
