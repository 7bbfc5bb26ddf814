package statuspage

import (
	"context"
	"fmt"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// waitReason says why an in-progress ticket is not moving and when that
// ends, from its heartbeat and Redis's uptime: a run holds the heartbeat
// (it runs, or, if its replica died, it is reverted once the heartbeat
// expires or the replica's liveness lapses); Redis restarted inside the
// restart grace (the lost run is reverted and run again when the grace
// ends, housekeeping.StaleJobDetector); or no run holds it (reverted at the
// StaleJobDetector's next cycle).
func (h *handler) waitReason(ctx context.Context, ref platforms.Ref, now time.Time) (string, error) {
	holder, left, err := runstate.Holder(ctx, h.cfg.RDB, ref)
	if err != nil {
		return "", err
	}
	if holder != "" {
		return fmt.Sprintf("a run holds the heartbeat, which expires at %s UTC unless renewed: "+
			"should that run have died, the ticket runs again when its replica's liveness lapses or, at the latest, when the heartbeat expires",
			now.Add(left).UTC().Format(time.TimeOnly)), nil
	}
	up, err := housekeeping.RedisUptime(ctx, h.cfg.RDB)
	if err != nil {
		return "", err
	}
	if grace := h.cfg.RestartGrace; grace > 0 && up <= grace {
		at := now.Add(housekeeping.GraceEnd(grace, up))
		return fmt.Sprintf("Redis restarted %s ago and lost this run's heartbeat: runs resume after the restart grace (%s), "+
			"at %s UTC, when the run is known stopped and the ticket is reverted and run again",
			up, grace, at.UTC().Format(time.TimeOnly)), nil
	}
	return "no run holds its heartbeat: the stale job detector reverts it and runs it again at its next cycle", nil
}
