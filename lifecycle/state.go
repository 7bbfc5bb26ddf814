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
)

var stateNames = [...]string{"pending", "enqueued", "in-progress", "done", "failed"}

// AllStates lists the states in lifecycle order.
var AllStates = []State{Pending, Enqueued, InProgress, Done, Failed}

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

// Labels maps states to labels under one prefix ("agent-smith:enqueued").
// Only labels with the prefix are lifecycle labels; nothing else is ever
// removed or reordered.
type Labels struct{ Prefix string }

// Label is the label that shows s.
func (l Labels) Label(s State) string { return l.Prefix + ":" + s.String() }

// IsLifecycle reports whether label is one of the prefix's state labels,
// spelled as the daemon spells them. Where the platform ignores case
// (platforms.SameLabel: GitHub, Azure DevOps) the tracker reads
// "Agent-Smith:done" as "agent-smith:done" (platforms.Respell); where it
// does not (GitLab, Jira) "Agent-Smith:done" is a user's label, not ours.
func (l Labels) IsLifecycle(label string) bool {
	_, ok := l.parse(label)
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

// StateOf derives the state from a ticket's labels. No lifecycle label means
// Pending. If a human left several lifecycle labels, the furthest state wins,
// so a ticket that reached Done is never claimed again by accident.
func (l Labels) StateOf(labels []string) State {
	s := Pending
	for _, label := range labels {
		if st, ok := l.parse(label); ok && st > s {
			s = st
		}
	}
	return s
}

// Lifecycle returns the lifecycle labels present in labels; a transition
// removes all of them except the one it adds.
func (l Labels) Lifecycle(labels []string) []string {
	var out []string
	for _, label := range labels {
		if l.IsLifecycle(label) {
			out = append(out, label)
		}
	}
	return out
}
