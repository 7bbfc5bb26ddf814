package azuredevops_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/trackertest"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const simToken = "conformance-pat"

// TestConformance runs the shared suite through azure-devops-go-api against
// the emulator's Azure DevOps dialect, location discovery included. Each
// subtest gets its own project, named after the subtest.
func TestConformance(t *testing.T) {
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	// repoOf is the emulator's store key; the tracker's IDs use its
	// lower-cased Locator form.
	repoOf := func(t *testing.T) string {
		return "Conformance/" + strings.Trim(nonName.ReplaceAllString(t.Name(), "-"), "-")
	}
	number := func(t *testing.T, ref platforms.Ref) int {
		t.Helper()
		_, n, err := azuredevops.ParseID(ref.ID)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	issue := func(t *testing.T, ref platforms.Ref) trackersim.Issue {
		t.Helper()
		is, ok := s.Issue(repoOf(t), number(t, ref))
		if !ok {
			t.Fatalf("emulator has no work item %s", ref.ID)
		}
		return is
	}
	locator := func(t *testing.T) string {
		org, project, _ := azuredevops.SplitRepo(repoOf(t))
		return azuredevops.Locator(org, project)
	}

	trackertest.Run(t, trackertest.Harness{
		Platform:  azuredevops.Platform,
		FoldsCase: true,
		New: func(t *testing.T) platforms.Tracker {
			tr, err := azuredevops.New(azuredevops.Options{
				BaseURL: srv.URL + "/ado/",
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
			return platforms.Ref{Platform: azuredevops.Platform, Project: "conformance", ID: azuredevops.FormatID(locator(t), n)}
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
			if err := s.AddLabels(repoOf(t), number(t, ref), "foreign-writer"); err != nil {
				t.Fatal(err)
			}
		},
		BeforeWrite: func(t *testing.T, ref platforms.Ref, k int, edit func()) func() bool {
			return s.BeforeAPIWrite(repoOf(t), number(t, ref), k, edit)
		},
		HumanLabel: func(t *testing.T, ref platforms.Ref, label string, add bool) {
			if err := s.EditLabel(repoOf(t), number(t, ref), label, add); err != nil {
				t.Fatal(err)
			}
		},
		Block: func(t *testing.T, ref, blocker platforms.Ref) {
			if err := s.AddBlocker(repoOf(t), number(t, ref), number(t, blocker)); err != nil {
				t.Fatal(err)
			}
		},
		Close: func(t *testing.T, ref platforms.Ref) {
			if err := s.SetOpen(repoOf(t), number(t, ref), false); err != nil {
				t.Fatal(err)
			}
		},
		Webhooks: azuredevops.Webhooks{},
		Sign: func(_ []byte, secret string) http.Header {
			h := http.Header{}
			h.Set("Authorization", azuredevops.BasicAuth("agentsmith", secret))
			return h
		},
		Fixtures:          "../../testdata/azuredevops",
		ConditionalWrites: true,
		PageSize:          200, // work items per workitemsbatch request
	})

	// The list subtest must really have read in batches: 401 matches are
	// three batches.
	if n := s.Stats().Calls["POST /ado/{org}/{project}/_apis/wit/workItemsBatch"]; n < 3 {
		t.Errorf("emulator saw %d workitemsbatch requests, want >= 3 (pagination)", n)
	}
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
