package outage

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
)

// Fold wraps core so that a warning or error line whose error field is
// caused by t's dependency (cause reports it) counts as a failure of t and
// is written at debug instead: the polling loops (executor take,
// housekeeping cycles, lease renewals, heartbeats) keep their own lines for
// debugging, and the operator reads t's start, reminder and end lines.
// While t is down, a connection-level error (refused, reset, EOF, timeout)
// is folded too, whatever address it names (a Sentinel or Cluster client
// meets servers its configuration does not list), and so is a call that
// waited for its deadline: on the dead dependency, most likely, though a
// slow tracker's timeout is folded with them for as long as it lasts.
func Fold(core zapcore.Core, t *Tracker, cause func(error) bool) zapcore.Core {
	return &foldCore{Core: core, t: t, cause: cause}
}

type foldCore struct {
	zapcore.Core
	t     *Tracker
	cause func(error) bool
}

func (c *foldCore) With(fields []zapcore.Field) zapcore.Core {
	return &foldCore{Core: c.Core.With(fields), t: c.t, cause: c.cause}
}

func (c *foldCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if ent.Level >= zapcore.WarnLevel && c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return c.Core.Check(ent, ce)
}

func (c *foldCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if ent.Level >= zapcore.WarnLevel {
		for _, f := range fields {
			err, ok := f.Interface.(error)
			if f.Type != zapcore.ErrorType || !ok || err == nil {
				continue
			}
			cause := c.cause(err)
			if cause || (c.t.Down() && (Connection(err) || Waited(err))) {
				// Only the dependency's own errors start an outage or
				// feed its reminders: a tracker's timeout folded while
				// Redis is down is not reported as Redis's.
				if cause {
					c.t.Fail(err)
				}
				if !c.Core.Enabled(zapcore.DebugLevel) {
					return nil
				}
				ent.Level = zapcore.DebugLevel
				break
			}
		}
	}
	return c.Core.Write(ent, fields)
}

// Connection reports whether err is a connection-level failure: refused,
// reset, closed by the peer, or a network timeout.
func Connection(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// Waited reports whether err is a context's deadline or cancellation.
func Waited(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// Dialing returns a cause for Fold: a network error whose remote address is
// one of addrs.
func Dialing(addrs ...string) func(error) bool {
	set := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		set[a] = true
	}
	return func(err error) bool {
		var op *net.OpError
		if !errors.As(err, &op) || op.Addr == nil {
			return false
		}
		return set[op.Addr.String()]
	}
}

// Watch probes the dependency every interval until ctx ends, reporting
// each answer to t: it ends an outage even when no loop meets the
// dependency, and keeps the reminders coming while it lasts.
func Watch(ctx context.Context, t *Tracker, interval time.Duration, probe func(context.Context) error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, interval)
		err := probe(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			t.Fail(err)
		default:
			t.OK()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
