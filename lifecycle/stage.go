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
	// Gate, when set, holds a ticket before the stage starts; never on the
	// first stage (config validation).
	Gate *Gate
	// Limits are the stage's own sandbox limits; unset fields take the
	// project's.
	Limits RunLimits
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

// Gate is what a stage waits for before it starts: a person's approval
// or a timer, one of them (config validation).
type Gate struct {
	// Approval parks the ticket in AwaitingApproval until an approver
	// approves the stage (lifecycle/gate).
	Approval *Approval
	// After is a timer gate: the stage's request waits this long in the
	// delayed set, the ticket Enqueued with the stage's label, holding no
	// consumer slot.
	After time.Duration
}

// Approval is an approval gate's rules.
type Approval struct {
	// Approvers may approve or reject: the project's TriggerAllow unless
	// the stage names its own (config gate.approval.approvers).
	Approvers TriggerAllow
	// DistinctFromTrigger refuses the person who triggered the run.
	DistinctFromTrigger bool
	// MaxRejections is how many rejections send the ticket back to the
	// previous stage; the next one fails it.
	MaxRejections int
	// Timeout is the gate's deadline from the ticket's parking; 0, none.
	// Past it the ticket gets OnTimeout.
	Timeout   time.Duration
	OnTimeout string
	// EscalateLabel and Mention are a timed-out escalation's label and
	// handles (the gate's, else pipeline.escalate's).
	EscalateLabel string
	Mention       []string
}

// Values of Approval.OnTimeout: an escalation adds EscalateLabel and posts
// one comment mentioning Mention, the ticket staying parked; a failure
// moves it AwaitingApproval → Failed.
const (
	OnTimeoutEscalate = "escalate"
	OnTimeoutFail     = "fail"
)

// DefaultMaxRejections is Approval.MaxRejections unless configured.
const DefaultMaxRejections = 2

// ApprovalFor is the approval gate of stage name in p, or nil when it has
// none (no such stage, or a project without stages).
func (p *Project) ApprovalFor(name string) *Approval {
	names := p.StageNames()
	if i := slices.Index(names, name); i >= 0 && p.Stages[i].Gate != nil {
		return p.Stages[i].Gate.Approval
	}
	return nil
}

// TimerFor is the timer gate (after) of stage name in p; 0 when it has
// none.
func (p *Project) TimerFor(name string) time.Duration {
	names := p.StageNames()
	if i := slices.Index(names, name); i >= 0 && p.Stages[i].Gate != nil {
		return p.Stages[i].Gate.After
	}
	return 0
}

// SameStage reports whether a and b name the same one of p's stages.
// Stage names are config words compared exactly, by their place in p's
// order; a name p does not have is no stage of it.
func (p *Project) SameStage(a, b string) bool {
	names := p.StageNames()
	i := slices.Index(names, a)
	return i >= 0 && i == slices.Index(names, b)
}

// PreviousStage is the stage before name in p's order, and whether there
// is one.
func (p *Project) PreviousStage(name string) (string, bool) {
	names := p.StageNames()
	if i := slices.Index(names, name); i > 0 {
		return names[i-1], true
	}
	return "", false
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
