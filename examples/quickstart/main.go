// Command quickstart runs kmirror's whole replication story on two
// embedded (in-process kfake) clusters, with no setup: it creates `orders`
// and `payments` on cluster us-east-1, produces a workload with keys,
// headers and tombstones, replicates them to ap-northeast-2 as
// us-east-1.orders and us-east-1.payments, verifies every record (content
// and order per partition) and prints a report. It exits non-zero if a
// record is missing or differs.
//
// Bytes, in the report as everywhere in kmirror, are the record payload:
// keys, values, and header keys and values.
//
//	go run ./examples/quickstart [-records 20000] [-v]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
)

func main() {
	records := flag.Int("records", 20000, "records to produce per topic")
	verbose := flag.Bool("v", false, "log what the engine does")
	flag.Parse()
	if err := checkRecords(*records); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(2)
	}
	if err := run(os.Stdout, *records, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// checkRecords refuses a -records below 1: with nothing to replicate the
// report had nothing to wait for and closed the Mirror before it ran
// ("mirror: closed", exit 1).
func checkRecords(n int) error {
	if n < 1 {
		return fmt.Errorf("-records %d: want at least 1 record per topic", n)
	}
	return nil
}

type topic struct {
	name       string
	partitions int32
}

// run is the whole program; the report goes to out.
func run(out io.Writer, n int, verbose bool) error {
	if err := checkRecords(n); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const source, target = "us-east-1", "ap-northeast-2"
	topics := []topic{{"orders", 6}, {"payments", 3}}

	fmt.Fprintf(out, "starting embedded clusters %s and %s\n", source, target)
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID(source))
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID(target))
	if err != nil {
		return err
	}
	defer dst.Close()
	for _, t := range topics {
		if err := src.CreateTopic(t.name, t.partitions, nil); err != nil {
			return err
		}
	}

	sent, err := produce(ctx, src.ListenAddrs(), topics, n)
	if err != nil {
		return err
	}
	produced := len(topics) * n
	fmt.Fprintf(out, "produced %d records to %s (orders: %d partitions, payments: %d)\n", produced, source, topics[0].partitions, topics[1].partitions)

	logger := slog.New(slog.DiscardHandler)
	if verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	m, err := mirror.New(
		mirror.WithCluster(mirror.ClusterConfig{Alias: source, Client: []kgo.Opt{kgo.SeedBrokers(src.ListenAddrs()...)}}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: target, Client: []kgo.Opt{kgo.SeedBrokers(dst.ListenAddrs()...)}}),
		mirror.WithFlow(mirror.FlowConfig{Source: source, Target: target}),
		mirror.WithLogger(logger),
	)
	if err != nil {
		return err
	}
	start := time.Now()
	runErr := make(chan error, 1)
	go func() { runErr <- m.Run(ctx) }()

	fmt.Fprintf(out, "replicating %s->%s ...\n", source, target)
	var st mirror.FlowStatus
	for {
		st = m.Status().Flows[0]
		if st.Records >= int64(produced) && st.Lag == 0 {
			break
		}
		select {
		case err := <-runErr:
			return fmt.Errorf("mirror stopped: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("timed out: %d of %d records replicated (state %s %s)", st.Records, produced, st.State, st.Error)
		case <-time.After(50 * time.Millisecond):
		}
	}
	elapsed := time.Since(start)
	if err := m.Close(); err != nil {
		return err
	}
	if err := <-runErr; err != nil {
		return err
	}

	fmt.Fprintf(out, "\n%-22s %-10s %10s %10s %12s %6s\n", "remote topic", "partitions", "records", "verified", "bytes", "lag")
	missing := 0
	for _, t := range topics {
		remote := source + "." + t.name
		got, err := readTopic(ctx, dst.ListenAddrs(), remote, t.partitions, n)
		if err != nil {
			return err
		}
		var nrec, ok, nbytes, lag int64
		for p := int32(0); p < t.partitions; p++ {
			w, g := sent[t.name][p], got[p]
			nrec += int64(len(w))
			for i := range w {
				if i < len(g) && same(w[i], g[i]) {
					ok++
				}
				nbytes += recordBytes(w[i])
			}
		}
		for _, ps := range st.Partitions {
			if ps.Topic == t.name {
				lag += ps.Lag
			}
		}
		missing += int(nrec - ok)
		fmt.Fprintf(out, "%-22s %-10d %10d %10d %12d %6d\n", remote, t.partitions, nrec, ok, nbytes, lag)
	}
	rate := float64(st.Records) / elapsed.Seconds()
	fmt.Fprintf(out, "(bytes: keys, values, and header keys and values)\n")
	fmt.Fprintf(out, "\nreplicated %d records, %d bytes (%.1f MB) in %v: %.0f records/s\n", st.Records, st.Bytes, float64(st.Bytes)/1e6, elapsed.Round(time.Millisecond), rate)
	if missing > 0 {
		return fmt.Errorf("%d records missing or different on %s", missing, target)
	}
	fmt.Fprintln(out, "all records replicated with identical keys, values, headers, timestamps and order (plus the kmirror-provenance header naming the source cluster)")
	return nil
}

