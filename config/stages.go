package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Stage is one step of a staged pipeline (pipeline.stages): a ticket runs
// the stages in order, each after the one before succeeded, with that
// stage's result ($AGENTSMITH_PREVIOUS_RESULT) and the same work dir and
// work branch; the tracker shows the stage as a label
// (<label_prefix>:stage/<name>). Unset fields take the pipeline's.
type Stage struct {
	// Name is the stage's name in its label and in logs:
	// [a-z][a-z0-9-]{0,31}, unique in the project.
	Name        string        `yaml:"name"`
	Command     []string      `yaml:"command"`
	Timeout     time.Duration `yaml:"timeout"`
	MaxAttempts int           `yaml:"max_attempts"`
	// Retry, when set, replaces the pipeline's retry rules for the stage
	// as a whole (exit codes, on_timeout and backoff).
	Retry *Retry `yaml:"retry"`
	RunAs string `yaml:"run_as"`
	// OnFailure, when set, sends a ticket whose run of this stage failed
	// for good back to an earlier stage (onfailure.go).
	OnFailure *OnFailure `yaml:"on_failure"`
	// Pool is where the stage's requests wait, as projects[].pool is for
	// the project's (unset: the project's pool).
	Pool string `yaml:"pool"`
	// Gate, when set, holds a ticket before this stage starts (never on
	// the first stage): `gate: approval`, the long form
	// `gate: {approval: {approvers: …, distinct_from_trigger: …,
	// max_rejections: …}}`, or a timer `gate: {after: 1h}`.
	Gate *Gate `yaml:"gate"`
	// Sandbox is the stage's limits (sandbox.go); unset ones take the
	// project's.
	Sandbox PipelineSandbox `yaml:"sandbox"`
}

// GateApproval is the short form of an approval gate: `gate: approval`.
const GateApproval = "approval"

// Gate is what a stage waits for before it starts. Its fields are kinds
// of gate; exactly one is set: a person's approval, or a timer.
type Gate struct {
	Approval *Approval `yaml:"approval"`
	// After is a timer gate: once the stage before succeeded, the ticket
	// waits this long, Enqueued with the gated stage's label and its
	// request in the delayed set (no consumer slot), before the stage
	// starts. It cannot be combined with approval.
	After time.Duration `yaml:"after"`
}

// fromScalar reads the short form: the name of a kind of gate with its
// defaults. It returns the complaint, or "".
func (g *Gate) fromScalar(s string) string {
	if s != GateApproval {
		return fmt.Sprintf("%q: want %q or a mapping such as {approval: {max_rejections: 2}} or {after: 1h}", lifecycle.TruncateRunes(s, 40), GateApproval)
	}
	g.Approval = &Approval{}
	return ""
}

// DefaultMaxRejections is gate.approval.max_rejections unless set.
const DefaultMaxRejections = lifecycle.DefaultMaxRejections

// Approval parks a ticket, after the stage before succeeded, until a
// person approves the stage (`/agent-smith approve`, or the label
// <label_prefix>:approved) or rejects it, sending the ticket back to the
// stage before with the reviewer's text ($AGENTSMITH_REVIEW).
type Approval struct {
	// Approvers may approve or reject; unset, those of the project's
	// trigger.allow. Same shape, access defaulting to "write".
	Approvers *TriggerAllow `yaml:"approvers"`
	// DistinctFromTrigger refuses the approval of the person who
	// triggered the run (four eyes).
	DistinctFromTrigger bool `yaml:"distinct_from_trigger"`
	// MaxRejections is how many rejections send the ticket back; the next
	// fails it. Default DefaultMaxRejections.
	MaxRejections int `yaml:"max_rejections"`
	// Timeout is the gate's deadline, counted from when the ticket was
	// parked; unset (0), none.
	Timeout time.Duration `yaml:"timeout"`
	// OnTimeout is what a ticket past Timeout gets: OnTimeoutEscalate
	// (the default: a label and one comment mentioning Mention, the ticket
	// stays parked) or OnTimeoutFail (the ticket fails).
	OnTimeout string `yaml:"on_timeout"`
	// Label and Mention are an escalation's label and handles; unset,
	// pipeline.escalate's.
	Label   string   `yaml:"label"`
	Mention []string `yaml:"mention"`
}

// Values of Approval.OnTimeout.
const (
	OnTimeoutEscalate = lifecycle.OnTimeoutEscalate
	OnTimeoutFail     = lifecycle.OnTimeoutFail
)

// StageNames are the stages' names in order; nil without stages.
func (pl *Pipeline) StageNames() []string {
	if len(pl.Stages) == 0 {
		return nil
	}
	names := make([]string, len(pl.Stages))
	for i, s := range pl.Stages {
		names[i] = s.Name
	}
	return names
}

// applyStageDefaults gives each stage the pipeline's value for what it
// leaves unset. It runs after the pipeline's own defaults.
func (pl *Pipeline) applyStageDefaults() {
	for i := range pl.Stages {
		s := &pl.Stages[i]
		if len(s.Command) == 0 {
			s.Command = slices.Clone(pl.Command)
		}
		setDefault(&s.Timeout, pl.Timeout)
		setDefault(&s.MaxAttempts, pl.MaxAttempts)
		if s.Retry == nil {
			r := pl.Retry
			r.ExitCodes = slices.Clone(pl.Retry.ExitCodes)
			s.Retry = &r
		} else {
			s.Retry.Backoff.applyDefaults()
		}
		setDefault(&s.RunAs, pl.RunAs)
		s.OnFailure.applyDefaults()
		if s.Gate != nil && s.Gate.Approval != nil {
			a := s.Gate.Approval
			setDefault(&a.MaxRejections, DefaultMaxRejections)
			setDefault(&a.OnTimeout, OnTimeoutEscalate)
			if a.Approvers != nil {
				setDefault(&a.Approvers.Access, TriggerAccessWrite)
			}
		}
	}
}

