package remoteclusterutils

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"time"
)

// unreachable reports whether err says the cluster could not be reached
// at all (a dial refused, unreachable or timed out: a broker restarting,
// a network partition), which a later attempt may get past. kgo fails a
// request at once when its only seed refuses the connection (so that a
// mistyped address is found quickly); a host that does not resolve and a
// local permission error stay immediate.
func unreachable(err error) bool {
	ne, ok := errors.AsType[*net.OpError](err)
	if !ok || ne.Op != "dial" {
		return false
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok && de.IsNotFound {
		return false
	}
	return !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EPERM)
}

// retryUnreachable runs fn until it returns an error other than an
// unreachable cluster's, or ctx ends: then the error wraps ctx's and the
// last dial error, its message starting with prefix. Attempts back off from 250 ms to 2 s; log (may be nil)
// gets a warning at the first failure and every 10 s after.
func retryUnreachable(ctx context.Context, log *slog.Logger, prefix string, fn func() error) error {
	start, backoff := time.Now(), 250*time.Millisecond
	var logged time.Time
	for {
		err := fn()
		if err == nil || !unreachable(err) {
			return err
		}
		if log != nil && time.Since(logged) >= 10*time.Second {
			logged = time.Now()
			log.Warn("remoteclusterutils: the cluster cannot be reached; retrying until the call's deadline", "for", time.Since(start).Round(time.Millisecond), "err", err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%sthe cluster could not be reached for %v, until the call's deadline (WithTimeout, or ctx's): %w; last error: %w",
				prefix, time.Since(start).Round(time.Millisecond), ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
