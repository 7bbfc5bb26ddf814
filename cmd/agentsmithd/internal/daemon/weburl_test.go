package daemon_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Every platform's WebURL, built the platform's way from the configured base
// URL, leads to the ticket on the sim's page.
func TestWebURLReachesTheSimPage(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		cfg := e.config("replica-a", "")
		n := e.sim.CreateIssue(e.repo, "Link me", "")
		tr, _, _, err := projects.Tracker(&cfg.Projects[0], nil, nil, "replica-a", cfg.LabelPrefix, nil)
		if err != nil {
			t.Fatal(err)
		}
		ref := platforms.Ref{Platform: e.pc.Name, Project: "app", ID: e.pc.ID(n)}
		u, err := tr.(platforms.WebLinker).WebURL(ref)
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := fmt.Sprintf("/#%s/%d", e.repo, n); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
			t.Errorf("GET %s = %d Location %q, want 302 %q", u, resp.StatusCode, resp.Header.Get("Location"), want)
		}
		if _, err := tr.(platforms.WebLinker).WebURL(platforms.Ref{Platform: e.pc.Name, ID: "other/repo#1"}); err == nil {
			t.Error("WebURL accepted another project's ticket")
		}
	})
}
