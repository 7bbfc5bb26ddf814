package lifecycle

import "strings"

// StateReasonPrefix starts the NotEligible reason of a ticket that already
// carries a lifecycle state (claim.Service.PreCheck): "state is enqueued".
const StateReasonPrefix = "state is "

// ShownOutcome is the event's outcome as history tables show it
// (agentsmithctl history, the status page). A claim of a ticket that already
// has a run under way or queued is the normal echo of a second trigger —
// the webhook for the daemon's own label write, a poll or a sweep that
// found it too — and reads "ignored", not as a refusal.
func (ev Event) ShownOutcome() string {
	if _, ok := ev.alreadyUnderWay(); ok {
		return "ignored"
	}
	return ev.Outcome
}

// ShownReason is the event's reason as history tables show it, worded for
// a reader who does not know the claim protocol (see ShownOutcome).
func (ev Event) ShownReason() string {
	if s, ok := ev.alreadyUnderWay(); ok {
		return "already " + s + " (duplicate trigger ignored)"
	}
	return ev.Reason
}

// alreadyUnderWay reports the state of a ticket whose claim found it
// Enqueued or InProgress.
func (ev Event) alreadyUnderWay() (string, bool) {
	if ev.Kind != EventClaim || ev.Outcome != string(NotEligible) {
		return "", false
	}
	r, ok := strings.CutPrefix(ev.Reason, StateReasonPrefix)
	if !ok {
		return "", false
	}
	r, _, _ = strings.Cut(r, " (")
	switch r {
	case Enqueued.String(), InProgress.String():
		return r, true
	}
	return "", false
}
