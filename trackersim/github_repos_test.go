package trackersim

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-github/v60/github"
)

// An archived repository is listed with archived: true, is readable, and
// answers every write with GitHub's 403; a user's login is a 404 on the
// organisation listing and listed under /users.
func TestArchivedRepositoryAndOwnerListings(t *testing.T) {
	t.Parallel()
	s, c, _ := start(t, Options{})
	ctx := context.Background()
	n := s.CreateIssue("acme/old", "t", "")
	s.CreateRepo("acme/new")
	s.ArchiveRepo("acme/old")
	s.CreateRepo("jo/site")
	s.SetUserAccount("jo")

	repos, _, err := c.Repositories.ListByOrg(ctx, "acme", nil)
	if err != nil || len(repos) != 2 || repos[0].GetFullName() != "acme/new" || repos[0].GetArchived() || !repos[1].GetArchived() {
		t.Fatalf("org listing: %v %v", repos, err)
	}
	if _, _, err := c.Issues.Get(ctx, "acme", "old", n); err != nil {
		t.Fatalf("read from an archived repository: %v", err)
	}
	_, _, err = c.Issues.AddLabelsToIssue(ctx, "acme", "old", n, []string{"x"})
	if statusOf(err) != http.StatusForbidden {
		t.Fatalf("write to an archived repository: %v", err)
	}
	if is, _ := s.Issue("acme/old", n); len(is.Labels) != 0 {
		t.Fatalf("the refused write changed the issue: %v", is.Labels)
	}
	if _, _, err := c.Repositories.ListByOrg(ctx, "jo", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("a user's login on /orgs: %v", err)
	}
	if repos, _, err := c.Repositories.ListByUser(ctx, "jo", &github.RepositoryListByUserOptions{}); err != nil || len(repos) != 1 {
		t.Fatalf("user listing: %v %v", repos, err)
	}
}

// An archived GitLab project is read-only too: a write is a 403.
func TestArchivedGitLabProjectRefusesWrites(t *testing.T) {
	t.Parallel()
	s, _, srv := start(t, Options{})
	n := s.CreateIssue("acme/sub/old", "t", "")
	s.ArchiveRepo("acme/sub/old")
	url := fmt.Sprintf("%s/gitlab/api/v4/projects/acme%%2Fsub%%2Fold/issues/%d", srv.URL, n)
	for method, want := range map[string]int{http.MethodGet: http.StatusOK, http.MethodPut: http.StatusForbidden} {
		req, _ := http.NewRequest(method, url+"?add_labels=x", nil)
		req.Header.Set("PRIVATE-TOKEN", "t")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", method, resp.StatusCode, want)
		}
	}
	if is, _ := s.Issue("acme/sub/old", n); len(is.Labels) != 0 {
		t.Fatalf("the refused write changed the issue: %v", is.Labels)
	}
}
