package trackerhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ErrRateLimited means a request was not sent because the tracker's rate
// limit is exhausted until later than Options.MaxWait (or than the request's
// deadline allows). It reaches callers wrapped in *url.Error, so test it
// with errors.Is.
var ErrRateLimited = errors.New("rate limited")

// Rate-limit headers as GitHub, Azure DevOps and Jira send them (the default
// RateLimits); GitLab's have no "X-" (GitLabRateLimits).
const (
	headerRemaining  = "X-RateLimit-Remaining"
	headerReset      = "X-RateLimit-Reset"
	headerRetryAfter = "Retry-After"
	// defaultBackoff is the wait after a 429 that names no time, for a
	// policy without Unexplained.
	defaultBackoff = time.Second
	// maxDrain bounds how much of a rate-limited body is read before retrying
	// (or scanned for ForbiddenMarkers), so the connection can be reused
	// without trusting the body's size.
	maxDrain = 64 << 10
)

// rateLimiter retries rate-limited requests after the wait the tracker asks
// for, holds further requests for the same credentials while the tracker
// has said "not before T" (instead of sending them to be refused), and
// spaces them while the tracker says it is delaying them (RateLimits.Pace).
type rateLimiter struct {
	next http.RoundTripper
	opts Options
	pol  RateLimits

	mu      sync.Mutex
	buckets map[string]*bucket // host+credentials(+resource) → what the tracker said
}

// bucket is the rate-limit state of one host and credentials.
type bucket struct {
	// exhausted is the reset of a quota reported 0 on an answer that was
	// not refused; a later answer with quota left ends it.
	exhausted time.Time
	// hold is "not before" after a refused request (Retry-After, reset, or
	// an unexplained limit); only time ends it, as quota left says nothing
	// about a secondary limit.
	hold time.Time
	// streak counts unexplained rate-limit answers in a row.
	streak int
	// paceUntil, pace and nextSlot space requests while the tracker delays
	// them: the next request goes no earlier than nextSlot.
	paceUntil time.Time
	pace      time.Duration
	nextSlot  time.Time
}

func newRateLimiter(next http.RoundTripper, opts Options) *rateLimiter {
	return &rateLimiter{next: next, opts: opts, pol: opts.RateLimits.withDefaults(), buckets: make(map[string]*bucket)}
}

