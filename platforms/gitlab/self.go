package gitlab

import (
	"context"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.SelfIdentifier = (*Tracker)(nil)

// Self is the username of the token's user (GET /user), as webhooks name
// users (user.username).
func (t *Tracker) Self(ctx context.Context) (string, error) {
	return t.api.currentUser(ctx)
}
