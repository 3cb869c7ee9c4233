package remoteclusterutils_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/remoteclusterutils"
)

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestUnreachableClusterRetried: a cluster refusing connections (a broker
// restarting) failed TranslateOffsets and the topic listings at once, in
// under a millisecond, where MM2's client retries until its timeout. Now
// a call retries until its deadline and then says so, wrapping both the
// deadline and the last dial error; a cluster that comes up meanwhile is
// read.
func TestUnreachableClusterRetried(t *testing.T) {
	t.Parallel()
	t.Run("never up", func(t *testing.T) {
		t.Parallel()
		addr := net.JoinHostPort("127.0.0.1", itoa(freePort(t)))
		// The deadline in the error is the proof of the retries: a call
		// that gave up at the first refused dial returned that dial's
		// error alone.
		_, err := remoteclusterutils.TranslateOffsets(context.Background(), "us-west", "orders-app",
			remoteclusterutils.WithClientOpts(kgo.SeedBrokers(addr)), remoteclusterutils.WithTimeout(1500*time.Millisecond))
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "could not be reached") {
			t.Fatalf("TranslateOffsets on a refused address: %v; want the deadline and the refused dial, wrapped", err)
		}
		_, err = remoteclusterutils.UpstreamClusters(context.Background(),
			remoteclusterutils.WithClientOpts(kgo.SeedBrokers(addr)), remoteclusterutils.WithTimeout(500*time.Millisecond))
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) ||
			!strings.HasPrefix(err.Error(), "remoteclusterutils: listing topics: the cluster could not be reached") {
			t.Fatalf("UpstreamClusters on a refused address: %v; want the deadline and the refused dial, the package named once", err)
		}
	})
	t.Run("up after a second", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		up := make(chan *kfake.Cluster, 1)
		go func() {
			time.Sleep(time.Second)
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(1, "us-west.checkpoints.internal"))
			if err != nil {
				t.Error(err)
			}
			up <- c
		}()
		t.Cleanup(func() {
			if c := <-up; c != nil {
				c.Close()
			}
		})
		addr := net.JoinHostPort("127.0.0.1", itoa(port))
		_, err := remoteclusterutils.TranslateOffsets(context.Background(), "us-west", "orders-app",
			remoteclusterutils.WithClientOpts(kgo.SeedBrokers(addr)), remoteclusterutils.WithTimeout(20*time.Second))
		if !errors.Is(err, remoteclusterutils.ErrNoCheckpointYet) {
			t.Fatalf("TranslateOffsets on a cluster up after a second: %v; want ErrNoCheckpointYet (its empty checkpoints topic read)", err)
		}
	})
	t.Run("host does not resolve", func(t *testing.T) {
		t.Parallel()
		// Not the deadline: the resolver's answer is final, not retried
		// until the call's bound.
		_, err := remoteclusterutils.TranslateOffsets(context.Background(), "us-west", "orders-app",
			remoteclusterutils.WithClientOpts(kgo.SeedBrokers("no-such-host.invalid:9092")), remoteclusterutils.WithTimeout(5*time.Second))
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("TranslateOffsets on a host that does not resolve: %v; want its error before the deadline", err)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
