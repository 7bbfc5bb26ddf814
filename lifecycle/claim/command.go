package claim

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// MaxCommandReplies is how many replies the daemon posts to comment
// commands on one ticket within keys.CommandReplyWindow; past it commands
// still act but are answered in the log only, so commenting cannot make the
// daemon post without bound.
const MaxCommandReplies = 5

// The comment commands.
const (
	CommandRetry  = "retry"
	CommandCancel = "cancel"
	// CommandApprove and CommandReject decide a ticket awaiting approval
	// (lifecycle/gate); the receiver hands them to the ApprovalGate.
	CommandApprove = "approve"
	CommandReject  = "reject"
)

// ParkedCanceller fails a ticket parked in AwaitingApproval on a person's
// cancel command: the ApprovalGate owns that move (lifecycle/gate).
type ParkedCanceller interface {
	CancelParked(ctx context.Context, ref platforms.Ref, actor string) (CommandResult, error)
}

// SetParkedCanceller hands the cancel commands on parked tickets to pc;
// without one they are answered "nothing to cancel".
func (c *Service) SetParkedCanceller(pc ParkedCanceller) { c.parked = pc }

// Outcomes of RunCommand.
const (
	CommandDone    = "done"    // the command acted (retry queued, cancel requested)
	CommandNoop    = "noop"    // nothing to do; the reply says why
	CommandRefused = "refused" // the author may not start runs
	CommandUnknown = "unknown" // not a command the daemon knows; the reply lists them
)

