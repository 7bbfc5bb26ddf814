package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
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

// ParkedCanceller fails a ticket parked in AwaitingApproval on an
// operator's cancel (lifecycle/gate's Gate.CancelAsOperator); a ticket not
// parked is gate.ErrNotParked, one not read gate.ErrUnread.
type ParkedCanceller interface {
	CancelAsOperator(ctx context.Context, ref platforms.Ref, actor, reason string) (claim.CommandResult, error)
}

// CancelResult says what CancelTicket did.
type CancelResult struct {
	Ticket string `json:"ticket"`
	// Parked: the ticket awaited approval and the ApprovalGate decided
	// the cancel (Outcome "cancelled", or "noop" and Reason).
	Parked bool `json:"parked"`
	claim.CommandResult
	// Key and Cause: the cancel request made for the ticket's request or
	// run, when it was not parked.
	Key   string `json:"key,omitempty"`
	Cause string `json:"cause,omitempty"`
	// Unread says why the ticket could not be read, the cancel requested
	// regardless: a ticket that awaits approval honours it only if approved.
	Unread string `json:"unread,omitempty"`
}

// CancelTicket is an operator's cancel (agentsmithctl cancel, the status
// page's button). A ticket parked in AwaitingApproval has no request or
// run to stop: pc fails it at once, under its claim lock, with one comment
// naming actor and reason, audited. Any other ticket gets the cancel
// request cause for ttl (runstate.RequestCancel), which the executor
// holding its request or run honours; so does a ticket pc could not read,
// or every ticket when pc is nil.
func CancelTicket(ctx context.Context, rdb redis.Cmdable, pc ParkedCanceller, ref platforms.Ref, actor, reason, cause string, ttl time.Duration) (CancelResult, error) {
	res := CancelResult{Ticket: ref.String()}
	if pc != nil {
		r, err := pc.CancelAsOperator(ctx, ref, actor, reason)
		switch {
		case err == nil:
			res.Parked, res.CommandResult = true, r
			return res, nil
		case errors.Is(err, gate.ErrUnread):
			res.Unread = err.Error()
		case !errors.Is(err, gate.ErrNotParked):
			return res, err
		}
	}
	if err := runstate.RequestCancel(ctx, rdb, ref, cause, ttl); err != nil {
		return res, err
	}
	res.Command, res.Outcome, res.Key, res.Cause = claim.CommandCancel, "cancel_requested", runstate.CancelKey(ref), cause
	return res, nil
}
