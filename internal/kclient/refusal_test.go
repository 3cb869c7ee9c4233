package kclient

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrkSRefusalSaysDialFailures: a dial that failed at once for a
// reason other than a refused connection (a host name that does not
// resolve) was not a refusal: the DR commands' first read said its error
// bare ("reading the status topic of A->B on B: ...: unable to dial:
// ...: no such host"), not "target B unreachable". It is one now, and
// Unreachable names the key to check; a dial that timed out is still left
// to the caller's deadline.
func TestBrkSRefusalSaysDialFailures(t *testing.T) {
	dialing := func(err error) kgo.Opt {
		return kgo.Dialer(func(context.Context, string, string) (net.Conn, error) { return nil, err })
	}
	notFound := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "b1.example", IsNotFound: true}}
	err := Refusal(context.Background(), 2*time.Second, kgo.SeedBrokers("b1.example:9092"), dialing(notFound))
	if err == nil {
		t.Fatal("Refusal of a cluster whose host name does not resolve: nil, want its error")
	}
	got := Unreachable("target", "B", err).Error()
	for _, want := range []string{"target B unreachable: ", "lookup b1.example: no such host",
		" (the host name does not resolve: check B.bootstrap.servers, and the brokers' advertised.listeners)"} {
		if !strings.Contains(got, want) {
			t.Errorf("Unreachable = %q, want it to contain %q", got, want)
		}
	}
	timedOut := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "i/o timeout", Name: "b1.example", IsTimeout: true}}
	if err := Refusal(context.Background(), time.Second, kgo.SeedBrokers("b1.example:9092"), dialing(timedOut)); err != nil {
		t.Errorf("Refusal of a cluster whose dial timed out: %v, want nil (left to the caller's deadline)", err)
	}
}
