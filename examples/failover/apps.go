package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Phases of the run; every read is tagged with the phase it happened in.
const (
	phaseBefore   = 1 // on us-east-1, before the failure
	phaseOutage   = 2 // on ap-northeast-2, after failover
	phaseFailback = 3 // on us-east-1 again, after fail-back
)

// producer is the order service: it writes numbered orders and remembers
// which cluster acknowledged each one. A record whose produce failed (the
// cluster went away) is sent again to whatever cluster the next run
// targets, so every order is eventually acknowledged exactly as an
// application that retries would do.
type producer struct {
	mu    sync.Mutex // guards the fields below
	next  int
	acked map[int]string // order id -> alias of the cluster that acknowledged it
	retry []int          // ids whose produce failed, resent first
}

func newProducer() *producer { return &producer{acked: map[int]string{}} }

// run produces about rate orders per second to topic until ctx is done.
// It returns nil when ctx is done; produce errors only queue retries.
func (p *producer) run(ctx context.Context, alias string, brokers []string, topic string, rate int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(time.Millisecond),
	)
	if err != nil {
		return err
	}
	var closeOnce sync.Once
	closeCl := func() { closeOnce.Do(cl.Close) }
	defer closeCl()
	// A request in flight to a cluster that died is never answered, and
	// an idempotent producer cannot time its records out (kgo
	// RecordDeliveryTimeout): one second after the stop, closing the
	// client fails them, and they are queued for the next cluster.
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-stopped:
			return
		case <-ctx.Done():
		}
		select {
		case <-stopped:
		case <-time.After(time.Second):
			closeCl()
		}
	}()
	const tick = 10 * time.Millisecond
	perTick := max(1, rate/int(time.Second/tick))
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		ids := p.take(perTick)
		recs := make([]*kgo.Record, len(ids))
		for i, id := range ids {
			recs[i] = &kgo.Record{Key: []byte("order-" + strconv.Itoa(id)), Value: orderValue(id)}
		}
		// Not canceled by the stop: a batch to a live cluster completes;
		// one to a dead cluster is failed by the close above.
		res := cl.ProduceSync(context.WithoutCancel(ctx), recs...)
		p.mu.Lock()
		for i, r := range res {
			if r.Err != nil {
				p.retry = append(p.retry, ids[i])
			} else {
				p.acked[ids[i]] = alias
			}
		}
		p.mu.Unlock()
	}
}

// take returns the ids to send next: pending retries, then new ids.
func (p *producer) take(n int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := min(n, len(p.retry))
	ids := append([]int(nil), p.retry[:k]...)
	p.retry = p.retry[k:]
	for len(ids) < n {
		ids = append(ids, p.next)
		p.next++
	}
	return ids
}

// snapshot returns a copy of the acknowledged ids and the number pending.
func (p *producer) snapshot() (map[int]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[int]string, len(p.acked))
	for id, a := range p.acked {
		out[id] = a
	}
	return out, len(p.retry)
}

func orderValue(id int) []byte {
	return fmt.Appendf(nil, `{"order":%d,"amount":%d.%02d,"currency":"USD"}`, id, id%500, id%100)
}

// orderID parses the id out of a value written by orderValue.
func orderID(v []byte) (int, error) {
	s, ok := strings.CutPrefix(string(v), `{"order":`)
	if !ok {
		return 0, fmt.Errorf("not an order: %q", v)
	}
	end := strings.IndexByte(s, ',')
	if end < 0 {
		return 0, fmt.Errorf("not an order: %q", v)
	}
	return strconv.Atoi(s[:end])
}

// read is one record the consumer processed.
type read struct {
	id        int
	phase     int
	topic     string
	partition int32
	offset    int64
	at        time.Time
}

// consumer is the order processor: a member of consumer group group that
// "processes" (records) every order it reads, then commits synchronously,
// so a crash between the two re-delivers the last batch (at least once).
type consumer struct {
	group string

	mu    sync.Mutex // guards reads
	reads []read
}

// run consumes topics from the group's committed offsets (start decides
// where a partition without a commit starts; kgo.NewOffset().AtCommitted()
// is auto.offset.reset=none) until ctx is done. With graceful, it commits
// and leaves the group at the end; otherwise (the cluster is gone) it drops
// its membership at once. Fetch errors end the run when strict is set.
func (c *consumer) run(ctx context.Context, phase int, brokers []string, start kgo.Offset, strict, graceful bool, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
		kgo.ConsumeStartOffset(start),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.SessionTimeout(3*time.Second),
		kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
	if err != nil {
		return err
	}
	defer func() {
		if graceful {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if cerr := cl.CommitUncommittedOffsets(cctx); cerr != nil && err == nil {
				err = fmt.Errorf("final commit: %w", cerr)
			}
			_ = cl.LeaveGroupContext(cctx)
		} else {
			dead, cancel := context.WithCancel(context.Background())
			cancel()
			_ = cl.LeaveGroupContext(dead) // the coordinator is gone: do not wait for it
		}
		cl.Close()
	}()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if strict {
			if errs := fs.Errors(); len(errs) > 0 {
				e := errs[0]
				return fmt.Errorf("consuming %s[%d]: %w", e.Topic, e.Partition, e.Err)
			}
		}
		var batch []read
		var bad error
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			id, err := orderID(r.Value)
			if err != nil {
				bad = errors.Join(bad, err)
				return
			}
			batch = append(batch, read{id: id, phase: phase, topic: r.Topic, partition: r.Partition, offset: r.Offset, at: now})
		})
		if bad != nil {
			return bad
		}
		if len(batch) == 0 {
			continue
		}
		c.mu.Lock()
		c.reads = append(c.reads, batch...)
		c.mu.Unlock()
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil && strict {
			return fmt.Errorf("commit: %w", err)
		}
	}
}

// snapshot returns a copy of the reads so far.
func (c *consumer) snapshot() []read {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]read(nil), c.reads...)
}

// background runs fn in a goroutine; stop cancels it and returns its error.
type background struct {
	cancel context.CancelFunc
	done   chan error
}

func start(ctx context.Context, fn func(context.Context) error) *background {
	ctx, cancel := context.WithCancel(ctx)
	b := &background{cancel: cancel, done: make(chan error, 1)}
	go func() { b.done <- fn(ctx) }()
	return b
}

func (b *background) stop() error {
	b.cancel()
	return <-b.done
}

// failed returns the goroutine's error if it already ended.
func (b *background) failed() error {
	select {
	case err := <-b.done:
		b.done <- err
		if err == nil {
			err = errors.New("stopped unexpectedly")
		}
		return err
	default:
		return nil
	}
}
