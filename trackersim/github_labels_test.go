package trackersim

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-github/v60/github"
)

// GitHub label names ignore case: adding a label in another case attaches
// the repository's label in its spelling, one write naming two spellings
// adds one label, the labels filter matches any case, and creating a label
// that exists in another case is 422 already_exists.
func TestGitHubLabelNamesIgnoreCase(t *testing.T) {
	t.Parallel()
	s, c, _ := start(t, Options{})
	ctx := context.Background()
	s.CreateRepo("demo/app")
	if err := s.CreateLabel("demo/app", "Agent-Smith:Enqueued"); err != nil {
		t.Fatal(err)
	}
	n := s.CreateIssue("demo/app", "case", "", "agent-smith")
	got, _, err := c.Issues.AddLabelsToIssue(ctx, "demo", "app", n, []string{"agent-smith:enqueued", "Bug", "bug"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range got {
		names = append(names, l.GetName())
	}
	if want := []string{"agent-smith", "Agent-Smith:Enqueued", "Bug"}; !slices.Equal(names, want) {
		t.Errorf("labels after adding = %q, want %q", names, want)
	}
	list, _, err := c.Issues.ListByRepo(ctx, "demo", "app", &github.IssueListByRepoOptions{Labels: []string{"AGENT-SMITH"}})
	if err != nil || len(list) != 1 || list[0].GetNumber() != n {
		t.Errorf("list labelled AGENT-SMITH = %d issues, %v; want #%d", len(list), err, n)
	}
	_, resp, err := c.Issues.CreateLabel(ctx, "demo", "app", &github.Label{Name: github.String("agent-smith:ENQUEUED")})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("create a label existing in another case = %v, %v; want 422", resp, err)
	}
}
