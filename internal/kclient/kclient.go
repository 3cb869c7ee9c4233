// Package kclient creates franz-go clients one at a time.
//
// kgo.NewClient and kgo.ValidateOpts validate a client's options, and the
// validation of kgo.ProducerBatchCompression reorders the option's codec
// slice in place (kgo.DefaultCompressor removes duplicates). kmirror builds
// many clients from the same options (a consumer and a producer per slot,
// the singleton duties' clients, readers), often at the same moment, so
// those writes would race. Client creation does no I/O (kgo connects
// lazily), so serializing it costs nothing measurable.
package kclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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

// Unreachable is the error of a request to the cluster alias (what is
// "cluster", "source cluster" or "target cluster") that failed with err:
// "<what> <alias> unreachable: <err>", with a hint where err says that a
// broker answered and then refused the client. A listener whose security
// protocol the client does not speak, or SASL credentials it rejects,
// end in the broker closing the connection (EOF) or in
// SASL_AUTHENTICATION_FAILED, not in a cluster that is down (a new
// user's try, stop 38). Secrets are never part of err.
func Unreachable(what, alias string, err error) error {
	return fmt.Errorf("%s %s unreachable: %w%s", what, alias, err, Hint(alias, err))
}

// Hint is [Unreachable]'s hint for err, a request's error against the
// cluster alias: " (...)" naming what to check, or "" when err says
// nothing of a broker that answered and refused the client.
func Hint(alias string, err error) string {
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Sprintf(" (the broker rejected the credentials: check %s.sasl.jaas.config and %s.sasl.mechanism)", alias, alias)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf(" (no answer in time: a broker down or overloaded; if this cluster never answered, "+
			"a security.protocol the listener does not speak looks like this, a TLS client on a plaintext listener waiting for ever: check %s.security.protocol)", alias)
	case notFound(err):
		return fmt.Sprintf(" (the host name does not resolve: check %s.bootstrap.servers, and the brokers' advertised.listeners)", alias)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf(" (the broker closed the connection: a broker stopping does that; if this cluster never answered, "+
			"a security.protocol the listener does not speak, or SASL credentials it rejects, look like this: check %s.security.protocol and %s.sasl.*)", alias, alias)
	}
	return ""
}

// Probe asks a client of opts for the cluster's brokers, within timeout
// (its retries included), and returns the request's error.
func Probe(ctx context.Context, timeout time.Duration, opts ...kgo.Opt) error {
	cl, err := New(append(opts[:len(opts):len(opts)], kgo.RetryTimeout(timeout))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(pctx)
	return err
}

// ProbeTimeout bounds a [Refusal] probe before an operator's request: a
// cluster that refuses the client does so within a second or two, and
// one refusing connections (a broker restarting) gets this long to listen
// again.
const ProbeTimeout = 5 * time.Second

// refusedRetry is the wait between two of [Refusal]'s probes of a cluster
// refusing connections.
const refusedRetry = 250 * time.Millisecond

// Refusal probes the cluster as [Probe] does, before a command or
// request reads or writes it, and returns the probe's error when it says
// the cluster refused connections or the client (connections refused for
// the whole timeout; any other dial that failed at once: a host name that
// does not resolve, no route to the host; a broker closing the
// connection: a security.protocol it does not speak, or SASL credentials
// it rejects, or the broker's SASL refusal), else nil (it answered, or
// did not answer in time: the caller's own requests, under their
// deadline, say what they find). Without it, such a cluster made the
// caller retry until its deadline and say "context deadline exceeded"
// with no hint (operators' finds: a restart request through the REST API
// waited 30 s for that), or the caller's first read said its dial error
// bare, without the cluster being named unreachable (kmirror failover:
// "reading the status topic of A->B on B: ...: unable to dial: ...: no
// such host"). A cluster refusing connections is probed again until
// timeout: the first refusal failed a restart request at once while a
// broker restarted, where the request's own writes waited for it
// (TestBrkTRefusalTargetBackWithinProbe). One refusing them longer than
// timeout still fails the caller, sooner than its own deadline: the
// operator retries once the cluster is back.
func Refusal(ctx context.Context, timeout time.Duration, opts ...kgo.Opt) error {
	deadline := time.Now().Add(timeout)
	for {
		err := Probe(ctx, time.Until(deadline), opts...)
		if errors.Is(err, syscall.ECONNREFUSED) && time.Until(deadline) > refusedRetry {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(refusedRetry):
				continue
			}
		}
		if Refused(err) {
			return err
		}
		return nil
	}
}

// Refused reports whether err, a request's error against a cluster, says
// the cluster refused connections or the client, at once and for good
// until someone acts: a refused connection, any other dial that failed
// without a timeout (a host name that does not resolve, no route to the
// host), a broker closing the connection (a security.protocol it does not
// speak, SASL credentials it rejects, a broker stopping), or the broker's
// SASL refusal ([Rejected]). A timeout or a cancel is not: the cluster
// may be slow.
func Refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || dialFailed(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || Rejected(err)
}

// Rejected reports whether err is a broker's refusal of the client's SASL
// authentication: a broker answered, so the cluster is up.
func Rejected(err error) bool {
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) || errors.Is(err, kerr.IllegalSaslState)
}

// dialFailed reports whether err says that a connection could not be
// opened, for a reason other than a timeout or the caller's cancel: the
// answer is final (a name the resolver does not know, no route), where a
// dial that timed out may be a broker slow to accept, left to the
// caller's deadline.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && !op.Timeout() && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// notFound reports whether err is the resolver's answer that a host name
// does not exist.
func notFound(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) && dns.IsNotFound
}
