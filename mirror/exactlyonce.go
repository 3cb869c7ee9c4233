package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// transactionTimeout is the transaction timeout an exactly-once unit asks
// the coordinator for unless the target's producer options set one: the
// Java producer's default (60 s, what MM2 runs with), and with
// transaction.boundary=interval long enough for a transaction open for the
// whole interval to commit (the interval plus admin.timeout.ms).
func transactionTimeout(c *FlowConfig) time.Duration {
	d := 60 * time.Second
	if c.TransactionBoundary == TransactionBoundaryInterval {
		d = max(d, c.TransactionInterval+c.AdminTimeout)
	}
	return d
}

// initAdvice adds to err, an InitProducerId error of transactional
// producer cl on cluster target, what to change when the target refused
// it for its configuration: the transaction timeout cl asked for
// (INVALID_TRANSACTION_TIMEOUT: above the brokers'
// transaction.max.timeout.ms), or the transactional id's ACL
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Any other error is returned as
// is.
func initAdvice(err error, cl *kgo.Client, target string) error {
	switch {
	case errors.Is(err, kerr.InvalidTransactionTimeout):
		asked, _ := cl.OptValue(kgo.TransactionTimeout).(time.Duration)
		return fmt.Errorf("%w; exactly once asks %s for transactions of up to transaction.timeout.ms=%d: set %s.producer.transaction.timeout.ms "+
			"(ClusterConfig.Producer: kgo.TransactionTimeout) to at most the brokers' transaction.max.timeout.ms "+
			"(with transaction.boundary=interval, transactions then commit before it if the interval is longer), or raise transaction.max.timeout.ms on %s's brokers",
			err, target, asked.Milliseconds(), target, target)
	case errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		id, _ := cl.OptValue(kgo.TransactionalID).(string)
		// "<group id>-<slot>": every slot's id has the prefix "<group id>-".
		prefix := strings.TrimRight(id, "0123456789")
		return fmt.Errorf("%w; grant kmirror WRITE and DESCRIBE on transactional id %s on %s "+
			"(a PREFIXED TransactionalId ACL on %s covers every slot, ACLS.md); retried automatically",
			err, id, target, prefix)
	}
	return err
}

// isFenced reports errors by which the transaction coordinator says another
// producer with the unit's transactional id took over.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}

// initErrKept reports whether kgo keeps err, an error of ProducerID, as the
// producer's state: an InitProducerId response error that is neither
// retriable nor CONCURRENT_TRANSACTIONS (kgo discards those, and request
// failures, and loads the id again at the next call).
func initErrKept(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && !ke.Retriable && !errors.Is(err, kerr.ConcurrentTransactions)
}

// keptInitErr returns the error kgo keeps as cl's producer state after a
// non-retriable InitProducerId answer (initErrKept): every record cl is
// given fails with it at once, without a request, until cl is replaced.
// nil when cl has its producer id (ProducerID answers from memory) or may
// still load it; the call waits at most timeout (capped at 5 s).
func keptInitErr(ctx context.Context, cl *kgo.Client, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, min(timeout, 5*time.Second))
	defer cancel()
	if _, _, err := cl.ProducerID(pctx); err != nil && initErrKept(err) {
		return err
	}
	return nil
}

// fenced turns a fencing error into errNotOwner when the member's group
// generation is no longer current (this member is a zombie: another member
// owns the slot and fenced it); any other error is returned as is and the
// unit restarts (re-fencing, which is safe while the member owns the slot).
func (u *unit) fenced(ctx context.Context, err error) error {
	if err == nil || !isFenced(err) || u.env.owns == nil {
		return err
	}
	if oerr := u.env.owns(ctx, u.slot); oerr != nil {
		return fmt.Errorf("%w: %v (group: %v)", errNotOwner, err, oerr)
	}
	return err
}

// txnDue reports whether the open transaction must commit now.
func (u *unit) txnDue() bool {
	c := &u.env.cfg
	switch {
	case !u.inTxn || u.txnRecords == 0:
		return false
	case u.txnRecords >= c.TransactionMaxRecords:
		return true
	case c.TransactionBoundary == TransactionBoundaryPoll:
		return true
	}
	return time.Since(u.txnStart) >= u.txnSpan
}

