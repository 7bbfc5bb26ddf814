package gitlab

import (
	"context"
	"fmt"
	"strings"

	gl "github.com/xanzy/go-gitlab"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.Searcher = (*Tracker)(nil)

// SearchScope is the project's top-level group on this tracker's API root,
// seen through its token: every project below it, subgroups included, is
// listed by one group issues call.
func (t *Tracker) SearchScope() platforms.SearchScope { return t.scope }

// Covers reports whether ref is an issue of this tracker's project. GitLab
// resolves project paths case-insensitively.
func (t *Tracker) Covers(ref platforms.Ref) bool {
	repo, _, err := ParseID(ref.ID)
	return err == nil && ref.Platform == Platform && strings.EqualFold(repo, t.repo)
}

// ListAcross lists the open issues labelled label in every project of
// scope's group and its subgroups: GET /groups/:id/issues?labels=…&state=opened,
// 100 per page (https://docs.gitlab.com/api/issues/#list-group-issues).
// The group issues list reads the database, not a search index, so it does
// not lag. It includes archived projects' issues (gitlab-org/gitlab#28352);
// Covers leaves out every project no tracker is configured for.
func (t *Tracker) ListAcross(ctx context.Context, scope platforms.SearchScope, label string) ([]*platforms.Ticket, error) {
	if scope.Platform != Platform || scope.Owner == "" {
		return nil, fmt.Errorf("gitlab: list %s: not a GitLab group", scope)
	}
	var out []*platforms.Ticket
	for page := 1; ; {
		list, next, err := t.api.listGroupPage(ctx, scope.Owner, label, page, perPage)
		if err != nil {
			return nil, fmt.Errorf("gitlab: list open issues labelled %q of group %s (page %d): %w", label, scope.Owner, page, err)
		}
		out = append(out, list...)
		if next == 0 || next <= page {
			return out, nil
		}
		page = next
	}
}

// listGroupPage is one page of GET /groups/:id/issues, oldest first so a
// page boundary does not move while new issues arrive. An issue whose
// references.full does not name its project is skipped.
func (s *sdk) listGroupPage(ctx context.Context, group, label string, page, perPage int) (out []*platforms.Ticket, next int, err error) {
	opt := &gl.ListGroupIssuesOptions{
		State:       gl.Ptr("opened"),
		Labels:      &gl.LabelOptions{label},
		OrderBy:     gl.Ptr("created_at"),
		Sort:        gl.Ptr("asc"),
		ListOptions: gl.ListOptions{Page: page, PerPage: perPage},
	}
	list, resp, err := s.c.Issues.ListGroupIssues(group, opt, gl.WithContext(ctx))
	if err != nil {
		return nil, 0, classify(err)
	}
	for _, is := range list {
		if is.References == nil {
			continue
		}
		repo, _, err := ParseID(is.References.Full)
		if err != nil {
			continue
		}
		out = append(out, issueTicket(repo, fromSDK(is)))
	}
	return out, resp.NextPage, nil
}