// recordBytes is a record's payload size, as kmirror counts bytes: key,
// value, and every header's key and value.
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// produce writes n records per topic, round robin over the partitions:
// keyed orders with headers and explicit timestamps, every tenth a
// tombstone. It returns what it sent, per topic and partition, in order.
func produce(ctx context.Context, brokers []string, topics []topic, n int) (map[string]map[int32][]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	sent := map[string]map[int32][]*kgo.Record{}
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	for _, t := range topics {
		sent[t.name] = map[int32][]*kgo.Record{}
		for i := 0; i < n; i++ {
			r := &kgo.Record{
				Topic:     t.name,
				Partition: int32(i) % t.partitions,
				Timestamp: base.Add(time.Duration(i) * time.Microsecond).Truncate(time.Millisecond),
				Key:       []byte(fmt.Sprintf("customer-%d", i%997)),
				Value:     []byte(fmt.Sprintf(`{"id":%d,"amount":%d.%02d,"currency":"USD"}`, i, i%500, i%100)),
				Headers:   []kgo.RecordHeader{{Key: "trace-id", Value: []byte(fmt.Sprintf("%016x", i))}, {Key: "source", Value: []byte("quickstart")}},
			}
			if i%10 == 9 {
				r.Value = nil // tombstone: stays a tombstone on the target
			}
			sent[t.name][r.Partition] = append(sent[t.name][r.Partition], r)
			cl.Produce(ctx, r, nil)
		}
	}
	return sent, cl.Flush(ctx)
}

// readTopic reads n records of topic (all partitions) from the target.
func readTopic(ctx context.Context, brokers []string, topic string, partitions int32, n int) (map[int32][]*kgo.Record, error) {
	start := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		start[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := map[int32][]*kgo.Record{}
	for read := 0; read < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return got, fmt.Errorf("reading %s: %d of %d records: %w", topic, read, n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			read++
		})
	}
	return got, nil
}

// same reports whether the copy b of source record a is exact. kmirror adds
// one header to every copy, mirror.ProvenanceHeader, naming the clusters
// the record came from (here the source's cluster ID): it is expected as
// b's last header and not compared.
func same(a, b *kgo.Record) bool {
	bh := b.Headers
	if n := len(bh); n > 0 && bh[n-1].Key == mirror.ProvenanceHeader {
		bh = bh[:n-1]
	} else {
		return false
	}
	if !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || (a.Value == nil) != (b.Value == nil) ||
		!a.Timestamp.Equal(b.Timestamp) || len(a.Headers) != len(bh) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != bh[i].Key || !bytes.Equal(a.Headers[i].Value, bh[i].Value) {
			return false
		}
	}
	return true
}
