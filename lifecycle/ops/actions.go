package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ErrBusy means someone else holds the ticket's claim lock right now.
var ErrBusy = errors.New("claim lock held by someone else")

// RequeueResult says what Requeue did.
type RequeueResult struct {
	Ticket  string                     `json:"ticket"`
	Pushed  *lifecycle.PipelineRequest `json:"pushed,omitempty"`
	Skipped string                     `json:"skipped,omitempty"`
}

// Requeue pushes a PipelineRequest for an Enqueued ticket that has none,
// under the ticket's claim lock, exactly as the EnqueuedReconciler would but
// without waiting for its grace. A ticket already queued, running, or not
// Enqueued is left alone and the reason returned in Skipped.
func Requeue(ctx context.Context, claims *claim.Service, q *queue.Queue, ref platforms.Ref) (RequeueResult, error) {
	res := RequeueResult{Ticket: ref.String()}
	held, err := claims.WithLock(ctx, ref, lifecycle.SourceOperator, func(ctx context.Context) error {
		queued, err := lifecycle.QueuedTickets(ctx, q)
		if err != nil {
			return err
		}
		if queued[ref.Key()] {
			res.Skipped = "already queued"
			return nil
		}
		res.Pushed, res.Skipped, err = claims.RequeueLocked(ctx, ref, lifecycle.SourceOperator, nil)
		return err
	})
	if err == nil && !held {
		err = fmt.Errorf("requeue %s: %w", ref, ErrBusy)
	}
	return res, err
}

// ReleaseResult names what Release deleted.
type ReleaseResult struct {
	Ticket string `json:"ticket"`
	// ClaimLock and Heartbeat are the values deleted ("" when absent).
	ClaimLock string `json:"claim_lock,omitempty"`
	Heartbeat string `json:"heartbeat,omitempty"`
	// Outcome is the state of the waiting outcome record deleted ("" when
	// none waited).
	Outcome string `json:"outcome,omitempty"`
}

// Release deletes a ticket's claim lock, heartbeat and waiting outcome
// record, for a ticket held by something that will not let go of it (an
// outcome the tracker will never take is one). Deleting a live run's
// heartbeat fences that run out (its next renewal fails and it kills its
// pipeline); with no outcome left waiting, the StaleJobDetector reverts and
// reclaims the ticket on its next cycle. Each lock is deleted only if it
// still holds the value read, so a lock taken in between is not freed; the
// record is deleted after the locks, as the operator's explicit act.
func Release(ctx context.Context, rdb redis.UniversalClient, ref platforms.Ref) (ReleaseResult, error) {
	res := ReleaseResult{Ticket: ref.String()}
	lock := keys.ClaimLock(ref.Platform, ref.ID)
	v, _, err := redislock.Holder(ctx, rdb, lock)
	if err != nil {
		return res, fmt.Errorf("release %s: %w", ref, err)
	}
	if v != "" {
		ok, err := redislock.Release(ctx, rdb, lock, v)
		if err != nil {
			return res, fmt.Errorf("release %s: %w", ref, err)
		}
		if ok {
			res.ClaimLock = v
		}
	}
	hb, _, err := runstate.Holder(ctx, rdb, ref)
	if err != nil {
		return res, fmt.Errorf("release %s: %w", ref, err)
	}
	if hb != "" {
		ok, err := runstate.Evict(ctx, rdb, ref, hb)
		if err != nil {
			return res, fmt.Errorf("release %s: %w", ref, err)
		}
		if ok {
			res.Heartbeat = hb
		}
	}
	o, waited, err := runstate.ForgetOutcome(ctx, rdb, ref)
	if err != nil {
		return res, fmt.Errorf("release %s: %w", ref, err)
	}
	if waited {
		res.Outcome = o.To
	}
	return res, nil
}

// Cancel asks whoever owns the ticket's request or run to stop it, with the
// operator's reason (runstate.RequestCancel; keys.CancelTTL when ttl ≤ 0).
// The consumer that holds the run (or takes the request) reads the key,
// stops the pipeline and fails the ticket; this call only asks.
func Cancel(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, reason string, ttl time.Duration) error {
	return runstate.RequestCancel(ctx, rdb, ref, lifecycle.CtlCause(reason), ttl)
}
