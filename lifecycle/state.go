// Package lifecycle owns the ticket lifecycle: the states and their labels,
// the transition table with the owner of each transition, the label writes
// that ask it, attempts, refusals, and the project and request types. The
// roles that drive a run are packages of their own that import this one,
// never the reverse (lifecycle/claim, lifecycle/consumer, lifecycle/poller).
// It depends on the platforms.Tracker interface and on Redis primitives from
// pkg, never on a tracker SDK.
package lifecycle

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// State is a ticket's lifecycle state as shown by its labels.
type State int

const (
	Pending State = iota
	Enqueued
	InProgress
	Done
	Failed
	// AwaitingApproval parks a ticket between two stages until a person
	// approves or rejects the next one (a stage's gate: approval). It
	// comes after Failed in number only, so the numbers stored before it
	// keep their meaning; StateOf ranks it between InProgress and Done.
	AwaitingApproval
)

var stateNames = [...]string{"pending", "enqueued", "in-progress", "done", "failed", "awaiting-approval"}

// AllStates lists the states in lifecycle order.
var AllStates = []State{Pending, Enqueued, InProgress, AwaitingApproval, Done, Failed}

// rank is s's place in lifecycle order, the order StateOf reads several
// lifecycle labels by: an interrupted GitHub write that leaves InProgress
// and AwaitingApproval reads AwaitingApproval.
func (s State) rank() int {
	switch s {
	case AwaitingApproval:
		return int(InProgress) + 1
	case Done, Failed:
		return int(s) + 1
	}
	return int(s)
}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("State(%d)", int(s))
	}
	return stateNames[s]
}

// ParseState is String's inverse.
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("lifecycle: unknown state %q", name)
}

// MarshalText writes the state's name, so JSON (audit stream, CLI output)
// says "in-progress" rather than 2.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Terminal reports whether no further transition happens without a new
// trigger.
func (s State) Terminal() bool { return s == Done || s == Failed }

// DefaultLabelPrefix is the specification's prefix for lifecycle labels
// (platforms.DefaultLabelPrefix, which the platform packages also read).
const DefaultLabelPrefix = platforms.DefaultLabelPrefix

// Labels maps states to labels under one prefix ("agent-smith:enqueued"),
// and, for a project with stages, stages to stage labels
// ("agent-smith:stage/plan"). Only labels with the prefix are lifecycle
// labels; nothing else is ever removed or reordered.
type Labels struct {
	Prefix string
	// Stages are the project's stage names in order (pipeline.stages).
	// Empty for a project without stages: then no stage label is a
	// lifecycle label, so the daemon neither reads nor writes one and its
	// label writes are those of a single pipeline.
	Stages []string
}

// stageInfix separates the prefix from a stage's name in its label.
const stageInfix = ":stage/"

// The decision labels: a person adds one to a ticket in AwaitingApproval
// to approve or reject the stage it waits for (projects that only poll
// have no comment commands). They are lifecycle labels, so the write that
// moves the ticket on removes them, but no state.
const (
	approvedSuffix = ":approved"
	rejectedSuffix = ":rejected"
)

// Approved is the label a person adds to approve the stage a ticket awaits
// ("agent-smith:approved").
func (l Labels) Approved() string { return l.Prefix + approvedSuffix }

// Rejected is the label a person adds to reject it ("agent-smith:rejected").
func (l Labels) Rejected() string { return l.Prefix + rejectedSuffix }

// Label is the label that shows s.
func (l Labels) Label(s State) string { return l.Prefix + ":" + s.String() }

// Stage is the label that shows the stage name ("agent-smith:stage/plan").
func (l Labels) Stage(name string) string { return l.Prefix + stageInfix + name }

// WithStages is l for a project with the stages names, in order.
func (l Labels) WithStages(names []string) Labels {
	l.Stages = names
	return l
}

