//lint:file-ignore SA1019 github.com/xanzy/go-gitlab is archived; its successor gitlab.com/gitlab-org/api/client-go has the same API, and this file is the only one to change to switch.

package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	gl "github.com/xanzy/go-gitlab"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Every go-gitlab call lives in this file. The module is archived and its
// successor, gitlab.com/gitlab-org/api/client-go, keeps the same API under a
// new import path: switching is a change of the import line here.

// issue is what the tracker needs of a GitLab issue.
type issue struct {
	IID         int
	Title       string
	Description string
	State       string // opened, closed
	WebURL      string
	Labels      []string
}

// sdk wraps one go-gitlab client.
type sdk struct{ c *gl.Client }

// newSDK builds a client on hc. go-gitlab's own retries are off: rate-limit
// waits are trackerhttp's job, and a retried POST would duplicate a note.
// The token goes as "Authorization: Bearer", which GitLab accepts for
// personal, project and group access tokens
// (https://docs.gitlab.com/api/rest/authentication/#personalprojectgroup-access-tokens)
// and which trackerhttp keys its cache and rate-limit state on.
func newSDK(baseURL, token string, hc *http.Client) (*sdk, error) {
	opts := []gl.ClientOptionFunc{gl.WithHTTPClient(hc), gl.WithCustomRetryMax(0)}
	if baseURL != "" {
		opts = append(opts, gl.WithBaseURL(baseURL))
	}
	c, err := gl.NewOAuthClient(token, opts...)
	if err != nil {
		return nil, err
	}
	return &sdk{c: c}, nil
}

// baseURL is the API root the client resolved ("…/api/v4/").
func (s *sdk) baseURL() string { return s.c.BaseURL().String() }

func fromSDK(is *gl.Issue) *issue {
	labels := make([]string, 0, len(is.Labels))
	labels = append(labels, is.Labels...)
	return &issue{IID: is.IID, Title: is.Title, Description: is.Description, State: is.State,
		WebURL: is.WebURL, Labels: labels}
}

// getIssue is GET /projects/:id/issues/:iid.
func (s *sdk) getIssue(ctx context.Context, project string, iid int) (*issue, error) {
	is, _, err := s.c.Issues.GetIssue(project, iid, gl.WithContext(ctx))
	if err != nil {
		return nil, classify(err)
	}
	return fromSDK(is), nil
}

// editLabels is PUT /projects/:id/issues/:iid with add_labels and
// remove_labels; the answer is the issue as written.
func (s *sdk) editLabels(ctx context.Context, project string, iid int, add, remove []string) (*issue, error) {
	opt := &gl.UpdateIssueOptions{}
	if len(add) > 0 {
		a := gl.LabelOptions(add)
		opt.AddLabels = &a
	}
	if len(remove) > 0 {
		r := gl.LabelOptions(remove)
		opt.RemoveLabels = &r
	}
	is, _, err := s.c.Issues.UpdateIssue(project, iid, opt, gl.WithContext(ctx))
	if err != nil {
		return nil, classify(err)
	}
	return fromSDK(is), nil
}

// createNote is POST /projects/:id/issues/:iid/notes. GitLab would run
// any line of body starting with "/" as a quick action, as the daemon:
// platforms.NoCommandLines makes every such line text, on every note the
// daemon posts or edits, whoever wrote it.
func (s *sdk) createNote(ctx context.Context, project string, iid int, body string) (int, error) {
	body = platforms.NoCommandLines(body)
	n, _, err := s.c.Notes.CreateIssueNote(project, iid, &gl.CreateIssueNoteOptions{Body: &body}, gl.WithContext(ctx))
	if err != nil {
		return 0, classify(err)
	}
	return n.ID, nil
}

// editNote is PUT /projects/:id/issues/:iid/notes/:note_id
// (https://docs.gitlab.com/api/notes/#modify-existing-issue-note).
// An edit runs quick actions too (Notes::UpdateService).
func (s *sdk) editNote(ctx context.Context, project string, iid, note int, body string) error {
	body = platforms.NoCommandLines(body)
	_, _, err := s.c.Notes.UpdateIssueNote(project, iid, note, &gl.UpdateIssueNoteOptions{Body: &body}, gl.WithContext(ctx))
	return classify(err)
}

// awardEmoji is POST /projects/:id/issues/:iid/award_emoji.
func (s *sdk) awardEmoji(ctx context.Context, project string, iid int, name string) error {
	_, _, err := s.c.AwardEmoji.CreateIssueAwardEmoji(project, iid, &gl.CreateAwardEmojiOptions{Name: name}, gl.WithContext(ctx))
	return classify(err)
}

// blocker is an issue linked to another as blocking it.
type blocker struct {
	Ref  string // references.full, "group/project#iid"
	Open bool
}

// blockedBy is GET /projects/:id/issues/:iid/links
// (https://docs.gitlab.com/api/issue_links/#list-issue-relations), keeping
// the links of type "is_blocked_by" (the blocked issue's side of "blocks").
// The endpoint is not paginated.
func (s *sdk) blockedBy(ctx context.Context, project string, iid int) ([]blocker, error) {
	rels, _, err := s.c.IssueLinks.ListIssueRelations(project, iid, gl.WithContext(ctx))
	if err != nil {
		return nil, classify(err)
	}
	var out []blocker
	for _, r := range rels {
		if r == nil || r.LinkType != "is_blocked_by" {
			continue
		}
		b := blocker{Open: r.State == "opened"}
		if r.References != nil {
			b.Ref = r.References.Full
		}
		if b.Ref == "" {
			b.Ref = fmt.Sprintf("%s#%d", project, r.IID)
		}
		out = append(out, b)
	}
	return out, nil
}

