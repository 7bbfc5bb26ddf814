package github

import (
	"context"

	"github.com/bradleyfalzon/ghinstallation/v2"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.SelfIdentifier = (*Tracker)(nil)

// Self is the login of the token's user (GET /user). An App installation
// is "": its token may not call GET /user, and its <slug>[bot] account is
// refused as an approver by config validation; the webhook decoder already
// ignores comments of Bot accounts.
func (t *Tracker) Self(ctx context.Context) (string, error) {
	if _, isApp := t.client.Client().Transport.(*ghinstallation.Transport); isApp {
		return "", nil
	}
	u, _, err := t.client.Users.Get(ctx, "")
	if err != nil {
		return "", err
	}
	return u.GetLogin(), nil
}
