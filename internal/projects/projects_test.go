package projects

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The web URLs of the real platforms, from their documented API roots.
func TestWebURLShapes(t *testing.T) {
	for _, c := range []struct {
		platform, base, repo, id, want string
	}{
		{"github", "https://api.github.com/", "acme/app", "acme/app#12", "https://github.com/acme/app/issues/12"},
		{"github", "https://ghe.example.com/api/v3/", "acme/app", "acme/app#12", "https://ghe.example.com/acme/app/issues/12"},
		{"gitlab", "https://gitlab.com/api/v4/", "group/sub/app", "group/sub/app#3", "https://gitlab.com/group/sub/app/-/issues/3"},
		{"azuredevops", "https://dev.azure.com/", "acme/web", "acme/web#1234", "https://dev.azure.com/acme/web/_workitems/edit/1234"},
		{"jira", "https://acme.atlassian.net/", "PROJ", "PROJ-7", "https://acme.atlassian.net/browse/PROJ-7"},
	} {
		pc := &config.Project{Name: "p", Platform: c.platform, BaseURL: c.base, Repo: c.repo, Jira: config.Jira{Email: "a@b.c"}}
		tr, _, _, err := Tracker(pc, nil, nil, "i", "agent-smith", nil)
		if err != nil {
			t.Fatalf("%s: %v", c.platform, err)
		}
		got, err := tr.(platforms.WebLinker).WebURL(platforms.Ref{Platform: c.platform, Project: "p", ID: c.id})
		if err != nil || got != c.want {
			t.Errorf("%s WebURL(%s) = %q, %v; want %q", c.platform, c.id, got, err, c.want)
		}
	}
}
