// Package trackerhttp is the HTTP plumbing every tracker client shares: an
// http.RoundTripper stack that waits out rate limits instead of hammering a
// tracker that said stop, revalidates GETs with ETags so unchanged reads are
// cheap, and tags writes with the writer's name. It knows nothing of tickets;
// platform packages put it under their SDK's http.Client.
package trackerhttp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
)

// Defaults for the zero values of Options.
const (
	// DefaultMaxWait bounds how long one request may be held for a rate limit.
	// A tracker whose window resets later than this is reported to the caller
	// rather than stalling a claim for minutes.
	DefaultMaxWait = 60 * time.Second
	// DefaultCacheEntries bounds the conditional GET cache.
	DefaultCacheEntries = 1024
	// MaxRetries is how often one request is retried after a rate-limit answer.
	MaxRetries = 3
)

// Header names this package reads or writes.
const (
	// WriterHeader carries Options.Writer on every write so trackersim can
	// record who wrote (which replica, which component). It is the sim's
	// header, not a tracker's: callers set Options.Writer only when they
	// talk to trackersim (config trackersim_writer_header).
	WriterHeader = "X-Agentsmith-Writer"
	// FromCacheHeader marks a response served from the conditional GET cache
	// after a 304. go-github recognises it and leaves its rate bookkeeping
	// alone, which is right: a 304 costs no GitHub rate limit.
	FromCacheHeader = "X-From-Cache"
)

// Options configures NewTransport. Zero values take the defaults above.
type Options struct {
	// Logger receives rate-limit waits; nil means no logging.
	Logger *zap.Logger
	// Clock is the time source for rate-limit resets; nil means time.Now.
	Clock func() time.Time
	// MaxWait caps how long a request is held or slept before a retry.
	MaxWait time.Duration
	// CacheEntries bounds the ETag cache; 0 means DefaultCacheEntries and a
	// negative value disables the cache.
	CacheEntries int
	// Writer, when set, is sent as WriterHeader on every request that is
	// not a GET, HEAD, OPTIONS or TRACE (reads that POST, such as Jira's
	// search, get it too); empty for a real tracker.
	Writer string
	// Sleep waits d or until ctx ends; nil means a timer. Tests inject one
	// that advances a fake Clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Observer, when set, sees every request that goes to the network
	// (metrics); cache hits that needed no request are not calls.
	Observer CallObserver
	// RateLimits is how the tracker signals its rate limits; each platform
	// package sets its own (GitHubRateLimits, …). The zero value reads
	// X-RateLimit-* like GitHub's primary limit.
	RateLimits RateLimits
	// Budget, when set, shares this client's rate-limit view with every
	// replica using the same token (pkg/budget); nil keeps it per process.
	Budget SharedBudget
	// Reserve is the share of a quota kept for PriorityHigh requests when
	// Budget is set; 0 means DefaultReserve.
	Reserve float64
	// PaceSecondary paces RateLimits.Secondary through Budget when it is a
	// Pacer (pace.go): each paced write costs a Redis round trip per limit
	// and may wait up to MaxWait. The daemon sets it for GitHub projects
	// unless github.pace_secondary is false.
	PaceSecondary bool
}

func (o Options) withDefaults() Options {
	if o.Reserve <= 0 {
		o.Reserve = DefaultReserve
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Clock == nil {
		o.Clock = wallclock.Now
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.CacheEntries == 0 {
		o.CacheEntries = DefaultCacheEntries
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	return o
}

// NewTransport wraps base (nil means http.DefaultTransport) with, from the
// outside in: the writer tag, the conditional GET cache, the rate-limit
// gate, the call observer and the write fence (see WithFence). The result is
// safe for concurrent use.
func NewTransport(base http.RoundTripper, opts Options) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	opts = opts.withDefaults()
	var inner http.RoundTripper = fenceGate{next: base}
	if opts.Observer != nil {
		inner = observed{next: inner, obs: opts.Observer, clock: opts.Clock}
	}
	var rt http.RoundTripper = newRateLimiter(inner, opts)
	if opts.CacheEntries > 0 {
		rt = newCache(rt, opts.CacheEntries)
	}
	if opts.Writer != "" {
		rt = &writerTag{next: rt, writer: opts.Writer}
	}
	return rt
}

// writerTag adds WriterHeader to writes.
type writerTag struct {
	next   http.RoundTripper
	writer string
}

func (w *writerTag) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWrite(req.Method) && req.Header.Get(WriterHeader) == "" {
		req = req.Clone(req.Context())
		req.Header.Set(WriterHeader, w.writer)
	}
	return w.next.RoundTrip(req)
}

func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

// credentialKey identifies the caller's credentials without keeping them:
// rate limits and cached bodies belong to one token, and a hash keeps the
// token itself out of map keys and any dump of them.
func credentialKey(req *http.Request) string {
	auth := req.Header.Get("Authorization")
	if auth == "" {
		return "anonymous"
	}
	sum := sha256.Sum256([]byte(auth))
	return hex.EncodeToString(sum[:8])
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
