package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
)

var timeZero time.Time

// claims builds a claim service that records what it does in the audit
// stream like a replica would; flush writes those events before exit.
func (a *app) claims(ctx context.Context) (*claim.Service, *queue.Queue, func()) {
	q := a.queue()
	var obs lifecycle.Observer
	flush := func() {}
	if a.cfg.Audit.On() {
		w := audit.NewWriter(a.rdb, audit.WriterConfig{MaxLen: a.cfg.Audit.MaxLen})
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(wctx) }()
		obs, flush = w, func() { cancel(); <-done }
	}
	return claim.NewService(a.rdb, q, a.projects, claim.Config{Instance: a.instance(),
		LockTTL: a.cfg.ClaimLockTTL, Labels: a.labels(), Observer: obs}), q, flush
}

// withClaims runs fn on the ticket with the claim service and queue the
// daemon would use, for the commands that act under a ticket's claim lock,
// and flushes the audit events fn emitted.
func (a *app) withClaims(ctx context.Context, ticket, project string, fn func(platforms.Ref, *claim.Service, *queue.Queue) error) error {
	if err := a.loadTrackers(ctx); err != nil {
		return err
	}
	ref, err := a.loadTicket(ticket, project)
	if err != nil {
		return err
	}
	claims, q, flush := a.claims(ctx)
	defer flush()
	return fn(ref, claims, q)
}

