// Package gate is the ApprovalGate (lifecycle.OwnerApprovalGate): it
// decides tickets parked in AwaitingApproval by a stage's approval gate
// (config gate: approval). A person's approval starts the gated stage, a
// rejection sends the ticket back to the stage before with the reviewer's
// text ($AGENTSMITH_REVIEW), past the gate's max_rejections or on a cancel
// the ticket fails. The comment commands (/agent-smith approve|reject) and
// the decision labels (<prefix>:approved, <prefix>:rejected) both come
// here. It has no loop of its own: the receiver, the claim's cancel
// command and the poller call it.
package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// MaxReview bounds the reviewer's text a rejection hands the stage it
// re-runs ($AGENTSMITH_REVIEW), in bytes.
const MaxReview = 4 << 10

// LabelRejectReason is the reason of a rejection by the label.
const LabelRejectReason = "rejected with the label"

// Kinds of Decision.
const (
	Approve = "approve"
	Reject  = "reject"
	Cancel  = "cancel"
)

// Decision is what a person decided on a parked ticket: Kind Approve,
// Reject (with Reason, the reviewer's text) or Cancel.
type Decision struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason,omitempty"`
}

// Outcomes of a decision, as claim.CommandResult's.
const (
	OutcomeApproved  = "approved"
	OutcomeRejected  = "rejected"
	OutcomeFailed    = "failed" // rejected past max_rejections
	OutcomeCancelled = "cancelled"
)

// record is a decision as kept before its label write (keys.GateDecision).
type record struct {
	Decision
	Actor string `json:"actor"`
	// Stage is the gated stage the ticket waits for.
	Stage string `json:"stage"`
	// Rejection is this rejection's number (1 for the first).
	Rejection int `json:"rejection,omitempty"`
	Max       int `json:"max,omitempty"`
	// label is the decision label a person added to decide, "" for a
	// command; not kept.
	label string
}

// Config configures a Gate.
type Config struct {
	Instance string
	Clock    func() time.Time
	// RunWait bounds how long a decision, under the ticket's claim lock,
	// waits for the run that is parking the ticket to let go of it
	// (keys.Heartbeat), looking every RunPoll; default DefaultRunWait,
	// DefaultRunPoll.
	RunWait, RunPoll time.Duration
	Logger           *zap.Logger
}

// Defaults of Config's RunWait and RunPoll. A run parks a ticket with its
// last label write (two writes on GitHub REST, the first already reading
// awaiting-approval), then records the park and lets go: well within a
// second, unless the tracker or Redis is slow.
const (
	DefaultRunWait = 10 * time.Second
	DefaultRunPoll = 50 * time.Millisecond
)

// Gate decides parked tickets. Its moves run under the ticket's claim lock
// (claim.Service.WithLock), so a decision racing another, a cancel, a
// retry or a repair makes one move, and the LabelRepairer never tidies a
// ticket mid-decision.
type Gate struct {
	cfg    Config
	rdb    redis.UniversalClient
	claims *claim.Service
	queue  *queue.Queue
	log    *zap.Logger
	selves selves
}