// CommandResult reports a comment command.
type CommandResult struct {
	Command string `json:"command"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// CommandCause is the cancellation cause of a `cancel` command by actor,
// quoted in the comment on the failed ticket.
func CommandCause(actor string) string {
	return "cancelled by " + SafeName(actor) + " with a comment command"
}

// RunCommand carries out a comment command by actor on ref and answers it
// with a short reply on the ticket (bounded by MaxCommandReplies). Only
// people the project's trigger gate admits (trigger.allow, the rule a
// trigger label is checked by) may retry or cancel: retry runs Retry,
// cancel asks the run or request to stop with CommandCause. A failed
// permission lookup is ErrPermissionUnknown and nothing is done.
func (c *Service) RunCommand(ctx context.Context, ref platforms.Ref, actor, command string) (CommandResult, error) {
	res := CommandResult{Command: command}
	p, ok := c.projects.Watched().Lookup(ref)
	if !ok {
		return res, fmt.Errorf("command %s: unknown project %q", ref, ref.Project)
	}
	prefix, who := p.Commands.Prefix, SafeName(actor)
	if command != CommandRetry && command != CommandCancel {
		res.Outcome = CommandUnknown
		c.reply(ctx, p, ref, fmt.Sprintf("commands: `%s %s` runs a failed ticket again, `%s %s` stops its run, "+
			"`%s %s` starts a stage awaiting approval, `%s %s <why>` sends it back to the stage before.",
			prefix, CommandRetry, prefix, CommandCancel, prefix, CommandApprove, prefix, CommandReject))
		return res, nil
	}
	allowed := actor != ""
	if allowed && p.TriggerAllow.Gated() {
		var err error
		if allowed, err = c.mayTrigger(ctx, p, ref, actor); err != nil {
			return res, fmt.Errorf("command %s: may %q start runs: %w: %w", ref, actor, ErrPermissionUnknown, err)
		}
	}
	if !allowed {
		res.Outcome, res.Reason = CommandRefused, NotAllowedReason(who)
		c.reply(ctx, p, ref, fmt.Sprintf("not done: `%s %s` was asked by %s, who may not start runs.", prefix, command, who))
		return res, nil
	}
	var err error
	if command == CommandRetry {
		res, err = c.retryCommand(ctx, p, ref, actor)
	} else {
		res, err = c.cancelCommand(ctx, p, ref, actor)
	}
	res.Command = command
	// A retry is recorded as its transition, a cancel as the executor's.
	c.log.Info("comment command", zap.String("ticket", ref.String()), zap.String("command", command),
		zap.String("outcome", res.Outcome), zap.String("reason", res.Reason))
	return res, err
}

func (c *Service) retryCommand(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, actor string) (CommandResult, error) {
	r, err := c.Retry(ctx, ref, SourceCommand, actor)
	if err != nil {
		return CommandResult{}, err
	}
	if r.Refused {
		// Refusals told the ticket, once per status; a reply each time would
		// repeat it.
		return CommandResult{Outcome: CommandNoop, Reason: r.Reason}, nil
	}
	if !r.Retried() {
		c.reply(ctx, p, ref, "not retried: "+r.Reason+".")
		return CommandResult{Outcome: CommandNoop, Reason: r.Reason}, nil
	}
	c.reply(ctx, p, ref, "retrying, as "+SafeName(actor)+" asked: queued with a fresh attempt count.")
	return CommandResult{Outcome: CommandDone}, nil
}

func (c *Service) cancelCommand(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, actor string) (CommandResult, error) {
	t, err := p.Tracker.Get(ctx, ref)
	if err != nil {
		return CommandResult{}, fmt.Errorf("command %s: read ticket: %w", ref, err)
	}
	if s := c.cfg.Labels.StateOf(t.Labels); s == lifecycle.AwaitingApproval && c.parked != nil {
		return c.parked.CancelParked(ctx, ref, actor)
	} else if s != lifecycle.Enqueued && s != lifecycle.InProgress {
		reason := "nothing to cancel: state is " + s.String()
		c.reply(ctx, p, ref, reason+".")
		return CommandResult{Outcome: CommandNoop, Reason: reason}, nil
	}
	cause := CommandCause(actor)
	if err := runstate.RequestCancel(ctx, c.rdb, ref, cause, 0); err != nil {
		return CommandResult{}, fmt.Errorf("command %s: %w: %w", ref, ErrRedisUnavailable, err)
	}
	// The executor's cancellation comment, naming the person, answers it.
	return CommandResult{Outcome: CommandDone, Reason: cause}, nil
}

// Reply posts a short answer to a command on the ticket, bounded as the
// comment commands' replies are (reply); the ApprovalGate answers so.
func (c *Service) Reply(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, text string) {
	c.reply(ctx, p, ref, text)
}

// reply posts a short answer on the ticket, at most MaxCommandReplies per
// ticket within keys.CommandReplyWindow. Best effort: the command stands
// whether or not the reply is posted.
func (c *Service) reply(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, text string) {
	key := keys.CommandReplies(ref.Key())
	n, err := c.rdb.Incr(ctx, key).Result()
	if err == nil && n == 1 {
		err = c.rdb.Expire(ctx, key, keys.CommandReplyWindow).Err()
	}
	log := c.log.With(zap.String("ticket", ref.String()))
	switch {
	case err != nil:
		log.Warn("count command replies; not replying", zap.Error(err))
		return
	case n > MaxCommandReplies:
		log.Info("command reply not posted: too many on this ticket lately", zap.String("reply", text))
		return
	}
	if err := p.Tracker.Comment(ctx, ref, "**"+c.cfg.Labels.Prefix+"**: "+text); err != nil {
		log.Warn("command reply failed", zap.Error(err))
	}
}

// maxSafeName bounds a person's name as comments quote it.
const maxSafeName = 64

// SafeName is a person's name (from a webhook: a login, an account id, an
// e-mail address) fit to quote in a comment on any tracker: letters,
// digits and . _ : + - only, and @ after a letter or digit (no Markdown,
// Jira markup, mentions or line breaks), at most maxSafeName bytes; "someone" when nothing is left.
func SafeName(name string) string {
	var b strings.Builder
	alnum := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' }
	var last rune
	for _, r := range name {
		if b.Len() >= maxSafeName {
			break
		}
		// "@" only inside an address ("dana@example.com"), never where it
		// opens a mention.
		if alnum(r) || strings.ContainsRune("._:+-", r) || r == '@' && alnum(last) {
			b.WriteRune(r)
		}
		last = r
	}
	if b.Len() == 0 {
		return "someone"
	}
	return b.String()
}
