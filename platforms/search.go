package platforms

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// ErrSearchIncomplete means a search could not return every hit (GitHub
// serves at most 1,000 results per search and marks timed-out ones
// incomplete_results): the caller lists project by project instead.
var ErrSearchIncomplete = errors.New("search results incomplete")

// SearchScope names the set of projects one search call covers: the
// repositories of one owner (a GitHub organisation or user, a GitLab group,
// an Azure DevOps organisation, a Jira site) on one API endpoint, seen
// through one credential. Projects share a scope only when all three agree,
// so a search never spends another token's budget nor sees repositories
// another token cannot. It is comparable, for use as a map key.
type SearchScope struct {
	Platform string
	// Endpoint is the API root (GitHub Enterprise and github.com differ).
	Endpoint string
	// Owner is what the search is restricted to ("acme").
	Owner string
	// Credential is CredentialID of the token (or an App installation's
	// id): never the secret itself, so a scope may be logged.
	Credential string
	// Filter is a Jira JQL scope's query: such a project is searched with
	// its own query, never in the site-wide search of project keys.
	Filter string
}

func (s SearchScope) String() string { return s.Platform + ":" + s.Owner }

// CredentialID names a secret without revealing it: the first 8 bytes of
// its SHA-256, hex. Equal secrets get equal ids.
func CredentialID(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:8])
}

// Searcher is the optional capability of a tracker whose platform can list
// labelled tickets across many repositories in one paginated call (GitHub
// issue search, GitLab group issues, Azure DevOps WIQL across projects,
// Jira JQL). The housekeeping groups projects by SearchScope and lists each
// lifecycle state once per scope instead of once per project, so its calls
// grow with states and result pages, not with repositories. A project
// configured by pattern ("acme/*") is a Searcher whose Covers accepts every
// repository it matches.
//
// Search indexes lag writes (GitHub's and Jira Cloud's by seconds to
// minutes): a hit's labels may be stale and a freshly labelled ticket may
// be missing. Callers treat a hit as a hint and act only on a fresh read of
// the ticket (Tracker.Get) under its claim lock.
type Searcher interface {
	// SearchScope is the scope of this tracker's project.
	SearchScope() SearchScope
	// ListAcross lists the open tickets carrying label in every repository
	// of scope, following pagination; Ref.Project is unset (Covers tells
	// which project a ticket belongs to). ErrSearchIncomplete when the
	// platform could not return every hit.
	ListAcross(ctx context.Context, scope SearchScope, label string) ([]*Ticket, error)
	// Covers reports whether ref, as ListAcross returns it, is a ticket of
	// this tracker's project.
	Covers(ref Ref) bool
}
