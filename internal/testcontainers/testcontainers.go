// Package testcontainers starts a source and a target Kafka cluster in
// Docker containers (testcontainers-go's kafka module), a third backend for
// kmirror's tests beside kfake and the real brokers of internal/realkafka.
//
// It is a nested Go module (its own go.mod, with a replace directive to the
// kmirror module two directories up), so that users of the kmirror library
// never download Docker client dependencies, and `go test ./...` from the
// repository root does not run it. Run its tests with
//
//	cd internal/testcontainers && go test ./...
//
// They skip when no Docker daemon answers (testcontainers-go's
// SkipIfProviderIsNotHealthy).
//
// The image is confluentinc/confluent-local (KRaft, one node): version
// v0.44.0 of the testcontainers kafka module starts brokers through the
// Confluent image's own scripts (/etc/confluent/docker), so apache/kafka
// images do not start with it.
package testcontainers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	tcgo "github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultImage is the Kafka image StartPair runs unless WithImage says
// otherwise: Confluent Platform 7.5.0, Apache Kafka 3.5 in KRaft mode, the
// image the testcontainers kafka module documents.
const DefaultImage = "confluentinc/confluent-local:7.5.0"

// DefaultStartTimeout bounds the start of both containers (image pull
// included) when the context passed to StartPair has no deadline: 5 minutes.
const DefaultStartTimeout = 5 * time.Minute

// Option configures StartPair; see WithImage and WithStartTimeout.
type Option interface{ apply(*config) }

type optFunc func(*config)

func (f optFunc) apply(c *config) { f(c) }

type config struct {
	image   string
	timeout time.Duration
}

// WithImage sets the Docker image of both containers, e.g.
// "confluentinc/confluent-local:7.6.0". It must be a confluent-local image
// (see the package documentation); an empty name is an error from
// StartPair.
func WithImage(image string) Option { return optFunc(func(c *config) { c.image = image }) }

// WithStartTimeout sets the bound of StartPair when its context has no
// deadline (default DefaultStartTimeout). It must be positive.
func WithStartTimeout(d time.Duration) Option { return optFunc(func(c *config) { c.timeout = d }) }

// Pair is two single-node Kafka clusters running in containers, each with
// its own cluster ID. Stop it with Terminate.
type Pair struct {
	// SourceBrokers and TargetBrokers are the bootstrap addresses
	// ("host:port", reachable from the test process) of the two clusters.
	SourceBrokers, TargetBrokers []string
	// SourceClusterID and TargetClusterID are the cluster IDs the brokers
	// report in their metadata (base64url UUIDs, distinct: each container
	// formats its own storage).
	SourceClusterID, TargetClusterID string

	containers []*tckafka.KafkaContainer
}

// StartPair starts two Kafka containers in parallel and returns their
// bootstrap addresses once both brokers are ready. On error, containers
// already started are terminated. Errors: an invalid option, no Docker
// daemon, an image that cannot be pulled or does not start, ctx (or
// DefaultStartTimeout) expiring; each error is prefixed with
// "testcontainers:" and names the container ("source" or "target").
func StartPair(ctx context.Context, opts ...Option) (*Pair, error) {
	c := config{image: DefaultImage, timeout: DefaultStartTimeout}
	for _, o := range opts {
		o.apply(&c)
	}
	if c.image == "" {
		return nil, errors.New("testcontainers: empty image name")
	}
	if c.timeout <= 0 {
		return nil, fmt.Errorf("testcontainers: start timeout %v is not positive", c.timeout)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	type result struct {
		ctr     *tckafka.KafkaContainer
		brokers []string
		id      string
		err     error
	}
	names := [2]string{"source", "target"}
	var results [2]result
	done := make(chan struct{}, 2)
	for i := range names {
		go func() {
			defer func() { done <- struct{}{} }()
			r := &results[i]
			if r.id, r.err = newClusterID(); r.err != nil {
				return
			}
			// The module's start script formats the storage with a random
			// ID; CLUSTER_ID is set too for images whose scripts read it.
			r.ctr, r.err = tckafka.Run(ctx, c.image, tckafka.WithClusterID(r.id))
			if r.err == nil {
				r.brokers, r.err = r.ctr.Brokers(ctx)
			}
			if r.err == nil {
				r.id, r.err = clusterID(ctx, r.brokers)
			}
		}()
	}
	<-done
	<-done
	p := &Pair{}
	var errs []error
	for i, r := range results {
		if r.ctr != nil {
			p.containers = append(p.containers, r.ctr)
		}
		if r.err != nil {
			errs = append(errs, fmt.Errorf("testcontainers: %s container (%s): %w", names[i], c.image, r.err))
		}
	}
	if len(errs) > 0 {
		if err := p.Terminate(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
	p.SourceBrokers, p.SourceClusterID = results[0].brokers, results[0].id
	p.TargetBrokers, p.TargetClusterID = results[1].brokers, results[1].id
	return p, nil
}

// Terminate stops and removes both containers. It is idempotent; the error
// joins the failures of both terminations.
func (p *Pair) Terminate(ctx context.Context) error {
	var errs []error
	for _, c := range p.containers {
		if err := tcgo.TerminateContainer(c, tcgo.StopContext(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("testcontainers: terminate: %w", err))
		}
	}
	p.containers = nil
	return errors.Join(errs...)
}

// clusterID asks the brokers for their cluster ID.
func clusterID(ctx context.Context, brokers []string) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	return m.Cluster, nil
}

// newClusterID returns a random KRaft cluster ID: 16 random bytes in
// unpadded base64url, the form `kafka-storage random-uuid` prints.
func newClusterID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("testcontainers: cluster id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
