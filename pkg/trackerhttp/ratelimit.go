package trackerhttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ErrRateLimited means a request was not sent because the tracker's rate
// limit is exhausted until later than Options.MaxWait. It reaches callers
// wrapped in *url.Error, so test it with errors.Is.
var ErrRateLimited = errors.New("rate limited")

// Rate-limit headers as GitHub sends them; GitLab uses the same names in
// lower case, which http.Header canonicalises.
const (
	headerRemaining  = "X-RateLimit-Remaining"
	headerReset      = "X-RateLimit-Reset"
	headerRetryAfter = "Retry-After"
	// defaultBackoff is the wait after a 429 that names no time.
	defaultBackoff = time.Second
	// maxDrain bounds how much of a rate-limited body is read before retrying,
	// so the connection can be reused without trusting the body's size.
	maxDrain = 64 << 10
)

// rateLimiter retries rate-limited requests after the wait the tracker asks
// for, and while a tracker has said "0 remaining until T" it holds further
// requests for the same credentials until T instead of sending them.
type rateLimiter struct {
	next http.RoundTripper
	opts Options

	mu    sync.Mutex
	holds map[string]time.Time // host+credentials → reset while remaining is 0
}

func newRateLimiter(next http.RoundTripper, opts Options) *rateLimiter {
	return &rateLimiter{next: next, opts: opts, holds: make(map[string]time.Time)}
}

func (r *rateLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	bucket := req.URL.Host + "|" + credentialKey(req)
	hasBody := req.Body != nil && req.Body != http.NoBody
	replayable := !hasBody || req.GetBody != nil
	log := r.opts.Logger.With(zap.String("method", req.Method), zap.String("host", req.URL.Host), zap.String("path", req.URL.Path))

	send := req
	for attempt := 0; ; attempt++ {
		if err := r.waitHold(req, bucket, log); err != nil {
			if send.Body != nil {
				_ = send.Body.Close()
			}
			return nil, err
		}
		resp, err := r.next.RoundTrip(send)
		if err != nil {
			return nil, err
		}
		r.observe(bucket, resp)
		wait, limited := r.retryAfter(resp)
		if !limited {
			return resp, nil
		}
		if !replayable || attempt >= MaxRetries || wait > r.opts.MaxWait {
			log.Warn("rate limited, giving up",
				zap.Int("status", resp.StatusCode), zap.Duration("wait", wait),
				zap.Int("attempt", attempt), zap.Bool("replayable", replayable))
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
		_ = resp.Body.Close()
		log.Info("rate limited, waiting before retry",
			zap.Int("status", resp.StatusCode), zap.Duration("wait", wait), zap.Int("attempt", attempt))
		if err := r.opts.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("trackerhttp: waiting out rate limit: %w", err)
		}
		send = req.Clone(ctx)
		if hasBody {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("trackerhttp: replay request body: %w", err)
			}
			send.Body = body
		}
	}
}

// waitHold blocks while a known reset for bucket is pending, or fails fast
// with ErrRateLimited when the reset is further off than MaxWait.
func (r *rateLimiter) waitHold(req *http.Request, bucket string, log *zap.Logger) error {
	r.mu.Lock()
	until, ok := r.holds[bucket]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	wait := until.Sub(r.opts.Clock())
	if wait <= 0 {
		r.mu.Lock()
		if r.holds[bucket].Equal(until) {
			delete(r.holds, bucket)
		}
		r.mu.Unlock()
		return nil
	}
	if wait > r.opts.MaxWait {
		return fmt.Errorf("trackerhttp: %s %s: rate limit exhausted until %s: %w",
			req.Method, req.URL.Host, until.UTC().Format(time.RFC3339), ErrRateLimited)
	}
	log.Info("rate limit exhausted, holding request until reset", zap.Duration("wait", wait))
	if err := r.opts.Sleep(req.Context(), wait); err != nil {
		return fmt.Errorf("trackerhttp: holding for rate limit reset: %w", err)
	}
	return nil
}

// observe records whether the credentials have requests left.
func (r *rateLimiter) observe(bucket string, resp *http.Response) {
	remaining := resp.Header.Get(headerRemaining)
	if remaining == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if remaining != "0" {
		delete(r.holds, bucket)
		return
	}
	if reset, ok := parseUnix(resp.Header.Get(headerReset)); ok && reset.After(r.opts.Clock()) {
		r.holds[bucket] = reset
	}
}

// retryAfter says whether resp is a rate-limit answer and how long the
// tracker asked us to wait: Retry-After first, then the window reset.
func (r *rateLimiter) retryAfter(resp *http.Response) (time.Duration, bool) {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
	case resp.StatusCode == http.StatusForbidden &&
		(resp.Header.Get(headerRemaining) == "0" || resp.Header.Get(headerRetryAfter) != ""):
	default:
		return 0, false
	}
	now := r.opts.Clock()
	if v := resp.Header.Get(headerRetryAfter); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			return time.Duration(secs) * time.Second, true
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(now), 0), true
		}
	}
	if reset, ok := parseUnix(resp.Header.Get(headerReset)); ok {
		return max(reset.Sub(now), 0), true
	}
	return defaultBackoff, true
}

func parseUnix(v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil || secs <= 0 {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}
