package claim

import (
	"context"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// HoldAndFlush holds a cache write of key as a claim's gate does when it
// learned val with the lock (key read absent), and sends it as the claim
// does on its way out.
func (c *Service) HoldAndFlush(ctx context.Context, ref platforms.Ref, key, val string, ttl time.Duration) {
	g := &gateState{read: map[string]*string{key: nil}}
	g.set(key, val, ttl)
	c.flush(ctx, ref, g)
}
