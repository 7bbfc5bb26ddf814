package config

import (
	"slices"
	"strings"
	"testing"
)

// github.api chooses how a GitHub project writes labels: REST unless it
// says graphql; anything else, or the section on another platform, is
// refused.
func TestGitHubAPI(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	if c := mustParse(t, oneProject+"    token_env: T\n", vars); c.Projects[0].GitHub.API != "" {
		t.Errorf("default api = %q, want \"\" (REST)", c.Projects[0].GitHub.API)
	}
	for _, api := range []string{GitHubAPIREST, GitHubAPIGraphQL} {
		if c := mustParse(t, oneProject+"    token_env: T\n    github: {api: "+api+"}\n", vars); c.Projects[0].GitHub.API != api {
			t.Errorf("api %s read as %q", api, c.Projects[0].GitHub.API)
		}
	}
	if got := parseErrs(t, oneProject+"    token_env: T\n    github: {api: soap}\n", vars); !slices.Equal(got,
		[]string{`projects[0].github.api: want "graphql" (the default) or "rest"`}) {
		t.Errorf("api soap: %q", got)
	}
	gitlab := strings.Replace(strings.Replace(oneProject, "platform: github", "platform: gitlab", 1), "repo: o/r", "repo: g/p", 1)
	if got := parseErrs(t, gitlab+"    token_env: T\n    github: {api: graphql}\n", vars); !slices.Equal(got,
		[]string{"projects[0].github: only for platform github"}) {
		t.Errorf("gitlab with github.api: %q", got)
	}
}

// github.pace_secondary is on for a GitHub project unless it says false,
// off on another platform, and refused there when set on; the printed
// config parses back either way.
func TestGitHubPaceSecondary(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	if c := mustParse(t, oneProject+"    token_env: T\n", vars); !c.Projects[0].GitHub.Paced() {
		t.Error("a GitHub project is not paced by default")
	}
	if c := mustParse(t, oneProject+"    token_env: T\n    github: {pace_secondary: false}\n", vars); c.Projects[0].GitHub.Paced() {
		t.Error("pace_secondary: false still paces")
	}
	gitlab := strings.Replace(strings.Replace(oneProject, "platform: github", "platform: gitlab", 1), "repo: o/r", "repo: g/p", 1)
	c := mustParse(t, gitlab+"    token_env: T\n", vars)
	if c.Projects[0].GitHub.Paced() {
		t.Error("a GitLab project is paced for GitHub's limits")
	}
	for _, yml := range []string{oneProject, gitlab} {
		c := mustParse(t, yml+"    token_env: T\n", vars)
		out, err := Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		back := mustParse(t, string(out), vars)
		if back.Projects[0].GitHub.Paced() != c.Projects[0].GitHub.Paced() {
			t.Errorf("printed config reads pace_secondary back as %v:\n%s", back.Projects[0].GitHub.Paced(), out)
		}
	}
	if got := parseErrs(t, gitlab+"    token_env: T\n    github: {pace_secondary: true}\n", vars); !slices.Equal(got,
		[]string{"projects[0].github: only for platform github"}) {
		t.Errorf("gitlab with github.pace_secondary: %q", got)
	}
}

// github.pace_labels_as_content is off unless set, read when set on a
// paced GitHub project, and refused on another platform and with
// pace_secondary: false.
func TestGitHubPaceLabelsAsContent(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	if c := mustParse(t, oneProject+"    token_env: T\n", vars); c.Projects[0].GitHub.PaceLabelsAsContent {
		t.Error("label writes paced as content by default")
	}
	c := mustParse(t, oneProject+"    token_env: T\n    github: {pace_labels_as_content: true}\n", vars)
	if !c.Projects[0].GitHub.PaceLabelsAsContent || !c.Projects[0].GitHub.Paced() {
		t.Errorf("pace_labels_as_content: true read as %+v", c.Projects[0].GitHub)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if back := mustParse(t, string(out), vars); !back.Projects[0].GitHub.PaceLabelsAsContent {
		t.Errorf("printed config drops pace_labels_as_content:\n%s", out)
	}
	if got := parseErrs(t, oneProject+"    token_env: T\n    github: {pace_secondary: false, pace_labels_as_content: true}\n", vars); !slices.Equal(got,
		[]string{"projects[0].github.pace_labels_as_content: needs pace_secondary: true (it says how writes are paced)"}) {
		t.Errorf("pace_labels_as_content without pacing: %q", got)
	}
	gitlab := strings.Replace(strings.Replace(oneProject, "platform: github", "platform: gitlab", 1), "repo: o/r", "repo: g/p", 1)
	if got := parseErrs(t, gitlab+"    token_env: T\n    github: {pace_labels_as_content: true}\n", vars); !slices.Equal(got,
		[]string{"projects[0].github: only for platform github"}) {
		t.Errorf("gitlab with github.pace_labels_as_content: %q", got)
	}
}
