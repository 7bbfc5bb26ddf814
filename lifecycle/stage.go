package lifecycle

import (
	"slices"
	"syscall"
	"time"
)

// Stage is one stage of a staged project (pipeline.stages): what runs for
// a ticket in that stage. The project's Pipeline holds everything else
// (env, secrets, escalation, persistence), shared by every stage.
type Stage struct {
	Name        string
	Command     []string
	Timeout     time.Duration
	MaxAttempts int
	Retry       RetryPolicy
	RunAs       *syscall.Credential
	// Pool is where the stage's requests wait ("": the project's Pool);
	// PoolFor applies it.
	Pool string
	// StartHint is Pipeline.StartHint for the stage's command.
	StartHint string
	// OnFailure is where a run of the stage that failed for good sends
	// the ticket; zero: nowhere, it fails.
	OnFailure SendBack
}

// SendBack is a stage's on_failure: back to the earlier stage BackTo, at
// most Max times per trigger (runstate.CountSendBack).
type SendBack struct {
	BackTo string
	Max    int
}

// OnFailureOf is the on_failure of p's stage name; zero when it has none.
func (p *Project) OnFailureOf(name string) SendBack {
	names := p.StageNames()
	if i := slices.Index(names, name); i >= 0 {
		return p.Stages[i].OnFailure
	}
	return SendBack{}
}

// StageNames are the project's stages in order; nil for a project without
// stages.
func (p *Project) StageNames() []string {
	if len(p.Stages) == 0 {
		return nil
	}
	names := make([]string, len(p.Stages))
	for i, s := range p.Stages {
		names[i] = s.Name
	}
	return names
}

// Labels is l for the project: with its stages, so stage labels are
// lifecycle labels exactly where the project has stages.
func (p *Project) Labels(l Labels) Labels { return l.WithStages(p.StageNames()) }

// FirstStage is the stage a ticket without a stage label starts in; ""
// for a project without stages.
func (p *Project) FirstStage() string {
	if len(p.Stages) == 0 {
		return ""
	}
	return p.Stages[0].Name
}

// ForStage is the project as a run of stage sees it: a copy whose Pipeline
// has the stage's command, timeout, attempts, retry rules and run_as. A
// project without stages, or a stage it does not have, is p itself.
func (p *Project) ForStage(name string) *Project {
	names := p.StageNames()
	if i := slices.Index(names, name); i >= 0 {
		s := p.Stages[i]
		sp := *p
		sp.Pipeline.Command, sp.Pipeline.Timeout, sp.Pipeline.MaxAttempts = s.Command, s.Timeout, s.MaxAttempts
		sp.Pipeline.Retry, sp.Pipeline.RunAs, sp.Pipeline.StartHint = s.Retry, s.RunAs, s.StartHint
		return &sp
	}
	return p
}

// StageShown is the stage a ticket with labels ticketLabels is in for
// project p: the one its stage label shows, else first when first is true
// (a claim starts a ticket without one at the first stage), else "".
// Always "" for a project without stages.
func (p *Project) StageShown(l Labels, ticketLabels []string, first bool) string {
	if s := p.Labels(l).StageOf(ticketLabels); s != "" || !first {
		return s
	}
	return p.FirstStage()
}
