package mirror

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Stopping a partition's produces at franz-go's failure.
//
// When the target refuses a produce request for good (say
// TOPIC_AUTHORIZATION_FAILED), franz-go fails every record it buffered for
// the partition and bumps the idempotent producer's epoch at once, on the
// goroutine that read the response; the records' promises run later, on
// the promise goroutine, behind whatever results it is still delivering.
// Records the poll loop produces for the partition in between would be
// sent under the new epoch and written, after a hole: the partition
// restarts at the failed record, so they would be written twice, out of
// order.
//
// franz-go runs no hook of ours synchronously when it fails a batch; what
// it does run is its logger: it logs the failure, naming the topic and
// partition, on that goroutine right before it fails the records
// (failLogger). And before it sends a partition's oldest batch for the
// first time, it checks the context of the batch's first record
// (kgo.Record.Context): a canceled one fails that batch and every record
// buffered behind it instead. So every record a partition state produces
// carries the state's produceGate as its context, and failLogger closes
// the gate when franz-go reports the partition's batch failed. Records
// produced after the failure then form a new oldest batch whose first
// record carries the closed gate, and franz-go fails them unsent; the
// poll loop also stops producing to a closed gate (inbox.postFetched). The
// regression test holds the promise goroutine at the failure's result to
// keep that window open.

// errPartitionStopped is the result of a record franz-go failed unsent
// because its partition's gate closed: franz-go had failed an earlier
// record of the partition. It wraps context.Canceled, which franz-go
// expects of a record's canceled context (a producer ID request canceled
// by it fails only the partitions whose first record carries it).
var errPartitionStopped = &gateError{}

type gateError struct{}

func (*gateError) Error() string {
	return "not produced: franz-go failed an earlier record of the partition"
}
func (*gateError) Unwrap() error { return context.Canceled }

// produceGate is the context of every record a partition state produces:
// open while the partition may be produced to, closed (for good) once
// franz-go failed a batch of it. It carries no deadline and no values.
type produceGate struct {
	once sync.Once
	done chan struct{}
}

func newProduceGate() *produceGate { return &produceGate{done: make(chan struct{})} }

func (g *produceGate) close() { g.once.Do(func() { close(g.done) }) }

// closed reports whether the gate closed.
func (g *produceGate) closed() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// Deadline is none.
func (*produceGate) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done is closed when franz-go failed a batch of the partition.
func (g *produceGate) Done() <-chan struct{} { return g.done }

// Err is errPartitionStopped once the gate closed, else nil.
func (g *produceGate) Err() error {
	if g.closed() {
		return errPartitionStopped
	}
	return nil
}

// Value is nil: the gate carries no values.
func (*produceGate) Value(any) any { return nil }

// franz-go's log messages (v1.22) that precede, on the same goroutine,
// its failing of every buffered record of a partition: a produce response
// that failed the partition's batch for good (idempotent, and
// transactional), and a partition whose metadata kept failing to load
// (with will_fail true).
const (
	kgoBatchFailed     = "batch in a produce request failed"
	kgoTxnBatchFailed  = "batch errored, failing the producer ID"
	kgoLoadErrFailsAll = "produce partition load error, bumping error count on first stored batch"
)

// failLogger is the unit producer's kgo.Logger: it passes every message
// inner asks for to inner, and closes the produce gate of the partition
// franz-go is about to fail (trip), synchronously, before franz-go fails
// its records. It asks franz-go for info messages at least (the level of
// those messages); inner gets only what its own level asks for.
type failLogger struct {
	inner kgo.Logger // nil: none
	trip  func(topic string, partition int32)
}

func (l *failLogger) Level() kgo.LogLevel {
	if l.inner != nil {
		return max(l.inner.Level(), kgo.LogLevelInfo)
	}
	return kgo.LogLevelInfo
}

func (l *failLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	switch msg {
	case kgoBatchFailed, kgoTxnBatchFailed, kgoLoadErrFailsAll:
		l.failed(msg, keyvals)
	}
	if l.inner != nil && l.inner.Level() >= level {
		l.inner.Log(level, msg, keyvals...)
	}
}

// failed trips the gate of the partition a failure message names.
func (l *failLogger) failed(msg string, keyvals []any) {
	var topic string
	partition, willFail := int32(-1), msg != kgoLoadErrFailsAll
	var err error
	for i := 0; i+1 < len(keyvals); i += 2 {
		switch k, _ := keyvals[i].(string); k {
		case "topic":
			topic, _ = keyvals[i+1].(string)
		case "partition":
			partition, _ = keyvals[i+1].(int32)
		case "err":
			err, _ = keyvals[i+1].(error)
		case "will_fail":
			willFail, _ = keyvals[i+1].(bool)
		}
	}
	if topic == "" || partition < 0 || err == nil || !willFail || errors.Is(err, kgo.ErrClientClosed) {
		return
	}
	l.trip(topic, partition)
}

// kgoFailed closes the produce gate of the unit's feeds that produce to
// partition partition of remote topic remote (franz-go's sink goroutine,
// through failLogger).
func (u *unit) kgoFailed(remote string, partition int32) {
	for _, f := range *u.feeds.Load() {
		if f.remote == remote && f.partition == partition {
			f.gate.close()
		}
	}
}
