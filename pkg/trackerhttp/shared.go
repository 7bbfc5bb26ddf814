package trackerhttp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Priority says who is spending a token's quota. When a shared budget
// (Options.Budget) reports the quota low, low-priority callers stop first,
// so what is left goes to claims and run transitions: a ticket a person
// triggered moves on while housekeeping waits for the reset.
type Priority int

const (
	// PriorityHigh is the default: claims, run transitions, comments.
	PriorityHigh Priority = iota
	// PriorityLow is housekeeping listings and polling: work that is tried
	// again on its next round anyway.
	PriorityLow
)

// DefaultReserve is the share of a quota (Options.Reserve) kept for
// high-priority callers: low-priority ones stop when fewer remain.
const DefaultReserve = 0.10

type priorityKey struct{}

// WithPriority marks ctx's requests with p.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

func priorityOf(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}

// Quota is what a tracker last said about one token's quota (one
// resource of it: GitHub's core and search are two).
type Quota struct {
	// Remaining and Limit are -1 when no answer named them.
	Remaining, Limit int
	// Reset is when Remaining comes back to Limit; zero when unknown.
	Reset time.Time
	// Hold is "not before": set from a refused request's wait.
	Hold time.Time
}

// SharedBudget keeps Quotas where every replica using the same token sees
// them (pkg/budget, in Redis), so a replica never learns alone a limit
// another one has already hit. Keys are SharedKey values: digests, never
// a token.
type SharedBudget interface {
	Load(ctx context.Context, key string) (Quota, error)
	// Store merges q into the stored quota: the later hold wins, and within
	// one reset window the lower remaining wins (answers arrive out of
	// order across replicas).
	Store(ctx context.Context, key string, q Quota) error
}

// notBefore is when a request of priority p may be sent under q.
func (q Quota) notBefore(now time.Time, p Priority, reserve float64) time.Time {
	until := q.Hold
	if q.Remaining >= 0 && q.Reset.After(now) {
		low := p == PriorityLow && q.Limit > 0 && float64(q.Remaining) < reserve*float64(q.Limit)
		if (q.Remaining == 0 || low) && q.Reset.After(until) {
			until = q.Reset
		}
	}
	return until
}

// SharedKey is the budget key of a rate-limit bucket key (host,
// credential digest, resource), digested again so that nothing in Redis
// names the host's token, even by a short hash of it alone.
func SharedKey(bucketKey string) string {
	sum := sha256.Sum256([]byte("agentsmithd budget|" + bucketKey))
	return hex.EncodeToString(sum[:12])
}

// admitShared holds req while the shared budget says its token may not
// send: another replica was refused (Hold), the quota is spent, or only the
// reserve is left and req is low priority. A budget that cannot be read
// is logged and ignored: the tracker's own answers still rule.
func (r *rateLimiter) admitShared(req *http.Request, key string, log *zap.Logger) error {
	if r.opts.Budget == nil {
		return nil
	}
	ctx := req.Context()
	q, err := r.opts.Budget.Load(ctx, SharedKey(key))
	if err != nil {
		log.Warn("shared rate-limit budget unreadable; using this replica's view only", zap.Error(err))
		return nil
	}
	now := r.opts.Clock()
	pri := priorityOf(ctx)
	wait := q.notBefore(now, pri, r.opts.Reserve).Sub(now)
	if wait <= 0 {
		return nil
	}
	if !r.mayWait(ctx, wait) {
		return fmt.Errorf("trackerhttp: %s %s: shared rate-limit budget spent until %s (priority %d): %w",
			req.Method, req.URL.Host, now.Add(wait).UTC().Format(time.RFC3339), pri, ErrRateLimited)
	}
	log.Info("shared rate-limit budget spent, holding request", zap.Duration("wait", wait), zap.Int("priority", int(pri)))
	return r.opts.Sleep(ctx, wait)
}

// recordShared stores what resp said about key's quota for the other
// replicas: remaining, limit and reset, and the hold a refusal set.
func (r *rateLimiter) recordShared(ctx context.Context, key string, resp *http.Response, wait time.Duration, limited bool, log *zap.Logger) {
	if r.opts.Budget == nil {
		return
	}
	now := r.opts.Clock()
	h := resp.Header
	q := Quota{Remaining: -1, Limit: -1}
	// A pacing tracker (Azure DevOps) delays rather than refuses at 0:
	// only its refusals are shared.
	if r.pol.Pace.Max == 0 {
		if v, err := strconv.Atoi(strings.TrimSpace(h.Get(r.pol.Remaining))); err == nil && v >= 0 {
			q.Remaining = v
		}
		if v, err := strconv.Atoi(strings.TrimSpace(h.Get(r.pol.Limit))); err == nil && v > 0 {
			q.Limit = v
		}
		if reset, ok := r.pol.reset(h); ok {
			q.Reset = reset
		}
	}
	if limited && wait > 0 {
		q.Hold = now.Add(wait)
	}
	if q.Remaining < 0 && q.Hold.IsZero() {
		return
	}
	// Far above the reserve an answer tells the other replicas nothing they
	// would act on: skip the write, so a healthy quota costs one read per
	// request. A stored low remaining of an earlier window is ignored once
	// its reset passed (Quota.notBefore) and expires with it.
	if q.Hold.IsZero() && q.Limit > 0 && float64(q.Remaining) >= 2*r.opts.Reserve*float64(q.Limit) {
		return
	}
	if err := r.opts.Budget.Store(context.WithoutCancel(ctx), SharedKey(key), q); err != nil {
		log.Warn("shared rate-limit budget not updated", zap.Error(err))
	}
}

// holdShared stores a hold of wait from now under key for the other
// replicas: another resource of a secondary-limit refusal's credentials
// (RateLimits.SecondaryScope), whose own quota the answer says nothing of.
func (r *rateLimiter) holdShared(ctx context.Context, key string, wait time.Duration, log *zap.Logger) {
	if r.opts.Budget == nil || wait <= 0 {
		return
	}
	q := Quota{Remaining: -1, Limit: -1, Hold: r.opts.Clock().Add(wait)}
	if err := r.opts.Budget.Store(context.WithoutCancel(ctx), SharedKey(key), q); err != nil {
		log.Warn("shared rate-limit hold not stored", zap.Error(err))
	}
}