// listOpenPage is one page of GET /projects/:id/issues?state=opened&labels=…;
// next is 0 on the last page (X-Next-Page, which go-gitlab reads along with
// the Link header).
func (s *sdk) listOpenPage(ctx context.Context, project, label string, page, perPage int) (out []*issue, next int, err error) {
	opt := &gl.ListProjectIssuesOptions{
		State:       gl.Ptr("opened"),
		Labels:      &gl.LabelOptions{label},
		ListOptions: gl.ListOptions{Page: page, PerPage: perPage},
	}
	list, resp, err := s.c.Issues.ListProjectIssues(project, opt, gl.WithContext(ctx))
	if err != nil {
		return nil, 0, classify(err)
	}
	for _, is := range list {
		out = append(out, fromSDK(is))
	}
	return out, resp.NextPage, nil
}

// classify maps go-gitlab errors onto the platform sentinels. go-gitlab
// turns every 404 into its ErrNotFound and drops the body.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gl.ErrNotFound) {
		return fmt.Errorf("%w: %w", platforms.ErrNotFound, err)
	}
	var er *gl.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch er.Response.StatusCode {
		case http.StatusGone:
			return fmt.Errorf("%w: %w", platforms.ErrNotFound, err)
		case http.StatusTooManyRequests:
			if !errors.Is(err, trackerhttp.ErrRateLimited) {
				return fmt.Errorf("%w: %w", trackerhttp.ErrRateLimited, err)
			}
			return err
		}
		return platforms.Rejected(er.Response.StatusCode, err)
	}
	return err
}

// memberAccess is username's effective access level on the project (0 when
// GitLab knows no such user or they are no member): GET /users?username=
// resolves the id (https://docs.gitlab.com/api/users/#list-users), then
// GET /projects/:id/members/all/:user_id gives the membership, inherited
// ones included (https://docs.gitlab.com/api/members/#get-a-member-of-a-group-or-project-including-inherited-and-invited-members).
func (s *sdk) memberAccess(ctx context.Context, project, username string) (int, error) {
	return s.inheritedAccess(ctx, username, func(id int) (gl.AccessLevelValue, string, error) {
		m, _, err := s.c.ProjectMembers.GetInheritedProjectMember(project, id, gl.WithContext(ctx))
		if err != nil {
			return 0, "", err
		}
		return m.AccessLevel, m.State, nil
	})
}

// groupAccess is username's access level in the group given by its full
// path (0 when GitLab knows no such user, group or membership): GET
// /groups/:id/members/all/:user_id, inherited memberships included
// (https://docs.gitlab.com/api/members/#get-a-member-of-a-group-or-project-including-inherited-and-invited-members);
// the client URL-encodes the path.
func (s *sdk) groupAccess(ctx context.Context, group, username string) (int, error) {
	return s.inheritedAccess(ctx, username, func(id int) (gl.AccessLevelValue, string, error) {
		m, _, err := s.c.GroupMembers.GetInheritedGroupMember(group, id, gl.WithContext(ctx))
		if err != nil {
			return 0, "", err
		}
		return m.AccessLevel, m.State, nil
	})
}

// inheritedAccess resolves username's id (GET /users?username=,
// https://docs.gitlab.com/api/users/#list-users) and reads its membership
// with member; no user, no membership (404) or a membership that is not
// active (blocked, awaiting approval) is 0.
func (s *sdk) inheritedAccess(ctx context.Context, username string, member func(id int) (gl.AccessLevelValue, string, error)) (int, error) {
	users, _, err := s.c.Users.ListUsers(&gl.ListUsersOptions{Username: &username}, gl.WithContext(ctx))
	if err != nil {
		return 0, classify(err)
	}
	if len(users) == 0 || users[0] == nil {
		return 0, nil
	}
	level, state, err := member(users[0].ID)
	if err != nil {
		if err = classify(err); errors.Is(err, platforms.ErrNotFound) {
			return 0, nil
		}
		return 0, err
	}
	if state != "" && state != "active" {
		return 0, nil // blocked or awaiting approval
	}
	return int(level), nil
}

// labelAddedBy is the user of the last "add" of label among the issue's
// resource label events, every page
// (https://docs.gitlab.com/api/resource_label_events/#list-project-issue-label-events).
func (s *sdk) labelAddedBy(ctx context.Context, project string, iid int, label string) (string, error) {
	who := ""
	opt := &gl.ListLabelEventsOptions{ListOptions: gl.ListOptions{PerPage: perPage}}
	for {
		evs, resp, err := s.c.ResourceLabelEvents.ListIssueLabelEvents(project, iid, opt, gl.WithContext(ctx))
		if err != nil {
			return "", classify(err)
		}
		for _, ev := range evs {
			if ev != nil && ev.Action == "add" && platforms.SameLabel(Platform, ev.Label.Name, label) {
				who = ev.User.Username
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return who, nil
		}
		opt.Page = resp.NextPage
	}
}
