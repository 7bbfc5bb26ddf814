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
// g carries what the claim read with its lock and takes the writes the
// gate leaves for later.
func (c *Service) gateTrigger(ctx context.Context, p *lifecycle.Project, t *platforms.Ticket, actor string, g *gateState) (reason, admitted string, err error) {
	if !p.TriggerAllow.Gated() {
		return "", "", nil
	}
	ref := t.Ref
	known := actor != ""
	if !known {
		if actor, err = c.triggerActor(ctx, p, ref, g); err != nil || actor == "" {
			return "", "", err
		}
	}
	ok, err := c.mayAct(ctx, p, p.TriggerAllow, ref, actor, g)
	if known && (err != nil || !ok) {
		// Whoever claims next without knowing (the sweeper) checks this
		// person again rather than no one.
		g.set(keys.TriggerActor(ref.Key()), actor, keys.TriggerActorTTL)
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
// the ticket's history (platforms.LabelHistory), remembered as long (a
// write g leaves for later). A tracker without history admits an unknown
// trigger ("" with no error); all four platforms have one.
func (c *Service) triggerActor(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, g *gateState) (string, error) {
	stored, found, err := g.get(ctx, c.rdb, keys.TriggerActor(ref.Key()))
	if err != nil {
		return "", fmt.Errorf("claim %s: read trigger actor: %w: %w", ref, ErrRedisUnavailable, err)
	}
	if found {
		return stored, nil
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
	g.set(keys.TriggerActor(ref.Key()), who, keys.TriggerActorTTL)
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
	return c.mayAct(ctx, p, allow, ref, actor, nil)
}

// mayAct is MayAct reading the cached answers g read with the claim lock,
// and leaving the cache's fills to g.
func (c *Service) mayAct(ctx context.Context, p *lifecycle.Project, allow lifecycle.TriggerAllow, ref platforms.Ref, actor string, g *gateState) (bool, error) {
	if !allow.Gated() {
		return actor != "", nil
	}
	if allow.Listed(actor) {
		return true, nil
	}
	if actor == unknownActor {
		return false, nil
	}
	var failed error
	for _, pc := range permissionChecks(p, allow, ref, actor) {
		may, err := c.cachedAnswer(ctx, p, pc.key, g, pc.lookup)
		if may {
			return true, nil
		}
		if err != nil && failed == nil {
			failed = err
			if pc.team != "" {
				failed = fmt.Errorf("team %q: %w", pc.team, err)
			}
		}
	}
	return false, failed
}

// permissionCheck is one question mayAct may ask of the tracker: its
// cache key and its lookup; team names the team asked about, if any.
type permissionCheck struct {
	key, team string
	lookup    func(context.Context) (bool, error)
}

// permissionChecks lists, in order, what mayAct asks about actor: write
// access (in ref's permission scope where the tracker has them), then
// each listed team.
func permissionChecks(p *lifecycle.Project, allow lifecycle.TriggerAllow, ref platforms.Ref, actor string) []permissionCheck {
	digest := actorDigest(actor)
	var checks []permissionCheck
	if pc, ok := p.Tracker.(platforms.TicketPermissionChecker); ok && allow.Write && pc.PermissionScope(ref) != "" {
		scope := pc.PermissionScope(ref)
		checks = append(checks, permissionCheck{key: keys.TriggerPermissionIn(p.Name, scope, digest), lookup: func(ctx context.Context) (bool, error) {
			return pc.MayWriteIn(ctx, scope, actor)
		}})
	} else if pc, ok := p.Tracker.(platforms.PermissionChecker); ok && allow.Write {
		checks = append(checks, permissionCheck{key: keys.TriggerPermission(p.Name, digest), lookup: func(ctx context.Context) (bool, error) {
			return pc.MayWrite(ctx, actor)
		}})
	}
	if tc, ok := p.Tracker.(platforms.TeamChecker); ok {
		for _, team := range allow.Teams {
			team = strings.TrimSpace(team)
			checks = append(checks, permissionCheck{key: keys.TriggerTeam(p.Name, actorDigest(team), digest), team: team, lookup: func(ctx context.Context) (bool, error) {
				return tc.InTeam(ctx, actor, team)
			}})
		}
	}
	return checks
}

// gateReads names the keys gateTrigger reads for a claim of ref by actor
// ("" when unknown), for the claim to read them with its lock: the cached
// answers about a known actor, else the remembered actor (the answers
// about whom cannot be named before it is read).
func gateReads(p *lifecycle.Project, ref platforms.Ref, actor string) []string {
	allow := p.TriggerAllow
	switch {
	case !allow.Gated():
		return nil
	case actor == "":
		return []string{keys.TriggerActor(ref.Key())}
	case allow.Listed(actor) || actor == unknownActor:
		return nil
	}
	var ks []string
	for _, pc := range permissionChecks(p, allow, ref, actor) {
		ks = append(ks, pc.key)
	}
	return ks
}

// gateState is what a claim read with its lock for its gate (read, by
// key: nil for a key found absent; a key not in it is read on its own),
// and the writes the gate leaves for later (later): the claim sends them
// with its push, or on its way out when it does not push (flush). A nil
// gateState reads and writes at once.
type gateState struct {
	read  map[string]*string
	later []laterWrite
}

// laterWrite is a SET a gateState holds; nx: only where the key is still
// absent (it was read absent with the lock).
type laterWrite struct {
	key, val string
	ttl      time.Duration
	nx       bool
}

// get is key's value, read with the lock where it was, else now.
func (g *gateState) get(ctx context.Context, rdb redis.Cmdable, key string) (val string, found bool, err error) {
	if g != nil {
		if v, ok := g.read[key]; ok {
			if v == nil {
				return "", false, nil
			}
			return *v, true, nil
		}
	}
	val, err = rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return val, err == nil, err
}

// set holds a SET of key for later. A key read absent with the lock is
// set only where it is still absent: what the claim learned for it is
// older than what a writer that did not wait for the lock (a webhook
// naming a newer trigger's actor) wrote meanwhile.
func (g *gateState) set(key, val string, ttl time.Duration) {
	v, read := g.read[key]
	g.later = append(g.later, laterWrite{key: key, val: val, ttl: ttl, nx: read && v == nil})
}

// setOn puts the held writes on pipe.
func (g *gateState) setOn(ctx context.Context, pipe redis.Pipeliner) {
	for _, w := range g.later {
		if w.nx {
			pipe.SetNX(ctx, w.key, w.val, w.ttl)
		} else {
			pipe.Set(ctx, w.key, w.val, w.ttl)
		}
	}
}

// flush sends the writes still held. Best effort: they are caches, which
// the next claim fills again.
func (c *Service) flush(ctx context.Context, ref platforms.Ref, g *gateState) {
	if len(g.later) == 0 {
		return
	}
	if _, err := c.rdb.Pipelined(context.WithoutCancel(ctx), func(pipe redis.Pipeliner) error {
		g.setOn(ctx, pipe)
		return nil
	}); err != nil {
		c.log.Warn("remember trigger actor and permission", zap.String("ticket", ref.String()), zap.Error(err))
	}
}

// cachedAnswer is the answer cached under key, else lookup's (bounded by
// triggerTimeout), cached for keys.TriggerPermissionTTL (a write g holds
// for later, or at once without g). A failed lookup is not cached, so the
// next claim asks again.
func (c *Service) cachedAnswer(ctx context.Context, p *lifecycle.Project, key string, g *gateState, lookup func(context.Context) (bool, error)) (bool, error) {
	cached, found, err := g.get(ctx, c.rdb, key)
	switch {
	case err != nil:
		return false, fmt.Errorf("read cached permission: %w: %w", ErrRedisUnavailable, err)
	case found:
		return cached == "1", nil
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
	if g != nil {
		g.set(key, v, keys.TriggerPermissionTTL)
	} else if err := c.rdb.Set(ctx, key, v, keys.TriggerPermissionTTL).Err(); err != nil {
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
