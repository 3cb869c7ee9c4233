// Command producer-consumer is the application of an Active/Standby
// MirrorMaker 2 switch-over walkthrough, in Go with kmirror: an HTTP
// producer (the body of every POST becomes a record of the topic messages)
// and a consumer that logs every message it receives, both pointed at a
// cluster by the environment variable KAFKA_BROKERS, plus a demo that
// performs the switch from cluster primary to cluster secondary on two
// embedded clusters and checks the sent log against the received log.
//
//	KAFKA_BROKERS=host:9092 producer-consumer producer [-addr :8080]
//	KAFKA_BROKERS=host:9092 producer-consumer consumer
//	producer-consumer -switch [-interval 10ms] [-warmup 2s] [-after 2s] [-naive] [-logdir DIR] [-v]
//
// Producer: POST / with the message as body; 200 once stored, 503 if the
// cluster did not acknowledge it. KAFKA_TOPIC (default messages).
//
// Consumer: group KAFKA_GROUP (default messages-consumer) reads the topics
// matching KAFKA_TOPIC_PATTERN (default: messages and its remote copies
// such as primary.messages) and prints "received: <message>" lines.
// KAFKA_AUTO_OFFSET_RESET is earliest (default), latest or none; use none
// after a switch so that a missing offset is an error, not a silent jump.
//
// -switch starts clusters primary and secondary, replicates
// primary->secondary with sync.group.offsets.enabled=true, runs the
// producer and the consumer on primary while a sender POSTs a message
// every -interval, then switches as the walkthrough does: the producer
// first; the consumer once its log stopped (it read everything on primary)
// and the group's status in the engine says SafeToSwitch (its final
// offsets are committed on secondary). With -naive the consumer moves with
// the producer without waiting, which re-reads messages (the walkthrough's
// observation). It exits non-zero if a message the producer accepted was
// never received.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "producer" || os.Args[1] == "consumer") {
		os.Exit(app(os.Args[1], os.Args[2:]))
	}
	var cfg switchConfig
	demo := flag.Bool("switch", false, "run the Active/Standby switch demo on embedded clusters")
	flag.DurationVar(&cfg.Interval, "interval", 10*time.Millisecond, "time between two POSTs of the sender")
	flag.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "time on primary before the switch")
	flag.DurationVar(&cfg.After, "after", 2*time.Second, "time on secondary after the switch")
	flag.BoolVar(&cfg.Naive, "naive", false, "switch the consumer together with the producer, without waiting for SafeToSwitch")
	flag.StringVar(&cfg.LogDir, "logdir", "", "also write send_message.log and received.log into this directory")
	flag.BoolVar(&cfg.Verbose, "v", false, "log what the engine does")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage:\n"+
			"  KAFKA_BROKERS=host:9092 %[1]s producer [-addr :8080]\n"+
			"  KAFKA_BROKERS=host:9092 %[1]s consumer\n"+
			"  %[1]s -switch [flags]\n\nflags of -switch:\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if !*demo || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := runSwitch(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "producer-consumer:", err)
		os.Exit(1)
	}
}

// app runs the producer or the consumer until SIGINT/SIGTERM; it returns
// the exit code.
func app(mode string, args []string) int {
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	addr := fs.String("addr", ":8080", "producer: HTTP listen address")
	_ = fs.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch mode {
	case "producer":
		var p *producer
		if p, err = newProducer(os.Getenv); err == nil {
			var ln net.Listener
			if ln, err = net.Listen("tcp", *addr); err == nil {
				fmt.Fprintf(os.Stderr, "producer: POST messages to http://%s/ -> topic %s on %s\n", ln.Addr(), p.topic, os.Getenv(envBrokers))
				err = p.serve(ctx, ln)
			}
		}
	case "consumer":
		var c consumerConfig
		if c, err = newConsumerConfig(os.Getenv); err == nil {
			fmt.Fprintf(os.Stderr, "consumer: group %s reads /%s/ on %s (auto.offset.reset=%s)\n", c.group, c.pattern, os.Getenv(envBrokers), c.reset)
			err = consume(ctx, c, os.Stdout)
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", mode, err)
		return 1
	}
	return 0
}
