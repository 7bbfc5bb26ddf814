package azuredevops

import (
	"context"
	"fmt"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.SelfIdentifier = (*Tracker)(nil)

// Self is the unique name of the PAT's identity, as service hooks name
// users (revisedBy.uniqueName): connectionData's authenticatedUser
// Account property.
func (t *Tracker) Self(ctx context.Context) (string, error) {
	var cd struct {
		AuthenticatedUser struct {
			Properties struct {
				Account struct {
					Value string `json:"$value"`
				} `json:"Account"`
			} `json:"properties"`
		} `json:"authenticatedUser"`
	}
	if _, err := t.getJSON(ctx, "_apis/connectionData?api-version=7.1-preview.1", &cd); err != nil {
		return "", err
	}
	if v := cd.AuthenticatedUser.Properties.Account.Value; v != "" {
		return v, nil
	}
	return "", fmt.Errorf("azuredevops: connectionData names no account")
}
