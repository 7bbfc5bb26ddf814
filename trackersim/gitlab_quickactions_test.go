//lint:file-ignore SA1019 go-gitlab is archived (successor gitlab.com/gitlab-org/api/client-go); the daemon pins it on purpose, see platforms/gitlab/sdk.go.

package trackersim

import (
	"net/http"
	"slices"
	"testing"

	gitlab "github.com/xanzy/go-gitlab"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// A note's quick actions run as its author and leave the stored body, as on
// GitLab; lines GitLab's extractor does not take for commands stay text.
func TestGitLabNoteQuickActions(t *testing.T) {
	t.Parallel()
	s, c, _ := startGitLab(t, Options{})
	s.CreateRepo("other/project")
	n := s.CreateIssue(glRepo, "Fix it", "body", "agent-smith:in-progress", "keep")
	body := "done\n/title pwned\n/label ~x ~\"y z\"\n/unlabel ~keep\n /close\n\u200b/close\nend"
	note, resp, err := c.Notes.CreateIssueNote(glRepo, n, &gitlab.CreateIssueNoteOptions{Body: &body})
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatal(resp, err)
	}
	if want := "done\n /close\n\u200b/close\nend"; note.Body != want {
		t.Fatalf("stored body %q, want %q", note.Body, want)
	}
	is, _ := s.Issue(glRepo, n)
	if is.Title != "pwned" || !is.Open || !slices.Equal(is.Labels, []string{"agent-smith:in-progress", "x", "y z"}) {
		t.Fatalf("issue after the note: %+v", is)
	}

	// An edit runs its quick actions too (Notes::UpdateService).
	edit := "still done\n/close"
	if _, _, err := c.Notes.UpdateIssueNote(glRepo, n, note.ID, &gitlab.UpdateIssueNoteOptions{Body: &edit}); err != nil {
		t.Fatal(err)
	}
	if is, _ = s.Issue(glRepo, n); is.Open || is.Comments[len(is.Comments)-1].Body != "still done" {
		t.Fatalf("after the edit: %+v", is)
	}

	// Only commands: no note, 202 with commands_changes.
	only := "/reopen\n/move other/project"
	before := len(is.Comments)
	_, resp, err = c.Notes.CreateIssueNote(glRepo, n, &gitlab.CreateIssueNoteOptions{Body: &only})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("commands-only note: %v %v", resp, err)
	}
	is, _ = s.Issue(glRepo, n)
	moved, ok := s.Issue("other/project", 1)
	if len(is.Comments) != before || is.Open || !ok || moved.Title != "pwned" {
		t.Fatalf("after /reopen /move: original %+v, moved %+v (%v)", is, moved, ok)
	}
}

func TestGitLabQuickActionExtractor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, rest string
		cmds     []glQuickAction
	}{
		{"/CLOSE", "", []glQuickAction{{"close", ""}}},
		{"a\n/title  new  title \nb", "a\nb", []glQuickAction{{"title", "new  title"}}},
		{"/closed", "/closed", nil},
		{"/draft", "/draft", nil},
		{"x /close", "x /close", nil},
		{"`a`\n/close", "`a`", []glQuickAction{{"close", ""}}},
		{"```\n/close\n```", "```\n/close\n```", nil},
		// The inline-code rule spans lines: a backtick before and a line
		// ending in one after hide the command.
		{"a`b\n/close\nc`", "a`b\n/close\nc`", nil},
		{"<p>\n/close\n</p>", "<p>\n/close\n</p>", nil},
		{">>>\n/close\n>>>", ">>>\n/close\n>>>", nil},
	} {
		rest, cmds := glExtractQuickActions(tc.in)
		if rest != tc.rest || !slices.Equal(cmds, tc.cmds) {
			t.Errorf("%q: %q %v, want %q %v", tc.in, rest, cmds, tc.rest, tc.cmds)
		}
	}
}

// FuzzNoCommandLines: no text the daemon passes through
// platforms.NoCommandLines holds a line GitLab's extractor runs.
func FuzzNoCommandLines(f *testing.F) {
	for _, s := range []string{"/close", "x\n/title a\n", "````\n```\n/close\n```\n````", " /label ~x", "/CLOSE\r\n/move a/b", "\r/close"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, cmds := glExtractQuickActions(platforms.NoCommandLines(s)); len(cmds) > 0 {
			t.Fatalf("%q still runs %v", s, cmds)
		}
	})
}
