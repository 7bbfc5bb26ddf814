package config

import (
	"slices"
	"strings"
	"testing"
)

const jiraProject = `
projects:
  - name: ops
    platform: jira
    repo: OPS
    base_url: https://acme.atlassian.net/
    token_env: T
    polling: {enabled: true}
    pipeline: {command: [run]}
    jira: {email: bot@acme.example}
`

func TestJiraProject(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	c := mustParse(t, jiraProject, vars)
	if p := c.Projects[0]; p.Repo != "OPS" || p.BaseURL != "https://acme.atlassian.net/" || p.TriggerLabel != DefaultTriggerLabel {
		t.Fatalf("project %+v", p)
	}
	for name, c := range map[string]struct{ yml, want string }{
		"no base URL": {strings.Replace(jiraProject, "    base_url: https://acme.atlassian.net/\n", "", 1),
			"projects[0].base_url: required"},
		"owner/repo": {strings.Replace(jiraProject, "repo: OPS", "repo: acme/ops", 1),
			`projects[0].repo: expected a Jira project key such as "PROJ"`},
		"issue key": {strings.Replace(jiraProject, "repo: OPS", "repo: OPS-1", 1),
			`projects[0].repo: expected a Jira project key such as "PROJ"`},
		"trigger with a space": {strings.Replace(jiraProject, "repo: OPS", "repo: OPS\n    trigger_label: \"run agent\"", 1),
			"projects[0].trigger_label: must not contain spaces: Jira labels cannot"},
		"trigger with a tab": {strings.Replace(jiraProject, "repo: OPS", "repo: OPS\n    trigger_label: \"run\\tagent\"", 1),
			"projects[0].trigger_label: must not contain spaces: Jira labels cannot"},
		// The prefix is refused for every platform already; once, not twice.
		"prefix with a space": {"label_prefix: \"agent smith\"\n" + jiraProject,
			`label_prefix: must not contain ":", spaces or control characters`},
	} {
		if got := parseErrs(t, c.yml, vars); !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, c.want)
		}
	}
	// Spaces stay legal in other platforms' trigger labels.
	gh := mustParse(t, strings.Replace(oneProject, "repo: o/r", "repo: o/r\n    trigger_label: \"run agent\"", 1)+"    token_env: T\n", vars)
	if gh.Projects[0].TriggerLabel != "run agent" {
		t.Errorf("github trigger %q", gh.Projects[0].TriggerLabel)
	}
}

func TestCheckJiraLabelsPrefix(t *testing.T) {
	t.Parallel()
	// Should the global prefix rule ever allow spaces, Jira still refuses.
	var errs Errors
	checkJiraLabels(&errs, "projects[0]", "agent-smith", "agent smith")
	if len(errs) != 1 || errs[0].Field != "label_prefix" {
		t.Fatalf("errs %v", errs)
	}
}

func TestJiraDeploymentNeedsEmailOnCloud(t *testing.T) {
	t.Parallel()
	base := `projects:
  - name: j
    platform: jira
    base_url: https://example.atlassian.net/
    repo: PROJ
    token_env: T
    polling: {enabled: true}
    pipeline: {command: [./run.sh]}
`
	env := func(string) (string, bool) { return "x", true }
	_, err := Parse([]byte(base), env)
	if err == nil || !strings.Contains(err.Error(), "projects[0].jira.email: required for Jira Cloud") {
		t.Errorf("cloud without e-mail: %v", err)
	}
	c, err := Parse([]byte(base+"    jira: {email: bot@example.com}\n"), env)
	if err != nil || c.Projects[0].Jira.Deployment != "cloud" {
		t.Fatalf("cloud with e-mail: %v", err)
	}
	if _, err := Parse([]byte(base+"    jira: {deployment: datacenter}\n"), env); err != nil {
		t.Errorf("data center needs no e-mail: %v", err)
	}
	if _, err := Parse([]byte(base+"    jira: {deployment: server}\n"), env); err == nil || !strings.Contains(err.Error(), "jira.deployment") {
		t.Errorf("unknown deployment: %v", err)
	}
}

func TestJiraScope(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t", "S1": "one", "S2": "two"}
	scope := func(name, jql, secret string) string {
		return "  - name: " + name + `
    platform: jira
    base_url: https://acme.atlassian.net/
    token_env: T
    webhook: {secret_env: ` + secret + `}
    pipeline: {command: [run]}
    jira: {email: bot@acme.example, jql: '` + jql + `'}
`
	}
	c := mustParse(t, "projects:\n"+scope("pay", "project in (PAY, OPS) AND component = Payments", "S1")+
		scope("search", "project = OPS AND component = Search", "S2"), vars)
	if p := c.Projects[0]; p.Repo != "" || p.Jira.JQL != "project in (PAY, OPS) AND component = Payments" {
		t.Fatalf("project %+v", p)
	}
	for name, c := range map[string]struct{ yml, want string }{
		"with repo": {"projects:\n" + strings.Replace(scope("pay", "project = PAY", "S1"), "    token_env", "    repo: PAY\n    token_env", 1),
			"projects[0].jira.jql: set either repo/repos (project keys) or jira.jql (a scope across projects), not both"},
		"order by": {"projects:\n" + scope("pay", "project = PAY order  BY created", "S1"),
			"projects[0].jira.jql: must not have an ORDER BY clause: the daemon orders its own searches"},
		"blank": {"projects:\n" + scope("pay", "   ", "S1"), "projects[0].jira.jql: must not be blank"},
		"long":  {"projects:\n" + scope("pay", "project = PAY"+strings.Repeat(" ", 2000), "S1"), "projects[0].jira.jql: is 2013 bytes; at most 2000"},
		"same scope": {"projects:\n" + scope("a", "project = PAY", "S1") + scope("b", "project = PAY", "S2"),
			`projects[1].jira.jql: the same scope as project "a" on the same site`},
		"shared secret": {"projects:\n" + scope("a", "project = PAY", "S1") + scope("b", "project = OPS", "S1"),
			`projects[1].webhook: shares a secret with the JQL scope of project "a" on the same site: give each scope its own Jira webhook and secret, which is how a delivery finds its scope`},
		"not jira": {strings.Replace(oneProject, "repo: o/r", "repo: o/r\n    jira: {jql: project = X}", 1) + "    token_env: T\n",
			"projects[0].jira: only for platform jira"},
	} {
		if got := parseErrs(t, c.yml, vars); !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, c.want)
		}
	}
	// A scope may share its secret with project keys: their deliveries are
	// theirs by key first.
	mustParse(t, "projects:\n"+scope("a", "project = PAY", "S1")+strings.TrimPrefix(strings.Replace(jiraProject,
		"    token_env: T\n", "    token_env: T\n    webhook: {secret_env: S1}\n", 1), "\nprojects:\n"), vars)
}
