package claim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ErrPermissionUnknown marks a claim that could not tell whether the person
// who triggered it may start runs (the tracker's permission lookup
// failed). Nothing ran: the caller retries later, as after a tracker error.
var ErrPermissionUnknown = errors.New("trigger permission unknown")

// NotAllowedReason is the NotEligible reason of a run refused because of
// who triggered it.
func NotAllowedReason(actor string) string {
	return "triggered by " + actor + ", who may not start runs"
}

// actorDigest names an actor in Redis keys without spelling it out.
func actorDigest(actor string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(actor)))
	return hex.EncodeToString(sum[:12])
}

// triggerTimeout bounds one permission lookup, so a slow tracker cannot use
// up the claim's budget.
const triggerTimeout = 10 * time.Second

// unknownActor stands for the person when a ticket's history does not name
// who added the trigger label; nobody of that name may start runs.
const unknownActor = "someone its history does not name"

// gateTrigger decides whether the person who triggered t may start a run:
// "" and that person (for the claim to record with its push,
// keys.RunTrigger) if so, else the NotEligible reason (after telling them
// once on the ticket). actor is who added the trigger label where the caller knows it
// (a webhook that added it); otherwise it is learned as triggerActor says.
// A failed lookup is ErrPermissionUnknown and never runs.
func (c *Service) gateTrigger(ctx context.Context, p *lifecycle.Project, t *platforms.Ticket, actor string) (reason, admitted string, err error) {
	if !p.TriggerAllow.Gated() {
		return "", "", nil
	}
	ref := t.Ref
	known := actor != ""
	if !known {
		if actor, err = c.triggerActor(ctx, p, ref); err != nil || actor == "" {
			return "", "", err
		}
	}
	ok, err := c.mayTrigger(ctx, p, ref, actor)
	if known && (err != nil || !ok) {
		// Whoever claims next without knowing (the sweeper) checks this
		// person again rather than no one.
		c.rememberTriggerActor(ctx, ref, actor)
	}
	if err != nil {
		return "", "", fmt.Errorf("claim %s: may %q trigger: %w: %w", ref, actor, ErrPermissionUnknown, err)
	}
	if ok {
		return "", actor, nil
	}
	reason = NotAllowedReason(actor)
	if err := c.tellRefused(ctx, p, ref, actor); err != nil {
		// The refusal stands; the comment is tried again on the next one.
		c.log.Warn("refusal comment failed", zap.String("ticket", ref.String()), zap.Error(err))
	}
	return reason, "", nil
}

// triggerActor learns who added the trigger label when the caller does not
// know (polling, the TriggerSweeper, a webhook for another change): the
// person a webhook or the history named within keys.TriggerActorTTL, else
// the ticket's history (platforms.LabelHistory), remembered as long. A
// tracker without history admits an unknown trigger ("" with no error);
// all four platforms have one.
func (c *Service) triggerActor(ctx context.Context, p *lifecycle.Project, ref platforms.Ref) (string, error) {
	stored, err := c.rdb.Get(ctx, keys.TriggerActor(ref.Key())).Result()
	if err == nil {
		return stored, nil
	}
	if !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("claim %s: read trigger actor: %w: %w", ref, ErrRedisUnavailable, err)
	}
	lh, ok := p.Tracker.(platforms.LabelHistory)
	if !ok {
		return "", nil
	}
	lctx, cancel := context.WithTimeout(ctx, triggerTimeout)
	defer cancel()
	who, err := lh.LabelAddedBy(lctx, ref, p.TriggerLabel)
	if err != nil {
		return "", fmt.Errorf("claim %s: who added %q: %w: %w", ref, p.TriggerLabel, ErrPermissionUnknown, err)
	}
	if who == "" {
		who = unknownActor
	}
	c.rememberTriggerActor(ctx, ref, who)
	return who, nil
}

// rememberTriggerActor records who added the trigger label for
// keys.TriggerActorTTL. Best effort: without it the next claim that does
// not know reads the history again.
func (c *Service) rememberTriggerActor(ctx context.Context, ref platforms.Ref, actor string) {
	if err := c.rdb.Set(ctx, keys.TriggerActor(ref.Key()), actor, keys.TriggerActorTTL).Err(); err != nil {
		c.log.Warn("remember trigger actor", zap.String("ticket", ref.String()), zap.Error(err))
	}
}

// triggerUsedOn records on pipe, once a claim of a gated project
// enqueued its request, who triggered the run (runTrigger, "" when
// unknown) for the run's life (keys.GateTTL), past the trigger actor it
// drops: an approval gate with distinct_from_trigger refuses that person,
// and reads the ticket's history without the record. The remembered
// actor is dropped because that trigger is used up.
func triggerUsedOn(ctx context.Context, pipe redis.Pipeliner, ref platforms.Ref, runTrigger string) {
	if runTrigger != "" {
		pipe.Set(ctx, keys.RunTrigger(ref.Key()), runTrigger, keys.GateTTL)
	}
	pipe.Del(ctx, keys.TriggerActor(ref.Key()))
}

