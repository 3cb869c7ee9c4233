// Command fakekafka serves two in-process kfake clusters (one broker
// each) until interrupted, so that the benchmarks of internal/bench
// (scale, sidebyside) can measure kmirror's own process without real
// Kafka (issue 22: the memory of one member at thousands of partitions).
// kfake is not Kafka: use it for kmirror's memory and allocation, not for
// throughput or latency.
//
//	go run ./internal/bench/cmd/fakekafka -source 29092 -target 29192 &
//	go build -o /tmp/b/ ./examples/kmirror ./internal/bench/cmd/scale
//	/tmp/b/scale -source 127.0.0.1:29092 -target 127.0.0.1:29192 -mirrormaker /tmp/b/kmirror \
//	    -shapes 600x10x20:2000x4 -idle-wait 5s -idle 10s -out /tmp/out
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	src := flag.Int("source", 29092, "source cluster `port`")
	dst := flag.Int("target", 29192, "target cluster `port`")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range []struct {
		id   string
		port int
	}{{"source", *src}, {"target", *dst}} {
		cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(c.port), kfake.ClusterID(c.id))
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakekafka:", err)
			os.Exit(1)
		}
		defer cl.Close()
		fmt.Println(c.id, cl.ListenAddrs())
	}
	<-ctx.Done()
}
