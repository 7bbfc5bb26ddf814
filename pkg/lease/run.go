package lease

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Run blocks until ctx is done. It tries to acquire the lease every
// RetryEvery; while it holds a term it calls fn(leaderCtx) once, renews
// every RenewEvery, and cancels leaderCtx as soon as a renewal is refused
// or the local validity deadline passes. The deadline is a timer, so it
// fires even while a Redis call hangs. When fn returns, the term ends: Run
// releases the lease (compare-and-set) and goes back to trying after
// RetryEvery. On ctx done it cancels fn, waits for it, releases and returns
// nil.
//
// fn must stop acting as leader promptly once leaderCtx is done: Run
// guarantees that leaderCtx is cancelled before the key can expire, not
// that fn has returned by then.
func (l *Lease) Run(ctx context.Context, fn func(ctx context.Context)) error {
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-retry.C:
		}
		ok, err := l.TryAcquire(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			l.log.Warn("lease acquire failed", zap.Error(err))
		case ok:
			if l.term(ctx, fn) == reasonRefused {
				// The key no longer holds our term: taken by another
				// replica, or gone with Redis's data. In the second case
				// nobody leads until someone acquires, so try again at once
				// instead of after RetryEvery; the first costs one SET NX.
				retry.Reset(0)
				continue
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		retry.Reset(l.cfg.RetryEvery)
	}
}

// Why a term ended.
const (
	reasonExpired = "local validity deadline passed"
	reasonRefused = "renewal refused"
)

// term runs one leadership term: fn under leaderCtx, renewals, then
// release. It returns why the term ended.
func (l *Lease) term(ctx context.Context, fn func(ctx context.Context)) string {
	if !l.Valid() { // the acquire call itself outlasted the trust window
		rctx, rcancel := releaseCtx(ctx)
		defer rcancel()
		if err := l.Release(rctx); err != nil {
			l.log.Warn("lease release failed", zap.Error(err))
		}
		return reasonExpired
	}
	l.log.Info("lease acquired")
	leaderCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The validity timer cancels leaderCtx on its own goroutine, so a
	// renewal stuck in a Redis call cannot keep fn running past the
	// deadline.
	validity := time.AfterFunc(l.remaining(), cancel)
	defer validity.Stop()

	fnDone := make(chan struct{})
	go func() {
		defer close(fnDone)
		fn(leaderCtx)
	}()

	renew := time.NewTicker(l.cfg.RenewEvery)
	defer renew.Stop()
	reason := "fn returned"
loop:
	for {
		select {
		case <-fnDone:
			break loop
		case <-leaderCtx.Done():
			reason = "context done"
			if ctx.Err() == nil {
				reason = reasonExpired
			}
			break loop
		case <-renew.C:
			if !l.Valid() {
				reason = reasonExpired
				break loop
			}
			ok, err := l.Renew(leaderCtx)
			if err != nil {
				// Keep trying until the validity timer gives up.
				if leaderCtx.Err() == nil {
					l.log.Warn("lease renew failed", zap.Error(err))
				}
				continue
			}
			if !ok {
				reason = reasonRefused
				break loop
			}
			validity.Reset(l.remaining())
		}
	}
	cancel()
	<-fnDone

	rctx, rcancel := releaseCtx(ctx)
	defer rcancel()
	if err := l.Release(rctx); err != nil {
		l.log.Warn("lease release failed", zap.Error(err))
	}
	l.log.Info("lease term ended", zap.String("reason", reason))
	return reason
}