// mayTrigger answers from the project's list, then from the tracker's
// write access, then from its teams, each answer cached in Redis for
// keys.TriggerPermissionTTL. A lookup that fails does not stop the next
// one: a member of a listed team may trigger while write access cannot be
// read; only when nothing admits the actor is the failure the answer.
func (c *Service) mayTrigger(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, actor string) (bool, error) {
	return c.MayAct(ctx, p, p.TriggerAllow, ref, actor)
}

// MayAct reports whether allow admits actor on ref of project p, as
// mayTrigger does for the trigger (the same lookups and cache): the
// ApprovalGate asks it of a gate's approvers. An ungated allow admits
// anyone named.
func (c *Service) MayAct(ctx context.Context, p *lifecycle.Project, allow lifecycle.TriggerAllow, ref platforms.Ref, actor string) (bool, error) {
	if !allow.Gated() {
		return actor != "", nil
	}
	if allow.Listed(actor) {
		return true, nil
	}
	if actor == unknownActor {
		return false, nil
	}
	digest := actorDigest(actor)
	var failed error
	if pc, ok := p.Tracker.(platforms.TicketPermissionChecker); ok && allow.Write && pc.PermissionScope(ref) != "" {
		scope := pc.PermissionScope(ref)
		may, err := c.cachedAnswer(ctx, p, keys.TriggerPermissionIn(p.Name, scope, digest), func(ctx context.Context) (bool, error) {
			return pc.MayWriteIn(ctx, scope, actor)
		})
		if may {
			return true, nil
		}
		failed = err
	} else if pc, ok := p.Tracker.(platforms.PermissionChecker); ok && allow.Write {
		may, err := c.cachedAnswer(ctx, p, keys.TriggerPermission(p.Name, digest), func(ctx context.Context) (bool, error) {
			return pc.MayWrite(ctx, actor)
		})
		if may {
			return true, nil
		}
		failed = err
	}
	if tc, ok := p.Tracker.(platforms.TeamChecker); ok {
		for _, team := range allow.Teams {
			team = strings.TrimSpace(team)
			may, err := c.cachedAnswer(ctx, p, keys.TriggerTeam(p.Name, actorDigest(team), digest), func(ctx context.Context) (bool, error) {
				return tc.InTeam(ctx, actor, team)
			})
			if may {
				return true, nil
			}
			if err != nil && failed == nil {
				failed = fmt.Errorf("team %q: %w", team, err)
			}
		}
	}
	return false, failed
}

// cachedAnswer is the answer cached under key, else lookup's (bounded by
// triggerTimeout), cached for keys.TriggerPermissionTTL. A failed lookup
// is not cached, so the next claim asks again.
func (c *Service) cachedAnswer(ctx context.Context, p *lifecycle.Project, key string, lookup func(context.Context) (bool, error)) (bool, error) {
	switch cached, err := c.rdb.Get(ctx, key).Result(); {
	case err == nil:
		return cached == "1", nil
	case !errors.Is(err, redis.Nil):
		return false, fmt.Errorf("read cached permission: %w: %w", ErrRedisUnavailable, err)
	}
	lctx, cancel := context.WithTimeout(ctx, triggerTimeout)
	defer cancel()
	may, err := lookup(lctx)
	if err != nil {
		return false, err
	}
	v := "0"
	if may {
		v = "1"
	}
	if err := c.rdb.Set(ctx, key, v, keys.TriggerPermissionTTL).Err(); err != nil {
		c.log.Warn("cache trigger permission", zap.String("project", p.Name), zap.Error(err))
	}
	return may, nil
}

// tellRefused comments on the ticket once per actor: a person re-labelling
// (or a redelivered webhook) does not add a comment each time.
func (c *Service) tellRefused(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, actor string) error {
	key := keys.TriggerRefusal(ref.Key(), actorDigest(actor))
	first, err := c.rdb.SetNX(ctx, key, "1", keys.TriggerRefusalTTL).Result()
	if err != nil || !first {
		return err
	}
	body := fmt.Sprintf("**%s**: not running: this was triggered by %s, who may not start runs. "+
		"Someone with write access (or listed in the project's `trigger.allow`, by name or team) can remove `%s` and add it again.",
		c.cfg.Labels.Prefix, actor, p.TriggerLabel)
	if err := p.Tracker.Comment(ctx, ref, body); err != nil {
		_ = c.rdb.Del(context.WithoutCancel(ctx), key).Err()
		return fmt.Errorf("comment: %w", err)
	}
	return nil
}
