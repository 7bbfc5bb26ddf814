package gitlab

import (
	"context"
	"fmt"

	gl "github.com/xanzy/go-gitlab"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// GroupProject is one project a group listing returned.
type GroupProject struct {
	Path string // path_with_namespace
	// Archived projects are read-only (writes are refused), so discovery
	// leaves them out.
	Archived bool
}

// maxListedProjects bounds one group's listing, so a listing that never
// ends cannot hold a replica's start forever.
const maxListedProjects = 100_000

// ListGroupProjects lists the projects of group and of its subgroups that
// opts' token can see: GET /groups/:id/projects?include_subgroups=true&with_shared=false,
// 100 per page (https://docs.gitlab.com/api/groups/#list-projects).
// with_shared=false leaves out projects of other namespaces shared with
// the group (the endpoint's default includes them); archived projects are
// returned marked, for the caller to leave out.
func ListGroupProjects(ctx context.Context, opts Options, group string) ([]GroupProject, error) {
	hc := trackerhttp.ClientOr(opts.HTTPClient, opts.Logger, trackerhttp.GitLabRateLimits)
	api, err := newSDK(opts.BaseURL, opts.Token, hc)
	if err != nil {
		return nil, fmt.Errorf("gitlab: base URL %q: %w", opts.BaseURL, err)
	}
	var out []GroupProject
	for page := 1; page > 0; {
		list, resp, err := api.c.Groups.ListGroupProjects(group, &gl.ListGroupProjectsOptions{
			IncludeSubGroups: gl.Ptr(true), WithShared: gl.Ptr(false),
			OrderBy: gl.Ptr("path"), Sort: gl.Ptr("asc"),
			ListOptions: gl.ListOptions{Page: page, PerPage: perPage},
		}, gl.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("gitlab: list projects of group %s (page %d): %w", group, page, err)
		}
		for _, p := range list {
			out = append(out, GroupProject{Path: p.PathWithNamespace, Archived: p.Archived})
		}
		if len(out) >= maxListedProjects {
			return nil, fmt.Errorf("gitlab: list projects of group %s: more than %d", group, maxListedProjects)
		}
		if resp.NextPage <= page {
			break
		}
		page = resp.NextPage
	}
	return out, nil
}
