package remoteclusterutils_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// drCluster starts an in-process "us-east" cluster in the state MM2 (or
// kmirror) leaves it in when mirroring us-west -> us-east: the remote topic
// "us-west.orders" with 6 records per partition and checkpoints for the
// groups "billing" and "audit".
func drCluster(ctx context.Context) (*kfake.Cluster, []kgo.Opt) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		log.Fatal(err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, "us-west.orders"); err != nil {
		log.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "us-west.checkpoints.internal"); err != nil {
		log.Fatal(err)
	}
	var recs []*kgo.Record
	for p := range int32(2) {
		for i := range 6 {
			recs = append(recs, &kgo.Record{Topic: "us-west.orders", Partition: p, Value: fmt.Appendf(nil, "order-%d-%d", p, i)})
		}
	}
	for _, c := range []checkpoint.Checkpoint{
		{Group: "billing", Topic: "us-west.orders", Partition: 0, UpstreamOffset: 130, DownstreamOffset: 3},
		{Group: "billing", Topic: "us-west.orders", Partition: 1, UpstreamOffset: 95, DownstreamOffset: 5, Metadata: "batch-7"},
		{Group: "audit", Topic: "us-west.orders", Partition: 0, UpstreamOffset: 20, DownstreamOffset: 1},
	} {
		k, _ := c.Key()
		v, _ := c.Value()
		recs = append(recs, &kgo.Record{Topic: "us-west.checkpoints.internal", Partition: 0, Key: k, Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		log.Fatal(err)
	}
	return c, opts
}

// Failing a consumer group over: translate its offsets from the target
// cluster alone and commit them there before starting the consumers.
func ExampleTranslateOffsets() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dr, target := drCluster(ctx)
	defer dr.Close()

	offs, err := remoteclusterutils.TranslateOffsets(ctx, "us-west", "billing",
		remoteclusterutils.WithClientOpts(target...))
	if err != nil {
		log.Fatal(err)
	}
	cl, err := kgo.NewClient(target...)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	// offs is a kadm.Offsets: commit it as is (metadata included).
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, "billing", offs); err != nil {
		log.Fatal(err)
	}
	for _, o := range offs.Sorted() {
		fmt.Printf("billing resumes %s[%d] at %d (metadata %q)\n", o.Topic, o.Partition, o.At, o.Metadata)
	}
	// Output:
	// billing resumes us-west.orders[0] at 3 (metadata "")
	// billing resumes us-west.orders[1] at 5 (metadata "batch-7")
}

// Seeking a consumer without committing: the translated offsets are kgo
// offsets too (KOffsets for ConsumePartitions, EpochOffsets for SetOffsets).
func ExampleEpochOffsets() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dr, target := drCluster(ctx)
	defer dr.Close()

	admin, err := kgo.NewClient(target...)
	if err != nil {
		log.Fatal(err)
	}
	defer admin.Close()
	offs, err := remoteclusterutils.NewClient(admin).TranslateOffsets(ctx, "us-west", "billing")
	if err != nil {
		log.Fatal(err)
	}

	// A direct consumer that starts where billing left off on us-west.
	consumer, err := kgo.NewClient(append(target, kgo.ConsumePartitions(offs.KOffsets()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer consumer.Close()
	// Equivalent for a running client: consumer.SetOffsets(remoteclusterutils.EpochOffsets(offs)).
	fmt.Println(remoteclusterutils.EpochOffsets(offs)["us-west.orders"][1])

	first := map[int32]string{}
	for len(first) < 2 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			log.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = string(r.Value)
			}
		})
	}
	fmt.Println("first records after failover:", first[0], first[1])
	// Output:
	// {-1 5}
	// first records after failover: order-0-3 order-1-5
}

// Failing every group over with one read of the checkpoints topic.
func ExampleClient_Checkpoints() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dr, target := drCluster(ctx)
	defer dr.Close()
	cl, err := kgo.NewClient(target...)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()

	all, err := remoteclusterutils.NewClient(cl).Checkpoints(ctx, "us-west")
	if err != nil {
		log.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	for _, g := range all.GroupIDs() {
		if err := adm.CommitAllOffsets(ctx, g, all.Offsets(g)); err != nil {
			log.Fatal(err)
		}
		for _, c := range all.Groups[g] {
			fmt.Printf("%s: %s[%d] upstream %d -> %d\n", g, c.Topic, c.Partition, c.UpstreamOffset, c.DownstreamOffset)
		}
	}
	fmt.Printf("read %s offsets %d..%d, skipped %d\n", all.Stats.Topic, all.Stats.StartOffset, all.Stats.EndOffset, all.Stats.Skipped())
	// Output:
	// audit: us-west.orders[0] upstream 20 -> 1
	// billing: us-west.orders[0] upstream 130 -> 3
	// billing: us-west.orders[1] upstream 95 -> 5
	// read us-west.checkpoints.internal offsets 0..3, skipped 0
}

// Right after the mirror started, the checkpoints topic exists but holds
// no checkpoint yet: TranslateOffsets says so with ErrNoCheckpointYet
// (retry after the first emission), which differs from a group the mirror
// does not know (empty offsets, no error).
func ExampleTranslateOffsets_notYet() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	target := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	adm, err := kadm.NewOptClient(target...)
	if err != nil {
		log.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "us-west.checkpoints.internal"); err != nil {
		log.Fatal(err)
	}

	_, err = remoteclusterutils.TranslateOffsets(ctx, "us-west", "billing", remoteclusterutils.WithClientOpts(target...))
	if errors.Is(err, remoteclusterutils.ErrNoCheckpointYet) {
		fmt.Println("no checkpoint yet: retry after the mirror's first checkpoint emission")
	}
	// Output:
	// no checkpoint yet: retry after the mirror's first checkpoint emission
}
