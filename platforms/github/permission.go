package github

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v60/github"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.PermissionChecker = (*Tracker)(nil)

// MayWrite reads the collaborator's permission on the repository
// ("GET /repos/{owner}/{repo}/collaborators/{username}/permission",
// https://docs.github.com/en/rest/collaborators/collaborators#get-repository-permissions-for-a-user).
// Its "permission" is admin, write, read or none; maintain shows as write
// and triage as read, so write or admin is write access. A login GitHub
// does not know (404) has none.
func (t *Tracker) MayWrite(ctx context.Context, actor string) (bool, error) {
	if actor == "" {
		return false, nil
	}
	req, err := t.client.NewRequest("GET", fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", t.owner, t.name, url.PathEscape(actor)), nil)
	if err != nil {
		return false, fmt.Errorf("github: permission of %q: %w", actor, err)
	}
	var level struct {
		Permission string `json:"permission"`
	}
	if _, err := t.client.Do(ctx, req, &level); err != nil {
		if err = classify(err); errors.Is(err, platforms.ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("github: permission of %q: %w", actor, err)
	}
	return level.Permission == "admin" || level.Permission == "write", nil
}

var _ platforms.LabelHistory = (*Tracker)(nil)

// LabelAddedBy reads the issue's events
// (https://docs.github.com/rest/issues/events#list-issue-events), oldest
// first, every page, and returns the actor of the last "labeled" event for
// label (GitHub label names compare case-insensitively).
func (t *Tracker) LabelAddedBy(ctx context.Context, ref platforms.Ref, label string) (string, error) {
	n, err := t.number(ref)
	if err != nil {
		return "", err
	}
	who := ""
	opts := &gh.ListOptions{PerPage: perPage}
	for {
		evs, resp, err := t.client.Issues.ListIssueEvents(ctx, t.owner, t.name, n, opts)
		if err != nil {
			return "", fmt.Errorf("github: events of %s: %w", ref.ID, classify(err))
		}
		for _, ev := range evs {
			if ev.GetEvent() == "labeled" && ev.Label != nil && platforms.SameLabel(Platform, ev.Label.GetName(), label) {
				who = ev.GetActor().GetLogin()
			}
		}
		if resp.NextPage == 0 {
			return who, nil
		}
		opts.Page = resp.NextPage
	}
}

var _ platforms.TeamChecker = (*Tracker)(nil)

// InTeam reads the user's membership of the team ("GET
// /orgs/{org}/teams/{team_slug}/memberships/{username}",
// https://docs.github.com/rest/teams/members#get-team-membership-for-a-user):
// a member whose state is active is in it; pending (invited, not yet
// accepted) is not, and 404 (no member, or no such team) is not. team is
// "org/slug", or a slug in the repository owner's organization. The token
// needs read access to the organization's members (read:org).
func (t *Tracker) InTeam(ctx context.Context, actor, team string) (bool, error) {
	org, slug, ok := strings.Cut(team, "/")
	if !ok {
		org, slug = t.owner, team
	}
	if actor == "" || org == "" || slug == "" {
		return false, nil
	}
	req, err := t.client.NewRequest("GET", fmt.Sprintf("orgs/%s/teams/%s/memberships/%s",
		url.PathEscape(org), url.PathEscape(slug), url.PathEscape(actor)), nil)
	if err != nil {
		return false, fmt.Errorf("github: membership of %q in team %q: %w", actor, team, err)
	}
	var m struct {
		State string `json:"state"`
	}
	if _, err := t.client.Do(ctx, req, &m); err != nil {
		if err = classify(err); errors.Is(err, platforms.ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("github: membership of %q in team %q: %w", actor, team, err)
	}
	return m.State == "active", nil
}
