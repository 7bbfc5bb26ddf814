package sim

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
	// DropRate is the fraction of webhook deliveries not sent.
	DropRate float64
	// Duplicate sends each delivery this many extra times, with the same
	// X-GitHub-Delivery.
	Duplicate int
	Seed      int64
}

// UnmarshalJSON accepts Latency as a Go duration string ("250ms") or as
// nanoseconds, so the control API is usable with curl.
func (f *Faults) UnmarshalJSON(b []byte) error {
	type plain Faults
	var aux struct {
		plain
		Latency json.RawMessage
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*f = Faults(aux.plain)
	if len(aux.Latency) == 0 || string(aux.Latency) == "null" {
		return nil
	}
	var str string
	if json.Unmarshal(aux.Latency, &str) == nil {
		d, err := time.ParseDuration(str)
		if err != nil {
			return fmt.Errorf("faults: latency: %w", err)
		}
		f.Latency = d
		return nil
	}
	var ns int64
	if err := json.Unmarshal(aux.Latency, &ns); err != nil {
		return fmt.Errorf("faults: latency: %w", err)
	}
	f.Latency = time.Duration(ns)
	return nil
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
	retryAfter int
	badGateway bool
}

func (fs *faultState) api() apiFault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := apiFault{latency: fs.f.Latency, retryAfter: fs.f.RetryAfter}
	switch {
	case fs.f.RateLimitNext > 0:
		fs.f.RateLimitNext--
		out.rateLimit = true
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
