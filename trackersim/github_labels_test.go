package trackersim

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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

// GitHub refuses a label name over 50 characters with a 422 whose error
// says so (github/docs#32156, semantic-release/github#518): through
// go-github, adding one to an issue, creating one and setting an issue's
// labels to one all get it and change nothing; 50 characters are taken.
func TestGitHubLabelNameOver50Refused(t *testing.T) {
	t.Parallel()
	s, c, _ := start(t, Options{})
	ctx := context.Background()
	s.CreateRepo("demo/app")
	n := s.CreateIssue("demo/app", "long", "", "agent-smith")
	long := "agent-smith:stage/" + strings.Repeat("x", 33) // 51 characters
	refused := func(what string, resp *github.Response, err error) {
		t.Helper()
		var er *github.ErrorResponse
		if !errors.As(err, &er) || resp == nil || resp.StatusCode != http.StatusUnprocessableEntity ||
			er.Message != "Validation Failed" || len(er.Errors) != 1 {
			t.Fatalf("%s: %v, %v; want 422 Validation Failed", what, resp, err)
		}
		if e := er.Errors[0]; e.Resource != "Label" || e.Code != "custom" || e.Field != "name" ||
			e.Message != "name is too long (maximum is 50 characters)" {
			t.Errorf("%s: error %+v", what, e)
		}
	}
	_, resp, err := c.Issues.AddLabelsToIssue(ctx, "demo", "app", n, []string{long})
	refused("add", resp, err)
	_, resp, err = c.Issues.ReplaceLabelsForIssue(ctx, "demo", "app", n, []string{"agent-smith", long})
	refused("set", resp, err)
	_, resp, err = c.Issues.CreateLabel(ctx, "demo", "app", &github.Label{Name: github.String(long)})
	refused("create", resp, err)
	_, resp, err = c.Issues.Edit(ctx, "demo", "app", n, &github.IssueRequest{Labels: &[]string{long}})
	refused("edit", resp, err)
	got, _, err := c.Issues.ListLabelsByIssue(ctx, "demo", "app", n, nil)
	if err != nil || len(got) != 1 || got[0].GetName() != "agent-smith" {
		t.Errorf("labels after the refusals = %v, %v; want [agent-smith]", got, err)
	}
	// Characters, not bytes: 50 of them in 100 bytes are taken.
	for _, ok := range []string{long[:50], strings.Repeat("é", 50)} {
		if _, _, err := c.Issues.AddLabelsToIssue(ctx, "demo", "app", n, []string{ok}); err != nil {
			t.Errorf("add %d-character label: %v", utf8.RuneCountInString(ok), err)
		}
	}
}