func requeueCmd(a *app) *cobra.Command {
	var project string
	cmd := &cobra.Command{
		Use:   "requeue TICKET",
		Short: "Push a new request for an Enqueued ticket that has none (under its claim lock)",
		Long: `Does what the EnqueuedReconciler does for an orphaned Enqueued ticket, now: under the
ticket's claim lock it checks that no request is queued or taken, that no run holds its
heartbeat and that the tracker shows it Enqueued, then pushes a PipelineRequest that continues
the ticket's attempt count. Otherwise it changes nothing and says why (exit 0).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var res ops.RequeueResult
			err := a.withClaims(cmd.Context(), argv[0], project, func(ref platforms.Ref, claims *claim.Service, q *queue.Queue) (err error) {
				res, err = ops.Requeue(cmd.Context(), claims, q, ref)
				return err
			})
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				if res.Pushed != nil {
					fmt.Fprintf(w, "requeued %s: request %s, attempt %d\n", res.Ticket, res.Pushed.ID, res.Pushed.Attempt)
				} else {
					fmt.Fprintf(w, "not requeued %s: %s\n", res.Ticket, res.Skipped)
				}
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project of the ticket (default: inferred from the config)")
	return cmd
}

func retryCmd(a *app) *cobra.Command {
	var project string
	cmd := &cobra.Command{
		Use:   "retry TICKET",
		Short: "Run a Failed ticket again with a fresh attempt count (under its claim lock)",
		Long: `Does what a "/agent-smith retry" comment does: under the ticket's claim lock it moves a Failed
ticket that keeps its trigger label back to Enqueued with a fresh attempt count and pushes a
PipelineRequest. Any other ticket (pending, enqueued, in progress, done, closed, without the
trigger label) is left as it is, and the command says why (exit 0).

A retry is a change of the ticket: it ends the ticket's backoff after a tracker refusal for good
(see "status") and writes at once. If the tracker refuses the retry's own label write for good
(HTTP 401, 403, 404, 400/422: a permission, a token, a field rule), the refusal is recorded and
counted like any other, the ticket gets the one comment naming the cause and the fix (not again for
the same status), and the command says "not retried" with the status (exit 0): fix the cause, then
retry again.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var res claim.RetryResult
			err := a.withClaims(cmd.Context(), argv[0], project, func(ref platforms.Ref, claims *claim.Service, _ *queue.Queue) (err error) {
				res, err = claims.Retry(cmd.Context(), ref, lifecycle.SourceOperator, a.instance())
				return err
			})
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				if res.Retried() {
					fmt.Fprintf(w, "retried %s: request %s, attempt %d\n", res.Ticket, res.Request.ID, res.Request.Attempt)
				} else {
					fmt.Fprintf(w, "not retried %s: %s\n", res.Ticket, res.Reason)
				}
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project of the ticket (default: inferred from the config)")
	return cmd
}

func releaseCmd(a *app) *cobra.Command {
	var project string
	var yes bool
	cmd := &cobra.Command{
		Use:   "release TICKET --yes",
		Short: "Delete a ticket's stuck claim lock, heartbeat and waiting outcome",
		Long: `Deletes the ticket's claim lock and heartbeat (each only if it still holds the value read)
and its outcome record waiting for the tracker, if any (its Done or Failed is then never written).
A live run whose heartbeat is deleted is fenced out: it stops its pipeline at its next renewal
and writes nothing more, and the StaleJobDetector reverts and reclaims the ticket on its next
cycle. Without --yes it only shows what it would delete (exit 2).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ref, err := a.loadTicket(argv[0], project)
			if err != nil {
				return err
			}
			lock, _ := a.rdb.Get(cmd.Context(), keys.ClaimLock(ref.Platform, ref.ID)).Result()
			hb, _, _ := runstate.Holder(cmd.Context(), a.rdb, ref)
			o, waits, _ := runstate.OutcomeOf(cmd.Context(), a.rdb, ref)
			if lock == "" && hb == "" && !waits {
				return notFound("%s holds no claim lock, no heartbeat and no waiting outcome", ref)
			}
			if !yes {
				fmt.Fprintf(a.errOut, "would delete for %s: claim lock %q, heartbeat %q, waiting outcome %q\n", ref, lock, hb, o.To)
				return usageErr("release deletes locks: re-run with --yes")
			}
			res, err := ops.Release(cmd.Context(), a.rdb, ref)
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "released %s: claim lock %q, heartbeat %q, waiting outcome %q\n", res.Ticket, res.ClaimLock,
					res.Heartbeat, res.Outcome)
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project of the ticket (default: inferred from the config)")
	cmd.Flags().BoolVar(&yes, "yes", false, "really delete")
	return cmd
}

func cancelCmd(a *app) *cobra.Command {
	var project, reason string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "cancel TICKET",
		Short: "Stop a ticket's request or run, or fail a ticket awaiting approval",
		Long: `A ticket in awaiting-approval has no request or run to stop: under its claim lock the
ApprovalGate fails it at once, as an "/agent-smith cancel" comment does, with one comment naming
"operator:<login>@<host>" and the reason, audited. Any other ticket gets
agentsmith:cancel:{platform}:{id} = "cancelled by agentsmithctl: <reason>" for --ttl: the
consumer holding the ticket's run (or taking its request) reads the key, stops the pipeline and
fails the ticket, quoting the reason; this command only asks and returns at once. Without the
trackers' tokens, or when the ticket cannot be read, it only asks, and says so: a ticket awaiting
approval then fails only if it is approved within --ttl.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			var pc ops.ParkedCanceller
			unread := ""
			if err := a.loadTrackers(ctx); err != nil {
				unread = err.Error()
			} else {
				claims, q, flush := a.claims(ctx)
				defer flush()
				pc = gate.New(a.rdb, claims, q, gate.Config{Instance: a.instance()})
			}
			ref, err := a.loadTicket(argv[0], project)
			if err != nil {
				return err
			}
			res, err := ops.CancelTicket(ctx, a.rdb, pc, ref, a.operator(), reason, lifecycle.CtlCause(reason), ttl)
			if err != nil {
				return err
			}
			if res.Unread == "" {
				res.Unread = unread
			}
			return a.emit(res, func(w io.Writer) {
				switch {
				case res.Parked && res.Outcome == gate.OutcomeCancelled:
					fmt.Fprintf(w, "cancelled %s: it awaited approval and failed (%s)\n", res.Ticket, res.Reason)
				case res.Parked && res.Outcome == gate.OutcomeRecorded:
					fmt.Fprintf(w, "cancel of %s recorded %s\n", res.Ticket, res.Reason)
				case res.Parked:
					fmt.Fprintf(w, "not cancelled %s: %s\n", res.Ticket, res.Reason)
				default:
					fmt.Fprintf(w, "cancel requested for %s (%s = %q)\n", res.Ticket, res.Key, res.Cause)
					if res.Unread != "" {
						fmt.Fprintf(w, "the ticket was not read (%s): if it awaits approval, it fails only if approved within --ttl\n", res.Unread)
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project of the ticket (default: inferred from the config)")
	cmd.Flags().StringVar(&reason, "reason", "operator request", "why; quoted in the comment on the failed ticket")
	cmd.Flags().DurationVar(&ttl, "ttl", keys.CancelTTL, "how long the request waits to be honoured")
	return cmd
}
