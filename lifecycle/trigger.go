package lifecycle

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

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ErrPermissionUnknown marks a claim that could not tell whether the person
// who triggered it may start runs (the tracker's permission lookup
// failed). Nothing ran: the caller retries later, as after a tracker error.
var ErrPermissionUnknown = errors.New("trigger permission unknown")

// TriggerAllow says who may start a project's runs by adding the trigger
// label (config trigger.allow). The zero value admits anyone; the daemon
// always sets it from its config, whose default is write access.
type TriggerAllow struct {
	// Write admits anyone the project's tracker reports write access for
	// (platforms.PermissionChecker); a tracker without that capability
	// admits nobody this way.
	Write bool
	// Users are admitted by name, as platforms.WebhookEvent.Actor names
	// them (compared case-insensitively, as the trackers resolve names).
	Users []string
}

// gated reports whether anything is checked at all.
func (a TriggerAllow) gated() bool { return a.Write || len(a.Users) > 0 }

// listed reports whether actor is one of Users.
func (a TriggerAllow) listed(actor string) bool {
	for _, u := range a.Users {
		if strings.EqualFold(strings.TrimSpace(u), actor) {
			return true
		}
	}
	return false
}

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

// gateTrigger decides whether the person who triggered t may start a run:
// "" if so, else the NotEligible reason (after telling them once on the
// ticket). actor is who added the trigger label where the caller knows it
// (a webhook); otherwise the actor the last webhook named for this ticket
// is gated again, so a refused trigger stays refused when polling or the
// TriggerSweeper finds the label, until an allowed person adds it again. A
// claim with no actor known at all is admitted (see README "Security").
// A failed lookup is ErrPermissionUnknown and never runs.
func (c *ClaimService) gateTrigger(ctx context.Context, p *Project, t *platforms.Ticket, actor string) (string, error) {
	if !p.TriggerAllow.gated() {
		return "", nil
	}
	ref := t.Ref
	known := actor != ""
	if !known {
		stored, err := c.rdb.Get(ctx, keys.TriggerActor(ref.Key())).Result()
		if errors.Is(err, redis.Nil) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("claim %s: read trigger actor: %w: %w", ref, ErrRedisUnavailable, err)
		}
		actor = stored
	}
	ok, err := c.mayTrigger(ctx, p, actor)
	if err != nil {
		if known {
			// Whoever claims next (a redelivery, the sweeper) checks this
			// actor again rather than no one.
			_ = c.rdb.Set(ctx, keys.TriggerActor(ref.Key()), actor, keys.TriggerActorTTL).Err()
		}
		return "", fmt.Errorf("claim %s: may %q trigger: %w: %w", ref, actor, ErrPermissionUnknown, err)
	}
	if ok {
		return "", nil
	}
	if known {
		if err := c.rdb.Set(ctx, keys.TriggerActor(ref.Key()), actor, keys.TriggerActorTTL).Err(); err != nil {
			return "", fmt.Errorf("claim %s: remember trigger actor: %w: %w", ref, ErrRedisUnavailable, err)
		}
	}
	reason := NotAllowedReason(actor)
	if err := c.tellRefused(ctx, p, ref, actor); err != nil {
		// The refusal stands; the comment is tried again on the next one.
		c.log.Warn("refusal comment failed", zap.String("ticket", ref.String()), zap.Error(err))
	}
	return reason, nil
}

// forgetTriggerActor drops the remembered actor once a claim ran the
// ticket: that trigger is used up.
func (c *ClaimService) forgetTriggerActor(ctx context.Context, ref platforms.Ref) {
	if err := c.rdb.Del(ctx, keys.TriggerActor(ref.Key())).Err(); err != nil {
		c.log.Warn("forget trigger actor", zap.String("ticket", ref.String()), zap.Error(err))
	}
}

// mayTrigger answers from the project's list, then from the tracker's
// write access, cached in Redis for keys.TriggerPermissionTTL.
func (c *ClaimService) mayTrigger(ctx context.Context, p *Project, actor string) (bool, error) {
	if p.TriggerAllow.listed(actor) {
		return true, nil
	}
	pc, ok := p.Tracker.(platforms.PermissionChecker)
	if !p.TriggerAllow.Write || !ok {
		return false, nil
	}
	key := keys.TriggerPermission(p.Name, actorDigest(actor))
	switch cached, err := c.rdb.Get(ctx, key).Result(); {
	case err == nil:
		return cached == "1", nil
	case !errors.Is(err, redis.Nil):
		return false, fmt.Errorf("read cached permission: %w: %w", ErrRedisUnavailable, err)
	}
	lctx, cancel := context.WithTimeout(ctx, triggerTimeout)
	defer cancel()
	may, err := pc.MayWrite(lctx, actor)
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
func (c *ClaimService) tellRefused(ctx context.Context, p *Project, ref platforms.Ref, actor string) error {
	key := keys.TriggerRefusal(ref.Key(), actorDigest(actor))
	first, err := c.rdb.SetNX(ctx, key, "1", keys.TriggerRefusalTTL).Result()
	if err != nil || !first {
		return err
	}
	body := fmt.Sprintf("**%s**: not running: this was triggered by %s, who may not start runs. "+
		"Someone with write access (or listed in the project's `trigger.allow`) can remove `%s` and add it again.",
		c.cfg.Labels.Prefix, actor, p.TriggerLabel)
	if err := p.Tracker.Comment(ctx, ref, body); err != nil {
		_ = c.rdb.Del(context.WithoutCancel(ctx), key).Err()
		return fmt.Errorf("comment: %w", err)
	}
	return nil
}
