package mirror

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestRunReturnsPromptlyWhenSourceHangs (issue 21 part 5): with the offset
// syncs on the source (offset-syncs.topic.location=source, the default)
// and the source answering nothing any more (every request hangs, as a
// blackholed or frozen cluster does) while records were being replicated,
// Run returns within seconds of its context's cancellation (the offset
// syncs' 2 s flush bound; 8 s allowed on a loaded machine, under the
// issue's 10 s liveness ceiling); resume points are on the target, so only
// offset syncs are left unwritten (counted and logged). The measured time
// is logged.
func TestRunReturnsPromptlyWhenSourceHangs(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs an embedded kfake source cluster to freeze (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	fc := fastFlow(p)
	fc.Tasks = 2
	m, err := newMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- m.Run(ctx) }()

	// A producer keeps the flow busy, so that offset syncs are in flight
	// when the source stops answering.
	prodCtx, stopProd := context.WithCancel(context.Background())
	var prodDone sync.WaitGroup
	prodDone.Go(func() {
		cl := testcluster.Client(t, &p.Source, kgo.DefaultProduceTopic(topic))
		for i := 0; prodCtx.Err() == nil; i++ {
			cl.Produce(prodCtx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, nil)
			time.Sleep(time.Millisecond)
		}
	})
	defer func() { stopProd(); prodDone.Wait() }()
	testcluster.Eventually(t, 30*time.Second, "replicating", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.Records > 500, fmt.Sprint(fs.State, fs.Records)
	})

	// The source stops answering: every request hangs until the test ends.
	dead := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(dead) }) }
	t.Cleanup(release) // before the cluster closes (cleanups run last first)
	src := p.Source.Fake
	src.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		src.KeepControl()
		src.SleepControl(func() { <-dead })
		return nil, nil, false
	})
	time.Sleep(500 * time.Millisecond) // records acknowledged by the target produce offset syncs to the hung source

	start := time.Now()
	cancel()

	var runErr error
	select {
	case runErr = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatalf("Run did not return within 10 s of cancellation with the source hung")
	}
	took := time.Since(start)
	t.Logf("Run returned %v after cancellation with the source hung", took.Round(time.Millisecond))
	if runErr != nil {
		t.Errorf("Run: %v", runErr)
	}
	// Within the offset syncs' 2 s flush bound and slack for a loaded
	// machine; the hang this guards against never returns.
	if took > 8*time.Second {
		t.Errorf("Run returned %v after cancellation, want within 8 s", took.Round(time.Millisecond))
	}
}
