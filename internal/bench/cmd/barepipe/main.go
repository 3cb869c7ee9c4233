// Command barepipe is the baseline of the side-by-side benchmark
// (internal/bench/sidebyside.sh): the least a franz-go program must do to
// copy topics from one cluster to another, with nothing of MM2 or kmirror
// (no offset syncs, no resume points, no topic or config management).
//
// It consumes every partition of the -topics on -source with a direct
// (groupless) consumer from the start and produces each record, key, value,
// headers and timestamp unchanged, to the same partition of
// "<prefix>.<topic>" on -target with an idempotent producer and a manual
// partitioner. The client settings are kmirror's (mirror/flow.go): fetch
// 16 MiB per request, 1 MiB per partition, 500 ms max wait; 32 MiB of
// buffered produce bytes, 5 ms linger. The producer compresses its batches
// with -compression (none, gzip, snappy, lz4 or zstd; "default" leaves
// franz-go's default, snappy); the side-by-side benchmark passes lz4 on its
// compressed workloads and none on the others. The target topics must
// exist.
//
//	barepipe -source 127.0.0.1:19092 -target 127.0.0.1:19192 -topics a,b -prefix src -compression lz4
//
// It runs until SIGINT or SIGTERM, then flushes and prints the number of
// records copied to stderr. Exit code 1 when a produce fails, 2 on bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/heapwatch"
	"github.com/kmirror/kmirror/mirror"
)

func main() {
	heapwatch.FromEnv() // KMIRROR_HEAPPROFILE_PEAK: runs until the process exits
	os.Exit(run(os.Args[1:]))
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// compressionCodec maps the -compression flag to a producer option; nil
// for "default" (franz-go's default codec).
func compressionCodec(name string) (kgo.Opt, error) {
	if name == "default" {
		return nil, nil
	}
	c, err := codecOf(name)
	if err != nil {
		return nil, err
	}
	return kgo.ProducerBatchCompression(c), nil
}

func codecOf(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("barepipe: -compression %q: want none, gzip, snappy, lz4, zstd or default", name)
}

func run(args []string) int {
	fs := flag.NewFlagSet("barepipe", flag.ContinueOnError)
	source := fs.String("source", "127.0.0.1:19092", "source bootstrap `servers` (comma-separated)")
	target := fs.String("target", "127.0.0.1:19192", "target bootstrap `servers` (comma-separated)")
	topics := fs.String("topics", "", "comma-separated source `topics` (required)")
	prefix := fs.String("prefix", "", "remote topic `prefix`: records of T go to <prefix>.T (required)")
	compression := fs.String("compression", "none", "producer batch `codec`: none, gzip, snappy, lz4, zstd, or default (franz-go's: snappy)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ts := splitList(*topics)
	if len(ts) == 0 || *prefix == "" {
		fmt.Fprintln(os.Stderr, "barepipe: -topics and -prefix are required")
		return 2
	}
	codecOpt, err := compressionCodec(*compression)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	src, err := kgo.NewClient(
		kgo.SeedBrokers(splitList(*source)...),
		kgo.ConsumeTopics(ts...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(mirror.DefaultFetchMaxBytes),
		kgo.FetchMaxPartitionBytes(mirror.DefaultFetchMaxPartitionBytes),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "barepipe: source client:", err)
		return 2
	}
	defer src.Close()
	dstOpts := []kgo.Opt{
		kgo.SeedBrokers(splitList(*target)...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedBytes(mirror.DefaultMaxBufferedBytes),
		kgo.MaxBufferedRecords(1 << 20),
		kgo.ProducerLinger(5 * time.Millisecond),
	}
	if codecOpt != nil {
		dstOpts = append(dstOpts, codecOpt)
	}
	dst, err := kgo.NewClient(dstOpts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "barepipe: target client:", err)
		return 2
	}
	defer dst.Close()

	remote := make(map[string]string, len(ts))
	for _, t := range ts {
		remote[t] = *prefix + "." + t
	}
	var acked atomic.Int64
	var failed atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
			return
		}
		acked.Add(1)
	}
	// Produce with a background context: the records already fetched are
	// written even when the stop signal arrives during the loop.
	bg := context.Background()
	for ctx.Err() == nil && failed.Load() == nil {
		fetches := src.PollRecords(ctx, 10000)
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				fmt.Fprintf(os.Stderr, "barepipe: fetch %s[%d]: %v\n", t, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			dst.Produce(bg, &kgo.Record{Topic: remote[r.Topic], Partition: r.Partition, Key: r.Key, Value: r.Value,
				Headers: r.Headers, Timestamp: r.Timestamp}, promise)
		})
	}
	flushCtx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	if err := dst.Flush(flushCtx); err != nil {
		fmt.Fprintln(os.Stderr, "barepipe: flush:", err)
	}
	fmt.Fprintf(os.Stderr, "barepipe: %d records copied\n", acked.Load())
	if e := failed.Load(); e != nil {
		fmt.Fprintln(os.Stderr, "barepipe: produce:", *e)
		return 1
	}
	return 0
}