// New wires a gate that pushes the stages it starts onto q.
func New(rdb redis.UniversalClient, claims *claim.Service, q *queue.Queue, cfg Config) *Gate {
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	if cfg.RunWait <= 0 {
		cfg.RunWait = DefaultRunWait
	}
	if cfg.RunPoll <= 0 {
		cfg.RunPoll = DefaultRunPoll
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Gate{cfg: cfg, rdb: rdb, claims: claims, queue: q, log: cfg.Logger.Named("ApprovalGate")}
}

// Decide carries out actor's decision on ref: the ticket must be
// AwaitingApproval, actor one of the gated stage's approvers (and, for an
// approval under distinct_from_trigger, not who triggered the run) and not
// the account the project's tracker writes as (platforms.SelfIdentifier),
// listed or not: whoever holds the daemon's token, a pipeline given it,
// would otherwise approve its own work. The
// decision is recorded, then the ticket moved and the stage's request
// pushed; the person is answered on the ticket (claim.Service.Reply). A
// failed permission lookup is claim.ErrPermissionUnknown and nothing is
// done.
func (g *Gate) Decide(ctx context.Context, ref platforms.Ref, actor string, d Decision) (claim.CommandResult, error) {
	return g.decide(ctx, ref, actor, d, "")
}

// reasonMoot is the reason of a label decision whose label the
// ticket no longer carries: a decision carried it out (the move removes
// it), or a person removed it.
const reasonMoot = "the decision label is gone"

// decide is Decide; a decision made by adding label (DecideByLabel) is
// not done, and says nothing on the ticket, when the ticket no longer
// carries it.
func (g *Gate) decide(ctx context.Context, ref platforms.Ref, actor string, d Decision, label string) (claim.CommandResult, error) {
	res := claim.CommandResult{Command: d.Kind}
	p, ok := g.claims.Projects().Lookup(ref)
	if !ok {
		return res, fmt.Errorf("gate %s: unknown project %q", ref, ref.Project)
	}
	who := claim.SafeName(actor)
	t, err := p.Tracker.Get(ctx, ref)
	if err != nil {
		return res, fmt.Errorf("gate %s: read ticket: %w", ref, err)
	}
	if label != "" && !t.HasLabel(label) {
		res.Outcome, res.Reason = claim.CommandNoop, reasonMoot
		return res, nil
	}
	labels := p.Labels(g.claims.Labels())
	if s := labels.StateOf(t.Labels); s != lifecycle.AwaitingApproval {
		res.Outcome, res.Reason = claim.CommandNoop, "nothing awaits approval: state is "+s.String()
		g.claims.Reply(ctx, p, ref, "not done: "+res.Reason+".")
		return res, nil
	}
	stage := labels.StageOf(t.Labels)
	a := approvalOf(p, stage)
	if self, err := g.selves.of(ctx, p, g.cfg.Clock); err != nil {
		return res, fmt.Errorf("gate %s: who the daemon writes as: %w: %w", ref, claim.ErrPermissionUnknown, err)
	} else if self != "" && strings.EqualFold(actor, self) {
		res.Outcome, res.Reason = claim.CommandRefused, who+" is the account agentsmithd writes with"
		g.claims.Reply(ctx, p, ref, fmt.Sprintf("not done: %s is the account agentsmithd writes with and may not approve or reject stage %s: "+
			"a pipeline holding its token could approve its own work.", who, stage))
		g.emit(lifecycle.Event{Ref: ref, To: lifecycle.AwaitingApproval, Outcome: "refused", Reason: d.Kind + " by " + who + ", the daemon's own account", Stage: stage, Actor: actor})
		return res, nil
	}
	may := actor != ""
	if may {
		if may, err = g.claims.MayAct(ctx, p, a.Approvers, ref, actor); err != nil {
			return res, fmt.Errorf("gate %s: may %q approve: %w: %w", ref, actor, claim.ErrPermissionUnknown, err)
		}
	}
	if !may {
		res.Outcome, res.Reason = claim.CommandRefused, who+" may not approve"
		g.claims.Reply(ctx, p, ref, fmt.Sprintf("not done: %s may not approve or reject stage %s.", who, stage))
		g.emit(lifecycle.Event{Ref: ref, To: lifecycle.AwaitingApproval, Outcome: "refused", Reason: d.Kind + " by " + who + ", who may not approve", Stage: stage, Actor: actor})
		return res, nil
	}
	if d.Kind == Approve && a.DistinctFromTrigger {
		trigger, err := g.runTrigger(ctx, p, ref)
		if err != nil {
			return res, err
		}
		if trigger == "" {
			res.Outcome, res.Reason = claim.CommandRefused, "who triggered the run is not known"
			g.claims.Reply(ctx, p, ref, fmt.Sprintf("not done: who triggered this run is not known, so stage %s's approval (distinct_from_trigger) cannot be checked; reject, or trigger the ticket again.", stage))
			g.emit(lifecycle.Event{Ref: ref, To: lifecycle.AwaitingApproval, Outcome: "refused", Reason: "approve by " + who + ", the run's trigger unknown", Stage: stage, Actor: actor})
			return res, nil
		}
		if strings.EqualFold(trigger, actor) {
			res.Outcome, res.Reason = claim.CommandRefused, who+" triggered the run"
			g.claims.Reply(ctx, p, ref, fmt.Sprintf("not done: %s triggered this run and may not approve it too; another approver must.", who))
			g.emit(lifecycle.Event{Ref: ref, To: lifecycle.AwaitingApproval, Outcome: "refused", Reason: "approve by " + who + ", who triggered the run", Stage: stage, Actor: actor})
			return res, nil
		}
	}
	return g.decideLocked(ctx, p, ref, record{Decision: d, Actor: actor, Stage: stage, Max: a.MaxRejections, label: label})
}

// selfMaxAge is how long the account a project's tracker writes as is kept
// before it is asked again: a token rotated to another account is known
// within it.
const selfMaxAge = 10 * time.Minute

// selves keeps, per project, the account its tracker's credential writes
// as (platforms.SelfIdentifier), which may never decide a gate.
type selves struct {
	mu   sync.Mutex
	seen map[string]selfEntry
}

type selfEntry struct {
	who string
	at  time.Time
}

// of is the account p's tracker writes as, asked at most every selfMaxAge;
// "" when the tracker cannot tell (no SelfIdentifier, or a credential not
// a user's). An error is the tracker's: nothing is decided on it.
func (s *selves) of(ctx context.Context, p *lifecycle.Project, now func() time.Time) (string, error) {
	si, ok := p.Tracker.(platforms.SelfIdentifier)
	if !ok {
		return "", nil
	}
	s.mu.Lock()
	e, ok := s.seen[p.Name]
	s.mu.Unlock()
	if ok && now().Sub(e.at) < selfMaxAge {
		return e.who, nil
	}
	who, err := si.Self(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.seen == nil {
		s.seen = map[string]selfEntry{}
	}
	s.seen[p.Name] = selfEntry{who: who, at: now()}
	s.mu.Unlock()
	return who, nil
}

// reasonBusy is the reason of a decision that found the ticket's claim
// lock held.
const reasonBusy = "another decision or claim holds the ticket"

// DecideByLabel carries out the decision a person made by adding a
// decision label (approve: <prefix>:approved, else <prefix>:rejected) to
// ref: actor is who added it where the caller knows (a webhook), else the
// ticket's history says (platforms.LabelHistory). The move removes the
// label; a refused or idle decision removes it too, so it is not read
// again at every poll.
func (g *Gate) DecideByLabel(ctx context.Context, ref platforms.Ref, actor string, approve bool) (claim.CommandResult, error) {
	p, ok := g.claims.Projects().Lookup(ref)
	if !ok {
		return claim.CommandResult{}, fmt.Errorf("gate %s: unknown project %q", ref, ref.Project)
	}
	labels := p.Labels(g.claims.Labels())
	label, d := labels.Approved(), Decision{Kind: Approve}
	if !approve {
		label, d = labels.Rejected(), Decision{Kind: Reject, Reason: LabelRejectReason}
	}
	if actor == "" {
		lh, ok := p.Tracker.(platforms.LabelHistory)
		if ok {
			who, err := lh.LabelAddedBy(ctx, ref, label)
			if err != nil {
				return claim.CommandResult{}, fmt.Errorf("gate %s: who added %q: %w: %w", ref, label, claim.ErrPermissionUnknown, err)
			}
			actor = who
		}
	}
	res, err := g.decide(ctx, ref, actor, d, label)
	// A decision that found the ticket's lock held (a claim, the
	// GateKeeper, another decision) keeps its label: the next poll, or
	// the next label event, decides again. One recorded while a run
	// parked the ticket keeps it too: its move removes it. A listing
	// read before that move (the GateKeeper's, which carries recorded
	// decisions out first) finds the label gone, and says nothing.
	if err == nil && (res.Outcome == claim.CommandRefused || res.Outcome == claim.CommandNoop && !slices.Contains([]string{reasonBusy, reasonMoot, reasonRecorded}, res.Reason)) {
		if t, rerr := p.Tracker.Get(ctx, ref); rerr == nil && t.HasLabel(label) {
			if _, rerr := lifecycle.RemoveDecision(ctx, p.Tracker, labels, t, label); rerr != nil {
				g.log.Warn("remove the refused decision label", zap.String("ticket", ref.String()), zap.Error(rerr))
			}
		}
	}
	return res, err
}

// Listed decides the tickets a listing found with a decision label (the
// poller's): each is read afresh by DecideByLabel. Errors are joined after
// every ticket was tried.
func (g *Gate) Listed(ctx context.Context, p *lifecycle.Project, tickets []*platforms.Ticket) error {
	labels := p.Labels(g.claims.Labels())
	var errs []error
	for _, t := range tickets {
		if labels.StateOf(t.Labels) != lifecycle.AwaitingApproval {
			continue
		}
		approve := t.HasLabel(labels.Approved())
		if !approve && !t.HasLabel(labels.Rejected()) {
			continue
		}
		if _, err := g.DecideByLabel(ctx, t.Ref, "", approve); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CancelParked fails a parked ticket on actor's cancel command; claim's
// cancel command hands it parked tickets (claim.ParkedCanceller), after
// checking actor against trigger.allow.
func (g *Gate) CancelParked(ctx context.Context, ref platforms.Ref, actor string) (claim.CommandResult, error) {
	p, ok := g.claims.Projects().Lookup(ref)
	if !ok {
		return claim.CommandResult{}, fmt.Errorf("gate %s: unknown project %q", ref, ref.Project)
	}
	return g.decideLocked(ctx, p, ref, record{Decision: Decision{Kind: Cancel}, Actor: actor})
}

// approvalOf is the gate of stage, or, for a stage whose gate was taken
// out of the config while a ticket waited, one with the project's
// approvers and defaults.
func approvalOf(p *lifecycle.Project, stage string) lifecycle.Approval {
	if a := p.ApprovalFor(stage); a != nil {
		return *a
	}
	return lifecycle.Approval{Approvers: p.TriggerAllow, MaxRejections: lifecycle.DefaultMaxRejections}
}

// runTrigger is who triggered the run: as the claim recorded it
// (keys.RunTrigger), else who added the trigger label as the ticket's
// history says; "" when neither knows.
func (g *Gate) runTrigger(ctx context.Context, p *lifecycle.Project, ref platforms.Ref) (string, error) {
	who, err := g.rdb.Get(ctx, keys.RunTrigger(ref.Key())).Result()
	if err == nil {
		return who, nil
	}
	if !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("gate %s: read who triggered the run: %w: %w", ref, claim.ErrRedisUnavailable, err)
	}
	lh, ok := p.Tracker.(platforms.LabelHistory)
	if !ok {
		return "", nil
	}
	who, err = lh.LabelAddedBy(ctx, ref, p.TriggerLabel)
	if err != nil {
		return "", fmt.Errorf("gate %s: who added %q: %w: %w", ref, p.TriggerLabel, claim.ErrPermissionUnknown, err)
	}
	return who, nil
}

// decideLocked records rec and moves the ticket under its claim lock,
// from a fresh read. A decision already recorded for the ticket (a crash
// between its record and its write) is finished first, and rec then finds
// the ticket moved. A ticket a run still holds (keys.Heartbeat) is being
// parked: its run's last label write may be half done, its park not yet
// recorded. The decision waits for the run to let go (RunWait at most)
// and reads the ticket then; a run that holds it longer gets rec recorded
// only (parkingLocked), which the GateKeeper carries out once the run let
// go.
func (g *Gate) decideLocked(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, rec record) (claim.CommandResult, error) {
	res := claim.CommandResult{Command: rec.Kind}
	held, err := g.claims.WithLock(ctx, ref, lifecycle.SourceGate, func(ctx context.Context) error {
		holds, err := g.runHolds(ctx, ref, g.cfg.RunWait)
		if err != nil {
			return err
		}
		if pending, ok, err := g.pending(ctx, ref); err != nil {
			return err
		} else if ok && !holds {
			if err := g.finish(ctx, p, ref, pending); err != nil {
				return err
			}
		}
		t, err := g.readFor(ctx, p, ref, &rec, &res)
		if err != nil || t == nil {
			return err
		}
		if holds {
			return g.parkingLocked(ctx, p, ref, &rec, &res)
		}
		if err := g.record(ctx, ref, &rec); err != nil {
			return err
		}
		res.Outcome, res.Reason = outcomeOf(rec), "by "+claim.SafeName(rec.Actor)
		return g.finishRead(ctx, p, t, rec)
	})
	if err != nil {
		return res, err
	}
	if !held {
		res.Outcome, res.Reason = claim.CommandNoop, reasonBusy
	}
	switch {
	case res.Outcome == claim.CommandNoop && res.Reason != reasonRecorded && res.Reason != reasonMoot:
		g.claims.Reply(ctx, p, ref, "not done: "+res.Reason+".")
	case res.Outcome == OutcomeRecorded:
		g.claims.Reply(ctx, p, ref, fmt.Sprintf("%s by %s recorded: %s.", rec.Kind, claim.SafeName(rec.Actor), whenParked(rec.Stage)))
	}
	return res, nil
}

// OutcomeRecorded is a decision on a ticket its run was still parking
// after the gate's RunWait: recorded (keys.GateDecision) and carried out
// by the GateKeeper (Expire) once the run let go.
const OutcomeRecorded = "recorded"

// readFor reads ref afresh under its claim lock and checks rec against
// it: the ticket must await approval, at rec.Stage when set (who may
// decide was checked for the stage read before the lock), else rec.Stage
// becomes the stage it awaits. A ticket that does not is nil, res saying
// why.
func (g *Gate) readFor(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, rec *record, res *claim.CommandResult) (*platforms.Ticket, error) {
	t, err := p.Tracker.Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("gate %s: read ticket: %w", ref, err)
	}
	if rec.label != "" && !t.HasLabel(rec.label) {
		res.Outcome, res.Reason = claim.CommandNoop, reasonMoot
		return nil, nil
	}
	labels := p.Labels(g.claims.Labels())
	if s := labels.StateOf(t.Labels); s != lifecycle.AwaitingApproval {
		res.Outcome, res.Reason = claim.CommandNoop, "nothing awaits approval: state is "+s.String()
		return nil, nil
	}
	if now := labels.StageOf(t.Labels); rec.Stage == "" {
		rec.Stage = now
	} else if !p.SameStage(rec.Stage, now) {
		res.Outcome, res.Reason = claim.CommandNoop, fmt.Sprintf("the ticket now awaits stage %s, not %s", now, rec.Stage)
		return nil, nil
	}
	return t, nil
}

// record numbers rec, a rejection, after those of its stage's gate that
// moved ref, and records it before its label write.
func (g *Gate) record(ctx context.Context, ref platforms.Ref, rec *record) error {
	if rec.Kind == Reject {
		n, err := g.rejections(ctx, ref, rec.Stage)
		if err != nil {
			return err
		}
		rec.Rejection = n + 1
	}
	return g.put(ctx, ref, *rec)
}

// parkingLocked is decideLocked on a ticket whose run still holds it after
// RunWait, rec checked against a fresh read: rec is recorded and not
// carried out; a decision recorded before it stands, and rec is then not
// done.
func (g *Gate) parkingLocked(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, rec *record, res *claim.CommandResult) error {
	if prior, ok, err := g.pending(ctx, ref); err != nil {
		return err
	} else if ok && prior.Kind == rec.Kind && prior.Actor == rec.Actor && p.SameStage(prior.Stage, rec.Stage) {
		res.Outcome, res.Reason = claim.CommandNoop, reasonRecorded // said when recorded
		return nil
	} else if ok {
		res.Outcome, res.Reason = claim.CommandNoop, fmt.Sprintf("the %s by %s recorded before is %s", prior.Kind, claim.SafeName(prior.Actor), whenParked(rec.Stage))
		return nil
	}
	if err := g.record(ctx, ref, rec); err != nil {
		return err
	}
	res.Outcome, res.Reason = OutcomeRecorded, "by "+claim.SafeName(rec.Actor)+"; "+whenParked(rec.Stage)
	g.log.Info("decision recorded: the run parking the ticket still holds it", zap.String("ticket", ref.String()), zap.String("decision", rec.Kind))
	g.emit(lifecycle.Event{Ref: ref, To: lifecycle.AwaitingApproval, Outcome: OutcomeRecorded, Reason: rec.Kind + " by " + claim.SafeName(rec.Actor) + " while the run parked the ticket",
		Stage: rec.Stage, Actor: rec.Actor})
	return nil
}

// reasonRecorded is the reason of a decision made again (the same kind,
// actor and stage: a decision label read again) while the one recorded
// awaits the run parking the ticket; nothing is said on the ticket.
const reasonRecorded = "the same decision is recorded"

// whenParked says when a decision recorded on a ticket still being parked
// for stage is carried out.
func whenParked(stage string) string {
	return "carried out once stage " + stage + " has finished parking the ticket"
}

// runHolds reports whether a run holds ref (keys.Heartbeat) after waiting
// up to wait for it to let go, looking every RunPoll; a parked ticket has
// no run, so one that holds it is still parking it.
func (g *Gate) runHolds(ctx context.Context, ref platforms.Ref, wait time.Duration) (bool, error) {
	for looks := wait / g.cfg.RunPoll; ; looks-- {
		token, _, err := runstate.Holder(ctx, g.rdb, ref)
		if err != nil {
			return false, fmt.Errorf("gate %s: read the run's lock: %w: %w", ref, claim.ErrRedisUnavailable, err)
		}
		if token == "" || looks <= 0 {
			return token != "", nil
		}
		tm := time.NewTimer(g.cfg.RunPoll)
		select {
		case <-ctx.Done():
			tm.Stop()
			return false, ctx.Err()
		case <-tm.C:
		}
	}
}

func outcomeOf(rec record) string {
	switch {
	case rec.Kind == Approve:
		return OutcomeApproved
	case rec.Kind == Cancel:
		return OutcomeCancelled
	case rec.Rejection > rec.Max:
		return OutcomeFailed
	}
	return OutcomeRejected
}

// rejections is how many rejections of stage's gate moved ref
// (keys.GateRejections, a hash of counts by gated stage).
func (g *Gate) rejections(ctx context.Context, ref platforms.Ref, stage string) (int, error) {
	n, err := g.rdb.HGet(ctx, keys.GateRejections(ref.Key()), stage).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("gate %s: read rejections of stage %s: %w: %w", ref, stage, claim.ErrRedisUnavailable, err)
	}
	return n, nil
}

// countRejection counts rec, a rejection whose move landed: its stage's
// count is set to rec.Rejection, read under the claim lock as the count
// before plus one, so counting it again (a repair after a crash) counts
// it once. A rejection whose label write failed was never counted.
func (g *Gate) countRejection(ctx context.Context, ref platforms.Ref, rec record) error {
	k := keys.GateRejections(ref.Key())
	_, err := g.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(ctx, k, rec.Stage, rec.Rejection)
		pipe.Expire(ctx, k, keys.GateTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("gate %s: count the rejection of stage %s: %w: %w", ref, rec.Stage, claim.ErrRedisUnavailable, err)
	}
	return nil
}

// put records rec before its label write.
func (g *Gate) put(ctx context.Context, ref platforms.Ref, rec record) error {
	b, _ := json.Marshal(rec) // strings and ints: cannot fail
	if err := g.rdb.Set(ctx, keys.GateDecision(ref.Key()), b, keys.GateTTL).Err(); err != nil {
		return fmt.Errorf("gate %s: record decision: %w: %w", ref, claim.ErrRedisUnavailable, err)
	}
	return nil
}

// pending is the decision recorded for ref and not yet carried out.
func (g *Gate) pending(ctx context.Context, ref platforms.Ref) (record, bool, error) {
	b, err := g.rdb.Get(ctx, keys.GateDecision(ref.Key())).Bytes()
	if errors.Is(err, redis.Nil) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("gate %s: read recorded decision: %w: %w", ref, claim.ErrRedisUnavailable, err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		g.log.Warn("recorded decision unreadable; dropped", zap.String("ticket", ref.String()), zap.Error(err))
		return record{}, false, g.rdb.Del(ctx, keys.GateDecision(ref.Key())).Err()
	}
	return rec, true, nil
}

// finish carries out a recorded decision from a fresh read: a ticket no
// longer AwaitingApproval had it carried out already (the record's drop
// was what failed), and one that awaits another stage than the record's
// was parked again since (the run drops the record when it parks; this
// holds when that drop failed): either drops the record, which no
// approver made for this park.
func (g *Gate) finish(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, rec record) error {
	t, err := p.Tracker.Get(ctx, ref)
	if err != nil {
		return fmt.Errorf("gate %s: read ticket: %w", ref, err)
	}
	labels := p.Labels(g.claims.Labels())
	if labels.StateOf(t.Labels) != lifecycle.AwaitingApproval || !p.SameStage(labels.StageOf(t.Labels), rec.Stage) {
		if landed(p, labels, t, rec) {
			// The move landed and the count did not (a crash between).
			if err := g.countRejection(ctx, ref, rec); err != nil {
				return err
			}
		}
		if err := g.rdb.Del(ctx, keys.GateDecision(ref.Key())).Err(); err != nil {
			return fmt.Errorf("gate %s: drop a recorded decision not for this park: %w: %w", ref, claim.ErrRedisUnavailable, err)
		}
		return nil
	}
	return g.finishRead(ctx, p, t, rec)
}

// landed reports whether t shows rec's rejection carried out: Enqueued
// at the stage rec sends the ticket back to.
func landed(p *lifecycle.Project, labels lifecycle.Labels, t *platforms.Ticket, rec record) bool {
	if outcomeOf(rec) != OutcomeRejected || labels.StateOf(t.Labels) != lifecycle.Enqueued {
		return false
	}
	return p.SameStage(labels.StageOf(t.Labels), rejectedTo(p, rec.Stage))
}

// rejectedTo is the stage a rejection of stage's gate sends the ticket
// back to: the stage before, or the first.
func rejectedTo(p *lifecycle.Project, stage string) string {
	if prev, ok := p.PreviousStage(stage); ok {
		return prev
	}
	return p.FirstStage()
}

// Repair finishes the decision recorded for ref, if one is, under its
// claim lock: what a crash between a decision's record and its label
// write left, or a decision recorded while a run parked the ticket (not
// while that run still holds it). It reports whether one was.
func (g *Gate) Repair(ctx context.Context, ref platforms.Ref) (bool, error) {
	p, ok := g.claims.Projects().Lookup(ref)
	if !ok {
		return false, fmt.Errorf("gate %s: unknown project %q", ref, ref.Project)
	}
	found := false
	_, err := g.claims.WithLock(ctx, ref, lifecycle.SourceGate, func(ctx context.Context) error {
		rec, ok, err := g.pending(ctx, ref)
		if err != nil || !ok {
			return err
		}
		found = true
		if holds, err := g.runHolds(ctx, ref, 0); err != nil || holds {
			return err // still parking: carried out once the run let go
		}
		return g.finish(ctx, p, ref, rec)
	})
	return found, err
}

// finishRead moves t, read under the claim lock, as rec decided: the
// comment (a failure's) first, then one label write, then the request;
// the record is dropped last. A crash anywhere is finished by the next
// decision or Repair (before the write), or by the EnqueuedReconciler
// (a ticket Enqueued without its request, re-pushed at the stage its
// label shows).
func (g *Gate) finishRead(ctx context.Context, p *lifecycle.Project, t *platforms.Ticket, rec record) error {
	ref, labels, who := t.Ref, p.Labels(g.claims.Labels()), claim.SafeName(rec.Actor)
	prefix := "**" + g.claims.Labels().Prefix + "**: "
	waited := g.waited(ctx, ref)
	to, stage, why := lifecycle.Enqueued, rec.Stage, "approved by "+who
	switch outcomeOf(rec) {
	case OutcomeRejected:
		prev := rejectedTo(p, rec.Stage)
		stage, why = prev, fmt.Sprintf("stage %s rejected by %s (rejection %d of %d); stage %s again", rec.Stage, who, rec.Rejection, rec.Max, prev)
		if err := g.rdb.Set(ctx, keys.Review(ref.Key()), boundReview(rec.Reason), keys.GateTTL).Err(); err != nil {
			return fmt.Errorf("gate %s: keep the review: %w: %w", ref, claim.ErrRedisUnavailable, err)
		}
	case OutcomeFailed:
		to, why = lifecycle.Failed, fmt.Sprintf("stage %s rejected by %s, rejection %d: more than max_rejections %d", rec.Stage, who, rec.Rejection, rec.Max)
	case OutcomeCancelled:
		to, why = lifecycle.Failed, cancelCause(rec)
	}
	if to == lifecycle.Failed {
		if err := p.Tracker.Comment(ctx, ref, lifecycle.SafeComment(p.Redact, prefix+"failed: "+why+".")); err != nil {
			return fmt.Errorf("gate %s: comment: %w", ref, err)
		}
		// The ticket is read again after the comment: on Azure DevOps a
		// comment is a revision of the work item, and the label write
		// tests the revision it was read at (VS403351 otherwise).
		fresh, err := p.Tracker.Get(ctx, ref)
		if err != nil {
			return fmt.Errorf("gate %s: read after the comment: %w", ref, err)
		}
		if s := labels.StateOf(fresh.Labels); s != lifecycle.AwaitingApproval {
			return fmt.Errorf("gate %s: state is %s after the comment, not %s", ref, s, lifecycle.AwaitingApproval)
		}
		t = fresh
	}
	if _, err := lifecycle.Relabel(ctx, p.Tracker, labels, t, lifecycle.Move{From: lifecycle.AwaitingApproval, To: to, Stage: stage}, lifecycle.OwnerApprovalGate); err != nil {
		return fmt.Errorf("gate %s: move to %s: %w", ref, to, err)
	}
	counted := true
	if outcomeOf(rec) == OutcomeRejected {
		// Counted once the move landed; on an error the record is kept,
		// and the next decision or repair counts it (finish).
		if err := g.countRejection(ctx, ref, rec); err != nil {
			g.log.Warn("count the rejection (the next decision or repair counts it)", zap.String("ticket", ref.String()), zap.Error(err))
			counted = false
		}
	}
	g.claims.Emit(lifecycle.Event{Kind: lifecycle.EventTransition, At: g.cfg.Clock().UTC(), Ref: ref, From: lifecycle.AwaitingApproval, To: to,
		Outcome: outcomeOf(rec), Owner: lifecycle.OwnerApprovalGate, Instance: g.cfg.Instance, Source: lifecycle.SourceGate, Reason: why,
		Stage: rec.Stage, Actor: rec.Actor, ApprovalWait: waited})
	g.emit(lifecycle.Event{Ref: ref, To: to, Outcome: outcomeOf(rec), Reason: why, Stage: rec.Stage, Actor: rec.Actor, ApprovalWait: waited})
	if to == lifecycle.Enqueued {
		if err := runstate.StartOver(ctx, g.rdb, ref); err != nil {
			g.log.Warn("start the attempt count over for the stage", zap.String("ticket", ref.String()), zap.Error(err))
		}
		req := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: ref, Source: lifecycle.SourceGate, Attempt: 1,
			EnqueuedAt: g.cfg.Clock().UTC(), Priority: p.Priority.Of(t.Labels), Stage: stage, Pool: p.PoolFor(stage)}
		if err := g.queue.Push(ctx, req.Encode()); err != nil {
			g.log.Error("push the stage's request (EnqueuedReconciler will re-push)", zap.String("ticket", ref.String()), zap.Error(err))
		}
		// The next parking records its own time; a stale one would time it out early.
		if err := lifecycle.Unpark(ctx, g.rdb, ref); err != nil {
			g.log.Warn("drop when the ticket was parked", zap.String("ticket", ref.String()), zap.Error(err))
		}
		if rec.Kind == Approve {
			// The review was for the stage before; the gated stage runs without.
			if err := g.rdb.Del(ctx, keys.Review(ref.Key())).Err(); err != nil {
				g.log.Warn("drop the review", zap.String("ticket", ref.String()), zap.Error(err))
			}
		}
	} else {
		g.forget(ctx, ref)
	}
	if counted { // else kept for finish to count
		if err := g.rdb.Del(ctx, keys.GateDecision(ref.Key())).Err(); err != nil {
			g.log.Warn("drop the carried-out decision", zap.String("ticket", ref.String()), zap.Error(err))
		}
	}
	if to == lifecycle.Enqueued {
		g.claims.Reply(ctx, p, ref, why+": stage "+stage+" queued.")
	}
	return nil
}

