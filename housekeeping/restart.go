package housekeeping

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// redisUptime is how long Redis has been running: for a cluster the
// youngest master's, since any master may hold a ticket's heartbeat.
//
// A missing heartbeat proves its owner stopped only if the key expired. A
// Redis restart — emptied, or rolled back to an older snapshot, or an AOF
// that lost its last second — removes heartbeats at once, while each owner
// still trusts its run until its next renewal fails (at most the heartbeat
// TTL after its last success, sooner by its run guard). So the stale
// detector reverts nothing until Redis has been up longer than its
// RestartGrace (lifecycle.RestartGrace), as the executors take no run (the
// check inside runstate.Take): the epoch cannot tell a rollback (the epoch
// key survives in the snapshot), the uptime can.
func redisUptime(ctx context.Context, rdb redis.UniversalClient) (time.Duration, error) {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		youngest := time.Duration(-1)
		err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			up, err := uptimeOf(ctx, n)
			if err != nil {
				return err
			}
			mu.Lock()
			if youngest < 0 || up < youngest {
				youngest = up
			}
			mu.Unlock()
			return nil
		})
		return max(youngest, 0), err
	}
	return uptimeOf(ctx, rdb)
}

func uptimeOf(ctx context.Context, rdb redis.Cmdable) (time.Duration, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0, fmt.Errorf("read redis uptime: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "uptime_in_seconds:"); ok {
			s, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read redis uptime %q: %w", v, err)
			}
			return time.Duration(s) * time.Second, nil
		}
	}
	return 0, fmt.Errorf("read redis uptime: no uptime_in_seconds in INFO server")
}

// graceKick is the one slow cycle a StaleJobDetector owes once Redis has
// been up past its RestartGrace: the cycle the EpochWatcher kicked when
// Redis came back was skipped inside the grace, and the next slow tick is
// a whole slow interval away (a minute by default).
type graceKick struct {
	mu    sync.Mutex
	armed bool
	at    time.Time // when the armed kick fires
}

// RedisUptime is how long Redis has been running (redisUptime): what the
// status page reads to say when a restart's grace ends.
func RedisUptime(ctx context.Context, rdb redis.UniversalClient) (time.Duration, error) {
	return redisUptime(ctx, rdb)
}

// GraceEnd is how long after now Redis's uptime_in_seconds, up now, will
// exceed grace: the INFO figure is whole seconds rounded down, and the
// StaleJobDetector acts only once it is past the grace.
func GraceEnd(grace, up time.Duration) time.Duration {
	return max(grace.Truncate(time.Second)+time.Second-up, 0)
}

// deferPastGrace arms one kick of the slow cycle for when Redis will have
// been up past RestartGrace, and logs once per restart what will happen
// and when: by then every live owner has found its lost heartbeat and
// stopped its pipeline, so an InProgress ticket with no heartbeat is
// reverted and claimed again.
func (d *StaleJobDetector) deferPastGrace(up time.Duration) {
	wait := GraceEnd(d.cfg.RestartGrace, up)
	d.grace.mu.Lock()
	defer d.grace.mu.Unlock()
	if d.grace.armed {
		return
	}
	d.grace.armed = true
	d.grace.at = d.cfg.Clock().Add(wait)
	d.log.Info("Redis restarted recently: a missing heartbeat is not yet proof of a dead run; "+
		"in-progress tickets without one are reverted and run again once the restart grace ends",
		zap.Duration("redisUptime", up), zap.Duration("restartGrace", d.cfg.RestartGrace),
		zap.Time("at", d.grace.at))
	time.AfterFunc(wait, func() {
		d.grace.mu.Lock()
		d.grace.armed = false
		d.grace.mu.Unlock()
		d.Kick()
	})
}
