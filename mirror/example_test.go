package mirror_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
)

// ExampleNew embeds the engine in a service: one flow from us-east-1 to
// ap-northeast-2, stopped gracefully when the context ends (in a service,
// signal.NotifyContext(ctx, syscall.SIGTERM)).
func ExampleNew() {
	east, _ := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("us-east-1"), kfake.SeedTopics(2, "orders"))
	defer east.Close()
	seoul, _ := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("ap-northeast-2"))
	defer seoul.Close()

	m, err := mirror.New(
		mirror.WithCluster(mirror.ClusterConfig{Alias: "us-east-1", Client: []kgo.Opt{kgo.SeedBrokers(east.ListenAddrs()...)}}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: "ap-northeast-2", Client: []kgo.Opt{kgo.SeedBrokers(seoul.ListenAddrs()...)}}),
		mirror.WithFlow(mirror.FlowConfig{Source: "us-east-1", Target: "ap-northeast-2", Topics: []string{"orders"}}),
		mirror.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		fmt.Println(err) // a *mirror.ConfigError naming the bad key and value
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	producer, _ := kgo.NewClient(kgo.SeedBrokers(east.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer producer.Close()
	for i := 0; i < 10; i++ {
		producer.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))})
	}
	for m.Status().Flows[0].Records < 10 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel() // graceful: flushes and stores resume points
	fmt.Println("Run:", <-done)
	for _, p := range m.Status().Flows[0].Partitions {
		fmt.Printf("%s[%d] -> %s: replicated up to %d, lag %d\n", p.Topic, p.Partition, p.RemoteTopic, p.Replicated, p.Lag)
	}
	// Output:
	// Run: <nil>
	// orders[0] -> us-east-1.orders: replicated up to 5, lag 0
	// orders[1] -> us-east-1.orders: replicated up to 5, lag 0
}
