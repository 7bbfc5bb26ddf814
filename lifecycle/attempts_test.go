package lifecycle_test

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

func TestAttemptNumbering(t *testing.T) {
	for _, c := range []struct {
		max, recorded, requested int
		ran, next                int
		usedUp                   bool
	}{
		{max: 3, recorded: 0, requested: 1, ran: 0, next: 1},               // first claim
		{max: 3, recorded: 2, requested: 1, ran: 2, next: 3},               // late webhook after a revert continues
		{max: 3, recorded: 1, requested: 3, ran: 2, next: 3},               // reclaim asks past the count
		{max: 3, recorded: 3, requested: 1, ran: 3, next: 4, usedUp: true}, // used up
		{max: 0, recorded: 0, requested: 1, ran: 0, next: 1},               // max_attempts unset: one attempt
		{max: 0, recorded: 1, requested: 1, ran: 1, next: 2, usedUp: true}, // … and only one
		{max: 2, recorded: -1, requested: 0, ran: 0, next: 1},              // nonsense counts clamp to none
	} {
		a := (&lifecycle.Pipeline{MaxAttempts: c.max}).Attempts()
		ran := lifecycle.AttemptsRan(c.recorded, c.requested)
		if ran != c.ran || lifecycle.NextAttempt(ran) != c.next || a.UsedUp(ran) != c.usedUp {
			t.Errorf("max %d, recorded %d, requested %d: ran %d next %d used up %v; want %d %d %v", c.max, c.recorded, c.requested,
				ran, lifecycle.NextAttempt(ran), a.UsedUp(ran), c.ran, c.next, c.usedUp)
		}
	}
	if got := lifecycle.RunAttempt(0); got != 1 {
		t.Errorf("a run whose count was lost is attempt %d, want 1", got)
	}
	if got := (&lifecycle.Pipeline{MaxAttempts: -2}).Attempts().Limit(); got != 1 {
		t.Errorf("limit of a negative max_attempts = %d, want 1", got)
	}
}
