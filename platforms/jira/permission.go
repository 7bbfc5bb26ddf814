package jira

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.PermissionChecker = (*Tracker)(nil)

// editIssues is the project permission to edit issues, labels included.
const editIssues = "EDIT_ISSUES"

// permittedUser is an entry of the user permission search's answer.
type permittedUser struct {
	AccountID string `json:"accountId"`
	Name      string `json:"name"`
	Key       string `json:"key"`
}

// MayWrite reports whether the user (an accountId on Cloud, a user name on
// Data Center, as webhooks name them) holds EDIT_ISSUES in the project:
// "Find users with permissions", GET user/permission/search with
// permissions=EDIT_ISSUES and projectKey, filtered to the one user
// (Cloud: accountId,
// https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-user-search/#api-rest-api-3-user-permission-search-get;
// Data Center: username,
// https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/user-findUsersWithAllPermissions).
// mypermissions answers for the caller only on Data Center, so it cannot
// be used. The token's account needs the "Browse users and groups" global
// permission; without it Jira answers 403, an error (the trigger waits).
func (t *Tracker) MayWrite(ctx context.Context, actor string) (bool, error) {
	if t.jql != "" {
		return false, errors.New("jira: a JQL scope spans projects: write access is asked of the issue's project (MayWriteIn)")
	}
	return t.MayWriteIn(ctx, t.key, actor)
}

var _ platforms.TicketPermissionChecker = (*Tracker)(nil)

// PermissionScope is the project whose permission scheme decides write
// access to ref in a JQL scope: the issue key's project ("A" for A-12);
// "" for a tracker bound to one project, which MayWrite answers for.
func (t *Tracker) PermissionScope(ref platforms.Ref) string {
	if t.jql == "" {
		return ""
	}
	key, _, _ := ParseID(ref.ID)
	return strings.ToUpper(key)
}

// MayWriteIn is MayWrite in the project key: a JQL scope's issues live
// in several projects, each with its own permission scheme.
func (t *Tracker) MayWriteIn(ctx context.Context, key, actor string) (bool, error) {
	if actor == "" {
		return false, nil
	}
	if err := CheckProjectKey(key); err != nil {
		return false, err
	}
	q := url.Values{"permissions": {editIssues}, "projectKey": {key}, "maxResults": {"50"}}
	if t.cloud {
		q.Set("accountId", actor)
	} else {
		q.Set("username", actor)
	}
	var users []permittedUser
	if err := t.do(ctx, http.MethodGet, t.api+"user/permission/search?"+q.Encode(), nil, &users); err != nil {
		if errors.Is(err, platforms.ErrNotFound) {
			return false, nil // no such user
		}
		return false, fmt.Errorf("jira: permission of %q: %w", actor, err)
	}
	for _, u := range users {
		if u.AccountID == actor || strings.EqualFold(u.Name, actor) || strings.EqualFold(u.Key, actor) {
			return true, nil
		}
	}
	return false, nil
}

var _ platforms.LabelHistory = (*Tracker)(nil)

// jiraPerson is a user in an issue's fields or changelog.
type jiraPerson struct {
	AccountID string `json:"accountId"`
	Name      string `json:"name"`
}

// name is how webhooks name the user on this deployment.
func (p *jiraPerson) name(cloud bool) string {
	if p == nil {
		return ""
	}
	if cloud {
		return p.AccountID
	}
	return p.Name
}

// jiraHistory is one changelog entry: who changed which fields.
type jiraHistory struct {
	Author *jiraPerson `json:"author"`
	Items  []struct {
		Field      string `json:"field"`
		FromString string `json:"fromString"`
		ToString   string `json:"toString"`
	} `json:"items"`
}

// changelogPages bounds Get changelogs' pages (100 histories each) that
// LabelAddedBy reads: an issue with more says "" (unknown).
const changelogPages = 100