// forget drops a failed ticket's gate records: a retry starts over.
func (g *Gate) forget(ctx context.Context, ref platforms.Ref) {
	k := ref.Key()
	_, err := g.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Del(ctx, keys.GateRejections(k), keys.Review(k), keys.GateEscalated(k))
		lifecycle.UnparkOn(ctx, pipe, ref)
		return nil
	})
	if err != nil {
		g.log.Warn("forget the gate's records", zap.String("ticket", ref.String()), zap.Error(err))
	}
}

// emit reports ev, a decision (its Ref, To, Outcome, Reason, Stage, Actor
// and ApprovalWait set), as the ApprovalGate's EventDecision.
func (g *Gate) emit(ev lifecycle.Event) {
	ev.Kind, ev.At, ev.From = lifecycle.EventDecision, g.cfg.Clock().UTC(), lifecycle.AwaitingApproval
	ev.Owner, ev.Instance, ev.Source = lifecycle.OwnerApprovalGate, g.cfg.Instance, lifecycle.SourceGate
	g.claims.Emit(ev)
}

// waited is how long ref has awaited approval by now, from its
// keys.GateParked; 0 when that is not known.
func (g *Gate) waited(ctx context.Context, ref platforms.Ref) time.Duration {
	v, err := g.rdb.Get(ctx, keys.GateParked(ref.Key())).Result()
	if err != nil {
		return 0
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0
	}
	return max(g.cfg.Clock().Sub(at), 0)
}

// boundReview is the reviewer's text as the stage gets it: control
// characters stripped, at most MaxReview bytes on a rune boundary.
func boundReview(s string) string {
	s = strings.ToValidUTF8(lifecycle.StripControl(s), "")
	if len(s) <= MaxReview {
		return s
	}
	cut := MaxReview
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
