package lifecycle

import "testing"

// A claim that finds its ticket already queued or running is the echo of a
// second trigger: history shows it as ignored, in words, while other
// refusals keep their outcome and reason.
func TestShownOutcomeWordsADuplicateTrigger(t *testing.T) {
	for _, tc := range []struct {
		ev                  Event
		outcome, reasonText string
	}{
		{Event{Kind: EventClaim, From: Enqueued, Outcome: string(NotEligible), Reason: "state is enqueued"},
			"ignored", "already enqueued (duplicate trigger ignored)"},
		{Event{Kind: EventClaim, From: InProgress, Outcome: string(NotEligible), Reason: "state is in-progress (from payload)"},
			"ignored", "already in-progress (duplicate trigger ignored)"},
		{Event{Kind: EventClaim, From: Failed, Outcome: string(NotEligible), Reason: "state is failed"},
			"not_eligible", "state is failed"},
		{Event{Kind: EventClaim, From: Pending, Outcome: string(NotEligible), Reason: "closed"},
			"not_eligible", "closed"},
		{Event{Kind: EventTransition, From: Pending, To: Enqueued, Outcome: "claimed"}, "claimed", ""},
	} {
		if got := tc.ev.ShownOutcome(); got != tc.outcome {
			t.Errorf("%+v: outcome %q, want %q", tc.ev, got, tc.outcome)
		}
		if got := tc.ev.ShownReason(); got != tc.reasonText {
			t.Errorf("%+v: reason %q, want %q", tc.ev, got, tc.reasonText)
		}
	}
}
