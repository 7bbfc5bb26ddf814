package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const discoveredProject = `
projects:
  - name: acme
    platform: github
    repos: ["acme/*", "!acme/legacy-*", "Other/tools"]
    token_env: T
    polling: {enabled: true}
    pipeline: {command: [run], timeout: 10m, max_attempts: 2}
    workspace: {git: {url: "https://github.com/{repo}.git", token_env: T}}
    overrides:
      - repos: ["acme/web-*"]
        trigger_label: ship-it
        command: [web-run, --fast]
        timeout: 30m
      - repos: ["acme/*"]
        max_attempts: 5
`

// A project with repos patterns parses without repo, and Expand makes the
// project of one repository: its name, its repo, the first matching
// override, the work branch's URL.
func TestReposPatternsExpand(t *testing.T) {
	t.Parallel()
	c := mustParse(t, discoveredProject, map[string]string{"T": "t"})
	p := &c.Projects[0]
	if !p.Discovered() || p.Repo != "" {
		t.Fatalf("discovered %v repo %q", p.Discovered(), p.Repo)
	}
	if got := p.RepoOwners(); !slices.Equal(got, []string{"acme", "Other"}) {
		t.Fatalf("owners %q", got)
	}
	for repo, want := range map[string]bool{
		"acme/web-a": true, "ACME/Web-B": true, "acme/legacy-x": false, "acme/legacy": true,
		"other/tools": true, "other/toolsx": false, "evil/web-a": false,
	} {
		if got := p.Wants(repo); got != want {
			t.Errorf("Wants(%s) = %v, want %v", repo, got, want)
		}
	}

	web := p.Expand("acme/Web-A")
	if web.Name != "acme.web-a" || web.Repo != "acme/Web-A" || web.Discovered() || len(web.Overrides) != 0 {
		t.Fatalf("expanded %q %q discovered %v", web.Name, web.Repo, web.Discovered())
	}
	if web.TriggerLabel != "ship-it" || !slices.Equal(web.Pipeline.Command, []string{"web-run", "--fast"}) ||
		web.Pipeline.Timeout != 30*time.Minute || web.Pipeline.MaxAttempts != 2 {
		t.Fatalf("first override: label %q command %q timeout %v attempts %d", web.TriggerLabel, web.Pipeline.Command, web.Pipeline.Timeout, web.Pipeline.MaxAttempts)
	}
	if web.Workspace.Git.URL != "https://github.com/acme/Web-A.git" {
		t.Fatalf("work branch url %q", web.Workspace.Git.URL)
	}
	api := p.Expand("acme/api")
	if api.TriggerLabel != DefaultTriggerLabel || !slices.Equal(api.Pipeline.Command, []string{"run"}) || api.Pipeline.MaxAttempts != 5 {
		t.Fatalf("second override: label %q command %q attempts %d", api.TriggerLabel, api.Pipeline.Command, api.Pipeline.MaxAttempts)
	}
	api.Pipeline.Command[0] = "changed"
	if p.Pipeline.Command[0] != "run" || p.Expand("acme/api").Pipeline.Command[0] != "run" {
		t.Fatal("an expanded project shares its command with the template")
	}
}

func TestReposPatternErrors(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	for bad, want := range map[string]string{
		`repos: ["acme/*"]` + "\n    repo: acme/x": "projects[0].repo: set either repo or repos",
		`repos: ["acme"]`:                          `projects[0].repos[0]: "acme": want owner/pattern`,
		`repos: ["ac*/web"]`:                       "must be literal",
		`repos: ["acme/[a"]`:                       "syntax error in pattern",
		`repos: ["!acme/x"]`:                       `needs at least one pattern without "!"`,
		`repos: ["acme/*"]` + "\n    overrides: [{repos: [\"!acme/x\"]}]":          `overrides[0].repos[0]: an override names`,
		`repos: ["acme/*"]` + "\n    overrides: [{trigger_label: x}]":              "overrides[0].repos: required",
		`repos: ["acme/*"]` + "\n    workspace: {git: {url: \"https://h/r.git\"}}": "needs {repo}",
		`repo: acme/x` + "\n    overrides: [{repos: [\"acme/*\"]}]":                "overrides: only with repos",
	} {
		yml := `
projects:
  - name: acme
    platform: github
    ` + bad + `
    token_env: T
    polling: {enabled: true}
    pipeline: {command: [run]}
`
		got := parseErrs(t, yml, vars)
		if len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("%s:\n got %q\nwant %q", bad, got, want)
		}
	}
	got := parseErrs(t, `
projects:
  - name: j
    platform: gitlab
    repos: ["acme/*"]
    token_env: T
    polling: {enabled: true}
    pipeline: {command: [run]}
`, vars)
	if len(got) != 1 || !strings.Contains(got[0], "projects[0].group: required with repos on gitlab") {
		t.Errorf("gitlab repos without group: %q", got)
	}
	got = parseErrs(t, `
projects:
  - name: j
    platform: jira
    base_url: https://acme.atlassian.net
    repos: ["acme/*"]
    token_env: T
    jira: {email: a@b.c}
    polling: {enabled: true}
    pipeline: {command: [run]}
`, vars)
	if len(got) != 1 || !strings.Contains(got[0], "a Jira pattern is over the site's project keys") {
		t.Errorf("jira repos: %q", got)
	}
}

// A GitLab project names a group: every project below it is taken unless
// a "!" pattern leaves it out, include patterns narrow it, and names are
// the path below the group.
func TestGitLabGroupExpands(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `
projects:
  - name: plat
    platform: gitlab
    group: acme/platform
    repos: ["!acme/platform/legacy/*"]
    token_env: T
    polling: {enabled: true}
    pipeline: {command: [run]}
`, map[string]string{"T": "t"})
	p := &c.Projects[0]
	if !p.Discovered() || !slices.Equal(p.RepoOwners(), []string{"acme/platform"}) {
		t.Fatalf("discovered %v owners %q", p.Discovered(), p.RepoOwners())
	}
	for repo, want := range map[string]bool{"acme/platform/api": true, "acme/platform/sub/Web": true, "acme/platform/legacy/old": false} {
		if got := p.Wants(repo); got != want {
			t.Errorf("Wants(%s) = %v, want %v", repo, got, want)
		}
	}
	if q := p.Expand("acme/platform/sub/Web"); q.Name != "plat.sub.web" || q.Repo != "acme/platform/sub/Web" || q.Group != "" {
		t.Fatalf("expanded %q %q group %q", q.Name, q.Repo, q.Group)
	}
	for bad, want := range map[string]string{
		"platform: gitlab\n    group: acme/*":                 "projects[0].group:",
		"platform: gitlab\n    group: acme\n    repo: acme/x": "set either repo or repos/group",
		"platform: github\n    group: acme":                   "only for platform gitlab",
	} {
		got := parseErrs(t, `
projects:
  - name: plat
    `+bad+`
    token_env: T
    polling: {enabled: true}
    pipeline: {command: [run]}
`, map[string]string{"T": "t"})
		if len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("%s:\n got %q\nwant %q", bad, got, want)
		}
	}
}
