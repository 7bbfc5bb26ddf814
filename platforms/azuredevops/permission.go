package azuredevops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/workitemtracking"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.PermissionChecker = (*Tracker)(nil)

// writeGroups are the project groups whose members may edit work items by
// default (https://learn.microsoft.com/azure/devops/organizations/security/permissions-access#work-items):
// Contributors and Project Administrators.
var writeGroups = []string{"Contributors", "Project Administrators"}

// adoIdentity is an identity as Identities - Read Identities answers it.
type adoIdentity struct {
	Descriptor string   `json:"descriptor"`
	IsActive   bool     `json:"isActive"`
	MemberOf   []string `json:"memberOf"`
}

// MayWrite reports whether the user (a unique name, as webhooks name them
// in revisedBy) is a member, directly or through nested groups, of the
// project's Contributors or Project Administrators group. Azure DevOps has
// no call answering "may this user edit work items here" for another user
// (Permissions - Has Permissions Batch evaluates the caller's own), so this
// reads the closest documented thing: Identities - Read Identities
// (https://learn.microsoft.com/rest/api/azure/devops/ims/identities/read-identities),
// once for the user with queryMembership=Expanded (every group it belongs
// to, transitively) and once per group by its "[project]\group" name. A
// permission granted to the user or another group directly, outside these
// groups, is not seen: list such users in trigger.allow.users.
func (t *Tracker) MayWrite(ctx context.Context, actor string) (bool, error) {
	return t.inGroups(ctx, actor, writeGroups)
}

var _ platforms.TeamChecker = (*Tracker)(nil)

// InTeam reports whether the user is a member, directly or through nested
// groups, of the project's group of that name (Azure DevOps teams are
// groups too), read as MayWrite reads Contributors. A group the project
// does not have admits nobody.
func (t *Tracker) InTeam(ctx context.Context, actor, group string) (bool, error) {
	if group == "" {
		return false, nil
	}
	return t.inGroups(ctx, actor, []string{group})
}

// inGroups reports whether the user is an active member of any of the
// project's groups.
func (t *Tracker) inGroups(ctx context.Context, actor string, groups []string) (bool, error) {
	if actor == "" {
		return false, nil
	}
	user, err := t.identity(ctx, actor, "Expanded")
	if err != nil || user == nil || !user.IsActive {
		return false, err
	}
	for _, g := range groups {
		group, err := t.identity(ctx, "["+t.project+"]\\"+g, "None")
		if err != nil {
			return false, err
		}
		if group != nil && slices.ContainsFunc(user.MemberOf, func(d string) bool { return strings.EqualFold(d, group.Descriptor) }) {
			return true, nil
		}
	}
	return false, nil
}

// identity finds the one identity name (a unique name or a group's
// "[project]\name") stands for; nil when there is none.
func (t *Tracker) identity(ctx context.Context, name, membership string) (*adoIdentity, error) {
	q := url.Values{"searchFilter": {"General"}, "filterValue": {name}, "queryMembership": {membership}, "api-version": {"7.1"}}
	var out struct {
		Value []adoIdentity `json:"value"`
	}
	if _, err := t.getJSONAt(ctx, t.identityURL()+"/_apis/identities?"+q.Encode(), &out); err != nil {
		return nil, fmt.Errorf("azuredevops: identity %q: %w", name, err)
	}
	if len(out.Value) == 0 {
		return nil, nil
	}
	return &out.Value[0], nil
}

// identityURL is where the organization's identities are served: Azure
// DevOps Services has them on vssps.dev.azure.com/{org}; Azure DevOps
// Server (and trackersim) on the collection URL itself.
func (t *Tracker) identityURL() string {
	if u, err := url.Parse(t.orgURL); err == nil && strings.EqualFold(u.Host, "dev.azure.com") {
		u.Host = "vssps.dev.azure.com"
		return u.String()
	}
	return t.orgURL
}

var _ platforms.LabelHistory = (*Tracker)(nil)

// LabelAddedBy reads the work item's updates
// (https://learn.microsoft.com/rest/api/azure/devops/wit/updates/list) and
// returns who authenticated the last one whose System.Tags change added
// the tag (compared case-insensitively, as Azure DevOps compares tags):
// System.AuthorizedAs, which an update lists when it changes it, so the
// value in force is the last one listed up to that update. revisedBy shows
// System.ChangedBy, which an identity allowed to bypass rules can set to
// anyone (fieldAuthorizedAs); it is read only while no update so far has
// named an AuthorizedAs. The first revision of a work item created with
// the tag counts too.
func (t *Tracker) LabelAddedBy(ctx context.Context, ref platforms.Ref, label string) (string, error) {
	id, err := t.workItemID(ref)
	if err != nil {
		return "", err
	}
	c, err := t.sdk.client(ctx)
	if err != nil {
		return "", fmt.Errorf("azuredevops: updates of %s: %w", ref.ID, err)
	}
	ups, err := c.GetUpdates(ctx, workitemtracking.GetUpdatesArgs{Id: &id, Project: &t.project})
	if err != nil {
		return "", fmt.Errorf("azuredevops: updates of %s: %w", ref.ID, classify(err))
	}
	who, auth := "", ""
	if ups == nil {
		return "", nil
	}
	for _, u := range *ups {
		if u.Fields == nil {
			continue
		}
		if ch, ok := (*u.Fields)[fieldAuthorizedAs]; ok {
			if name := identityValue(ch.NewValue); name != "" {
				auth = name
			}
		}
		ch, ok := (*u.Fields)[fieldTags]
		if !ok {
			continue
		}
		old, _ := ch.OldValue.(string)
		cur, _ := ch.NewValue.(string)
		added := platforms.NewLabels(Platform, splitTags(old), splitTags(cur))
		if !platforms.ContainsLabel(Platform, added, label) {
			continue
		}
		switch {
		case auth != "":
			who = auth
		case u.RevisedBy != nil && u.RevisedBy.UniqueName != nil:
			who = *u.RevisedBy.UniqueName
		default:
			who = ""
		}
	}
	return who, nil
}

// identityValue reads an identity field's value as the SDK decodes it: an
// IdentityRef object (a map) or a "Display Name <unique name>" string.
func identityValue(v any) string {
	switch v := v.(type) {
	case string:
		raw, _ := json.Marshal(v)
		return identityName(raw)
	case map[string]any:
		name, _ := v["uniqueName"].(string)
		return name
	}
	return ""
}