// Decision reads a decision label: approve is true for Approved, false for
// Rejected; ok is false for any other label. Spelled as the daemon spells
// it, as IsLifecycle.
func (l Labels) Decision(label string) (approve, ok bool) {
	rest, found := strings.CutPrefix(label, l.Prefix)
	switch {
	case !found:
		return false, false
	case rest == approvedSuffix:
		return true, true
	case rest == rejectedSuffix:
		return false, true
	}
	return false, false
}

// IsLifecycle reports whether label is one of the prefix's state labels,
// a decision label (Approved, Rejected),
// or, for a project with stages, a stage label (any valid stage name, so
// the label of a stage taken out of the config is still cleaned up),
// spelled as the daemon spells them. Where the platform ignores case
// (platforms.SameLabel: GitHub, Azure DevOps) the tracker reads
// "Agent-Smith:done" as "agent-smith:done" (platforms.Respell); where it
// does not (GitLab, Jira) "Agent-Smith:done" is a user's label, not ours.
func (l Labels) IsLifecycle(label string) bool {
	if _, ok := l.parse(label); ok {
		return true
	}
	if _, ok := l.Decision(label); ok {
		return true
	}
	_, ok := l.parseStage(label)
	return ok
}

func (l Labels) parse(label string) (State, bool) {
	rest, ok := strings.CutPrefix(label, l.Prefix+":")
	if !ok {
		return 0, false
	}
	for i, n := range stateNames {
		if rest == n {
			return State(i), true
		}
	}
	return 0, false
}

// parseStage returns the stage name of a stage label, when l has stages.
func (l Labels) parseStage(label string) (string, bool) {
	if len(l.Stages) == 0 {
		return "", false
	}
	name, ok := strings.CutPrefix(label, l.Prefix+stageInfix)
	if !ok || !ValidStageName(name) {
		return "", false
	}
	return name, true
}

// StateOf derives the state from a ticket's labels. No lifecycle label means
// Pending. If a human left several lifecycle labels, the furthest state wins,
// so a ticket that reached Done is never claimed again by accident. Stage
// labels do not count.
func (l Labels) StateOf(labels []string) State {
	s := Pending
	for _, label := range labels {
		if st, ok := l.parse(label); ok && st.rank() > s.rank() {
			s = st
		}
	}
	return s
}

// StageOf is the stage a ticket's labels show: "" when none of its stage
// labels names one of l's stages (a project without stages, a ticket not
// started or done), and the furthest in stage order when several do (an
// interrupted GitHub write leaves the old and the new, as StateOf's
// furthest state).
func (l Labels) StageOf(labels []string) string {
	best := -1
	for _, label := range labels {
		if name, ok := l.parseStage(label); ok {
			if i := l.stageIndex(name); i > best {
				best = i
			}
		}
	}
	if best < 0 {
		return ""
	}
	return l.Stages[best]
}

// NextStage is the stage after name in l's order, and whether there is one.
func (l Labels) NextStage(name string) (string, bool) {
	i := l.stageIndex(name)
	if i < 0 || i+1 >= len(l.Stages) {
		return "", false
	}
	return l.Stages[i+1], true
}

// Lifecycle returns the lifecycle labels present in labels, stage labels
// included; a transition removes all of them except the ones it adds.
func (l Labels) Lifecycle(labels []string) []string {
	var out []string
	for _, label := range labels {
		if l.IsLifecycle(label) {
			out = append(out, label)
		}
	}
	return out
}

// stageName is what a stage may be called: a label-safe, lower-case word
// on every platform (no blank for Jira, no ';' for Azure DevOps, no ','
// for GitLab's label lists), short enough for a label and a Redis key.
var stageName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// stageIndex is name's place in l's stage order, or -1. Stage names are
// compared exactly, not as labels (platforms.SameLabel): they come from
// the config, lower-case by ValidStageName, and a stage label's name part
// is read only once it is one (parseStage).
func (l Labels) stageIndex(name string) int {
	names := l.Stages
	return slices.Index(names, name)
}

// IsStage reports whether name is one of l's stages.
func (l Labels) IsStage(name string) bool { return l.stageIndex(name) >= 0 }

// ValidStageName reports whether name may name a stage.
func ValidStageName(name string) bool { return stageName.MatchString(name) }
