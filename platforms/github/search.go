package github

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v60/github"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.Searcher = (*Tracker)(nil)

// searchMaxResults is the most results one GitHub search serves
// (https://docs.github.com/en/rest/search/search#about-search).
const searchMaxResults = 1000

// SearchScope is the repository owner on this tracker's API root, seen
// through its token (or App installation).
func (t *Tracker) SearchScope() platforms.SearchScope { return t.scope }

// Covers reports whether ref is an issue of this tracker's repository.
// GitHub compares owner and repository names case-insensitively.
func (t *Tracker) Covers(ref platforms.Ref) bool {
	repo, _, err := ParseID(ref.ID)
	return err == nil && ref.Platform == Platform && strings.EqualFold(repo, t.repo)
}

// ListAcross searches the open issues labelled label in every repository
// of scope's owner: GET /search/issues?q=is:issue is:open label:"…"
// user:owner, 100 per page, against the search rate limit (30 a minute),
// not the core one. user: restricts to a user's or an organisation's
// repositories alike
// (https://docs.github.com/en/search-github/searching-on-github/searching-issues-and-pull-requests#search-within-a-users-or-organizations-repositories).
// More than GitHub's 1,000 results, or a search GitHub cut short
// (incomplete_results), is platforms.ErrSearchIncomplete. The index lags:
// see platforms.Searcher.
func (t *Tracker) ListAcross(ctx context.Context, scope platforms.SearchScope, label string) ([]*platforms.Ticket, error) {
	if scope.Platform != Platform || scope.Owner == "" || strings.ContainsAny(scope.Owner, " \"") {
		return nil, fmt.Errorf("github: search %s: not a GitHub owner", scope)
	}
	if strings.Contains(label, `"`) {
		// A quote cannot be escaped inside a qualifier's value.
		return nil, fmt.Errorf("github: search label %q: contains a double quote", label)
	}
	q := fmt.Sprintf(`is:issue is:open label:"%s" user:%s`, label, scope.Owner)
	opts := &gh.SearchOptions{Sort: "created", Order: "asc", ListOptions: gh.ListOptions{PerPage: perPage}}
	var out []*platforms.Ticket
	for {
		res, resp, err := t.client.Search.Issues(ctx, q, opts)
		if err != nil {
			return nil, fmt.Errorf("github: search open issues labelled %q of %s (page %d): %w", label, scope, max(opts.Page, 1), classify(err))
		}
		if res.GetIncompleteResults() || res.GetTotal() > searchMaxResults {
			return nil, fmt.Errorf("github: search %q of %s: %d results, incomplete %v: %w",
				label, scope, res.GetTotal(), res.GetIncompleteResults(), platforms.ErrSearchIncomplete)
		}
		for _, is := range res.Issues {
			if is.PullRequestLinks != nil {
				continue
			}
			repo, ok := repoOfURL(is.GetRepositoryURL())
			if !ok {
				continue
			}
			out = append(out, issueTicket(repo, is))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// repoOfURL reads "owner/repo" from an issue's repository_url
// (".../repos/{owner}/{repo}").
func repoOfURL(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	parts := strings.Split(strings.TrimSuffix(u.Path, "/"), "/")
	if len(parts) < 3 || parts[len(parts)-3] != "repos" {
		return "", false
	}
	repo := parts[len(parts)-2] + "/" + parts[len(parts)-1]
	if _, _, ok := splitRepo(repo); !ok {
		return "", false
	}
	return repo, true
}
