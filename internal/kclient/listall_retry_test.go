package kclient

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// dialCounter counts a client's connection attempts.
type dialCounter struct{ n atomic.Int64 }

func (c *dialCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, _ error) {
	c.n.Add(1)
}

// silentBroker accepts connections and never answers: a hung broker, whose
// every request times out (a retriable error for kgo).
func silentBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestListAllTopicsRetriesAsKadm: ListAllTopics replaced kadm's ListTopics()
// in discovery (mirror/topics.go), which runs in the flow's refresh loop
// with no deadline, before the cluster probe. kadm's listing goes through
// kgo's internal metadata fetch, which gives up after 3 retries; a
// Metadata request of our own (cl.Request) is retried up to
// RequestRetries (20) for up to RetryTimeout (30 s): a hung cluster held
// discovery, and the refresh loop with it, about 5 times as many attempts
// before "listing topics" was reported. ListAllTopics must try no more
// often than the listing it replaced.
func TestListAllTopicsRetriesAsKadm(t *testing.T) {
	addr := silentBroker(t)
	attempts := func(list func(context.Context, *kgo.Client) error) int64 {
		dc := &dialCounter{}
		cl, err := New(kgo.SeedBrokers(addr), kgo.WithHooks(dc),
			kgo.RequestTimeoutOverhead(100*time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := list(context.Background(), cl); err == nil {
			t.Fatal("listing a broker that never answers succeeded")
		}
		return dc.n.Load()
	}
	viaKadm := attempts(func(ctx context.Context, cl *kgo.Client) error {
		_, err := kadm.NewClient(cl).ListTopics(ctx)
		return err
	})
	viaList := attempts(func(ctx context.Context, cl *kgo.Client) error {
		_, err := ListAllTopics(ctx, cl)
		return err
	})
	if viaList > viaKadm {
		t.Fatalf("ListAllTopics connected %d times to a hung broker, kadm's ListTopics %d: it retries past kgo's limit for metadata listings", viaList, viaKadm)
	}
}
