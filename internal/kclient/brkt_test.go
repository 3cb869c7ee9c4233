package kclient

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrkTRefusalTargetBackWithinProbe: a target that refuses connections
// for a moment (a broker restarting) and then listens again. Refusal
// returned its first "connection refused" at once, so a REST restart (or
// pause, resume, stop) failed where it used to succeed once the target
// was back, well within its deadline. A refused connection is now the
// refusal only when it lasts the whole probe; a port nobody listens on
// still is one.
func TestBrkTRefusalTargetBackWithinProbe(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	refused := make(chan struct{})
	var once sync.Once
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		c, err := new(net.Dialer).DialContext(ctx, network, host)
		if errors.Is(err, syscall.ECONNREFUSED) {
			once.Do(func() { close(refused) })
		}
		return c, err
	}
	res := make(chan error, 1)
	go func() { res <- Refusal(context.Background(), ProbeTimeout, kgo.SeedBrokers(addr), kgo.Dialer(dial)) }()
	// The target starts listening once the probe was refused.
	<-refused
	c, err := kfake.NewCluster(kfake.Ports(port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := <-res; err != nil {
		t.Errorf("Refusal of a target back within the probe: %v, want nil", err)
	}

	// Nobody listens for the whole probe: refused.
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	err = Refusal(context.Background(), ProbeTimeout, kgo.SeedBrokers(addr))
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Refusal of a port nobody listens on: %v, want connection refused", err)
	}
}
