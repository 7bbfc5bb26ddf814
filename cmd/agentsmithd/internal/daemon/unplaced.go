package daemon

import (
	"context"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// unplacedLogEvery is how often the replica logs the pools whose requests
// it parked since the last look: once per pool per interval, whatever the
// number of entries (a parked entry comes back every 5 s).
const unplacedLogEvery = time.Minute

// unplacedLog warns about requests the replica put (back) in the delayed
// set because they name a pool its config does not (queue.Unplaced): they
// wait for a replica whose config names the pool, and if none does they
// wait for good. agentsmith_queue_unplaced_total counts the same entries.
type unplacedLog struct {
	counts func() map[string]uint64 // queue.UnplacedByPool
	log    *zap.Logger
	seen   map[string]uint64
}

func (u *unplacedLog) run(ctx context.Context) error {
	t := time.NewTicker(unplacedLogEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			u.report()
		}
	}
}

// report logs one warning per pool whose count grew since the last report.
func (u *unplacedLog) report() {
	counts := u.counts()
	if u.seen == nil {
		u.seen = map[string]uint64{}
	}
	for _, pool := range slices.Sorted(maps.Keys(counts)) {
		if n := counts[pool]; n > u.seen[pool] {
			u.log.Warn("requests of a pool this replica's config does not name wait in the delayed set for a replica that names it; if none does, add the pool to the config",
				zap.String("pool", lifecycle.PoolLabel(pool)), zap.Uint64("parked", n-u.seen[pool]), zap.Uint64("parkedTotal", n),
				zap.Duration("interval", unplacedLogEvery))
			u.seen[pool] = n
		}
	}
}
