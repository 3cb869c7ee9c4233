// Command commit is the consumer of the README's disaster-recovery
// walkthrough ("Try the runbook on one machine"): it reads a topic with a
// consumer group from the group's position (the log start for a new group)
// to the end offsets it lists at start, commits what it read, and prints
// the committed offsets. Then kmirror translate, failover and failback have
// a group to move.
//
//	go run ./examples/commit -brokers 127.0.0.1:40123 -topic orders -group orders-app
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", "", "the cluster's bootstrap servers, comma-separated (the -embedded runner's log line: embedded cluster alias=... brokers=...)")
	topic := flag.String("topic", "orders", "the topic to read")
	group := flag.String("group", "orders-app", "the consumer group that reads and commits")
	timeout := flag.Duration("timeout", 30*time.Second, "how long to read before giving up")
	flag.Parse()
	if *brokers == "" {
		fmt.Fprintln(os.Stderr, "commit: -brokers is required, e.g. -brokers 127.0.0.1:40123")
		os.Exit(2)
	}
	if err := run(strings.Split(*brokers, ","), *topic, *group, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "commit:", err)
		os.Exit(1)
	}
}

func run(brokers []string, topic, group string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("listing the end offsets of %s: %w", topic, err)
	}
	if err := ends.Error(); err != nil {
		return fmt.Errorf("listing the end offsets of %s: %w", topic, err)
	}
	// Transaction markers are kept as records: a partition written
	// transactionally (a remote topic of an exactly-once flow) ends with
	// one, and the group's position reaches the end offset only past it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.KeepControlRecords())
	if err != nil {
		return err
	}
	defer cl.Close()
	// Read until every partition reached the end listed at start, from
	// where the group committed last.
	committed, err := kadm.NewClient(adm).FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) { // a new group: nothing committed
		return fmt.Errorf("fetching the offsets of group %s: %w", group, err)
	}
	pos := map[int32]int64{}
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			pos[o.Partition] = o.At
		}
	})
	done := func() bool {
		for p, o := range ends[topic] {
			if o.Offset > 0 && pos[p] < o.Offset {
				return false
			}
		}
		return true
	}
	read := 0
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %d records, not every partition's end within %v: %w", read, timeout, err)
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(os.Stderr, "commit: fetching %s[%d]: %v\n", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				read++
			}
		})
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	fmt.Printf("group %s read %d records of %s and committed", group, read, topic)
	for p := range int32(len(ends[topic])) {
		fmt.Printf(" %d:%d", p, pos[p])
	}
	fmt.Println()
	return nil
}
