package github_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/trackertest"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// The live contract test's settings (docs/testing.md, "Live contract tests").
const (
	liveRepo    = "AGENTSMITH_LIVE_GITHUB_REPO"
	liveToken   = "AGENTSMITH_LIVE_GITHUB_TOKEN"
	liveBaseURL = "AGENTSMITH_LIVE_GITHUB_BASE_URL"
)

// TestLive runs the live contract against a real GitHub (or GitHub
// Enterprise) repository; skipped unless the variables are set.
func TestLive(t *testing.T) {
	env := trackertest.LiveEnv(t, "./platforms/github", "Live",
		trackertest.LiveVar{Name: liveRepo, Example: "owner/repo"},
		trackertest.LiveVar{Name: liveToken, Example: "…"},
		trackertest.LiveVar{Name: liveBaseURL, Example: "https://ghe.example/api/v3/", Optional: true})
	trackertest.RunLive(t, liveHarness(t, env))
}

// TestSimContract runs the live contract, through the same binding as
// TestLive, against trackersim's GitHub dialect: it proves the suite and
// the binding without credentials.
func TestSimContract(t *testing.T) {
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.CreateRepo("live/contract") // the user's repository exists
	h := liveHarness(t, map[string]string{liveRepo: "live/contract", liveToken: simToken, liveBaseURL: srv.URL + "/github/"})
	trackertest.RunLiveOnSim(t, s, h)
}

// liveHarness binds the live contract to the repository env names: the
// tracker under test, and go-github with the same token as the human.
func liveHarness(t *testing.T, env map[string]string) trackertest.LiveHarness {
	repo := env[liveRepo]
	owner, name, ok := strings.Cut(repo, "/")
	if !ok {
		t.Fatalf("%s=%q: want owner/repo", liveRepo, repo)
	}
	tr, err := github.New(github.Options{BaseURL: env[liveBaseURL], Repo: repo, Project: "live", Token: env[liveToken]})
	if err != nil {
		t.Fatal(err)
	}
	human := gh.NewClient(&http.Client{Timeout: 30 * time.Second}).WithAuthToken(env[liveToken])
	if base := env[liveBaseURL]; base != "" {
		u, err := url.Parse(strings.TrimSuffix(base, "/") + "/")
		if err != nil {
			t.Fatalf("%s: %v", liveBaseURL, err)
		}
		human.BaseURL = u
	}
	number := func(ref platforms.Ref) (int, error) {
		_, n, err := github.ParseID(ref.ID)
		return n, err
	}
	return trackertest.LiveHarness{
		Platform: github.Platform,
		Tracker:  tr,
		Create: func(ctx context.Context, title string, labels ...string) (platforms.Ref, error) {
			body := "A scratch issue of agentsmithd's live contract test (`go test ./platforms/github -run Live`); it closes it when done."
			is, _, err := human.Issues.Create(ctx, owner, name, &gh.IssueRequest{Title: &title, Body: &body, Labels: &labels})
			if err != nil {
				return platforms.Ref{}, err
			}
			return platforms.Ref{Platform: github.Platform, Project: "live", ID: github.FormatID(repo, is.GetNumber())}, nil
		},
		Close: func(ctx context.Context, ref platforms.Ref) error {
			n, err := number(ref)
			if err != nil {
				return err
			}
			// The REST API cannot delete an issue; closed as not planned
			// it leaves the open list.
			_, _, err = human.Issues.Edit(ctx, owner, name, n, &gh.IssueRequest{State: gh.String("closed"), StateReason: gh.String("not_planned")})
			return err
		},
		AddLabel: func(ctx context.Context, ref platforms.Ref, label string) error {
			n, err := number(ref)
			if err != nil {
				return err
			}
			_, _, err = human.Issues.AddLabelsToIssue(ctx, owner, name, n, []string{label})
			return err
		},
		RemoveLabel: func(ctx context.Context, ref platforms.Ref, label string) error {
			n, err := number(ref)
			if err != nil {
				return err
			}
			_, err = human.Issues.RemoveLabelForIssue(ctx, owner, name, n, label)
			return err
		},
		Labels: func(ctx context.Context, ref platforms.Ref) ([]string, error) {
			n, err := number(ref)
			if err != nil {
				return nil, err
			}
			is, _, err := human.Issues.Get(ctx, owner, name, n)
			if err != nil {
				return nil, err
			}
			var out []string
			for _, l := range is.Labels {
				out = append(out, l.GetName())
			}
			return out, nil
		},
		Comments: func(ctx context.Context, ref platforms.Ref) ([]string, error) {
			n, err := number(ref)
			if err != nil {
				return nil, err
			}
			var out []string
			opt := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
			for {
				cs, resp, err := human.Issues.ListComments(ctx, owner, name, n, opt)
				if err != nil {
					return nil, fmt.Errorf("list comments: %w", err)
				}
				for _, c := range cs {
					out = append(out, c.GetBody())
				}
				if resp.NextPage == 0 {
					return out, nil
				}
				opt.Page = resp.NextPage
			}
		},
	}
}
