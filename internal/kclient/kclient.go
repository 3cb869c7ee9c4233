// Package kclient creates franz-go clients one at a time.
//
// kgo.NewClient and kgo.ValidateOpts validate a client's options, and the
// validation of kgo.ProducerBatchCompression reorders the option's codec
// slice in place (kgo.DefaultCompressor removes duplicates). kmirror builds
// many clients from the same options (a consumer and a producer per slot,
// the singleton duties' clients, readers), often at the same moment, so
// those writes would race. Client creation does no I/O (kgo connects
// lazily), so serializing it costs nothing measurable.
//
// It also holds what kmirror's clients share around kgo: closing a direct
// consumer, a produce that stops waiting with its context, and dropping an
// admin client's cached metadata (ForgetMetadata, with ListAllTopics).
package kclient

import (
	"context"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var mu sync.Mutex

// New is kgo.NewClient, serialized with every other call of this package.
func New(opts ...kgo.Opt) (*kgo.Client, error) {
	mu.Lock()
	defer mu.Unlock()
	return kgo.NewClient(opts...)
}

// Validate is kgo.ValidateOpts, serialized like New.
func Validate(opts ...kgo.Opt) error {
	mu.Lock()
	defer mu.Unlock()
	return kgo.ValidateOpts(opts...)
}

// OptValue is cl.OptValue(opt), serialized like New: an option's value may
// be a slice New reorders.
func OptValue(cl *kgo.Client, opt any) any {
	mu.Lock()
	defer mu.Unlock()
	return cl.OptValue(opt)
}

// Locked runs f serialized with New (f reads option values that New may
// reorder).
func Locked(f func()) {
	mu.Lock()
	defer mu.Unlock()
	f()
}

// CloseConsumer closes cl, a direct consumer (kgo.ConsumePartitions and
// AddConsumePartitions) of parts (topic -> partitions; partitions not
// consumed are ignored). It removes parts from cl first: kgo's Close
// unassigns a direct consumer's partitions but keeps them pinned, so a
// metadata update that arrives during Close assigns them again and starts
// a fetch that races with Close ending the fetch sessions (franz-go
// v1.22.3, found by the race detector). Removed, they cannot come back.
func CloseConsumer(cl *kgo.Client, parts map[string][]int32) {
	if len(parts) > 0 {
		cl.RemoveConsumePartitions(parts)
	}
	cl.Close()
}

// Partitions returns the partitions of a kgo.ConsumePartitions map, in the
// shape CloseConsumer takes.
func Partitions(m map[string]map[int32]kgo.Offset) map[string][]int32 {
	out := make(map[string][]int32, len(m))
	for t, ps := range m {
		for p := range ps {
			out[t] = append(out[t], p)
		}
	}
	return out
}

// ProduceWait produces recs and waits until the target acknowledged them
// all or ctx ends, whichever comes first: unlike ProduceSync it does not
// wait for records already sent to a broker that stopped answering (they
// complete or fail in the background, in order, before any later record
// of the same partition). The heartbeat emitter and the status topic's
// publisher use it so that a stop is not held by a dead target.
func ProduceWait(ctx context.Context, cl *kgo.Client, recs ...*kgo.Record) error {
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	wg.Add(len(recs))
	for _, r := range recs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			wg.Done()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		mu.Lock()
		defer mu.Unlock()
		return first
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ForgetMetadata drops topics from the metadata cl cached while serving
// admin requests (kadm's ListTopics, Metadata, ListEndOffsets, a Metadata
// request of our own). franz-go (v1.22) keeps a copy of every topic each
// Metadata response described, with its partitions held twice (about 300
// bytes a partition), until a later request prunes it, which an idle admin
// client does not send: each admin client of a member replicating 6 000
// partitions held about 2 MB of copies too old (MetadataMinAge) to answer
// any request (issue 22). The next request about a forgotten topic fetches its
// metadata from the brokers, as it would have once that age passed.
//
// A client that forgets topics must list all topics with [ListAllTopics],
// never kadm's ListTopics without names: kgo answers a listing of all
// topics from its cache for MetadataMinAge after the last one, and a cache
// missing forgotten topics would answer without them (a source topic
// taken for deleted).
//
// cl must not produce to or consume the topics: this is
// kgo.Client.PurgeTopicsFromClient, which ends those too. It does not
// modify topics. It waits for cl's metadata goroutine, so callers call it
// after a request that succeeded (the cluster answers).
func ForgetMetadata(cl *kgo.Client, topics []string) {
	if cl == nil || len(topics) == 0 {
		return
	}
	cl.PurgeTopicsFromClient(slices.Clone(topics)...) // it sorts its argument
}

// ListAllTopics lists every topic of cl's cluster but the internal ones,
// as kadm's ListTopics without names does, always from the brokers: kadm
// answers from kgo's cache for MetadataMinAge after the last listing, which
// misses the topics [ForgetMetadata] dropped. A topic the principal may not
// describe is left out by the brokers; a listing refused as a whole
// returns a *kadm.AuthError, as kadm does.
func ListAllTopics(ctx context.Context, cl *kgo.Client) (kadm.TopicDetails, error) {
	req := kmsg.NewPtrMetadataRequest() // Topics nil: all topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	tds := make(kadm.TopicDetails, len(resp.Topics))
	for _, t := range resp.Topics {
		terr := kerr.ErrorForCode(t.ErrorCode)
		switch terr {
		case kerr.ClusterAuthorizationFailed, kerr.TopicAuthorizationFailed:
			return nil, &kadm.AuthError{Err: terr}
		}
		if t.IsInternal || t.Topic == nil {
			continue
		}
		td := kadm.TopicDetail{Topic: *t.Topic, ID: t.TopicID, IsInternal: t.IsInternal, Err: terr,
			Partitions: make(map[int32]kadm.PartitionDetail, len(t.Partitions))}
		for _, p := range t.Partitions {
			td.Partitions[p.Partition] = kadm.PartitionDetail{Topic: td.Topic, Partition: p.Partition,
				Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR,
				OfflineReplicas: p.OfflineReplicas, Err: kerr.ErrorForCode(p.ErrorCode)}
		}
		tds[td.Topic] = td
	}
	return tds, nil
}
