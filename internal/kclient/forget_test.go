package kclient

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataCounter counts the Metadata requests a client sent.
type metadataCounter struct{ n atomic.Int64 }

func (c *metadataCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.Metadata.Int16() && err == nil {
		c.n.Add(1)
	}
}

func forgetCluster(t *testing.T) (*kgo.Client, *metadataCounter) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "alpha", "beta", "gamma"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	mc := &metadataCounter{}
	// A long MetadataMinAge: every cached answer below is fresh.
	cl, err := New(kgo.SeedBrokers(c.ListenAddrs()...), kgo.MetadataMinAge(time.Minute), kgo.WithHooks(mc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, mc
}

// TestForgetMetadataDropsCachedTopics: a topic kadm listed is answered from
// kgo's cache (no Metadata request) until ForgetMetadata drops it; then the
// next listing asks the brokers again, and finds every partition.
func TestForgetMetadataDropsCachedTopics(t *testing.T) {
	cl, mc := forgetCluster(t)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.ListTopics(ctx, "alpha", "beta"); err != nil {
		t.Fatal(err)
	}
	before := mc.n.Load()
	if _, err := adm.ListTopics(ctx, "alpha", "beta"); err != nil {
		t.Fatal(err)
	}
	if got := mc.n.Load() - before; got != 0 {
		t.Fatalf("a fresh cached listing sent %d Metadata requests, want 0", got)
	}
	names := []string{"beta", "alpha"}
	ForgetMetadata(cl, names)
	if !slices.Equal(names, []string{"beta", "alpha"}) {
		t.Fatalf("ForgetMetadata reordered its argument: %v", names)
	}
	before = mc.n.Load()
	td, err := adm.ListTopics(ctx, "alpha", "beta")
	if err != nil {
		t.Fatal(err)
	}
	if got := mc.n.Load() - before; got != 1 {
		t.Fatalf("the listing after ForgetMetadata sent %d Metadata requests, want 1", got)
	}
	if len(td["alpha"].Partitions) != 3 || len(td["beta"].Partitions) != 3 {
		t.Fatalf("listed %d and %d partitions of alpha and beta, want 3 each", len(td["alpha"].Partitions), len(td["beta"].Partitions))
	}
}

// TestListAllTopicsAfterForgetMetadata is the regression test of the
// replication that never started (found while adding ForgetMetadata): kadm's
// ListTopics without names answers from kgo's cache for MetadataMinAge after
// the last such listing, so after ForgetMetadata it lists none of the
// forgotten topics; discovery took every source topic for deleted.
// ListAllTopics asks the brokers every time.
func TestListAllTopicsAfterForgetMetadata(t *testing.T) {
	cl, _ := forgetCluster(t)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	all := []string{"alpha", "beta", "gamma"}

	td, err := ListAllTopics(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := td.Names(); !slices.Equal(got, all) {
		t.Fatalf("ListAllTopics = %v, want %v", got, all)
	}
	for _, n := range all {
		if d := td[n]; d.Err != nil || len(d.Partitions) != 3 || d.ID == [16]byte{} || d.Partitions[2].Partition != 2 || d.Partitions[2].Topic != n {
			t.Fatalf("ListAllTopics[%s] = %+v, want 3 partitions, an ID, no error", n, d)
		}
	}
	ForgetMetadata(cl, td.Names())
	td, err = ListAllTopics(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := td.Names(); !slices.Equal(got, all) {
		t.Fatalf("ListAllTopics after ForgetMetadata = %v, want %v", got, all)
	}

	// The hazard ListAllTopics avoids (franz-go v1.22.3, kadm v1.20.0): if
	// this starts listing every topic, kgo no longer answers an all-topics
	// listing from a cache ForgetMetadata thinned, and ListAllTopics could
	// go.
	if _, err := adm.ListTopics(ctx); err != nil {
		t.Fatal(err)
	}
	ForgetMetadata(cl, all)
	stale, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) == len(all) {
		t.Logf("kadm's ListTopics lists all %d topics after ForgetMetadata: kgo's all-topics cache hazard is gone", len(all))
	} else {
		t.Logf("kadm's ListTopics lists %v after ForgetMetadata (the hazard ListAllTopics avoids)", stale.Names())
	}
}
