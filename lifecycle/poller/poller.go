// Package poller is the poller role (config.RolePoller): on the replica
// holding the poller lease it lists the triggered tickets of the projects
// that opted in to polling and hands each to the claim service, the claim
// the webhook receiver makes too.
package poller

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// DefaultPollInterval is how often a project that opted in to polling is
// listed when its config names no interval.
const DefaultPollInterval = 60 * time.Second

// Poller claims triggered tickets of the projects that opted in to polling
// (Project.PollInterval > 0). It runs on one replica at a time, under
// agentsmith:leader:poller.
type Poller struct {
	claims *claim.Service
	log    *zap.Logger
	// decider, when set, gets the tickets of a staged project listed with
	// a decision label (SetDecider).
	decider Decider
}

// Decider decides the tickets a poll lists with a decision label
// (<prefix>:approved, <prefix>:rejected): the ApprovalGate's Listed.
type Decider interface {
	Listed(ctx context.Context, p *lifecycle.Project, tickets []*platforms.Ticket) error
}

// SetDecider hands the tickets a poll lists with a decision label to d,
// so projects that only poll can approve by label.
func (p *Poller) SetDecider(d Decider) { p.decider = d }

// NewPoller polls the claim service's projects, each at its own interval.
func NewPoller(claims *claim.Service, log *zap.Logger) *Poller {
	if log == nil {
		log = zap.NewNop()
	}
	return &Poller{claims: claims, log: log.Named("poller")}
}

// Polls reports whether any project polls: a replica whose projects are
// all webhook-driven does not contend for the poller's lease.
func (p *Poller) Polls() bool {
	for _, pr := range p.claims.Projects() {
		if pr.PollInterval > 0 {
			return true
		}
	}
	return false
}

// Run polls until ctx is done. One loop serves every project: each is
// polled when its interval has passed since its last poll began. The
// projects due together (a discovered organisation's repositories share
// their interval) are listed with one search per scope and trigger label
// where the tracker has one (ListOpen), so polling 1,000 repositories
// costs a few searches, not 1,000 list calls; a slow tracker delays the
// others' polls instead of piling up concurrent ones.
func (p *Poller) Run(ctx context.Context) error {
	next := map[string]time.Time{}
	for {
		now := time.Now()
		wake := now.Add(DefaultPollInterval)
		projects := p.claims.Projects()
		var due []*lifecycle.Project
		for _, name := range projects.Names() {
			every := projects[name].PollInterval
			if every <= 0 {
				continue
			}
			if at, ok := next[name]; !ok || !now.Before(at) {
				next[name] = now.Add(every)
				due = append(due, projects[name])
			}
			if next[name].Before(wake) {
				wake = next[name]
			}
		}
		for name := range next {
			if _, ok := projects[name]; !ok {
				delete(next, name) // retired by discovery
			}
		}
		p.poll(ctx, due)
		t := time.NewTimer(time.Until(wake))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// poll lists the triggered tickets of the due projects and claims each
// that looks Pending; every claim reads its ticket afresh under its claim
// lock, so a search hit that lags never decides a write (ClaimListed).
func (p *Poller) poll(ctx context.Context, due []*lifecycle.Project) {
	byLabel := map[string][]*lifecycle.Project{}
	var labels []string
	for _, pr := range due {
		if _, ok := byLabel[pr.TriggerLabel]; !ok {
			labels = append(labels, pr.TriggerLabel)
		}
		byLabel[pr.TriggerLabel] = append(byLabel[pr.TriggerLabel], pr)
	}
	for _, label := range labels {
		listed, err := lifecycle.ListOpen(ctx, byLabel[label], label)
		if err != nil && ctx.Err() == nil {
			p.log.Warn("poll failed", zap.String("label", label), zap.Error(err))
		}
		for _, pr := range byLabel[label] {
			tickets, ok := listed[pr.Name]
			if !ok {
				continue
			}
			if _, err := p.claims.ClaimListed(ctx, pr, tickets, lifecycle.SourcePoll, nil); err != nil && ctx.Err() == nil {
				p.log.Warn("poll failed", zap.String("project", pr.Name), zap.Error(err))
			}
		}
	}
	p.pollDecisions(ctx, due)
}

// pollDecisions lists the due staged projects' tickets carrying a
// decision label and hands them to the decider: one list call per project
// with stages and decision label, none without a decider.
func (p *Poller) pollDecisions(ctx context.Context, due []*lifecycle.Project) {
	if p.decider == nil {
		return
	}
	labels := p.claims.Labels()
	for _, pr := range due {
		if len(pr.Stages) == 0 {
			continue
		}
		for _, label := range []string{labels.Approved(), labels.Rejected()} {
			listed, err := lifecycle.ListOpen(ctx, []*lifecycle.Project{pr}, label)
			if err != nil && ctx.Err() == nil {
				p.log.Warn("poll decisions failed", zap.String("project", pr.Name), zap.Error(err))
			}
			if err := p.decider.Listed(ctx, pr, listed[pr.Name]); err != nil && ctx.Err() == nil {
				p.log.Warn("decision failed", zap.String("project", pr.Name), zap.Error(err))
			}
		}
	}
}

// PollOnce claims the project's triggered tickets that look Pending
// (ClaimTriggered, one list call) and returns how many it claimed; the
// claims that failed are returned joined, after the others were made.
func (p *Poller) PollOnce(ctx context.Context, project string) (claimed int, err error) {
	res, err := p.claims.ClaimTriggered(ctx, project, lifecycle.SourcePoll, nil)
	return len(res), err
}
