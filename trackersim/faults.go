package trackersim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Faults makes the sim misbehave the way a real tracker sometimes does, so
// retries, backoff and webhook de-duplication can be tested. Random choices
// come from a generator seeded by Seed and reset by SetFaults, so a run
// replays identically.
type Faults struct {
	// Latency is added to every API request.
	Latency time.Duration
	// ErrorRate is the fraction of API requests answered 502.
	ErrorRate float64
	// RateLimitNext answers the next N API requests 429 with Retry-After,
	// X-RateLimit-Remaining: 0 and X-RateLimit-Reset.
	RateLimitNext int
	// RetryAfter is the Retry-After of those 429s in seconds (default 1).
	RetryAfter int
	// RateLimitShape, when set, answers the RateLimitNext requests the way
	// one tracker answers a limit that the default 429 does not show (see
	// the RateLimit* shape constants). A dialect answers a shape of another
	// tracker with its default 429.
	RateLimitShape string
	// ThrottleNext answers the next N API requests (after RateLimitNext)
	// normally but as over budget: Azure DevOps delays each by
	// ThrottleDelay and sends X-RateLimit-Remaining 0 on the 200; GitLab
	// sends its RateLimit-* headers with RateLimit-Remaining 0 and a reset
	// RetryAfter seconds away. Other dialects ignore it.
	ThrottleNext int
	// ThrottleDelay is how long Azure DevOps holds a throttled request (a Go
	// duration string or nanoseconds in JSON).
	ThrottleDelay time.Duration
	// DropRate is the fraction of webhook deliveries not sent.
	DropRate float64
	// Duplicate sends each delivery this many extra times, with the same
	// X-GitHub-Delivery.
	Duplicate int
	Seed      int64
}

// Shapes of an injected rate limit (Faults.RateLimitShape). Each is how the
// real service was documented or reported to answer; the comments at the
// dialects' fault branches cite the sources.
const (
	// RateLimitGitHubSecondary403 is GitHub's secondary limit as a 403:
	// "You have exceeded a secondary rate limit", no Retry-After, quota
	// left in X-RateLimit-Remaining.
	RateLimitGitHubSecondary403 = "github-secondary-403"
	// RateLimitGitHubSecondary429 is the same as a 429.
	RateLimitGitHubSecondary429 = "github-secondary-429"
	// RateLimitGitLabBare is gitlab.com's 429 with neither RateLimit-*
	// headers nor Retry-After, and a plain-text body.
	RateLimitGitLabBare = "gitlab-bare-429"
	// RateLimitJiraReset is Jira Cloud's 429 that names its reset only in
	// X-RateLimit-Reset, as an ISO 8601 minute ("2024-05-06T12:35Z").
	RateLimitJiraReset = "jira-429-iso-reset"
	// RateLimitJira503 is Jira Cloud's 503 with Retry-After for a resource
	// limit.
	RateLimitJira503 = "jira-503-retry-after"
)

// UnmarshalJSON accepts Latency and ThrottleDelay as Go duration strings
// ("250ms") or as nanoseconds, so the control API is usable with curl.
func (f *Faults) UnmarshalJSON(b []byte) error {
	type plain Faults
	var aux struct {
		plain
		Latency       json.RawMessage
		ThrottleDelay json.RawMessage
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*f = Faults(aux.plain)
	var err error
	if f.Latency, err = jsonDuration(aux.Latency); err != nil {
		return fmt.Errorf("faults: latency: %w", err)
	}
	if f.ThrottleDelay, err = jsonDuration(aux.ThrottleDelay); err != nil {
		return fmt.Errorf("faults: throttle delay: %w", err)
	}
	return nil
}

// jsonDuration reads a duration written as a Go duration string or as
// nanoseconds; absent or null is 0.
func jsonDuration(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return time.ParseDuration(str)
	}
	var ns int64
	if err := json.Unmarshal(raw, &ns); err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}

// SetFaults replaces the fault configuration and reseeds its generator.
func (s *Sim) SetFaults(f Faults) { s.faults.set(f) }

type faultState struct {
	mu  sync.Mutex
	f   Faults
	rng *rand.Rand
}

func (fs *faultState) set(f Faults) {
	if f.RetryAfter <= 0 {
		f.RetryAfter = DefaultRetryAfter
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.f = f
	fs.rng = rand.New(rand.NewPCG(uint64(f.Seed), uint64(f.Seed)^0x9e3779b97f4a7c15))
}

func (fs *faultState) get() Faults {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.f
}

// apiFault is what to do to one API request.
type apiFault struct {
	latency    time.Duration
	rateLimit  bool
	shape      string // Faults.RateLimitShape of a rateLimit
	retryAfter int
	badGateway bool
	// throttle answers normally but over budget (Faults.ThrottleNext),
	// after throttleDelay in the Azure DevOps dialect.
	throttle      bool
	throttleDelay time.Duration
}

func (fs *faultState) api() apiFault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := apiFault{latency: fs.f.Latency, retryAfter: fs.f.RetryAfter}
	switch {
	case fs.f.RateLimitNext > 0:
		fs.f.RateLimitNext--
		out.rateLimit, out.shape = true, fs.f.RateLimitShape
	case fs.f.ThrottleNext > 0:
		fs.f.ThrottleNext--
		out.throttle, out.throttleDelay = true, fs.f.ThrottleDelay
	case fs.f.ErrorRate > 0 && fs.rng.Float64() < fs.f.ErrorRate:
		out.badGateway = true
	}
	return out
}

// delivery decides whether one webhook delivery is dropped and how many
// extra copies are sent.
func (fs *faultState) delivery() (drop bool, extra int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.f.DropRate > 0 && fs.rng.Float64() < fs.f.DropRate {
		return true, 0
	}
	return false, max(fs.f.Duplicate, 0)
}
