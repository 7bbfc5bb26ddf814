package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// decisionResult is what approve and reject print.
type decisionResult struct {
	Ticket string `json:"ticket"`
	claim.CommandResult
	Actor string `json:"actor"`
}

// operator names the person running the command for the audit and the
// ticket: "operator:<login>@<host>" (gate.Operator).
func (a *app) operator() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "agentsmithctl"
	}
	host, _ := os.Hostname()
	return gate.Operator(name + "@" + host)
}

// decide carries out an operator's decision on a ticket awaiting approval
// through the ApprovalGate, with the claim service the daemon would use.
func (a *app) decide(ctx context.Context, ticket, project string, d gate.Decision) error {
	res := decisionResult{Actor: a.operator()}
	err := a.withClaims(ctx, ticket, project, func(ref platforms.Ref, claims *claim.Service, q *queue.Queue) (err error) {
		res.Ticket = ref.String()
		g := gate.New(a.rdb, claims, q, gate.Config{Instance: a.instance()})
		res.CommandResult, err = g.DecideAsOperator(ctx, ref, res.Actor, d)
		return err
	})
	if err != nil {
		return err
	}
	return a.emit(res, func(w io.Writer) {
		switch res.Outcome {
		case claim.CommandNoop, claim.CommandRefused:
			fmt.Fprintf(w, "not %s %s: %s\n", pastOf(d.Kind), res.Ticket, res.Reason)
		case gate.OutcomeFailed:
			fmt.Fprintf(w, "rejected %s past its gate's max_rejections: the ticket failed (%s)\n", res.Ticket, res.Reason)
		default:
			fmt.Fprintf(w, "%s %s %s\n", res.Outcome, res.Ticket, res.Reason)
		}
	})
}

func pastOf(kind string) string {
	if kind == gate.Approve {
		return "approved"
	}
	return "rejected"
}

func approveCmd(a *app) *cobra.Command {
	var project string
	cmd := &cobra.Command{
		Use:   "approve TICKET",
		Short: "Approve a ticket awaiting approval: its gated stage runs (as operator)",
		Long: `Does what an "/agent-smith approve" comment does, as the operator: under the ticket's claim
lock it moves a ticket in awaiting-approval to enqueued at its gated stage and pushes the stage's
request. The gate's approvers and distinct_from_trigger are not checked: the operator holds the
tracker token that could write the decision label anyway. The decision is audited and answered on
the ticket as "operator:<login>@<host>". A ticket not awaiting approval is left alone and the
command says why (exit 0).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.decide(cmd.Context(), argv[0], project, gate.Decision{Kind: gate.Approve})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project of the ticket (default: inferred from the config)")
	return cmd
}

func rejectCmd(a *app) *cobra.Command {
	var project, reason string
	cmd := &cobra.Command{
		Use:   `reject TICKET --reason "..."`,
		Short: "Reject a ticket awaiting approval: the stage before runs again with the reason (as operator)",
		Long: `Does what an "/agent-smith reject <why>" comment does, as the operator: under the ticket's claim
lock it sends a ticket in awaiting-approval back to the stage before, which runs again with the
reason as $AGENTSMITH_REVIEW (at most 4 KiB); past the gate's max_rejections the ticket fails.
The gate's approvers are not checked (see approve). A ticket not awaiting approval is left alone
and the command says why (exit 0).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageErr("reject needs --reason: the stage that runs again gets it as $AGENTSMITH_REVIEW")
			}
			return a.decide(cmd.Context(), argv[0], project, gate.Decision{Kind: gate.Reject, Reason: reason})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project of the ticket (default: inferred from the config)")
	cmd.Flags().StringVar(&reason, "reason", "", "what to change: the stage before gets it as $AGENTSMITH_REVIEW (required)")
	return cmd
}
