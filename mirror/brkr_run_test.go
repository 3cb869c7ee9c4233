package mirror

import (
	"context"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrkRRunTwiceSaysWhatToDo: a second Run answered "mirror: Run called
// twice" both while the first replicated and after it had returned, which
// told a service restarting replication neither which mistake it made nor
// that it needs a new Mirror. The error now says both.
func TestBrkRRunTwiceSaysWhatToDo(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceN(t, &p.Source, topic, 0, 5)
	m, err := newMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- m.Run(ctx) }()
	waitReplicated(t, m, 5)
	const running = "mirror: Run called twice: the first Run is still replicating; wait for it to return, or cancel its context to stop it"
	if err := m.Run(ctx); err == nil || err.Error() != running {
		t.Errorf("Run while running: %v, want %q", err, running)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("first Run: %v", err)
	}
	const returned = "mirror: Run called twice: the first Run has returned, and a Mirror runs once; make a new one with New (and Close this one) to replicate again"
	if err := m.Run(context.Background()); err == nil || err.Error() != returned {
		t.Errorf("Run after the first returned: %v, want %q", err, returned)
	}
}
