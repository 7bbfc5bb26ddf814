package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v60/github"
	"go.uber.org/zap"
)

// Repository is one repository an owner listing returned.
type Repository struct {
	Owner, Name string
	// Archived repositories are read-only: a label write there is a 403,
	// so discovery leaves them out. Disabled ones are blocked by GitHub.
	Archived, Disabled bool
}

// maxListedRepos bounds one owner's listing (1,000 pages of 100): an
// organisation bigger than that is beyond what one daemon serves well, and
// a listing that never ends must not hold startup forever.
const maxListedRepos = 100_000

// ListRepositories lists the repositories owner has that opts' credentials
// can see: GET /orgs/{owner}/repos?type=all
// (https://docs.github.com/rest/repos/repos#list-organization-repositories),
// or, when owner is a user (the organisation endpoint answers 404 for a
// user's login), GET /users/{owner}/repos?type=owner
// (https://docs.github.com/rest/repos/repos#list-repositories-for-a-user),
// which lists that user's public repositories only. Archived and disabled
// repositories are returned marked, for the caller to leave out.
func ListRepositories(ctx context.Context, opts Options, owner string) ([]Repository, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	client, _, err := newClient(opts, log)
	if err != nil {
		return nil, err
	}
	list := func(page int) ([]*gh.Repository, *gh.Response, error) {
		return client.Repositories.ListByOrg(ctx, owner, &gh.RepositoryListByOrgOptions{Type: "all",
			Sort: "full_name", ListOptions: gh.ListOptions{PerPage: 100, Page: page}})
	}
	out, err := listAll(list)
	var ge *gh.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusNotFound {
		out, err = listAll(func(page int) ([]*gh.Repository, *gh.Response, error) {
			return client.Repositories.ListByUser(ctx, owner, &gh.RepositoryListByUserOptions{Type: "owner",
				Sort: "full_name", ListOptions: gh.ListOptions{PerPage: 100, Page: page}})
		})
	}
	if err != nil {
		return nil, fmt.Errorf("github: list repositories of %s: %w", owner, err)
	}
	return out, nil
}

func listAll(list func(page int) ([]*gh.Repository, *gh.Response, error)) ([]Repository, error) {
	var out []Repository
	for page := 1; page > 0; {
		repos, resp, err := list(page)
		if err != nil {
			return nil, err
		}
		for _, r := range repos {
			full := r.GetFullName()
			owner, name, ok := strings.Cut(full, "/")
			if !ok {
				owner, name = r.GetOwner().GetLogin(), r.GetName()
			}
			out = append(out, Repository{Owner: owner, Name: name, Archived: r.GetArchived(), Disabled: r.GetDisabled()})
		}
		if len(out) >= maxListedRepos {
			return nil, fmt.Errorf("more than %d repositories", maxListedRepos)
		}
		page = resp.NextPage
	}
	return out, nil
}

// ListInstallationRepositories lists every repository the App installation
// of opts.App can access: GET /installation/repositories, 100 per page
// (https://docs.github.com/rest/apps/installations#list-repositories-accessible-to-the-app-installation),
// across owners, archived ones marked. It needs opts.App: GitHub answers
// any other token 403.
func ListInstallationRepositories(ctx context.Context, opts Options) ([]Repository, error) {
	if opts.App == nil {
		return nil, fmt.Errorf("github: list installation repositories: needs a GitHub App installation (github_app)")
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	client, _, err := newClient(opts, log)
	if err != nil {
		return nil, err
	}
	out, err := listAll(func(page int) ([]*gh.Repository, *gh.Response, error) {
		list, resp, err := client.Apps.ListRepos(ctx, &gh.ListOptions{PerPage: 100, Page: page})
		if list == nil {
			return nil, resp, err
		}
		return list.Repositories, resp, err
	})
	if err != nil {
		return nil, fmt.Errorf("github: list repositories of installation %d: %w", opts.App.InstallationID, err)
	}
	return out, nil
}
