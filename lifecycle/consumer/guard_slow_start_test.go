package consumer_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// heldStart holds the executor's move to in-progress until the test lets
// it go: a tracker that waits out its rate limits, as GitHub's secondary
// limit held the take-over run of stagedorg/app#13 in the gated chaos
// probe for 2.6 s of its heartbeat's 3 s.
type heldStart struct {
	platforms.Tracker
	held    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (h *heldStart) Relabel(ctx context.Context, t *platforms.Ticket, remove []string, add ...string) (*platforms.Ticket, error) {
	if slices.Contains(add, lifecycletest.Label(lifecycle.InProgress)) && !h.held.Swap(true) {
		close(h.entered)
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Tracker.Relabel(ctx, t, remove, add...)
}

// A move to in-progress that takes longer than the heartbeat's untrusted
// margin leaves the run its own, and its pipeline starts: the heartbeat
// runs from the take, so the run guard, which refuses a run whose heartbeat
// has less than that margin left in Redis, finds it renewed. It used to be
// renewed only once the pipeline was about to start: the guard refused
// (exit 125, "the heartbeat ... was not renewed") while the executor,
// trusting the heartbeat from the start rather than the take, recorded the
// refusal as the stage failing.
func TestGuardStartsTheRunAfterASlowMoveToInProgress(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	hold := &heldStart{Tracker: p.Tracker, entered: make(chan struct{}), release: make(chan struct{})}
	p.Tracker = hold
	p.Pipeline.Command = []string{"sh", "-c", `touch "$D/ran"`}
	const ttl, renew = 2 * time.Second, 200 * time.Millisecond
	rec := &lifecycletest.Recorder{}
	cfg := guardedConfig(t, w, dir)
	cfg.HeartbeatTTL, cfg.HeartbeatRenew, cfg.Observer = ttl, renew, rec
	consumertest.RunPromoted(t, w, cfg)

	n := w.ClaimIssue(t, "slow start")
	select {
	case <-hold.entered:
	case <-time.After(15 * time.Second):
		t.Fatal("the move to in-progress never started")
	}
	// Held until the heartbeat set by the take has aged past the guard's
	// trust (its TTL left below ttl - trusted: what the guard refuses), or
	// until it was renewed for longer than a whole TTL while held.
	hb := keys.Heartbeat(lifecycletest.Ref(n).Key())
	margin := ttl - trust.Fraction(ttl, trust.DefaultHeartbeatTrust).Trusted
	last, renewals, aged := time.Duration(-1), 0, false
	eventually.Wait(t, 3*ttl, "the heartbeat to age past the guard's trust or be renewed for a whole TTL", func() bool {
		left, err := w.RDB.PTTL(t.Context(), hb).Result()
		if err != nil {
			t.Fatal(err)
		}
		if last >= 0 && left > last {
			renewals++
		}
		last = left
		aged = left < margin
		return aged || time.Duration(renewals)*renew > ttl
	})
	close(hold.release)
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	if aged {
		t.Errorf("the heartbeat was not renewed while the move to in-progress waited (%d renewals)", renewals)
	}
	if !lifecycletest.Exists(filepath.Join(dir, "ran")) {
		t.Error("the ticket is done but its pipeline never ran")
	}
}
