package github

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	gh "github.com/google/go-github/v60/github"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.BlockerReader = (*Tracker)(nil)

// OpenBlockers lists the open issues the ticket is blocked by, from GitHub's
// issue dependencies ("GET /repos/{owner}/{repo}/issues/{n}/dependencies/blocked_by",
// https://docs.github.com/en/rest/issues/issue-dependencies). Where that API
// is not available (404: GitHub Enterprise Server without issue
// dependencies), lines "blocked by #n" (or "owner/repo#n") in the ticket's
// body count instead, each blocker read once to see whether it is open.
func (t *Tracker) OpenBlockers(ctx context.Context, ref platforms.Ref) ([]string, error) {
	n, err := t.number(ref)
	if err != nil {
		return nil, err
	}
	var open []string
	path := fmt.Sprintf("repos/%s/%s/issues/%d/dependencies/blocked_by?per_page=%d", t.owner, t.name, n, perPage)
	for path != "" {
		req, err := t.client.NewRequest("GET", path, nil)
		if err != nil {
			return nil, fmt.Errorf("github: blockers of %s: %w", ref.ID, err)
		}
		var page []*gh.Issue
		resp, err := t.client.Do(ctx, req, &page)
		if err != nil {
			if err = classify(err); errors.Is(err, platforms.ErrNotFound) && len(open) == 0 {
				return t.bodyBlockers(ctx, ref)
			}
			return nil, fmt.Errorf("github: blockers of %s: %w", ref.ID, err)
		}
		for _, is := range page {
			if is.GetState() == "open" {
				open = append(open, FormatID(blockerRepo(is, t.repo), is.GetNumber()))
			}
		}
		path = ""
		if resp.NextPage != 0 {
			path = fmt.Sprintf("repos/%s/%s/issues/%d/dependencies/blocked_by?per_page=%d&page=%d", t.owner, t.name, n, perPage, resp.NextPage)
		}
	}
	slices.Sort(open)
	return slices.Compact(open), nil
}

// blockerRepo is the "owner/repo" of a blocking issue (they may live in
// another repository), from its repository object or its API URL.
func blockerRepo(is *gh.Issue, fallback string) string {
	if r := is.GetRepository(); r != nil && r.GetFullName() != "" {
		return r.GetFullName()
	}
	if m := repoURL.FindStringSubmatch(is.GetURL()); m != nil {
		return m[1]
	}
	return fallback
}

var (
	repoURL = regexp.MustCompile(`/repos/([^/]+/[^/]+)/issues/\d+$`)
	// blockedByLine matches "blocked by #12" or "Blocked by: acme/app#12" at
	// the start of a body line (Markdown list markers allowed).
	blockedByLine = regexp.MustCompile(`(?im)^[\s*>-]*blocked[ -]by:?\s+([\w.-]+/[\w.-]+)?#(\d+)`)
)

// bodyBlockers is the fallback: "blocked by #n" lines of the ticket's body.
func (t *Tracker) bodyBlockers(ctx context.Context, ref platforms.Ref) ([]string, error) {
	tk, err := t.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	var open []string
	for _, m := range blockedByLine.FindAllStringSubmatch(tk.Body, -1) {
		repo := m[1]
		if repo == "" {
			repo = t.repo
		}
		owner, name, ok := splitRepo(repo)
		num, err := strconv.Atoi(m[2])
		if !ok || err != nil || num <= 0 {
			continue
		}
		is, _, err := t.client.Issues.Get(ctx, owner, name, num)
		if err != nil {
			if errors.Is(classify(err), platforms.ErrNotFound) {
				continue // a reference to nothing blocks nothing
			}
			return nil, fmt.Errorf("github: blocker %s#%d of %s: %w", repo, num, ref.ID, classify(err))
		}
		if is.GetState() == "open" {
			open = append(open, FormatID(repo, num))
		}
	}
	slices.Sort(open)
	return slices.Compact(open), nil
}
