package trackersim

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

// A pull request opened through go-github (the calls gh makes) takes the
// repository's next issue number, is listed and filtered by head, links to
// a page that shows it, and GitHub's 422s hold: a duplicate head:base, a
// missing title, and a head the repository does not have.
func TestPullRequests(t *testing.T) {
	t.Parallel()
	pushed := map[string]bool{"main": true, "agent-smith/demo-app-1": true}
	s, c, srv := start(t, Options{Branches: func(repo, b string) bool { return repo == "demo/app" && pushed[b] }})
	ctx := context.Background()
	n := s.CreateIssue("demo/app", "Fix <it>", "")

	pr, resp, err := c.PullRequests.Create(ctx, "demo", "app", &github.NewPullRequest{
		Title: github.String("Fix <it>"), Head: github.String("agent-smith/demo-app-1"), Base: github.String("main"),
		Body: github.String("Resolves demo/app#1")})
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", resp, err)
	}
	if pr.GetNumber() != n+1 || pr.GetHead().GetRef() != "agent-smith/demo-app-1" || pr.GetBase().GetRef() != "main" ||
		pr.GetHTMLURL() != srv.URL+"/github/demo/app/pull/2" || pr.GetState() != "open" {
		t.Fatalf("pull request = %+v", pr)
	}
	if got := s.PullRequests("demo/app"); len(got) != 1 || got[0].Head != "agent-smith/demo-app-1" || got[0].Author != botLogin {
		t.Fatalf("recorded %+v", got)
	}
	if next := s.CreateIssue("demo/app", "next", ""); next != n+2 {
		t.Fatalf("issue after the pull request got #%d, want #%d (one sequence)", next, n+2)
	}

	list, _, err := c.PullRequests.List(ctx, "demo", "app", &github.PullRequestListOptions{Head: "demo:agent-smith/demo-app-1"})
	if err != nil || len(list) != 1 || list[0].GetNumber() != pr.GetNumber() {
		t.Fatalf("list by head: %v %v", list, err)
	}
	if list, _, _ := c.PullRequests.List(ctx, "demo", "app", &github.PullRequestListOptions{Head: "demo:other"}); len(list) != 0 {
		t.Fatalf("list by another head: %v", list)
	}

	page, err := srv.Client().Get(pr.GetHTMLURL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != http.StatusOK || !strings.Contains(string(body), "Fix &lt;it&gt;") || strings.Contains(string(body), "<it>") {
		t.Fatalf("page %d: %s", page.StatusCode, body)
	}

	for name, np := range map[string]*github.NewPullRequest{
		"duplicate":      {Title: github.String("again"), Head: github.String("agent-smith/demo-app-1"), Base: github.String("main")},
		"no title":       {Head: github.String("agent-smith/demo-app-1"), Base: github.String("main")},
		"head not there": {Title: github.String("x"), Head: github.String("never-pushed"), Base: github.String("main")},
		"head is base":   {Title: github.String("x"), Head: github.String("main"), Base: github.String("main")},
		"foreign fork":   {Title: github.String("x"), Head: github.String("someone:agent-smith/demo-app-1"), Base: github.String("main")},
	} {
		if _, _, err := c.PullRequests.Create(ctx, "demo", "app", np); statusOf(err) != http.StatusUnprocessableEntity {
			t.Errorf("%s: %v, want 422", name, err)
		}
	}
	if _, _, err := c.PullRequests.Create(ctx, "demo", "none", &github.NewPullRequest{Title: github.String("x"),
		Head: github.String("b"), Base: github.String("main")}); statusOf(err) != http.StatusNotFound {
		t.Errorf("unknown repository: %v, want 404", err)
	}
	if got := s.PullRequests("demo/app"); len(got) != 1 {
		t.Fatalf("refused requests recorded pull requests: %+v", got)
	}
}
