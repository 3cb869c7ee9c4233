package kclient

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// closeRace runs close on direct consumers of a few partitions while
// metadata updates keep arriving, the moment kgo's Close races with
// (found by the race detector in a unit's session end).
func closeRace(t *testing.T, closeFn func(cl *kgo.Client, parts map[string][]int32)) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(6, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prod, err := New(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 60 {
		prod.Produce(context.Background(), &kgo.Record{Topic: []string{"a", "b"}[i%2], Partition: int32(i % 6), Value: []byte("v")}, nil)
	}
	if err := prod.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		offs := map[string]map[int32]kgo.Offset{"a": {}, "b": {}}
		parts := map[string][]int32{}
		for p := range int32(6) {
			offs["a"][p], offs["b"][p] = kgo.NewOffset().At(0), kgo.NewOffset().At(0)
			parts["a"], parts["b"] = append(parts["a"], p), append(parts["b"], p)
		}
		cl, err := New(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"a": offs["a"]}), kgo.MetadataMinAge(10*time.Millisecond), kgo.FetchMaxWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cl.PollFetches(ctx)
		cancel()
		// Partitions added just before the close: their topic's metadata
		// arrives during it.
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{"b": offs["b"]})
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					cl.ForceMetadataRefresh()
					time.Sleep(100 * time.Microsecond)
				}
			}
		}()
		closeFn(cl, parts)
		close(stop)
		wg.Wait()
	}
}

// TestCloseConsumerNoRace: CloseConsumer closes a direct consumer while
// metadata updates arrive without a fetch starting behind Close's back
// (run with -race: kgo v1.22.3's Close alone lets a metadata update assign
// the partitions again and start a fetch that races with the kill of the
// fetch session).
func TestCloseConsumerNoRace(t *testing.T) {
	closeRace(t, func(cl *kgo.Client, parts map[string][]int32) { CloseConsumer(cl, parts) })
}
