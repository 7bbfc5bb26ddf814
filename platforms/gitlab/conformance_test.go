package gitlab_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/trackertest"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const simToken = "conformance-token"

// TestConformance runs the shared suite through go-gitlab against the
// emulator's GitLab dialect. Each subtest gets its own three-level project
// path, named after the subtest.
func TestConformance(t *testing.T) {
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	repoOf := func(t *testing.T) string {
		return "conformance/gitlab/" + strings.Trim(nonName.ReplaceAllString(t.Name(), "-"), "-")
	}
	issue := func(t *testing.T, ref platforms.Ref) trackersim.Issue {
		t.Helper()
		repo, n, err := gitlab.ParseID(ref.ID)
		if err != nil {
			t.Fatal(err)
		}
		is, ok := s.Issue(repo, n)
		if !ok {
			t.Fatalf("emulator has no issue %s", ref.ID)
		}
		return is
	}

	trackertest.Run(t, trackertest.Harness{
		Platform: gitlab.Platform,
		New: func(t *testing.T) platforms.Tracker {
			s.CreateRepo(repoOf(t))
			tr, err := gitlab.New(gitlab.Options{
				BaseURL: srv.URL + "/gitlab/",
				Repo:    repoOf(t),
				Project: "conformance",
				Token:   simToken,
				Writer:  "conformance",
			})
			if err != nil {
				t.Fatal(err)
			}
			return tr
		},
		Create: func(t *testing.T, title string, labels ...string) platforms.Ref {
			n := s.CreateIssue(repoOf(t), title, "created by the conformance suite", labels...)
			if n <= 0 {
				t.Fatalf("CreateIssue returned %d", n)
			}
			return platforms.Ref{Platform: gitlab.Platform, Project: "conformance", ID: gitlab.FormatID(repoOf(t), n)}
		},
		Labels: func(t *testing.T, ref platforms.Ref) []string { return issue(t, ref).Labels },
		Comments: func(t *testing.T, ref platforms.Ref) []string {
			var out []string
			for _, c := range issue(t, ref).Comments {
				out = append(out, c.Body)
			}
			return out
		},
		ForeignWrite: func(t *testing.T, ref platforms.Ref) {
			repo, n, _ := gitlab.ParseID(ref.ID)
			if err := s.AddLabels(repo, n, "foreign-writer"); err != nil {
				t.Fatal(err)
			}
		},
		BeforeWrite: func(t *testing.T, ref platforms.Ref, k int, edit func()) func() bool {
			repo, n, _ := gitlab.ParseID(ref.ID)
			return s.BeforeAPIWrite(repo, n, k, edit)
		},
		HumanLabel: func(t *testing.T, ref platforms.Ref, label string, add bool) {
			repo, n, _ := gitlab.ParseID(ref.ID)
			if err := s.EditLabel(repo, n, label, add); err != nil {
				t.Fatal(err)
			}
		},
		Block: func(t *testing.T, ref, blocker platforms.Ref) {
			repo, n, _ := gitlab.ParseID(ref.ID)
			_, m, _ := gitlab.ParseID(blocker.ID)
			if err := s.AddBlocker(repo, n, m); err != nil {
				t.Fatal(err)
			}
		},
		Close: func(t *testing.T, ref platforms.Ref) {
			repo, n, _ := gitlab.ParseID(ref.ID)
			if err := s.SetOpen(repo, n, false); err != nil {
				t.Fatal(err)
			}
		},
		Reactions: func(t *testing.T, ref platforms.Ref) []string {
			repo, n, _ := gitlab.ParseID(ref.ID)
			var out []string
			for _, r := range s.Reactions(repo, n) {
				out = append(out, r.Content)
			}
			return out
		},
		Webhooks: gitlab.Webhooks{},
		Sign: func(_ []byte, secret string) http.Header {
			h := http.Header{}
			h.Set(gitlab.HeaderToken, secret)
			h.Set(gitlab.HeaderEvent, gitlab.EventIssueHook)
			return h
		},
		EventHeader: func(event string) http.Header {
			h := http.Header{}
			h.Set(gitlab.HeaderEvent, eventHeader(event))
			h.Set(gitlab.HeaderIdempotencyKey, "conformance-"+event)
			return h
		},
		Fixtures:          "../../testdata/gitlab",
		ConditionalWrites: false,
		SortedLabels:      true,
		PageSize:          100,
	})

	if n := s.Stats().Calls["GET /gitlab/api/v4/projects/{id}/issues"]; n < 3 {
		t.Errorf("emulator saw %d issue list requests, want >= 3 (pagination)", n)
	}
}

// eventHeader turns a fixture's event name into GitLab's X-Gitlab-Event:
// "merge_request" → "Merge Request Hook".
func eventHeader(event string) string {
	words := strings.Split(event, "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ") + " Hook"
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
