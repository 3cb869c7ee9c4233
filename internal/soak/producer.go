package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producer writes the soak's steady stream to the source, directly (not
// through a proxy): every record goes first to the ledger topic, which the
// mirror does not replicate, and, once the ledger has acknowledged it,
// identical, to the same partition of the stream topic, which the mirror
// replicates. So every record the mirror can copy is already in the ledger
// (written the other way round, or both at once, a stream partition back
// from a broker restart before its ledger twin lets verify read a copy
// whose ledger record is not written yet: an "unexpected" target record).
// One idempotent producer writes both, each topic in ledger order, so a
// record has the same offset in both topics; every pair is checked when
// acknowledged.
type producer struct {
	cl             *kgo.Client
	stream, ledger string
	parts          int32
	size           int
	run            string // header value naming the scenario

	mu  sync.Mutex // orders the ledger's Produce calls
	seq int64

	// fwd queues the stream records whose ledger twins are acknowledged,
	// in acknowledgement order (per partition, the ledger's order); the
	// forwarder goroutine produces them. Unbounded, so that a ledger
	// promise never blocks on a full producer buffer.
	fwdMu   sync.Mutex
	fwd     []*kgo.Record
	fwdWake chan struct{} // capacity 1: the forwarder has work

	rate       atomic.Int64 // steady records per second
	pairs      atomic.Int64 // pairs handed to the client
	acked      atomic.Int64 // pairs acknowledged on both topics
	settled    atomic.Int64 // pairs acknowledged or failed
	failed     atomic.Int64 // records that failed
	misaligned atomic.Int64 // pairs with different offsets
	errMu      sync.Mutex
	firstErr   error

	stop    chan struct{}
	done    chan struct{}
	fwdStop chan struct{}
	fwdDone chan struct{}
}

func newProducer(brokers []string, stream, ledger string, parts int32, size, rate int, run string) (*producer, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedBytes(64<<20),
		kgo.MaxBufferedRecords(1<<20),
		kgo.UnknownTopicRetries(-1),              // a restarting broker may not know the topic for a moment
		kgo.MetadataMinAge(250*time.Millisecond), // back to a restarted broker's partitions soon
		// A broker being restarted may close a new connection before its
		// first response; franz-go then gives up at once (ErrFirstReadEOF,
		// its guess at a TLS or SASL mistake) and a failed ledger record
		// ends the run. The soak's configuration is known good: retry.
		kgo.AlwaysRetryEOF(),
	)
	if err != nil {
		return nil, err
	}
	p := &producer{cl: cl, stream: stream, ledger: ledger, parts: parts, size: size, run: run,
		stop: make(chan struct{}), done: make(chan struct{}),
		fwdWake: make(chan struct{}, 1), fwdStop: make(chan struct{}), fwdDone: make(chan struct{})}
	p.rate.Store(int64(rate))
	go p.forward() // owner: the producer; close stops it
	return p, nil
}

// start runs the steady stream until close.
func (p *producer) start() {
	go func() { // owner: the producer; close stops it
		defer close(p.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		base, sent := time.Now(), int64(0)
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			due := int64(time.Since(base).Seconds() * float64(p.rate.Load()))
			if due-sent > p.rate.Load() {
				// More than a second behind (the source was down and the
				// buffer full): keep the rate, do not burst.
				base, sent, due = time.Now(), 0, 0
			}
			for ; sent < due; sent++ {
				p.producePair()
			}
		}
	}()
}

// burst writes about n bytes of records as fast as the source takes them
// (on top of the steady stream) and returns once they are handed to the
// client (not acknowledged).
func (p *producer) burst(ctx context.Context, n int64) {
	for i := int64(0); i < n/int64(p.size) && ctx.Err() == nil; i++ {
		p.producePair()
	}
}

