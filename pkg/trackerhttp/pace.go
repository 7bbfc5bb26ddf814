package trackerhttp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// Window is one limit over a sliding period: at most Max units in any Per.
type Window struct {
	Max int
	Per time.Duration
}

// Secondary is one of a tracker's limits that answer with a refusal rather
// than a quota header (GitHub's secondary limits): requests are paced
// before they are sent, across every replica of a token, so none is
// refused.
type Secondary struct {
	// Name tells the limits of one token apart in the shared store.
	Name string
	// Cost is what req spends of the limit; 0 means it is not counted.
	Cost func(req *http.Request) int
	// Windows are the limit's periods, all of which must have room.
	Windows []Window
	// Scope, when set, keeps one usage per value it gives (GitHub's points
	// per minute are per endpoint: REST's and GraphQL's); nil shares one
	// across the token's requests (content creation counts REST and
	// GraphQL together).
	Scope func(req *http.Request) string
}

// Pacer is a shared store of secondary-limit usage (pkg/budget). An
// Options.Budget that implements it paces RateLimits.Secondary.
type Pacer interface {
	// Take records cost at now under key when every window has room for it
	// and returns 0; otherwise it records nothing and returns how long
	// until it would have room.
	Take(ctx context.Context, key string, cost int, windows []Window, now time.Time) (time.Duration, error)
}

// pace holds req until every secondary limit it spends has room, or
// fails with ErrRateLimited when that is further off than the request may
// wait. A store that cannot be read is logged and ignored: the tracker's
// refusals still rule.
func (r *rateLimiter) pace(req *http.Request, credKey string, log *zap.Logger) error {
	p, ok := r.opts.Budget.(Pacer)
	if !ok || !r.opts.PaceSecondary || len(r.pol.Secondary) == 0 {
		return nil
	}
	ctx := req.Context()
	for _, s := range r.pol.Secondary {
		cost := s.Cost(req)
		if cost <= 0 {
			continue
		}
		key := credKey + "|secondary:" + s.Name
		if s.Scope != nil {
			key += "|" + s.Scope(req)
		}
		for {
			now := r.opts.Clock()
			wait, err := p.Take(ctx, SharedKey(key), cost, s.Windows, now)
			if err != nil {
				log.Warn("shared secondary-limit pace unreadable; not pacing", zap.String("limit", s.Name), zap.Error(err))
				break
			}
			if wait <= 0 {
				break
			}
			if !r.mayWait(ctx, wait) {
				return fmt.Errorf("trackerhttp: %s %s: secondary limit %q full until %s: %w",
					req.Method, req.URL.Host, s.Name, now.Add(wait).UTC().Format(time.RFC3339), ErrRateLimited)
			}
			log.Debug("pacing before a secondary limit", zap.String("limit", s.Name), zap.Duration("wait", wait))
			if err := r.opts.Sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	return nil
}
