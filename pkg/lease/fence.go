package lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentsmithd/agentsmithd/pkg/redislock"
)

// ErrNotHeld is Fence's answer when this replica may no longer act as leader.
var ErrNotHeld = errors.New("lease: not held")

// Fence is the check a leader makes immediately before a write only the
// leader may make: its local validity deadline has not passed, and Redis
// still holds this term's value. A holder that was paused past its TTL fails
// here even if its leader context has not been cancelled yet.
func (l *Lease) Fence(ctx context.Context) error {
	l.mu.Lock()
	value, valid := l.value, l.value != "" && l.cfg.Clock().Before(l.validUntil)
	l.mu.Unlock()
	if !valid {
		return ErrNotHeld
	}
	ok, err := redislock.Check(ctx, l.rdb, l.cfg.Key, value)
	if err != nil {
		return fmt.Errorf("lease fence %s: %w", l.cfg.Key, err)
	}
	if !ok {
		return ErrNotHeld
	}
	return nil
}