// producePair produces record seq to the ledger; its promise queues the
// stream twin.
func (p *producer) producePair() {
	p.mu.Lock()
	defer p.mu.Unlock()
	seq := p.seq
	p.seq++
	part := int32(seq % int64(p.parts))
	key := []byte(fmt.Sprintf("p%02d-%012d", part, seq))
	val := value(seq, p.size)
	hdr := []kgo.RecordHeader{{Key: "soak-seq", Value: []byte(strconv.FormatInt(seq, 10))}, {Key: "soak-run", Value: []byte(p.run)}}
	r := &kgo.Record{Topic: p.ledger, Partition: part, Key: key, Value: val, Headers: hdr, Timestamp: time.Now()}
	p.pairs.Add(1)
	p.cl.Produce(context.Background(), r, p.ledgerDone)
}

// ledgerDone runs when a ledger record is acknowledged (or failed): it
// queues the stream twin, or gives the pair up.
func (p *producer) ledgerDone(r *kgo.Record, err error) {
	if err != nil {
		p.failed.Add(1)
		p.settled.Add(1)
		p.setErr(fmt.Errorf("producing to %s[%d]: %w (its stream twin is not written)", r.Topic, r.Partition, err))
		return
	}
	// The stream twin carries its ledger offset in its Context, which
	// the stream promise checks.
	twin := &kgo.Record{Topic: p.stream, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp,
		Context: context.WithValue(context.Background(), ledgerOffKey{}, r.Offset)}
	p.fwdMu.Lock()
	p.fwd = append(p.fwd, twin)
	p.fwdMu.Unlock()
	select {
	case p.fwdWake <- struct{}{}:
	default:
	}
}

type ledgerOffKey struct{}

// forward produces the queued stream records in queue order until close.
func (p *producer) forward() {
	defer close(p.fwdDone)
	for {
		select {
		case <-p.fwdStop:
			return
		case <-p.fwdWake:
		}
		p.fwdMu.Lock()
		batch := p.fwd
		p.fwd = nil
		p.fwdMu.Unlock()
		for _, r := range batch {
			p.cl.Produce(context.Background(), r, p.streamDone)
		}
	}
}

// streamDone checks that a stream record landed at its ledger twin's
// offset.
func (p *producer) streamDone(r *kgo.Record, err error) {
	defer p.settled.Add(1)
	want, _ := r.Context.Value(ledgerOffKey{}).(int64)
	switch {
	case err != nil:
		p.failed.Add(1)
		p.setErr(fmt.Errorf("producing to %s[%d]: %w (its ledger twin is at offset %d)", r.Topic, r.Partition, err, want))
	case r.Offset != want:
		p.misaligned.Add(1)
		p.setErr(fmt.Errorf("record at %s[%d] offset %d is at offset %d in the ledger: the ledger no longer mirrors the stream",
			p.stream, r.Partition, r.Offset, want))
	default:
		p.acked.Add(1)
	}
}

func (p *producer) setErr(err error) {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	if p.firstErr == nil {
		p.firstErr = err
	}
}

// err returns the first produce or alignment error.
func (p *producer) err() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.firstErr
}

// close stops the steady stream and waits until every pair is
// acknowledged on both topics (or failed, or ctx ends).
func (p *producer) close(ctx context.Context) error {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	var err error
	// A Flush can end between a ledger acknowledgement and the Produce of
	// its stream twin: flush until every pair is settled.
	for err == nil && p.settled.Load() < p.pairs.Load() {
		if err = p.cl.Flush(ctx); err == nil && p.settled.Load() < p.pairs.Load() {
			err = sleep(ctx, 10*time.Millisecond)
		}
	}
	close(p.fwdStop)
	<-p.fwdDone
	p.cl.Close()
	if e := p.err(); e != nil {
		return e
	}
	return err
}

// value returns the deterministic value of record seq: size bytes from a
// xorshift sequence seeded with seq (incompressible, distinct per record).
func value(seq int64, size int) []byte {
	b := make([]byte, size+8)
	x := uint64(seq)*0x9E3779B97F4A7C15 + 1
	for i := 0; i < size; i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	return b[:size]
}