// LabelAddedBy reads the issue with expand=changelog
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-get)
// and returns the author of the last history (they come oldest first)
// whose "labels" item added label. Labels set when the issue was created
// are no history entry: when no entry added it and the issue carries it,
// the creator set it, which only a whole changelog can tell.
//
// The embedded changelog holds only the latest 100 histories, total
// counting all of them, with no paging (pycontribs/jira#911, JRACLOUD-67458):
// on a long-lived ticket the trigger label's add falls out. The last add
// among the latest is the last add; when it is not among them, Cloud's
// "Get changelogs", GET issue/{key}/changelog paged with startAt until
// isLast, oldest first
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-changelog-get),
// reads them all. Data Center's REST API has no such resource
// (pycontribs/jira#911): there, and past changelogPages pages, the answer
// is "" (the history names nobody), never the creator's guess: the claim
// refuses an unnamed triggerer, and an approval gate under
// distinct_from_trigger refuses every approval while the trigger is unknown.
func (t *Tracker) LabelAddedBy(ctx context.Context, ref platforms.Ref, label string) (string, error) {
	key, err := t.issueKey(ref)
	if err != nil {
		return "", err
	}
	var is struct {
		Fields struct {
			Creator *jiraPerson `json:"creator"`
			Labels  []string    `json:"labels"`
		} `json:"fields"`
		Changelog struct {
			Total     int           `json:"total"`
			Histories []jiraHistory `json:"histories"`
		} `json:"changelog"`
	}
	if err := t.do(ctx, http.MethodGet, t.api+"issue/"+url.PathEscape(key)+"?fields=creator,labels&expand=changelog", nil, &is); err != nil {
		return "", fmt.Errorf("jira: changelog of %s: %w", key, err)
	}
	if who, found := t.lastAdd(is.Changelog.Histories, label); found {
		return who, nil
	}
	if is.Changelog.Total > len(is.Changelog.Histories) {
		if !t.cloud {
			return "", nil // the add may be among the histories Data Center does not show
		}
		all, whole, err := t.changelog(ctx, key)
		if err != nil {
			return "", err
		}
		if who, found := t.lastAdd(all, label); found {
			return who, nil
		}
		if !whole {
			return "", nil
		}
	}
	if platforms.ContainsLabel(Platform, is.Fields.Labels, label) {
		return is.Fields.Creator.name(t.cloud), nil
	}
	return "", nil
}

// lastAdd is the author of the last of hist (oldest first) whose "labels"
// item added label; found false when none did.
func (t *Tracker) lastAdd(hist []jiraHistory, label string) (who string, found bool) {
	for _, h := range hist {
		for _, it := range h.Items {
			if it.Field == "labels" && platforms.ContainsLabel(Platform, platforms.NewLabels(Platform, strings.Fields(it.FromString), strings.Fields(it.ToString)), label) {
				who, found = h.Author.name(t.cloud), true
			}
		}
	}
	return who, found
}

// changelog reads the issue's whole changelog through Cloud's Get
// changelogs, oldest first; whole is false when it stopped at
// changelogPages pages.
func (t *Tracker) changelog(ctx context.Context, key string) (hist []jiraHistory, whole bool, err error) {
	startAt := 0
	for range changelogPages {
		var page struct {
			Total  int           `json:"total"`
			IsLast bool          `json:"isLast"`
			Values []jiraHistory `json:"values"`
		}
		q := url.Values{"startAt": {strconv.Itoa(startAt)}, "maxResults": {"100"}}
		if err := t.do(ctx, http.MethodGet, t.api+"issue/"+url.PathEscape(key)+"/changelog?"+q.Encode(), nil, &page); err != nil {
			return nil, false, fmt.Errorf("jira: changelog of %s from %d: %w", key, startAt, err)
		}
		hist = append(hist, page.Values...)
		startAt += len(page.Values)
		if page.IsLast || page.Total > 0 && startAt >= page.Total {
			return hist, true, nil
		}
		if len(page.Values) == 0 {
			return nil, false, fmt.Errorf("jira: changelog of %s: an empty page at %d of %d", key, startAt, page.Total)
		}
	}
	return hist, false, nil
}

var _ platforms.TeamChecker = (*Tracker)(nil)

// InTeam reports whether the user (an accountId on Cloud, a user name on
// Data Center) is in the Jira group of that name (compared
// case-insensitively, as Jira compares group names). Cloud: "Get user
// groups", GET user/groups?accountId=
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-users/#api-rest-api-3-user-groups-get),
// a Cloud-only resource. Data Center: GET user?username=&expand=groups
// (https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/user-getUser).
// A user Jira does not know (404) is in none; the token's account needs
// "Browse users and groups".
func (t *Tracker) InTeam(ctx context.Context, actor, group string) (bool, error) {
	if actor == "" || group == "" {
		return false, nil
	}
	var groups []jiraGroup
	var err error
	if t.cloud {
		err = t.do(ctx, http.MethodGet, t.api+"user/groups?"+url.Values{"accountId": {actor}}.Encode(), nil, &groups)
	} else {
		var u struct {
			Groups struct {
				Items []jiraGroup `json:"items"`
			} `json:"groups"`
		}
		err = t.do(ctx, http.MethodGet, t.api+"user?"+url.Values{"username": {actor}, "expand": {"groups"}}.Encode(), nil, &u)
		groups = u.Groups.Items
	}
	if err != nil {
		if errors.Is(err, platforms.ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("jira: groups of %q: %w", actor, err)
	}
	return slices.ContainsFunc(groups, func(g jiraGroup) bool { return strings.EqualFold(g.Name, group) }), nil
}

// jiraGroup is an entry of "Get user groups".
type jiraGroup struct {
	Name string `json:"name"`
}
