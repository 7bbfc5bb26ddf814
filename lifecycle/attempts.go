package lifecycle

// Attempts is a project's attempt budget (pipeline.max_attempts). It and
// the functions below are the one place that numbers attempts and decides
// when they are used up; the claim, the StaleJobDetector, the executor's
// retry and the requeue all ask here, so they cannot disagree on whether a
// ticket may run again.
//
// The count kept in Redis (keys.Attempts, LastAttempt) is the attempt of the
// ticket's last started run; 0 means none is known (no run yet, a finished
// ticket, or Redis lost it).
type Attempts struct{ max int }

// Attempts returns the pipeline's attempt budget.
func (pl *Pipeline) Attempts() Attempts { return Attempts{max: pl.MaxAttempts} }

// Limit is how many attempts a ticket gets: max_attempts, at least one.
func (a Attempts) Limit() int { return max(a.max, 1) }

// UsedUp reports whether a ticket that used ran attempts may not run again.
func (a Attempts) UsedUp(ran int) bool { return ran >= a.Limit() }

// AttemptsRan is how many attempts a ticket about to be claimed has used:
// the count Redis keeps, or the attempts before the one the caller asks for
// (a reclaim asks for the one after the dead run; other claims ask for 1),
// whichever is more. So a late webhook after a revert continues the count
// instead of resetting it.
func AttemptsRan(recorded, requested int) int { return max(recorded, requested-1, 0) }

// NextAttempt is the attempt that follows ran used attempts.
func NextAttempt(ran int) int { return max(ran, 0) + 1 }

// RunAttempt is the attempt a run known to have started counted as, from
// the count Redis keeps: a run whose count was lost is taken as the first.
func RunAttempt(recorded int) int { return max(recorded, 1) }