// txnSpan is how long an interval-bounded transaction stays open at most:
// the interval, unless the transaction timeout of the producer
// (transaction.timeout.ms, timeout) leaves less than admin.timeout.ms (the
// commit's own bound) after it. The coordinator aborts a transaction open
// longer than its timeout, so an interval at or above it never committed:
// every transaction was aborted, and the unit replayed the same records
// for ever (TestBrkKTxnTimeoutBelowIntervalCommits). Such a transaction
// commits timeout - admin.timeout.ms after it began (half the timeout when
// that leaves nothing).
func txnSpan(c *FlowConfig, timeout time.Duration) time.Duration {
	limit := timeout - c.AdminTimeout
	if limit <= 0 {
		limit = timeout / 2
	}
	return min(c.TransactionInterval, limit)
}

// commitTxn commits the open transaction: the records produced in it, and
// the resume points of its partitions written in it. Only then are the
// offset syncs of its records fed to the sync writers (a sync never names a
// record a read_committed consumer cannot see). Any failure (a record
// rejected, the target stalled longer than admin.timeout.ms, a fencing)
// aborts the transaction and is returned: the session ends and the next one
// resumes from the last committed resume points. Poll goroutine: it asks
// the control goroutine for the resume points (evTxnPrepare, after the
// results of every record, which Flush waited for, were applied) and tells
// it how the transaction ended.
func (u *unit) commitTxn(ctx context.Context) (err error) {
	e := u.env
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if aerr := u.prod.AbortBufferedRecords(actx); aerr == nil {
				_ = u.prod.EndTransaction(actx, kgo.TryAbort)
			}
			u.inTxn = false
			u.box.post(event{kind: evTxnAborted})
			if errors.Is(err, context.DeadlineExceeded) && tctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("%w (admin.timeout.ms, %v, passed)", err, e.cfg.AdminTimeout)
			}
			err = fmt.Errorf("transaction aborted: %w", err)
		}
	}()
	if err := u.prod.Flush(tctx); err != nil {
		return fmt.Errorf("flushing the transaction's records to %s: %w", e.dst.Alias, err)
	}
	verdict := make(chan txnVerdict, 1)
	if !u.box.post(event{kind: evTxnPrepare, x: &evExtra{verdict: verdict}}) {
		return errSessionEnded
	}
	var v txnVerdict
	select {
	case v = <-verdict:
	case <-u.box.done:
		return errSessionEnded
	case <-tctx.Done():
		return tctx.Err()
	}
	if v.err != nil {
		return v.err
	}
	recs := make([]*kgo.Record, 0, len(v.ups))
	for _, up := range v.ups {
		recs = append(recs, u.resumeRecord(up))
	}
	if len(recs) > 0 {
		if err := u.prod.ProduceSync(tctx, recs...).FirstErr(); err != nil {
			// Named: the flow's error would otherwise read as if a remote
			// topic refused the records (a missing WRITE on the
			// resume-points topic looked like one on the remote topics).
			return fmt.Errorf("writing the resume points to %s on %s: %w", e.resumeTopic, e.dst.Alias, err)
		}
	}
	if err := u.prod.EndTransaction(tctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("committing on %s: %w", e.dst.Alias, err)
	}
	u.inTxn = false
	if len(v.ups) > 0 {
		u.progressed.Store(true)
	}
	promote := time.Since(u.lastPromote) >= e.cfg.OffsetFlushInterval
	if promote {
		u.lastPromote = time.Now()
	}
	pr := int64(0)
	if promote {
		pr = 1
	}
	u.box.post(event{kind: evTxnCommitted, a: pr, x: &evExtra{ups: v.ups}})
	if len(v.ups) > 0 {
		e.metrics.committed(e.labels, time.Since(start))
	}
	e.health(u.slot, nil)
	return nil
}

// txnLevel reports record errors that belong to the record's transaction
// rather than to its partition: the producer was fenced or its transaction
// can no longer commit. The transaction aborts and the unit's session
// restarts; the partition does not stop.
func txnLevel(err error) bool {
	return isFenced(err) || errors.Is(err, kerr.TransactionAbortable) || errors.Is(err, kerr.InvalidTxnState) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.UnknownProducerID) ||
		errors.Is(err, kerr.ConcurrentTransactions)
}