func (r *rateLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	key := req.URL.Host + "|" + credentialKey(req)
	if r.pol.Resource != nil {
		key += "|" + r.pol.Resource(req)
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	replayable := !hasBody || req.GetBody != nil
	log := r.opts.Logger.With(zap.String("method", req.Method), zap.String("host", req.URL.Host), zap.String("path", req.URL.Path))
	if r.pol.Name != "" {
		log = log.With(zap.String("tracker", r.pol.Name))
	}

	send := req
	for attempt := 0; ; attempt++ {
		if err := r.admitShared(req, key, log); err != nil {
			if send.Body != nil {
				_ = send.Body.Close()
			}
			return nil, err
		}
		if err := r.admit(req, key, log); err != nil {
			if send.Body != nil {
				_ = send.Body.Close()
			}
			return nil, err
		}
		// Every send is a request the tracker counts, a retry too: each
		// takes its share of the secondary limits, after any hold so that
		// the share is dated when the request goes (a refused send's share
		// stays taken, the cautious reading of limits GitHub does not
		// itemise).
		if err := r.pace(req, req.URL.Host+"|"+credentialKey(req), log); err != nil {
			if send.Body != nil {
				_ = send.Body.Close()
			}
			return nil, err
		}
		resp, err := r.next.RoundTrip(send)
		if err != nil {
			return nil, err
		}
		refusedOK := r.pol.RefusedOK != nil && resp.StatusCode/100 == 2 && r.pol.RefusedOK(req, resp)
		wait, limited, explained, held := r.verdict(req, key, resp, refusedOK)
		r.recordShared(ctx, key, resp, wait, limited, log)
		for _, k := range held[1:] {
			r.holdShared(ctx, k, wait, log)
		}
		if !limited {
			return resp, nil
		}
		if refusedOK {
			log.Warn("rate limited in a successful answer, holding the credentials", zap.Duration("wait", wait))
			return resp, nil
		}
		if !replayable || attempt >= MaxRetries || !r.mayWait(ctx, wait) {
			log.Warn("rate limited, giving up",
				zap.Int("status", resp.StatusCode), zap.Duration("wait", wait),
				zap.Int("attempt", attempt), zap.Bool("replayable", replayable))
			if !explained {
				// Tell the SDK the wait this transport holds to, so its own
				// bookkeeping agrees (go-github would otherwise take GitHub's
				// primary-window reset for a secondary limit's wait).
				resp.Header.Set(headerRetryAfter, strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
			}
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
		_ = resp.Body.Close()
		log.Info("rate limited, waiting before retry",
			zap.Int("status", resp.StatusCode), zap.Duration("wait", wait), zap.Int("attempt", attempt))
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

// admit waits until key may send: through any hold (or fails fast with
// ErrRateLimited when the hold outlasts MaxWait or the request's deadline),
// then for the request's slot while the tracker paces us.
func (r *rateLimiter) admit(req *http.Request, key string, log *zap.Logger) error {
	ctx := req.Context()
	for {
		now := r.opts.Clock()
		r.mu.Lock()
		b := r.buckets[key]
		if b == nil {
			r.mu.Unlock()
			return nil
		}
		until := b.hold
		if b.exhausted.After(until) {
			until = b.exhausted
		}
		var pace time.Duration
		if !until.After(now) && b.paceUntil.After(now) {
			slot := b.nextSlot
			if slot.Before(now) {
				slot = now
			}
			b.nextSlot = slot.Add(b.pace)
			pace = slot.Sub(now)
		}
		r.prune(key, b, now)
		r.mu.Unlock()

		if wait := until.Sub(now); wait > 0 {
			if !r.mayWait(ctx, wait) {
				return fmt.Errorf("trackerhttp: %s %s: rate limit exhausted until %s: %w",
					req.Method, req.URL.Host, until.UTC().Format(time.RFC3339), ErrRateLimited)
			}
			log.Info("rate limit exhausted, holding request until reset", zap.Duration("wait", wait))
			if err := r.opts.Sleep(ctx, wait); err != nil {
				return fmt.Errorf("trackerhttp: holding for rate limit reset: %w", err)
			}
			continue // another answer may have moved the hold meanwhile
		}
		if pace > 0 {
			log.Debug("tracker is delaying requests, spacing this one", zap.Duration("wait", pace))
			if err := r.opts.Sleep(ctx, pace); err != nil {
				return fmt.Errorf("trackerhttp: spacing requests while delayed: %w", err)
			}
		}
		return nil
	}
}

// prune forgets a bucket with nothing left to say. Callers hold r.mu.
func (r *rateLimiter) prune(key string, b *bucket, now time.Time) {
	if b.streak == 0 && !b.hold.After(now) && !b.exhausted.After(now) && !b.paceUntil.After(now) {
		delete(r.buckets, key)
	}
}

// mayWait says whether a wait of d fits MaxWait and the request's deadline.
// The deadline is wall time (http.Client.Timeout sets it); a wait that would
// outlast it fails fast instead of timing out unsent.
func (r *rateLimiter) mayWait(ctx context.Context, d time.Duration) bool {
	if d > r.opts.MaxWait {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && d >= time.Until(dl) {
		return false
	}
	return true
}

// verdict records what resp says about key's quota and says whether resp
// is a rate-limit answer (refusedOK: a 2xx one, RateLimits.RefusedOK), how
// long to wait before the next request, whether the tracker named that
// time (explained) or the policy chose it, and the bucket keys the answer
// sets (key, and on a secondary-limit refusal every resource of
// RateLimits.SecondaryScope).
func (r *rateLimiter) verdict(req *http.Request, key string, resp *http.Response, refusedOK bool) (wait time.Duration, limited, explained bool, held []string) {
	now := r.opts.Clock()
	h := resp.Header
	remaining := strings.TrimSpace(h.Get(r.pol.Remaining))
	limited = refusedOK || r.isLimit(resp, remaining)
	held = []string{key}
	if limited && remaining != "0" && r.pol.Resource != nil {
		base := req.URL.Host + "|" + credentialKey(req) + "|"
		for _, res := range r.pol.SecondaryScope {
			if k := base + res; k != key {
				held = append(held, k)
			}
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[key]
	if b == nil {
		b = &bucket{}
		r.buckets[key] = b
	}
	defer r.prune(key, b, now)

	if !limited {
		b.streak = 0
		switch {
		case remaining == "":
			b.paceUntil = time.Time{}
		case remaining != "0":
			b.exhausted, b.paceUntil = time.Time{}, time.Time{}
		case r.pol.Pace.Max > 0:
			// Delayed, not refused: space requests, never stop for the reset.
			b.pace = r.pol.paceOf(h)
			b.paceUntil = now.Add(r.pol.Pace.Window)
			if reset, ok := r.pol.reset(h); ok && reset.After(now) && reset.Before(b.paceUntil) {
				b.paceUntil = reset
			}
			if next := now.Add(b.pace); next.After(b.nextSlot) {
				b.nextSlot = next
			}
		default:
			if reset, ok := r.pol.reset(h); ok && reset.After(now) {
				b.exhausted = reset
			}
		}
		return 0, false, false, held
	}

	wait, explained = r.namedWait(h, remaining, now)
	if !explained {
		if r.pol.Unexplained.Initial > 0 {
			wait = r.pol.Unexplained.after(b.streak)
			b.streak++
		} else {
			wait = defaultBackoff
		}
	}
	until := now.Add(wait)
	for _, k := range held {
		hb := r.buckets[k]
		if hb == nil {
			hb = &bucket{}
			r.buckets[k] = hb
		}
		if until.After(hb.hold) {
			hb.hold = until
		}
	}
	return wait, true, explained, held
}

// isLimit says whether resp refuses the request for its rate: any 429; a
// 403 with Retry-After, with no quota left, or with a body that names a
// rate limit (RateLimits.ForbiddenMarkers); a 503 with Retry-After where
// the policy says so.
func (r *rateLimiter) isLimit(resp *http.Response, remaining string) bool {
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusForbidden:
		if remaining == "0" || resp.Header.Get(headerRetryAfter) != "" {
			return true
		}
		return len(r.pol.ForbiddenMarkers) > 0 && bodyMentions(resp, r.pol.ForbiddenMarkers)
	case http.StatusServiceUnavailable:
		return r.pol.RetryUnavailable && resp.Header.Get(headerRetryAfter) != ""
	}
	return false
}

// namedWait is the wait a rate-limit answer names: Retry-After first, then
// the reset when the quota is reported exhausted or not reported at all.
func (r *rateLimiter) namedWait(h http.Header, remaining string, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get(headerRetryAfter)); v != "" {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 && secs < math.MaxInt32 {
			return time.Duration(secs) * time.Second, true
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(now), 0), true
		}
	}
	if remaining == "" || remaining == "0" {
		// A reset already past explains nothing: retrying at once would be
		// refused again.
		if reset, ok := r.pol.reset(h); ok && reset.After(now) {
			return reset.Sub(now), true
		}
	}
	return 0, false
}

// bodyMentions reads up to maxDrain bytes of resp's body, puts them back,
// and says whether they contain any of markers (case-insensitive).
func bodyMentions(resp *http.Response, markers []string) bool {
	if resp.Body == nil {
		return false
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxDrain))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	text := strings.ToLower(string(head))
	for _, m := range markers {
		if strings.Contains(text, strings.ToLower(m)) {
			return true
		}
	}
	return false
}

func parseUnix(v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil || secs <= 0 || secs > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}