// validateGates checks the stages' gates: none on the first stage (a
// ticket is claimed into it), one kind each (an approval and a timer on
// one stage are refused: which waits first would be a guess), a timer's
// after positive, the approvers as trigger.allow is checked for platform.
func (pl *Pipeline) validateGates(errs *Errors, path, platform, trigger, labelPrefix string, spaceless bool, allow TriggerAllow, allowPath string) {
	allowChecked := false
	for i, s := range pl.Stages {
		if s.Gate == nil {
			continue
		}
		gp := fmt.Sprintf("%s.stages[%d].gate", path, i)
		switch a := s.Gate.Approval; {
		case i == 0:
			errs.add(gp, "the first stage cannot have a gate: the trigger label starts it")
		case a != nil && s.Gate.After != 0:
			errs.add(gp, "one kind of gate: approval or after, not both")
		case s.Gate.After < 0:
			errs.add(gp+".after", "must be positive (a duration such as 1h)")
		case s.Gate.After > 0:
		case a == nil:
			errs.add(gp, "want a kind of gate: approval or after")
		default:
			atLeast(errs, gp+".approval.max_rejections", a.MaxRejections, 1)
			a.validateTimeout(errs, gp+".approval", trigger, labelPrefix, spaceless)
			if a.Approvers != nil {
				a.Approvers.validate(errs, gp+".approval.approvers", platform, "approve")
				noMachineApprovers(errs, gp+".approval.approvers", platform, s.Name, a.Approvers.Users)
			} else if !allowChecked {
				// The gate's approvers are trigger.allow's.
				allowChecked = true
				noMachineApprovers(errs, allowPath, platform, s.Name, allow.Users)
			}
		}
	}
}

// noMachineApprovers refuses approvers (at path, of stage's gate) that
// name an account only a token acts as, never a person: a GitHub App's
// <slug>[bot], a GitLab access token's bot user. Such an account is what
// the daemon, or a pipeline given a token, writes with; listed, a
// pipeline holding its token could approve its own work. The daemon
// refuses its own account's decisions whatever the list says (the
// ApprovalGate); this names the mistake before it runs.
func noMachineApprovers(errs *Errors, path, platform, stage string, users []string) {
	d, ok := platforms.Lookup(platform)
	if !ok || d.MachineAccount == nil {
		return
	}
	for i, u := range users {
		what := d.MachineAccount(u)
		if what == "" {
			continue
		}
		errs.add(fmt.Sprintf("%s.users[%d]", path, i), fmt.Sprintf("%q is %s, which may not approve stage %s: "+
			"it is what a token writes with, and a pipeline holding that token (the daemon's own, if it is this app or token) could approve its own work; list people", u, what, stage))
	}
}

// validateStages checks pipeline.stages: names, their uniqueness, and each
// stage's command, timeout, attempts, retry rules and run_as as the
// pipeline's are checked.
func (pl *Pipeline) validateStages(errs *Errors, path string) {
	seen := map[string]int{}
	for i := range pl.Stages {
		s := &pl.Stages[i]
		sp := fmt.Sprintf("%s.stages[%d]", path, i)
		switch j, dup := seen[s.Name]; {
		case s.Name == "":
			errs.add(sp+".name", "required (a stage's name, such as plan)")
		case !lifecycle.ValidStageName(s.Name):
			errs.add(sp+".name", fmt.Sprintf("%q: must be a lower-case letter, then up to 31 lower-case letters, digits or '-' (it is part of the stage's label)", s.Name))
		case dup:
			errs.add(sp+".name", fmt.Sprintf("%q is also the name of stages[%d]: stage names are unique", s.Name, j))
		default:
			seen[s.Name] = i
		}
		if len(s.Command) > 0 && s.Command[0] == "" {
			errs.add(sp+".command[0]", "must not be empty")
		}
		positive(errs, sp+".timeout", s.Timeout)
		atLeast(errs, sp+".max_attempts", s.MaxAttempts, 1)
		if s.Retry != nil {
			s.Retry.validate(errs, sp+".retry")
		}
		validateRunAs(errs, sp, Pipeline{RunAs: s.RunAs})
		s.OnFailure.validate(errs, sp+".on_failure", pl.StageNames()[:i])
		validatePoolName(errs, sp+".pool", s.Pool)
	}
}

// validateTimeout checks a gate's deadline and its escalation as
// pipeline.escalate's label and mention are checked.
func (a *Approval) validateTimeout(errs *Errors, path, trigger, labelPrefix string, spaceless bool) {
	if a.Timeout < 0 {
		errs.add(path+".timeout", "must not be negative (unset: no deadline)")
	}
	if a.OnTimeout != OnTimeoutEscalate && a.OnTimeout != OnTimeoutFail {
		errs.add(path+".on_timeout", fmt.Sprintf("%q: want %q or %q", lifecycle.TruncateRunes(a.OnTimeout, 40), OnTimeoutEscalate, OnTimeoutFail))
	}
	validateEscalation(errs, path, a.Label, a.Mention, trigger, labelPrefix, spaceless)
}
