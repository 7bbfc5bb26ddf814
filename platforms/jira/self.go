package jira

import (
	"context"
	"fmt"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.SelfIdentifier = (*Tracker)(nil)

// Self is who the token is (/myself) as webhooks name users: the
// accountId on Cloud, the user name on Data Center.
func (t *Tracker) Self(ctx context.Context) (string, error) {
	var me struct {
		AccountID string `json:"accountId"` // Cloud
		Name      string `json:"name"`      // Data Center
	}
	if _, err := t.get(ctx, t.api+"myself", &me); err != nil {
		return "", err
	}
	who := me.Name
	if t.cloud {
		who = me.AccountID
	}
	if who == "" {
		return "", fmt.Errorf("jira: /myself names no account")
	}
	return who, nil
}
