package github_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/trackertest"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const simToken = "conformance-token"

// TestConformance runs the shared suite through go-github against the
// emulator's GitHub dialect in each of its If-Match modes: GitHub's own
// (reject-weak, the default) and the two others seen or imaginable, since
// the tracker's writes must not depend on how If-Match is treated. Each
// subtest gets its own repository, named after the subtest, so the harness
// needs no state beyond t.
func TestConformance(t *testing.T) {
	for _, mode := range trackersim.IfMatchModes {
		t.Run(string(mode), func(t *testing.T) { conformance(t, mode, github.APIREST) })
	}
}

// TestConformanceGraphQL runs the suite, its concurrent human editor
// included, with Relabel writing through GraphQL (github.api: graphql):
// one request per transition must lose no person's edit either.
func TestConformanceGraphQL(t *testing.T) {
	conformance(t, trackersim.IfMatchRejectWeak, github.APIGraphQL)
}

func conformance(t *testing.T, mode trackersim.IfMatchMode, api string) {
	// The emulator, like GitHub, honours per_page up to 100 and the tracker
	// asks for 100, so paging is exercised with more than 100 tickets.
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}, GitHubIfMatch: mode})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	repoOf := func(t *testing.T) string {
		return "conformance/" + strings.Trim(nonName.ReplaceAllString(t.Name(), "-"), "-")
	}
	issue := func(t *testing.T, ref platforms.Ref) trackersim.Issue {
		t.Helper()
		repo, n, err := github.ParseID(ref.ID)
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
		Platform:  github.Platform,
		FoldsCase: true,
		New: func(t *testing.T) platforms.Tracker {
			tr, err := github.New(github.Options{
				BaseURL: srv.URL + "/github/",
				Repo:    repoOf(t),
				Project: "conformance",
				Token:   simToken,
				Writer:  "conformance",
				API:     api,
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
			return platforms.Ref{Platform: github.Platform, Project: "conformance", ID: github.FormatID(repoOf(t), n)}
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
			repo, n, _ := github.ParseID(ref.ID)
			if err := s.AddLabels(repo, n, "foreign-writer"); err != nil {
				t.Fatal(err)
			}
		},
		BeforeWrite: func(t *testing.T, ref platforms.Ref, k int, edit func()) func() bool {
			repo, n, _ := github.ParseID(ref.ID)
			return s.BeforeAPIWrite(repo, n, k, edit)
		},
		HumanLabel: func(t *testing.T, ref platforms.Ref, label string, add bool) {
			repo, n, _ := github.ParseID(ref.ID)
			if err := s.EditLabel(repo, n, label, add); err != nil {
				t.Fatal(err)
			}
		},
		Block: func(t *testing.T, ref, blocker platforms.Ref) {
			repo, n, _ := github.ParseID(ref.ID)
			_, m, _ := github.ParseID(blocker.ID)
			if err := s.AddBlocker(repo, n, m); err != nil {
				t.Fatal(err)
			}
		},
		Close: func(t *testing.T, ref platforms.Ref) {
			repo, n, _ := github.ParseID(ref.ID)
			if err := s.SetOpen(repo, n, false); err != nil {
				t.Fatal(err)
			}
		},
		Reactions: func(t *testing.T, ref platforms.Ref) []string {
			repo, n, _ := github.ParseID(ref.ID)
			var out []string
			for _, r := range s.Reactions(repo, n) {
				out = append(out, r.Content)
			}
			return out
		},
		Webhooks: github.Webhooks{},
		Sign: func(body []byte, secret string) http.Header {
			h := http.Header{}
			h.Set(github.HeaderSignature, github.SignatureHeader(body, []byte(secret)))
			return h
		},
		EventHeader: func(event string) http.Header {
			h := http.Header{}
			h.Set(github.HeaderEvent, event)
			h.Set(github.HeaderDelivery, "conformance-"+event)
			return h
		},
		Fixtures: "../../testdata/github",
		// Relabel sends no If-Match: GitHub honours none on writes.
		ConditionalWrites: false,
		PerLabelWrites:    true,
		PageSize:          trackersim.MaxPerPage,
	})

	// The list subtest must really have paged: 2*PageSize+1 matches are
	// three pages.
	if n := s.Stats().Calls["GET /repos/{owner}/{repo}/issues"]; n < 3 {
		t.Errorf("emulator saw %d issue list requests, want >= 3 (pagination)", n)
	}
	// The GraphQL path wrote through GraphQL, never REST's label writes.
	if c := s.Stats().Calls; api == github.APIGraphQL && (c["POST /graphql"] == 0 ||
		c["POST /repos/{owner}/{repo}/issues/{number}/labels"]+c["DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}"] > 0) {
		t.Errorf("graphql path: %d GraphQL requests, %d REST label adds, %d REST label removals; want GraphQL only",
			c["POST /graphql"], c["POST /repos/{owner}/{repo}/issues/{number}/labels"], c["DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}"])
	}
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
