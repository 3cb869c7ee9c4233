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
// through a proxy): every record goes to the stream topic, which the
// mirror replicates, and then, identical, to the same partition of the
// ledger topic, which it does not. One idempotent producer writes both in
// call order, so a record has the same offset in both topics; every pair
// is checked when acknowledged.
type producer struct {
	cl             *kgo.Client
	stream, ledger string
	parts          int32
	size           int
	run            string // header value naming the scenario

	mu  sync.Mutex // orders each pair of Produce calls
	seq int64

	rate       atomic.Int64 // steady records per second
	pairs      atomic.Int64 // pairs handed to the client
	acked      atomic.Int64 // pairs acknowledged on both topics
	failed     atomic.Int64 // records that failed
	misaligned atomic.Int64 // pairs with different offsets
	errMu      sync.Mutex
	firstErr   error

	stop chan struct{}
	done chan struct{}
}

func newProducer(brokers []string, stream, ledger string, parts int32, size, rate int, run string) (*producer, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedBytes(64<<20),
		kgo.MaxBufferedRecords(1<<20),
		kgo.UnknownTopicRetries(-1), // a restarting broker may not know the topic for a moment
	)
	if err != nil {
		return nil, err
	}
	p := &producer{cl: cl, stream: stream, ledger: ledger, parts: parts, size: size, run: run,
		stop: make(chan struct{}), done: make(chan struct{})}
	p.rate.Store(int64(rate))
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

// producePair produces record seq to the stream and the ledger.
func (p *producer) producePair() {
	p.mu.Lock()
	defer p.mu.Unlock()
	seq := p.seq
	p.seq++
	part := int32(seq % int64(p.parts))
	key := []byte(fmt.Sprintf("p%02d-%012d", part, seq))
	val := value(seq, p.size)
	hdr := []kgo.RecordHeader{{Key: "soak-seq", Value: []byte(strconv.FormatInt(seq, 10))}, {Key: "soak-run", Value: []byte(p.run)}}
	ts := time.Now()
	pr := &pair{}
	for i, topic := range []string{p.stream, p.ledger} {
		r := &kgo.Record{Topic: topic, Partition: part, Key: key, Value: val, Headers: hdr, Timestamp: ts}
		p.cl.Produce(context.Background(), r, p.promise(pr, i))
	}
	p.pairs.Add(1)
}

// pair collects the offsets of one record in the stream and the ledger.
type pair struct {
	offs [2]int64
	n    atomic.Int32
}

func (p *producer) promise(pr *pair, i int) func(*kgo.Record, error) {
	return func(r *kgo.Record, err error) {
		if err != nil {
			p.failed.Add(1)
			p.setErr(fmt.Errorf("producing to %s[%d]: %w", r.Topic, r.Partition, err))
			pr.offs[i] = -1
		} else {
			pr.offs[i] = r.Offset
		}
		if pr.n.Add(1) == 2 {
			if pr.offs[0] != pr.offs[1] || pr.offs[0] < 0 {
				p.misaligned.Add(1)
				p.setErr(fmt.Errorf("record at %s[%d] offset %d is at offset %d in the ledger: the ledger no longer mirrors the stream",
					p.stream, r.Partition, pr.offs[0], pr.offs[1]))
			} else {
				p.acked.Add(1)
			}
		}
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

// close stops the steady stream and waits until every record is
// acknowledged (or ctx ends).
func (p *producer) close(ctx context.Context) error {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	err := p.cl.Flush(ctx)
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
