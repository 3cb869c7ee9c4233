package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRunnerStopsPromptlyWhenSourceHangs (issue 21 part 5): the runner,
// replicating with the offset syncs on the source (the default), returns
// within 5 s of SIGTERM after the source stopped answering (every request
// hangs), well before -shutdown-timeout; the log counts the offset syncs
// left unwritten. The measured time is logged; 10 s is the failure bound.
func TestRunnerStopsPromptlyWhenSourceHangs(t *testing.T) {
	src := fakeCluster(t, "src")
	dst := fakeCluster(t, "dst")
	if err := src.CreateTopic("orders", 2, nil); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mm2.properties")
	props := fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = %s\nsrc->dst.enabled = true\nsrc->dst.topics = orders\n"+
		"tasks.max = 2\ndst.offset.flush.interval.ms = 100\n", src.ListenAddrs()[0], dst.ListenAddrs()[0])
	if err := os.WriteFile(cfg, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	prodCtx, stopProd := context.WithCancel(context.Background())
	var prod sync.WaitGroup
	prod.Go(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic("orders"))
		if err != nil {
			return
		}
		defer cl.Close()
		for i := 0; prodCtx.Err() == nil; i++ {
			cl.Produce(prodCtx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, nil)
			time.Sleep(time.Millisecond)
		}
	})
	defer func() { stopProd(); prod.Wait() }()
	base, stderr, stop, wait := started(t, "-config", cfg, "-shutdown-timeout", "40s")
	eventually(t, "replicating", func() string {
		var d flowDoc
		getJSON(t, base+"/connectors/src-%3Edst/status", &d)
		if d.Records < 500 {
			return fmt.Sprintf("%d records", d.Records)
		}
		return ""
	})
	dead := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(dead) }) })
	src.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		src.KeepControl()
		src.SleepControl(func() { <-dead })
		return nil, nil, false
	})
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	stop()
	if err := wait(); err != nil {
		t.Fatalf("runner: %v", err)
	}
	took := time.Since(start)
	t.Logf("runner returned %v after SIGTERM with the source hung", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("runner returned %v after SIGTERM, want within 5 s (10 s bound)\n%s", took, stderr)
	}
}
