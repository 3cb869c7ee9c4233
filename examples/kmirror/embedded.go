package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
)

// embedded holds the in-process clusters of -embedded mode: one kfake
// cluster per alias taking part in a flow, its cluster ID the alias.
type embedded struct {
	log      *slog.Logger
	clusters []mirror.ClusterConfig
	fakes    map[string]*kfake.Cluster
	sources  []string // aliases that are the source of a replicating flow
	wg       sync.WaitGroup
}

// effective rewrites a flow's settings (the configuration its members
// compare, mirror.WithFlowSettings) to what an embedded member really
// uses: the bootstrap servers of an embedded cluster, in its
// `<alias>[.<role>].bootstrap.servers` keys and in the connection summaries
// of its clients ("bootstrap=... protocol=..."), become the cluster's
// listen addresses. A member running on a copy of
// the file that names those addresses then agrees with this one.
func (e *embedded) effective(settings map[string]string) map[string]string {
	out := make(map[string]string, len(settings))
	for k, v := range settings {
		out[k] = v
		alias, _, _ := strings.Cut(k, ".")
		fc, ok := e.fakes[alias]
		if !ok {
			continue
		}
		addrs := strings.Join(fc.ListenAddrs(), ",")
		switch {
		case strings.HasSuffix(k, "bootstrap.servers"):
			out[k] = addrs
		case strings.HasPrefix(v, "bootstrap="):
			// A connection summary ("<alias>.client": "bootstrap=... protocol=...").
			_, rest, _ := strings.Cut(v, " ")
			out[k] = strings.TrimSpace("bootstrap=" + addrs + " " + rest)
		}
	}
	return out
}

// maxEmbeddedBrokers caps the brokers of one embedded cluster: a larger
// replication factor is then reported by the engine's preflight, as it
// would be on a real cluster.
const maxEmbeddedBrokers = 9

// embeddedBrokers returns how many brokers each embedded cluster gets: 3
// (MM2's default replication factor of internal topics) or the largest
// replication factor the flows ask for.
func embeddedBrokers(flows []mirror.FlowConfig) int {
	n := 3
	for _, f := range flows {
		for _, rf := range []int16{f.ReplicationFactor, f.OffsetSyncsTopicReplicationFactor, f.CheckpointsTopicReplicationFactor,
			f.HeartbeatsTopicReplicationFactor, f.OffsetStorageReplicationFactor} {
			n = max(n, int(rf))
		}
	}
	return min(n, maxEmbeddedBrokers)
}

// startEmbedded starts the clusters. The file's connection settings
// (bootstrap servers, TLS, SASL) and its <alias>.consumer/producer/admin.*
// client settings are not used: the clusters are plain in-process brokers.
func startEmbedded(props *mirror.Properties, log *slog.Logger) (*embedded, error) {
	e := &embedded{log: log, fakes: map[string]*kfake.Cluster{}}
	brokers := embeddedBrokers(props.Flows())
	for _, c := range props.Clusters() {
		fc, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.ClusterID(c.Alias))
		if err != nil {
			e.close()
			return nil, fmt.Errorf("starting embedded cluster %s: %w", c.Alias, err)
		}
		e.fakes[c.Alias] = fc
		e.clusters = append(e.clusters, mirror.ClusterConfig{Alias: c.Alias, Client: []kgo.Opt{kgo.SeedBrokers(fc.ListenAddrs()...)}})
		log.Info("embedded cluster", "alias", c.Alias, "brokers", strings.Join(fc.ListenAddrs(), ","),
			"replaces", strings.Join(props.BootstrapServers(c.Alias), ","),
			"note", "the file's security and client settings of this cluster are not used")
	}
	seen := map[string]bool{}
	for _, f := range props.Flows() {
		if !f.Disabled && !seen[f.Source] {
			seen[f.Source] = true
			e.sources = append(e.sources, f.Source)
		}
	}
	return e, nil
}

// createDemoTopics creates the demo topics on every source cluster.
func (e *embedded) createDemoTopics(ctx context.Context, topics []demoTopic) error {
	if len(e.sources) == 0 {
		return errors.New("-demo-topics: no flow replicates (every pair is disabled), so there is no source cluster to feed")
	}
	for _, alias := range e.sources {
		for _, t := range topics {
			if err := e.fakes[alias].CreateTopic(t.name, t.partitions, nil); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				return fmt.Errorf("creating demo topic %s on embedded cluster %s: %w", t.name, alias, err)
			}
			e.log.Info("demo topic", "cluster", alias, "topic", t.name, "partitions", t.partitions)
		}
	}
	return ctx.Err()
}

// feed produces rate records per second to every demo topic of every
// source cluster until ctx is done. Records have a key, a JSON value and
// a header, and are spread round-robin over the partitions.
func (e *embedded) feed(ctx context.Context, topics []demoTopic, rate int) {
	for _, alias := range e.sources {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.fakes[alias].ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.ClientID("mirrormaker-demo-producer"))
		if err != nil {
			e.log.Error("demo producer", "cluster", alias, "err", err)
			continue
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer cl.Close()
			var seq int64
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				recs := make([]*kgo.Record, 0, rate*len(topics))
				for _, tp := range topics {
					for range rate {
						seq++
						recs = append(recs, &kgo.Record{Topic: tp.name, Key: fmt.Appendf(nil, "key-%d", seq%1000),
							Value:   fmt.Appendf(nil, `{"cluster":%q,"topic":%q,"seq":%d}`, alias, tp.name, seq),
							Headers: []kgo.RecordHeader{{Key: "producer", Value: []byte("mirrormaker-demo")}}})
					}
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil && ctx.Err() == nil {
					e.log.Warn("demo produce", "cluster", alias, "err", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
}

// close waits for the feeders and stops the clusters.
func (e *embedded) close() {
	e.wg.Wait()
	for _, fc := range e.fakes {
		fc.Close()
	}
}
