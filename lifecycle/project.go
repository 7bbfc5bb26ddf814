package lifecycle

import (
	"cmp"
	"slices"
	"syscall"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/gitws"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Project is one configured project as the lifecycle sees it: a tracker and
// the pipeline to run for its tickets.
type Project struct {
	Name         string
	Platform     string
	Tracker      platforms.Tracker
	TriggerLabel string
	// TriggerAllow says who may start runs (trigger.allow).
	TriggerAllow TriggerAllow
	Pipeline     Pipeline
	// React puts platforms.ReactionEyes on every ticket claimed, when the
	// tracker is a platforms.Reactor (projects[].reactions).
	React    bool
	Priority PriorityPolicy
	// Pool is where the project's requests wait ("": DefaultPool).
	Pool   string
	Limits Limits
	// RequireNoOpenBlockers makes a claim read the ticket's blockers (one
	// more tracker call per claim) and refuse it while any is open.
	RequireNoOpenBlockers bool
	// Commands are the comment commands (`/agent-smith retry`) of the
	// project's tickets; the zero value turns them off.
	Commands Commands
	// PollInterval is how often the Poller lists the project's triggered
	// tickets (polling.enabled); 0 means webhooks alone bring them in and
	// the TriggerSweeper lists the project each slow cycle instead.
	PollInterval time.Duration
	// Stuck says when a ticket has been Enqueued or InProgress too long.
	Stuck StuckThresholds
	// Workspace, when set, keeps each ticket's work on a git branch
	// (projects[].workspace.git): prepared before every attempt, committed
	// and pushed after it, whatever its outcome.
	Workspace *gitws.Repo
	// ProgressComment keeps one comment per run, edited in place from the
	// pipeline's $AGENTSMITH_PROGRESS_FILE (progress.go), where the tracker
	// is a platforms.CommentEditor.
	ProgressComment bool
	// Redact holds the project's secrets (config.Project.SecretValues):
	// they and their encodings are replaced in the attempt log, the
	// daemon's log of pipeline lines and every comment the run posts
	// (redact.go). nil redacts nothing.
	Redact *redact.Redactor
	// Stages, when set, are the ordered stages a ticket runs through
	// (pipeline.stages, stage.go); empty, the ticket runs Pipeline once
	// and never carries a stage label.
	Stages []Stage
}

// Default time-in-state limits past which a ticket is flagged as stuck (a
// run of two hours is slow for most pipelines; a request waiting longer
// than 30 minutes is blocked).
const (
	DefaultStuckEnqueued   = 30 * time.Minute
	DefaultStuckInProgress = 2 * time.Hour
)

// StuckThresholds are one project's limits on time in state.
type StuckThresholds struct {
	EnqueuedAfter   time.Duration // default DefaultStuckEnqueued
	InProgressAfter time.Duration // default DefaultStuckInProgress
	// Comment posts one comment per stuck state on the ticket.
	Comment bool
}

// Limit is the time in state past which a ticket in s is stuck, the
// default where the threshold is unset.
func (t StuckThresholds) Limit(s State) time.Duration {
	if s == InProgress {
		return cmp.Or(t.InProgressAfter, DefaultStuckInProgress)
	}
	return cmp.Or(t.EnqueuedAfter, DefaultStuckEnqueued)
}

// Pipeline is the command run for every claimed ticket of a project.
type Pipeline struct {
	Command []string
	Env     map[string]string
	// Secrets are added to the pipeline's environment like Env; kept apart
	// so nothing that prints Env (logs, status) ever shows them.
	Secrets     map[string]string
	Timeout     time.Duration
	MaxAttempts int
	Retry       RetryPolicy
	Escalate    EscalatePolicy
	// PersistCommand runs in the work dir after a failed attempt, before
	// the retry or the Failed label; bounded by PersistTimeout.
	PersistCommand []string
	PersistTimeout time.Duration
	// StartHint says where Command was looked for; the failure comment
	// adds it when the command cannot start, so the operator sees where to
	// put the script.
	StartHint string
	// RunAs, when set, runs the pipeline and the persist command as that
	// user and group instead of the daemon's (pipeline.run_as): the daemon's
	// token files, config and /proc entries are then out of the pipeline's
	// reach. The ticket's work dir is handed to that user.
	RunAs *syscall.Credential
	// Sandbox is what the project's runs may use in their sandbox; the
	// executor applies it when runs are sandboxed.
	Sandbox SandboxPolicy
}

// StageLimits are the sandbox limits of a run of stage ("" or an unknown
// one: the project's): the stage's over the project's.
func (p *Project) StageLimits(stage string) RunLimits {
	names := p.StageNames()
	if i := slices.Index(names, stage); i >= 0 && i < len(p.Stages) {
		return p.Stages[i].Limits.Over(p.Pipeline.Sandbox.Limits)
	}
	return p.Pipeline.Sandbox.Limits
}

// Projects indexes projects by name.
type Projects map[string]*Project

// Names are the project names in order, so every loop over projects runs
// them in the same order on every replica and every cycle.
func (p Projects) Names() []string {
	names := make([]string, 0, len(p))
	for name := range p {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the project a ref belongs to.
func (p Projects) Lookup(ref platforms.Ref) (*Project, bool) {
	pr, ok := p[ref.Project]
	return pr, ok
}
