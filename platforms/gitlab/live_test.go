//lint:file-ignore SA1019 github.com/xanzy/go-gitlab is archived; see sdk.go.

package gitlab_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	gl "github.com/xanzy/go-gitlab"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/trackertest"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// The live contract test's settings (docs/testing.md, "Live contract tests").
const (
	liveProject = "AGENTSMITH_LIVE_GITLAB_PROJECT"
	liveToken   = "AGENTSMITH_LIVE_GITLAB_TOKEN"
	liveBaseURL = "AGENTSMITH_LIVE_GITLAB_BASE_URL"
)

// TestLive runs the live contract against a real GitLab project; skipped
// unless the variables are set.
func TestLive(t *testing.T) {
	env := trackertest.LiveEnv(t, "./platforms/gitlab", "Live",
		trackertest.LiveVar{Name: liveProject, Example: "group/project"},
		trackertest.LiveVar{Name: liveToken, Example: "…"},
		trackertest.LiveVar{Name: liveBaseURL, Example: "https://gitlab.example.com", Optional: true})
	trackertest.RunLive(t, liveHarness(t, env))
}

// TestSimContract runs the live contract, through the same binding as
// TestLive, against trackersim's GitLab dialect.
func TestSimContract(t *testing.T) {
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.CreateRepo("live/contract") // the user's project exists
	h := liveHarness(t, map[string]string{liveProject: "live/contract", liveToken: simToken, liveBaseURL: srv.URL + "/gitlab/"})
	trackertest.RunLiveOnSim(t, s, h)
}

// liveHarness binds the live contract to the project env names: the tracker
// under test, and go-gitlab with the same token as the human.
func liveHarness(t *testing.T, env map[string]string) trackertest.LiveHarness {
	project := env[liveProject]
	tr, err := gitlab.New(gitlab.Options{BaseURL: env[liveBaseURL], Repo: project, Project: "live", Token: env[liveToken]})
	if err != nil {
		t.Fatal(err)
	}
	opts := []gl.ClientOptionFunc{gl.WithHTTPClient(&http.Client{Timeout: 30 * time.Second})}
	if base := env[liveBaseURL]; base != "" {
		opts = append(opts, gl.WithBaseURL(base))
	}
	human, err := gl.NewOAuthClient(env[liveToken], opts...)
	if err != nil {
		t.Fatalf("%s: %v", liveBaseURL, err)
	}
	iid := func(ref platforms.Ref) (int, error) {
		_, n, err := gitlab.ParseID(ref.ID)
		return n, err
	}
	edit := func(ctx context.Context, ref platforms.Ref, opt *gl.UpdateIssueOptions) error {
		n, err := iid(ref)
		if err != nil {
			return err
		}
		_, _, err = human.Issues.UpdateIssue(project, n, opt, gl.WithContext(ctx))
		return err
	}
	return trackertest.LiveHarness{
		Platform: gitlab.Platform,
		Tracker:  tr,
		Create: func(ctx context.Context, title string, labels ...string) (platforms.Ref, error) {
			desc := "A scratch issue of agentsmithd's live contract test (`go test ./platforms/gitlab -run Live`); it closes it when done."
			ls := gl.LabelOptions(labels)
			is, _, err := human.Issues.CreateIssue(project, &gl.CreateIssueOptions{Title: &title, Description: &desc, Labels: &ls}, gl.WithContext(ctx))
			if err != nil {
				return platforms.Ref{}, err
			}
			return platforms.Ref{Platform: gitlab.Platform, Project: "live", ID: gitlab.FormatID(project, is.IID)}, nil
		},
		// Deleting an issue takes the Owner role; closing takes Reporter,
		// as the tracker itself does.
		Close: func(ctx context.Context, ref platforms.Ref) error {
			return edit(ctx, ref, &gl.UpdateIssueOptions{StateEvent: gl.Ptr("close")})
		},
		AddLabel: func(ctx context.Context, ref platforms.Ref, label string) error {
			return edit(ctx, ref, &gl.UpdateIssueOptions{AddLabels: &gl.LabelOptions{label}})
		},
		RemoveLabel: func(ctx context.Context, ref platforms.Ref, label string) error {
			return edit(ctx, ref, &gl.UpdateIssueOptions{RemoveLabels: &gl.LabelOptions{label}})
		},
		Labels: func(ctx context.Context, ref platforms.Ref) ([]string, error) {
			n, err := iid(ref)
			if err != nil {
				return nil, err
			}
			is, _, err := human.Issues.GetIssue(project, n, gl.WithContext(ctx))
			if err != nil {
				return nil, err
			}
			return is.Labels, nil
		},
		Comments: func(ctx context.Context, ref platforms.Ref) ([]string, error) {
			n, err := iid(ref)
			if err != nil {
				return nil, err
			}
			// Newest first: the suite's comment is on the first page.
			notes, _, err := human.Notes.ListIssueNotes(project, n, &gl.ListIssueNotesOptions{
				ListOptions: gl.ListOptions{PerPage: 100}, Sort: gl.Ptr("desc")}, gl.WithContext(ctx))
			if err != nil {
				return nil, err
			}
			var out []string
			for _, nt := range notes {
				out = append(out, nt.Body)
			}
			return out, nil
		},
	}
}
