package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrkRProducerUnknownTopicSaysCreateIt checks the README's producer
// command on a cluster without the topic: the 503 names the topic and says
// to create it (it said only "not stored: UNKNOWN_TOPIC_OR_PARTITION: This
// server does not host this topic-partition.").
func TestBrkRProducerUnknownTopicSaysCreateIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, _ := producerServer(t)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/", strings.NewReader("hello"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "(topic messages does not exist on the cluster of KAFKA_BROKERS: create it, e.g. kafka-topics.sh --create --topic messages, or set KAFKA_TOPIC to an existing topic)"
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(string(b), "not stored: UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(string(b), want) {
		t.Errorf("POST to a cluster without messages: %d %q, want 503 with %q", resp.StatusCode, b, want)
	}
}

// TestBrkRConsumerNoneWithoutCommitSaysWhy checks the README's consumer
// command (KAFKA_AUTO_OFFSET_RESET=none) on a group that never committed:
// the error says why and what to do (it said only "consuming messages[0]:
// partition has no prior committed offset").
func TestBrkRConsumerNoneWithoutCommitSaysWhy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "messages"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "messages", Value: []byte("m")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg, err := newConsumerConfig(env{envBrokers: strings.Join(c.ListenAddrs(), ","), envReset: "none"}.get)
	if err != nil {
		t.Fatal(err)
	}
	err = consume(ctx, cfg, io.Discard)
	want := "consuming messages[0]: partition has no prior committed offset (KAFKA_AUTO_OFFSET_RESET=none and group messages-consumer has no committed offset there: start it once without KAFKA_AUTO_OFFSET_RESET, which reads from the earliest offset, or commit the group's offsets translated from the other cluster first)"
	if err == nil || err.Error() != want {
		t.Errorf("consume: %v, want %q", err, want)
	}
}
