package lifecycle

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// attempt is one run of a request, from the take of its run to the written
// outcome: the values every step of it shares, so each step takes only what
// varies per call (the ticket snapshot, the states, the outcome).
type attempt struct {
	e     *Executor
	p     *Project
	req   PipelineRequest
	token string
	log   *zap.Logger
	// started is when the pipeline started; zero before it has.
	started time.Time
	// hb is the run's heartbeat; nil before the pipeline starts.
	hb *runHeartbeat
	// fence is checked before every label write: without the heartbeat
	// before the pipeline starts, with it once the heartbeat runs.
	fence func(context.Context) error
	// branch is the work branch prepared for this attempt; "" without a
	// workspace or when preparing it failed (then nothing is saved).
	branch string
	// result is what the pipeline wrote to $AGENTSMITH_RESULT_FILE, and
	// resultNotes the warnings reading it gave.
	result      Result
	resultNotes []string
	// workNotes say what became of the work branch after the pipeline
	// (pushed at which commit, or why not), for the outcome's comment.
	workNotes []string
	// pushed is the commit saveWork pushed to branch ("" when none was).
	pushed string
	// killUnconfirmed: the pipeline was ended by a signal the executor did
	// not send while Redis could not be read, so its run guard may have
	// killed it for a lost lock. A lock found gone when its outcome is
	// handed over is then taken as that loss (handOver), not re-taken.
	killUnconfirmed bool
	// commentBudget bounds a comment with its retries when set (default
	// commentTimeout), so the transition after it keeps time of its own.
	commentBudget time.Duration
	// leftover is why a run cgroup of this attempt (the pipeline's, the
	// persist command's) could not be emptied: processes of the run may
	// still live, and nothing of the daemon's reads or writes the work dir
	// after it (procrun.Result.Leftover).
	leftover error
}
