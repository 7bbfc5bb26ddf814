package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
)

// DefaultPriority is the queue level of a ticket without a priority label
// in a project without a configured default: the level stored at the
// specification's key agentsmith:queue:jobs. Lower numbers are served first.
const DefaultPriority = 5

// RetryPolicy says which failed attempts run again while attempts are left.
type RetryPolicy struct {
	ExitCodes []int
	OnTimeout bool
	Backoff   Backoff
}

// Backoff is exponential with jitter.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64 // 0..1: the delay is shortened by up to this fraction
}

// Delay is the wait before retry number retry (1 for the first), given r
// uniformly random in [0, 1): Initial × Multiplier^(retry−1), at most Max,
// minus a random fraction (at most Jitter) of itself, so tickets that
// failed together spread out instead of retrying in lockstep.
func (b Backoff) Delay(retry int, r float64) time.Duration {
	// Comparisons are written so that NaN falls back to the safe side.
	m := b.Multiplier
	if !(m >= 1) {
		m = 1
	}
	d := float64(b.Initial) * math.Pow(m, float64(max(retry, 1)-1))
	if b.Max > 0 && !(d <= float64(b.Max)) {
		d = float64(b.Max)
	}
	j, x := b.Jitter, r
	if !(j >= 0 && j <= 1) {
		j = 0
	}
	if !(x >= 0 && x <= 1) {
		x = 0
	}
	return time.Duration(d - d*j*x)
}

// EscalatePolicy names the failures that need a person.
type EscalatePolicy struct {
	ExitCodes []int
	Label     string   // added to the ticket (not a lifecycle label); "" adds none
	Mention   []string // written verbatim into the failure comment
}

// PriorityPolicy maps a ticket's labels to its queue priority.
type PriorityPolicy struct {
	Labels  map[string]int
	Default int // 0 means DefaultPriority
}

// Of is the priority of a ticket carrying labels: the highest (lowest
// number) of its priority labels, else the default.
func (pp PriorityPolicy) Of(labels []string) int {
	best := 0
	for _, l := range labels {
		if p, ok := pp.Labels[l]; ok && (best == 0 || p < best) {
			best = p
		}
	}
	if best > 0 {
		return best
	}
	if pp.Default > 0 {
		return pp.Default
	}
	return DefaultPriority
}

// Limits caps concurrent runs across all replicas. Zero means no cap.
type Limits struct {
	Concurrency      int
	TokenConcurrency int
	// TokenID identifies the project's tracker token (a digest, see
	// TokenID): projects with the same token share one semaphore.
	TokenID string
}

// TokenID is the name a tracker token's semaphore goes by: a truncated
// SHA-256 digest, so projects sharing a token share the semaphore while the
// token itself never appears in a Redis key (keys are visible to anyone
// with read access to Redis: MONITOR, SCAN, backups).
func TokenID(token string) string {
	sum := sha256.Sum256([]byte("agentsmithd token concurrency\x00" + token))
	return hex.EncodeToString(sum[:12])
}

// Slots is the project's semaphores, in the order runstate.Take checks them.
func (p *Project) Slots() []runstate.Slot {
	var out []runstate.Slot
	if p.Limits.Concurrency > 0 {
		out = append(out, runstate.ProjectSlot(p.Name, p.Limits.Concurrency))
	}
	if p.Limits.TokenConcurrency > 0 && p.Limits.TokenID != "" {
		out = append(out, runstate.TokenSlot(p.Limits.TokenID, p.Limits.TokenConcurrency))
	}
	return out
}

// FailureKind is what a failed attempt leads to.
type FailureKind int

const (
	FailFinal    FailureKind = iota // the ticket fails
	FailRetry                       // another attempt is enqueued
	FailEscalate                    // the ticket is escalated to a human
)

// Outcome names the kind in events, comments and AGENTSMITH_OUTCOME.
func (k FailureKind) Outcome() string {
	switch k {
	case FailRetry:
		return "retrying"
	case FailEscalate:
		return "escalated"
	}
	return "failed"
}

// Classify decides what a failed attempt leads to. An exit status only
// counts when the pipeline exited by itself; a timeout retries only with
// OnTimeout. A retryable failure on the last attempt fails the ticket.
func (pl *Pipeline) Classify(res procrun.Result, attempt int) (kind FailureKind, retryable bool) {
	exited := res.Err == nil && res.Signal == "" && !res.TimedOut && !res.Canceled && !res.Killed
	if exited && slices.Contains(pl.Escalate.ExitCodes, res.ExitCode) {
		return FailEscalate, false
	}
	retryable = (exited && slices.Contains(pl.Retry.ExitCodes, res.ExitCode)) || (res.TimedOut && pl.Retry.OnTimeout)
	if retryable && !pl.Attempts().UsedUp(attempt) {
		return FailRetry, true
	}
	return FailFinal, retryable
}
